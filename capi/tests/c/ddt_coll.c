/* Non-contiguous datatypes in every collective (MPI 5.0 chapter 6):
 * vector, indexed, struct, resized, subarray and a contiguous derived
 * type on both sides of bcast, gather(v), scatter(v), allgather(v),
 * alltoall(v,w), reduce, allreduce, scan, exscan, reduce_scatter(_block)
 * and reduce_local, each blocking, nonblocking, and in its large-count
 * _c form (blocking and nonblocking), some with MPI_IN_PLACE. Every int
 * of every receive buffer is checked: the data against values computed
 * here, the type's gaps and unused blocks against the sentinel they were
 * filled with; the reductions with MPI_SUM and with user operations
 * (commutative or not), which get the elements in their type's layout.
 * Also MPI_Op_create_c, and MPI_ERR_OP for a predefined operation on a
 * struct of an int and a double. */
#include <stdint.h>
#include <string.h>
#include "check.h"

static int rank, size;

enum { SENT = -7777, MAXE = 64 };

/* A datatype of ints: per element, `per` ints at int offsets `off`,
 * elements `ext` ints apart. */
typedef struct {
    const char *name;
    MPI_Datatype t;
    int per, ext, off[4];
} tdesc;

static int val(int r, int k, int j) { return r * 1000 + k * 10 + j + 1; }

/* A buffer of `n` elements, every int the sentinel. */
static int *blank(const tdesc *d, int n) {
    int *b = malloc(sizeof(int) * (size_t)(n * d->ext + 1));
    CHECK(b);
    for (int i = 0; i < n * d->ext + 1; i++) b[i] = SENT;
    return b;
}

/* Element `at` of `b` gets the values of rank `r`'s element `k`. */
static void put(const tdesc *d, int *b, int at, int r, int k) {
    for (int j = 0; j < d->per; j++) b[at * d->ext + d->off[j]] = val(r, k, j);
}

/* Element `at` of `b` gets sum over ranks `from`..`to`-1 of element k. */
static void put_sum(const tdesc *d, int *b, int at, int from, int to, int k) {
    for (int j = 0; j < d->per; j++) {
        int s = 0;
        for (int r = from; r < to; r++) s += val(r, k, j);
        b[at * d->ext + d->off[j]] = s;
    }
}

static void same(const int *got, const int *want, int n, const tdesc *d, const char *what) {
    for (int i = 0; i < n * d->ext + 1; i++) {
        if (got[i] != want[i]) {
            fprintf(stderr, "rank %d: %s with %s: int %d is %d, not %d\n", rank, what, d->name,
                    i, got[i], want[i]);
            CHECK(0);
        }
    }
}

/* mode: 0 blocking, 1 nonblocking, 2 blocking _c, 3 nonblocking _c;
 * `args` for the int forms, `cargs` for the _c ones (the v and w
 * variants take MPI_Count and MPI_Aint arrays there). */
