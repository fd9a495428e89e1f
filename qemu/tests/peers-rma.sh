# Passive-target one-sided communication on every MPI in one boot (needs
# O2G_GUEST_PEERS=1 and the module loaded): bench/c/rma.c, put latency
# (lock, put, unlock), put bandwidth (a window of puts, then a flush) and
# target overlap (an epoch's time while the target computes without MPI,
# as a share of that time), on our libmpi_abi over o2g (the module serving
# the window; and with O2G_WIN_MODULE=0, the library serving it, as
# o2g-library) and sockets-epoll, on Open MPI and on MPICH, both forced
# onto TCP by /etc/o2g/peers.sh.
# Every repetition goes home as CSV (rma-runs: series,bytes,rep,value),
# and o2g-judge prints each size's medians, intervals and verdicts
# against the best peer. Figures only, no assertions.
set -e
. /etc/o2g/peers.sh
peers_setup
min="${O2G_RMA_MIN:-8}" max="${O2G_RMA_MAX:-4194304}"
runs=/tmp/rma-runs.csv
echo "series,bytes,rep,value" >"$runs"
# record LABEL: the "csv,<measure>,c,<bytes>,<r1;r2;...>" lines on stdin,
# one CSV line per repetition, as series <measure>-<LABEL>.
record() {
    tee /dev/console | awk -F, -v l="$1" -v out="$runs" '
        $1 == "csv" { n = split($5, r, ";"); for (i = 1; i <= n; i++) print $2 "-" l "," $4 "," i "," r[i] >>out; k++ }
        END { if (!k) { print l ": no results" >"/dev/stderr"; exit 1 } }'
}
echo "# passive-target RMA, $min to $max bytes" >/dev/console
for t in o2g sockets-epoll; do
    O2G_TRANSPORT=$t o2grun -n 2 --timeout 1800 rma-o2g "$max" "$min" | record "$t"
done
O2G_WIN_MODULE=0 O2G_TRANSPORT=o2g o2grun -n 2 --timeout 1800 rma-o2g "$max" "$min" |
    record o2g-library
timeout 1800 sh /etc/o2g/peers.sh openmpi 2 rma-openmpi "$max" "$min" | record openmpi
timeout 1800 sh /etc/o2g/peers.sh mpich 2 rma-mpich "$max" "$min" | record mpich || true
for m in put-latency put-bandwidth target-overlap; do
    lower=--lower-is-better
    [ "$m" = put-bandwidth ] && lower=""
    # shellcheck disable=SC2086 # $lower is empty or one word
    o2g-judge --csv "$runs" --ours "$m-o2g" --ours "$m-o2g-library" --ours "$m-sockets-epoll" \
        --peer "$m-openmpi" --peer "$m-mpich" $lower | sed 's/^/# /' >/dev/console || true
done
emit-csv "$runs"
