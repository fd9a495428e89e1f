# A sender killed (SIGKILL) while its rendezvous data to another node goes
# without a copy: node 0's rank streams 8 MiB messages to node 1's and is
# killed once the first of them is acknowledged (the trace event
# o2g_data_acked; needs tracepoints, the debug guest); node 1's rank loses
# its peer. On both nodes the module's references (open endpoints, and the
# zero-copy sends TCP still held) then drop to 0 within 60 s, so rmmod
# would succeed. Nodes past 1 check nothing.
set -u
[ "$O2G_NODE" -le 1 ] || { echo "zerocopy-kill: node $O2G_NODE takes no part"; exit 0; }
port=$((7000 + 41))
if [ "$O2G_NODE" = 0 ]; then pmi="--pmi-listen 0.0.0.0:$port"; else pmi="--pmi-server 198.18.0.1:$port"; fi
# shellcheck disable=SC2086 # $pmi is two words on purpose
O2G_ADDR="198.18.0.$((O2G_NODE + 1))" O2G_TRANSPORT=o2g O2G_SELF=0 \
    o2grun -n 2 --ranks "$O2G_NODE-$O2G_NODE" $pmi --timeout 120 \
    o2g-bandwidth --sizes 8M --reps 1000 >/tmp/zerocopy-kill.out 2>&1 &
job=$!
if [ "$O2G_NODE" = 0 ]; then
    # The kill comes once a zero-copy send has completed: the stream runs,
    # and more of its sends are in flight.
    o2g-trace on o2g_data_acked || exit 1
    for _ in $(seq 120); do o2g-trace show | grep -q ' o2g_data_acked:' && break; sleep 1; done
    o2g-trace off /tmp/zerocopy-kill.txt
    grep -q ' o2g_data_acked:' /tmp/zerocopy-kill.txt ||
        { cat /tmp/zerocopy-kill.out; echo "zerocopy-kill: no zero-copy send completed in 120 s"; exit 1; }
    kill -9 "$(pidof o2g-bandwidth)"
fi
wait "$job"
rc=$?
[ "$rc" != 0 ] || { cat /tmp/zerocopy-kill.out; echo "zerocopy-kill: the job exited 0 although its sender was killed"; exit 1; }
for _ in $(seq 60); do
    [ "$(cat /sys/module/o2g/refcnt)" = 0 ] && break
    sleep 1
done
refs="$(cat /sys/module/o2g/refcnt)"
[ "$refs" = 0 ] || { echo "zerocopy-kill: o2g still has $refs reference(s) 60 s after the job"; exit 1; }
echo "# zerocopy-kill: node $O2G_NODE's references are back to 0 after the killed job (exit $rc)" >/dev/console
