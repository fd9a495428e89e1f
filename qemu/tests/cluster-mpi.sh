# Cluster: the MPI conformance cases as one job spanning every node (one
# rank per node, o2grun-cluster), over TCP and over the o2g module. Needs
# the module loaded.
set -e
step=0
for transport in sockets-epoll o2g; do
    for case in p2p collectives random; do
        step=$((step + 1))
        echo "# $case over $transport across $O2G_NODES nodes" >/dev/console
        O2G_TRANSPORT=$transport O2G_CONF_CASE=$case o2grun-cluster $step mpi-conformance
    done
done
