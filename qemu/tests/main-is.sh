# The main job in the guest: the NAS-IS-style sort over each of our
# transports, the same algorithm in C on our MPI (libmpi_abi.so.1 over o2g)
# and on Debian's Open MPI and MPICH (forced onto TCP by
# /etc/o2g/peers.sh), side by side, repetition after repetition.
# Progress and results go straight to the console ("# " lines, which the
# harness streams live); "# csv: " lines carry every measurement out.
# o2g's runs have Receive Flow Steering on (with-rfs), the others off:
# each library with its better setting (docs/results.md, "Receive Flow
# Steering for the module's large receives").
set -e -o pipefail
class="${O2G_MAIN_CLASS:-S}" reps="${O2G_MAIN_REPS:-10}" np="${O2G_MAIN_NP:-2}"
is="o2grun -n $np --timeout 1200 o2g-is $class"
set -- \
    --run "sockets-select=O2G_TRANSPORT=sockets-select O2G_SELF=0 with-rfs off $is" \
    --run "sockets-epoll=O2G_TRANSPORT=sockets-epoll O2G_SELF=0 with-rfs off $is" \
    --run "o2g=O2G_TRANSPORT=o2g with-rfs $is" \
    --run "o2g-C=O2G_TRANSPORT=o2g with-rfs o2grun -n $np --timeout 1200 is-o2g $class"
if [ -r /etc/o2g/peers.sh ]; then
    . /etc/o2g/peers.sh
    peers_setup
    set -- "$@" \
        --run "openmpi=with-rfs off sh /etc/o2g/peers.sh openmpi $np is-openmpi $class" \
        --run "mpich=with-rfs off sh /etc/o2g/peers.sh mpich $np is-mpich $class" \
        --peer openmpi --peer mpich
fi
echo "# NAS-IS-style class $class, $np ranks, $reps repetitions each" >/dev/console
o2g-compare --reps "$reps" --ours o2g --timeout 900 --csv /tmp/is.csv "$@" 2>&1 |
    while IFS= read -r line; do echo "# $line"; done >/dev/console
sed 's/^/# csv: /' /tmp/is.csv >/dev/console
