# The o2g paper's figure 6 across VMs (needs 3 nodes or more): nodes 0 and
# 1 ping-pong while each also holds N idle TCP connections to node 2, where
# o2g-idle-holder keeps them open and never sends (the paper's third
# node); every connection has 128 KB send and receive buffers, as in the
# paper. select cannot watch past FD_SETSIZE, so it stops at 500; poll,
# the same full scan, goes on. Figures, not assertions; node 0 sends them
# home (idle-holder-latency.csv, idle-holder-bandwidth.csv).
set -e
[ "${O2G_NODES:-1}" -ge 3 ] || { echo "cluster-idle needs 3 nodes (vm.sh --nodes 3)"; exit 1; }
counts="${O2G_BENCH_IDLE:-0 10 100 500 998}"
transports="sockets-select sockets-poll sockets-epoll o2g"
export O2G_SNDBUF=131072 O2G_RCVBUF=131072 O2G_IDLE_HOLDER=198.18.0.3:7399
# runs: "transport count" per job, in the order every node walks them.
runs() {
    for n in $counts; do
        for t in $transports; do
            [ "$t" = sockets-select ] && [ "$n" -gt 500 ] && continue
            echo "$t $n"
        done
    done
}
case "$O2G_NODE" in
2)
    total=0
    for n in $(runs | awk '{ print $2 }'); do total=$((total + 2 * n)); done
    o2g-idle-holder --listen 0.0.0.0:7399 --expect "$total" --seconds 3000
    ;;
0 | 1)
    lat=/tmp/idle-holder-latency.csv bw=/tmp/idle-holder-bandwidth.csv
    echo "series,idle connections,8 B half round trip (us)" >"$lat"
    echo "series,idle connections,1 MiB MB/s" >"$bw"
    export O2G_ADDR="198.18.0.$((O2G_NODE + 1))"
    step=60
    runs | while read -r t n; do
        step=$((step + 1))
        if [ "$O2G_NODE" = 0 ]; then
            pmi="--pmi-listen 0.0.0.0:$((7000 + step))"
        else
            pmi="--pmi-server 198.18.0.1:$((7000 + step))"
        fi
        # shellcheck disable=SC2086 # $pmi is two words on purpose
        out="$(O2G_IDLE_CONNECTIONS=$n O2G_TRANSPORT=$t O2G_SELF=0 \
            o2grun -n 2 --ranks "$O2G_NODE-$O2G_NODE" $pmi --timeout 600 \
            o2g-pingpong --sizes 8,1M --reps 3 2>&1)" || { echo "$out"; exit 1; }
        [ "$O2G_NODE" = 0 ] || continue
        echo "$out" | awk -v t="$t" -v n="$n" -v lat="$lat" -v bw="$bw" '
            $1 == 8 { l = $2 } $1 == 1048576 { b = $3 }
            END { if (l == "" || b == "") { printf "%s %s: no figures\n", t, n; exit 1 }
                  printf "# idle %4s %-14s %9s us %9s MB/s\n", n, t, l, b >"/dev/console"
                  print t "," n "," l >>lat; print t "," n "," b >>bw }' || { echo "$out"; exit 1; }
    done
    if [ "$O2G_NODE" = 0 ]; then emit-csv "$lat" "$bw"; fi
    ;;
*) echo "node $O2G_NODE: not in this experiment" ;;
esac
