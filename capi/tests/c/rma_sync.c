/* Synchronisation of one-sided communication (MPI 4.1 §12.5): general
 * active target (MPI_Win_post / start / complete / wait with the groups of
 * the two neighbours, and MPI_Win_test polled until true); passive target
 * (a counter at rank 0 read, flushed and written back N times by every rank
 * under MPI_LOCK_EXCLUSIVE, so the result is only right if the lock
 * excludes; MPI_LOCK_SHARED readers holding the lock at the same time;
 * MPI_Win_lock_all with flush, flush_all, flush_local, flush_local_all and
 * MPI_Win_sync; a rank reading and writing its own window under a lock on
 * itself); MPI_Win_fence with the asserts MPI_MODE_NOPRECEDE, NOSTORE,
 * NOPUT and NOSUCCEED; a target computing outside MPI while origins lock
 * and put into it, the data there once it calls MPI again. Every value
 * checked; correct at any number of ranks. */
#define _POSIX_C_SOURCE 200112L
#include <time.h>
#include "check.h"

#define N 32
#define INCS 25

/* Slots of the window (ints). */
enum {
    S_PSCW_L = 0, /* from the left, PSCW round 1 */
    S_PSCW_R = 1, /* from the right, PSCW round 1 */
    S_PSCW2 = 2,  /* from the left, PSCW round 2 */
    S_ALL1 = 3,   /* lock_all, flush_local */
    S_ALL2 = 4,   /* lock_all, flush_local_all */
    S_EXCL = 5,   /* exclusive put from the left */
    S_LOCAL = 6,  /* local store under a lock on oneself */
    S_FENCE = 7,  /* fence with asserts */
    S_COUNT = 10, /* the counter at rank 0 */
    S_BUSY = 16   /* S_BUSY + origin at rank 0 */
};

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    int rank, size, flag;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    check_rank = rank;
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int leftleft = (rank + 2 * size - 2) % size;

    int *buf = NULL;
    MPI_Win win;
    OK(MPI_Win_allocate(N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &buf, &win));
    CHECK(buf != NULL);
    for (int i = 0; i < N; i++) buf[i] = -1;
    buf[S_COUNT] = 0;
    /* The local stores above are seen by the first access epoch. */
    OK(MPI_Win_fence(MPI_MODE_NOPRECEDE | MPI_MODE_NOSUCCEED, win));

    /* ---- General active target. ---- */
    /* The neighbours as a group of distinct ranks of the window's group:
     * one rank (oneself) at size 1, one (the other) at size 2. */
    MPI_Group wg, nbrs;
    int nr[2], nn = 0, gsize = -1;
    OK(MPI_Win_get_group(win, &wg));
    nr[nn++] = left;
    if (right != left) nr[nn++] = right;
    OK(MPI_Group_incl(wg, nn, nr, &nbrs));
    OK(MPI_Group_size(nbrs, &gsize));
    CHECK(gsize == nn);

    /* Round 1: Put to both neighbours, end with MPI_Win_wait. */
    int to_right = rank + 1, to_left = rank + 1;
    OK(MPI_Win_post(nbrs, 0, win));
    OK(MPI_Win_start(nbrs, 0, win));
    OK(MPI_Put(&to_right, 1, MPI_INT, right, S_PSCW_L, 1, MPI_INT, win));
    OK(MPI_Put(&to_left, 1, MPI_INT, left, S_PSCW_R, 1, MPI_INT, win));
    OK(MPI_Win_complete(win));
    OK(MPI_Win_wait(win));
    CHECK(buf[S_PSCW_L] == left + 1 && buf[S_PSCW_R] == right + 1);
    CHECK(buf[S_PSCW2] == -1);

    /* Round 2: a Get from the left and a Put to the right, end with
     * MPI_Win_test polled until true. */
    int g = -7, p2 = rank * 3 + 2;
    OK(MPI_Win_post(nbrs, 0, win));
    OK(MPI_Win_start(nbrs, 0, win));
    OK(MPI_Get(&g, 1, MPI_INT, left, S_PSCW_L, 1, MPI_INT, win));
    OK(MPI_Put(&p2, 1, MPI_INT, right, S_PSCW2, 1, MPI_INT, win));
    OK(MPI_Win_complete(win));
    CHECK(g == leftleft + 1);
    flag = 0;
    for (long spins = 0; !flag; spins++) {
        OK(MPI_Win_test(win, &flag));
        CHECK(spins < 100000000L);
    }
    CHECK(buf[S_PSCW2] == left * 3 + 2);

    /* Round 3: MPI_MODE_NOCHECK on both post and start (every post is
     * done before the barrier); then round 4 without it must still wait
     * for its own post, not for a notice left over from round 3. */
    int p3 = rank * 5 + 1;
    OK(MPI_Win_post(nbrs, MPI_MODE_NOCHECK, win));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Win_start(nbrs, MPI_MODE_NOCHECK, win));
    OK(MPI_Put(&p3, 1, MPI_INT, right, S_PSCW2, 1, MPI_INT, win));
    OK(MPI_Win_complete(win));
    OK(MPI_Win_wait(win));
    CHECK(buf[S_PSCW2] == left * 5 + 1);
    int p4 = rank * 7 + 3;
    OK(MPI_Win_post(nbrs, 0, win));
    OK(MPI_Win_start(nbrs, 0, win));
    OK(MPI_Put(&p4, 1, MPI_INT, right, S_PSCW2, 1, MPI_INT, win));
    OK(MPI_Win_complete(win));
    OK(MPI_Win_wait(win));
    CHECK(buf[S_PSCW2] == left * 7 + 3);
    OK(MPI_Group_free(&nbrs));
    OK(MPI_Group_free(&wg));

    /* ---- Passive target: a counter at rank 0 behind an exclusive lock. ---- */
    OK(MPI_Barrier(MPI_COMM_WORLD));
    for (int i = 0; i < INCS; i++) {
        int v = -7;
        OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
        OK(MPI_Get(&v, 1, MPI_INT, 0, S_COUNT, 1, MPI_INT, win));
        OK(MPI_Win_flush(0, win));
        CHECK(v >= 0 && v < INCS * size);
        v++;
        OK(MPI_Put(&v, 1, MPI_INT, 0, S_COUNT, 1, MPI_INT, win));
        OK(MPI_Win_unlock(0, win));
    }
    OK(MPI_Barrier(MPI_COMM_WORLD));
    /* Shared readers, all holding the lock at once. */
    int cnt = -7;
    OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
    OK(MPI_Get(&cnt, 1, MPI_INT, 0, S_COUNT, 1, MPI_INT, win));
    OK(MPI_Win_flush(0, win));
    CHECK(cnt == INCS * size);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    cnt = -7;
    OK(MPI_Get(&cnt, 1, MPI_INT, 0, S_COUNT, 1, MPI_INT, win));
    OK(MPI_Win_unlock(0, win));
    CHECK(cnt == INCS * size);
    if (rank == 0) {
        OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        CHECK(buf[S_COUNT] == INCS * size);
        OK(MPI_Win_unlock(0, win));
    }
    OK(MPI_Barrier(MPI_COMM_WORLD));

    /* ---- lock_all with the flushes and MPI_Win_sync. ---- */
    OK(MPI_Win_lock_all(0, win));
    int a1 = rank + 10;
    OK(MPI_Put(&a1, 1, MPI_INT, right, S_ALL1, 1, MPI_INT, win));
    OK(MPI_Win_flush_local(right, win));
    a1 = -99; /* the origin buffer is free again */
    int a2 = rank + 20;
    OK(MPI_Put(&a2, 1, MPI_INT, right, S_ALL2, 1, MPI_INT, win));
    OK(MPI_Win_flush_local_all(win));
    a2 = -99;
    OK(MPI_Win_flush(right, win));
    OK(MPI_Win_flush_all(win));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Win_sync(win));
    CHECK(buf[S_ALL1] == left + 10 && buf[S_ALL2] == left + 20);
    /* And read back remotely. */
    int r2[2] = {-7, -7};
    OK(MPI_Get(r2, 2, MPI_INT, left, S_ALL1, 2, MPI_INT, win));
    OK(MPI_Win_flush(left, win));
    CHECK(r2[0] == leftleft + 10 && r2[1] == leftleft + 20);
    OK(MPI_Win_unlock_all(win));
    OK(MPI_Barrier(MPI_COMM_WORLD));

    /* ---- A rank's own window under a lock on itself. ---- */
    /* An exclusive put from the left, read locally under a lock on oneself. */
    int ev = rank * 5 + 1;
    OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
    OK(MPI_Put(&ev, 1, MPI_INT, right, S_EXCL, 1, MPI_INT, win));
    OK(MPI_Win_unlock(right, win));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win));
    CHECK(buf[S_EXCL] == left * 5 + 1);
    /* A local store, seen by the neighbours after the unlock. */
    buf[S_LOCAL] = rank * 9 + 4;
    OK(MPI_Win_unlock(rank, win));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    int lv[2] = {-7, -7};
    OK(MPI_Win_lock(MPI_LOCK_SHARED, left, 0, win));
    OK(MPI_Get(&lv[0], 1, MPI_INT, left, S_LOCAL, 1, MPI_INT, win));
    OK(MPI_Win_unlock(left, win));
    OK(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
    OK(MPI_Get(&lv[1], 1, MPI_INT, right, S_LOCAL, 1, MPI_INT, win));
    OK(MPI_Win_unlock(right, win));
    CHECK(lv[0] == left * 9 + 4 && lv[1] == right * 9 + 4);
    OK(MPI_Barrier(MPI_COMM_WORLD));

    /* ---- Fence with asserts. ---- */
    int fv = rank * 13 + 6, fg = -7;
    OK(MPI_Win_fence(MPI_MODE_NOPRECEDE, win));
    OK(MPI_Put(&fv, 1, MPI_INT, right, S_FENCE, 1, MPI_INT, win));
    /* No local stores since the last fence; no puts in the next epoch. */
    OK(MPI_Win_fence(MPI_MODE_NOSTORE | MPI_MODE_NOPUT, win));
    CHECK(buf[S_FENCE] == left * 13 + 6);
    OK(MPI_Get(&fg, 1, MPI_INT, left, S_FENCE, 1, MPI_INT, win));
    OK(MPI_Win_fence(MPI_MODE_NOSTORE, win));
    CHECK(fg == leftleft * 13 + 6);
    /* The last fence: nothing before it, nothing after it. */
    OK(MPI_Win_fence(MPI_MODE_NOPRECEDE | MPI_MODE_NOSUCCEED | MPI_MODE_NOSTORE | MPI_MODE_NOPUT,
                     win));
    OK(MPI_Barrier(MPI_COMM_WORLD));

    /* ---- A lock right after a fence sees what the fence ended: a get
     * from the left, with no barrier between, finds the put the left's
     * left made before the fence. ---- */
    int pv = rank * 17 + 5, pg = -7;
    OK(MPI_Win_fence(0, win));
    OK(MPI_Put(&pv, 1, MPI_INT, right, S_FENCE, 1, MPI_INT, win));
    OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    OK(MPI_Win_lock(MPI_LOCK_SHARED, left, 0, win));
    OK(MPI_Get(&pg, 1, MPI_INT, left, S_FENCE, 1, MPI_INT, win));
    OK(MPI_Win_unlock(left, win));
    CHECK(pg == leftleft * 17 + 5);
    OK(MPI_Barrier(MPI_COMM_WORLD));

    /* ---- A busy target: rank 0 computes for ~50 ms without MPI while the
     * others lock it and put; the data is there once it calls MPI. ---- */
    if (rank == 0) {
        if (size == 1) {
            int bv = 1000;
            OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
            OK(MPI_Put(&bv, 1, MPI_INT, 0, S_BUSY, 1, MPI_INT, win));
            OK(MPI_Win_unlock(0, win));
        }
        OK(MPI_Barrier(MPI_COMM_WORLD));
        volatile double x = 0;
        double t0 = now();
        while (now() - t0 < 0.05) x += 1.0;
        OK(MPI_Barrier(MPI_COMM_WORLD));
        OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        for (int p = 0; p < size; p++) CHECK(buf[S_BUSY + p] == (p == 0 && size > 1 ? -1 : 1000 + p));
        OK(MPI_Win_unlock(0, win));
    } else {
        int bv = 1000 + rank;
        OK(MPI_Barrier(MPI_COMM_WORLD));
        OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
        OK(MPI_Put(&bv, 1, MPI_INT, 0, S_BUSY + rank, 1, MPI_INT, win));
        OK(MPI_Win_unlock(0, win));
        OK(MPI_Barrier(MPI_COMM_WORLD));
    }

    OK(MPI_Win_free(&win));
    CHECK(win == MPI_WIN_NULL);
    OK(MPI_Finalize());
    return 0;
}
