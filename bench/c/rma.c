/*
 * Passive-target one-sided communication between ranks 0 and 1 (MPI 4.1
 * chapter 12), written for o2g so that the same program runs on our MPI
 * and on Open MPI / MPICH:
 *
 *   mpirun -n 2 rma [MAX_BYTES [MIN_BYTES]]
 *
 * Rank 0 is the origin, rank 1 the target, over a window from
 * MPI_Win_allocate. For every power of two from MIN_BYTES (default 8) to
 * MAX_BYTES (default 4 MiB), REPS repetitions each of:
 *
 * - latency: MPI_Win_lock(EXCLUSIVE), one MPI_Put, MPI_Win_unlock, while
 *   the target waits in MPI_Barrier (so it is inside MPI); microseconds
 *   per epoch;
 * - bandwidth: under MPI_Win_lock_all, a window of up to 64 MPI_Put then
 *   MPI_Win_flush; MB/s;
 * - target overlap: the target computes for COMPUTE_MS without any MPI
 *   call while the origin runs one lock/put/unlock epoch; the epoch's
 *   time as a share of the compute time says whether the put needed the
 *   target to enter MPI (close to 1) or progressed without it (close to 0).
 *
 * The data that arrive are checked. Rank 0 prints one CSV line per size
 * and measure, every repetition's figure:
 *
 *   csv,<measure>,c,<bytes>,<r1>;<r2>;...
 *
 * with <measure> put-latency (us), put-bandwidth (MB/s) or
 * target-overlap (epoch time / compute time).
 */
#define _POSIX_C_SOURCE 199309L /* clock_gettime under -std=c11 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REPS 5
#define WINDOW 64
#define WINDOW_BYTES (16L << 20)
#define LAT_ITERS 50
#define COMPUTE_MS 50.0

/* Spins for `ms` milliseconds of wall time without calling MPI. */
static void compute(double ms) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    volatile double x = 1.0;
    for (;;) {
        for (int i = 0; i < 1000; i++) x = x * 1.0000001 + 1e-9;
        clock_gettime(CLOCK_MONOTONIC, &b);
        if ((double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6 >= ms) break;
    }
}

static void print_row(const char *measure, long bytes, const double *r) {
    printf("csv,%s,c,%ld,", measure, bytes);
    for (int i = 0; i < REPS; i++) printf("%s%.3f", i ? ";" : "", r[i]);
    printf("\n");
    fflush(stdout);
}

int main(int argc, char **argv) {
    int rank, size;
    long max = argc > 1 ? atol(argv[1]) : 4L << 20;
    long min = argc > 2 ? atol(argv[2]) : 8;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2 || min < 1 || max < min) {
        if (rank == 0) fprintf(stderr, "rma: needs 2 ranks and 1 <= MIN_BYTES <= MAX_BYTES\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long span = max * WINDOW < WINDOW_BYTES ? max * WINDOW : (max > WINDOW_BYTES ? max : WINDOW_BYTES);
    char *base = NULL, *src = malloc((size_t)span);
    MPI_Win win;
    MPI_Win_allocate((MPI_Aint)span, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    if (!src || !base) MPI_Abort(MPI_COMM_WORLD, 3);
    if (rank == 0) printf("# passive-target put: median of %d repetitions each\n", REPS);
    for (long bytes = min; bytes <= max; bytes *= 2) {
        double lat[REPS], bw[REPS], ovl[REPS];
        int window = (int)(WINDOW_BYTES / bytes < WINDOW ? WINDOW_BYTES / bytes : WINDOW);
        if (window < 1) window = 1;
        for (int rep = 0; rep < REPS; rep++) {
            memset(src, (int)(rep + bytes) & 0x7f, (size_t)bytes);
            /* Latency: the target waits in MPI_Barrier meanwhile. */
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 0) {
                double t = MPI_Wtime();
                for (int i = 0; i < LAT_ITERS; i++) {
                    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win);
                    MPI_Put(src, (int)bytes, MPI_BYTE, 1, 0, (int)bytes, MPI_BYTE, win);
                    MPI_Win_unlock(1, win);
                }
                lat[rep] = (MPI_Wtime() - t) * 1e6 / LAT_ITERS;
            }
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 1 && base[bytes - 1] != src[bytes - 1]) {
                fprintf(stderr, "rma: put of %ld bytes did not arrive\n", bytes);
                MPI_Abort(MPI_COMM_WORLD, 4);
            }
            /* Bandwidth: a window of puts, then a flush. */
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 0) {
                MPI_Win_lock_all(0, win);
                double t = MPI_Wtime();
                for (int i = 0; i < window; i++)
                    MPI_Put(src, (int)bytes, MPI_BYTE, 1, (MPI_Aint)i * bytes, (int)bytes, MPI_BYTE, win);
                MPI_Win_flush(1, win);
                bw[rep] = (double)bytes * window / (MPI_Wtime() - t) / 1e6;
                MPI_Win_unlock_all(win);
            }
            MPI_Barrier(MPI_COMM_WORLD);
            /* Target overlap: the target computes with no MPI call. */
            if (rank == 1) {
                compute(COMPUTE_MS);
            } else {
                double t = MPI_Wtime();
                MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win);
                MPI_Put(src, (int)bytes, MPI_BYTE, 1, 0, (int)bytes, MPI_BYTE, win);
                MPI_Win_unlock(1, win);
                ovl[rep] = (MPI_Wtime() - t) * 1e3 / COMPUTE_MS;
            }
            MPI_Barrier(MPI_COMM_WORLD);
        }
        if (rank == 0) {
            print_row("put-latency", bytes, lat);
            print_row("put-bandwidth", bytes, bw);
            print_row("target-overlap", bytes, ovl);
        }
    }
    MPI_Win_free(&win);
    free(src);
    MPI_Finalize();
    return 0;
}
