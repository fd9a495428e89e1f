/* Attribute caching on datatypes (MPI 5.0 §7.7.4): keyvals with user and
 * predefined callbacks (MPI_TYPE_DUP_FN, MPI_TYPE_NULL_COPY_FN,
 * MPI_TYPE_NULL_DELETE_FN), copies by MPI_Type_dup, deletes by
 * MPI_Type_free, MPI_Type_delete_attr and setting over a value,
 * attributes on predefined types, and the error classes of bad input
 * (no keyval made by a call refused for a null output pointer).
 * Every callback call is counted and what it saw checked. Local to each
 * process: correct at any number of ranks. */
#include <stdint.h>
#include <string.h>
#include "check.h"

static int copies, deletes, extra_seen, size_seen;
static MPI_Datatype copy_type, delete_type;
static intptr_t last_deleted;

static int error_class(int rc) {
    int cls = -1;
    OK(MPI_Error_class(rc, &cls));
    return cls;
}

/* Values below 100 are not copied, others copied plus one. */
static int copy_fn(MPI_Datatype t, int key, void *extra, void *in, void *out, int *flag) {
    (void)key;
    copies++;
    copy_type = t;
    extra_seen = *(int *)extra;
    intptr_t v = (intptr_t)in;
    *flag = v >= 100;
    *(void **)out = (void *)(v + 1);
    return MPI_SUCCESS;
}

static int failing_copy(MPI_Datatype t, int key, void *extra, void *in, void *out, int *flag) {
    (void)t; (void)key; (void)extra; (void)in; (void)out;
    *flag = 0;
    return MPI_ERR_OTHER;
}

/* Calls MPI on the datatype being deleted: no lock may be held. */
static int delete_fn(MPI_Datatype t, int key, void *val, void *extra) {
    (void)key; (void)extra;
    deletes++;
    delete_type = t;
    last_deleted = (intptr_t)val;
    OK(MPI_Type_size(t, &size_seen));
    return MPI_SUCCESS;
}

static int failing_delete(MPI_Datatype t, int key, void *val, void *extra) {
    (void)t; (void)key; (void)val; (void)extra;
    return MPI_ERR_OTHER;
}

static void get(MPI_Datatype t, int key, int want_flag, intptr_t want) {
    void *v = (void *)-1;
    int flag = -1;
    OK(MPI_Type_get_attr(t, key, &v, &flag));
    CHECK(flag == want_flag);
    if (flag) CHECK((intptr_t)v == want);
    else CHECK(v == (void *)-1);
}

