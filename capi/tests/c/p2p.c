/* Point-to-point (MPI 5.0 chapter 3): blocking, synchronous, combined and
 * nonblocking transfers, every completion call, probe, counts, cancel,
 * wildcards, MPI_PROC_NULL and truncation, all checked. */
#include <string.h>
#include "check.h"

int main(int argc, char **argv) {
    int rank, size, flag, n;
    MPI_Status st;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    check_rank = rank;
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    int right = (rank + 1) % size, left = (rank + size - 1) % size;

    /* Send/Recv and Ssend/Recv between pairs (0,1), (2,3), ... */
    int partner = rank % 2 == 0 ? rank + 1 : rank - 1;
    if (partner < size) {
        int out[3] = {rank, rank * 10, rank * 100}, in[3] = {0, 0, 0};
        for (int mode = 0; mode < 2; mode++) {
            int (*send)(const void *, int, MPI_Datatype, int, int, MPI_Comm) =
                mode == 0 ? MPI_Send : MPI_Ssend;
            if (rank % 2 == 0) {
                OK(send(out, 3, MPI_INT, partner, 7 + mode, MPI_COMM_WORLD));
                OK(MPI_Recv(in, 3, MPI_INT, partner, 7 + mode, MPI_COMM_WORLD, &st));
            } else {
                /* Wildcards, one at a time: other ranks may already send to
                 * this one with other tags. */
                if (mode == 0)
                    OK(MPI_Recv(in, 3, MPI_INT, MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &st));
                else
                    OK(MPI_Recv(in, 3, MPI_INT, partner, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
                OK(send(out, 3, MPI_INT, partner, 7 + mode, MPI_COMM_WORLD));
            }
            CHECK(st.MPI_SOURCE == partner && st.MPI_TAG == 7 + mode);
            OK(MPI_Get_count(&st, MPI_INT, &n));
            CHECK(n == 3);
            CHECK(in[0] == partner && in[1] == partner * 10 && in[2] == partner * 100);
        }
    }

    /* Sendrecv around the ring. */
    double dout = rank + 0.5, din = -1;
    OK(MPI_Sendrecv(&dout, 1, MPI_DOUBLE, right, 3, &din, 1, MPI_DOUBLE, left, 3,
                    MPI_COMM_WORLD, &st));
    CHECK(din == left + 0.5 && st.MPI_SOURCE == left && st.MPI_TAG == 3);

    /* MPI_PROC_NULL: no-ops with the empty-source status. */
    OK(MPI_Send(&rank, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD));
    n = 42;
    OK(MPI_Recv(&n, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st));
    CHECK(n == 42 && st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG);
    OK(MPI_Get_count(&st, MPI_INT, &n));
    CHECK(n == 0);

    /* Isend/Irecv with every other rank, Waitall with statuses. */
    int *sbuf = malloc(sizeof(int) * size), *rbuf = malloc(sizeof(int) * size);
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * 2 * size);
    MPI_Status *sts = malloc(sizeof(MPI_Status) * 2 * size);
    for (int i = 0; i < size; i++) {
        sbuf[i] = rank * 1000 + i;
        rbuf[i] = -1;
        OK(MPI_Irecv(&rbuf[i], 1, MPI_INT, i, 11, MPI_COMM_WORLD, &reqs[i]));
    }
    for (int i = 0; i < size; i++)
        OK(MPI_Isend(&sbuf[i], 1, MPI_INT, i, 11, MPI_COMM_WORLD, &reqs[size + i]));
    OK(MPI_Waitall(2 * size, reqs, sts));
    for (int i = 0; i < size; i++) {
        CHECK(rbuf[i] == i * 1000 + rank);
        CHECK(sts[i].MPI_SOURCE == i && sts[i].MPI_TAG == 11 && sts[i].MPI_ERROR == MPI_SUCCESS);
        CHECK(reqs[i] == MPI_REQUEST_NULL && reqs[size + i] == MPI_REQUEST_NULL);
    }

    /* Waitany until MPI_UNDEFINED, STATUSES_IGNORE on the sends. */
    for (int i = 0; i < size; i++) {
        rbuf[i] = -1;
        OK(MPI_Irecv(&rbuf[i], 1, MPI_INT, i, 12, MPI_COMM_WORLD, &reqs[i]));
    }
    for (int i = 0; i < size; i++)
        OK(MPI_Isend(&sbuf[i], 1, MPI_INT, i, 12, MPI_COMM_WORLD, &reqs[size + i]));
    int seen = 0, idx;
    for (;;) {
        OK(MPI_Waitany(size, reqs, &idx, &st));
        if (idx == MPI_UNDEFINED) break;
        CHECK(idx >= 0 && idx < size && st.MPI_SOURCE == idx && rbuf[idx] == idx * 1000 + rank);
        CHECK(reqs[idx] == MPI_REQUEST_NULL);
        seen++;
    }
    CHECK(seen == size);
    OK(MPI_Waitall(size, reqs + size, MPI_STATUSES_IGNORE));

    /* Test and Testall polling loops. */
    int tin = -1, tout = rank;
    MPI_Request r2[2];
    OK(MPI_Irecv(&tin, 1, MPI_INT, left, 13, MPI_COMM_WORLD, &r2[0]));
    OK(MPI_Isend(&tout, 1, MPI_INT, right, 13, MPI_COMM_WORLD, &r2[1]));
    flag = 0;
    while (!flag) OK(MPI_Test(&r2[0], &flag, &st));
    CHECK(tin == left && st.MPI_SOURCE == left && r2[0] == MPI_REQUEST_NULL);
    OK(MPI_Wait(&r2[1], MPI_STATUS_IGNORE));
    OK(MPI_Wait(&r2[1], &st)); /* MPI_REQUEST_NULL: empty status */
    CHECK(st.MPI_SOURCE == MPI_ANY_SOURCE && st.MPI_TAG == MPI_ANY_TAG);
    tin = -1;
    OK(MPI_Irecv(&tin, 1, MPI_INT, left, 14, MPI_COMM_WORLD, &r2[0]));
    OK(MPI_Isend(&tout, 1, MPI_INT, right, 14, MPI_COMM_WORLD, &r2[1]));
    flag = 0;
    while (!flag) OK(MPI_Testall(2, r2, &flag, sts));
    CHECK(tin == left && sts[0].MPI_SOURCE == left && sts[0].MPI_TAG == 14);
    CHECK(r2[0] == MPI_REQUEST_NULL && r2[1] == MPI_REQUEST_NULL);

    /* Probe, Iprobe and Get_count: 3 ints are 12 bytes, not whole doubles. */
    int three[3] = {1, 2, 3};
    MPI_Request sr;
    OK(MPI_Isend(three, 3, MPI_INT, right, 15, MPI_COMM_WORLD, &sr));
    OK(MPI_Probe(MPI_ANY_SOURCE, 15, MPI_COMM_WORLD, &st));
    CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 15);
    OK(MPI_Get_count(&st, MPI_INT, &n));
    CHECK(n == 3);
    OK(MPI_Get_count(&st, MPI_DOUBLE, &n));
    CHECK(n == MPI_UNDEFINED);
    flag = 0;
    while (!flag) OK(MPI_Iprobe(left, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st));
    CHECK(st.MPI_TAG == 15);
    int got[3] = {0, 0, 0};
    OK(MPI_Recv(got, 3, MPI_INT, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK(got[2] == 3);
    OK(MPI_Wait(&sr, MPI_STATUS_IGNORE));
    OK(MPI_Iprobe(MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
    CHECK(flag == 0);

    /* Cancel a receive nobody matches. */
    MPI_Request cr;
    OK(MPI_Irecv(got, 1, MPI_INT, MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &cr));
    OK(MPI_Cancel(&cr));
    OK(MPI_Wait(&cr, &st));
    OK(MPI_Test_cancelled(&st, &flag));
    CHECK(flag == 1);

    /* Request_free on a send: the data still arrive. */
    OK(MPI_Isend(&tout, 1, MPI_INT, right, 16, MPI_COMM_WORLD, &sr));
    OK(MPI_Request_free(&sr));
    CHECK(sr == MPI_REQUEST_NULL);
    OK(MPI_Recv(&tin, 1, MPI_INT, left, 16, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK(tin == left);

    /* Truncation is MPI_ERR_TRUNCATE under MPI_ERRORS_RETURN. */
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int four[4] = {9, 9, 9, 9}, two[2] = {0, 0};
    OK(MPI_Isend(four, 4, MPI_INT, right, 17, MPI_COMM_WORLD, &sr));
    int rc = MPI_Recv(two, 2, MPI_INT, left, 17, MPI_COMM_WORLD, &st);
    CHECK(rc == MPI_ERR_TRUNCATE);
    CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 17);
    OK(MPI_Wait(&sr, MPI_STATUS_IGNORE));

    /* Messages on a dup'd communicator do not match the original's. */
    MPI_Comm dup;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    int a = rank, b = -1, c = -1;
    OK(MPI_Isend(&a, 1, MPI_INT, right, 5, dup, &sr));
    /* Left sent on dup before this, over the same connection: once this
     * arrives, so has that. */
    OK(MPI_Sendrecv(&a, 1, MPI_INT, right, 6, &c, 1, MPI_INT, left, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    OK(MPI_Iprobe(left, 5, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
    CHECK(flag == 0);
    OK(MPI_Iprobe(left, 5, dup, &flag, MPI_STATUS_IGNORE));
    CHECK(flag == 1);
    OK(MPI_Recv(&b, 1, MPI_INT, left, 5, dup, MPI_STATUS_IGNORE));
    CHECK(b == left && c == left);
    OK(MPI_Wait(&sr, MPI_STATUS_IGNORE));
    OK(MPI_Comm_free(&dup));
    CHECK(dup == MPI_COMM_NULL);

    free(sbuf);
    free(rbuf);
    free(reqs);
    free(sts);
    OK(MPI_Finalize());
    if (rank == 0) printf("p2p: ok on %d ranks\n", size);
    return 0;
}
