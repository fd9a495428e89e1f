/* Reductions beyond reduce/allreduce (MPI 5.0 §6.9-6.11): scan, exscan,
 * reduce_scatter(_block), alltoallw (also with negative displacements,
 * as alltoallv), reduce_local, MPI_Op_commutative,
 * non-commutative user operations in rank order (2x2 matrix products),
 * MINLOC/MAXLOC on every C pair type, complex and long double
 * arithmetic, the MPI_Aint/Count/Offset types; each checked against a
 * value computed here. */
#include <complex.h>
#include <stdint.h>
#include <string.h>
#include "check.h"

static int rank, size;

/* 2x2 matrices modulo 2^64. */
typedef struct { uint64_t a, b, c, d; } mat;

static mat mul(mat x, mat y) {
    mat z = {x.a * y.a + x.b * y.c, x.a * y.b + x.b * y.d,
             x.c * y.a + x.d * y.c, x.c * y.b + x.d * y.d};
    return z;
}

static mat mat_of(int r, int i) {
    mat m = {(uint64_t)r + 1, (uint64_t)i + 2, (uint64_t)(3 * r + i + 1), (uint64_t)(7 - r)};
    return m;
}

static mat product(int from, int to, int i) { /* ranks from..to-1 in order */
    mat m = {1, 0, 0, 1};
    for (int r = from; r < to; r++) m = mul(m, mat_of(r, i));
    return m;
}

static int same(mat x, mat y) { return x.a == y.a && x.b == y.b && x.c == y.c && x.d == y.d; }

static MPI_Datatype mat_type;

static void matmul(void *in, void *inout, int *len, MPI_Datatype *t) {
    CHECK(*t == mat_type);
    mat *x = in, *y = inout;
    for (int i = 0; i < *len; i++) y[i] = mul(x[i], y[i]);
}

static void commutative_sum(void *in, void *inout, int *len, MPI_Datatype *t) {
    (void)t;
    int *x = in, *y = inout;
    for (int i = 0; i < *len; i++) y[i] += x[i];
}

enum { N = 3 };

static void noncommutative(MPI_Op op) {
    mat mine[N], got[N];
    for (int i = 0; i < N; i++) mine[i] = mat_of(rank, i);
    OK(MPI_Allreduce(mine, got, N, mat_type, op, MPI_COMM_WORLD));
    for (int i = 0; i < N; i++) CHECK(same(got[i], product(0, size, i)));
    for (int root = 0; root < size; root++) {
        memset(got, 0, sizeof got);
        OK(MPI_Reduce(mine, got, N, mat_type, op, root, MPI_COMM_WORLD));
        if (rank == root)
            for (int i = 0; i < N; i++) CHECK(same(got[i], product(0, size, i)));
    }
    /* In place at the root. */
    memcpy(got, mine, sizeof got);
    OK(MPI_Reduce(rank == 0 ? MPI_IN_PLACE : mine, got, N, mat_type, op, 0, MPI_COMM_WORLD));
    if (rank == 0)
        for (int i = 0; i < N; i++) CHECK(same(got[i], product(0, size, i)));
    OK(MPI_Scan(mine, got, N, mat_type, op, MPI_COMM_WORLD));
    for (int i = 0; i < N; i++) CHECK(same(got[i], product(0, rank + 1, i)));
    memcpy(got, mine, sizeof got);
    OK(MPI_Scan(MPI_IN_PLACE, got, N, mat_type, op, MPI_COMM_WORLD));
    for (int i = 0; i < N; i++) CHECK(same(got[i], product(0, rank + 1, i)));
    OK(MPI_Exscan(mine, got, N, mat_type, op, MPI_COMM_WORLD));
    if (rank > 0)
        for (int i = 0; i < N; i++) CHECK(same(got[i], product(0, rank, i)));
    /* Reduce_scatter_block: block r is matrices 2r, 2r+1. */
    mat all[64], two[2];
    for (int i = 0; i < 2 * size; i++) all[i] = mat_of(rank, i);
    OK(MPI_Reduce_scatter_block(all, two, 2, mat_type, op, MPI_COMM_WORLD));
    for (int k = 0; k < 2; k++) CHECK(same(two[k], product(0, size, 2 * rank + k)));
    /* Reduce_local: inout = in o inout. */
    mat x = mat_of(1, 1), y = mat_of(2, 5), want = mul(x, y);
    OK(MPI_Reduce_local(&x, &y, 1, mat_type, op));
    CHECK(same(y, want));
}

