/* MPI_ERRORS_ARE_FATAL is the default (MPI 5.0 §9.3): an invalid rank
 * must end the job with a non-zero status, never return. Exits 0 (which
 * the test counts as a failure) if the erroneous call comes back. */
#include "check.h"

int main(int argc, char **argv) {
    int size, x = 0;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    MPI_Send(&x, 1, MPI_INT, size + 5, 0, MPI_COMM_WORLD);
    printf("fatal: the erroneous call returned\n");
    MPI_Finalize();
    return 0;
}
