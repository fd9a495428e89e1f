# Asynchronous progress, measured (issue 22, part 2), in one boot: how much
# of a nonblocking transfer goes on while a rank computes with no MPI calls.
# o2g-overlap (bench/src/bin/overlap.rs) over o2g, sockets-epoll and
# sockets-select; its C twin (bench/c/overlap.c) on our libmpi_abi over o2g,
# on Open MPI without and with its TCP progress thread (--mca
# btl_tcp_progress_thread 1, which Open MPI starts at any thread level: the
# program calls MPI_Init) and on MPICH without and with its progress
# thread (MPIR_CVAR_ASYNC_PROGRESS=1, which MPICH starts only at
# MPI_THREAD_MULTIPLE: the C twin's --thread), both forced onto TCP by
# /etc/o2g/peers.sh. Two ranks: on this node, or one on each node with
# --nodes 2 (our runs through o2grun-cluster, the peers' launched from node
# 0 through o2g-rsh).
#
# Run with O2G_GUEST_PEERS=1 --flavour release (without the peers, only our
# runs); loads o2g.ko unless it is loaded, and then unloads it after.
# Sizes: powers of 4 from 64 KiB to O2G_OVERLAP_MAX (16M; 64M wants
# O2G_VM_MEM=4096), O2G_OVERLAP_REPS repetitions of each measurement (5).
# With a progress thread, two ranks of two threads share the two vCPUs:
# the cost the CPU columns show.
#
# Figures, not assertions (fails only if a run gave no rows); node 0 sends
# them home as "# csv:NAME:" lines (scripts/main.sh --full):
#   overlap-receiver, overlap-sender  series,bytes,overlap (%)
#   overlap-cpu   series,bytes,CPU per wall time of the computing rank
#                 (receiver side; 1 = its compute alone)
#   overlap-runs  every median: side,label,bytes,overlap_pct,t_comm_us,
#                 t_total_us,cpu_us,peer_cpu_us
#   overlap-reps  every repetition: the same, as ;-separated lists
set -u
max="${O2G_OVERLAP_MAX:-16M}" reps="${O2G_OVERLAP_REPS:-5}"
nodes="${O2G_NODES:-1}" node="${O2G_NODE:-0}"
if [ "$nodes" -gt 2 ]; then
    echo "bench-overlap: two ranks, so one node or two (--nodes 2)"
    exit 4
fi
dir=/tmp/overlap
rm -rf "$dir" && mkdir -p "$dir"
runs="$dir/overlap-runs.csv" reps_csv="$dir/overlap-reps.csv"
echo "side,label,bytes,overlap_pct,t_comm_us,t_total_us,cpu_us,peer_cpu_us" >"$runs"
echo "side,label,bytes,t_comm_us,t_total_us,cpu_us,peer_cpu_us" >"$reps_csv"
# Labels that gave no rows, one per line (record runs in a subshell).
missing="$dir/missing"
: >"$missing"

loaded=0
if ! grep -q '^o2g ' /proc/modules; then
    insmod "$O2G_KO" || exit 1
    loaded=1
fi

# record LABEL: the program's output on stdin; its table to the console
# (as "# " lines, which vm.sh shows), its csv and reps lines to the CSVs
# (only rank 0, on node 0, prints them).
record() {
    tee "$dir/$1.out" | grep -Ev '^(csv|reps),' | sed 's/^/# /' >/dev/console
    sed -n 's/^csv,//p' "$dir/$1.out" >>"$runs"
    sed -n 's/^reps,//p' "$dir/$1.out" >>"$reps_csv"
    if [ "$node" = 0 ] && ! grep -q "^csv,[a-z]*,$1," "$dir/$1.out"; then
        echo "# bench-overlap: $1 gave no rows" >/dev/console
        echo "$1" >>"$missing"
    fi
}

