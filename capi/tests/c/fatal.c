/* MPI_ERRORS_ARE_FATAL is the default (MPI 5.0 §9.3): an invalid root
 * must end the job with a non-zero status, never return. Exits 0 (which
 * the test counts as a failure) if the erroneous call comes back. Before
 * it, an error returned under MPI_ERRORS_RETURN with a reason of its own
 * (a predefined operation on a mixed struct): the fatal message must not
 * repeat that reason (the test checks). */
#include "check.h"

int main(int argc, char **argv) {
    int size, x = 0;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    int bl[2] = {1, 1};
    MPI_Aint at[2] = {0, 8};
    MPI_Datatype ty[2] = {MPI_INT, MPI_DOUBLE}, mixed;
    OK(MPI_Type_create_struct(2, bl, at, ty, &mixed));
    OK(MPI_Type_commit(&mixed));
    double in[2] = {0}, out[2] = {0};
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK(MPI_Reduce_local(in, out, 1, mixed, MPI_SUM) != MPI_SUCCESS);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    MPI_Bcast(&x, 1, MPI_INT, size + 5, MPI_COMM_WORLD);
    printf("fatal: the erroneous call returned\n");
    MPI_Finalize();
    return 0;
}