#define WITH_REQ(...) (__VA_ARGS__, &rq_)
#define RUNV(mode, F, IF, args, cargs)                                       \
    do {                                                                     \
        MPI_Request rq_;                                                     \
        switch (mode) {                                                      \
        case 0: OK(MPI_##F args); break;                                     \
        case 1: OK(MPI_##IF WITH_REQ args); break;                           \
        case 2: OK(MPI_##F##_c cargs); break;                                \
        default: OK(MPI_##IF##_c WITH_REQ cargs); break;                     \
        }                                                                    \
        if (mode % 2) OK(MPI_Wait(&rq_, MPI_STATUS_IGNORE));                 \
    } while (0)
#define RUN(mode, F, IF, ...) RUNV(mode, F, IF, (__VA_ARGS__), (__VA_ARGS__))

/* Counts and displacements in both widths. */
typedef struct {
    int c[MAXE], d[MAXE];
    MPI_Count cc[MAXE];
    MPI_Aint dd[MAXE];
} vec;

static void setv(vec *v, int i, int c, int d) {
    v->c[i] = c;
    v->d[i] = d;
    v->cc[i] = c;
    v->dd[i] = d;
}


static void rooted(const tdesc *d, int mode) {
    MPI_Datatype t = d->t;
    int root = size - 1, n = 2;
    /* bcast */
    int *b = blank(d, n), *w = blank(d, n);
    for (int k = 0; k < n; k++) {
        put(d, w, k, root, k);
        if (rank == root) put(d, b, k, root, k);
    }
    RUN(mode, Bcast, Ibcast, b, n, t, root, MPI_COMM_WORLD);
    same(b, w, n, d, "bcast");
    free(b);
    free(w);
    /* gather: 2 elements each */
    int *s = blank(d, n);
    for (int k = 0; k < n; k++) put(d, s, k, rank, k);
    b = blank(d, n * size);
    w = blank(d, n * size);
    for (int i = 0; i < size; i++)
        for (int k = 0; k < n; k++) put(d, w, i * n + k, i, k);
    RUN(mode, Gather, Igather, s, n, t, b, n, t, root, MPI_COMM_WORLD);
    if (rank == root) same(b, w, n * size, d, "gather");
    /* gather in place at the root */
    int *ip = blank(d, n * size);
    if (rank == root)
        for (int k = 0; k < n; k++) put(d, ip, root * n + k, root, k);
    RUN(mode, Gather, Igather, rank == root ? MPI_IN_PLACE : s, n, t, ip, n, t, root, MPI_COMM_WORLD);
    if (rank == root) same(ip, w, n * size, d, "gather in place");
    free(ip);
    /* scatter: block i of the root's to rank i */
    int *r = blank(d, n), *wr = blank(d, n);
    for (int k = 0; k < n; k++) put(d, wr, k, rank, k);
    RUN(mode, Scatter, Iscatter, w, n, t, r, n, t, root, MPI_COMM_WORLD);
    same(r, wr, n, d, "scatter");
    free(r);
    free(b);
    /* gatherv / scatterv: rank i has 1 + i % 2 elements at 3 i */
    vec v;
    for (int i = 0; i < size; i++) setv(&v, i, 1 + i % 2, 3 * i);
    int tot = 3 * size;
    b = blank(d, tot);
    int *wv = blank(d, tot);
    for (int i = 0; i < size; i++)
        for (int k = 0; k < 1 + i % 2; k++) put(d, wv, 3 * i + k, i, k);
    MPI_Count mine = 1 + rank % 2;
    RUNV(mode, Gatherv, Igatherv, (s, (int)mine, t, b, v.c, v.d, t, root, MPI_COMM_WORLD),
         (s, mine, t, b, v.cc, v.dd, t, root, MPI_COMM_WORLD));
    if (rank == root) same(b, wv, tot, d, "gatherv");
    r = blank(d, n);
    wr = blank(d, n);
    for (int k = 0; k < mine; k++) put(d, wr, k, rank, k);
    RUNV(mode, Scatterv, Iscatterv, (wv, v.c, v.d, t, r, (int)mine, t, root, MPI_COMM_WORLD),
         (wv, v.cc, v.dd, t, r, mine, t, root, MPI_COMM_WORLD));
    same(r, wr, n, d, "scatterv");
    free(r);
    free(wr);
    free(b);
    free(wv);
    free(w);
    free(s);
}

static void everyone(const tdesc *d, int mode) {
    MPI_Datatype t = d->t;
    int n = 2;
    int *s = blank(d, n);
    for (int k = 0; k < n; k++) put(d, s, k, rank, k);
    /* allgather, and in place */
    int *b = blank(d, n * size), *w = blank(d, n * size);
    for (int i = 0; i < size; i++)
        for (int k = 0; k < n; k++) put(d, w, i * n + k, i, k);
    RUN(mode, Allgather, Iallgather, s, n, t, b, n, t, MPI_COMM_WORLD);
    same(b, w, n * size, d, "allgather");
    free(b);
    b = blank(d, n * size);
    for (int k = 0; k < n; k++) put(d, b, rank * n + k, rank, k);
    RUN(mode, Allgather, Iallgather, MPI_IN_PLACE, n, t, b, n, t, MPI_COMM_WORLD);
    same(b, w, n * size, d, "allgather in place");
    free(b);
    free(w);
    /* allgatherv: rank i has 1 + i % 2 elements at 3 (size - 1 - i) */
    vec v;
    for (int i = 0; i < size; i++) setv(&v, i, 1 + i % 2, 3 * (size - 1 - i));
    b = blank(d, 3 * size);
    w = blank(d, 3 * size);
    for (int i = 0; i < size; i++)
        for (int k = 0; k < 1 + i % 2; k++) put(d, w, 3 * (size - 1 - i) + k, i, k);
    MPI_Count mine = 1 + rank % 2;
    RUNV(mode, Allgatherv, Iallgatherv, (s, (int)mine, t, b, v.c, v.d, t, MPI_COMM_WORLD),
         (s, mine, t, b, v.cc, v.dd, t, MPI_COMM_WORLD));
    same(b, w, 3 * size, d, "allgatherv");
    free(b);
    free(w);
    free(s);
    /* alltoall: element k of block i goes from rank r to rank i */
    s = blank(d, n * size);
    b = blank(d, n * size);
    w = blank(d, n * size);
    for (int i = 0; i < size; i++)
        for (int k = 0; k < n; k++) {
            put(d, s, i * n + k, rank, i * n + k);
            put(d, w, i * n + k, i, rank * n + k);
        }
    RUN(mode, Alltoall, Ialltoall, s, n, t, b, n, t, MPI_COMM_WORLD);
    same(b, w, n * size, d, "alltoall");
    RUN(mode, Alltoall, Ialltoall, MPI_IN_PLACE, n, t, s, n, t, MPI_COMM_WORLD);
    same(s, w, n * size, d, "alltoall in place");
    free(b);
    /* alltoallv: one element to each rank, received in reverse order
     * with a gap element between blocks */
    vec sv, rv;
    for (int i = 0; i < size; i++) {
        setv(&sv, i, 1, i);
        setv(&rv, i, 1, 2 * (size - 1 - i));
    }
    int *s1 = blank(d, size);
    for (int i = 0; i < size; i++) put(d, s1, i, rank, i);
    b = blank(d, 2 * size);
    free(w);
    w = blank(d, 2 * size);
    for (int i = 0; i < size; i++) put(d, w, 2 * (size - 1 - i), i, rank);
    RUNV(mode, Alltoallv, Ialltoallv, (s1, sv.c, sv.d, t, b, rv.c, rv.d, t, MPI_COMM_WORLD),
         (s1, sv.cc, sv.dd, t, b, rv.cc, rv.dd, t, MPI_COMM_WORLD));
    same(b, w, 2 * size, d, "alltoallv");
    /* alltoallw: the same in bytes, with this type to odd ranks and a
     * contiguous copy of the data as MPI_INTs... kept to one type per
     * peer: T for every peer, byte displacements */
    MPI_Datatype ts[MAXE];
    for (int i = 0; i < size; i++) {
        ts[i] = t;
        setv(&sv, i, 1, i * d->ext * (int)sizeof(int));
        setv(&rv, i, 1, 2 * (size - 1 - i) * d->ext * (int)sizeof(int));
    }
    free(b);
    b = blank(d, 2 * size);
    RUNV(mode, Alltoallw, Ialltoallw, (s1, sv.c, sv.d, ts, b, rv.c, rv.d, ts, MPI_COMM_WORLD),
         (s1, sv.cc, sv.dd, ts, b, rv.cc, rv.dd, ts, MPI_COMM_WORLD));
    same(b, w, 2 * size, d, "alltoallw");
    free(b);
    free(w);
    free(s1);
    free(s);
}

static void reductions(const tdesc *d, int mode, MPI_Op op) {
    MPI_Datatype t = d->t;
    int n = 3, root = size / 2;
    int *s = blank(d, n), *b = blank(d, n), *w = blank(d, n);
    for (int k = 0; k < n; k++) {
        put(d, s, k, rank, k);
        put_sum(d, w, k, 0, size, k);
    }
    RUN(mode, Reduce, Ireduce, s, b, n, t, op, root, MPI_COMM_WORLD);
    if (rank == root) same(b, w, n, d, "reduce");
    free(b);
    b = blank(d, n);
    RUN(mode, Allreduce, Iallreduce, s, b, n, t, op, MPI_COMM_WORLD);
    same(b, w, n, d, "allreduce");
    free(b);
    b = blank(d, n);
    for (int k = 0; k < n; k++) put(d, b, k, rank, k);
    RUN(mode, Allreduce, Iallreduce, MPI_IN_PLACE, b, n, t, op, MPI_COMM_WORLD);
    same(b, w, n, d, "allreduce in place");
    free(b);
    b = blank(d, n);
    for (int k = 0; k < n; k++) put_sum(d, w, k, 0, rank + 1, k);
    RUN(mode, Scan, Iscan, s, b, n, t, op, MPI_COMM_WORLD);
    same(b, w, n, d, "scan");
    free(b);
    free(w);
    b = blank(d, n);
    w = blank(d, n);
    if (rank > 0)
        for (int k = 0; k < n; k++) put_sum(d, w, k, 0, rank, k);
    RUN(mode, Exscan, Iexscan, s, b, n, t, op, MPI_COMM_WORLD);
    same(b, w, n, d, "exscan"); /* rank 0's untouched */
    free(b);
    free(w);
    free(s);
    /* reduce_scatter_block: 2 elements per rank */
    int m = 2;
    s = blank(d, m * size);
    for (int k = 0; k < m * size; k++) put(d, s, k, rank, k);
    b = blank(d, m);
    w = blank(d, m);
    for (int k = 0; k < m; k++)
        for (int j = 0; j < d->per; j++) {
            int sum = 0;
            for (int r = 0; r < size; r++) sum += val(r, rank * m + k, j);
            w[k * d->ext + d->off[j]] = sum;
        }
    RUN(mode, Reduce_scatter_block, Ireduce_scatter_block, s, b, m, t, op, MPI_COMM_WORLD);
    same(b, w, m, d, "reduce_scatter_block");
    free(b);
    /* reduce_scatter: 1 + i % 2 elements for rank i */
    vec v;
    int first = 0, all = 0;
    for (int i = 0; i < size; i++) {
        setv(&v, i, 1 + i % 2, 0);
        if (i < rank) first += 1 + i % 2;
        all += 1 + i % 2;
    }
    free(s);
    s = blank(d, all);
    for (int k = 0; k < all; k++) put(d, s, k, rank, k);
    b = blank(d, 2);
    free(w);
    w = blank(d, 2);
    for (int k = 0; k < 1 + rank % 2; k++)
        for (int j = 0; j < d->per; j++) {
            int sum = 0;
            for (int r = 0; r < size; r++) sum += val(r, first + k, j);
            w[k * d->ext + d->off[j]] = sum;
        }
    RUNV(mode, Reduce_scatter, Ireduce_scatter, (s, b, v.c, t, op, MPI_COMM_WORLD),
         (s, b, v.cc, t, op, MPI_COMM_WORLD));
    same(b, w, 2, d, "reduce_scatter");
    free(b);
    free(w);
    free(s);
    /* reduce_local */
    s = blank(d, n);
    b = blank(d, n);
    w = blank(d, n);
    for (int k = 0; k < n; k++) {
        put(d, s, k, 1, k);
        put(d, b, k, 2, k);
        put_sum(d, w, k, 1, 3, k);
    }
    if (mode >= 2) OK(MPI_Reduce_local_c(s, b, n, t, op));
    else OK(MPI_Reduce_local(s, b, n, t, op));
    same(b, w, n, d, "reduce_local");
    free(b);
    free(w);
    free(s);
}

static void sum_c(void *in, void *inout, MPI_Count *len, MPI_Datatype *t) {
    CHECK(*t == MPI_INT);
    int *x = in, *y = inout;
    for (MPI_Count i = 0; i < *len; i++) y[i] += x[i];
}

/* A user sum over the ints of the type `user_d` describes, in its
 * layout. */
static const tdesc *user_d;

static void sum_typed(void *in, void *inout, int *len, MPI_Datatype *t) {
    CHECK(*t == user_d->t);
    int *x = in, *y = inout;
    for (int i = 0; i < *len; i++)
        for (int j = 0; j < user_d->per; j++) {
            int at = i * user_d->ext + user_d->off[j];
            y[at] += x[at];
        }
}

int main(int argc, char **argv) {
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    check_rank = rank;
    CHECK(size <= MAXE);

    tdesc ds[6];
    int nd = 0;
    MPI_Datatype t, u;
    OK(MPI_Type_vector(2, 1, 2, MPI_INT, &t));
    ds[nd++] = (tdesc){"vector", t, 2, 3, {0, 2}};
    int bl[2] = {1, 2}, di[2] = {0, 3};
    OK(MPI_Type_indexed(2, bl, di, MPI_INT, &t));
    ds[nd++] = (tdesc){"indexed", t, 3, 5, {0, 3, 4}};
    int sbl[2] = {1, 1};
    MPI_Aint sd[2] = {0, 8};
    MPI_Datatype st[2] = {MPI_INT, MPI_INT};
    OK(MPI_Type_create_struct(2, sbl, sd, st, &u));
    OK(MPI_Type_create_resized(u, 0, 16, &t));
    OK(MPI_Type_free(&u));
    ds[nd++] = (tdesc){"struct", t, 2, 4, {0, 2}};
    OK(MPI_Type_create_resized(MPI_INT, 0, 8, &t));
    ds[nd++] = (tdesc){"resized", t, 1, 2, {0}};
    int sizes[2] = {3, 4}, sub[2] = {2, 2}, starts[2] = {1, 1};
    OK(MPI_Type_create_subarray(2, sizes, sub, starts, MPI_ORDER_C, MPI_INT, &t));
    ds[nd++] = (tdesc){"subarray", t, 4, 12, {5, 6, 9, 10}};
    OK(MPI_Type_contiguous(3, MPI_INT, &t));
    ds[nd++] = (tdesc){"contiguous", t, 3, 3, {0, 1, 2}};
    for (int i = 0; i < nd; i++) OK(MPI_Type_commit(&ds[i].t));

    for (int i = 0; i < nd; i++)
        for (int mode = 0; mode < 4; mode++) {
            rooted(&ds[i], mode);
            everyone(&ds[i], mode);
            reductions(&ds[i], mode, MPI_SUM);
        }
    /* user operations (commutative or not) get the elements in their
     * type's layout */
    for (int commute = 0; commute < 2; commute++) {
        MPI_Op user;
        OK(MPI_Op_create(sum_typed, commute, &user));
        for (int i = 0; i < nd; i++) {
            user_d = &ds[i];
            for (int mode = 0; mode < 4; mode++) reductions(&ds[i], mode, user);
        }
        OK(MPI_Op_free(&user));
    }

    /* MPI_Op_create_c: a user function with an MPI_Count length, on a
     * contiguous type, blocking and nonblocking */
    MPI_Op op;
    OK(MPI_Op_create_c(sum_c, 1, &op));
    int x[5], y[5];
    for (int k = 0; k < 5; k++) x[k] = rank + k;
    OK(MPI_Allreduce_c(x, y, 5, MPI_INT, op, MPI_COMM_WORLD));
    for (int k = 0; k < 5; k++) CHECK(y[k] == size * (size - 1) / 2 + size * k);
    MPI_Request q;
    OK(MPI_Iallreduce(x, y, 5, MPI_INT, op, MPI_COMM_WORLD, &q));
    OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
    for (int k = 0; k < 5; k++) CHECK(y[k] == size * (size - 1) / 2 + size * k);
    OK(MPI_Op_free(&op));
    CHECK(op == MPI_OP_NULL);

    /* a predefined operation on a derived type of two primitive types:
     * MPI_ERR_OP, the buffer untouched */
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MPI_Datatype mixed, mt[2] = {MPI_INT, MPI_DOUBLE};
    MPI_Aint md[2] = {0, 8};
    OK(MPI_Type_create_struct(2, sbl, md, mt, &mixed));
    OK(MPI_Type_commit(&mixed));
    int ms[4] = {1, 2, 3, 4}, mr[4] = {SENT, SENT, SENT, SENT};
    int cls, rc = MPI_Allreduce(ms, mr, 1, mixed, MPI_SUM, MPI_COMM_WORLD);
    OK(MPI_Error_class(rc, &cls));
    CHECK(cls == MPI_ERR_OP);
    for (int i = 0; i < 4; i++) CHECK(mr[i] == SENT);
    OK(MPI_Type_free(&mixed));

    for (int i = 0; i < nd; i++) OK(MPI_Type_free(&ds[i].t));
    OK(MPI_Finalize());
    return 0;
}