# ours LABEL TRANSPORT PROGRAM [ARGS...]: two ranks of our MPI.
step=40
ours() {
    _label="$1" _transport="$2"
    shift 2
    echo "# overlap: $_label" >/dev/console
    if [ "$nodes" -gt 1 ]; then
        step=$((step + 1))
        O2G_TRANSPORT=$_transport O2G_SELF=0 O2G_CLUSTER_TIMEOUT=1800 \
            o2grun-cluster "$step" "$@" 2>&1 | record "$_label"
    else
        O2G_TRANSPORT=$_transport O2G_SELF=0 o2grun -n 2 --timeout 1800 "$@" 2>&1 |
            record "$_label"
    fi
}

opts="--max $max --reps $reps"
# shellcheck disable=SC2086 # $opts is four words
ours o2g o2g o2g-overlap --label o2g $opts
# shellcheck disable=SC2086
ours sockets-epoll sockets-epoll o2g-overlap --label sockets-epoll $opts
# shellcheck disable=SC2086
ours sockets-select sockets-select o2g-overlap --label sockets-select $opts
# shellcheck disable=SC2086
ours o2g-C o2g overlap-o2g o2g-C $opts

# peer LABEL LIBRARY [LAUNCHER ARGS...] -- [PROGRAM ARGS...]: two ranks of
# Open MPI or MPICH (node 0 launches them across the nodes).
peer() {
    _label="$1" _lib="$2"
    shift 2
    _launcher=""
    while [ "$1" != -- ]; do
        _launcher="$_launcher $1"
        shift
    done
    shift
    echo "# overlap: $_label" >/dev/console
    # MPICH over UCX's tcp sometimes hangs in MPI_Finalize after its last
    # row: the rows count, the hang is cut short.
    # shellcheck disable=SC2086 # $_launcher is words for the launcher
    timeout 1800 sh /etc/o2g/peers.sh "$_lib" 2 $_launcher "overlap-$_lib" "$_label" "$@" 2>&1 |
        record "$_label"
}
peers() {
    # shellcheck disable=SC2086
    peer openmpi openmpi -- $opts
    # shellcheck disable=SC2086
    peer openmpi-thread openmpi --mca btl_tcp_progress_thread 1 -- $opts
    # shellcheck disable=SC2086
    peer mpich mpich -- $opts
    # shellcheck disable=SC2086
    peer mpich-async mpich -genv MPIR_CVAR_ASYNC_PROGRESS 1 -- $opts --thread
    [ ! -s "$missing" ]
}
if [ -r /etc/o2g/peers.sh ]; then
    . /etc/o2g/peers.sh
    peers_setup
    if [ "$nodes" -gt 1 ]; then
        peers_across_nodes peers || true
    else
        peers || true
    fi
else
    echo "# bench-overlap: no Open MPI/MPICH in this initramfs (O2G_GUEST_PEERS=1)" >/dev/console
fi

[ "$loaded" = 0 ] || rmmod o2g
[ "$node" = 0 ] || exit 0
# The charts' long-form CSVs, from the medians.
for side in receiver sender; do
    echo "series,bytes,overlap (%)" >"$dir/overlap-$side.csv"
    awk -F, -v s="$side" 'NR > 1 && $1 == s { print $2 "," $3 "," $4 }' "$runs" \
        >>"$dir/overlap-$side.csv"
done
echo "series,bytes,CPU per wall time" >"$dir/overlap-cpu.csv"
awk -F, 'NR > 1 && $1 == "receiver" && $6 > 0 { printf "%s,%s,%.3f\n", $2, $3, $7 / $6 }' "$runs" \
    >>"$dir/overlap-cpu.csv"
emit-csv "$dir/overlap-receiver.csv" "$dir/overlap-sender.csv" "$dir/overlap-cpu.csv" \
    "$dir/overlap-runs.csv" "$dir/overlap-reps.csv"
[ ! -s "$missing" ] || { echo "no rows from: $(tr '\n' ' ' <"$missing")"; exit 1; }
