# Cluster benchmarks (run with --nodes 4 --flavour release): one rank per
# VM over the harness's virtual network. The NAS-IS-style sort on every
# node over each transport, then a ping-pong between nodes 0 and 1 (the
# other ranks only join its barriers). Figures, not assertions; node 0
# sends them home as "# csv:NAME:" lines (scripts/main.sh --full). Needs
# the module loaded.
set -e
class="${O2G_MAIN_CLASS:-S}" reps="${O2G_MAIN_REPS:-3}" sizes="${O2G_BENCH_SIZES:-8,1K,64K,1M}"
is_csv=/tmp/cluster-is.csv csv=/tmp/csv-cluster
rm -rf "$csv" && mkdir -p "$csv"
echo "label,rep,mops" >"$is_csv"
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
done
for t in sockets-select sockets-epoll o2g; do
    step=$((step + 1))
    O2G_TRANSPORT=$t O2G_SELF=0 o2grun-cluster $step o2g-pingpong --sizes "$sizes" --csv-dir "$csv"
done
if [ "$O2G_NODE" = 0 ]; then
    sed 's|^|# csv:cluster-is: |' "$is_csv" >/dev/console
    emit-csv "$csv"/*.csv
fi
