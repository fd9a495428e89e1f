# The NAS-IS-style sort while each rank also holds N idle TCP connections,
# watched like real ones (the o2g paper's target: o2g >= 2x select with
# about 1000 open). select cannot watch descriptors past FD_SETSIZE; where
# it stops, it says so, and sockets-poll (the same loop over poll) goes on
# to 998. Figures, not assertions.
set -e
class="${O2G_IS_IDLE_CLASS:-S}" csv=/tmp/is-idle.csv
echo "series,idle connections,Mop/s" >"$csv"
printf '%-15s %6s %10s\n' transport idle "Mop/s"
for n in 0 100 500 998; do
    for t in sockets-select sockets-poll sockets-epoll o2g; do
        out="$(O2G_IDLE_CONNECTIONS=$n O2G_TRANSPORT=$t O2G_SELF=0 \
            o2grun -n 2 --timeout 900 o2g-is "$class" 2>&1)" || true
        if echo "$out" | grep -q 'FD.SETSIZE'; then
            printf '%-15s %6s %s\n' "$t" "$n" "cannot run: descriptors past select's FD_SETSIZE (1024)"
            continue
        fi
        mops="$(echo "$out" | awk '/Mop\/s total/ { print $NF }')"
        [ -n "$mops" ] || { echo "$out"; exit 1; }
        printf '%-15s %6s %10s\n' "$t" "$n" "$mops"
        echo "$t,$n,$mops" >>"$csv"
    done
done
emit-csv "$csv"
