# The rendezvous threshold, A/B in one boot (figures, not assertions):
# ping-pong over o2g from 1 KiB to 16 MiB and the NAS-IS-style sort on two
# ranks, with O2G_RNDV_THRESHOLD at each of O2G_BENCH_THRESHOLDS. The
# largest default (16 MiB) sends nearly every ping-pong message eager, the
# way o2g sent everything before rendezvous (now within eager credit: of
# the 64 MiB dump area each rank's 32 MiB ring takes messages of just
# under 16 MiB, so the 16 MiB one still goes by rendezvous).
set -e -o pipefail
csv=/tmp/csv-rndv
rm -rf "$csv"
mkdir -p "$csv"
thresholds="${O2G_BENCH_THRESHOLDS:-65536 1048576 16777216}"
sizes="${O2G_BENCH_SIZES:-1K,16K,64K,256K,1M,4M,16M}"
for th in $thresholds; do
    echo "# ping-pong over o2g, O2G_RNDV_THRESHOLD=$th" >/dev/console
    O2G_TRANSPORT=o2g O2G_RNDV_THRESHOLD=$th o2grun -n 2 --timeout 1200 \
        o2g-pingpong --sizes "$sizes" --csv-dir "$csv/$th" 2>&1 |
        while IFS= read -r line; do echo "# $line"; done >/dev/console
    cp "$csv/$th/pingpong-latency.csv" "$csv/rndv-latency-$th.csv"
    emit-csv "$csv/rndv-latency-$th.csv"
done
class="${O2G_MAIN_CLASS:-B}" reps="${O2G_MAIN_REPS:-5}"
set --
for th in $thresholds; do
    set -- "$@" --run "o2g-rndv-$th=O2G_TRANSPORT=o2g O2G_RNDV_THRESHOLD=$th o2grun -n 2 --timeout 1200 o2g-is $class"
done
echo "# NAS-IS-style class $class, 2 ranks, $reps repetitions each" >/dev/console
o2g-compare --reps "$reps" --ours "o2g-rndv-65536" --timeout 900 --csv /tmp/rndv-is.csv "$@" 2>&1 |
    while IFS= read -r line; do echo "# $line"; done >/dev/console
sed 's/^/# csv: /' /tmp/rndv-is.csv >/dev/console
