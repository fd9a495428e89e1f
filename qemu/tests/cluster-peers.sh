# Cluster (run with --nodes 2 or more and O2G_GUEST_PEERS=1): Debian's Open
# MPI and MPICH run the C IS benchmark, class S, one rank on every node,
# forced onto TCP over eth0 (/etc/o2g/peers.sh). Their launchers reach the
# other nodes through the harness's remote shell (peers_across_nodes: node
# 0 launches, the others serve o2g-rsh). Fails if either library does not
# verify, runs on fewer processes, or too little data crossed eth0 for the
# keys to have gone between the VMs.
if [ ! -r /etc/o2g/peers.sh ]; then
    echo "cluster-peers: Open MPI/MPICH not in this initramfs (O2G_GUEST_PEERS=1)"
    exit 4
fi
. /etc/o2g/peers.sh
peers_setup
class=S
# Each iteration about (N-1)/N of every rank's 2^16/N keys (4 bytes) cross
# to other ranks; 11 iterations. Ask node 0 to receive half of its share.
min_bytes=$((11 * 65536 * (O2G_NODES - 1) / O2G_NODES / O2G_NODES * 4 / 2))
check() {
    failed=0
    for lib in openmpi mpich; do
        echo "== $lib: is-$lib $class, one rank on each of $O2G_PEERS_HOSTS"
        out="/tmp/cluster-peers-$lib.out"
        for try in 1 2; do
            before="$(peers_if_rx_bytes)"
            timeout 180 sh /etc/o2g/peers.sh "$lib" "$O2G_NODES" "is-$lib" "$class" >"$out" 2>&1
            rc=$?
            moved=$(($(peers_if_rx_bytes) - before))
            cat "$out"
            echo "$lib: exit $rc; $moved bytes received over $O2G_PEERS_IF"
            # MPICH over UCX's tcp sometimes hangs (on one node in
            # MPI_Finalize; across VMs once in 5 runs, where is not known):
            # a run that verified and then hung counts, one that hung
            # before verifying gets one retry.
            [ "$lib" = mpich ] && [ "$rc" = 124 ] || break
            if grep -q 'Verification    =  SUCCESSFUL' "$out"; then
                echo "$lib: verified, then did not exit within 180 s (UCX tcp hang); killed"
                rc=0
                break
            fi
            [ "$try" = 1 ] && echo "$lib: hung before verifying; once more"
        done
        if [ "$rc" -ne 0 ] || ! grep -q 'Verification    =  SUCCESSFUL' "$out"; then
            echo "FAIL $lib: IS did not verify across the nodes"
            failed=1
        fi
        if ! grep -q "Total processes *= *$O2G_NODES\$" "$out"; then
            echo "FAIL $lib: not $O2G_NODES processes"
            failed=1
        fi
        if [ "$moved" -lt "$min_bytes" ]; then
            echo "FAIL $lib: only $moved bytes came in over $O2G_PEERS_IF (keys need $min_bytes)"
            failed=1
        fi
    done
    return "$failed"
}
peers_across_nodes check
