/* The smallest useful MPI program, for the wrapper and pkg-config tests:
 * every rank's rank and size, checked by a sum over all ranks. */
#include "check.h"

int main(int argc, char **argv) {
    int rank = -1, size = 0, sum = -1;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    check_rank = rank;
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size >= 1 && rank >= 0 && rank < size);
    OK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(sum == size * (size - 1) / 2);
    OK(MPI_Finalize());
    return 0;
}