int main(int argc, char **argv) {
    int rank, key, dupkey, nullkey, failkey, delfailkey, commkey, extra = 4321, flag;
    MPI_Datatype t, t2, t3;
    void *v;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    check_rank = rank;
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));

    OK(MPI_Type_create_keyval(copy_fn, delete_fn, &key, &extra));
    CHECK(key != MPI_KEYVAL_INVALID);
    OK(MPI_Type_create_keyval(MPI_TYPE_DUP_FN, MPI_TYPE_NULL_DELETE_FN, &dupkey, NULL));
    OK(MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, delete_fn, &nullkey, &extra));
    OK(MPI_Type_create_keyval(failing_copy, MPI_TYPE_NULL_DELETE_FN, &failkey, NULL));
    OK(MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, failing_delete, &delfailkey, NULL));
    CHECK(key != dupkey && dupkey != nullkey && nullkey != failkey && failkey != delfailkey);

    /* Set, get, set over a value (deletes the old one), on an uncommitted
     * type that is then committed (commit keeps its attributes). */
    OK(MPI_Type_contiguous(3, MPI_INT, &t));
    get(t, key, 0, 0);
    OK(MPI_Type_set_attr(t, key, (void *)(intptr_t)150));
    get(t, key, 1, 150);
    CHECK(copies == 0 && deletes == 0);
    OK(MPI_Type_set_attr(t, key, (void *)(intptr_t)200));
    CHECK(deletes == 1 && last_deleted == 150 && delete_type == t && size_seen == 12);
    get(t, key, 1, 200);
    OK(MPI_Type_commit(&t));
    get(t, key, 1, 200);
    OK(MPI_Type_set_attr(t, dupkey, (void *)(intptr_t)7));
    OK(MPI_Type_set_attr(t, nullkey, (void *)(intptr_t)300));
    get(t, dupkey, 1, 7);
    get(t, nullkey, 1, 300);

    /* Dup: the user's copy function sees the old type, its extra state
     * and the value; MPI_TYPE_DUP_FN copies as is; MPI_TYPE_NULL_COPY_FN
     * does not copy. */
    deletes = 0;
    OK(MPI_Type_dup(t, &t2));
    CHECK(copies == 1 && copy_type == t && extra_seen == 4321 && deletes == 0);
    get(t2, key, 1, 201);
    get(t2, dupkey, 1, 7);
    get(t2, nullkey, 0, 0);
    get(t, key, 1, 200);
    /* The dup is committed like its original and usable. */
    int sz = 0;
    OK(MPI_Type_size(t2, &sz));
    CHECK(sz == 12);
    int src[3] = {1, 2, 3}, dst[3] = {0, 0, 0};
    OK(MPI_Sendrecv(src, 1, t2, rank, 5, dst, 1, t2, rank, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK(dst[0] == 1 && dst[1] == 2 && dst[2] == 3);

    /* A copy function that declines (flag 0): no attribute. */
    OK(MPI_Type_set_attr(t2, key, (void *)(intptr_t)50));
    CHECK(deletes == 1 && last_deleted == 201 && delete_type == t2);
    copies = 0;
    OK(MPI_Type_dup(t2, &t3));
    CHECK(copies == 1 && copy_type == t2);
    get(t3, key, 0, 0);
    get(t3, dupkey, 1, 7);

    /* Free runs the delete callbacks, with the type still alive. */
    deletes = 0;
    OK(MPI_Type_free(&t3));
    CHECK(t3 == MPI_DATATYPE_NULL && deletes == 0); /* only dupkey: no delete fn */
    OK(MPI_Type_free(&t2));
    CHECK(t2 == MPI_DATATYPE_NULL && deletes == 1 && last_deleted == 50 && size_seen == 12);

    /* Delete_attr: callback, then gone; a second one is MPI_ERR_ARG. */
    deletes = 0;
    OK(MPI_Type_delete_attr(t, nullkey));
    CHECK(deletes == 1 && last_deleted == 300 && delete_type == t);
    get(t, nullkey, 0, 0);
    CHECK(error_class(MPI_Type_delete_attr(t, nullkey)) == MPI_ERR_ARG);
    CHECK(deletes == 1);

    /* A failing delete callback: the error is returned and the
     * attribute stays. */
    OK(MPI_Type_set_attr(t, delfailkey, (void *)(intptr_t)9));
    CHECK(MPI_Type_delete_attr(t, delfailkey) == MPI_ERR_OTHER);
    get(t, delfailkey, 1, 9);
    CHECK(MPI_Type_set_attr(t, delfailkey, (void *)(intptr_t)10) == MPI_ERR_OTHER);
    get(t, delfailkey, 1, 9);

    /* A failing copy callback: the dup fails, its error returned, and no
     * type is made. */
    OK(MPI_Type_set_attr(t, failkey, (void *)(intptr_t)1));
    t2 = MPI_INT;
    CHECK(MPI_Type_dup(t, &t2) == MPI_ERR_OTHER);
    CHECK(t2 == MPI_DATATYPE_NULL);
    OK(MPI_Type_delete_attr(t, failkey));

    /* Freeing a keyval leaves the attributes set with it working, their
     * callbacks too; the handle becomes MPI_KEYVAL_INVALID. */
    int oldkey = key;
    OK(MPI_Type_free_keyval(&key));
    CHECK(key == MPI_KEYVAL_INVALID);
    CHECK(error_class(MPI_Type_free_keyval(&oldkey)) == MPI_ERR_KEYVAL);
    CHECK(error_class(MPI_Type_get_attr(t, oldkey, &v, &flag)) == MPI_ERR_KEYVAL);

    /* Freeing the type with a failing delete callback: freed, the error
     * returned; the other delete callbacks ran (last set first). */
    deletes = 0;
    CHECK(MPI_Type_free(&t) == MPI_ERR_OTHER);
    CHECK(t == MPI_DATATYPE_NULL && deletes == 1 && last_deleted == 200);

    /* Predefined types: attributes of their own, copied by dup. */
    OK(MPI_Type_create_keyval(copy_fn, delete_fn, &key, &extra));
    get(MPI_INT, key, 0, 0);
    OK(MPI_Type_set_attr(MPI_INT, key, (void *)(intptr_t)500));
    OK(MPI_Type_set_attr(MPI_INT, dupkey, (void *)(intptr_t)8));
    get(MPI_INT, key, 1, 500);
    get(MPI_DOUBLE, key, 0, 0);
    copies = 0;
    OK(MPI_Type_dup(MPI_INT, &t));
    CHECK(copies == 1 && copy_type == MPI_INT);
    get(t, key, 1, 501);
    get(t, dupkey, 1, 8);
    deletes = 0;
    OK(MPI_Type_free(&t));
    CHECK(deletes == 1 && last_deleted == 501 && size_seen == 4);
    OK(MPI_Type_delete_attr(MPI_INT, key));
    CHECK(deletes == 2 && last_deleted == 500 && delete_type == MPI_INT && size_seen == 4);
    get(MPI_INT, key, 0, 0);
    get(MPI_INT, dupkey, 1, 8);
    OK(MPI_Type_delete_attr(MPI_INT, dupkey));
    CHECK(error_class(MPI_Type_free(&(MPI_Datatype){MPI_INT})) == MPI_ERR_TYPE);

    /* Bad input: unknown keyval, a communicator's keyval, a freed or null
     * datatype, null output pointers. */
    OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &commkey, NULL));
    CHECK(error_class(MPI_Type_set_attr(MPI_INT, commkey, NULL)) == MPI_ERR_KEYVAL);
    CHECK(error_class(MPI_Type_get_attr(MPI_INT, commkey, &v, &flag)) == MPI_ERR_KEYVAL);
    CHECK(error_class(MPI_Type_delete_attr(MPI_INT, commkey)) == MPI_ERR_KEYVAL);
    CHECK(error_class(MPI_Type_free_keyval(&commkey)) == MPI_ERR_KEYVAL);
    CHECK(error_class(MPI_Comm_set_attr(MPI_COMM_WORLD, key, NULL)) == MPI_ERR_KEYVAL);
    CHECK(error_class(MPI_Comm_free_keyval(&key)) == MPI_ERR_KEYVAL);
    CHECK(error_class(MPI_Type_set_attr(MPI_INT, 12345, NULL)) == MPI_ERR_KEYVAL);
    CHECK(error_class(MPI_Type_get_attr(MPI_INT, -1, &v, &flag)) == MPI_ERR_KEYVAL);
    CHECK(error_class(MPI_Type_get_attr(MPI_INT, MPI_KEYVAL_INVALID, &v, &flag)) ==
          MPI_ERR_KEYVAL);
    CHECK(error_class(MPI_Type_get_attr(MPI_INT, MPI_TAG_UB, &v, &flag)) == MPI_ERR_KEYVAL);
    OK(MPI_Type_contiguous(2, MPI_INT, &t));
    t2 = t;
    OK(MPI_Type_free(&t));
    CHECK(error_class(MPI_Type_set_attr(t2, key, NULL)) == MPI_ERR_TYPE);
    CHECK(error_class(MPI_Type_get_attr(t2, key, &v, &flag)) == MPI_ERR_TYPE);
    CHECK(error_class(MPI_Type_delete_attr(t2, key)) == MPI_ERR_TYPE);
    CHECK(error_class(MPI_Type_set_attr(MPI_DATATYPE_NULL, key, NULL)) == MPI_ERR_TYPE);
    CHECK(error_class(MPI_Type_get_attr(MPI_INT, key, &v, NULL)) == MPI_ERR_ARG);
    CHECK(error_class(MPI_Type_create_keyval(copy_fn, delete_fn, NULL, NULL)) == MPI_ERR_ARG);
    /* A keyval refused for its null output pointer is never made: o2g's
     * handle values go up by 16 from one object to the next, so the keyval
     * made after each refused call is the next one after the keyval made
     * before it. */
    {
        int before, after;
        for (int f = 0; f < 3; f++) {
            OK(MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, MPI_TYPE_NULL_DELETE_FN, &before,
                                      NULL));
            int rc = f == 0   ? MPI_Type_create_keyval(copy_fn, delete_fn, NULL, NULL)
                     : f == 1 ? MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN,
                                                       MPI_COMM_NULL_DELETE_FN, NULL, NULL)
                              : MPI_Keyval_create(MPI_NULL_COPY_FN, MPI_NULL_DELETE_FN, NULL, NULL);
            CHECK(error_class(rc) == MPI_ERR_ARG);
            OK(MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, MPI_TYPE_NULL_DELETE_FN, &after,
                                      NULL));
            CHECK(after == before + 16);
            OK(MPI_Type_free_keyval(&before));
            OK(MPI_Type_free_keyval(&after));
        }
    }
    CHECK(error_class(MPI_Type_free_keyval(NULL)) == MPI_ERR_ARG);

    OK(MPI_Comm_free_keyval(&commkey));
    OK(MPI_Type_free_keyval(&key));
    OK(MPI_Type_free_keyval(&dupkey));
    OK(MPI_Type_free_keyval(&nullkey));
    OK(MPI_Type_free_keyval(&failkey));
    OK(MPI_Type_free_keyval(&delfailkey));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Finalize());
    if (rank == 0) printf("type_attr: ok\n");
    return 0;
}
