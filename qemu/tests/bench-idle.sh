# Ping-pong bandwidth and latency as each rank also holds N idle TCP
# connections, watched like real ones (the o2g paper's figure 6): select
# and poll scan them every round, epoll and the module do not (figures only).
# select cannot watch descriptors past FD_SETSIZE; where it stops, it says so,
# and sockets-poll (the same loop over poll) goes on.
sizes="8,1M" lat=/tmp/idle-latency.csv bw=/tmp/idle-bandwidth.csv
echo "series,idle connections,8 B half round trip (us)" >"$lat"
echo "series,idle connections,1 MiB MB/s" >"$bw"
printf '%-15s %6s %14s %12s\n' transport idle "8 B half-rtt" "1 MiB MB/s"
for n in ${O2G_BENCH_IDLE:-0 10 100 500 998}; do
    for t in sockets-select sockets-poll sockets-epoll o2g; do
        out="$(O2G_IDLE_CONNECTIONS=$n O2G_TRANSPORT=$t O2G_SELF=0 \
            o2grun -n 2 --timeout 600 o2g-pingpong --sizes $sizes --reps 3 2>&1)"
        if echo "$out" | grep -q 'FD.SETSIZE'; then
            printf '%-15s %6s %s\n' "$t" "$n" "cannot run: descriptors past select's FD_SETSIZE (1024)"
            continue
        fi
        echo "$out" | awk -v t="$t" -v n="$n" '
            $1 == 8 { lat = $2 } $1 == 1048576 { bw = $3 }
            END { if (lat == "" || bw == "") { printf "%-15s %6s FAILED\n", t, n; exit 1 }
                  printf "%-15s %6s %11s us %12s\n", t, n, lat, bw
                  printf "%s,%s,%s\n", t, n, lat >>"'"$lat"'"
                  printf "%s,%s,%s\n", t, n, bw >>"'"$bw"'" }' || { echo "$out"; exit 1; }
    done
done
emit-csv "$lat" "$bw"
