/* Collectives, reductions and communicators (MPI 5.0 chapters 6 and 7):
 * every collective at every root, MPI_IN_PLACE, every predefined
 * operation on its type groups, a user operation, contiguous types, long
 * reductions cut only between elements, and dup/split/compare/free. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include "check.h"

static void absmax(void *in, void *inout, int *len, MPI_Datatype *t) {
    CHECK(*t == MPI_DOUBLE);
    double *a = in, *b = inout;
    for (int i = 0; i < *len; i++) {
        double x = a[i] < 0 ? -a[i] : a[i], y = b[i] < 0 ? -b[i] : b[i];
        b[i] = x > y ? x : y;
    }
}

static int rank, size;

/* Allreduce of one value per rank (v(r)) with op, compared with want. */
#define REDUCE_CHECK(T, MT, OP, v, want)                                    \
    do {                                                                    \
        T mine_ = (T)(v), got_ = 0, want_ = (T)(want);                      \
        OK(MPI_Allreduce(&mine_, &got_, 1, MT, OP, MPI_COMM_WORLD));        \
        CHECK(got_ == want_);                                               \
    } while (0)

static void ops(void) {
    long long sum = 0, prod = 1;
    for (int r = 0; r < size; r++) { sum += r + 1; prod *= (r % 3) + 1; }
    REDUCE_CHECK(int, MPI_INT, MPI_SUM, rank + 1, sum);
    REDUCE_CHECK(long, MPI_LONG, MPI_SUM, rank + 1, sum);
    REDUCE_CHECK(long long, MPI_LONG_LONG, MPI_SUM, rank + 1, sum);
    REDUCE_CHECK(unsigned, MPI_UNSIGNED, MPI_SUM, rank + 1, sum);
    REDUCE_CHECK(short, MPI_SHORT, MPI_SUM, rank + 1, sum);
    REDUCE_CHECK(unsigned short, MPI_UNSIGNED_SHORT, MPI_SUM, rank + 1, sum);
    REDUCE_CHECK(unsigned long, MPI_UNSIGNED_LONG, MPI_SUM, rank + 1, sum);
    REDUCE_CHECK(unsigned long long, MPI_UNSIGNED_LONG_LONG, MPI_SUM, rank + 1, sum);
    REDUCE_CHECK(int64_t, MPI_INT64_T, MPI_SUM, rank + 1, sum);
    REDUCE_CHECK(uint8_t, MPI_UINT8_T, MPI_SUM, rank + 1, sum);
    REDUCE_CHECK(signed char, MPI_SIGNED_CHAR, MPI_SUM, rank + 1, sum);
    REDUCE_CHECK(unsigned char, MPI_UNSIGNED_CHAR, MPI_SUM, rank + 1, sum);
    REDUCE_CHECK(int16_t, MPI_INT16_T, MPI_SUM, rank + 1, sum);
    REDUCE_CHECK(uint32_t, MPI_UINT32_T, MPI_SUM, rank + 1, sum);
    REDUCE_CHECK(float, MPI_FLOAT, MPI_SUM, rank + 1, sum);
    REDUCE_CHECK(double, MPI_DOUBLE, MPI_SUM, rank + 1, sum);
    REDUCE_CHECK(int, MPI_INT, MPI_PROD, (rank % 3) + 1, prod);
    REDUCE_CHECK(double, MPI_DOUBLE, MPI_PROD, (rank % 3) + 1, prod);
    REDUCE_CHECK(int, MPI_INT, MPI_MAX, rank * 7 - 3, (size - 1) * 7 - 3);
    REDUCE_CHECK(int, MPI_INT, MPI_MIN, rank * 7 - 3, -3);
    REDUCE_CHECK(double, MPI_DOUBLE, MPI_MAX, rank * 1.5, (size - 1) * 1.5);
    REDUCE_CHECK(float, MPI_FLOAT, MPI_MIN, rank - 0.25, -0.25);
    REDUCE_CHECK(uint64_t, MPI_UINT64_T, MPI_MAX, rank, size - 1);
    /* Logical: true on rank 0 only, and true everywhere. */
    REDUCE_CHECK(int, MPI_INT, MPI_LAND, rank == 0, size == 1);
    REDUCE_CHECK(int, MPI_INT, MPI_LOR, rank == 0, 1);
    REDUCE_CHECK(int, MPI_INT, MPI_LXOR, 1, size % 2);
    REDUCE_CHECK(bool, MPI_C_BOOL, MPI_LAND, true, true);
    REDUCE_CHECK(bool, MPI_C_BOOL, MPI_LOR, rank == size - 1, true);
    REDUCE_CHECK(bool, MPI_C_BOOL, MPI_LXOR, true, size % 2);
    /* Bitwise: bit r set on rank r. */
    unsigned all = 0, x = 0;
    for (int r = 0; r < size; r++) { all |= 1u << r; x ^= (1u << r) | 1u; }
    REDUCE_CHECK(unsigned, MPI_UNSIGNED, MPI_BOR, 1u << rank, all);
    REDUCE_CHECK(unsigned, MPI_UNSIGNED, MPI_BAND, (1u << rank) | 0x100u, size == 1 ? 0x101u : 0x100u);
    REDUCE_CHECK(unsigned, MPI_UNSIGNED, MPI_BXOR, (1u << rank) | 1u, x);
    REDUCE_CHECK(unsigned char, MPI_BYTE, MPI_BOR, 1u << (rank % 8), size >= 8 ? 0xff : (1u << size) - 1);
    REDUCE_CHECK(long, MPI_LONG, MPI_BAND, -1L, -1L);
    REDUCE_CHECK(int8_t, MPI_INT8_T, MPI_BXOR, 1, size % 2);

    /* A commutative user operation; IN_PLACE. */
    MPI_Op op;
    OK(MPI_Op_create(absmax, 1, &op));
    double v[3] = {-(double)rank, rank * 0.5, 1.0}, out[3];
    OK(MPI_Allreduce(v, out, 3, MPI_DOUBLE, op, MPI_COMM_WORLD));
    CHECK(out[0] == size - 1 && out[1] == (size - 1) * 0.5 && out[2] == 1.0);
    OK(MPI_Reduce(v, out, 3, MPI_DOUBLE, op, size - 1, MPI_COMM_WORLD));
    if (rank == size - 1) CHECK(out[0] == size - 1);
    OK(MPI_Op_free(&op));
    CHECK(op == MPI_OP_NULL);
    int s = rank;
    OK(MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(s == size * (size - 1) / 2);
}

/* Long vectors, which o2g's allreduce and reduce cut into blocks (from
 * 64 KiB): of doubles, and of a contiguous type of three doubles, with
 * counts whose byte-wise blocks would end inside an element on 2, 3, 4
 * and 8 ranks. Blocks must be cut between elements (the datatype's
 * extent): a predefined operation would misread doubles cut in two, and
 * the user operation compares whole triples. */
static MPI_Datatype tri;

static double dval(int r, int i) { return (double)((i * 7 + r * 13) % 101) + r * 0.5; }

static bool tri_greater(const double *a, const double *b) {
    return a[0] != b[0] ? a[0] > b[0] : a[1] != b[1] ? a[1] > b[1] : a[2] > b[2];
}

/* Lexicographic maximum of triples: no element of a triple is combined
 * on its own. */
static void trimax(void *in, void *inout, int *len, MPI_Datatype *t) {
    CHECK(*t == tri);
    double *a = in, *b = inout;
    for (int i = 0; i < *len; i++, a += 3, b += 3)
        if (tri_greater(a, b)) memcpy(b, a, 3 * sizeof(double));
}

static void triple(int r, int i, double *t) {
    t[0] = (i * 5 + r * 3) % 7;
    t[1] = (r * 5 + i) % size;
    t[2] = r;
}

/* out[i] against the sum (or the maximum) of dval(r, i) over r. */
static void check_doubles(const double *out, int n, MPI_Op op) {
    for (int i = 0; i < n; i++) {
        double want = dval(0, i);
        for (int r = 1; r < size; r++) {
            double x = dval(r, i);
            want = op == MPI_SUM ? want + x : (x > want ? x : want);
        }
        CHECK(out[i] == want);
    }
}

static void large_reductions(void) {
    enum { N = 9001, T = 3001 };
    double *v = malloc(sizeof(double) * N), *out = malloc(sizeof(double) * N),
           *tv = malloc(sizeof(double) * 3 * T), *tout = malloc(sizeof(double) * 3 * T);
    CHECK(v && out && tv && tout);
    OK(MPI_Type_contiguous(3, MPI_DOUBLE, &tri));
    OK(MPI_Type_commit(&tri));
    for (int i = 0; i < N; i++) v[i] = dval(rank, i);
    for (int i = 0; i < 3 * T; i++) tv[i] = dval(rank, i);
    MPI_Op ops[2] = {MPI_SUM, MPI_MAX};
    for (int k = 0; k < 2; k++) {
        memset(out, 0, sizeof(double) * N);
        OK(MPI_Allreduce(v, out, N, MPI_DOUBLE, ops[k], MPI_COMM_WORLD));
        check_doubles(out, N, ops[k]);
        memset(tout, 0, sizeof(double) * 3 * T);
        OK(MPI_Allreduce(tv, tout, T, tri, ops[k], MPI_COMM_WORLD));
        check_doubles(tout, 3 * T, ops[k]);
        int roots[2] = {0, size - 1};
        for (int j = 0; j < 2; j++) {
            int root = roots[j];
            memset(out, 0, sizeof(double) * N);
            OK(MPI_Reduce(v, out, N, MPI_DOUBLE, ops[k], root, MPI_COMM_WORLD));
            if (rank == root) check_doubles(out, N, ops[k]);
            memset(tout, 0, sizeof(double) * 3 * T);
            OK(MPI_Reduce(tv, tout, T, tri, ops[k], root, MPI_COMM_WORLD));
            if (rank == root) check_doubles(tout, 3 * T, ops[k]);
        }
    }
    memcpy(out, v, sizeof(double) * N);
    OK(MPI_Allreduce(MPI_IN_PLACE, out, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    check_doubles(out, N, MPI_SUM);

    /* A user operation on whole triples. */
    MPI_Op op;
    OK(MPI_Op_create(trimax, 1, &op));
    for (int i = 0; i < T; i++) triple(rank, i, tv + 3 * i);
    int to[3] = {-1, 0, size - 1}; /* -1: allreduce */
    for (int j = 0; j < 3; j++) {
        int root = to[j];
        memset(tout, 0, sizeof(double) * 3 * T);
        if (root < 0)
            OK(MPI_Allreduce(tv, tout, T, tri, op, MPI_COMM_WORLD));
        else
            OK(MPI_Reduce(tv, tout, T, tri, op, root, MPI_COMM_WORLD));
        if (root >= 0 && rank != root) continue;
        for (int i = 0; i < T; i++) {
            double want[3], t[3];
            triple(0, i, want);
            for (int r = 1; r < size; r++) {
                triple(r, i, t);
                if (tri_greater(t, want)) memcpy(want, t, sizeof want);
            }
            CHECK(memcmp(tout + 3 * i, want, sizeof want) == 0);
        }
    }
    OK(MPI_Op_free(&op));
    OK(MPI_Type_free(&tri));
    free(v);
    free(out);
    free(tv);
    free(tout);
}

static void rooted(void) {
    int n = 3, *big = malloc(sizeof(int) * n * size), mine[3], *counts = malloc(sizeof(int) * size),
        *displs = malloc(sizeof(int) * size);
    for (int root = 0; root < size; root++) {
        /* Bcast */
        int b[2] = {rank == root ? root * 11 : -1, rank == root ? 5 : -1};
        OK(MPI_Bcast(b, 2, MPI_INT, root, MPI_COMM_WORLD));
        CHECK(b[0] == root * 11 && b[1] == 5);
        /* Reduce, plain and IN_PLACE at the root */
        double d = rank, r = -1;
        OK(MPI_Reduce(&d, &r, 1, MPI_DOUBLE, MPI_SUM, root, MPI_COMM_WORLD));
        if (rank == root) CHECK(r == size * (size - 1) / 2.0);
        int iv = rank + 1, ir = iv;
        OK(MPI_Reduce(rank == root ? MPI_IN_PLACE : &iv, &ir, 1, MPI_INT, MPI_MAX, root, MPI_COMM_WORLD));
        if (rank == root) CHECK(ir == size);
        /* Gather and Gather IN_PLACE */
        for (int i = 0; i < n; i++) mine[i] = rank * 100 + i;
        memset(big, 0xff, sizeof(int) * n * size);
        OK(MPI_Gather(mine, n, MPI_INT, big, n, MPI_INT, root, MPI_COMM_WORLD));
        if (rank == root)
            for (int i = 0; i < n * size; i++) CHECK(big[i] == (i / n) * 100 + i % n);
        if (rank == root) memcpy(big + root * n, mine, sizeof mine);
        OK(MPI_Gather(rank == root ? MPI_IN_PLACE : mine, n, MPI_INT, big, n, MPI_INT, root, MPI_COMM_WORLD));
        if (rank == root)
            for (int i = 0; i < n * size; i++) CHECK(big[i] == (i / n) * 100 + i % n);
        /* Gatherv: rank i sends i % 3 + 1 ints, packed in reverse order */
        int off = 0;
        for (int i = size - 1; i >= 0; i--) { counts[i] = i % 3 + 1; displs[i] = off; off += counts[i]; }
        int *gv = malloc(sizeof(int) * (off + 1));
        OK(MPI_Gatherv(mine, rank % 3 + 1, MPI_INT, gv, counts, displs, MPI_INT, root, MPI_COMM_WORLD));
        if (rank == root)
            for (int i = 0; i < size; i++)
                for (int j = 0; j < counts[i]; j++) CHECK(gv[displs[i] + j] == i * 100 + j);
        /* Scatterv back the same blocks */
        int back[3] = {-1, -1, -1};
        OK(MPI_Scatterv(gv, counts, displs, MPI_INT, back, rank % 3 + 1, MPI_INT, root, MPI_COMM_WORLD));
        if (rank == root)
            for (int j = 0; j < rank % 3 + 1; j++) CHECK(back[j] == rank * 100 + j);
        free(gv);
        /* Scatter and Scatter IN_PLACE */
        if (rank == root)
            for (int i = 0; i < n * size; i++) big[i] = i * 3;
        int got[3] = {-1, -1, -1};
        OK(MPI_Scatter(big, n, MPI_INT, got, n, MPI_INT, root, MPI_COMM_WORLD));
        for (int j = 0; j < n; j++) CHECK(got[j] == (rank * n + j) * 3);
        OK(MPI_Scatter(big, n, MPI_INT, rank == root ? MPI_IN_PLACE : got, n, MPI_INT, root, MPI_COMM_WORLD));
        for (int j = 0; j < n; j++) CHECK(got[j] == (rank * n + j) * 3);
    }
    free(big);
    free(counts);
    free(displs);
}

static void everyone(void) {
    int *all = malloc(sizeof(int) * 2 * size), *counts = malloc(sizeof(int) * size),
        *displs = malloc(sizeof(int) * size), mine[2] = {rank, -rank};
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Allgather(mine, 2, MPI_INT, all, 2, MPI_INT, MPI_COMM_WORLD));
    for (int i = 0; i < size; i++) CHECK(all[2 * i] == i && all[2 * i + 1] == -i);
    memset(all, 0, sizeof(int) * 2 * size);
    all[2 * rank] = rank;
    all[2 * rank + 1] = -rank;
    OK(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, 2, MPI_INT, MPI_COMM_WORLD));
    for (int i = 0; i < size; i++) CHECK(all[2 * i] == i && all[2 * i + 1] == -i);
    /* Allgatherv: rank i gives i % 2 + 1 ints */
    int off = 0;
    for (int i = 0; i < size; i++) { counts[i] = i % 2 + 1; displs[i] = off; off += counts[i]; }
    OK(MPI_Allgatherv(mine, rank % 2 + 1, MPI_INT, all, counts, displs, MPI_INT, MPI_COMM_WORLD));
    for (int i = 0; i < size; i++) {
        CHECK(all[displs[i]] == i);
        if (counts[i] == 2) CHECK(all[displs[i] + 1] == -i);
    }
    /* Alltoall, through a contiguous type on the send side */
    int *s = malloc(sizeof(int) * 2 * size), *r = malloc(sizeof(int) * 2 * size);
    for (int i = 0; i < size; i++) { s[2 * i] = rank * 1000 + i; s[2 * i + 1] = i; }
    MPI_Datatype pair;
    OK(MPI_Type_contiguous(2, MPI_INT, &pair));
    OK(MPI_Type_commit(&pair));
    OK(MPI_Alltoall(s, 1, pair, r, 2, MPI_INT, MPI_COMM_WORLD));
    for (int i = 0; i < size; i++) CHECK(r[2 * i] == i * 1000 + rank && r[2 * i + 1] == rank);
    OK(MPI_Type_free(&pair));
    memcpy(r, s, sizeof(int) * 2 * size);
    OK(MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r, 2, MPI_INT, MPI_COMM_WORLD));
    for (int i = 0; i < size; i++) CHECK(r[2 * i] == i * 1000 + rank);
    /* Alltoallv: rank i sends j % 2 + 1 ints to rank j */
    int *sc = malloc(sizeof(int) * size), *sd = malloc(sizeof(int) * size),
        *rc = malloc(sizeof(int) * size), *rd = malloc(sizeof(int) * size);
    int so = 0, ro = 0;
    for (int j = 0; j < size; j++) {
        sc[j] = j % 2 + 1; sd[j] = so; so += sc[j];
        rc[j] = rank % 2 + 1; rd[j] = ro; ro += rc[j];
    }
    int *sv = malloc(sizeof(int) * so), *rv = malloc(sizeof(int) * ro);
    for (int j = 0; j < size; j++)
        for (int k = 0; k < sc[j]; k++) sv[sd[j] + k] = rank * 100 + j * 10 + k;
    OK(MPI_Alltoallv(sv, sc, sd, MPI_INT, rv, rc, rd, MPI_INT, MPI_COMM_WORLD));
    for (int j = 0; j < size; j++)
        for (int k = 0; k < rc[j]; k++) CHECK(rv[rd[j] + k] == j * 100 + rank * 10 + k);
    free(sv); free(rv); free(sc); free(sd); free(rc); free(rd);
    free(s); free(r); free(all); free(counts); free(displs);
}

