/* Nonblocking collectives (MPI 5.0 §6.12): each one alone, completed by
 * MPI_Wait and by MPI_Test loops, with MPI_IN_PLACE; several outstanding
 * at once, completed by MPI_Waitall, MPI_Waitany and MPI_Testall in
 * another order than they were started, mixed with point-to-point
 * traffic and a blocking collective on the same communicator; a
 * non-commutative operation applied in rank order. */
#include <stdint.h>
#include <string.h>
#include "check.h"

static int rank, size;

static void wait_by_test(MPI_Request *r) {
    int flag = 0;
    while (!flag) OK(MPI_Test(r, &flag, MPI_STATUS_IGNORE));
    CHECK(*r == MPI_REQUEST_NULL);
}

/* inout = in o inout for the affine maps x -> a x + b (mod 2^64), which
 * do not commute: (f o g)(x) = f(g(x)). */
typedef struct { uint64_t a, b; } aff;

static aff compose(aff f, aff g) { aff h = {f.a * g.a, f.a * g.b + f.b}; return h; }

static aff aff_of(int r) { aff f = {(uint64_t)r + 2, (uint64_t)r * 3 + 1}; return f; }

static MPI_Datatype aff_type;

static void affine(void *in, void *inout, int *len, MPI_Datatype *t) {
    CHECK(*t == aff_type);
    aff *x = in, *y = inout;
    for (int i = 0; i < *len; i++) y[i] = compose(x[i], y[i]);
}

static aff ordered(int from, int to) {
    aff f = {1, 0};
    for (int r = from; r < to; r++) f = compose(f, aff_of(r));
    return f;
}

