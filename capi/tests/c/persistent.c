/* Persistent requests (MPI 5.0 §3.9): Send_init, Ssend_init, Rsend_init,
 * Bsend_init, Recv_init, Start, Startall, inactive and active states
 * (Wait and Test on an inactive request return at once with the empty
 * status, the handle stays), several rounds with new buffer contents,
 * MPI_PROC_NULL, Request_free of inactive and active persistent
 * requests, requests whose datatype and communicator were freed, every
 * value checked. Correct at any number of ranks. */
#include <string.h>
#include "check.h"

#define ROUNDS 4
#define LEN 8

static int error_class(int rc) {
    int cls = -1;
    OK(MPI_Error_class(rc, &cls));
    return cls;
}

int main(int argc, char **argv) {
    int rank, size, flag, n, index, outcount, idx[8];
    MPI_Status st, sts[8];
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    check_rank = rank;
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int right = (rank + 1) % size, left = (rank + size - 1) % size;

    int bsize = 2 * (LEN * (int)sizeof(int) + MPI_BSEND_OVERHEAD);
    char *bbuf = malloc(bsize);
    OK(MPI_Buffer_attach(bbuf, bsize));

    /* Four sends in every mode and four receives, started together. */
    int out[4][LEN], in[4][LEN];
    MPI_Request reqs[8];
    OK(MPI_Send_init(out[0], LEN, MPI_INT, right, 0, MPI_COMM_WORLD, &reqs[0]));
    OK(MPI_Ssend_init(out[1], LEN, MPI_INT, right, 1, MPI_COMM_WORLD, &reqs[1]));
    OK(MPI_Rsend_init(out[2], LEN, MPI_INT, right, 2, MPI_COMM_WORLD, &reqs[2]));
    OK(MPI_Bsend_init(out[3], LEN, MPI_INT, right, 3, MPI_COMM_WORLD, &reqs[3]));
    for (int m = 0; m < 4; m++)
        OK(MPI_Recv_init(in[m], LEN, MPI_INT, left, m, MPI_COMM_WORLD, &reqs[4 + m]));
    for (int i = 0; i < 8; i++) CHECK(reqs[i] != MPI_REQUEST_NULL);

    /* Inactive: completion calls return at once, the handles stay. */
    OK(MPI_Wait(&reqs[0], &st));
    CHECK(reqs[0] != MPI_REQUEST_NULL && st.MPI_SOURCE == MPI_ANY_SOURCE &&
          st.MPI_TAG == MPI_ANY_TAG);
    OK(MPI_Get_count(&st, MPI_INT, &n));
    CHECK(n == 0);
    flag = 0;
    OK(MPI_Test(&reqs[4], &flag, &st));
    CHECK(flag == 1 && reqs[4] != MPI_REQUEST_NULL && st.MPI_SOURCE == MPI_ANY_SOURCE);
    OK(MPI_Waitall(8, reqs, sts));
    for (int i = 0; i < 8; i++) CHECK(reqs[i] != MPI_REQUEST_NULL && sts[i].MPI_TAG == MPI_ANY_TAG);
    OK(MPI_Waitany(8, reqs, &index, &st));
    CHECK(index == MPI_UNDEFINED);
    OK(MPI_Testsome(8, reqs, &outcount, idx, sts));
    CHECK(outcount == MPI_UNDEFINED);
    OK(MPI_Request_get_status(reqs[1], &flag, &st));
    CHECK(flag == 1 && st.MPI_SOURCE == MPI_ANY_SOURCE);

    for (int round = 0; round < ROUNDS; round++) {
        for (int m = 0; m < 4; m++)
            for (int i = 0; i < LEN; i++) {
                out[m][i] = rank * 10000 + round * 100 + m * 10 + i;
                in[m][i] = -1;
            }
        /* The receives first, everywhere, so that ready mode is right. */
        OK(MPI_Startall(4, &reqs[4]));
        /* Started twice: an error, and the request stays active. */
        CHECK(error_class(MPI_Start(&reqs[4])) == MPI_ERR_REQUEST);
        OK(MPI_Barrier(MPI_COMM_WORLD));
        OK(MPI_Start(&reqs[0]));
        OK(MPI_Startall(3, &reqs[1]));
        if (round % 2 == 0) {
            OK(MPI_Waitall(8, reqs, sts));
        } else {
            int done = 0;
            while (!done) OK(MPI_Testall(8, reqs, &done, sts));
        }
        for (int m = 0; m < 4; m++) {
            CHECK(reqs[m] != MPI_REQUEST_NULL && reqs[4 + m] != MPI_REQUEST_NULL);
            CHECK(sts[4 + m].MPI_SOURCE == left && sts[4 + m].MPI_TAG == m);
            OK(MPI_Get_count(&sts[4 + m], MPI_INT, &n));
            CHECK(n == LEN);
            for (int i = 0; i < LEN; i++)
                CHECK(in[m][i] == left * 10000 + round * 100 + m * 10 + i);
        }
        /* Inactive again. */
        OK(MPI_Test(&reqs[5], &flag, &st));
        CHECK(flag == 1 && st.MPI_SOURCE == MPI_ANY_SOURCE && reqs[5] != MPI_REQUEST_NULL);
    }

    /* Ssend_init is synchronous: not complete before the receive. */
    int sv = rank + 1, rv = -1;
    MPI_Request s, r;
    OK(MPI_Ssend_init(&sv, 1, MPI_INT, right, 9, MPI_COMM_WORLD, &s));
    OK(MPI_Recv_init(&rv, 1, MPI_INT, left, 9, MPI_COMM_WORLD, &r));
    OK(MPI_Start(&s));
    for (int i = 0; i < 1000; i++) {
        OK(MPI_Test(&s, &flag, MPI_STATUS_IGNORE));
        CHECK(flag == 0);
    }
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Start(&r));
    OK(MPI_Wait(&r, &st));
    CHECK(rv == left + 1 && st.MPI_SOURCE == left && st.MPI_TAG == 9 && r != MPI_REQUEST_NULL);
    OK(MPI_Wait(&s, MPI_STATUS_IGNORE));
    CHECK(s != MPI_REQUEST_NULL);
    /* Freed while inactive. */
    OK(MPI_Request_free(&s));
    OK(MPI_Request_free(&r));
    CHECK(s == MPI_REQUEST_NULL && r == MPI_REQUEST_NULL);

    /* MPI_PROC_NULL: complete at once, with the empty-source status. */
    OK(MPI_Send_init(&sv, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &s));
    OK(MPI_Recv_init(&rv, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &r));
    rv = 77;
    OK(MPI_Start(&s));
    OK(MPI_Start(&r));
    OK(MPI_Wait(&r, &st));
    CHECK(rv == 77 && st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG);
    OK(MPI_Test(&s, &flag, MPI_STATUS_IGNORE));
    CHECK(flag == 1 && s != MPI_REQUEST_NULL);
    OK(MPI_Request_free(&s));
    OK(MPI_Request_free(&r));

    /* Freed while active: the send still goes out. */
    sv = rank + 50;
    OK(MPI_Send_init(&sv, 1, MPI_INT, right, 10, MPI_COMM_WORLD, &s));
    OK(MPI_Start(&s));
    OK(MPI_Request_free(&s));
    CHECK(s == MPI_REQUEST_NULL);
    OK(MPI_Recv(&rv, 1, MPI_INT, left, 10, MPI_COMM_WORLD, &st));
    CHECK(rv == left + 50);

    /* Argument errors at initialisation; Start of what is not persistent. */
    CHECK(error_class(MPI_Send_init(&sv, 1, MPI_INT, size, 0, MPI_COMM_WORLD, &s)) ==
          MPI_ERR_RANK);
    CHECK(error_class(MPI_Recv_init(&rv, 1, MPI_INT, left, -7, MPI_COMM_WORLD, &r)) ==
          MPI_ERR_TAG);
    CHECK(error_class(MPI_Send_init(&sv, -1, MPI_INT, right, 0, MPI_COMM_WORLD, &s)) ==
          MPI_ERR_COUNT);
    OK(MPI_Irecv(&rv, 1, MPI_INT, left, 11, MPI_COMM_WORLD, &r));
    CHECK(error_class(MPI_Start(&r)) == MPI_ERR_REQUEST);
    OK(MPI_Send(&sv, 1, MPI_INT, right, 11, MPI_COMM_WORLD));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    CHECK(rv == left + 50);
    r = MPI_REQUEST_NULL;
    CHECK(error_class(MPI_Start(&r)) == MPI_ERR_REQUEST);

    /* The datatype and the communicator may be freed while persistent
     * requests use them (§2.5.1): every later start still works. A
     * non-contiguous type, so that both sides are packed and staged. */
    {
        MPI_Comm dup;
        MPI_Datatype every2;
        OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
        OK(MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN));
        OK(MPI_Type_vector(LEN, 1, 2, MPI_INT, &every2));
        OK(MPI_Type_commit(&every2));
        int wout[2 * LEN], win[2 * LEN];
        MPI_Request pr[2];
        OK(MPI_Send_init(wout, 1, every2, right, 12, dup, &pr[0]));
        OK(MPI_Recv_init(win, 1, every2, left, 12, dup, &pr[1]));
        OK(MPI_Type_free(&every2));
        OK(MPI_Comm_free(&dup));
        CHECK(every2 == MPI_DATATYPE_NULL && dup == MPI_COMM_NULL);
        for (int round = 0; round < ROUNDS; round++) {
            for (int i = 0; i < 2 * LEN; i++) {
                wout[i] = rank * 1000 + round * 100 + i;
                win[i] = -1;
            }
            OK(MPI_Start(&pr[1]));
            OK(MPI_Start(&pr[0]));
            OK(MPI_Waitall(2, pr, sts));
            CHECK(pr[0] != MPI_REQUEST_NULL && pr[1] != MPI_REQUEST_NULL);
            CHECK(sts[1].MPI_SOURCE == left && sts[1].MPI_TAG == 12);
            OK(MPI_Get_count(&sts[1], MPI_INT, &n));
            CHECK(n == LEN);
            for (int i = 0; i < LEN; i++) {
                CHECK(win[2 * i] == left * 1000 + round * 100 + 2 * i);
                CHECK(win[2 * i + 1] == -1);
            }
        }
        OK(MPI_Request_free(&pr[0]));
        OK(MPI_Request_free(&pr[1]));
    }

    for (int i = 0; i < 8; i++) OK(MPI_Request_free(&reqs[i]));
    int got;
    void *addr;
    OK(MPI_Buffer_detach(&addr, &got));
    CHECK(addr == bbuf && got == bsize);
    free(bbuf);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Finalize());
    return 0;
}
