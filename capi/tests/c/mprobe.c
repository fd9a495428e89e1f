/* Matched probe and receive (MPI 5.0 §3.8.2, §3.8.3): Mprobe, Improbe,
 * Mrecv, Imrecv; a probed message is out of matching (a receive or probe
 * after it sees the next one), MPI_MESSAGE_NO_PROC for MPI_PROC_NULL,
 * MPI_MESSAGE_NULL after the receive, truncation, a message above the
 * rendezvous threshold, any source. Every value checked; correct at any
 * number of ranks. */
#include <string.h>
#include "check.h"

#define BIG (1 << 18)

static int error_class(int rc) {
    int cls = -1;
    OK(MPI_Error_class(rc, &cls));
    return cls;
}

int main(int argc, char **argv) {
    int rank, size, flag, n;
    MPI_Status st;
    MPI_Message msg;
    MPI_Request r;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    check_rank = rank;
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int right = (rank + 1) % size, left = (rank + size - 1) % size;

    /* Two messages with one tag: the probed first one is the Mrecv's, a
     * plain receive after the probe takes the second. */
    int one = rank, two[2] = {rank + 1, rank + 2};
    OK(MPI_Send(&one, 1, MPI_INT, right, 1, MPI_COMM_WORLD));
    OK(MPI_Send(two, 2, MPI_INT, right, 1, MPI_COMM_WORLD));
    OK(MPI_Mprobe(left, 1, MPI_COMM_WORLD, &msg, &st));
    CHECK(msg != MPI_MESSAGE_NULL && msg != MPI_MESSAGE_NO_PROC);
    CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 1);
    OK(MPI_Get_count(&st, MPI_INT, &n));
    CHECK(n == 1);
    /* A probe now sees the second message. */
    OK(MPI_Probe(left, 1, MPI_COMM_WORLD, &st));
    OK(MPI_Get_count(&st, MPI_INT, &n));
    CHECK(n == 2);
    int in2[2] = {-1, -1}, in1[2] = {-1, -1};
    OK(MPI_Recv(in2, 2, MPI_INT, MPI_ANY_SOURCE, 1, MPI_COMM_WORLD, &st));
    CHECK(in2[0] == left + 1 && in2[1] == left + 2);
    OK(MPI_Mrecv(in1, 2, MPI_INT, &msg, &st));
    CHECK(msg == MPI_MESSAGE_NULL && in1[0] == left && in1[1] == -1);
    CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 1);
    OK(MPI_Get_count(&st, MPI_INT, &n));
    CHECK(n == 1);
    /* The message is gone: receiving it again is an error. */
    CHECK(error_class(MPI_Mrecv(in1, 2, MPI_INT, &msg, &st)) == MPI_ERR_REQUEST);

    /* Improbe: nothing yet, then the message; Imrecv receives it. */
    OK(MPI_Improbe(left, 2, MPI_COMM_WORLD, &flag, &msg, &st));
    CHECK(flag == 0);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    double d = rank + 0.25, din = -1;
    OK(MPI_Send(&d, 1, MPI_DOUBLE, right, 2, MPI_COMM_WORLD));
    do {
        OK(MPI_Improbe(MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, &flag, &msg, &st));
    } while (!flag);
    CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 2);
    OK(MPI_Iprobe(MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, &flag, &st));
    CHECK(flag == 0);
    OK(MPI_Imrecv(&din, 1, MPI_DOUBLE, &msg, &r));
    CHECK(msg == MPI_MESSAGE_NULL && r != MPI_REQUEST_NULL);
    OK(MPI_Wait(&r, &st));
    CHECK(din == left + 0.25 && st.MPI_SOURCE == left && st.MPI_TAG == 2);

    /* Truncated: the part that fits and MPI_ERR_TRUNCATE. */
    int four[4] = {rank, rank, rank, rank}, small[2] = {-1, -1}, guard = -9;
    OK(MPI_Send(four, 4, MPI_INT, right, 3, MPI_COMM_WORLD));
    OK(MPI_Mprobe(left, MPI_ANY_TAG, MPI_COMM_WORLD, &msg, &st));
    CHECK(st.MPI_TAG == 3);
    CHECK(error_class(MPI_Mrecv(small, 2, MPI_INT, &msg, &st)) == MPI_ERR_TRUNCATE);
    CHECK(small[0] == left && small[1] == left && guard == -9 && msg == MPI_MESSAGE_NULL);

    /* Above the rendezvous threshold. */
    int *big = malloc(sizeof(int) * BIG), *bigin = malloc(sizeof(int) * BIG);
    for (int i = 0; i < BIG; i++) {
        big[i] = rank * 7 + i;
        bigin[i] = -1;
    }
    OK(MPI_Isend(big, BIG, MPI_INT, right, 4, MPI_COMM_WORLD, &r));
    OK(MPI_Mprobe(left, 4, MPI_COMM_WORLD, &msg, &st));
    OK(MPI_Get_count(&st, MPI_INT, &n));
    CHECK(n == BIG);
    MPI_Request r2;
    OK(MPI_Imrecv(bigin, BIG, MPI_INT, &msg, &r2));
    OK(MPI_Wait(&r2, &st));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    for (int i = 0; i < BIG; i++) CHECK(bigin[i] == left * 7 + i);

    /* A synchronous send is matched by the matched probe. */
    int sv = rank + 3, rv = -1;
    OK(MPI_Issend(&sv, 1, MPI_INT, right, 5, MPI_COMM_WORLD, &r));
    OK(MPI_Mprobe(left, 5, MPI_COMM_WORLD, &msg, &st));
    OK(MPI_Mrecv(&rv, 1, MPI_INT, &msg, &st));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    CHECK(rv == left + 3);

    /* MPI_PROC_NULL: MPI_MESSAGE_NO_PROC, received at once. */
    OK(MPI_Mprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &msg, &st));
    CHECK(msg == MPI_MESSAGE_NO_PROC && st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG);
    rv = 42;
    OK(MPI_Mrecv(&rv, 1, MPI_INT, &msg, &st));
    CHECK(msg == MPI_MESSAGE_NULL && rv == 42 && st.MPI_SOURCE == MPI_PROC_NULL);
    OK(MPI_Get_count(&st, MPI_INT, &n));
    CHECK(n == 0);
    flag = 0;
    OK(MPI_Improbe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &flag, &msg, &st));
    CHECK(flag == 1 && msg == MPI_MESSAGE_NO_PROC && st.MPI_SOURCE == MPI_PROC_NULL);
    OK(MPI_Imrecv(&rv, 1, MPI_INT, &msg, &r));
    CHECK(msg == MPI_MESSAGE_NULL);
    OK(MPI_Wait(&r, &st));
    CHECK(rv == 42 && st.MPI_SOURCE == MPI_PROC_NULL);

    /* From any source: one message from every rank, each received once. */
    for (int p = 0; p < size; p++) OK(MPI_Send(&rank, 1, MPI_INT, p, 6, MPI_COMM_WORLD));
    int *seen = calloc(size, sizeof(int));
    for (int k = 0; k < size; k++) {
        OK(MPI_Mprobe(MPI_ANY_SOURCE, 6, MPI_COMM_WORLD, &msg, &st));
        int from = st.MPI_SOURCE;
        CHECK(from >= 0 && from < size && !seen[from]);
        rv = -1;
        OK(MPI_Mrecv(&rv, 1, MPI_INT, &msg, &st));
        CHECK(rv == from && st.MPI_SOURCE == from);
        seen[from] = 1;
    }

    /* Argument errors. */
    CHECK(error_class(MPI_Mprobe(size, 0, MPI_COMM_WORLD, &msg, &st)) == MPI_ERR_RANK);
    CHECK(error_class(MPI_Improbe(left, -9, MPI_COMM_WORLD, &flag, &msg, &st)) == MPI_ERR_TAG);
    msg = MPI_MESSAGE_NULL;
    CHECK(error_class(MPI_Imrecv(&rv, 1, MPI_INT, &msg, &r)) == MPI_ERR_REQUEST);

    OK(MPI_Barrier(MPI_COMM_WORLD));
    free(big);
    free(bigin);
    free(seen);
    OK(MPI_Finalize());
    return 0;
}
