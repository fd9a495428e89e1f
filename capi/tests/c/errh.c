/* Error handlers and error classes made by the user (MPI 5.0 §9.3,
 * §9.5), and the small environment calls (Is_thread_main, Pcontrol,
 * Alloc_mem / Free_mem): every call of a handler, every class, code and
 * string checked. */
#include <stdint.h>
#include <string.h>
#include "check.h"

static int calls, last_code;
static MPI_Comm last_comm;

static void handler(MPI_Comm *comm, int *code, ...) {
    calls++;
    last_comm = *comm;
    last_code = *code;
}

int main(int argc, char **argv) {
    int rank, size, cls, len, flag, *p;
    char msg[MPI_MAX_ERROR_STRING];
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    check_rank = rank;

    /* A user handler on a duplicate of the world. */
    MPI_Errhandler eh, got;
    MPI_Comm c, d;
    OK(MPI_Comm_create_errhandler(handler, &eh));
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    OK(MPI_Comm_set_errhandler(c, eh));
    OK(MPI_Comm_get_errhandler(c, &got));
    CHECK(got == eh);
    OK(MPI_Errhandler_free(&got));
    CHECK(got == MPI_ERRHANDLER_NULL);

    int rc = MPI_Send(&rank, 1, MPI_INT, size, 0, c); /* invalid rank */
    CHECK(calls == 1 && last_comm == c && last_code == rc);
    OK(MPI_Error_class(rc, &cls));
    CHECK(cls == MPI_ERR_RANK);

    /* Inherited by dup; called with the new communicator. */
    OK(MPI_Comm_dup(c, &d));
    rc = MPI_Recv(&rank, 1, MPI_INT, 0, -5, d, MPI_STATUS_IGNORE); /* invalid tag */
    CHECK(calls == 2 && last_comm == d && last_code == rc);
    OK(MPI_Error_class(rc, &cls));
    CHECK(cls == MPI_ERR_TAG);

    /* Comm_call_errhandler. */
    OK(MPI_Comm_call_errhandler(c, MPI_ERR_OTHER));
    CHECK(calls == 3 && last_comm == c && last_code == MPI_ERR_OTHER);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    OK(MPI_Comm_call_errhandler(MPI_COMM_WORLD, MPI_ERR_OTHER));
    CHECK(calls == 3);

    /* Freed while in use: still called; the handle itself is gone. */
    OK(MPI_Errhandler_free(&eh));
    CHECK(eh == MPI_ERRHANDLER_NULL);
    rc = MPI_Send(&rank, 1, MPI_INT, -7, 0, d);
    CHECK(calls == 4 && last_comm == d && last_code == rc);
    OK(MPI_Comm_get_errhandler(d, &got));
    rc = MPI_Comm_set_errhandler(MPI_COMM_WORLD, got);
    OK(rc);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    OK(MPI_Errhandler_free(&got));
    rc = MPI_Comm_set_errhandler(MPI_COMM_WORLD, (MPI_Errhandler)(intptr_t)0x7ff0);
    OK(MPI_Error_class(rc, &cls));
    CHECK(cls == MPI_ERR_ERRHANDLER);
    OK(MPI_Comm_free(&d));
    OK(MPI_Comm_free(&c));

    /* Added classes, codes and strings. */
    int c1, c2, e1, e2, e3, *last;
    OK(MPI_Add_error_class(&c1));
    OK(MPI_Add_error_class(&c2));
    CHECK(c1 > MPI_ERR_LASTCODE && c2 > c1);
    OK(MPI_Add_error_code(c1, &e1));
    OK(MPI_Add_error_code(c1, &e2));
    OK(MPI_Add_error_code(MPI_ERR_ARG, &e3));
    CHECK(e1 > c2 && e2 > e1 && e3 > e2);
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &last, &flag));
    CHECK(flag && *last == e3);
    OK(MPI_Error_class(e1, &cls));
    CHECK(cls == c1);
    OK(MPI_Error_class(e3, &cls));
    CHECK(cls == MPI_ERR_ARG);
    OK(MPI_Error_class(c2, &cls));
    CHECK(cls == c2);
    OK(MPI_Error_string(e2, msg, &len));
    CHECK(len == 0 && msg[0] == 0);
    OK(MPI_Add_error_string(c1, "my class"));
    OK(MPI_Add_error_string(e2, "my code"));
    OK(MPI_Error_string(c1, msg, &len));
    CHECK(strcmp(msg, "my class") == 0 && len == 8);
    OK(MPI_Error_string(e2, msg, &len));
    CHECK(strcmp(msg, "my code") == 0 && len == 7);
    OK(MPI_Add_error_string(e2, "changed"));
    OK(MPI_Error_string(e2, msg, &len));
    CHECK(strcmp(msg, "changed") == 0);
    CHECK(MPI_Add_error_string(MPI_ERR_ARG, "no") != MPI_SUCCESS);
    CHECK(MPI_Add_error_code(c2 + 1000, &e1) != MPI_SUCCESS);
    /* Removal: strings first, then codes, then their class. */
    CHECK(MPI_Remove_error_class(c1) != MPI_SUCCESS);
    CHECK(MPI_Remove_error_code(e2) != MPI_SUCCESS);
    OK(MPI_Remove_error_string(e2));
    CHECK(MPI_Remove_error_string(e2) != MPI_SUCCESS);
    OK(MPI_Error_string(e2, msg, &len));
    CHECK(len == 0);
    OK(MPI_Remove_error_code(e1));
    OK(MPI_Remove_error_code(e2));
    CHECK(MPI_Remove_error_code(e2) != MPI_SUCCESS);
    CHECK(MPI_Remove_error_class(c1) != MPI_SUCCESS);
    OK(MPI_Remove_error_string(c1));
    OK(MPI_Remove_error_class(c1));
    CHECK(MPI_Remove_error_class(c1) != MPI_SUCCESS);
    OK(MPI_Remove_error_class(c2));
    OK(MPI_Remove_error_code(e3));

    /* The user handler gets an added code from Comm_call_errhandler. */
    OK(MPI_Comm_create_errhandler(handler, &eh));
    OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, eh));
    OK(MPI_Add_error_class(&c1));
    OK(MPI_Comm_call_errhandler(MPI_COMM_SELF, c1));
    CHECK(calls == 5 && last_comm == MPI_COMM_SELF && last_code == c1);
    OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL));
    OK(MPI_Errhandler_free(&eh));

    /* Environment odds and ends. */
    OK(MPI_Is_thread_main(&flag));
    CHECK(flag == 1);
    CHECK(MPI_Pcontrol(1) == MPI_SUCCESS);
    CHECK(MPI_Pcontrol(0, "ignored", 3) == MPI_SUCCESS);
    OK(MPI_Alloc_mem(1000, MPI_INFO_NULL, &p));
    CHECK(p != NULL);
    for (int i = 0; i < 250; i++) p[i] = i * rank;
    for (int i = 0; i < 250; i++) CHECK(p[i] == i * rank);
    {
        int *q;
        OK(MPI_Alloc_mem(0, MPI_INFO_NULL, &q));
        CHECK(q != NULL && q != p);
        OK(MPI_Free_mem(q));
    }
    OK(MPI_Free_mem(p));
    CHECK(MPI_Alloc_mem(-1, MPI_INFO_NULL, &p) != MPI_SUCCESS);

    OK(MPI_Finalize());
    return 0;
}
