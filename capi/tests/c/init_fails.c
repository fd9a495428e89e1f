/* An MPI_Init that fails (the harness sets an unknown O2G_TRANSPORT) is
 * handled by MPI_ERRORS_ARE_FATAL, the default handler (MPI 5.0 §9.3):
 * the job ends with a non-zero status and a message naming the cause. A
 * program that ignores the error, as this one does, must not run on; if
 * MPI_Init comes back it says so and exits 0, which the test counts as a
 * failure. */
#include <stdio.h>
#include <mpi.h>

int main(int argc, char **argv) {
    int rc = MPI_Init(&argc, &argv);
    printf("init_fails: MPI_Init returned %d\n", rc);
    MPI_Finalize();
    return 0;
}
