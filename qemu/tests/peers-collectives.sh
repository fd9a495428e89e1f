# Collective latency on every MPI in one boot (needs O2G_GUEST_PEERS=1 and
# the module loaded): the same C program (bench/c/collectives.c:
# allreduce, bcast and alltoall, 8 B to 4 MiB) on our libmpi_abi over o2g
# and over sockets-epoll, on Open MPI and on MPICH, both forced onto TCP by
# /etc/o2g/peers.sh. Two ranks, one per vCPU: past that the peers'
# busy-polling ranks take each other's CPU and the times mean nothing.
# Every repetition goes home as CSV (collective-NAME-runs:
# series,bytes,rep,us), and o2g-judge prints each size's medians,
# intervals and verdicts against the best peer. Figures only.
# o2g's runs have Receive Flow Steering on (with-rfs), the others off:
# each library with its better setting (docs/results.md, "Receive Flow
# Steering for the module's large receives").
set -e
. /etc/o2g/peers.sh
peers_setup
min="${O2G_COLL_MIN:-8}" max="${O2G_COLL_MAX:-4194304}" np=2
out=/tmp/collectives
rm -rf "$out" && mkdir -p "$out"
for c in allreduce bcast alltoall; do
    echo "series,bytes,rep,us" >"$out/collective-$c-runs.csv"
done
# run SERIES COMMAND...: the program's "csv,<collective>,<label>,<bytes>,
# <us>;..." lines, one CSV line per repetition in collective-<name>-runs.
run() {
    series="$1"
    shift
    "$@" | tee /dev/console | awk -F, -v s="$series" -v dir="$out" '
        $1 == "csv" {
            f = dir "/collective-" $2 "-runs.csv"
            n = split($5, r, ";"); for (i = 1; i <= n; i++) print s "," $4 "," i "," r[i] >>f
            k++
        }
        END { if (!k) { print s ": no results" >"/dev/stderr"; exit 1 } }'
}
echo "# collectives per MPI, $np ranks, $min to $max bytes" >/dev/console
run o2g env O2G_TRANSPORT=o2g with-rfs o2grun -n "$np" --timeout 1800 collectives-o2g o2g "$max" "$min"
run sockets-epoll env O2G_TRANSPORT=sockets-epoll O2G_SELF=0 o2grun -n "$np" --timeout 1800 \
    collectives-o2g sockets-epoll "$max" "$min"
run openmpi timeout 1800 sh /etc/o2g/peers.sh openmpi "$np" collectives-openmpi openmpi "$max" "$min"
# MPICH over UCX's TCP sometimes hangs in MPI_Finalize after its last
# line: the lines count, the hang is cut short.
run mpich timeout 1800 sh /etc/o2g/peers.sh mpich "$np" collectives-mpich mpich "$max" "$min" || true
for f in "$out"/collective-*-runs.csv; do
    echo "# $(basename "$f" -runs.csv): microseconds per call" >/dev/console
    o2g-judge --csv "$f" --lower-is-better --ours o2g --ours sockets-epoll \
        --peer openmpi --peer mpich | sed 's/^/# /' >/dev/console
done
emit-csv "$out"/collective-*-runs.csv
