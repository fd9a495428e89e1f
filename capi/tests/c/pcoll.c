/* Persistent collectives (MPI 4.0 §6.13): every MPI_*_init (half of
 * them in their _c form), started ROUNDS times each with MPI_Start or
 * MPI_Startall and completed with MPI_Wait, MPI_Test or MPI_Waitall;
 * the send data change between rounds, so each start must read them
 * anew; every received value is checked, the request stays valid and
 * inactive between rounds, and MPI_Request_free frees it. A vector type
 * checks the staging of non-contiguous data in a persistent collective.
 * The init calls read their count, displacement and type arrays and look
 * up their datatypes and operation once (§6.13): a last part frees all
 * of them (the arrays scribbled over first) right after the init calls,
 * as mpi4py does with its temporary arrays, and the collectives must
 * still be right at every start. */
#include <stdlib.h>
#include <string.h>
#include "check.h"

static int rank, size;

enum { ROUNDS = 3, MAXP = 64 };

static void go(MPI_Request *r, int round) {
    OK(MPI_Start(r));
    if (round % 2) {
        int done = 0;
        while (!done) OK(MPI_Test(r, &done, MPI_STATUS_IGNORE));
    } else {
        OK(MPI_Wait(r, MPI_STATUS_IGNORE));
    }
    CHECK(*r != MPI_REQUEST_NULL);
}

static void done(MPI_Request *r) {
    OK(MPI_Request_free(r));
    CHECK(*r == MPI_REQUEST_NULL);
}

static void add_ints(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    for (int i = 0; i < *len; i++) ((int *)inout)[i] += ((int *)in)[i];
}

static int v(int round, int from, int to, int k) {
    return round * 100000 + from * 1000 + to * 10 + k;
}

