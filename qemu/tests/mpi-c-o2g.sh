# The C ABI's test programs (capi/tests/c: environment, point-to-point with
# MPI_Ssend, collectives, the NAS-IS-like sort, and a slice of each family
# issue 23 added: derived datatypes, more and nonblocking collectives,
# groups, topologies, send modes, persistent requests, matched probe,
# multiple completions, neighborhood collectives, inter-communicators, two
# threads taking turns under MPI_THREAD_SERIALIZED; one-sided communication
# in every synchronization mode, dynamic and shared windows, and its
# errors, and passive-target epochs the module serves while the target
# sits in a system call; four threads at once under MPI_THREAD_MULTIPLE), built with our
# mpicc, over the o2g transport at
# 2 and 3 ranks (the one-sided and MULTIPLE programs at 4), with
# O2G_FULL=1 at 1 to 4 (those at 2 and 4): the host runs them at every
# count over the other transports. Each program checks
# every value itself and exits non-zero on a wrong one. Needs the module
# loaded.
set -e
# run PROG DEFAULT_COUNTS FULL_COUNTS: PROG at each count of ranks.
run() {
    prog="$1" counts="$2"
    [ "${O2G_FULL:-0}" = 1 ] && counts="$3"
    for np in $counts; do
        echo "# $prog on $np ranks over o2g" >/dev/console
        O2G_TRANSPORT=o2g o2grun --timeout 240 -n "$np" "$prog"
    done
}
for prog in capi-env capi-p2p capi-coll capi-is capi-datatype capi-coll2 capi-icoll capi-group \
    capi-topo capi-p2p_modes capi-persistent capi-mprobe capi-waitsome capi-neighbor \
    capi-intercomm capi-serialized; do
    run "$prog" "2 3" "1 2 3 4"
done
for prog in capi-rma capi-rma_sync capi-rma_dynamic capi-rma_shared capi-rma_errors capi-multiple; do
    run "$prog" 4 "2 4"
done
# The module as the passive target's agent: the target sits in read(2)
# while the origins' epochs complete (a window the module does not serve
# fails here).
RMA_MODULE_REQUIRED=1 run capi-rma_module 4 "2 4"
