# Windowed bandwidth on every MPI in one boot (needs O2G_GUEST_PEERS=1 and
# the module loaded): o2g-bandwidth (Rust, scoped requests) over o2g and
# sockets-epoll, and the same C program (bench/c/bandwidth.c) on our
# libmpi_abi over o2g, on Open MPI and on MPICH, both forced onto TCP by
# /etc/o2g/peers.sh; one direction, then both. Every repetition goes home
# as CSV (windowed-bandwidth-runs: series,bytes,rep,MB/s), with what the
# timed repetitions cost both ranks (windowed-bandwidth-costs: CPU
# microseconds per MB moved, context switches per message), and o2g-judge
# prints each size's medians, intervals and verdicts against the best peer.
# Figures only, no assertions.
# o2g's runs have Receive Flow Steering on (with-rfs), the others off:
# each library with its better setting (docs/results.md, "Receive Flow
# Steering for the module's large receives").
set -e
. /etc/o2g/peers.sh
peers_setup
# The C twin always runs 5 repetitions (bench/c/bandwidth.c).
min="${O2G_BW_MIN:-65536}" max="${O2G_BW_MAX:-16777216}" reps=5
runs=/tmp/windowed-bandwidth-runs.csv costs=/tmp/windowed-bandwidth-costs.csv
echo "series,bytes,rep,MB/s" >"$runs"
echo "series,bytes,CPU us per MB,switches per message" >"$costs"
# record SERIES: the "csv,<direction>,<label>,<bytes>,<r1;r2;...>" lines
# on stdin, one CSV line per repetition.
record() {
    tee /dev/console | awk -F, -v s="$1" -v out="$runs" -v costs="$costs" '
        $1 == "csv" { n = split($5, r, ";"); for (i = 1; i <= n; i++) print s "," $4 "," i "," r[i] >>out; k++ }
        $1 == "cost" { print s "," $4 "," $5 "," $6 >>costs }
        END { if (!k) { print s ": no results" >"/dev/stderr"; exit 1 } }'
}
# The sizes, MIN to MAX doubling, comma-separated.
sizes="$(awk -v a="$min" -v b="$max" 'BEGIN { for (s = a; s <= b; s *= 2) printf "%s%d", (s > a ? "," : ""), s }')"
for dir in uni bi; do
    suffix="" flag=""
    [ "$dir" = bi ] && suffix="-bi" flag="--bidirectional"
    echo "# windowed bandwidth ($dir), $min to $max bytes, $reps repetitions" >/dev/console
    for t in o2g sockets-epoll; do
        rfs=""
        [ "$t" = o2g ] && rfs=with-rfs
        # shellcheck disable=SC2086 # $flag and $rfs are empty or one word
        O2G_TRANSPORT=$t O2G_SELF=0 $rfs o2grun -n 2 --timeout 1800 \
            o2g-bandwidth $flag --reps "$reps" --sizes "$sizes" | record "$t$suffix"
    done
    O2G_TRANSPORT=o2g with-rfs o2grun -n 2 --timeout 1800 bandwidth-o2g "$max" "$dir" "$min" | record "o2g-C$suffix"
    timeout 1800 sh /etc/o2g/peers.sh openmpi 2 bandwidth-openmpi "$max" "$dir" "$min" | record "openmpi$suffix"
    # MPICH over UCX's TCP sometimes hangs in MPI_Finalize after its last
    # line: the lines count, the hang is cut short.
    timeout 1800 sh /etc/o2g/peers.sh mpich 2 bandwidth-mpich "$max" "$dir" "$min" | record "mpich$suffix" || true
done
o2g-judge --csv "$runs" --ours o2g --ours o2g-C --ours sockets-epoll --peer openmpi --peer mpich |
    sed 's/^/# /' >/dev/console
o2g-judge --csv "$runs" --ours o2g-bi --ours o2g-C-bi --ours sockets-epoll-bi \
    --peer openmpi-bi --peer mpich-bi | sed 's/^/# /' >/dev/console
emit-csv "$runs" "$costs"
