# Ping-pong between two ranks in this guest over each transport, beside a
# raw TCP ping-pong, all in the same boot (figures, not assertions).
set -e
sizes="${O2G_BENCH_SIZES:-8,1M}" csv=/tmp/csv-pingpong
rm -rf "$csv"
o2g-tcp-pingpong --sizes "$sizes" --csv-dir "$csv"
for t in sockets-select sockets-epoll o2g; do
    O2G_TRANSPORT=$t O2G_SELF=0 o2grun -n 2 --timeout 600 o2g-pingpong --sizes "$sizes" --csv-dir "$csv"
done
emit-csv "$csv"/*.csv
