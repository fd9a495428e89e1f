/* Buffers of buffered sends attached to a communicator (MPI 5.0 §3.6.1):
 * MPI_Comm_attach_buffer(_c), MPI_Comm_detach_buffer(_c),
 * MPI_Comm_flush_buffer, MPI_Comm_iflush_buffer, the process's
 * MPI_Buffer_flush and MPI_Buffer_iflush, MPI_BUFFER_AUTOMATIC, the
 * communicator's buffer taking precedence over the process's, and
 * MPI_Comm_free flushing and detaching it. Every value checked; correct
 * at any number of ranks. */
#include <stdlib.h>
#include <string.h>
#include "check.h"

/* Above the socket transports' rendezvous threshold (64 KiB): such a
 * buffered send stays in the buffer until its receive is posted. */
#define BIG (100 * 1024 / (int)sizeof(int))
#define ONE (BIG * (int)sizeof(int) + MPI_BSEND_OVERHEAD)

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
    int rank, size, flag, got;
    void *addr;
    MPI_Comm c, c2;
    MPI_Request r, r2, rr[2];
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    check_rank = rank;
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int *big = malloc(sizeof(int) * BIG), *in = malloc(sizeof(int) * BIG);
    int *in2 = malloc(sizeof(int) * BIG);
    char *cbuf = malloc(2 * ONE), *pbuf = malloc(2 * ONE);
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &c));

    /* Nothing attached anywhere: detach gives null and 0, flushes do
     * nothing, a flush request is complete at once. */
    addr = (void *)1;
    got = -1;
    OK(MPI_Comm_detach_buffer(c, &addr, &got));
    CHECK(addr == NULL && got == 0);
    OK(MPI_Comm_flush_buffer(c));
    OK(MPI_Buffer_flush());
    OK(MPI_Comm_iflush_buffer(c, &r));
    flag = 0;
    OK(MPI_Test(&r, &flag, MPI_STATUS_IGNORE));
    CHECK(flag && r == MPI_REQUEST_NULL);
    OK(MPI_Buffer_iflush(&r));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    CHECK(r == MPI_REQUEST_NULL);
    CHECK(error_class(MPI_Bsend(big, 1, MPI_INT, right, 1, c)) == MPI_ERR_BUFFER);

    /* Bad input. */
    CHECK(error_class(MPI_Comm_attach_buffer(MPI_COMM_NULL, cbuf, ONE)) == MPI_ERR_COMM);
    CHECK(error_class(MPI_Comm_attach_buffer(c, cbuf, -1)) == MPI_ERR_BUFFER);
    CHECK(error_class(MPI_Comm_detach_buffer(MPI_COMM_NULL, &addr, &got)) == MPI_ERR_COMM);
    CHECK(error_class(MPI_Comm_flush_buffer(MPI_COMM_NULL)) == MPI_ERR_COMM);
    CHECK(error_class(MPI_Comm_iflush_buffer(MPI_COMM_NULL, &r)) == MPI_ERR_COMM);
    CHECK(error_class(MPI_Comm_iflush_buffer(c, NULL)) == MPI_ERR_ARG);
    CHECK(error_class(MPI_Buffer_iflush(NULL)) == MPI_ERR_ARG);

    /* A buffer on c only: buffered sends on c use it, those on
     * MPI_COMM_WORLD have none; a dup of c does not inherit it. */
    OK(MPI_Comm_attach_buffer(c, cbuf, 2 * ONE));
    CHECK(error_class(MPI_Comm_attach_buffer(c, cbuf, 2 * ONE)) == MPI_ERR_BUFFER);
    CHECK(error_class(MPI_Bsend(big, 1, MPI_INT, right, 1, MPI_COMM_WORLD)) == MPI_ERR_BUFFER);
    OK(MPI_Comm_dup(c, &c2));
    CHECK(error_class(MPI_Bsend(big, 1, MPI_INT, right, 1, c2)) == MPI_ERR_BUFFER);
    OK(MPI_Comm_free(&c2));

    /* Two big messages fill c's buffer; the receives are posted after a
     * barrier, so until then the flush request cannot complete and a
     * third message does not fit. */
    fill(big, BIG, rank * 1000);
    OK(MPI_Bsend(big, BIG, MPI_INT, right, 2, c));
    fill(big, BIG, rank * 1000 + 1);
    OK(MPI_Ibsend(big, BIG, MPI_INT, right, 3, c, &r));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    fill(big, BIG, -7);
    OK(MPI_Comm_iflush_buffer(c, &r));
    CHECK(r != MPI_REQUEST_NULL);
    if (right != rank) {
        flag = 1;
        OK(MPI_Test(&r, &flag, MPI_STATUS_IGNORE));
        CHECK(!flag && r != MPI_REQUEST_NULL);
        CHECK(error_class(MPI_Bsend(big, 1, MPI_INT, right, 4, c)) == MPI_ERR_BUFFER);
    }
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Irecv(in, BIG, MPI_INT, left, 2, c, &rr[0]));
    OK(MPI_Irecv(in2, BIG, MPI_INT, left, 3, c, &rr[1]));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    CHECK(r == MPI_REQUEST_NULL);
    /* The flush request completed: the whole buffer is free again. */
    fill(big, BIG, rank * 1000 + 2);
    OK(MPI_Bsend(big, BIG, MPI_INT, right, 5, c));
    OK(MPI_Bsend(big, BIG, MPI_INT, right, 6, c));
    OK(MPI_Waitall(2, rr, MPI_STATUSES_IGNORE));
    CHECK(filled(in, BIG, left * 1000) && filled(in2, BIG, left * 1000 + 1));

    /* The blocking flush: receives posted first, then it waits for both
     * sends; then the buffer holds two big messages again. */
    OK(MPI_Irecv(in, BIG, MPI_INT, left, 5, c, &rr[0]));
    OK(MPI_Irecv(in2, BIG, MPI_INT, left, 6, c, &rr[1]));
    OK(MPI_Comm_flush_buffer(c));
    OK(MPI_Waitall(2, rr, MPI_STATUSES_IGNORE));
    CHECK(filled(in, BIG, left * 1000 + 2) && filled(in2, BIG, left * 1000 + 2));

    /* Two flush requests at once, and one freed unwaited: detach still
     * waits for everything and hands the buffer back. */
    OK(MPI_Irecv(in, BIG, MPI_INT, left, 7, c, &rr[0]));
    OK(MPI_Irecv(in2, BIG, MPI_INT, left, 8, c, &rr[1]));
    fill(big, BIG, rank * 1000 + 3);
    OK(MPI_Bsend(big, BIG, MPI_INT, right, 7, c));
    OK(MPI_Comm_iflush_buffer(c, &r));
    fill(big, BIG, rank * 1000 + 4);
    OK(MPI_Bsend(big, BIG, MPI_INT, right, 8, c));
    OK(MPI_Comm_iflush_buffer(c, &r2));
    OK(MPI_Request_free(&r2));
    CHECK(r2 == MPI_REQUEST_NULL);
    addr = NULL;
    got = 0;
    OK(MPI_Comm_detach_buffer(c, &addr, &got));
    CHECK(addr == cbuf && got == 2 * ONE);
    /* The flush request was completed by the detach, not yet reported. */
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    CHECK(r == MPI_REQUEST_NULL);
    memset(cbuf, 0, 2 * ONE);
    OK(MPI_Waitall(2, rr, MPI_STATUSES_IGNORE));
    CHECK(filled(in, BIG, left * 1000 + 3) && filled(in2, BIG, left * 1000 + 4));
    CHECK(error_class(MPI_Bsend(big, 1, MPI_INT, right, 9, c)) == MPI_ERR_BUFFER);

    /* The communicator's buffer comes before the process's: a message
     * too big for c's fails even though the process's would hold it;
     * once c's is detached, the process's serves c. */
    OK(MPI_Buffer_attach(pbuf, 2 * ONE));
    OK(MPI_Comm_attach_buffer_c(c, cbuf, (MPI_Count)ONE / 2));
    CHECK(error_class(MPI_Bsend(big, BIG, MPI_INT, right, 10, c)) == MPI_ERR_BUFFER);
    OK(MPI_Bsend(big, 10, MPI_INT, right, 10, c));
    MPI_Count gotc = 0;
    OK(MPI_Comm_detach_buffer_c(c, &addr, &gotc));
    CHECK(addr == cbuf && gotc == ONE / 2);
    OK(MPI_Recv(in, 10, MPI_INT, left, 10, c, MPI_STATUS_IGNORE));
    CHECK(filled(in, 10, left * 1000 + 4));
    fill(big, BIG, rank * 1000 + 5);
    OK(MPI_Irecv(in, BIG, MPI_INT, left, 11, c, &rr[0]));
    OK(MPI_Irecv(in2, BIG, MPI_INT, left, 12, MPI_COMM_WORLD, &rr[1]));
    OK(MPI_Bsend(big, BIG, MPI_INT, right, 11, c));
    OK(MPI_Bsend(big, BIG, MPI_INT, right, 12, MPI_COMM_WORLD));
    OK(MPI_Buffer_iflush(&r));
    OK(MPI_Waitall(2, rr, MPI_STATUSES_IGNORE));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    CHECK(filled(in, BIG, left * 1000 + 5) && filled(in2, BIG, left * 1000 + 5));
    OK(MPI_Buffer_detach(&addr, &got));
    CHECK(addr == pbuf && got == 2 * ONE);

    /* MPI_BUFFER_AUTOMATIC on a communicator: any number of sends. */
    OK(MPI_Comm_attach_buffer(c, MPI_BUFFER_AUTOMATIC, 0));
    for (int k = 0; k < 3; k++) {
        fill(big, BIG, rank * 1000 + 20 + k);
        OK(MPI_Bsend(big, BIG, MPI_INT, right, 20, c));
    }
    OK(MPI_Comm_flush_buffer(c));
    for (int k = 0; k < 3; k++) {
        OK(MPI_Recv(in, BIG, MPI_INT, left, 20, c, MPI_STATUS_IGNORE));
        CHECK(filled(in, BIG, left * 1000 + 20 + k));
    }
    OK(MPI_Comm_detach_buffer(c, &addr, &got));
    CHECK(addr == MPI_BUFFER_AUTOMATIC);

    /* MPI_Comm_free waits for the messages in c's buffer and detaches
     * it: the buffer may be reused at once, the messages arrive intact
     * (the receive, posted first, completes normally after the free). */
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &c2));
    OK(MPI_Comm_attach_buffer(c2, cbuf, 2 * ONE));
    OK(MPI_Irecv(in, BIG, MPI_INT, left, 30, c2, &rr[0]));
    fill(big, BIG, rank * 1000 + 30);
    OK(MPI_Bsend(big, BIG, MPI_INT, right, 30, c2));
    OK(MPI_Comm_iflush_buffer(c2, &r));
    OK(MPI_Comm_free(&c2));
    CHECK(c2 == MPI_COMM_NULL);
    memset(cbuf, 0xee, 2 * ONE);
    OK(MPI_Wait(&rr[0], MPI_STATUS_IGNORE));
    CHECK(filled(in, BIG, left * 1000 + 30));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    /* The buffer is free for another communicator. */
    OK(MPI_Comm_attach_buffer(c, cbuf, 2 * ONE));
    OK(MPI_Comm_detach_buffer(c, &addr, &got));
    CHECK(addr == cbuf && got == 2 * ONE);

    OK(MPI_Comm_free(&c));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    free(big);
    free(in);
    free(in2);
    free(cbuf);
    free(pbuf);
    OK(MPI_Finalize());
    if (rank == 0) printf("comm_buffer: ok\n");
    return 0;
}
