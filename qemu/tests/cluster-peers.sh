# Cluster (run with --nodes 2 or more and O2G_GUEST_PEERS=1): Debian's Open
# MPI and MPICH run the C IS benchmark, class S, one rank on every node,
# forced onto TCP over eth0 (/etc/o2g/peers.sh). Their launchers reach the
# other nodes through the harness's remote shell: node 0 launches, every
# other node serves o2g-rsh until node 0 says it is done. Fails if either
# library does not verify or too little data crossed eth0 for the keys.
# O2G_PEERS_CLUSTER_RUN=CMD makes node 0 run CMD (with O2G_PEERS_HOSTS and
# O2G_PEERS_IF set) instead of the IS check: cluster-bench's peer runs.
if [ ! -r /etc/o2g/peers.sh ]; then
    echo "cluster-peers: Open MPI/MPICH not in this initramfs (O2G_GUEST_PEERS=1)"
    exit 4
fi
. /etc/o2g/peers.sh
peers_setup
if [ "$O2G_NODE" != 0 ]; then
    exec o2g-vmtest rsh-serve "${O2G_RSH_PORT:-7100}" "${O2G_RSH_SECONDS:-3000}"
fi
hosts="" i=0
while [ "$i" -lt "$O2G_NODES" ]; do
    hosts="$hosts${hosts:+,}o2g-node$i"
    i=$((i + 1))
done
export O2G_PEERS_HOSTS="$hosts" O2G_PEERS_IF=eth0
# However node 0 ends, the servers are told to stop.
stop_servers() {
    i=1
    while [ "$i" -lt "$O2G_NODES" ]; do
        o2g-vmtest rsh-quit "o2g-node$i" || echo "cluster-peers: o2g-node$i did not take the quit"
        i=$((i + 1))
    done
}
trap stop_servers EXIT
if [ -n "${O2G_PEERS_CLUSTER_RUN:-}" ]; then
    sh -c "$O2G_PEERS_CLUSTER_RUN"
    exit
fi
class=S
# Each iteration about (N-1)/N of every rank's 2^16/N keys (4 bytes) cross
# to other ranks; 11 iterations. Ask node 0 to receive half of its share.
min_bytes=$((11 * 65536 * (O2G_NODES - 1) / O2G_NODES / O2G_NODES * 4 / 2))
failed=0
for lib in openmpi mpich; do
    echo "== $lib: is-$lib $class, one rank on each of $hosts"
    before="$(peers_if_rx_bytes)"
    timeout 300 sh /etc/o2g/peers.sh "$lib" "$O2G_NODES" "is-$lib" "$class" >"/tmp/cluster-peers-$lib.out" 2>&1
    rc=$?
    moved=$(($(peers_if_rx_bytes) - before))
    cat "/tmp/cluster-peers-$lib.out"
    echo "$lib: exit $rc; $moved bytes received over eth0"
    if [ "$rc" -ne 0 ] || ! grep -q 'Verification    =  SUCCESSFUL' "/tmp/cluster-peers-$lib.out"; then
        echo "FAIL $lib: IS did not verify across the nodes"
        failed=1
    fi
    if ! grep -q "Total processes *= *$O2G_NODES" "/tmp/cluster-peers-$lib.out"; then
        echo "FAIL $lib: not $O2G_NODES processes"
        failed=1
    fi
    if [ "$moved" -lt "$min_bytes" ]; then
        echo "FAIL $lib: only $moved bytes came in over eth0 (keys need $min_bytes)"
        failed=1
    fi
done
exit "$failed"
