/* Send modes (MPI 5.0 §3.4, §3.6, §3.7.2): ready (Rsend, Irsend),
 * synchronous nonblocking (Issend, which completes only once the receive
 * matched), buffered (Bsend, Ibsend with Buffer_attach / Buffer_detach /
 * Buffer_flush, MPI_ERR_BUFFER when the attached space is exhausted,
 * MPI_BUFFER_AUTOMATIC), Sendrecv_replace, and MPI_PROC_NULL in all of
 * them, every value checked. Correct at any number of ranks. */
#include <string.h>
#include "check.h"

/* Above every transport's default eager limit (the socket transports'
 * 64 KiB; o2g's 1 MiB on this host, 512 KiB to others): such a buffered
 * send stays in the attached buffer until its receive is posted. */
#define BIG ((2 << 20) / (int)sizeof(int))

static int error_class(int rc) {
    int cls = -1;
    OK(MPI_Error_class(rc, &cls));
    return cls;
}

static void fill(int *v, int n, int base) {
    for (int i = 0; i < n; i++) v[i] = base + i;
}

static int filled(const int *v, int n, int base) {
    for (int i = 0; i < n; i++)
        if (v[i] != base + i) return 0;
    return 1;
}

int main(int argc, char **argv) {
    int rank, size, n, flag;
    MPI_Status st;
    MPI_Request r, rs[4];
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    check_rank = rank;
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int out[4], in[4];
    fill(out, 4, rank * 10);

    /* Rsend and Irsend: the receive is posted before the barrier, the
     * send after it, as ready mode asks. */
    OK(MPI_Irecv(in, 4, MPI_INT, left, 1, MPI_COMM_WORLD, &r));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Rsend(out, 4, MPI_INT, right, 1, MPI_COMM_WORLD));
    OK(MPI_Wait(&r, &st));
    CHECK(r == MPI_REQUEST_NULL && st.MPI_SOURCE == left && st.MPI_TAG == 1);
    OK(MPI_Get_count(&st, MPI_INT, &n));
    CHECK(n == 4 && filled(in, 4, left * 10));
    memset(in, 0, sizeof in);
    OK(MPI_Irecv(in, 4, MPI_INT, left, 2, MPI_COMM_WORLD, &rs[0]));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Irsend(out, 4, MPI_INT, right, 2, MPI_COMM_WORLD, &rs[1]));
    OK(MPI_Waitall(2, rs, MPI_STATUSES_IGNORE));
    CHECK(rs[0] == MPI_REQUEST_NULL && rs[1] == MPI_REQUEST_NULL && filled(in, 4, left * 10));

    /* Issend: no receive is posted before the barrier, so the request must
     * not complete before it; after it, the receive completes it. */
    int sval = rank * 7 + 1, rval = -1;
    OK(MPI_Issend(&sval, 1, MPI_INT, right, 3, MPI_COMM_WORLD, &r));
    for (int i = 0; i < 2000; i++) {
        OK(MPI_Test(&r, &flag, &st));
        CHECK(flag == 0 && r != MPI_REQUEST_NULL);
    }
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Recv(&rval, 1, MPI_INT, left, 3, MPI_COMM_WORLD, &st));
    CHECK(rval == left * 7 + 1 && st.MPI_SOURCE == left && st.MPI_TAG == 3);
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    CHECK(r == MPI_REQUEST_NULL);
    /* Two in flight to one peer with different tags, received in the
     * other order: each completes with its own receive. */
    int a = rank, b = rank + 100, ra = -1, rb = -1;
    OK(MPI_Issend(&a, 1, MPI_INT, right, 4, MPI_COMM_WORLD, &rs[0]));
    OK(MPI_Issend(&b, 1, MPI_INT, right, 5, MPI_COMM_WORLD, &rs[1]));
    OK(MPI_Recv(&rb, 1, MPI_INT, left, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    OK(MPI_Wait(&rs[1], MPI_STATUS_IGNORE));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    for (int i = 0; i < 2000; i++) {
        OK(MPI_Test(&rs[0], &flag, MPI_STATUS_IGNORE));
        CHECK(flag == 0);
    }
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Recv(&ra, 1, MPI_INT, left, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    OK(MPI_Wait(&rs[0], MPI_STATUS_IGNORE));
    CHECK(ra == left && rb == left + 100);

    /* Bsend without a buffer attached. */
    CHECK(error_class(MPI_Bsend(out, 4, MPI_INT, right, 9, MPI_COMM_WORLD)) == MPI_ERR_BUFFER);
    void *addr = (void *)&n;
    int got = -1;
    OK(MPI_Buffer_detach(&addr, &got));
    CHECK(addr == NULL && got == 0);

    /* Room for two big messages. */
    int bsize = 2 * (BIG * (int)sizeof(int) + MPI_BSEND_OVERHEAD);
    char *bbuf = malloc(bsize);
    int *big = malloc(sizeof(int) * BIG), *bigin = malloc(sizeof(int) * BIG);
    OK(MPI_Buffer_attach(bbuf, bsize));
    CHECK(error_class(MPI_Buffer_attach(bbuf, bsize)) == MPI_ERR_BUFFER);
    /* Larger than the whole buffer: never fits. */
    CHECK(error_class(MPI_Bsend(bbuf, bsize, MPI_BYTE, right, 10, MPI_COMM_WORLD)) ==
          MPI_ERR_BUFFER);
    fill(big, BIG, rank * 1000);
    OK(MPI_Bsend(big, BIG, MPI_INT, right, 11, MPI_COMM_WORLD));
    /* The copy is made: changing the source does not change the message. */
    fill(big, BIG, rank * 1000 + 1);
    OK(MPI_Ibsend(big, BIG, MPI_INT, right, 12, MPI_COMM_WORLD, &r));
    fill(big, BIG, -5);
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    CHECK(r == MPI_REQUEST_NULL);
    if (right != rank) {
        /* Both big messages wait for receives posted after the barrier,
         * so the space is exhausted: a third, even a small one, fails. */
        CHECK(error_class(MPI_Bsend(big, BIG, MPI_INT, right, 13, MPI_COMM_WORLD)) ==
              MPI_ERR_BUFFER);
        CHECK(error_class(MPI_Bsend(out, 1, MPI_INT, right, 13, MPI_COMM_WORLD)) ==
              MPI_ERR_BUFFER);
        CHECK(error_class(MPI_Ibsend(out, 1, MPI_INT, right, 13, MPI_COMM_WORLD, &r)) ==
              MPI_ERR_BUFFER);
    }
    /* MPI_PROC_NULL takes no space. */
    OK(MPI_Bsend(big, BIG, MPI_INT, MPI_PROC_NULL, 13, MPI_COMM_WORLD));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Recv(bigin, BIG, MPI_INT, left, 11, MPI_COMM_WORLD, &st));
    OK(MPI_Get_count(&st, MPI_INT, &n));
    CHECK(n == BIG && filled(bigin, BIG, left * 1000));
    OK(MPI_Recv(bigin, BIG, MPI_INT, left, 12, MPI_COMM_WORLD, &st));
    CHECK(st.MPI_SOURCE == left && filled(bigin, BIG, left * 1000 + 1));
    /* Flush, then the space is free again; detach waits for the rest. */
    OK(MPI_Buffer_flush());
    fill(big, BIG, rank * 1000 + 2);
    OK(MPI_Bsend(big, BIG, MPI_INT, right, 14, MPI_COMM_WORLD));
    OK(MPI_Bsend(big, BIG, MPI_INT, right, 15, MPI_COMM_WORLD));
    OK(MPI_Recv(bigin, BIG, MPI_INT, left, 14, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK(filled(bigin, BIG, left * 1000 + 2));
    OK(MPI_Recv(bigin, BIG, MPI_INT, left, 15, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK(filled(bigin, BIG, left * 1000 + 2));
    addr = NULL;
    got = 0;
    OK(MPI_Buffer_detach(&addr, &got));
    CHECK(addr == bbuf && got == bsize);
    CHECK(error_class(MPI_Bsend(out, 1, MPI_INT, right, 16, MPI_COMM_WORLD)) == MPI_ERR_BUFFER);

    /* MPI_BUFFER_AUTOMATIC: any number of buffered sends. */
    OK(MPI_Buffer_attach(MPI_BUFFER_AUTOMATIC, 0));
    for (int k = 0; k < 4; k++) {
        fill(big, BIG, rank * 1000 + 10 + k);
        OK(MPI_Bsend(big, BIG, MPI_INT, right, 17, MPI_COMM_WORLD));
    }
    fill(big, BIG, -1);
    for (int k = 0; k < 4; k++) {
        OK(MPI_Recv(bigin, BIG, MPI_INT, left, 17, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(filled(bigin, BIG, left * 1000 + 10 + k));
    }
    OK(MPI_Buffer_detach(&addr, &got));
    CHECK(addr == MPI_BUFFER_AUTOMATIC && got == 0);

    /* Sendrecv_replace around the ring, then with MPI_PROC_NULL on
     * either side. */
    int buf[5];
    fill(buf, 5, rank * 10);
    OK(MPI_Sendrecv_replace(buf, 5, MPI_INT, right, 20, left, 20, MPI_COMM_WORLD, &st));
    CHECK(filled(buf, 5, left * 10) && st.MPI_SOURCE == left && st.MPI_TAG == 20);
    OK(MPI_Get_count(&st, MPI_INT, &n));
    CHECK(n == 5);
    fill(buf, 5, rank * 10);
    OK(MPI_Sendrecv_replace(buf, 5, MPI_INT, right, 21, MPI_PROC_NULL, 21, MPI_COMM_WORLD, &st));
    CHECK(filled(buf, 5, rank * 10) && st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG);
    OK(MPI_Sendrecv_replace(buf, 5, MPI_INT, MPI_PROC_NULL, 22, left, 21, MPI_COMM_WORLD, &st));
    CHECK(filled(buf, 5, left * 10) && st.MPI_SOURCE == left);
    OK(MPI_Sendrecv_replace(buf, 5, MPI_INT, MPI_PROC_NULL, 22, MPI_PROC_NULL, 22, MPI_COMM_WORLD,
                            &st));
    CHECK(filled(buf, 5, left * 10) && st.MPI_SOURCE == MPI_PROC_NULL);
    OK(MPI_Get_count(&st, MPI_INT, &n));
    CHECK(n == 0);

    /* Isendrecv and Isendrecv_replace around the ring, and with
     * MPI_PROC_NULL on either side. */
    int sr_out[3], sr_in[3] = {-1, -1, -1};
    fill(sr_out, 3, rank * 5);
    OK(MPI_Isendrecv(sr_out, 3, MPI_INT, right, 40, sr_in, 3, MPI_INT, left, 40, MPI_COMM_WORLD,
                     &r));
    OK(MPI_Wait(&r, &st));
    CHECK(r == MPI_REQUEST_NULL && filled(sr_in, 3, left * 5));
    CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 40);
    OK(MPI_Get_count(&st, MPI_INT, &n));
    CHECK(n == 3);
    fill(buf, 5, rank * 10);
    OK(MPI_Isendrecv_replace(buf, 5, MPI_INT, right, 41, left, 41, MPI_COMM_WORLD, &r));
    OK(MPI_Wait(&r, &st));
    CHECK(filled(buf, 5, left * 10) && st.MPI_SOURCE == left && st.MPI_TAG == 41);
    OK(MPI_Isendrecv(sr_out, 3, MPI_INT, right, 42, sr_in, 3, MPI_INT, MPI_PROC_NULL, 42,
                     MPI_COMM_WORLD, &r));
    OK(MPI_Wait(&r, &st));
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG);
    memset(sr_in, 0, sizeof sr_in);
    OK(MPI_Isendrecv(sr_out, 3, MPI_INT, MPI_PROC_NULL, 43, sr_in, 3, MPI_INT, left, 42,
                     MPI_COMM_WORLD, &r));
    OK(MPI_Wait(&r, &st));
    CHECK(filled(sr_in, 3, left * 5) && st.MPI_SOURCE == left && st.MPI_TAG == 42);
    OK(MPI_Isendrecv_replace(buf, 5, MPI_INT, MPI_PROC_NULL, 0, MPI_PROC_NULL, 0, MPI_COMM_WORLD,
                             &r));
    OK(MPI_Test(&r, &flag, &st));
    CHECK(flag == 1 && r == MPI_REQUEST_NULL && st.MPI_SOURCE == MPI_PROC_NULL);
    CHECK(filled(buf, 5, left * 10));

    /* MPI_PROC_NULL with every mode: nothing sent, complete at once. */
    OK(MPI_Rsend(out, 4, MPI_INT, MPI_PROC_NULL, 30, MPI_COMM_WORLD));
    OK(MPI_Bsend(out, 4, MPI_INT, MPI_PROC_NULL, 30, MPI_COMM_WORLD));
    OK(MPI_Issend(out, 4, MPI_INT, MPI_PROC_NULL, 30, MPI_COMM_WORLD, &rs[0]));
    OK(MPI_Irsend(out, 4, MPI_INT, MPI_PROC_NULL, 30, MPI_COMM_WORLD, &rs[1]));
    OK(MPI_Ibsend(out, 4, MPI_INT, MPI_PROC_NULL, 30, MPI_COMM_WORLD, &rs[2]));
    OK(MPI_Testall(3, rs, &flag, MPI_STATUSES_IGNORE));
    CHECK(flag == 1 && rs[0] == MPI_REQUEST_NULL && rs[1] == MPI_REQUEST_NULL &&
          rs[2] == MPI_REQUEST_NULL);
    /* Argument errors. */
    CHECK(error_class(MPI_Rsend(out, 1, MPI_INT, size, 0, MPI_COMM_WORLD)) == MPI_ERR_RANK);
    CHECK(error_class(MPI_Issend(out, 1, MPI_INT, right, -5, MPI_COMM_WORLD, &r)) == MPI_ERR_TAG);
    CHECK(error_class(MPI_Sendrecv_replace(buf, -1, MPI_INT, right, 0, left, 0, MPI_COMM_WORLD,
                                           &st)) == MPI_ERR_COUNT);

    OK(MPI_Barrier(MPI_COMM_WORLD));
    free(bbuf);
    free(big);
    free(bigin);
    OK(MPI_Finalize());
    return 0;
}
