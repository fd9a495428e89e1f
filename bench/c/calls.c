/*
 * A fixed number of calls of one MPI operation, for counting what each
 * call costs (user-space instructions under callgrind, system calls under
 * strace) rather than timing it:
 *
 *   mpirun -n 2 calls OPERATION BYTES CALLS
 *
 * OPERATION is pingpong (rank 0 sends BYTES to rank 1, which sends them
 * back: one call is one round trip), sendrecv (both ranks exchange BYTES
 * with MPI_Sendrecv), allreduce (MPI_SUM over BYTES/8 doubles) or barrier.
 * Run it at two values of CALLS: the difference divided by the difference
 * in calls is the cost of one call, start-up and shutdown cancelling out.
 * The results are checked once at the end. Rank 0 prints
 *
 *   calls OPERATION BYTES CALLS ok
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 4 || size != 2) {
        if (rank == 0) fprintf(stderr, "usage: mpirun -n 2 calls pingpong|sendrecv|allreduce|barrier BYTES CALLS\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *what = argv[1];
    long bytes = atol(argv[2]), calls = atol(argv[3]);
    long n = bytes / 8;
    if (bytes < 8 || bytes % 8 != 0 || calls < 1) {
        if (rank == 0) fprintf(stderr, "calls: BYTES must be a positive multiple of 8 and CALLS positive\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    double *s = malloc(bytes), *r = malloc(bytes);
    if (!s || !r) MPI_Abort(MPI_COMM_WORLD, 3);
    for (long i = 0; i < n; i++) s[i] = (double)(i + rank);
    int peer = 1 - rank;
    int op = strcmp(what, "pingpong") == 0    ? 0
             : strcmp(what, "sendrecv") == 0  ? 1
             : strcmp(what, "allreduce") == 0 ? 2
             : strcmp(what, "barrier") == 0   ? 3
                                              : -1;
    if (op < 0) {
        if (rank == 0) fprintf(stderr, "calls: unknown operation %s\n", what);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (long c = 0; c < calls; c++) {
        switch (op) {
        case 0:
            if (rank == 0) {
                MPI_Send(s, (int)n, MPI_DOUBLE, peer, 0, MPI_COMM_WORLD);
                MPI_Recv(r, (int)n, MPI_DOUBLE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(r, (int)n, MPI_DOUBLE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(s, (int)n, MPI_DOUBLE, peer, 0, MPI_COMM_WORLD);
            }
            break;
        case 1:
            MPI_Sendrecv(s, (int)n, MPI_DOUBLE, peer, 0, r, (int)n, MPI_DOUBLE, peer, 0,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            break;
        case 2:
            MPI_Allreduce(s, r, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            break;
        default:
            MPI_Barrier(MPI_COMM_WORLD);
        }
    }
    /* What the last call should have left in r (barrier leaves nothing). */
    int ok = 1;
    for (long i = 0; op < 3 && i < n; i++) {
        double want = op == 2 ? (double)(2 * i + 1) : op == 0 && rank == 1 ? (double)i : (double)(i + peer);
        if (r[i] != want) ok = 0;
    }
    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (rank == 0) printf("calls %s %ld %ld %s\n", what, bytes, calls, all ? "ok" : "WRONG");
    free(s);
    free(r);
    MPI_Finalize();
    return all ? 0 : 1;
}
