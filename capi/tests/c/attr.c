/* Attribute caching on communicators (MPI 5.0 §7.7) and the predefined
 * attributes of MPI_COMM_WORLD: every callback call is counted and
 * checked, every value compared with the one set. */
#include <stdint.h>
#include "check.h"

static int copies, deletes, last_deleted, self_deleted;
static MPI_Comm last_comm;
static int extra_seen;

static int copy_fn(MPI_Comm c, int key, void *extra, void *in, void *out, int *flag) {
    (void)key;
    copies++;
    last_comm = c;
    extra_seen = *(int *)extra;
    /* Values below 100 are not copied, others copied plus one. */
    intptr_t v = (intptr_t)in;
    *flag = v >= 100;
    *(void **)out = (void *)(v + 1);
    return MPI_SUCCESS;
}

static int failing_copy(MPI_Comm c, int key, void *extra, void *in, void *out, int *flag) {
    (void)c; (void)key; (void)extra; (void)in; (void)out;
    *flag = 0;
    return MPI_ERR_OTHER;
}

static int delete_fn(MPI_Comm c, int key, void *val, void *extra) {
    (void)key; (void)extra;
    deletes++;
    last_deleted = (int)(intptr_t)val;
    last_comm = c;
    return MPI_SUCCESS;
}

static int self_delete(MPI_Comm c, int key, void *val, void *extra) {
    (void)key; (void)extra;
    /* Called at MPI_Finalize, on MPI_COMM_SELF, before anything is torn
     * down: MPI calls still work. */
    int flag = 1;
    MPI_Finalized(&flag);
    if (c == MPI_COMM_SELF && (intptr_t)val == 42 && !flag) self_deleted = 1;
    return MPI_SUCCESS;
}

static void get(MPI_Comm c, int key, int want_flag, intptr_t want) {
    void *v = (void *)-1;
    int flag = -1;
    OK(MPI_Comm_get_attr(c, key, &v, &flag));
    CHECK(flag == want_flag);
    if (flag) CHECK((intptr_t)v == want);
}

