/* The C half of interop.f90: handles and statuses from Fortran converted
 * with MPI_*_f2c, used in C, and new ones returned with MPI_*_c2f. */
#include <mpi.h>

/* Called from Fortran as CALL C_SIDE(COMM, STATUS, NEWCOMM, SIZE, ERR). */
void c_side_(const MPI_Fint *fcomm, const MPI_Fint *fstatus, MPI_Fint *fnew, MPI_Fint *size,
             MPI_Fint *err)
{
    MPI_Comm comm = MPI_Comm_f2c(*fcomm), dup;
    MPI_Status st;
    *err = 0;
    if (MPI_Comm_size(comm, size) != MPI_SUCCESS)
        *err = 1;
    if (MPI_Status_f2c(fstatus, &st) != MPI_SUCCESS || st.MPI_TAG != 11)
        *err = 2;
    if (MPI_Comm_dup(comm, &dup) != MPI_SUCCESS)
        *err = 3;
    *fnew = MPI_Comm_c2f(dup);
    if (MPI_Comm_f2c(*fnew) != dup || MPI_Comm_c2f(MPI_COMM_WORLD) != MPI_Comm_c2f(MPI_Comm_f2c(MPI_Comm_c2f(MPI_COMM_WORLD))))
        *err = 4;
}
