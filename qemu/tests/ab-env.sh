# Two settings of o2g's environment against each other in one boot, MPICH
# beside (needs O2G_GUEST_PEERS=1 and the module loaded): the ping-pong
# (o2g-pingpong), allreduce, bcast and alltoall (bench/c/collectives.c) and
# the windowed stream one way and both ways (bench/c/bandwidth.c) over o2g
# with RFS as the main job runs it, 2 ranks, each setting in turn for
# O2G_AB_ROUNDS rounds (4), the order reversed every other round. E.g.
#
#   O2G_GUEST_PEERS=1 O2G_GUEST_ENV="O2G_AB_A=O2G_RNDV_THRESHOLD=1048576 \
#       O2G_AB_B=O2G_RNDV_THRESHOLD=4194304" qemu/vm.sh --flavour release \
#       --timeout 3600 --verbose insmod ab-env rmmod
#
# O2G_AB_A and O2G_AB_B are comma-separated NAME=value lists; the sizes run
# from O2G_AB_MIN to O2G_AB_MAX (2 MiB both), doubling (collectives:
# times 4); O2G_AB_STREAMS=0 leaves the streams out (at a few bytes they
# take minutes a run). Figures only: o2g-judge's verdicts of B against A and of each
# against MPICH; CSV ab-env-{pingpong,allreduce,bcast,alltoall,bw,bw-bi}
# (series,bytes,round,value: the median of a run's repetitions; us, or
# MB/s for the streams), series a, b and mpich.
set -e
. /etc/o2g/peers.sh
peers_setup
a="${O2G_AB_A:?O2G_AB_A names setting A}" b="${O2G_AB_B:?O2G_AB_B names setting B}"
rounds="${O2G_AB_ROUNDS:-4}" min="${O2G_AB_MIN:-2097152}" max="${O2G_AB_MAX:-2097152}"
streams="${O2G_AB_STREAMS:-1}"
dir=/tmp/ab-env
rm -rf "$dir" && mkdir -p "$dir"
for f in pingpong allreduce bcast alltoall bw bw-bi; do echo "series,bytes,round,value" >"$dir/ab-env-$f.csv"; done
sizes="$(awk -v a="$min" -v b="$max" 'BEGIN { for (s = a; s <= b; s *= 2) printf "%s%d", (s > a ? "," : ""), s }')"
# median_of SERIES ROUND: "csv,<name>,<label>,<bytes>,<r1;r2;...>" lines
# on stdin, the median of each line's repetitions into ab-env-<name> (the
# stream is named by its direction: bw one way, bw-bi both ways).
median_of() {
    tee /dev/console | awk -F, -v s="$1" -v i="$2" -v dir="$dir" '$1 == "csv" {
        n = split($5, r, ";")
        for (a = 2; a <= n; a++) { v = r[a]; b = a - 1; while (b > 0 && r[b] + 0 > v + 0) { r[b + 1] = r[b]; b-- } r[b + 1] = v }
        m = (n % 2) ? r[(n + 1) / 2] : (r[n / 2] + r[n / 2 + 1]) / 2
        name = ($2 == "unidirectional") ? "bw" : ($2 == "bidirectional") ? "bw-bi" : $2
        print s "," $4 "," i "," m >>(dir "/ab-env-" name ".csv"); k++ }
        END { if (!k) { print s ": no results" >"/dev/stderr"; exit 1 } }'
}
# o2g SERIES ROUND: every benchmark over o2g with setting SERIES (a or b).
o2g() {
    if [ "$1" = a ]; then setting="$a"; else setting="$b"; fi
    # shellcheck disable=SC2046 # one word per NAME=value
    set -- "$1" "$2" env O2G_TRANSPORT=o2g $(echo "$setting" | tr , ' ') with-rfs o2grun -n 2 --timeout 900
    s="$1" i="$2"
    shift 2
    "$@" o2g-pingpong --sizes "$sizes" | tee /dev/console |
        awk -v s="$s" -v i="$i" -v f="$dir/ab-env-pingpong.csv" '$1 ~ /^[0-9]+$/ && NF == 3 { print s "," $1 "," i "," $2 >>f }'
    "$@" collectives-o2g "$s" "$max" "$min" | median_of "$s" "$i"
    [ "$streams" = 0 ] && return
    "$@" bandwidth-o2g "$max" uni "$min" | median_of "$s" "$i"
    "$@" bandwidth-o2g "$max" bi "$min" | median_of "$s" "$i"
}
for i in $(seq "$rounds"); do
    echo "# ab-env round $i of $rounds: A=$a B=$b" >/dev/console
    if [ $((i % 2)) = 1 ]; then o2g a "$i"; o2g b "$i"; else o2g b "$i"; o2g a "$i"; fi
    # MPICH over UCX's TCP sometimes hangs in MPI_Finalize after its last
    # line: the lines count, the hang is cut short; a round it gave
    # nothing is a round without MPICH.
    (timeout 900 sh /etc/o2g/peers.sh mpich 2 collectives-mpich mpich "$max" "$min" || true) | median_of mpich "$i" || true
    [ "$streams" = 0 ] && continue
    (timeout 900 sh /etc/o2g/peers.sh mpich 2 bandwidth-mpich "$max" uni "$min" || true) | median_of mpich "$i" || true
    (timeout 900 sh /etc/o2g/peers.sh mpich 2 bandwidth-mpich "$max" bi "$min" || true) | median_of mpich "$i" || true
done
for f in pingpong allreduce bcast alltoall bw bw-bi; do
    [ "$(wc -l <"$dir/ab-env-$f.csv")" -gt 1 ] || continue
    lower=--lower-is-better
    case "$f" in bw*) lower="" ;; esac
    echo "# ab-env-$f: B against A" >/dev/console
    # shellcheck disable=SC2086 # $lower is empty or one word
    o2g-judge --csv "$dir/ab-env-$f.csv" $lower --ours b --peer a | sed 's/^/# /' >/dev/console
    case "$f" in pingpong) continue ;; esac
    echo "# ab-env-$f: against MPICH" >/dev/console
    # shellcheck disable=SC2086
    o2g-judge --csv "$dir/ab-env-$f.csv" $lower --ours a --ours b --peer mpich | sed 's/^/# /' >/dev/console
done
emit-csv "$dir"/ab-env-*.csv