static void each(MPI_Op op) {
    MPI_Request r;
    OK(MPI_Ibarrier(MPI_COMM_WORLD, &r));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    CHECK(r == MPI_REQUEST_NULL);
    for (int root = 0; root < size; root++) {
        int buf[4] = {0, 0, 0, 0};
        if (rank == root) for (int k = 0; k < 4; k++) buf[k] = root * 10 + k;
        OK(MPI_Ibcast(buf, 4, MPI_INT, root, MPI_COMM_WORLD, &r));
        wait_by_test(&r);
        for (int k = 0; k < 4; k++) CHECK(buf[k] == root * 10 + k);
        aff mine = aff_of(rank), got = {0, 0}, want = ordered(0, size);
        OK(MPI_Ireduce(&mine, &got, 1, aff_type, op, root, MPI_COMM_WORLD, &r));
        OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        if (rank == root) CHECK(got.a == want.a && got.b == want.b);
        /* Gather, then scatter back. */
        int all[64], one[2] = {rank, -rank}, back[2];
        OK(MPI_Igather(one, 2, MPI_INT, all, 2, MPI_INT, root, MPI_COMM_WORLD, &r));
        OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        if (rank == root)
            for (int i = 0; i < size; i++) CHECK(all[2 * i] == i && all[2 * i + 1] == -i);
        OK(MPI_Iscatter(all, 2, MPI_INT, back, 2, MPI_INT, root, MPI_COMM_WORLD, &r));
        wait_by_test(&r);
        CHECK(back[0] == rank && back[1] == -rank);
        /* In place at the root. */
        if (rank == root) { all[2 * root] = 77; all[2 * root + 1] = 78; }
        OK(MPI_Igather(rank == root ? MPI_IN_PLACE : one, 2, MPI_INT, all, 2, MPI_INT, root,
                       MPI_COMM_WORLD, &r));
        OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        if (rank == root)
            for (int i = 0; i < size; i++)
                CHECK(i == root ? all[2 * i] == 77 : all[2 * i] == i);
        back[0] = back[1] = 5;
        OK(MPI_Iscatter(all, 2, MPI_INT, rank == root ? MPI_IN_PLACE : back, 2, MPI_INT, root,
                        MPI_COMM_WORLD, &r));
        OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        CHECK(rank == root ? back[0] == 5 : back[0] == rank);
        /* v variants: rank i contributes i + 1 ints at displacement 2i(+gaps). */
        int counts[64], displs[64], vbuf[4096], vs[64], vr[64];
        for (int i = 0; i < size; i++) { counts[i] = i + 1; displs[i] = i * (i + 1) / 2 + 2 * i; }
        for (int k = 0; k <= rank; k++) vs[k] = rank * 100 + k;
        for (int k = 0; k < 4096; k++) vbuf[k] = -1;
        OK(MPI_Igatherv(vs, rank + 1, MPI_INT, vbuf, counts, displs, MPI_INT, root,
                        MPI_COMM_WORLD, &r));
        OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        if (rank == root)
            for (int i = 0; i < size; i++) {
                for (int k = 0; k <= i; k++) CHECK(vbuf[displs[i] + k] == i * 100 + k);
                CHECK(vbuf[displs[i] + i + 1] == -1);
            }
        OK(MPI_Iscatterv(vbuf, counts, displs, MPI_INT, vr, rank + 1, MPI_INT, root,
                         MPI_COMM_WORLD, &r));
        OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        for (int k = 0; k <= rank; k++) CHECK(vr[k] == rank * 100 + k);
    }
    /* Allreduce, scan, exscan with the affine maps. */
    aff mine = aff_of(rank), got, w = ordered(0, size);
    OK(MPI_Iallreduce(&mine, &got, 1, aff_type, op, MPI_COMM_WORLD, &r));
    wait_by_test(&r);
    CHECK(got.a == w.a && got.b == w.b);
    got = mine;
    OK(MPI_Iallreduce(MPI_IN_PLACE, &got, 1, aff_type, op, MPI_COMM_WORLD, &r));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    CHECK(got.a == w.a && got.b == w.b);
    OK(MPI_Iscan(&mine, &got, 1, aff_type, op, MPI_COMM_WORLD, &r));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    w = ordered(0, rank + 1);
    CHECK(got.a == w.a && got.b == w.b);
    got.a = got.b = 99;
    OK(MPI_Iexscan(&mine, &got, 1, aff_type, op, MPI_COMM_WORLD, &r));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    w = ordered(0, rank);
    CHECK(rank == 0 ? got.a == 99 : got.a == w.a && got.b == w.b);
    /* Reduce_scatter(_block). */
    int counts[64], total = 0, start = 0, in[256], out[256];
    for (int i = 0; i < size; i++) {
        counts[i] = 2 - i % 2;
        if (i < rank) start += counts[i];
        total += counts[i];
    }
    for (int k = 0; k < total; k++) in[k] = rank + k;
    OK(MPI_Ireduce_scatter(in, out, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    for (int k = 0; k < counts[rank]; k++)
        CHECK(out[k] == size * (size - 1) / 2 + size * (start + k));
    OK(MPI_Ireduce_scatter_block(in, out, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &r));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    CHECK(out[0] == size - 1 + rank);
    memcpy(out, in, sizeof(int) * size);
    OK(MPI_Ireduce_scatter_block(MPI_IN_PLACE, out, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD, &r));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    CHECK(out[0] == rank);
    /* Allgather(v), alltoall(v,w). */
    int ag[64], mine2 = rank * 3;
    OK(MPI_Iallgather(&mine2, 1, MPI_INT, ag, 1, MPI_INT, MPI_COMM_WORLD, &r));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    for (int i = 0; i < size; i++) CHECK(ag[i] == i * 3);
    ag[rank] = -5;
    OK(MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ag, 1, MPI_INT, MPI_COMM_WORLD, &r));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    for (int i = 0; i < size; i++) CHECK(ag[i] == -5);
    int displs[64], vb[512];
    for (int i = 0; i < size; i++) { counts[i] = i % 2 + 1; displs[i] = 3 * i; }
    int vs[2] = {rank, rank + 1000};
    for (int k = 0; k < 3 * size; k++) vb[k] = -9;
    OK(MPI_Iallgatherv(vs, counts[rank], MPI_INT, vb, counts, displs, MPI_INT, MPI_COMM_WORLD, &r));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    for (int i = 0; i < size; i++) {
        CHECK(vb[3 * i] == i && vb[3 * i + 2] == -9);
        CHECK(vb[3 * i + 1] == (counts[i] == 2 ? i + 1000 : -9));
    }
    int sa[64], ra[64];
    for (int d = 0; d < size; d++) sa[d] = rank * 100 + d;
    OK(MPI_Ialltoall(sa, 1, MPI_INT, ra, 1, MPI_INT, MPI_COMM_WORLD, &r));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    for (int s = 0; s < size; s++) CHECK(ra[s] == s * 100 + rank);
    OK(MPI_Ialltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, sa, 1, MPI_INT, MPI_COMM_WORLD, &r));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    for (int s = 0; s < size; s++) CHECK(sa[s] == s * 100 + rank);
    /* Alltoallv/w: to rank d, d % 2 + 1 ints; from s, rank % 2 + 1. */
    int sc[64], sd[64], rc[64], rd[64], sv[512], rv[512];
    MPI_Datatype ty[64];
    for (int d = 0; d < size; d++) {
        sc[d] = d % 2 + 1; sd[d] = 2 * d; rc[d] = rank % 2 + 1; rd[d] = 3 * d; ty[d] = MPI_INT;
        sv[2 * d] = rank * 100 + d; sv[2 * d + 1] = -(rank * 100 + d);
    }
    for (int k = 0; k < 3 * size; k++) rv[k] = 7;
    OK(MPI_Ialltoallv(sv, sc, sd, MPI_INT, rv, rc, rd, MPI_INT, MPI_COMM_WORLD, &r));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    for (int s = 0; s < size; s++) {
        CHECK(rv[3 * s] == s * 100 + rank && rv[3 * s + 2] == 7);
        CHECK(rv[3 * s + 1] == (rank % 2 ? -(s * 100 + rank) : 7));
    }
    for (int d = 0; d < size; d++) { sd[d] *= 4; rd[d] *= 4; }
    for (int k = 0; k < 3 * size; k++) rv[k] = 7;
    OK(MPI_Ialltoallw(sv, sc, sd, ty, rv, rc, rd, ty, MPI_COMM_WORLD, &r));
    wait_by_test(&r);
    for (int s = 0; s < size; s++) {
        CHECK(rv[3 * s] == s * 100 + rank && rv[3 * s + 2] == 7);
        CHECK(rv[3 * s + 1] == (rank % 2 ? -(s * 100 + rank) : 7));
    }
}

