# Rendezvous data between VMs goes without a copy (kmod/zerocopy.rs): a
# 1 MiB ping-pong over o2g between nodes 0 and 1, and each of them traces
# the module's o2g_data_acked for its 1 MiB send (the offer ended only once
# TCP freed the skbs that held its pages), after its o2g_data_end. Needs
# the module loaded with zerocopy_min at most 1 MiB (the default) and
# tracepoints (the debug guest). Other nodes take part in the job and
# check nothing.
set -u
o2g-trace on || exit 1
O2G_TRANSPORT=o2g O2G_SELF=0 o2grun-cluster 40 \
    o2g-pingpong --sizes 1M --reps 1 --max-iters 2 >/tmp/zerocopy-trace.out 2>&1
rc=$?
o2g-trace off /tmp/zerocopy-trace.txt
[ "$rc" = 0 ] || { cat /tmp/zerocopy-trace.out; echo "zerocopy-trace: the ping-pong failed ($rc)"; exit 1; }
[ "$O2G_NODE" -le 1 ] || { echo "zerocopy-trace: node $O2G_NODE took part"; exit 0; }
line() { grep -n " $1: rank=[0-9]* len=1048576 " /tmp/zerocopy-trace.txt | head -1 | cut -d: -f1; }
end="$(line o2g_data_end)" acked="$(line o2g_data_acked)"
if [ -z "$end" ] || [ -z "$acked" ] || [ "$acked" -lt "$end" ]; then
    head -40 /tmp/zerocopy-trace.txt
    echo "zerocopy-trace: want o2g_data_end then o2g_data_acked of 1048576 bytes; got lines '$end' and '$acked'"
    exit 1
fi
echo "zerocopy-trace: node $O2G_NODE's 1 MiB send ended when acknowledged ($(grep -c ' o2g_data_acked:' /tmp/zerocopy-trace.txt) zero-copy sends)"
