/* Under MPI_THREAD_SERIALIZED a program that lets two threads into MPI at
 * once has broken its promise: the job must end with a message saying
 * so, not race. The second thread blocks in a receive that no send
 * matches; the main thread then calls MPI. If that call returns, the
 * program says so and exits 0, which the test counts as a failure. */
#include <pthread.h>
#include <unistd.h>
#include "check.h"

static void *second(void *arg) {
    int x;
    (void)arg;
    MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return NULL;
}

int main(int argc, char **argv) {
    int provided = -1, rank;
    pthread_t t;
    OK(MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided));
    CHECK(provided == MPI_THREAD_SERIALIZED);
    CHECK(pthread_create(&t, NULL, second, NULL) == 0);
    usleep(300 * 1000);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    printf("concurrent: a call while another thread was inside MPI returned\n");
    return 0;
}
