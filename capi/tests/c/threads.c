/* At MPI_THREAD_FUNNELED a call from a thread other than the one that
 * initialised MPI is erroneous, and MPI_ERRORS_ARE_FATAL must end the job with a
 * message saying so, not return an error that the program ignores while
 * its message is lost. The functions MPI lets any thread call
 * (MPI_Initialized, MPI_Query_thread, ...) still answer, and truly. If
 * the second thread's MPI_Send comes back the program says so and exits
 * 0, which the test counts as a failure. */
#include <pthread.h>
#include "check.h"

static void *second(void *arg) {
    int flag = 0, provided = -1, x = 1;
    (void)arg;
    if (MPI_Initialized(&flag) != MPI_SUCCESS || !flag) {
        fprintf(stderr, "threads: MPI_Initialized from the second thread says %d\n", flag);
        exit(2);
    }
    if (MPI_Query_thread(&provided) != MPI_SUCCESS || provided != MPI_THREAD_FUNNELED) {
        fprintf(stderr, "threads: MPI_Query_thread from the second thread says %d\n", provided);
        exit(2);
    }
    MPI_Send(&x, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
    printf("threads: MPI_Send from the second thread returned\n");
    return NULL;
}

int main(int argc, char **argv) {
    int provided = -1;
    pthread_t t;
    OK(MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided));
    CHECK(provided == MPI_THREAD_FUNNELED);
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &check_rank));
    CHECK(pthread_create(&t, NULL, second, NULL) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    MPI_Finalize();
    return 0;
}
