/* MPI_Abort (MPI 5.0 §9.5) from the last rank ends every process with a
 * non-zero status; the others wait in a receive that never matches. */
#include "check.h"

int main(int argc, char **argv) {
    int rank, size, x;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == size - 1) MPI_Abort(MPI_COMM_WORLD, 7);
    MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 12345, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    printf("abort: rank %d was not aborted\n", rank);
    return 0;
}