int main(int argc, char **argv) {
    int rank, size, flag, *p, extra = 1234;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    check_rank = rank;
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));

    /* Predefined attributes of MPI_COMM_WORLD. */
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &p, &flag));
    CHECK(flag && *p >= 32767);
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_HOST, &p, &flag));
    CHECK(flag && *p == MPI_PROC_NULL);
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_IO, &p, &flag));
    CHECK(flag && *p == MPI_ANY_SOURCE);
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &p, &flag));
    CHECK(flag && *p == 0);
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &p, &flag));
    CHECK(flag && *p == size);
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &p, &flag));
    CHECK(flag && *p == 0);
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &p, &flag));
    CHECK(flag && *p >= MPI_ERR_LASTCODE);
    OK(MPI_Attr_get(MPI_COMM_WORLD, MPI_TAG_UB, &p, &flag));
    CHECK(flag && *p >= 32767);
    OK(MPI_Comm_get_attr(MPI_COMM_SELF, MPI_TAG_UB, &p, &flag));
    CHECK(!flag);
    CHECK(MPI_Comm_set_attr(MPI_COMM_WORLD, MPI_TAG_UB, NULL) != MPI_SUCCESS);
    CHECK(MPI_Comm_delete_attr(MPI_COMM_WORLD, MPI_TAG_UB) != MPI_SUCCESS);

    /* Keyvals with the predefined callbacks and with ours. */
    int kdup, knull, kuser, kfail, kself;
    OK(MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &kdup, NULL));
    OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_fn, &knull, NULL));
    OK(MPI_Comm_create_keyval(copy_fn, delete_fn, &kuser, &extra));
    OK(MPI_Comm_create_keyval(failing_copy, MPI_COMM_NULL_DELETE_FN, &kfail, NULL));
    OK(MPI_Keyval_create(MPI_NULL_COPY_FN, self_delete, &kself, NULL));
    CHECK(kdup != knull && knull != kuser && kuser != kfail && kdup != MPI_KEYVAL_INVALID);

    MPI_Comm a, b;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &a));
    get(a, kdup, 0, 0);
    OK(MPI_Comm_set_attr(a, kdup, (void *)7));
    OK(MPI_Comm_set_attr(a, knull, (void *)8));
    OK(MPI_Attr_put(a, kuser, (void *)100));
    get(a, kdup, 1, 7);
    get(a, knull, 1, 8);
    get(a, kuser, 1, 100);

    /* Replacing a value deletes the old one. */
    deletes = 0;
    OK(MPI_Comm_set_attr(a, knull, (void *)9));
    CHECK(deletes == 1 && last_deleted == 8 && last_comm == a);
    get(a, knull, 1, 9);

    /* Dup: DUP_FN copies, NULL_COPY_FN does not, ours adds one. */
    copies = 0;
    OK(MPI_Comm_dup(a, &b));
    CHECK(copies == 1 && last_comm == a && extra_seen == 1234);
    get(b, kdup, 1, 7);
    get(b, knull, 0, 0);
    get(b, kuser, 1, 101);
    /* Our copy function declines values below 100. */
    OK(MPI_Comm_set_attr(b, kuser, (void *)5));
    {
        MPI_Comm c;
        OK(MPI_Comm_dup(b, &c));
        get(c, kuser, 0, 0);
        get(c, kdup, 1, 7);
        OK(MPI_Comm_free(&c));
    }

    /* Delete: the callback runs; deleting again is an error. */
    deletes = 0;
    OK(MPI_Comm_delete_attr(b, kuser));
    CHECK(deletes == 1 && last_deleted == 5 && last_comm == b);
    get(b, kuser, 0, 0);
    CHECK(MPI_Comm_delete_attr(b, kuser) != MPI_SUCCESS);

    /* Free: delete callbacks of every attribute left. */
    deletes = 0;
    OK(MPI_Comm_free(&b));
    CHECK(deletes == 0); /* b holds kdup only, whose delete is NULL */
    deletes = 0;
    OK(MPI_Comm_free(&a));
    CHECK(deletes == 2); /* knull (9) and kuser (100) */

    /* A failing copy callback fails the dup. */
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &a));
    OK(MPI_Comm_set_attr(a, kfail, (void *)1));
    b = MPI_COMM_NULL;
    CHECK(MPI_Comm_dup(a, &b) == MPI_ERR_OTHER);

    /* A freed keyval: attributes set with it keep their callbacks. */
    OK(MPI_Comm_set_attr(a, knull, (void *)77));
    int k2 = knull;
    OK(MPI_Comm_free_keyval(&k2));
    CHECK(k2 == MPI_KEYVAL_INVALID);
    deletes = 0;
    OK(MPI_Comm_free(&a));
    CHECK(deletes == 1 && last_deleted == 77);
    CHECK(MPI_Comm_set_attr(MPI_COMM_WORLD, knull, NULL) != MPI_SUCCESS);
    {
        int cls, rc = MPI_Comm_get_attr(MPI_COMM_WORLD, 999999, &p, &flag);
        OK(MPI_Error_class(rc, &cls));
        CHECK(cls == MPI_ERR_KEYVAL);
    }
    OK(MPI_Comm_free_keyval(&kdup));
    OK(MPI_Keyval_free(&kuser));
    CHECK(kuser == MPI_KEYVAL_INVALID);
    CHECK(MPI_Attr_delete(MPI_COMM_WORLD, kfail) != MPI_SUCCESS);

    /* MPI_COMM_SELF's attributes are deleted first thing in Finalize. */
    OK(MPI_Comm_set_attr(MPI_COMM_SELF, kself, (void *)42));
    OK(MPI_Finalize());
    if (!self_deleted) {
        fprintf(stderr, "rank %d: MPI_COMM_SELF's attribute was not deleted at MPI_Finalize\n", rank);
        return 1;
    }
    return 0;
}
