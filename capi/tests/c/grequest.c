/* Generalized requests (MPI 5.0 §13.2, §13.3): Grequest_start,
 * Grequest_complete, the query, free and cancel callbacks called when
 * and as often as the standard says, with Wait, Test, Waitall, Waitany,
 * Waitsome, Request_get_status, Request_free and Cancel; the status
 * setters (Status_set_elements, Status_set_cancelled) and what Get_count
 * and Test_cancelled then read. Every value checked; rank-independent. */
#include <string.h>
#include "check.h"

struct op {
    int id;
    int queries, frees, cancels;
    int last_complete;
    int elements;
    int query_rc;
};

static int query_fn(void *extra, MPI_Status *st) {
    struct op *o = extra;
    o->queries++;
    OK(MPI_Status_set_elements(st, MPI_INT, o->elements));
    OK(MPI_Status_set_cancelled(st, o->cancels > 0));
    st->MPI_SOURCE = MPI_UNDEFINED;
    st->MPI_TAG = o->id;
    return o->query_rc;
}

static int free_fn(void *extra) {
    ((struct op *)extra)->frees++;
    return MPI_SUCCESS;
}

static int cancel_fn(void *extra, int complete) {
    struct op *o = extra;
    o->cancels++;
    o->last_complete = complete;
    return MPI_SUCCESS;
}

static MPI_Request start(struct op *o, int id, int elements) {
    memset(o, 0, sizeof *o);
    o->id = id;
    o->elements = elements;
    o->last_complete = -1;
    MPI_Request r = MPI_REQUEST_NULL;
    OK(MPI_Grequest_start(query_fn, free_fn, cancel_fn, o, &r));
    CHECK(r != MPI_REQUEST_NULL);
    return r;
}

static int error_class(int rc) {
    int cls = -1;
    OK(MPI_Error_class(rc, &cls));
    return cls;
}

