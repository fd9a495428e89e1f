/* The program the profiling test runs under its interposer: three
 * messages around a ring, then one allreduce, every value checked. It
 * calls MPI_Init, MPI_Isend, MPI_Recv, MPI_Wait and MPI_Allreduce a known
 * number of times (1, 3, 3, 3, 1), which the interposer counts. */
#include "check.h"

int main(int argc, char **argv)
{
    int rank, size;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    check_rank = rank;
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    for (int i = 0; i < 3; i++) {
        int out = 100 * rank + i, in = -1;
        MPI_Request req;
        OK(MPI_Isend(&out, 1, MPI_INT, next, i, MPI_COMM_WORLD, &req));
        OK(MPI_Recv(&in, 1, MPI_INT, prev, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        CHECK(in == 100 * prev + i);
    }
    int one = 1, sum = 0;
    OK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(sum == size);
    OK(MPI_Finalize());
    return 0;
}
