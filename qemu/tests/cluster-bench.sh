# Cluster benchmarks (run with --nodes 4 --flavour release): one rank per
# VM over the harness's virtual network. The NAS-IS-style sort on every
# node over each transport, and its C version over o2g (o2g-C), then a
# ping-pong between nodes 0 and 1 (the other ranks only join its
# barriers), raw TCP's between the same two, and one-way TCP streams there
# with and without MSG_ZEROCOPY. With O2G_GUEST_PEERS=1, also the same C
# IS (in every round, after our transports) and ping-pong on Open MPI and
# MPICH across the VMs, forced onto TCP over eth0 and launched through
# o2g-rsh (peers_across_nodes). Figures, not assertions; node 0 sends them
# home as "# csv:NAME:" lines (scripts/main.sh --full). Needs the module
# loaded.
set -e
class="${O2G_MAIN_CLASS:-S}" reps="${O2G_MAIN_REPS:-3}" sizes="${O2G_BENCH_SIZES:-8,1K,64K,1M}"
is_csv=/tmp/cluster-is.csv csv=/tmp/csv-cluster
rm -rf "$csv" && mkdir -p "$csv"
echo "label,rep,mops" >"$is_csv"
peers=0
if [ -r /etc/o2g/peers.sh ]; then
    . /etc/o2g/peers.sh
    peers_setup
    peers=1
fi
# peer_is REP: one IS run of Open MPI and one of MPICH (node 0 launches).
peer_is() {
    for lib in openmpi mpich; do
        # A run that reported and then hung (MPICH over UCX's tcp, in
        # MPI_Finalize now and then) still counts; the hang is cut short.
        out="$(timeout 900 sh /etc/o2g/peers.sh "$lib" "$O2G_NODES" "is-$lib" "$class" 2>&1)" ||
            echo "# $lib rep $1: exit $?" >/dev/console
        mops="$(echo "$out" | awk '/Mop\/s total/ { print $NF }')"
        [ -n "$mops" ] || { echo "$out"; return 1; }
        echo "# IS class $class, $O2G_NODES nodes, $lib, rep $1: $mops Mop/s" >/dev/console
        echo "$lib,$1,$mops" >>"$is_csv"
    done
}
# One run of every MPI per round, so that drifts of the host spread over
# all of them.
step=20
for rep in $(seq "$reps"); do
    for t in sockets-select sockets-epoll o2g; do
        step=$((step + 1))
        out="$(O2G_TRANSPORT=$t O2G_SELF=0 o2grun-cluster $step o2g-is "$class" 2>&1)" ||
            { echo "$out"; exit 1; }
        mops="$(echo "$out" | awk '/Mop\/s total/ { print $NF }')"
        [ -n "$mops" ] || continue # only node 0's rank 0 prints it
        echo "# IS class $class, $O2G_NODES nodes, $t, rep $rep: $mops Mop/s" >/dev/console
        echo "$t,$rep,$mops" >>"$is_csv"
    done
    # The C program the peers run, on our MPI over o2g (as the main job's
    # o2g-C row): the same code on every library.
    step=$((step + 1))
    out="$(O2G_TRANSPORT=o2g o2grun-cluster $step is-o2g "$class" 2>&1)" || { echo "$out"; exit 1; }
    mops="$(echo "$out" | awk '/Mop\/s total/ { print $NF }')"
    if [ -n "$mops" ]; then
        echo "# IS class $class, $O2G_NODES nodes, o2g-C, rep $rep: $mops Mop/s" >/dev/console
        echo "o2g-C,$rep,$mops" >>"$is_csv"
    fi
    [ "$peers" = 0 ] || peers_across_nodes peer_is "$rep"
done
for t in sockets-select sockets-epoll o2g; do
    step=$((step + 1))
    O2G_TRANSPORT=$t O2G_SELF=0 o2grun-cluster $step o2g-pingpong --sizes "$sizes" --csv-dir "$csv"
done
# Raw TCP between the same two nodes, the physical reference (the issue's
# "1 MiB bandwidth >= 0.9x raw TCP"): node 1 echoes, node 0 measures.
case "$O2G_NODE" in
0) o2g-tcp-pingpong --connect 198.18.0.2:7300 --wait 300 --sizes "$sizes" --csv-dir "$csv" ;;
1) o2g-tcp-pingpong --listen 0.0.0.0:7300 --wait 300 ;;
esac
# One-way TCP streams between the same two nodes, copying sends against
# MSG_ZEROCOPY ones, interleaved: where zero-copy sends pay between VMs.
case "$O2G_NODE" in
0) o2g-tcp-stream --connect 198.18.0.2:7301 --wait 300 --reps "$reps" \
    --volume $((32 << 20)) --csv "$csv/tcp-stream.csv" >/tmp/tcp-stream.txt
   sed 's/^/# /' /tmp/tcp-stream.txt >/dev/console ;;
1) o2g-tcp-stream --listen 0.0.0.0:7301 --wait 300 ;;
esac
# bytes SIZE: 8, 1K, 64K, 1M in bytes.
bytes() { echo "$1" | sed 's/M$/*1048576/; s/K$/*1024/' | awk -F'*' '{ print $1 * ($2 ? $2 : 1) }'; }
peer_pingpong() {
    want=",$(for s in $(echo "$sizes" | tr , ' '); do printf '%s,' "$(bytes "$s")"; done)"
    max="$(bytes "${sizes##*,}")"
    for lib in openmpi mpich; do
        # The C ping-pong's rows "bytes half-rtt MB/s", 0 B to max; only
        # the sizes the Rust runs used are kept. Two ranks, on nodes 0 and
        # 1: idle ranks of these libraries spin in the barrier, and on this
        # 2-core host they would take the CPU from the two that measure.
        O2G_PEERS_HOSTS=o2g-node0,o2g-node1 \
            timeout 900 sh /etc/o2g/peers.sh "$lib" 2 "pingpong-$lib" "$max" |
            tee /dev/console | awk -v s="$lib" -v want="$want" -v lat="$csv/pingpong-latency.csv" \
                -v bw="$csv/pingpong-bandwidth.csv" '
                $1 ~ /^[0-9]+$/ && NF == 3 && index(want, "," $1 ",") {
                    print s "," $1 "," $2 >>lat; print s "," $1 "," $3 >>bw; n++ }
                END { if (!n) { print s ": no ping-pong rows" >"/dev/stderr"; exit 1 } }'
    done
}
[ "$peers" = 0 ] || peers_across_nodes peer_pingpong
if [ "$O2G_NODE" = 0 ]; then
    # Medians, 95% intervals and o2g's verdict against the best peer.
    set --
    [ "$peers" = 0 ] || set -- --peer openmpi --peer mpich
    o2g-compare --from-csv "$is_csv" --ours o2g "$@" | sed 's/^/# /' >/dev/console
    sed 's|^|# csv:cluster-is: |' "$is_csv" >/dev/console
    emit-csv "$csv"/*.csv
fi
