/* Info objects (MPI 5.0 §10), MPI_INFO_ENV and communicator hints
 * (§7.4.4): every key, value, length and flag checked. */
#include <string.h>
#include "check.h"

static void value_is(MPI_Info info, const char *key, const char *want) {
    char buf[MPI_MAX_INFO_VAL];
    int len = sizeof buf, flag = -1;
    OK(MPI_Info_get_string(info, key, &len, buf, &flag));
    CHECK(flag == 1 && strcmp(buf, want) == 0 && len == (int)strlen(want) + 1);
}

static void absent(MPI_Info info, const char *key) {
    char buf[16];
    int len = sizeof buf, flag = -1;
    OK(MPI_Info_get_string(info, key, &len, buf, &flag));
    CHECK(flag == 0 && len == (int)sizeof buf);
}

int main(int argc, char **argv) {
    int rank, n, flag, len, cls;
    char key[MPI_MAX_INFO_KEY], buf[MPI_MAX_INFO_VAL];
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    check_rank = rank;
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));

    MPI_Info info, copy;
    OK(MPI_Info_create(&info));
    OK(MPI_Info_get_nkeys(info, &n));
    CHECK(n == 0);
    OK(MPI_Info_set(info, "alpha", "1"));
    OK(MPI_Info_set(info, "beta", "two words"));
    OK(MPI_Info_set(info, "gamma", ""));
    OK(MPI_Info_set(info, "alpha", "one"));
    OK(MPI_Info_get_nkeys(info, &n));
    CHECK(n == 3);
    const char *keys[] = {"alpha", "beta", "gamma"};
    for (int i = 0; i < 3; i++) {
        OK(MPI_Info_get_nthkey(info, i, key));
        CHECK(strcmp(key, keys[i]) == 0);
    }
    CHECK(MPI_Info_get_nthkey(info, 3, key) != MPI_SUCCESS);
    value_is(info, "alpha", "one");
    value_is(info, "beta", "two words");
    value_is(info, "gamma", "");
    absent(info, "delta");

    /* get_string with a short buffer: cut, and the length needed. */
    len = 4;
    OK(MPI_Info_get_string(info, "beta", &len, buf, &flag));
    CHECK(flag == 1 && len == 10 && strcmp(buf, "two") == 0);
    len = 0;
    OK(MPI_Info_get_string(info, "beta", &len, NULL, &flag));
    CHECK(flag == 1 && len == 10);
    /* The deprecated calls. */
    OK(MPI_Info_get_valuelen(info, "beta", &len, &flag));
    CHECK(flag == 1 && len == 9);
    OK(MPI_Info_get_valuelen(info, "nope", &len, &flag));
    CHECK(flag == 0);
    OK(MPI_Info_get(info, "beta", 5, buf, &flag));
    CHECK(flag == 1 && strcmp(buf, "two w") == 0);
    OK(MPI_Info_get(info, "nope", 5, buf, &flag));
    CHECK(flag == 0);

    /* dup is a deep copy. */
    OK(MPI_Info_dup(info, &copy));
    OK(MPI_Info_delete(info, "alpha"));
    OK(MPI_Info_get_nkeys(info, &n));
    CHECK(n == 2);
    absent(info, "alpha");
    value_is(copy, "alpha", "one");
    OK(MPI_Info_get_nkeys(copy, &n));
    CHECK(n == 3);
    OK(MPI_Info_get_nthkey(info, 0, key));
    CHECK(strcmp(key, "beta") == 0);

    /* Errors. */
    int rc = MPI_Info_delete(info, "alpha");
    OK(MPI_Error_class(rc, &cls));
    CHECK(cls == MPI_ERR_INFO_NOKEY);
    rc = MPI_Info_set(info, "", "x");
    OK(MPI_Error_class(rc, &cls));
    CHECK(cls == MPI_ERR_INFO_KEY);
    {
        char longkey[MPI_MAX_INFO_KEY + 1];
        memset(longkey, 'k', MPI_MAX_INFO_KEY);
        longkey[MPI_MAX_INFO_KEY] = 0;
        rc = MPI_Info_set(info, longkey, "x");
        OK(MPI_Error_class(rc, &cls));
        CHECK(cls == MPI_ERR_INFO_KEY);
    }
    rc = MPI_Info_get_nkeys(MPI_INFO_NULL, &n);
    OK(MPI_Error_class(rc, &cls));
    CHECK(cls == MPI_ERR_INFO);

    /* MPI_INFO_ENV: read only, with the standard's keys. */
    OK(MPI_Info_get_string(MPI_INFO_ENV, "command", &(int){sizeof buf}, buf, &flag));
    CHECK(flag == 1 && strstr(buf, "info") != NULL);
    OK(MPI_Info_get_string(MPI_INFO_ENV, "thread_level", &(int){sizeof buf}, buf, &flag));
    CHECK(flag == 1 && strcmp(buf, "MPI_THREAD_SINGLE") == 0);
    {
        int size;
        char want[32];
        OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
        snprintf(want, sizeof want, "%d", size);
        value_is(MPI_INFO_ENV, "maxprocs", want);
    }
    CHECK(MPI_Info_set(MPI_INFO_ENV, "a", "b") != MPI_SUCCESS);
    {
        MPI_Info env;
        OK(MPI_Info_create_env(argc, argv, &env));
        value_is(env, "thread_level", "MPI_THREAD_SINGLE");
        OK(MPI_Info_free(&env));
    }

    /* Communicator hints. */
    MPI_Comm c, d;
    MPI_Info used;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    OK(MPI_Comm_get_info(c, &used));
    OK(MPI_Info_get_nkeys(used, &n));
    CHECK(n == 0);
    OK(MPI_Info_free(&used));
    OK(MPI_Comm_set_info(c, copy));
    OK(MPI_Comm_get_info(c, &used));
    OK(MPI_Info_get_nkeys(used, &n));
    CHECK(n == 3);
    value_is(used, "alpha", "one");
    OK(MPI_Info_free(&used));
    OK(MPI_Comm_dup(c, &d));
    OK(MPI_Comm_get_info(d, &used));
    value_is(used, "gamma", "");
    OK(MPI_Info_free(&used));
    OK(MPI_Comm_free(&d));
    OK(MPI_Comm_dup_with_info(c, info, &d));
    OK(MPI_Comm_get_info(d, &used));
    OK(MPI_Info_get_nkeys(used, &n));
    CHECK(n == 2);
    absent(used, "alpha");
    value_is(used, "beta", "two words");
    OK(MPI_Info_free(&used));
    {
        int sum = -1, me = 1;
        OK(MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, d));
        int size;
        OK(MPI_Comm_size(d, &size));
        CHECK(sum == size);
    }
    OK(MPI_Comm_free(&d));
    OK(MPI_Comm_free(&c));

    OK(MPI_Info_free(&info));
    CHECK(info == MPI_INFO_NULL);
    OK(MPI_Info_free(&copy));
    CHECK(MPI_Info_free(&copy) != MPI_SUCCESS);
    OK(MPI_Finalize());
    return 0;
}
