/* Environment, datatypes, error classes and error handling (MPI 5.0
 * chapters 5, 9, 11): every value is checked, bad input must come back as
 * the right error class under MPI_ERRORS_RETURN. */
#include <complex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <wchar.h>
#include "check.h"

static void size_is(MPI_Datatype t, int want) {
    int s = -1;
    OK(MPI_Type_size(t, &s));
    CHECK(s == want);
}

static void noncommutative(void *a, void *b, int *n, MPI_Datatype *t) {
    (void)a; (void)b; (void)n; (void)t;
}

int main(int argc, char **argv) {
    int flag = -1, provided = -1, rank, size, v, sv, len;
    OK(MPI_Initialized(&flag));
    CHECK(flag == 0);
    OK(MPI_Finalized(&flag));
    CHECK(flag == 0);
    OK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    CHECK(provided == MPI_THREAD_MULTIPLE);
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    check_rank = rank;
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size >= 1 && rank >= 0 && rank < size);
    OK(MPI_Initialized(&flag));
    CHECK(flag == 1);
    OK(MPI_Query_thread(&provided));
    CHECK(provided == MPI_THREAD_MULTIPLE);

    OK(MPI_Get_version(&v, &sv));
    CHECK(v == 5 && sv == 0 && v == MPI_VERSION && sv == MPI_SUBVERSION);
    OK(MPI_Abi_get_version(&v, &sv));
    CHECK(v == 1 && sv == 0);
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    OK(MPI_Get_library_version(lib, &len));
    CHECK(len > 0 && (int)strlen(lib) == len && strstr(lib, "o2g") != NULL);
    char host[MPI_MAX_PROCESSOR_NAME];
    OK(MPI_Get_processor_name(host, &len));
    CHECK(len > 0 && (int)strlen(host) == len);

    double t0 = MPI_Wtime(), tick = MPI_Wtick();
    CHECK(tick > 0 && tick < 1e-3);
    double t1 = MPI_Wtime();
    CHECK(t1 >= t0);

    /* Error classes and strings. */
    char msg[MPI_MAX_ERROR_STRING];
    int classes[] = {MPI_SUCCESS, MPI_ERR_BUFFER, MPI_ERR_TRUNCATE, MPI_ERR_RANK, MPI_ERR_OTHER};
    for (unsigned i = 0; i < sizeof classes / sizeof *classes; i++) {
        int c = -1;
        OK(MPI_Error_class(classes[i], &c));
        CHECK(c == classes[i]);
        OK(MPI_Error_string(classes[i], msg, &len));
        CHECK(len > 0 && (int)strlen(msg) == len);
    }
    CHECK(MPI_ERR_TRUNCATE == 15 && MPI_ERR_UNSUPPORTED_OPERATION == 55 && MPI_ERR_ABI == 62);

    /* Predefined datatypes: the C types' sizes. */
    size_is(MPI_CHAR, 1);
    size_is(MPI_SIGNED_CHAR, 1);
    size_is(MPI_UNSIGNED_CHAR, 1);
    size_is(MPI_BYTE, 1);
    size_is(MPI_PACKED, 1);
    size_is(MPI_SHORT, sizeof(short));
    size_is(MPI_UNSIGNED_SHORT, sizeof(unsigned short));
    size_is(MPI_INT, sizeof(int));
    size_is(MPI_UNSIGNED, sizeof(unsigned));
    size_is(MPI_LONG, sizeof(long));
    size_is(MPI_UNSIGNED_LONG, sizeof(unsigned long));
    size_is(MPI_LONG_LONG, sizeof(long long));
    size_is(MPI_LONG_LONG_INT, sizeof(long long));
    size_is(MPI_UNSIGNED_LONG_LONG, sizeof(unsigned long long));
    size_is(MPI_FLOAT, sizeof(float));
    size_is(MPI_DOUBLE, sizeof(double));
    size_is(MPI_LONG_DOUBLE, sizeof(long double));
    size_is(MPI_C_BOOL, sizeof(bool));
    size_is(MPI_WCHAR, sizeof(wchar_t));
    size_is(MPI_INT8_T, 1);
    size_is(MPI_UINT8_T, 1);
    size_is(MPI_INT16_T, 2);
    size_is(MPI_UINT16_T, 2);
    size_is(MPI_INT32_T, 4);
    size_is(MPI_UINT32_T, 4);
    size_is(MPI_INT64_T, 8);
    size_is(MPI_UINT64_T, 8);
    size_is(MPI_AINT, sizeof(MPI_Aint));
    size_is(MPI_COUNT, sizeof(MPI_Count));
    size_is(MPI_OFFSET, sizeof(MPI_Offset));
    size_is(MPI_C_FLOAT_COMPLEX, sizeof(float _Complex));
    size_is(MPI_C_DOUBLE_COMPLEX, sizeof(double _Complex));
    size_is(MPI_2INT, 2 * sizeof(int));
    size_is(MPI_DOUBLE_INT, sizeof(double) + sizeof(int));
    MPI_Aint lb = -1, extent = -1;
    struct di { double d; int i; };
    OK(MPI_Type_get_extent(MPI_DOUBLE_INT, &lb, &extent));
    CHECK(lb == 0 && extent == (MPI_Aint)sizeof(struct di));

    /* Error handlers. */
    MPI_Errhandler eh;
    OK(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh));
    CHECK(eh == MPI_ERRORS_ARE_FATAL);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ABORT));
    OK(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh));
    CHECK(eh == MPI_ERRORS_ABORT);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    OK(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh));
    CHECK(eh == MPI_ERRORS_RETURN);
    OK(MPI_Errhandler_free(&eh));
    CHECK(eh == MPI_ERRHANDLER_NULL);

    /* Bad input: the right class, nothing else. */
    CHECK(MPI_Init(&argc, &argv) == MPI_ERR_OTHER); /* only once */
    int x = 1, y = 0;
    CHECK(MPI_Send(&x, 1, MPI_INT, size, 0, MPI_COMM_WORLD) == MPI_ERR_RANK);
    CHECK(MPI_Send(&x, 1, MPI_INT, -7, 0, MPI_COMM_WORLD) == MPI_ERR_RANK);
    CHECK(MPI_Send(&x, 1, MPI_INT, 0, -5, MPI_COMM_WORLD) == MPI_ERR_TAG);
    CHECK(MPI_Recv(&x, 1, MPI_INT, 0, -5, MPI_COMM_WORLD, MPI_STATUS_IGNORE) == MPI_ERR_TAG);
    CHECK(MPI_Send(&x, -1, MPI_INT, 0, 0, MPI_COMM_WORLD) == MPI_ERR_COUNT);
    CHECK(MPI_Send(&x, 1, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD) == MPI_ERR_TYPE);
    CHECK(MPI_Send(NULL, 1, MPI_INT, 0, 0, MPI_COMM_WORLD) == MPI_ERR_BUFFER);
    CHECK(MPI_Send(&x, 1, MPI_INT, 0, 0, MPI_COMM_NULL) == MPI_ERR_COMM);
    CHECK(MPI_Comm_rank(MPI_COMM_WORLD, NULL) == MPI_ERR_ARG);
    CHECK(MPI_Comm_size((MPI_Comm)(uintptr_t)0xdead0, &x) == MPI_ERR_COMM);
    CHECK(MPI_Bcast(&x, 1, MPI_INT, size, MPI_COMM_WORLD) == MPI_ERR_ROOT);
    CHECK(MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_BAND, MPI_COMM_WORLD) == MPI_ERR_OP);
    CHECK(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD) == MPI_ERR_OP);
    CHECK(MPI_Allreduce(&x, &y, 1, MPI_CHAR, MPI_SUM, MPI_COMM_WORLD) == MPI_ERR_OP);
    MPI_Request bogus = (MPI_Request)(uintptr_t)0xbad00;
    CHECK(MPI_Wait(&bogus, MPI_STATUS_IGNORE) == MPI_ERR_REQUEST);
    MPI_Comm world = MPI_COMM_WORLD;
    CHECK(MPI_Comm_free(&world) == MPI_ERR_COMM);
    MPI_Op op;
    OK(MPI_Op_create(noncommutative, 0, &op));
    OK(MPI_Op_free(&op));
    CHECK(op == MPI_OP_NULL);
    MPI_Op sum = MPI_SUM;
    CHECK(MPI_Op_free(&sum) == MPI_ERR_OP);
    CHECK(MPI_Error_class(-1, &x) == MPI_ERR_ARG);
    CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRHANDLER_NULL) == MPI_ERR_ERRHANDLER);

    /* Contiguous derived types. */
    MPI_Datatype four, t = MPI_INT;
    OK(MPI_Type_contiguous(4, MPI_INT, &four));
    size_is(four, 16);
    OK(MPI_Type_get_extent(four, &lb, &extent));
    CHECK(extent == 16);
    CHECK(MPI_Bcast(&x, 1, four, 0, MPI_COMM_WORLD) == MPI_ERR_TYPE); /* not committed */
    OK(MPI_Type_commit(&four));
    int arr[8] = {rank, 1, 2, 3, 4, 5, 6, 7};
    OK(MPI_Bcast(arr, 2, four, 0, MPI_COMM_WORLD));
    CHECK(arr[0] == 0 && arr[7] == 7);
    OK(MPI_Type_free(&four));
    CHECK(four == MPI_DATATYPE_NULL);
    CHECK(MPI_Type_free(&t) == MPI_ERR_TYPE);

    OK(MPI_Finalize());
    OK(MPI_Finalized(&flag));
    CHECK(flag == 1);
    OK(MPI_Initialized(&flag));
    CHECK(flag == 1);
    if (rank == 0) printf("env: ok on %d ranks\n", size);
    return 0;
}