int main(int argc, char **argv) {
    int rank, flag, n, index, outcount, idx[3];
    MPI_Status st, sts[3];
    struct op a, b, c;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    check_rank = rank;
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));

    /* Not complete: Test says so and calls nothing. */
    MPI_Request r = start(&a, 11, 5);
    OK(MPI_Test(&r, &flag, &st));
    CHECK(flag == 0 && r != MPI_REQUEST_NULL && a.queries == 0 && a.frees == 0);
    OK(MPI_Request_get_status(r, &flag, &st));
    CHECK(flag == 0 && a.queries == 0);
    OK(MPI_Grequest_complete(r));
    /* get_status queries without freeing. */
    OK(MPI_Request_get_status(r, &flag, &st));
    CHECK(flag == 1 && a.queries == 1 && a.frees == 0 && st.MPI_TAG == 11);
    OK(MPI_Get_count(&st, MPI_INT, &n));
    CHECK(n == 5);
    /* Wait queries and frees, once each. */
    memset(&st, 0, sizeof st);
    OK(MPI_Wait(&r, &st));
    CHECK(r == MPI_REQUEST_NULL && a.queries == 2 && a.frees == 1);
    CHECK(st.MPI_SOURCE == MPI_UNDEFINED && st.MPI_TAG == 11);
    OK(MPI_Get_count(&st, MPI_INT, &n));
    CHECK(n == 5);
    OK(MPI_Get_count(&st, MPI_BYTE, &n));
    CHECK(n == 5 * (int)sizeof(int));
    OK(MPI_Test_cancelled(&st, &flag));
    CHECK(flag == 0);

    /* Cancel tells whether it completed; the query then reports it. */
    r = start(&a, 12, 0);
    OK(MPI_Cancel(&r));
    CHECK(a.cancels == 1 && a.last_complete == 0 && a.queries == 0);
    OK(MPI_Grequest_complete(r));
    OK(MPI_Cancel(&r));
    CHECK(a.cancels == 2 && a.last_complete == 1);
    OK(MPI_Test(&r, &flag, &st));
    CHECK(flag == 1 && r == MPI_REQUEST_NULL && a.queries == 1 && a.frees == 1);
    OK(MPI_Test_cancelled(&st, &flag));
    CHECK(flag == 1);

    /* Freed before completion: free_fn runs at Grequest_complete, and no
     * query. */
    r = start(&a, 13, 1);
    MPI_Request keep = r;
    OK(MPI_Request_free(&r));
    CHECK(r == MPI_REQUEST_NULL && a.frees == 0);
    OK(MPI_Grequest_complete(keep));
    CHECK(a.frees == 1 && a.queries == 0);
    /* Freed after completion: free_fn at once. */
    r = start(&a, 14, 1);
    OK(MPI_Grequest_complete(r));
    OK(MPI_Request_free(&r));
    CHECK(a.frees == 1 && a.queries == 0);

    /* Among others: Waitany, Waitsome and Waitall report each once. */
    MPI_Request rs[3] = {start(&a, 21, 1), start(&b, 22, 2), start(&c, 23, 3)};
    OK(MPI_Testany(3, rs, &index, &flag, &st));
    CHECK(flag == 0 && index == MPI_UNDEFINED);
    OK(MPI_Grequest_complete(rs[1]));
    OK(MPI_Waitany(3, rs, &index, &st));
    CHECK(index == 1 && rs[1] == MPI_REQUEST_NULL && st.MPI_TAG == 22);
    CHECK(b.queries == 1 && b.frees == 1 && a.queries == 0 && c.queries == 0);
    OK(MPI_Grequest_complete(rs[2]));
    OK(MPI_Waitsome(3, rs, &outcount, idx, sts));
    CHECK(outcount == 1 && idx[0] == 2 && sts[0].MPI_TAG == 23 && c.frees == 1);
    OK(MPI_Testall(3, rs, &flag, sts));
    CHECK(flag == 0 && a.queries == 0);
    OK(MPI_Grequest_complete(rs[0]));
    OK(MPI_Waitall(3, rs, sts));
    CHECK(rs[0] == MPI_REQUEST_NULL && sts[0].MPI_TAG == 21 && a.queries == 1 && a.frees == 1);
    CHECK(sts[1].MPI_SOURCE == MPI_ANY_SOURCE && sts[2].MPI_SOURCE == MPI_ANY_SOURCE);
    CHECK(b.queries == 1 && c.queries == 1 && b.frees == 1 && c.frees == 1);

    /* A query function's error is the completing call's. */
    r = start(&a, 31, 0);
    a.query_rc = MPI_ERR_OTHER;
    OK(MPI_Grequest_complete(r));
    CHECK(error_class(MPI_Wait(&r, &st)) == MPI_ERR_OTHER);
    CHECK(r == MPI_REQUEST_NULL && a.frees == 1);
    rs[0] = start(&a, 32, 0);
    rs[1] = start(&b, 33, 0);
    b.query_rc = MPI_ERR_OTHER;
    OK(MPI_Grequest_complete(rs[0]));
    OK(MPI_Grequest_complete(rs[1]));
    CHECK(error_class(MPI_Waitall(2, rs, sts)) == MPI_ERR_IN_STATUS);
    CHECK(sts[0].MPI_ERROR == MPI_SUCCESS && sts[1].MPI_ERROR == MPI_ERR_OTHER);

    /* Completing twice or an unknown request is an error. */
    r = start(&a, 41, 0);
    OK(MPI_Grequest_complete(r));
    CHECK(error_class(MPI_Grequest_complete(r)) == MPI_ERR_REQUEST);
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));

    /* The setters on a plain status. */
    MPI_Status s;
    memset(&s, 0, sizeof s);
    OK(MPI_Status_set_elements(&s, MPI_DOUBLE, 3));
    OK(MPI_Get_count(&s, MPI_DOUBLE, &n));
    CHECK(n == 3);
    OK(MPI_Status_set_cancelled(&s, 1));
    OK(MPI_Test_cancelled(&s, &flag));
    CHECK(flag == 1);
    OK(MPI_Get_count(&s, MPI_DOUBLE, &n));
    CHECK(n == 3);
    OK(MPI_Status_set_cancelled(&s, 0));
    OK(MPI_Test_cancelled(&s, &flag));
    CHECK(flag == 0);
    CHECK(error_class(MPI_Status_set_elements(&s, MPI_INT, -1)) == MPI_ERR_COUNT);

    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Finalize());
    return 0;
}
