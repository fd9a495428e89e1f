/* Multiple completions and status queries (MPI 5.0 §3.7.3, §3.7.5,
 * §3.7.6): Waitsome, Testsome, Testany, Waitany, Request_get_status and
 * its _any/_all/_some forms, with MPI_REQUEST_NULL, MPI_UNDEFINED
 * outcomes and MPI_ERR_IN_STATUS, every value checked. Correct at any
 * number of ranks. */
#include <string.h>
#include "check.h"

#define N 6

static int error_class(int rc) {
    int cls = -1;
    OK(MPI_Error_class(rc, &cls));
    return cls;
}

int main(int argc, char **argv) {
    int rank, size, flag, outcount, index, n;
    int idx[2 * N];
    MPI_Status st, sts[2 * N];
    MPI_Request reqs[2 * N];
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    check_rank = rank;
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int right = (rank + 1) % size, left = (rank + size - 1) % size;

    /* Only MPI_REQUEST_NULL: nothing is active. */
    for (int i = 0; i < N; i++) reqs[i] = MPI_REQUEST_NULL;
    OK(MPI_Waitsome(N, reqs, &outcount, idx, sts));
    CHECK(outcount == MPI_UNDEFINED);
    OK(MPI_Testsome(N, reqs, &outcount, idx, sts));
    CHECK(outcount == MPI_UNDEFINED);
    flag = 0;
    index = 5;
    OK(MPI_Testany(N, reqs, &index, &flag, &st));
    CHECK(flag == 1 && index == MPI_UNDEFINED && st.MPI_SOURCE == MPI_ANY_SOURCE &&
          st.MPI_TAG == MPI_ANY_TAG);
    OK(MPI_Waitany(N, reqs, &index, &st));
    CHECK(index == MPI_UNDEFINED);
    OK(MPI_Request_get_status(MPI_REQUEST_NULL, &flag, &st));
    CHECK(flag == 1 && st.MPI_SOURCE == MPI_ANY_SOURCE && st.MPI_TAG == MPI_ANY_TAG);
    OK(MPI_Get_count(&st, MPI_INT, &n));
    CHECK(n == 0);
    /* The empty status (§3.7.3) has MPI_ERROR = MPI_SUCCESS. */
    st.MPI_ERROR = MPI_ERR_OTHER;
    OK(MPI_Request_get_status_any(N, reqs, &index, &flag, &st));
    CHECK(flag == 1 && index == MPI_UNDEFINED && st.MPI_SOURCE == MPI_ANY_SOURCE &&
          st.MPI_ERROR == MPI_SUCCESS);
    st.MPI_ERROR = MPI_ERR_OTHER;
    OK(MPI_Wait(&reqs[0], &st));
    CHECK(st.MPI_TAG == MPI_ANY_TAG && st.MPI_ERROR == MPI_SUCCESS);
    OK(MPI_Request_get_status_some(N, reqs, &outcount, idx, sts));
    CHECK(outcount == MPI_UNDEFINED);
    OK(MPI_Request_get_status_all(N, reqs, &flag, sts));
    CHECK(flag == 1 && sts[0].MPI_SOURCE == MPI_ANY_SOURCE);

    /* N receives from the left, posted before the barrier; the sends come
     * after it. Waitsome and Testsome report each exactly once. */
    int in[N], out[N];
    for (int i = 0; i < N; i++) {
        in[i] = -1;
        out[i] = rank * 100 + i;
        OK(MPI_Irecv(&in[i], 1, MPI_INT, left, i, MPI_COMM_WORLD, &reqs[i]));
    }
    /* Nothing was sent yet: nothing completes. */
    OK(MPI_Testsome(N, reqs, &outcount, idx, sts));
    CHECK(outcount == 0);
    OK(MPI_Testany(N, reqs, &index, &flag, &st));
    CHECK(flag == 0 && index == MPI_UNDEFINED);
    OK(MPI_Request_get_status(reqs[0], &flag, &st));
    CHECK(flag == 0);
    OK(MPI_Request_get_status_any(N, reqs, &index, &flag, &st));
    CHECK(flag == 0 && index == MPI_UNDEFINED);
    OK(MPI_Request_get_status_some(N, reqs, &outcount, idx, sts));
    CHECK(outcount == 0);
    OK(MPI_Request_get_status_all(N, reqs, &flag, sts));
    CHECK(flag == 0);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    for (int i = N - 1; i >= 0; i--)
        OK(MPI_Isend(&out[i], 1, MPI_INT, right, i, MPI_COMM_WORLD, &reqs[N + i]));
    int seen[2 * N] = {0}, total = 0, rounds = 0;
    for (;;) {
        if (rounds++ % 2 == 0) {
            OK(MPI_Waitsome(2 * N, reqs, &outcount, idx, sts));
            if (outcount == MPI_UNDEFINED) break;
            CHECK(outcount >= 1);
        } else {
            OK(MPI_Testsome(2 * N, reqs, &outcount, idx, sts));
            if (outcount == MPI_UNDEFINED) break;
            CHECK(outcount >= 0);
        }
        for (int k = 0; k < outcount; k++) {
            int i = idx[k];
            CHECK(i >= 0 && i < 2 * N && !seen[i] && reqs[i] == MPI_REQUEST_NULL);
            seen[i] = 1;
            total++;
            if (i < N) {
                CHECK(sts[k].MPI_SOURCE == left && sts[k].MPI_TAG == i);
                OK(MPI_Get_count(&sts[k], MPI_INT, &n));
                CHECK(n == 1 && in[i] == left * 100 + i);
            }
        }
    }
    CHECK(total == 2 * N);

    /* Testany until one completes; the others stay. */
    for (int i = 0; i < N; i++) {
        in[i] = -1;
        OK(MPI_Irecv(&in[i], 1, MPI_INT, left, 10 + i, MPI_COMM_WORLD, &reqs[i]));
    }
    reqs[N] = MPI_REQUEST_NULL;
    OK(MPI_Send(&out[3], 1, MPI_INT, right, 13, MPI_COMM_WORLD));
    do {
        OK(MPI_Testany(N + 1, reqs, &index, &flag, &st));
    } while (!flag);
    CHECK(index == 3 && reqs[3] == MPI_REQUEST_NULL && in[3] == left * 100 + 3);
    CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 13);
    for (int i = 0; i < N; i++)
        if (i != 3) CHECK(reqs[i] != MPI_REQUEST_NULL && in[i] == -1);

    /* Request_get_status does not free: the request completes, stays, and
     * Wait then reports the same status. */
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Send(&out[0], 1, MPI_INT, right, 10, MPI_COMM_WORLD));
    do {
        OK(MPI_Request_get_status(reqs[0], &flag, &st));
    } while (!flag);
    CHECK(reqs[0] != MPI_REQUEST_NULL && st.MPI_SOURCE == left && st.MPI_TAG == 10);
    CHECK(in[0] == left * 100);
    OK(MPI_Request_get_status_any(N, reqs, &index, &flag, &st));
    CHECK(flag == 1 && index == 0 && st.MPI_TAG == 10 && reqs[0] != MPI_REQUEST_NULL);
    OK(MPI_Request_get_status_some(N, reqs, &outcount, idx, sts));
    CHECK(outcount == 1 && idx[0] == 0 && sts[0].MPI_TAG == 10);
    memset(&st, 0, sizeof st);
    OK(MPI_Wait(&reqs[0], &st));
    CHECK(reqs[0] == MPI_REQUEST_NULL && st.MPI_SOURCE == left && st.MPI_TAG == 10);
    /* The rest: get_status_all waits for all, then Waitany one by one. */
    for (int i = 1; i < N; i++)
        if (i != 3) OK(MPI_Send(&out[i], 1, MPI_INT, right, 10 + i, MPI_COMM_WORLD));
    do {
        OK(MPI_Request_get_status_all(N, reqs, &flag, sts));
    } while (!flag);
    for (int i = 0; i < N; i++) {
        if (i == 0 || i == 3) {
            CHECK(reqs[i] == MPI_REQUEST_NULL && sts[i].MPI_SOURCE == MPI_ANY_SOURCE);
        } else {
            CHECK(reqs[i] != MPI_REQUEST_NULL && sts[i].MPI_TAG == 10 + i);
        }
    }
    for (int k = 0; k < N - 2; k++) {
        OK(MPI_Waitany(N, reqs, &index, &st));
        CHECK(index > 0 && index < N && index != 3 && reqs[index] == MPI_REQUEST_NULL);
        CHECK(st.MPI_TAG == 10 + index && in[index] == left * 100 + index);
    }
    OK(MPI_Waitany(N, reqs, &index, &st));
    CHECK(index == MPI_UNDEFINED);

    /* Errors: a truncated receive among good ones gives MPI_ERR_IN_STATUS
     * and the per-request codes. */
    int two[2] = {rank, rank}, one = -1, ok1 = -1, ok2 = -1;
    OK(MPI_Irecv(&ok1, 1, MPI_INT, left, 20, MPI_COMM_WORLD, &reqs[0]));
    OK(MPI_Irecv(&one, 1, MPI_INT, left, 21, MPI_COMM_WORLD, &reqs[1]));
    OK(MPI_Irecv(&ok2, 1, MPI_INT, left, 22, MPI_COMM_WORLD, &reqs[2]));
    OK(MPI_Send(two, 1, MPI_INT, right, 20, MPI_COMM_WORLD));
    OK(MPI_Send(two, 2, MPI_INT, right, 21, MPI_COMM_WORLD));
    OK(MPI_Send(two, 1, MPI_INT, right, 22, MPI_COMM_WORLD));
    int errs = 0, goods = 0;
    for (;;) {
        for (int k = 0; k < 3; k++) sts[k].MPI_ERROR = -7;
        int rc = MPI_Waitsome(3, reqs, &outcount, idx, sts);
        if (outcount == MPI_UNDEFINED) {
            OK(rc);
            break;
        }
        int bad = 0;
        for (int k = 0; k < outcount; k++) bad |= idx[k] == 1;
        if (bad) {
            CHECK(error_class(rc) == MPI_ERR_IN_STATUS);
            for (int k = 0; k < outcount; k++) {
                CHECK(sts[k].MPI_ERROR == (idx[k] == 1 ? MPI_ERR_TRUNCATE : MPI_SUCCESS));
                if (idx[k] == 1) CHECK(sts[k].MPI_SOURCE == left && sts[k].MPI_TAG == 21);
            }
        } else {
            OK(rc);
            for (int k = 0; k < outcount; k++) CHECK(sts[k].MPI_ERROR == MPI_SUCCESS);
        }
        for (int k = 0; k < outcount; k++) {
            CHECK(reqs[idx[k]] == MPI_REQUEST_NULL);
            if (idx[k] == 1)
                errs++;
            else
                goods++;
        }
    }
    CHECK(errs == 1 && goods == 2 && ok1 == left && ok2 == left && one == left);
    /* The same through Testany: the error is the call's. */
    OK(MPI_Irecv(&one, 1, MPI_INT, left, 23, MPI_COMM_WORLD, &reqs[0]));
    OK(MPI_Send(two, 2, MPI_INT, right, 23, MPI_COMM_WORLD));
    int rc;
    do {
        rc = MPI_Testany(1, reqs, &index, &flag, &st);
    } while (rc == MPI_SUCCESS && !flag);
    CHECK(error_class(rc) == MPI_ERR_TRUNCATE && index == 0 && reqs[0] == MPI_REQUEST_NULL);
    /* And through Request_get_status, which leaves the request for Wait. */
    OK(MPI_Irecv(&one, 1, MPI_INT, left, 24, MPI_COMM_WORLD, &reqs[0]));
    OK(MPI_Send(two, 2, MPI_INT, right, 24, MPI_COMM_WORLD));
    do {
        rc = MPI_Request_get_status(reqs[0], &flag, &st);
    } while (rc == MPI_SUCCESS && !flag);
    CHECK(error_class(rc) == MPI_ERR_TRUNCATE && flag == 1 && reqs[0] != MPI_REQUEST_NULL);
    CHECK(error_class(MPI_Wait(&reqs[0], &st)) == MPI_ERR_TRUNCATE && reqs[0] == MPI_REQUEST_NULL);
    CHECK(st.MPI_TAG == 24);

    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Finalize());
    return 0;
}
