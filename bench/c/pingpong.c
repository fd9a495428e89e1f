/*
 * MPI ping-pong between ranks 0 and 1, written for o2g so that the same
 * program runs on our MPI and on Open MPI / MPICH:
 *
 *   mpirun -n 2 pingpong [MAX_BYTES]
 *
 * For 0 B and every power of two up to MAX_BYTES (default 16 MiB) it times
 * round trips of MPI_Send/MPI_Recv: one untimed repetition, then REPS
 * timed ones, each of enough round trips to move about BUDGET bytes (at
 * least 2, at most MAX_ITERS). Rank 0 prints the median half round trip
 * and the bandwidth it implies, in the same table as o2g-pingpong:
 *
 *      bytes   half-rtt(us)         MB/s
 *
 * Other ranks only take part in the barriers. With PINGPONG_THREADS=multiple
 * in the environment it initialises with MPI_Init_thread(MPI_THREAD_MULTIPLE)
 * (one thread still does all the work), to show what that level costs.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REPS 5
#define MAX_ITERS 1000
#define BUDGET (16L << 20)

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int rank, size;
    long max = argc > 1 ? atol(argv[1]) : 16L << 20;
    const char *threads = getenv("PINGPONG_THREADS");
    if (threads && strcmp(threads, "multiple") == 0) {
        int provided = 0;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
        if (provided != MPI_THREAD_MULTIPLE) {
            fprintf(stderr, "pingpong: MPI_THREAD_MULTIPLE not provided (%d)\n", provided);
            MPI_Abort(MPI_COMM_WORLD, 4);
        }
    } else {
        MPI_Init(&argc, &argv);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2 || max < 0) {
        if (rank == 0) fprintf(stderr, "pingpong: needs 2 ranks and MAX_BYTES >= 0\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    char *buf = calloc((size_t)(max > 0 ? max : 1), 1);
    if (!buf) MPI_Abort(MPI_COMM_WORLD, 3);
    if (rank == 0) {
        printf("# C ping-pong: median of %d repetitions\n", REPS);
        printf("%10s %14s %12s\n", "bytes", "half-rtt(us)", "MB/s");
    }
    for (long n = 0; n <= max; n = n ? n * 2 : 1) {
        long iters = BUDGET / (n > 0 ? n : 1);
        if (iters > MAX_ITERS) iters = MAX_ITERS;
        if (iters < 2) iters = 2;
        double samples[REPS];
        for (int rep = 0; rep <= REPS; rep++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (long i = 0; i < iters; i++) {
                if (rank == 0) {
                    MPI_Send(buf, (int)n, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
                    MPI_Recv(buf, (int)n, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else if (rank == 1) {
                    MPI_Recv(buf, (int)n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(buf, (int)n, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
                }
            }
            double half = (MPI_Wtime() - t0) / (double)iters / 2.0;
            if (rep > 0) samples[rep - 1] = half;
        }
        if (rank == 0) {
            qsort(samples, REPS, sizeof samples[0], by_value);
            double med = samples[REPS / 2];
            printf("%10ld %14.2f %12.2f\n", n, med * 1e6, med > 0 ? (double)n / med / 1e6 : 0.0);
            fflush(stdout);
        }
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
