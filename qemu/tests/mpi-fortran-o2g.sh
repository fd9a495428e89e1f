# The Fortran bindings' test programs (capi/tests/fortran: a ring, reductions,
# alltoallv, a Cartesian stencil, derived datatypes, a conjugate-gradient
# kernel, a fixed-form program with mpif.h, handles passed to C and back,
# callbacks written in Fortran, one-sided communication),
# built with our mpifort, over the o2g transport at 1 to 4 ranks. Each
# program checks its results and ends the job with MPI_Abort on a wrong one.
# Needs the module loaded.
set -e
for prog in fortran-ring fortran-reduce fortran-alltoallv fortran-stencil fortran-ddt fortran-cg \
    fortran-legacy fortran-interop fortran-caching fortran-rma; do
    for np in 1 2 3 4; do
        echo "# $prog on $np ranks over o2g" >/dev/console
        O2G_TRANSPORT=o2g o2grun --timeout 240 -n "$np" "$prog"
    done
done
