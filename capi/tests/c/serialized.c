/* MPI_THREAD_SERIALIZED (MPI 5.0 §11.6.1): any thread may call MPI, one at
 * a time. Two threads of each rank take turns (a mutex and a condition
 * variable) sending around a ring and receiving, creating and freeing
 * communicators and requests, so every kind of handle state is made in
 * one thread and used or freed in the other. MPI_Is_thread_main answers
 * truly in both. */
#include <pthread.h>
#include "check.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t turn_changed = PTHREAD_COND_INITIALIZER;
static int turn = 0; /* which thread's turn: 0 main, 1 second */
static int rank, size;
static MPI_Comm shared = MPI_COMM_NULL;
static MPI_Request pending = MPI_REQUEST_NULL;
static int inbox = -1;

enum { ROUNDS = 200 };

static void wait_turn(int me) {
    pthread_mutex_lock(&lock);
    while (turn != me)
        pthread_cond_wait(&turn_changed, &lock);
    pthread_mutex_unlock(&lock);
}

static void pass_turn(int to) {
    pthread_mutex_lock(&lock);
    turn = to;
    pthread_cond_broadcast(&turn_changed);
    pthread_mutex_unlock(&lock);
}

/* One round in thread `me`: finish what the other thread started (a
 * receive, a communicator), then start the next. */
static void round_in(int me, int i) {
    int main_flag = -1, x = rank * 1000 + i;
    OK(MPI_Is_thread_main(&main_flag));
    CHECK(main_flag == (me == 0));
    if (pending != MPI_REQUEST_NULL) {
        OK(MPI_Wait(&pending, MPI_STATUS_IGNORE));
        CHECK(pending == MPI_REQUEST_NULL);
        CHECK(inbox == ((rank + size - 1) % size) * 1000 + i - 1);
        OK(MPI_Comm_free(&shared));
    }
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &shared));
    OK(MPI_Irecv(&inbox, 1, MPI_INT, (rank + size - 1) % size, i, shared, &pending));
    OK(MPI_Send(&x, 1, MPI_INT, (rank + 1) % size, i, shared));
}

static void *second(void *arg) {
    (void)arg;
    for (int i = 1; i < ROUNDS; i += 2) {
        wait_turn(1);
        round_in(1, i);
        pass_turn(0);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int provided = -1;
    pthread_t t;
    OK(MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided));
    CHECK(provided == MPI_THREAD_SERIALIZED);
    OK(MPI_Query_thread(&provided));
    CHECK(provided == MPI_THREAD_SERIALIZED);
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    check_rank = rank;
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(pthread_create(&t, NULL, second, NULL) == 0);
    for (int i = 0; i < ROUNDS; i += 2) {
        wait_turn(0);
        round_in(0, i);
        pass_turn(1);
    }
    CHECK(pthread_join(t, NULL) == 0);
    OK(MPI_Wait(&pending, MPI_STATUS_IGNORE));
    CHECK(inbox == ((rank + size - 1) % size) * 1000 + ROUNDS - 1);
    OK(MPI_Comm_free(&shared));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0)
        printf("serialized: ok on %d ranks\n", size);
    OK(MPI_Finalize());
    return 0;
}
