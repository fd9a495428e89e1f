# Ping-pong on every MPI in one boot (needs O2G_GUEST_PEERS=1 and the
# module loaded): raw TCP, our Rust o2g-pingpong over o2g, and the same C
# program (bench/c/pingpong.c) on our libmpi_abi over o2g, on Open MPI and
# on MPICH, both forced onto TCP by /etc/o2g/peers.sh. Figures only; node 0
# sends them home as CSV (peers-latency, peers-bandwidth).
# o2g's runs have Receive Flow Steering on (with-rfs), the others off:
# each library with its better setting (docs/results.md, "Receive Flow
# Steering for the module's large receives").
set -e
. /etc/o2g/peers.sh
peers_setup
max="${O2G_PEERS_MAX:-4M}"
bytes="$(echo "$max" | sed 's/M$/*1048576/; s/K$/*1024/' | awk -F'*' '{ print $1 * ($2 ? $2 : 1) }')"
lat=/tmp/peers-latency.csv bw=/tmp/peers-bandwidth.csv
echo "series,bytes,half round trip (us)" >"$lat"
echo "series,bytes,MB/s" >"$bw"
# table NAME: the "bytes half-rtt MB/s" rows on stdin, shown and recorded.
table() {
    tee /dev/console | awk -v s="$1" -v lat="$lat" -v bw="$bw" '
        $1 ~ /^[0-9]+$/ && NF == 3 {
            print s "," $1 "," $2 >>lat
            if ($1 > 0) print s "," $1 "," $3 >>bw
            n++
        }
        END { if (!n) { print s ": no results" >"/dev/stderr"; exit 1 } }'
}
echo "# ping-pong per MPI, 0 B to $max" >/dev/console
o2g-tcp-pingpong --max "$max" | table raw-tcp
O2G_TRANSPORT=o2g O2G_SELF=0 with-rfs o2grun -n 2 --timeout 1200 o2g-pingpong --max "$max" | table o2g
O2G_TRANSPORT=o2g with-rfs o2grun -n 2 --timeout 1200 pingpong-o2g "$bytes" | table o2g-C
timeout 1200 sh /etc/o2g/peers.sh openmpi 2 pingpong-openmpi "$bytes" | table openmpi
# MPICH over UCX's TCP sometimes hangs in MPI_Finalize after its last row:
# the rows count, the hang is cut short.
timeout 1200 sh /etc/o2g/peers.sh mpich 2 pingpong-mpich "$bytes" | table mpich
emit-csv "$lat" "$bw"
