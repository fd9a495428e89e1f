/*
 * Windowed bandwidth between ranks 0 and 1, the C twin of o2g-bandwidth
 * (bench/src/bin/bandwidth.rs), so the same messages run on our MPI and on
 * Open MPI / MPICH:
 *
 *   mpirun -n 2 bandwidth [MAX_BYTES [uni|bi [MIN_BYTES]]]
 *
 * For every power of two from MIN_BYTES (default 1) to MAX_BYTES (default
 * 16 MiB) rank 0
 * starts a window of MPI_Isend, rank 1 a window of MPI_Irecv (each into a
 * buffer of its own); both MPI_Waitall, and rank 1 answers each window
 * with an empty message. With "bi" both ranks send and receive a window.
 * The window is 64 messages, fewer where 64 would pass WINDOW_BYTES; each
 * repetition moves about BUDGET bytes one way. Rank 0 prints one line per
 * size, every repetition's MB/s, for o2g-bandwidth's table:
 *
 *   csv,<direction>,c,<bytes>,<MB/s>;<MB/s>;...
 *
 * and what the timed repetitions cost both ranks together, from
 * getrusage (all threads, progress threads included): CPU microseconds
 * per MB moved, and context switches per message:
 *
 *   cost,<direction>,c,<bytes>,<CPU us per MB>,<switches per message>
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

/* This process's CPU time (user + system) in microseconds, and its
 * context switches (voluntary + involuntary). */
static void usage(double *cpu_us, double *switches) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    *cpu_us = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
              (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
    *switches = (double)(ru.ru_nvcsw + ru.ru_nivcsw);
}

#define REPS 5
#define WINDOW 64
#define WINDOW_BYTES (64L << 20)
#define BUDGET (64L << 20)

int main(int argc, char **argv) {
    int rank, size;
    long max = argc > 1 ? atol(argv[1]) : 16L << 20;
    int bi = argc > 2 && strcmp(argv[2], "bi") == 0;
    long min = argc > 3 ? atol(argv[3]) : 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2 || min < 1 || max < min) {
        if (rank == 0) fprintf(stderr, "bandwidth: needs 2 ranks and 1 <= MIN_BYTES <= MAX_BYTES\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long most = max * WINDOW < WINDOW_BYTES ? max * WINDOW : (max > WINDOW_BYTES ? max : WINDOW_BYTES);
    char *send = calloc((size_t)max, 1), *recv = calloc((size_t)most, 1);
    /* Statuses asked for, not MPI_STATUSES_IGNORE: GCC 12 misreads
     * MPICH's annotation of that argument as a zero-length array. */
    MPI_Request *reqs = calloc(2 * WINDOW, sizeof(MPI_Request));
    MPI_Status *statuses = calloc(2 * WINDOW, sizeof(MPI_Status));
    if (!send || !recv || !reqs || !statuses) MPI_Abort(MPI_COMM_WORLD, 3);
    memset(send, 0x5a, (size_t)max);
    int peer = 1 - rank;
    for (long n = min; n <= max; n *= 2) {
        long window = WINDOW_BYTES / n;
        if (window > WINDOW) window = WINDOW;
        if (window < 1) window = 1;
        long windows = BUDGET / (window * n);
        if (windows > 1000) windows = 1000;
        if (windows < 2) windows = 2;
        double rates[REPS], cpu0 = 0, sw0 = 0;
        for (int rep = 0; rep <= REPS; rep++) {
            if (rep == 1) usage(&cpu0, &sw0);
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (long w = 0; w < windows; w++) {
                int k = 0;
                if (rank == 1 || bi)
                    for (long i = 0; i < window; i++)
                        MPI_Irecv(recv + i * n, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &reqs[k++]);
                if (rank == 0 || bi)
                    for (long i = 0; i < window; i++)
                        MPI_Isend(send, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &reqs[k++]);
                MPI_Waitall(k, reqs, statuses);
                if (rank == 0)
                    MPI_Recv(NULL, 0, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                else
                    MPI_Send(NULL, 0, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
            }
            double secs = MPI_Wtime() - t0;
            if (rep > 0) rates[rep - 1] = (double)(windows * window * n) * (bi ? 2 : 1) / secs / 1e6;
        }
        double mine[2], both[2];
        usage(&mine[0], &mine[1]);
        mine[0] -= cpu0;
        mine[1] -= sw0;
        MPI_Reduce(mine, both, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            const char *dir = bi ? "bidirectional" : "unidirectional";
            printf("csv,%s,c,%ld,", dir, n);
            for (int i = 0; i < REPS; i++) printf("%s%.1f", i ? ";" : "", rates[i]);
            printf("\n");
            double msgs = (double)REPS * (double)(windows * window) * (bi ? 2 : 1);
            printf("cost,%s,c,%ld,%.1f,%.3f\n", dir, n, both[0] / (msgs * (double)n / 1e6), both[1] / msgs);
            fflush(stdout);
        }
    }
    free(send);
    free(recv);
    free(reqs);
    free(statuses);
    MPI_Finalize();
    return 0;
}
