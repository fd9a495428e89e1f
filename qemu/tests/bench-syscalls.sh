# System calls per received message on each transport: the receiving rank
# of a streaming receive runs under strace -c, at two message counts, so
# the fixed cost of start-up and shutdown cancels out (figures only), for
# a few message sizes.
set -e
sizes="${O2G_BENCH_STREAM_SIZES:-64 1K 64K}"
lo=500 hi=2500 csv=/tmp/syscalls.csv
echo "series,bytes,system calls per message" >"$csv"
# receiver_calls TRANSPORT COUNT: system calls the receiving rank made.
receiver_calls() {
    O2G_TRANSPORT=$1 O2G_SELF=0 o2grun -n 2 --timeout 600 sh -c "
        if [ \"\$PMI_RANK\" = 1 ]; then
            exec strace -f -c -S calls -o /tmp/strace.$1.$2 o2g-stream --count $2 --size $size
        fi
        exec o2g-stream --count $2 --size $size" >/dev/null
    awk '$NF == "total" { print $4 }' "/tmp/strace.$1.$2"
}
for size in $sizes; do
    echo "system calls per received message ($size messages, receiving rank)"
    bytes="$(echo "$size" | sed 's/K$/*1024/' | awk -F'*' '{ print $1 * ($2 ? $2 : 1) }')"
    for t in sockets-select sockets-epoll o2g; do
        a="$(receiver_calls $t $lo)"
        b="$(receiver_calls $t $hi)"
        top="$(awk 'f && $NF != "total" && $NF !~ /^-/ { printf "%s %s, ", $NF, $4 } /^------/ { f = 1 }' \
            "/tmp/strace.$t.$hi" | cut -c1-120)"
        awk -v t="$t" -v a="$a" -v b="$b" -v n=$((hi - lo)) -v top="$top" \
            'BEGIN { printf "%-15s %6.2f per message   (most frequent at %d: %s)\n", t, (b - a) / n, n + 500, top }'
        awk -v t="$t" -v a="$a" -v b="$b" -v n=$((hi - lo)) -v x="$bytes" \
            'BEGIN { printf "%s,%s,%.3f\n", t, x, (b - a) / n }' >>"$csv"
    done
done
emit-csv "$csv"
