/*
 * Collective latency sweep, in the manner of OSU's osu_allreduce,
 * osu_bcast and osu_alltoall, so that one program times our MPI (built
 * with capi/mpicc) and Open MPI / MPICH the same way:
 *
 *   mpirun -n P collectives LABEL [MAX_BYTES [MIN_BYTES]]
 *
 * For every power of four from MIN_BYTES (default 8) to MAX_BYTES
 * (default 4 MiB): MPI_Allreduce of MAX_BYTES/8 doubles with MPI_SUM,
 * MPI_Bcast of that many bytes from rank 0, and MPI_Alltoall with that
 * many bytes to every rank. Each repetition times enough calls to move
 * about BUDGET bytes per rank (at least 2, at most MAX_ITERS) after a
 * barrier; a call's time is the slowest rank's mean (MPI_MAX). One untimed
 * repetition first, then REPS timed ones; rank 0 prints every one, in
 * microseconds per call:
 *
 *   csv,<collective>,LABEL,<bytes>,<us>;<us>;...
 *
 * The results are checked once per size (a wrong sum or byte fails the
 * run), so a fast wrong answer cannot pass for a fast collective.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REPS 5
#define MAX_ITERS 200
#define BUDGET (8L << 20)

enum { ALLREDUCE, BCAST, ALLTOALL, KINDS };
static const char *NAMES[KINDS] = {"allreduce", "bcast", "alltoall"};

static int rank, size;
static double *dsend, *drecv;
static char *csend, *crecv;

/* One call of collective `kind` on `n` bytes. */
static void call(int kind, long n) {
    switch (kind) {
    case ALLREDUCE:
        MPI_Allreduce(dsend, drecv, (int)(n / 8), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        break;
    case BCAST:
        MPI_Bcast(csend, (int)n, MPI_BYTE, 0, MPI_COMM_WORLD);
        break;
    default:
        MPI_Alltoall(csend, (int)n, MPI_BYTE, crecv, (int)n, MPI_BYTE, MPI_COMM_WORLD);
        break;
    }
}

/* Whether the last call of `kind` on `n` bytes gave the right answer. */
static int right(int kind, long n) {
    long i;
    switch (kind) {
    case ALLREDUCE:
        for (i = 0; i < n / 8; i++)
            if (drecv[i] != (double)size * (size - 1) / 2 + (double)size * (double)(i % 1000)) return 0;
        return 1;
    case BCAST:
        for (i = 0; i < n; i++)
            if (csend[i] != (char)(i % 101)) return 0;
        return 1;
    default:
        for (i = 0; i < n * size; i++)
            if (crecv[i] != (char)(i / n + rank)) return 0;
        return 1;
    }
}

/* Fills the send buffers for `kind` on `n` bytes. */
static void fill(int kind, long n) {
    long i;
    if (kind == ALLREDUCE)
        for (i = 0; i < n / 8; i++) dsend[i] = rank + (double)(i % 1000);
    else if (kind == BCAST)
        for (i = 0; i < n; i++) csend[i] = rank == 0 ? (char)(i % 101) : 0;
    else
        for (i = 0; i < n * size; i++) csend[i] = (char)(rank + i / n);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *label = argc > 1 ? argv[1] : "c";
    long max = argc > 2 ? atol(argv[2]) : 4L << 20;
    long min = argc > 3 ? atol(argv[3]) : 8;
    if (min < 8 || max < min) {
        if (rank == 0) fprintf(stderr, "collectives: needs 8 <= MIN_BYTES <= MAX_BYTES\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    dsend = malloc((size_t)max);
    drecv = malloc((size_t)max);
    csend = malloc((size_t)(max * size));
    crecv = malloc((size_t)(max * size));
    if (!dsend || !drecv || !csend || !crecv) MPI_Abort(MPI_COMM_WORLD, 3);
    for (int kind = 0; kind < KINDS; kind++) {
        for (long n = min; n <= max; n *= 4) {
            fill(kind, n);
            call(kind, n);
            int ok = right(kind, n), all_ok;
            MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
            if (!all_ok) {
                if (rank == 0) fprintf(stderr, "collectives: %s of %ld bytes gave a wrong result\n", NAMES[kind], n);
                MPI_Abort(MPI_COMM_WORLD, 4);
            }
            long iters = BUDGET / n;
            if (iters > MAX_ITERS) iters = MAX_ITERS;
            if (iters < 2) iters = 2;
            double us[REPS];
            for (int rep = 0; rep <= REPS; rep++) {
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = MPI_Wtime();
                for (long i = 0; i < iters; i++) call(kind, n);
                double mine = (MPI_Wtime() - t0) / (double)iters * 1e6, slowest;
                MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
                if (rep > 0) us[rep - 1] = slowest;
            }
            if (rank == 0) {
                printf("csv,%s,%s,%ld,", NAMES[kind], label, n);
                for (int i = 0; i < REPS; i++) printf("%s%.2f", i ? ";" : "", us[i]);
                printf("\n");
                fflush(stdout);
            }
        }
    }
    free(dsend);
    free(drecv);
    free(csend);
    free(crecv);
    MPI_Finalize();
    return 0;
}
