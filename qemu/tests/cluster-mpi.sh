# Cluster: the MPI conformance cases as one job spanning every node (one
# rank per node, o2grun-cluster), over TCP (every rendezvous message
# sent with MSG_ZEROCOPY), over the o2g module, and over
# the emulated DIMMnet-1 and HyphenLink in the VMs' shared ivshmem BAR.
# Needs the module loaded and the ivshmem device (vm.sh gives clusters one).
set -e
step=0
export O2G_DIMMNET_REGION=ivshmem O2G_DIMMNET_PEER_TIMEOUT=30 \
    O2G_HYPHEN_REGION=ivshmem O2G_HYPHEN_DEAD_AFTER=30
for transport in sockets-epoll o2g dimmnet hyphenlink; do
    for case in p2p collectives random; do
        step=$((step + 1))
        echo "# $case over $transport across $O2G_NODES nodes" >/dev/console
        # Every rendezvous message over the sockets goes without a copy
        # (MSG_ZEROCOPY between the VMs), not only those of 512 KiB or more.
        O2G_TRANSPORT=$transport O2G_CONF_CASE=$case O2G_ZEROCOPY_MIN=65536 \
            o2grun-cluster $step mpi-conformance
    done
done
