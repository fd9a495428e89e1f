# Small messages, this build's libmpi_abi against another's, beside the
# peers, in one boot: 8-byte ping-pong (bench/c/pingpong.c) and 8 and
# 32-byte allreduce, bcast and alltoall (bench/c/collectives.c, the median
# of its repetitions per round) over o2g on both builds, over
# sockets-epoll, on Open MPI and on MPICH (TCP, /etc/o2g/peers.sh), and
# the Rust o2g-pingpong, interleaved for O2G_AB_ROUNDS rounds (10); then
# o2g-judge's verdicts against the peers and of this build against the
# other. The other build's library comes in outside /tmp (a tmpfs in the
# guest), e.g.
#
#   O2G_GUEST_PEERS=1 O2G_GUEST_TREES=/path/to/other/release=/opt/ab-lib \
#       qemu/vm.sh --flavour release --timeout 2400 --verbose insmod ab-small-messages rmmod
#
# where the host directory holds that build's libmpi_abi.so.1 (O2G_AB_LIB
# names the guest directory, /opt/ab-lib by default). Figures only; CSV
# ab-pingpong, ab-allreduce, ab-bcast, ab-alltoall (series,bytes,round,us;
# series o2g-after is this build, o2g-before the other).
set -e
. /etc/o2g/peers.sh
peers_setup
lib="${O2G_AB_LIB:-/opt/ab-lib}"
[ -f "$lib/libmpi_abi.so.1" ] || { echo "ab-small-messages: no libmpi_abi.so.1 in $lib"; exit 1; }
rounds="${O2G_AB_ROUNDS:-10}"
pp=/tmp/ab-pingpong.csv ar=/tmp/ab-allreduce.csv ba=/tmp/ab-bcast.csv at=/tmp/ab-alltoall.csv
for f in $pp $ar $ba $at; do echo "series,bytes,rep,us" >$f; done
half() { awk '$1 == 8 && NF == 3 { print $2 }'; }
# coll SERIES ROUND: collectives.c's 8 and 32 B lines, the median of its repetitions per size.
coll() {
    awk -F, -v s="$1" -v i="$2" -v ar=$ar -v ba=$ba -v at=$at '$1 == "csv" {
        n = split($5, r, ";")
        for (a = 2; a <= n; a++) { v = r[a]; b = a - 1; while (b > 0 && r[b] + 0 > v + 0) { r[b + 1] = r[b]; b-- } r[b + 1] = v }
        m = (n % 2) ? r[(n + 1) / 2] : (r[n / 2] + r[n / 2 + 1]) / 2
        f = ($2 == "allreduce") ? ar : ($2 == "bcast") ? ba : at
        print s "," $4 "," i "," m >>f }'
}
for i in $(seq "$rounds"); do
    echo "o2g-after,8,$i,$(O2G_TRANSPORT=o2g o2grun -n 2 --timeout 300 pingpong-o2g 8 | half)" >>$pp
    echo "o2g-before,8,$i,$(LD_LIBRARY_PATH="$lib" O2G_TRANSPORT=o2g o2grun -n 2 --timeout 300 pingpong-o2g 8 | half)" >>$pp
    echo "o2g-rust,8,$i,$(O2G_TRANSPORT=o2g o2grun -n 2 --timeout 300 o2g-pingpong --sizes 8 | half)" >>$pp
    echo "epoll-after,8,$i,$(O2G_TRANSPORT=sockets-epoll O2G_SELF=0 o2grun -n 2 --timeout 300 pingpong-o2g 8 | half)" >>$pp
    echo "openmpi,8,$i,$(timeout 300 sh /etc/o2g/peers.sh openmpi 2 pingpong-openmpi 8 | half)" >>$pp
    echo "mpich,8,$i,$( (timeout 300 sh /etc/o2g/peers.sh mpich 2 pingpong-mpich 8 || true) | half)" >>$pp
    O2G_TRANSPORT=o2g o2grun -n 2 --timeout 300 collectives-o2g o2g 32 8 | coll o2g-after "$i"
    LD_LIBRARY_PATH="$lib" O2G_TRANSPORT=o2g o2grun -n 2 --timeout 300 collectives-o2g o2g 32 8 | coll o2g-before "$i"
    O2G_TRANSPORT=sockets-epoll O2G_SELF=0 o2grun -n 2 --timeout 300 collectives-o2g e 32 8 | coll epoll-after "$i"
    timeout 300 sh /etc/o2g/peers.sh openmpi 2 collectives-openmpi openmpi 32 8 | coll openmpi "$i"
    (timeout 300 sh /etc/o2g/peers.sh mpich 2 collectives-mpich mpich 32 8 || true) | coll mpich "$i"
done
for f in $pp $ar $ba $at; do
    echo "== $f against the peers"
    o2g-judge --csv $f --lower-is-better --ours o2g-after --ours o2g-before --ours epoll-after --peer openmpi --peer mpich
    echo "== $f after against before"
    o2g-judge --csv $f --lower-is-better --ours o2g-after --peer o2g-before
done
emit-csv $pp $ar $ba $at
