/* Errors and the other window-object calls (MPI 4.1 §12.8, §9.3, §7.7,
 * §19.3): under MPI_ERRORS_RETURN set with MPI_Win_set_errhandler, each
 * error class checked with MPI_Error_class: a Put, Get or Accumulate past
 * the end of the target window (MPI_ERR_RMA_RANGE); unlock, flush and
 * unlock_all without the lock, complete without start, wait without post
 * (MPI_ERR_RMA_SYNC), request-based calls outside a lock epoch
 * (MPI_ERR_RMA_SYNC), compare-and-swap of a double (MPI_ERR_TYPE); a bad
 * lock type (MPI_ERR_LOCKTYPE); a target rank
 * out of range (MPI_ERR_RANK); after each the window still works (a fence
 * epoch with a Put). MPI_Win_get_errhandler; a user handler from
 * MPI_Win_create_errhandler called with the window and the code, also by
 * MPI_Win_call_errhandler; window attributes with a delete callback
 * (set, get, replace, delete, and MPI_Win_free deleting what is left),
 * MPI_Win_free_keyval (MPI_Win_c2f and MPI_Win_f2c are the Fortran tests':
 * MPICH's standard-ABI library, which these programs also run on, has
 * none). Correct at any number of ranks. */
#include "check.h"

#define N 4

static int calls, last_code;
static MPI_Win last_win;

static void handler(MPI_Win *win, int *code, ...) {
    calls++;
    last_win = *win;
    last_code = *code;
}

static int del_calls, del_key;
static MPI_Win del_win;
static void *del_val, *del_extra;

static int delete_fn(MPI_Win win, int keyval, void *val, void *extra) {
    del_calls++;
    del_win = win;
    del_key = keyval;
    del_val = val;
    del_extra = extra;
    return MPI_SUCCESS;
}

static int error_class(int rc) {
    int cls = -1;
    CHECK(rc != MPI_SUCCESS);
    OK(MPI_Error_class(rc, &cls));
    return cls;
}

static int rank, size, right, left, round_no;
static int buf[N];

/* A correct fence epoch with a Put to the right neighbour. */
static void still_works(MPI_Win win) {
    round_no++;
    int v = rank * 1000 + round_no;
    OK(MPI_Win_fence(0, win));
    OK(MPI_Put(&v, 1, MPI_INT, right, 0, 1, MPI_INT, win));
    OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    CHECK(buf[0] == left * 1000 + round_no);
}

