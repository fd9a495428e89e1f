# Ping-pong between two ranks in this guest over each transport, beside a
# raw TCP ping-pong, all in the same boot (figures, not assertions): 0 B and
# powers of two to 16 MiB, or O2G_BENCH_SIZES (e.g. "8,1M").
set -e
csv=/tmp/csv-pingpong
sizes=""
[ -n "${O2G_BENCH_SIZES:-}" ] && sizes="--sizes $O2G_BENCH_SIZES"
rm -rf "$csv"
# shellcheck disable=SC2086 # $sizes is empty or two words
o2g-tcp-pingpong $sizes --csv-dir "$csv"
for t in sockets-select sockets-epoll o2g; do
    # shellcheck disable=SC2086
    O2G_TRANSPORT=$t O2G_SELF=0 o2grun -n 2 --timeout 1200 o2g-pingpong $sizes --csv-dir "$csv"
done
emit-csv "$csv"/*.csv