static void communicators(void) {
    int res, n, r;
    OK(MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_WORLD, &res));
    CHECK(res == MPI_IDENT);
    OK(MPI_Comm_size(MPI_COMM_SELF, &n));
    OK(MPI_Comm_rank(MPI_COMM_SELF, &r));
    CHECK(n == 1 && r == 0);
    OK(MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_SELF, &res));
    CHECK(res == (size == 1 ? MPI_CONGRUENT : MPI_UNEQUAL));
    MPI_Comm dup, half, rev, none;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    OK(MPI_Comm_compare(MPI_COMM_WORLD, dup, &res));
    CHECK(res == MPI_CONGRUENT);
    OK(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half));
    OK(MPI_Comm_size(half, &n));
    OK(MPI_Comm_rank(half, &r));
    CHECK(n == (size + 1 - rank % 2) / 2 && r == rank / 2);
    int sum = 0;
    OK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, half));
    int want = 0;
    for (int i = rank % 2; i < size; i += 2) want += i;
    CHECK(sum == want);
    OK(MPI_Comm_split(dup, 0, -rank, &rev));
    OK(MPI_Comm_rank(rev, &r));
    CHECK(r == size - 1 - rank);
    OK(MPI_Comm_compare(MPI_COMM_WORLD, rev, &res));
    CHECK(res == (size == 1 ? MPI_CONGRUENT : MPI_SIMILAR));
    OK(MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? 0 : MPI_UNDEFINED, 0, &none));
    CHECK(rank == 0 ? none != MPI_COMM_NULL : none == MPI_COMM_NULL);
    if (none != MPI_COMM_NULL) OK(MPI_Comm_free(&none));
    int b = rank == 0 ? 99 : 0;
    OK(MPI_Bcast(&b, 1, MPI_INT, size - 1 - 0, rev)); /* rank 0 of world is last in rev */
    CHECK(b == 99);
    OK(MPI_Comm_free(&rev));
    OK(MPI_Comm_free(&half));
    OK(MPI_Comm_free(&dup));
    CHECK(dup == MPI_COMM_NULL && half == MPI_COMM_NULL);
}

int main(int argc, char **argv) {
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    check_rank = rank;
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    ops();
    large_reductions();
    rooted();
    everyone();
    communicators();
    OK(MPI_Finalize());
    if (rank == 0) printf("coll: ok on %d ranks\n", size);
    return 0;
}