int main(int argc, char **argv) {
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    check_rank = rank;
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    right = (rank + 1) % size;
    left = (rank + size - 1) % size;
    for (int i = 0; i < N; i++) buf[i] = -1;

    MPI_Win win;
    OK(MPI_Win_create(buf, N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    MPI_Errhandler got = MPI_ERRHANDLER_NULL;
    OK(MPI_Win_get_errhandler(win, &got));
    CHECK(got == MPI_ERRORS_RETURN);
    still_works(win);

    /* ---- Past the end of the target window: MPI_ERR_RMA_RANGE. ---- */
    int v2[2] = {rank, rank}, g2[2] = {-7, -7};
    OK(MPI_Win_fence(0, win));
    CHECK(error_class(MPI_Put(v2, 1, MPI_INT, right, N, 1, MPI_INT, win)) == MPI_ERR_RMA_RANGE);
    CHECK(error_class(MPI_Put(v2, 2, MPI_INT, right, N - 1, 2, MPI_INT, win)) == MPI_ERR_RMA_RANGE);
    CHECK(error_class(MPI_Get(g2, 2, MPI_INT, left, N - 1, 2, MPI_INT, win)) == MPI_ERR_RMA_RANGE);
    CHECK(error_class(MPI_Accumulate(v2, 1, MPI_INT, right, N + 10, 1, MPI_INT, MPI_SUM, win)) ==
          MPI_ERR_RMA_RANGE);
    /* The last element is in range. */
    OK(MPI_Put(v2, 1, MPI_INT, right, N - 1, 1, MPI_INT, win));
    OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    CHECK(buf[N - 1] == left && g2[0] == -7 && g2[1] == -7);
    still_works(win);

    /* ---- Synchronisation errors: MPI_ERR_RMA_SYNC. ---- */
    CHECK(error_class(MPI_Win_unlock(right, win)) == MPI_ERR_RMA_SYNC);
    still_works(win);
    CHECK(error_class(MPI_Win_flush(right, win)) == MPI_ERR_RMA_SYNC);
    CHECK(error_class(MPI_Win_unlock_all(win)) == MPI_ERR_RMA_SYNC);
    still_works(win);
    CHECK(error_class(MPI_Win_complete(win)) == MPI_ERR_RMA_SYNC);
    still_works(win);
    CHECK(error_class(MPI_Win_wait(win)) == MPI_ERR_RMA_SYNC);
    still_works(win);

    /* ---- Request-based calls outside a lock epoch: MPI_ERR_RMA_SYNC;
     * compare-and-swap of a floating-point type: MPI_ERR_TYPE. ---- */
    {
        int x = rank, y = 0;
        double d = 1.0, e = 2.0, f = 0.0;
        MPI_Request r = MPI_REQUEST_NULL;
        OK(MPI_Win_fence(0, win));
        CHECK(error_class(MPI_Rput(&x, 1, MPI_INT, right, 0, 1, MPI_INT, win, &r)) == MPI_ERR_RMA_SYNC);
        CHECK(error_class(MPI_Rget(&y, 1, MPI_INT, right, 0, 1, MPI_INT, win, &r)) == MPI_ERR_RMA_SYNC);
        CHECK(r == MPI_REQUEST_NULL);
        CHECK(error_class(MPI_Compare_and_swap(&d, &e, &f, MPI_DOUBLE, right, 0, win)) == MPI_ERR_TYPE);
        OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    }
    still_works(win);

    /* ---- A bad lock type: MPI_ERR_LOCKTYPE (and nothing locked). ---- */
    CHECK(error_class(MPI_Win_lock(12345, right, 0, win)) == MPI_ERR_LOCKTYPE);
    still_works(win);

    /* ---- A target rank out of range: MPI_ERR_RANK. ---- */
    int v = rank;
    OK(MPI_Win_fence(0, win));
    CHECK(error_class(MPI_Put(&v, 1, MPI_INT, size, 0, 1, MPI_INT, win)) == MPI_ERR_RANK);
    CHECK(error_class(MPI_Get(&v, 1, MPI_INT, -5, 0, 1, MPI_INT, win)) == MPI_ERR_RANK);
    OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    CHECK(v == rank);
    CHECK(error_class(MPI_Win_lock(MPI_LOCK_SHARED, size, 0, win)) == MPI_ERR_RANK);
    still_works(win);

    /* ---- A user error handler. ---- */
    MPI_Errhandler eh;
    OK(MPI_Win_create_errhandler(handler, &eh));
    CHECK(eh != MPI_ERRHANDLER_NULL);
    OK(MPI_Win_set_errhandler(win, eh));
    got = MPI_ERRHANDLER_NULL;
    OK(MPI_Win_get_errhandler(win, &got));
    CHECK(got == eh);
    OK(MPI_Errhandler_free(&got));
    CHECK(got == MPI_ERRHANDLER_NULL);
    int rc = MPI_Win_lock(12345, right, 0, win);
    CHECK(calls == 1 && last_win == win && last_code == rc);
    CHECK(error_class(rc) == MPI_ERR_LOCKTYPE);
    rc = MPI_Win_unlock(right, win);
    CHECK(calls == 2 && last_win == win && last_code == rc);
    CHECK(error_class(rc) == MPI_ERR_RMA_SYNC);
    OK(MPI_Win_call_errhandler(win, MPI_ERR_OTHER));
    CHECK(calls == 3 && last_win == win && last_code == MPI_ERR_OTHER);
    still_works(win);
    CHECK(calls == 3);
    OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    OK(MPI_Errhandler_free(&eh));
    CHECK(eh == MPI_ERRHANDLER_NULL);
    /* Back to MPI_ERRORS_RETURN: the handler is not called any more. */
    CHECK(error_class(MPI_Win_unlock(right, win)) == MPI_ERR_RMA_SYNC);
    OK(MPI_Win_call_errhandler(win, MPI_ERR_OTHER));
    CHECK(calls == 3);
    still_works(win);

    /* ---- Attributes with a delete callback. ---- */
    int key = MPI_KEYVAL_INVALID, extra = 17, a = 1, b = 2, *val = NULL, flag = -1;
    OK(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, delete_fn, &key, &extra));
    CHECK(key != MPI_KEYVAL_INVALID);
    OK(MPI_Win_get_attr(win, key, &val, &flag));
    CHECK(flag == 0);
    OK(MPI_Win_set_attr(win, key, &a));
    OK(MPI_Win_get_attr(win, key, &val, &flag));
    CHECK(flag == 1 && val == &a && del_calls == 0);
    /* Replacing a value deletes the old one. */
    OK(MPI_Win_set_attr(win, key, &b));
    CHECK(del_calls == 1 && del_win == win && del_key == key && del_val == &a &&
          del_extra == &extra);
    OK(MPI_Win_get_attr(win, key, &val, &flag));
    CHECK(flag == 1 && val == &b);
    OK(MPI_Win_delete_attr(win, key));
    CHECK(del_calls == 2 && del_win == win && del_val == &b && del_extra == &extra);
    flag = -1;
    OK(MPI_Win_get_attr(win, key, &val, &flag));
    CHECK(flag == 0 && del_calls == 2);
    /* Left on the window: MPI_Win_free deletes it. */
    OK(MPI_Win_set_attr(win, key, &a));
    CHECK(del_calls == 2);
    /* The keyval can be freed while the attribute is still in use. */
    OK(MPI_Win_free_keyval(&key));
    CHECK(key == MPI_KEYVAL_INVALID);

    still_works(win);
    MPI_Win saved = win;
    OK(MPI_Win_free(&win));
    CHECK(win == MPI_WIN_NULL);
    CHECK(del_calls == 3 && del_win == saved && del_val == &a && del_extra == &extra);
    OK(MPI_Finalize());
    return 0;
}