static void scans_and_scatters(void) {
    int x = rank + 1, y = -1, sum = (rank + 1) * (rank + 2) / 2;
    OK(MPI_Scan(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(y == sum);
    y = -1;
    OK(MPI_Exscan(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(rank == 0 ? y == -1 : y == sum - (rank + 1));
    y = x;
    OK(MPI_Exscan(MPI_IN_PLACE, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(rank == 0 || y == sum - (rank + 1));
    /* Reduce_scatter: rank i gets i % 3 + 1 ints. */
    int counts[64], total = 0, start = 0;
    for (int i = 0; i < size; i++) {
        counts[i] = i % 3 + 1;
        if (i < rank) start += counts[i];
        total += counts[i];
    }
    int in[256], out[256];
    for (int k = 0; k < total; k++) in[k] = rank * 1000 + k;
    for (int k = 0; k < 4; k++) out[k] = -7;
    OK(MPI_Reduce_scatter(in, out, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    int rsum = size * (size - 1) / 2 * 1000;
    for (int k = 0; k < counts[rank]; k++) CHECK(out[k] == rsum + size * (start + k));
    CHECK(out[counts[rank]] == -7);
    memcpy(out, in, sizeof(int) * total);
    OK(MPI_Reduce_scatter(MPI_IN_PLACE, out, counts, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
    for (int k = 0; k < counts[rank]; k++) CHECK(out[k] == (size - 1) * 1000 + start + k);
    for (int k = 0; k < 2 * size; k++) in[k] = rank + k;
    OK(MPI_Reduce_scatter_block(in, out, 2, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    CHECK(out[0] == 2 * rank && out[1] == 2 * rank + 1);
    memcpy(out, in, sizeof(int) * 2 * size);
    OK(MPI_Reduce_scatter_block(MPI_IN_PLACE, out, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(out[0] == rsum / 1000 + size * 2 * rank);
}

/* Alltoallw: rank r sends (r + 1) elements of type T(d) to rank d, where
 * T is MPI_INT for even d and MPI_SHORT for odd d, at byte displacements
 * with gaps. */
static void alltoallw(void) {
    char sbuf[4096], rbuf[4096];
    int sc[64], sd[64], rc[64], rd[64];
    MPI_Datatype st[64], rt[64];
    MPI_Datatype mine = rank % 2 ? MPI_SHORT : MPI_INT;
    int msz = rank % 2 ? 2 : 4, at = 0;
    for (int d = 0; d < size; d++) {
        st[d] = d % 2 ? MPI_SHORT : MPI_INT;
        int sz = d % 2 ? 2 : 4;
        sc[d] = rank + 1;
        sd[d] = at;
        for (int k = 0; k <= rank; k++) {
            if (sz == 4) { int v = rank * 100 + d * 10 + k; memcpy(sbuf + at + 4 * k, &v, 4); }
            else { short v = (short)(rank * 100 + d * 10 + k); memcpy(sbuf + at + 2 * k, &v, 2); }
        }
        at += sz * (rank + 1) + 4;
    }
    at = 0;
    for (int s = 0; s < size; s++) {
        rt[s] = mine;
        rc[s] = s + 1;
        rd[s] = at;
        at += msz * (s + 1) + 2;
    }
    memset(rbuf, 0x5a, sizeof rbuf);
    OK(MPI_Alltoallw(sbuf, sc, sd, st, rbuf, rc, rd, rt, MPI_COMM_WORLD));
    for (int s = 0; s < size; s++) {
        for (int k = 0; k <= s; k++) {
            if (msz == 4) { int v; memcpy(&v, rbuf + rd[s] + 4 * k, 4); CHECK(v == s * 100 + rank * 10 + k); }
            else { short v; memcpy(&v, rbuf + rd[s] + 2 * k, 2); CHECK(v == (short)(s * 100 + rank * 10 + k)); }
        }
        CHECK(rbuf[rd[s] + msz * (s + 1)] == 0x5a);
    }
}

/* Alltoallw and Alltoallv with negative displacements, which are
 * relative to the buffer's address (§6.8): rank r sends element k of its
 * block for d as r * 100 + d * 10 + k. `how` 0: MPI_INT both ways (the
 * user's memory, no copy); 1: a vector of two ints with a gap (extent
 * 3 ints) both ways (staged); 2: ints sent, vectors received; 3: vectors
 * sent, ints received. Blocks sit below the buffer's address for even
 * ranks, above it for odd ones (so displacements of both signs); every
 * value received is checked, and every int around them left as it was.
 * Each blocking and nonblocking, then an Alltoallv in ints. */
static void alltoall_negative(void) {
    enum { SEN = 0x5a5a5a5a, MAXP = 64 };
    static int sarea[8 * MAXP + 8], rarea[8 * MAXP + 8];
    int *sbuf = sarea + 4 * MAXP + 4, *rbuf = rarea + 4 * MAXP + 4;
    int sc[MAXP], sd[MAXP], rc[MAXP], rd[MAXP];
    MPI_Datatype st[MAXP], rt[MAXP], vec2;
    CHECK(size <= MAXP);
    OK(MPI_Type_vector(2, 1, 2, MPI_INT, &vec2));
    OK(MPI_Type_commit(&vec2));
    /* Block i at ints place(i) .. place(i) + 3 of the buffer (4 ints,
     * room for a vector and a gap). */
#define PLACE(i) ((i) % 2 ? 4 * ((i) / 2) : -4 * ((i) / 2 + 1))
    for (int how = 0; how < 4; how++) {
        for (int nb = 0; nb < 2; nb++) {
            int svec = how == 1 || how == 3, rvec = how == 1 || how == 2;
            for (int i = 0; i < 8 * MAXP + 8; i++) sarea[i] = rarea[i] = SEN;
            for (int d = 0; d < size; d++) {
                st[d] = svec ? vec2 : MPI_INT;
                sc[d] = svec ? 1 : 2;
                sd[d] = (int)sizeof(int) * PLACE(d);
                for (int k = 0; k < 2; k++)
                    sbuf[PLACE(d) + (svec ? 2 * k : k)] = rank * 100 + d * 10 + k;
                rt[d] = rvec ? vec2 : MPI_INT;
                rc[d] = rvec ? 1 : 2;
                rd[d] = (int)sizeof(int) * PLACE(size - 1 - d);
            }
            if (nb) {
                MPI_Request r;
                OK(MPI_Ialltoallw(sbuf, sc, sd, st, rbuf, rc, rd, rt, MPI_COMM_WORLD, &r));
                OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
            } else {
                OK(MPI_Alltoallw(sbuf, sc, sd, st, rbuf, rc, rd, rt, MPI_COMM_WORLD));
            }
            int want[8 * MAXP + 8];
            for (int i = 0; i < 8 * MAXP + 8; i++) want[i] = SEN;
            int *w = want + 4 * MAXP + 4;
            for (int s = 0; s < size; s++)
                for (int k = 0; k < 2; k++)
                    w[PLACE(size - 1 - s) + (rvec ? 2 * k : k)] = s * 100 + rank * 10 + k;
            for (int i = 0; i < 8 * MAXP + 8; i++) {
                if (rarea[i] != want[i]) {
                    fprintf(stderr, "rank %d: alltoallw how %d nb %d: int %d is %d, expected %d\n",
                            rank, how, nb, i - 4 * MAXP - 4, rarea[i], want[i]);
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
            }
        }
    }
    /* Alltoallv: 1 + d % 2 ints to rank d, displacements in ints. */
    for (int i = 0; i < 8 * MAXP + 8; i++) sarea[i] = rarea[i] = SEN;
    for (int d = 0; d < size; d++) {
        sc[d] = 1 + d % 2;
        sd[d] = PLACE(d);
        for (int k = 0; k < sc[d]; k++) sbuf[sd[d] + k] = rank * 100 + d * 10 + k;
        rc[d] = 1 + rank % 2;
        rd[d] = PLACE(size - 1 - d);
    }
    OK(MPI_Alltoallv(sbuf, sc, sd, MPI_INT, rbuf, rc, rd, MPI_INT, MPI_COMM_WORLD));
    for (int s = 0; s < size; s++)
        for (int k = 0; k < 4; k++)
            CHECK(rbuf[rd[s] + k] == (k < rc[s] ? s * 100 + rank * 10 + k : SEN));
#undef PLACE
    OK(MPI_Type_free(&vec2));
}

#define LOC_CHECK(VT, PT, MT)                                                      \
    do {                                                                           \
        struct { VT v; int i; } in_ = {(VT)((rank * 7) % 5), rank * 10}, mn_, mx_; \
        CHECK(sizeof in_ == sizeof(PT));                                           \
        OK(MPI_Allreduce(&in_, &mn_, 1, MT, MPI_MINLOC, MPI_COMM_WORLD));          \
        OK(MPI_Allreduce(&in_, &mx_, 1, MT, MPI_MAXLOC, MPI_COMM_WORLD));          \
        int lo = 99, hi = -1, lo_i = 0, hi_i = 0;                                  \
        for (int r = size - 1; r >= 0; r--) {                                      \
            int v = (r * 7) % 5;                                                   \
            if (v <= lo) { lo = v; lo_i = r * 10; }                                \
            if (v >= hi) { hi = v; hi_i = r * 10; }                                \
        }                                                                          \
        CHECK(mn_.v == (VT)lo && mn_.i == lo_i);                                   \
        CHECK(mx_.v == (VT)hi && mx_.i == hi_i);                                   \
    } while (0)

struct fi { float v; int i; };
struct di { double v; int i; };
struct li { long v; int i; };
struct ii { int v; int i; };
struct si { short v; int i; };
struct ldi { long double v; int i; };

static void pairs(void) {
    LOC_CHECK(float, struct fi, MPI_FLOAT_INT);
    LOC_CHECK(double, struct di, MPI_DOUBLE_INT);
    LOC_CHECK(long, struct li, MPI_LONG_INT);
    LOC_CHECK(int, struct ii, MPI_2INT);
    LOC_CHECK(short, struct si, MPI_SHORT_INT);
    LOC_CHECK(long double, struct ldi, MPI_LONG_DOUBLE_INT);
}

static void complex_and_long_double(void) {
    /* Gaussian integers: products stay exact. */
    float _Complex zf = (rank + 1) + (rank % 2 ? 1.0f : -1.0f) * I, sf, pf;
    double _Complex zd = zf, sd, pd;
    long double _Complex zl = zf, sl, pl;
    double _Complex wsum = 0, wprod = 1;
    for (int r = 0; r < size; r++) {
        double _Complex z = (r + 1) + (r % 2 ? 1.0 : -1.0) * I;
        wsum += z;
        wprod *= z;
    }
    OK(MPI_Allreduce(&zf, &sf, 1, MPI_C_FLOAT_COMPLEX, MPI_SUM, MPI_COMM_WORLD));
    OK(MPI_Allreduce(&zf, &pf, 1, MPI_C_FLOAT_COMPLEX, MPI_PROD, MPI_COMM_WORLD));
    OK(MPI_Allreduce(&zd, &sd, 1, MPI_C_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD));
    OK(MPI_Allreduce(&zd, &pd, 1, MPI_C_DOUBLE_COMPLEX, MPI_PROD, MPI_COMM_WORLD));
    OK(MPI_Allreduce(&zl, &sl, 1, MPI_C_LONG_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD));
    OK(MPI_Allreduce(&zl, &pl, 1, MPI_C_LONG_DOUBLE_COMPLEX, MPI_PROD, MPI_COMM_WORLD));
    CHECK(sf == (float _Complex)wsum && pf == (float _Complex)wprod);
    CHECK(sd == wsum && pd == wprod);
    CHECK(sl == (long double _Complex)wsum && pl == (long double _Complex)wprod);

    long double x = (rank + 1) * 0.5L, s, p, mx, mn, ws = 0, wp = 1;
    for (int r = 0; r < size; r++) { ws += (r + 1) * 0.5L; wp *= (r + 1) * 0.5L; }
    OK(MPI_Allreduce(&x, &s, 1, MPI_LONG_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    OK(MPI_Allreduce(&x, &p, 1, MPI_LONG_DOUBLE, MPI_PROD, MPI_COMM_WORLD));
    OK(MPI_Allreduce(&x, &mx, 1, MPI_LONG_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    OK(MPI_Allreduce(&x, &mn, 1, MPI_LONG_DOUBLE, MPI_MIN, MPI_COMM_WORLD));
    CHECK(s == ws && p == wp && mx == size * 0.5L && mn == 0.5L);
    /* A value only long double holds: 1 + 2^-60 summed stays exact. */
    long double tiny = 1.0L + 1.0L / (1ULL << 60), t;
    OK(MPI_Allreduce(&tiny, &t, 1, MPI_LONG_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    CHECK(t == size * tiny);
}

static void address_types(void) {
    MPI_Aint a = rank + 1, as;
    MPI_Count c = (MPI_Count)rank << 33, cs;
    MPI_Offset o = -(MPI_Offset)rank, om;
    OK(MPI_Allreduce(&a, &as, 1, MPI_AINT, MPI_SUM, MPI_COMM_WORLD));
    OK(MPI_Allreduce(&c, &cs, 1, MPI_COUNT, MPI_MAX, MPI_COMM_WORLD));
    OK(MPI_Allreduce(&o, &om, 1, MPI_OFFSET, MPI_MIN, MPI_COMM_WORLD));
    CHECK(as == (MPI_Aint)size * (size + 1) / 2);
    CHECK(cs == (MPI_Count)(size - 1) << 33 && om == -(MPI_Offset)(size - 1));
    uint8_t u8 = 200, u8s; int16_t i16 = -300, i16s;
    OK(MPI_Allreduce(&u8, &u8s, 1, MPI_UINT8_T, MPI_MAX, MPI_COMM_WORLD));
    OK(MPI_Allreduce(&i16, &i16s, 1, MPI_INT16_T, MPI_SUM, MPI_COMM_WORLD));
    CHECK(u8s == 200 && i16s == (int16_t)(-300 * size));
}

static void refused(void) {
    int x = 1, y, flag = -1;
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_REPLACE, MPI_COMM_WORLD) == MPI_ERR_OP);
    CHECK(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_NO_OP, MPI_COMM_WORLD) == MPI_ERR_OP);
    CHECK(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_MINLOC, MPI_COMM_WORLD) == MPI_ERR_OP);
    CHECK(MPI_Reduce_local(&x, &y, 1, MPI_C_DOUBLE_COMPLEX, MPI_MAX) == MPI_ERR_OP);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    OK(MPI_Op_commutative(MPI_SUM, &flag));
    CHECK(flag == 1);
    OK(MPI_Op_commutative(MPI_REPLACE, &flag));
    CHECK(flag == 0);
    y = 5;
    OK(MPI_Reduce_local(&x, &y, 1, MPI_INT, MPI_SUM));
    CHECK(y == 6);
}

int main(int argc, char **argv) {
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    check_rank = rank;
    OK(MPI_Type_contiguous(4, MPI_UINT64_T, &mat_type));
    OK(MPI_Type_commit(&mat_type));
    MPI_Op op, csum;
    int flag = -1;
    OK(MPI_Op_create(matmul, 0, &op));
    OK(MPI_Op_commutative(op, &flag));
    CHECK(flag == 0);
    OK(MPI_Op_create(commutative_sum, 1, &csum));
    OK(MPI_Op_commutative(csum, &flag));
    CHECK(flag == 1);
    noncommutative(op);
    scans_and_scatters();
    alltoallw();
    alltoall_negative();
    pairs();
    complex_and_long_double();
    address_types();
    refused();
    int v = rank, s;
    OK(MPI_Allreduce(&v, &s, 1, MPI_INT, csum, MPI_COMM_WORLD));
    CHECK(s == size * (size - 1) / 2);
    OK(MPI_Op_free(&op));
    OK(MPI_Op_free(&csum));
    OK(MPI_Type_free(&mat_type));
    OK(MPI_Finalize());
    return 0;
}
