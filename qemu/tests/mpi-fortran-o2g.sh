# The Fortran bindings' test programs (capi/tests/fortran: a ring, reductions,
# alltoallv, a Cartesian stencil, derived datatypes, a conjugate-gradient
# kernel, a fixed-form program with mpif.h, handles passed to C and back,
# callbacks written in Fortran, one-sided communication),
# built with our mpifort, over the o2g transport at 2 and 3 ranks (with
# O2G_FULL=1 at 1 to 4; the host runs them at every count). Each
# program checks its results and ends the job with MPI_Abort on a wrong one.
# Needs the module loaded.
set -e
counts="2 3"
[ "${O2G_FULL:-0}" = 1 ] && counts="1 2 3 4"
for prog in fortran-ring fortran-reduce fortran-alltoallv fortran-stencil fortran-ddt fortran-cg \
    fortran-legacy fortran-interop fortran-caching fortran-rma; do
    for np in $counts; do
        echo "# $prog on $np ranks over o2g" >/dev/console
        O2G_TRANSPORT=o2g o2grun --timeout 240 -n "$np" "$prog"
    done
done