/* Several at once, with point-to-point and a blocking collective. */
static void overlapping(void) {
    enum { K = 8 };
    MPI_Request reqs[K];
    int x = rank + 1, sum = -1, max = -1, all[64], bc[3] = {0, 0, 0}, ring = -1, blocking;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    if (rank == size - 1) { bc[0] = 11; bc[1] = 22; bc[2] = 33; }
    OK(MPI_Irecv(&ring, 1, MPI_INT, left, 9, MPI_COMM_WORLD, &reqs[0]));
    OK(MPI_Iallreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &reqs[1]));
    OK(MPI_Ibcast(bc, 3, MPI_INT, size - 1, MPI_COMM_WORLD, &reqs[2]));
    OK(MPI_Iallreduce(&x, &max, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &reqs[3]));
    OK(MPI_Iallgather(&x, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD, &reqs[4]));
    OK(MPI_Ibarrier(MPI_COMM_WORLD, &reqs[5]));
    OK(MPI_Isend(&x, 1, MPI_INT, right, 9, MPI_COMM_WORLD, &reqs[6]));
    OK(MPI_Allreduce(&x, &blocking, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    CHECK(blocking == 1);
    OK(MPI_Ibarrier(MPI_COMM_WORLD, &reqs[7]));
    /* Complete the last one first, then any, then the rest. */
    OK(MPI_Wait(&reqs[7], MPI_STATUS_IGNORE));
    int idx = -1;
    OK(MPI_Waitany(K, reqs, &idx, MPI_STATUS_IGNORE));
    CHECK(idx >= 0 && idx < 7 && reqs[idx] == MPI_REQUEST_NULL);
    int flag = 0;
    while (!flag) OK(MPI_Testall(K, reqs, &flag, MPI_STATUSES_IGNORE));
    OK(MPI_Waitall(K, reqs, MPI_STATUSES_IGNORE));
    CHECK(ring == left + 1);
    CHECK(sum == size * (size + 1) / 2 && max == size);
    CHECK(bc[0] == 11 && bc[1] == 22 && bc[2] == 33);
    for (int i = 0; i < size; i++) CHECK(all[i] == i + 1);
    /* A long vector: the request progresses while this rank waits for a
     * message its left neighbour sends only after its own collective
     * completed. */
    enum { L = 20000 };
    static double big[L], res[L];
    for (int k = 0; k < L; k++) big[k] = rank + k;
    MPI_Request r, p2p;
    OK(MPI_Iallreduce(big, res, L, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r));
    if (rank % 2 == 0) {
        OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        OK(MPI_Send(&x, 1, MPI_INT, right, 10, MPI_COMM_WORLD));
        OK(MPI_Recv(&ring, 1, MPI_INT, left, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    } else {
        OK(MPI_Irecv(&ring, 1, MPI_INT, left, 10, MPI_COMM_WORLD, &p2p));
        OK(MPI_Wait(&p2p, MPI_STATUS_IGNORE));
        OK(MPI_Send(&x, 1, MPI_INT, right, 10, MPI_COMM_WORLD));
        OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    }
    for (int k = 0; k < L; k += 997)
        CHECK(res[k] == (double)size * (size - 1) / 2 + (double)size * k);
}

/* A rank blocked in MPI_Probe (or in MPI_Barrier) still advances its
 * nonblocking collectives: rank 2's message to rank 0 comes only after
 * an Ibarrier that needs rank 0's later rounds. */
static void progress_while_probing(void) {
    if (size < 3) return;
    MPI_Request req;
    /* Rank size-1 starts late, so that rank 0's first round is still
     * open when rank 0 blocks in MPI_Probe. */
    if (rank == size - 1) {
        double t0 = MPI_Wtime();
        while (MPI_Wtime() - t0 < 0.2) {
        }
    }
    OK(MPI_Ibarrier(MPI_COMM_WORLD, &req));
    int v = -1;
    if (rank == 0) {
        MPI_Status st;
        OK(MPI_Probe(2, 77, MPI_COMM_WORLD, &st));
        CHECK(st.MPI_SOURCE == 2 && st.MPI_TAG == 77);
        OK(MPI_Recv(&v, 1, MPI_INT, 2, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(v == 2);
        OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    } else if (rank == 2) {
        OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        v = 2;
        OK(MPI_Send(&v, 1, MPI_INT, 0, 77, MPI_COMM_WORLD));
    } else {
        OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    }
    /* The same with a blocking barrier in the way. */
    OK(MPI_Ibarrier(MPI_COMM_WORLD, &req));
    if (rank == 2) OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (rank != 2) OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
}

int main(int argc, char **argv) {
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    check_rank = rank;
    OK(MPI_Type_contiguous(2, MPI_UINT64_T, &aff_type));
    OK(MPI_Type_commit(&aff_type));
    MPI_Op op;
    OK(MPI_Op_create(affine, 0, &op));
    each(op);
    overlapping();
    progress_while_probing();
    OK(MPI_Op_free(&op));
    OK(MPI_Type_free(&aff_type));
    OK(MPI_Finalize());
    return 0;
}