int main(int argc, char **argv) {
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    check_rank = rank;
    CHECK(size <= MAXP);
    MPI_Comm w = MPI_COMM_WORLD;
    MPI_Info in = MPI_INFO_NULL;
    int root = size - 1;
    MPI_Request r;
    int s[2 * MAXP], g[3 * MAXP], one[3];
    int c1[MAXP], d1[MAXP], cv[MAXP], dv[MAXP], dw[MAXP];
    MPI_Count cc1[MAXP], ccv[MAXP];
    MPI_Aint dd1[MAXP], ddv[MAXP];
    MPI_Datatype ints[MAXP];
    for (int i = 0; i < size; i++) {
        c1[i] = 1, d1[i] = i, cc1[i] = 1, dd1[i] = i;
        cv[i] = 1 + i % 2, dv[i] = 3 * i, ccv[i] = cv[i], ddv[i] = dv[i];
        dw[i] = i * (int)sizeof(int), ints[i] = MPI_INT;
    }

    /* barrier */
    OK(MPI_Barrier_init(w, in, &r));
    for (int round = 0; round < ROUNDS; round++) go(&r, round);
    done(&r);

    /* bcast of 3 ints, and of a vector type (_c) */
    OK(MPI_Bcast_init(one, 3, MPI_INT, root, w, in, &r));
    for (int round = 0; round < ROUNDS; round++) {
        for (int k = 0; k < 3; k++) one[k] = rank == root ? v(round, root, 0, k) : -1;
        go(&r, round);
        for (int k = 0; k < 3; k++) CHECK(one[k] == v(round, root, 0, k));
    }
    done(&r);
    MPI_Datatype vec;
    OK(MPI_Type_vector(2, 1, 2, MPI_INT, &vec));
    OK(MPI_Type_commit(&vec));
    int vb[6];
    OK(MPI_Bcast_init_c(vb, 2, vec, 0, w, in, &r));
    for (int round = 0; round < ROUNDS; round++) {
        for (int k = 0; k < 6; k++) vb[k] = rank == 0 ? v(round, 0, 0, k) : -1;
        go(&r, round);
        for (int k = 0; k < 6; k++) CHECK(vb[k] == (k % 3 == 1 && rank ? -1 : v(round, 0, 0, k)));
    }
    done(&r);

    /* gather (2 each) and gatherv_c (1 + i % 2 at 3 i) */
    OK(MPI_Gather_init(s, 2, MPI_INT, g, 2, MPI_INT, root, w, in, &r));
    for (int round = 0; round < ROUNDS; round++) {
        for (int k = 0; k < 2; k++) s[k] = v(round, rank, 0, k);
        go(&r, round);
        if (rank == root)
            for (int i = 0; i < size; i++)
                for (int k = 0; k < 2; k++) CHECK(g[2 * i + k] == v(round, i, 0, k));
    }
    done(&r);
    OK(MPI_Gatherv_init_c(s, 1 + rank % 2, MPI_INT, g, ccv, ddv, MPI_INT, root, w, in, &r));
    for (int round = 0; round < ROUNDS; round++) {
        for (int k = 0; k < 2; k++) s[k] = v(round, rank, 1, k);
        for (int i = 0; i < 3 * size; i++) g[i] = -1;
        go(&r, round);
        if (rank == root)
            for (int i = 0; i < size; i++)
                for (int k = 0; k < 3; k++)
                    CHECK(g[3 * i + k] == (k < cv[i] ? v(round, i, 1, k) : -1));
    }
    done(&r);

    /* scatter_c (2 each) and scatterv (1 + i % 2 at 3 i) */
    OK(MPI_Scatter_init_c(g, 2, MPI_INT, one, 2, MPI_INT, root, w, in, &r));
    for (int round = 0; round < ROUNDS; round++) {
        for (int i = 0; i < size; i++)
            for (int k = 0; k < 2; k++) g[2 * i + k] = v(round, root, i, k);
        go(&r, round);
        for (int k = 0; k < 2; k++) CHECK(one[k] == v(round, root, rank, k));
    }
    done(&r);
    OK(MPI_Scatterv_init(g, cv, dv, MPI_INT, one, cv[rank], MPI_INT, root, w, in, &r));
    for (int round = 0; round < ROUNDS; round++) {
        for (int i = 0; i < size; i++)
            for (int k = 0; k < 3; k++) g[3 * i + k] = v(round, root, i, k);
        one[0] = one[1] = one[2] = -1;
        go(&r, round);
        for (int k = 0; k < 3; k++) CHECK(one[k] == (k < cv[rank] ? v(round, root, rank, k) : -1));
    }
    done(&r);

    /* allgather and allgatherv_c */
    OK(MPI_Allgather_init(s, 2, MPI_INT, g, 2, MPI_INT, w, in, &r));
    for (int round = 0; round < ROUNDS; round++) {
        for (int k = 0; k < 2; k++) s[k] = v(round, rank, 2, k);
        go(&r, round);
        for (int i = 0; i < size; i++)
            for (int k = 0; k < 2; k++) CHECK(g[2 * i + k] == v(round, i, 2, k));
    }
    done(&r);
    OK(MPI_Allgatherv_init_c(s, 1 + rank % 2, MPI_INT, g, ccv, ddv, MPI_INT, w, in, &r));
    for (int round = 0; round < ROUNDS; round++) {
        for (int k = 0; k < 2; k++) s[k] = v(round, rank, 3, k);
        for (int i = 0; i < 3 * size; i++) g[i] = -1;
        go(&r, round);
        for (int i = 0; i < size; i++)
            for (int k = 0; k < 3; k++)
                CHECK(g[3 * i + k] == (k < cv[i] ? v(round, i, 3, k) : -1));
    }
    done(&r);

    /* alltoall, alltoallv_c, alltoallw: one int to each rank */
    for (int kind = 0; kind < 3; kind++) {
        if (kind == 0) OK(MPI_Alltoall_init(s, 1, MPI_INT, g, 1, MPI_INT, w, in, &r));
        if (kind == 1)
            OK(MPI_Alltoallv_init_c(s, cc1, dd1, MPI_INT, g, cc1, dd1, MPI_INT, w, in, &r));
        if (kind == 2) OK(MPI_Alltoallw_init(s, c1, dw, ints, g, c1, dw, ints, w, in, &r));
        for (int round = 0; round < ROUNDS; round++) {
            for (int i = 0; i < size; i++) s[i] = v(round, rank, i, kind), g[i] = -1;
            go(&r, round);
            for (int i = 0; i < size; i++) CHECK(g[i] == v(round, i, rank, kind));
        }
        done(&r);
    }
    (void)d1;

    /* reductions of 3 ints: reduce_c, allreduce, scan_c, exscan */
    int sum[3];
    for (int kind = 0; kind < 4; kind++) {
        if (kind == 0) OK(MPI_Reduce_init_c(s, sum, 3, MPI_INT, MPI_SUM, root, w, in, &r));
        if (kind == 1) OK(MPI_Allreduce_init(s, sum, 3, MPI_INT, MPI_SUM, w, in, &r));
        if (kind == 2) OK(MPI_Scan_init_c(s, sum, 3, MPI_INT, MPI_SUM, w, in, &r));
        if (kind == 3) OK(MPI_Exscan_init(s, sum, 3, MPI_INT, MPI_SUM, w, in, &r));
        for (int round = 0; round < ROUNDS; round++) {
            for (int k = 0; k < 3; k++) s[k] = round + rank * (k + 1), sum[k] = -1;
            go(&r, round);
            int upto = kind == 2 ? rank + 1 : kind == 3 ? rank : size;
            for (int k = 0; k < 3; k++) {
                int want = upto * round + (k + 1) * upto * (upto - 1) / 2;
                if (kind == 0 && rank != root) want = -1;
                if (kind == 3 && rank == 0) want = -1;
                CHECK(sum[k] == want);
            }
        }
        done(&r);
    }

    /* reduce_scatter_block (2 each) and reduce_scatter_c (1 each) */
    for (int kind = 0; kind < 2; kind++) {
        int n = 2 - kind;
        if (kind == 0) OK(MPI_Reduce_scatter_block_init(s, sum, 2, MPI_INT, MPI_SUM, w, in, &r));
        else OK(MPI_Reduce_scatter_init_c(s, sum, cc1, MPI_INT, MPI_SUM, w, in, &r));
        for (int round = 0; round < ROUNDS; round++) {
            for (int j = 0; j < n * size; j++) s[j] = round + rank + j;
            sum[0] = sum[1] = -1;
            go(&r, round);
            for (int k = 0; k < n; k++)
                CHECK(sum[k] == size * (round + rank * n + k) + size * (size - 1) / 2);
            if (n == 1) CHECK(sum[1] == -1);
        }
        done(&r);
    }

    /* arguments released after init: alltoallv, alltoallw, and
     * reduce_scatter with a user operation on a user datatype */
    {
        int *cnt = malloc(size * sizeof(int)), *dsp = malloc(size * sizeof(int));
        MPI_Datatype *tys = malloc(size * sizeof(MPI_Datatype)), two, mine;
        MPI_Op plus;
        MPI_Request rr[3];
        int rs_out[2];
        OK(MPI_Type_contiguous(2, MPI_INT, &two));
        OK(MPI_Type_commit(&two));
        OK(MPI_Type_dup(MPI_INT, &mine));
        OK(MPI_Op_create(add_ints, 1, &plus));
        for (int i = 0; i < size; i++) cnt[i] = 1, dsp[i] = i, tys[i] = two;
        OK(MPI_Alltoallv_init(s, cnt, dsp, MPI_INT, g, cnt, dsp, MPI_INT, w, in, &rr[0]));
        for (int i = 0; i < size; i++) dsp[i] = 2 * i * (int)sizeof(int);
        OK(MPI_Alltoallw_init(s + size, cnt, dsp, tys, g + size, cnt, dsp, tys, w, in, &rr[1]));
        for (int i = 0; i < size; i++) cnt[i] = 2;
        OK(MPI_Reduce_scatter_init(s + 3 * size, rs_out, cnt, mine, plus, w, in, &rr[2]));
        for (int i = 0; i < size; i++) cnt[i] = dsp[i] = 0x7fff0000, tys[i] = MPI_DATATYPE_NULL;
        free(cnt), free(dsp), free(tys);
        OK(MPI_Type_free(&two));
        OK(MPI_Type_free(&mine));
        OK(MPI_Op_free(&plus));
        CHECK(5 * size <= 2 * MAXP && 3 * size <= 3 * MAXP);
        for (int round = 0; round < ROUNDS; round++) {
            int *sa = s, *sw = s + size, *sr = s + 3 * size;
            for (int i = 0; i < size; i++) {
                sa[i] = v(round, rank, i, 0);
                sw[2 * i] = v(round, rank, i, 1), sw[2 * i + 1] = v(round, rank, i, 2);
                sr[2 * i] = round + rank + i, sr[2 * i + 1] = 7 * round + i;
            }
            for (int i = 0; i < 3 * size; i++) g[i] = -1;
            rs_out[0] = rs_out[1] = -1;
            OK(MPI_Startall(3, rr));
            OK(MPI_Waitall(3, rr, MPI_STATUSES_IGNORE));
            for (int i = 0; i < size; i++) {
                CHECK(g[i] == v(round, i, rank, 0));
                CHECK(g[size + 2 * i] == v(round, i, rank, 1));
                CHECK(g[size + 2 * i + 1] == v(round, i, rank, 2));
            }
            CHECK(rs_out[0] == size * (round + rank) + size * (size - 1) / 2);
            CHECK(rs_out[1] == size * (7 * round + rank));
        }
        for (int i = 0; i < 3; i++) done(&rr[i]);
    }

    /* several at once: Startall and Waitall, a persistent reduction with
     * a vector type */
    MPI_Request rs[3];
    int a[6], as[6], bc[2];
    OK(MPI_Allreduce_init(a, as, 2, vec, MPI_SUM, w, in, &rs[0]));
    OK(MPI_Bcast_init(bc, 2, MPI_INT, 0, w, in, &rs[1]));
    OK(MPI_Barrier_init(w, in, &rs[2]));
    for (int round = 0; round < ROUNDS; round++) {
        for (int k = 0; k < 6; k++) a[k] = round + rank + k, as[k] = -1;
        bc[0] = bc[1] = rank == 0 ? round : -1;
        OK(MPI_Startall(3, rs));
        OK(MPI_Waitall(3, rs, MPI_STATUSES_IGNORE));
        for (int k = 0; k < 6; k++)
            CHECK(as[k] == (k % 3 == 1 ? -1 : size * (round + k) + size * (size - 1) / 2));
        CHECK(bc[0] == round && bc[1] == round);
        for (int i = 0; i < 3; i++) CHECK(rs[i] != MPI_REQUEST_NULL);
    }
    for (int i = 0; i < 3; i++) done(&rs[i]);
    OK(MPI_Type_free(&vec));
    OK(MPI_Finalize());
    return 0;
}
