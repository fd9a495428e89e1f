/* MPI_THREAD_MULTIPLE (MPI 5.0 §11.6): several threads of each process
 * call MPI at once. Each thread passes messages round a ring on
 * MPI_COMM_WORLD with a tag of its own (receiving from MPI_ANY_SOURCE,
 * probing first every few rounds), runs collectives on a communicator of
 * its own (duplicated by the main thread, in the same order everywhere),
 * and cancels a receive nobody sends to; one thread also does one-sided
 * communication. The ranks' values are checked by every thread; correct at
 * any number of ranks. A thread blocked in a receive must not keep the
 * others out: the ring needs every thread of every rank to progress.
 * MULTIPLE_STRESS=N in the environment runs N times the rounds (a long
 * stress run; the test command runs the default slice). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"

#define THREADS 4
#define ROUNDS 200
#define COLLS 40

static int rank, size, right, left, stress = 1;
static MPI_Comm comms[THREADS];

static void *worker(void *arg) {
    int t = (int)(long)arg, tag = 100 + t;
    MPI_Comm mine = comms[t];
    for (int i = 0; i < ROUNDS * stress; i++) {
        int out = rank * 100000 + t * 1000 + i, in = -1, flag = 0;
        MPI_Status st;
        MPI_Request r;
        OK(MPI_Isend(&out, 1, MPI_INT, right, tag, MPI_COMM_WORLD, &r));
        if (i % 5 == 0) {
            OK(MPI_Probe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &st));
            CHECK(st.MPI_SOURCE == left && st.MPI_TAG == tag);
            OK(MPI_Iprobe(left, tag, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
            CHECK(flag);
        }
        OK(MPI_Recv(&in, 1, MPI_INT, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &st));
        CHECK(in == left * 100000 + t * 1000 + i && st.MPI_SOURCE == left);
        OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    }
    for (int i = 0; i < COLLS * stress; i++) {
        int v = rank + i + t, sum = -1, root = i % size, b = -1;
        OK(MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, mine));
        CHECK(sum == size * (size - 1) / 2 + size * (i + t));
        if (rank == root) b = i * 7 + t;
        OK(MPI_Bcast(&b, 1, MPI_INT, root, mine));
        CHECK(b == i * 7 + t);
        OK(MPI_Barrier(mine));
    }
    /* A receive nobody sends to: cancelled. */
    int never = 0, cancelled = 0;
    MPI_Request r;
    MPI_Status st;
    OK(MPI_Irecv(&never, 1, MPI_INT, MPI_ANY_SOURCE, 999 + t, MPI_COMM_WORLD, &r));
    OK(MPI_Cancel(&r));
    OK(MPI_Wait(&r, &st));
    OK(MPI_Test_cancelled(&st, &cancelled));
    CHECK(cancelled);
    if (t == 0) {
        /* One-sided communication beside the others' point-to-point. */
        int cell = -1, got = -1, one = rank;
        MPI_Win win;
        OK(MPI_Win_create(&cell, sizeof cell, sizeof cell, MPI_INFO_NULL, mine, &win));
        OK(MPI_Win_fence(0, win));
        OK(MPI_Put(&one, 1, MPI_INT, right, 0, 1, MPI_INT, win));
        OK(MPI_Win_fence(0, win));
        CHECK(cell == left);
        OK(MPI_Win_lock(MPI_LOCK_SHARED, left, 0, win));
        OK(MPI_Get(&got, 1, MPI_INT, left, 0, 1, MPI_INT, win));
        OK(MPI_Win_unlock(left, win));
        CHECK(got == (left + size - 1) % size);
        OK(MPI_Win_free(&win));
    }
    return NULL;
}

int main(int argc, char **argv) {
    int provided = -1, flag = 0;
    const char *s = getenv("MULTIPLE_STRESS");
    if (s && atoi(s) > 0) stress = atoi(s);
    OK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    CHECK(provided == MPI_THREAD_MULTIPLE);
    OK(MPI_Query_thread(&provided));
    CHECK(provided == MPI_THREAD_MULTIPLE);
    OK(MPI_Is_thread_main(&flag));
    CHECK(flag);
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    check_rank = rank;
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    right = (rank + 1) % size;
    left = (rank + size - 1) % size;
    for (int t = 0; t < THREADS; t++) OK(MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]));

    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++)
        CHECK(pthread_create(&th[t], NULL, worker, (void *)(long)t) == 0);
    for (int t = 0; t < THREADS; t++) CHECK(pthread_join(th[t], NULL) == 0);

    for (int t = 0; t < THREADS; t++) OK(MPI_Comm_free(&comms[t]));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Finalize());
    return 0;
}
