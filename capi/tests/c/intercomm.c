/* Inter-communicators (MPI 5.0 §7.6): MPI_Intercomm_create (peer
 * MPI_COMM_WORLD, and an inter-communicator as peer),
 * MPI_Intercomm_create_from_groups, MPI_Intercomm_merge, remote size and
 * group, test_inter; point-to-point on an inter-communicator (ranks name
 * the remote group: blocking, nonblocking, synchronous, persistent,
 * probe, matched probe, MPI_ANY_SOURCE, MPI_PROC_NULL, status.MPI_SOURCE);
 * dup, idup, split, create, compare, names, attributes, free; the
 * blocking, nonblocking and persistent collectives (§6.2.2: MPI_ROOT
 * and MPI_PROC_NULL roots, blocks per remote process, a strided
 * datatype, reduce-scatters of the other group's data); and what is not
 * provided on inter-communicators (scan, exscan, topologies) failing
 * with MPI_ERR_COMM.
 * Correct for any number of ranks; at 1 rank only the errors are tested
 * (an inter-communicator needs two disjoint groups). */
#include <string.h>
#include "check.h"

static int rank, size;

/* The world rank of rank q of the group of parity `color` (evens 0,
 * odds 1). */
static int parity_world(int color, int q) { return 2 * q + color; }

/* Group sizes by parity. */
static int parity_size(int color) { return (size + 1 - color) / 2; }

/* The members of g as world ranks. */
static void world_ranks(MPI_Group g, int *out, int n) {
    MPI_Group world;
    int in[64];
    OK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    for (int i = 0; i < n; i++) in[i] = i;
    OK(MPI_Group_translate_ranks(g, n, in, world, out));
    OK(MPI_Group_free(&world));
}

/* Checks an inter-communicator's shape: local rank lr of a local group of
 * ln processes, a remote group of rn processes whose world ranks are
 * remote(q). */
static void shape(MPI_Comm ic, int lr, int ln, int rn, int (*remote)(int)) {
    int flag = -1, n = -1, r = -1, got[64];
    OK(MPI_Comm_test_inter(ic, &flag));
    CHECK(flag == 1);
    OK(MPI_Comm_size(ic, &n));
    CHECK(n == ln);
    OK(MPI_Comm_rank(ic, &r));
    CHECK(r == lr);
    OK(MPI_Comm_remote_size(ic, &n));
    CHECK(n == rn);
    MPI_Group g;
    OK(MPI_Comm_remote_group(ic, &g));
    OK(MPI_Group_size(g, &n));
    CHECK(n == rn);
    OK(MPI_Group_rank(g, &r));
    CHECK(r == MPI_UNDEFINED);
    world_ranks(g, got, rn);
    for (int q = 0; q < rn; q++) CHECK(got[q] == remote(q));
    OK(MPI_Group_free(&g));
    OK(MPI_Comm_group(ic, &g));
    OK(MPI_Group_size(g, &n));
    CHECK(n == ln);
    OK(MPI_Group_rank(g, &r));
    CHECK(r == lr);
    OK(MPI_Group_free(&g));
}

static int other_color;
static int remote_parity(int q) { return parity_world(other_color, q); }

/* Point-to-point on ic, whose local rank is lr of ln and whose remote
 * rank q is world rank remote(q) of rn. */
static void p2p(MPI_Comm ic, int lr, int ln, int rn, int (*remote)(int)) {
    MPI_Status st;
    int v = -1, flag = 0, count = -1;

    /* Every local rank r sends its world rank to remote rank r % rn with
     * tag 1000 + r; each receives from every remote q with q % ln == lr,
     * from MPI_ANY_SOURCE, and the status names q. */
    MPI_Request s;
    OK(MPI_Isend(&rank, 1, MPI_INT, lr % rn, 1000 + lr, ic, &s));
    for (int q = lr; q < rn; q += ln) {
        OK(MPI_Probe(MPI_ANY_SOURCE, 1000 + q, ic, &st));
        CHECK(st.MPI_SOURCE == q && st.MPI_TAG == 1000 + q);
        OK(MPI_Get_count(&st, MPI_INT, &count));
        CHECK(count == 1);
        OK(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 1000 + q, ic, &st));
        CHECK(st.MPI_SOURCE == q && st.MPI_TAG == 1000 + q && v == remote(q));
    }
    OK(MPI_Wait(&s, MPI_STATUS_IGNORE));

    /* Pairs: local r and remote r, for r below both sizes: Sendrecv,
     * Ssend/Irecv, a persistent pair, Iprobe and a matched probe. */
    if (lr < rn) {
        int out[2] = {rank, lr}, in[2] = {-1, -1};
        OK(MPI_Sendrecv(out, 2, MPI_INT, lr, 5, in, 2, MPI_INT, lr, 5, ic, &st));
        CHECK(in[0] == remote(lr) && in[1] == lr && st.MPI_SOURCE == lr);

        MPI_Request r;
        OK(MPI_Irecv(&v, 1, MPI_INT, lr, 6, ic, &r));
        OK(MPI_Ssend(&rank, 1, MPI_INT, lr, 6, ic));
        OK(MPI_Wait(&r, &st));
        CHECK(v == remote(lr) && st.MPI_SOURCE == lr);

        MPI_Request ps[2];
        int pv = -1;
        OK(MPI_Recv_init(&pv, 1, MPI_INT, lr, 7, ic, &ps[0]));
        OK(MPI_Send_init(&rank, 1, MPI_INT, lr, 7, ic, &ps[1]));
        for (int k = 0; k < 2; k++) {
            pv = -1;
            OK(MPI_Startall(2, ps));
            OK(MPI_Waitall(2, ps, MPI_STATUSES_IGNORE));
            CHECK(pv == remote(lr));
        }
        OK(MPI_Request_free(&ps[0]));
        OK(MPI_Request_free(&ps[1]));

        OK(MPI_Send(&lr, 1, MPI_INT, lr, 8, ic));
        do {
            OK(MPI_Iprobe(lr, 8, ic, &flag, &st));
        } while (!flag);
        CHECK(st.MPI_SOURCE == lr);
        MPI_Message m;
        OK(MPI_Mprobe(MPI_ANY_SOURCE, 8, ic, &m, &st));
        CHECK(st.MPI_SOURCE == lr);
        OK(MPI_Mrecv(&v, 1, MPI_INT, &m, &st));
        CHECK(v == lr && st.MPI_SOURCE == lr);
    }

    /* MPI_PROC_NULL: at once, with the empty status. */
    OK(MPI_Send(&rank, 1, MPI_INT, MPI_PROC_NULL, 9, ic));
    OK(MPI_Recv(&v, 1, MPI_INT, MPI_PROC_NULL, 9, ic, &st));
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG);

    /* Ranks name the remote group: rn is out of range even when the
     * local group is larger. */
    CHECK(MPI_Send(&rank, 1, MPI_INT, rn, 9, ic) == MPI_ERR_RANK);
    MPI_Request bad;
    CHECK(MPI_Send_init(&rank, 1, MPI_INT, rn, 9, ic, &bad) == MPI_ERR_RANK);
}

static void reduce_scatters(MPI_Comm ic, int lr, int ln, int rn, int rsum, int nb);

/* The blocking collectives on ic (§6.2.2), between the evens (colour 0)
 * and the odds, local rank lr of ln, remote group of rn given by
 * remote(q). Rooted ones are rooted at local rank 0 of one side. */
static void collectives(MPI_Comm ic, int color, int lr, int ln, int rn, int (*remote)(int)) {
    int root_even = color == 0 ? (lr == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    int root_odd = color == 1 ? (lr == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    int rsum = 0;
    for (int q = 0; q < rn; q++) rsum += remote(q);
    OK(MPI_Barrier(ic));

    /* Bcast from the evens' root, of a contiguous and a strided type. */
    int b[4] = {-1, -1, -1, -1};
    if (root_even == MPI_ROOT) b[0] = 42, b[1] = 1, b[2] = 43, b[3] = 2;
    OK(MPI_Bcast(b, 2, MPI_INT, root_even, ic));
    if (color == 1) CHECK(b[0] == 42 && b[1] == 1);
    if (root_even == MPI_PROC_NULL) CHECK(b[0] == -1 && b[1] == -1);
    MPI_Datatype every_other;
    OK(MPI_Type_vector(2, 1, 2, MPI_INT, &every_other));
    OK(MPI_Type_commit(&every_other));
    if (color == 1) b[0] = b[1] = b[2] = b[3] = -1;
    OK(MPI_Bcast(b, 1, every_other, root_even, ic));
    if (color == 1) CHECK(b[0] == 42 && b[1] == -1 && b[2] == 43 && b[3] == -1);
    if (root_even == MPI_ROOT) CHECK(b[0] == 42 && b[1] == 1 && b[2] == 43 && b[3] == 2);

    /* Reduce to the odds' root: the sum of the evens' world ranks. */
    int r = -1;
    OK(MPI_Reduce(&rank, root_odd == MPI_ROOT ? &r : NULL, 1, MPI_INT, MPI_SUM, root_odd, ic));
    if (root_odd == MPI_ROOT) CHECK(r == rsum);
    if (root_odd != MPI_ROOT) CHECK(r == -1);

    /* Allreduce: the other group's sum; MPI_IN_PLACE is refused. */
    OK(MPI_Allreduce(&rank, &r, 1, MPI_INT, MPI_SUM, ic));
    CHECK(r == rsum);
    CHECK(MPI_Allreduce(MPI_IN_PLACE, &r, 1, MPI_INT, MPI_SUM, ic) == MPI_ERR_BUFFER);

    /* Gather(v) to the evens' root: {w, 10 w} from every odd; gatherv
     * puts remote q's block at 3 (rn - 1 - q). */
    int mine[2] = {rank, 10 * rank}, g[192];
    for (int i = 0; i < 192; i++) g[i] = -1;
    OK(MPI_Gather(mine, 2, MPI_INT, g, 2, MPI_INT, root_even, ic));
    if (root_even == MPI_ROOT)
        for (int q = 0; q < rn; q++) CHECK(g[2 * q] == remote(q) && g[2 * q + 1] == 10 * remote(q));
    int counts[64], displs[64];
    for (int q = 0; q < rn; q++) counts[q] = 2, displs[q] = 3 * (rn - 1 - q);
    for (int i = 0; i < 192; i++) g[i] = -1;
    OK(MPI_Gatherv(mine, 2, MPI_INT, g, counts, displs, MPI_INT, root_even, ic));
    if (root_even == MPI_ROOT)
        for (int q = 0; q < rn; q++) {
            int at = 3 * (rn - 1 - q);
            CHECK(g[at] == remote(q) && g[at + 1] == 10 * remote(q) && g[at + 2] == -1);
        }

    /* Scatter(v) from the odds' root: {q, w} to remote rank q. */
    int data[192], got[2] = {-1, -1};
    for (int q = 0; q < rn; q++) data[2 * q] = q, data[2 * q + 1] = rank;
    OK(MPI_Scatter(data, 2, MPI_INT, got, 2, MPI_INT, root_odd, ic));
    if (color == 0) CHECK(got[0] == lr && got[1] == remote(0));
    else CHECK(got[0] == -1 && got[1] == -1);
    for (int q = 0; q < rn; q++) counts[q] = 1, displs[q] = rn - 1 - q;
    got[0] = -1;
    OK(MPI_Scatterv(data, counts, displs, MPI_INT, got, 1, MPI_INT, root_odd, ic));
    if (color == 0) {
        /* Element ln - 1 - lr of the root's data (its remote group is
         * this one). */
        int k = ln - 1 - lr;
        CHECK(got[0] == (k % 2 == 0 ? k / 2 : remote(0)));
    }

    /* Allgather(v): the other group's world ranks, allgatherv reversed. */
    int ag[64];
    OK(MPI_Allgather(&rank, 1, MPI_INT, ag, 1, MPI_INT, ic));
    for (int q = 0; q < rn; q++) CHECK(ag[q] == remote(q));
    for (int q = 0; q < rn; q++) counts[q] = 1, displs[q] = rn - 1 - q;
    OK(MPI_Allgatherv(&rank, 1, MPI_INT, ag, counts, displs, MPI_INT, ic));
    for (int q = 0; q < rn; q++) CHECK(ag[rn - 1 - q] == remote(q));

    /* Alltoall(v, w): 100 w + q to remote rank q. */
    int out[64], in[64];
    for (int q = 0; q < rn; q++) out[q] = 100 * rank + q;
    OK(MPI_Alltoall(out, 1, MPI_INT, in, 1, MPI_INT, ic));
    for (int q = 0; q < rn; q++) CHECK(in[q] == 100 * remote(q) + lr);
    int sc[64], sd[64], rc[64], rd[64];
    MPI_Datatype st[64], rt[64];
    for (int q = 0; q < rn; q++) {
        sc[q] = rc[q] = 1;
        sd[q] = q;
        rd[q] = rn - 1 - q;
        st[q] = rt[q] = MPI_INT;
    }
    OK(MPI_Alltoallv(out, sc, sd, MPI_INT, in, rc, rd, MPI_INT, ic));
    for (int q = 0; q < rn; q++) CHECK(in[rn - 1 - q] == 100 * remote(q) + lr);
    for (int q = 0; q < rn; q++) sd[q] *= sizeof(int), rd[q] = q * sizeof(int);
    OK(MPI_Alltoallw(out, sc, sd, st, in, rc, rd, rt, ic));
    for (int q = 0; q < rn; q++) CHECK(in[q] == 100 * remote(q) + lr);

    /* Reduce_scatter(_block) (§6.10): the other group's reduction,
     * scattered over this one. */
    reduce_scatters(ic, lr, ln, rn, rsum, 0);

    /* Bad roots. */
    CHECK(MPI_Bcast(b, 1, MPI_INT, rn, ic) == MPI_ERR_ROOT);
    OK(MPI_Type_free(&every_other));
}

/* The counts of a reduce-scatter of 12 elements over ln processes (the
 * same total on both sides, §6.10.1), and their displacements. */
static void twelve(int ln, int *counts, int *displs) {
    for (int i = 0, at = 0; i < ln; i++) {
        counts[i] = 12 / ln + (i < 12 % ln);
        displs[i] = at;
        at += counts[i];
    }
}

/* Checks reduce-scatter results: local rank lr's block of 12 (`v`), and
 * of reduce-scatter-block (`w`: rn elements each), against what every
 * remote process sent, 100 w + k and w + k at element k (`base` added
 * by persistent restarts). */
static void check_scatters(int lr, int ln, int rn, int rsum, int base, const int *v,
                           const int *w) {
    int counts[64], displs[64];
    twelve(ln, counts, displs);
    for (int j = 0; j < counts[lr]; j++)
        CHECK(v[j] == 100 * rsum + rn * (displs[lr] + j + base));
    for (int j = 0; j < rn; j++) CHECK(w[j] == rsum + rn * (lr * rn + j + base));
}

/* Reduce_scatter and Reduce_scatter_block on ic, blocking (nb 0) or not
 * (nb 1). Each process sends 100 w + k (12 elements, counts by twelve())
 * and w + k (ln rn elements, rn per process: both sides send ln rn). */
static void reduce_scatters(MPI_Comm ic, int lr, int ln, int rn, int rsum, int nb) {
    int send[64], send2[64 * 64 / 4 + 64], v[12], w[64], counts[64], displs[64];
    CHECK(ln * rn <= (int)(sizeof send2 / sizeof send2[0]));
    twelve(ln, counts, displs);
    for (int k = 0; k < 12; k++) send[k] = 100 * rank + k;
    for (int k = 0; k < ln * rn; k++) send2[k] = rank + k;
    for (int j = 0; j < 12; j++) v[j] = -1;
    if (nb) {
        MPI_Request rq[2];
        OK(MPI_Ireduce_scatter(send, v, counts, MPI_INT, MPI_SUM, ic, &rq[0]));
        OK(MPI_Ireduce_scatter_block(send2, w, rn, MPI_INT, MPI_SUM, ic, &rq[1]));
        OK(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
    } else {
        OK(MPI_Reduce_scatter(send, v, counts, MPI_INT, MPI_SUM, ic));
        OK(MPI_Reduce_scatter_block(send2, w, rn, MPI_INT, MPI_SUM, ic));
    }
    check_scatters(lr, ln, rn, rsum, 0, v, w);
    CHECK(MPI_Reduce_scatter_block(MPI_IN_PLACE, w, rn, MPI_INT, MPI_SUM, ic) ==
          MPI_ERR_BUFFER);
}

/* The nonblocking collectives on ic (§6.12, §6.2.2), as collectives()
 * checks the blocking ones, some outstanding together; then persistent
 * ones (§6.13), each started twice with changed data. */
static void nonblocking(MPI_Comm ic, int color, int lr, int ln, int rn, int (*remote)(int)) {
    int root_even = color == 0 ? (lr == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    int root_odd = color == 1 ? (lr == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    int rsum = 0;
    for (int q = 0; q < rn; q++) rsum += remote(q);
    MPI_Request rq[8];

    /* A barrier, a bcast (contiguous, then strided) and an allreduce
     * outstanding together. */
    int b[4] = {-1, -1, -1, -1}, b2[4] = {-1, -1, -1, -1}, r = -1;
    if (root_even == MPI_ROOT) b[0] = 42, b[1] = 1, b[2] = 43, b[3] = 2;
    if (root_even == MPI_ROOT) b2[0] = 52, b2[1] = 3, b2[2] = 53, b2[3] = 4;
    MPI_Datatype every_other;
    OK(MPI_Type_vector(2, 1, 2, MPI_INT, &every_other));
    OK(MPI_Type_commit(&every_other));
    OK(MPI_Ibarrier(ic, &rq[0]));
    OK(MPI_Ibcast(b, 2, MPI_INT, root_even, ic, &rq[1]));
    OK(MPI_Iallreduce(&rank, &r, 1, MPI_INT, MPI_SUM, ic, &rq[2]));
    OK(MPI_Ibcast(b2, 1, every_other, root_even, ic, &rq[3]));
    OK(MPI_Waitall(4, rq, MPI_STATUSES_IGNORE));
    if (color == 1) CHECK(b[0] == 42 && b[1] == 1 && b[2] == -1 && b[3] == -1);
    if (color == 1) CHECK(b2[0] == 52 && b2[1] == -1 && b2[2] == 53 && b2[3] == -1);
    if (root_even == MPI_PROC_NULL) CHECK(b[0] == -1 && b[1] == -1 && b2[0] == -1);
    if (root_even == MPI_ROOT) CHECK(b[0] == 42 && b[1] == 1 && b2[0] == 52 && b2[1] == 3);
    CHECK(r == rsum);
    CHECK(MPI_Iallreduce(MPI_IN_PLACE, &r, 1, MPI_INT, MPI_SUM, ic, &rq[0]) ==
          MPI_ERR_BUFFER);

    /* Ireduce to the odds' root. */
    r = -1;
    OK(MPI_Ireduce(&rank, root_odd == MPI_ROOT ? &r : NULL, 1, MPI_INT, MPI_SUM, root_odd, ic,
                   &rq[0]));
    OK(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
    CHECK(r == (root_odd == MPI_ROOT ? rsum : -1));

    /* Igather(v) to the evens' root. */
    int mine[2] = {rank, 10 * rank}, g[192], g2[192], counts[64], displs[64];
    for (int i = 0; i < 192; i++) g[i] = g2[i] = -1;
    for (int q = 0; q < rn; q++) counts[q] = 2, displs[q] = 3 * (rn - 1 - q);
    OK(MPI_Igather(mine, 2, MPI_INT, g, 2, MPI_INT, root_even, ic, &rq[0]));
    OK(MPI_Igatherv(mine, 2, MPI_INT, g2, counts, displs, MPI_INT, root_even, ic, &rq[1]));
    OK(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
    if (root_even == MPI_ROOT)
        for (int q = 0; q < rn; q++) {
            int at = 3 * (rn - 1 - q);
            CHECK(g[2 * q] == remote(q) && g[2 * q + 1] == 10 * remote(q));
            CHECK(g2[at] == remote(q) && g2[at + 1] == 10 * remote(q) && g2[at + 2] == -1);
        }
    else
        CHECK(g[0] == -1 && g2[0] == -1);

    /* Iscatter(v) from the odds' root. */
    int data[192], got[2] = {-1, -1}, got1 = -1;
    for (int q = 0; q < rn; q++) data[2 * q] = q, data[2 * q + 1] = rank;
    int sc1[64], sd1[64];
    for (int q = 0; q < rn; q++) sc1[q] = 1, sd1[q] = rn - 1 - q;
    OK(MPI_Iscatter(data, 2, MPI_INT, got, 2, MPI_INT, root_odd, ic, &rq[0]));
    OK(MPI_Iscatterv(data, sc1, sd1, MPI_INT, &got1, 1, MPI_INT, root_odd, ic, &rq[1]));
    OK(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
    if (color == 0) {
        int k = ln - 1 - lr;
        CHECK(got[0] == lr && got[1] == remote(0));
        CHECK(got1 == (k % 2 == 0 ? k / 2 : remote(0)));
    } else {
        CHECK(got[0] == -1 && got[1] == -1 && got1 == -1);
    }

    /* Iallgather(v). */
    int ag[64], ag2[64];
    for (int q = 0; q < rn; q++) counts[q] = 1, displs[q] = rn - 1 - q;
    OK(MPI_Iallgather(&rank, 1, MPI_INT, ag, 1, MPI_INT, ic, &rq[0]));
    OK(MPI_Iallgatherv(&rank, 1, MPI_INT, ag2, counts, displs, MPI_INT, ic, &rq[1]));
    OK(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
    for (int q = 0; q < rn; q++) CHECK(ag[q] == remote(q) && ag2[rn - 1 - q] == remote(q));
    CHECK(MPI_Iallgather(MPI_IN_PLACE, 1, MPI_INT, ag, 1, MPI_INT, ic, &rq[0]) ==
          MPI_ERR_BUFFER);

    /* Ialltoall(v, w): 100 w + q to remote rank q. */
    int out[64], in[64], in2[64], in3[64];
    int sc[64], sd[64], rc[64], rd[64], sdb[64], rdb[64];
    MPI_Datatype st[64], rt[64];
    for (int q = 0; q < rn; q++) {
        out[q] = 100 * rank + q;
        sc[q] = rc[q] = 1;
        sd[q] = q;
        rd[q] = rn - 1 - q;
        sdb[q] = q * (int)sizeof(int);
        rdb[q] = q * (int)sizeof(int);
        st[q] = rt[q] = MPI_INT;
    }
    OK(MPI_Ialltoall(out, 1, MPI_INT, in, 1, MPI_INT, ic, &rq[0]));
    OK(MPI_Ialltoallv(out, sc, sd, MPI_INT, in2, rc, rd, MPI_INT, ic, &rq[1]));
    OK(MPI_Ialltoallw(out, sc, sdb, st, in3, rc, rdb, rt, ic, &rq[2]));
    OK(MPI_Waitall(3, rq, MPI_STATUSES_IGNORE));
    for (int q = 0; q < rn; q++) {
        CHECK(in[q] == 100 * remote(q) + lr);
        CHECK(in2[rn - 1 - q] == 100 * remote(q) + lr);
        CHECK(in3[q] == 100 * remote(q) + lr);
    }

    /* Ireduce_scatter(_block). */
    reduce_scatters(ic, lr, ln, rn, rsum, 1);

    /* Bad roots; scan and exscan stay undefined (§6.2.2). */
    CHECK(MPI_Ibcast(b, 1, MPI_INT, rn, ic, &rq[0]) == MPI_ERR_ROOT);
    CHECK(MPI_Iscan(&rank, &r, 1, MPI_INT, MPI_SUM, ic, &rq[0]) == MPI_ERR_COMM);
    CHECK(MPI_Iexscan(&rank, &r, 1, MPI_INT, MPI_SUM, ic, &rq[0]) == MPI_ERR_COMM);
    CHECK(MPI_Scan_init(&rank, &r, 1, MPI_INT, MPI_SUM, ic, MPI_INFO_NULL, &rq[0]) ==
          MPI_ERR_COMM);

    /* Persistent: barrier, bcast, allreduce, alltoallv, reduce-scatter
     * and reduce-scatter-block, each started twice, the data changed in
     * between (round k adds k). */
    int pb[2], pin = 0, pout = -1, pv[12], pw[64], ps[64], ps2[64 * 64 / 4 + 64];
    int pcounts[64], pdispls[64];
    twelve(ln, pcounts, pdispls);
    MPI_Request pr[6];
    OK(MPI_Barrier_init(ic, MPI_INFO_NULL, &pr[0]));
    OK(MPI_Bcast_init(pb, 2, MPI_INT, root_even, ic, MPI_INFO_NULL, &pr[1]));
    OK(MPI_Allreduce_init(&pin, &pout, 1, MPI_INT, MPI_SUM, ic, MPI_INFO_NULL, &pr[2]));
    OK(MPI_Alltoallv_init(out, sc, sd, MPI_INT, in2, rc, rd, MPI_INT, ic, MPI_INFO_NULL,
                          &pr[3]));
    OK(MPI_Reduce_scatter_init(ps, pv, pcounts, MPI_INT, MPI_SUM, ic, MPI_INFO_NULL, &pr[4]));
    OK(MPI_Reduce_scatter_block_init(ps2, pw, rn, MPI_INT, MPI_SUM, ic, MPI_INFO_NULL,
                                     &pr[5]));
    for (int k = 0; k < 2; k++) {
        pb[0] = pb[1] = -1;
        if (root_even == MPI_ROOT) pb[0] = 7 + k, pb[1] = 8 + k;
        pin = rank + k;
        pout = -1;
        for (int q = 0; q < rn; q++) out[q] = 100 * rank + q + 1000 * k, in2[q] = -1;
        for (int i = 0; i < 12; i++) ps[i] = 100 * rank + i + k, pv[i] = -1;
        for (int i = 0; i < ln * rn; i++) ps2[i] = rank + i + k;
        for (int i = 0; i < rn; i++) pw[i] = -1;
        OK(MPI_Startall(6, pr));
        OK(MPI_Waitall(6, pr, MPI_STATUSES_IGNORE));
        if (color == 1) CHECK(pb[0] == 7 + k && pb[1] == 8 + k);
        if (root_even == MPI_PROC_NULL) CHECK(pb[0] == -1 && pb[1] == -1);
        CHECK(pout == rsum + k * rn);
        for (int q = 0; q < rn; q++) CHECK(in2[rn - 1 - q] == 100 * remote(q) + lr + 1000 * k);
        check_scatters(lr, ln, rn, rsum, k, pv, pw);
    }
    for (int i = 0; i < 6; i++) OK(MPI_Request_free(&pr[i]));
    OK(MPI_Type_free(&every_other));
}

static int error_class(int rc) {
    int c;
    OK(MPI_Error_class(rc, &c));
    return c;
}

/* What is not provided on an inter-communicator fails with MPI_ERR_COMM,
 * before any communication: the topology constructors too (§8.1), even
 * with arguments they would refuse for another reason. */
static void not_provided(MPI_Comm ic) {
    int a = 1, b[64];
    MPI_Request r;
    CHECK(MPI_Scan(&a, b, 1, MPI_INT, MPI_SUM, ic) == MPI_ERR_COMM);
    CHECK(MPI_Exscan(&a, b, 1, MPI_INT, MPI_SUM, ic) == MPI_ERR_COMM);
    CHECK(MPI_Iscan(&a, b, 1, MPI_INT, MPI_SUM, ic, &r) == MPI_ERR_COMM);
    CHECK(MPI_Iexscan(&a, b, 1, MPI_INT, MPI_SUM, ic, &r) == MPI_ERR_COMM);
    CHECK(MPI_Exscan_init(&a, b, 1, MPI_INT, MPI_SUM, ic, MPI_INFO_NULL, &r) == MPI_ERR_COMM);
    MPI_Comm nc;
    /* (Comm_split_type is provided: every rank runs on one host, so
     * splitting by host gives the same two groups back.) */
    OK(MPI_Comm_split_type(ic, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &nc));
    {
        int inter, rs, want, ls, lwant;
        OK(MPI_Comm_test_inter(nc, &inter));
        OK(MPI_Comm_remote_size(nc, &rs));
        OK(MPI_Comm_remote_size(ic, &want));
        OK(MPI_Comm_size(nc, &ls));
        OK(MPI_Comm_size(ic, &lwant));
        CHECK(inter && rs == want && ls == lwant);
        OK(MPI_Comm_free(&nc));
    }
    OK(MPI_Comm_split_type(ic, MPI_UNDEFINED, 0, MPI_INFO_NULL, &nc));
    CHECK(nc == MPI_COMM_NULL);
    MPI_Group g;
    OK(MPI_Comm_group(ic, &g));
    CHECK(MPI_Comm_create_group(ic, g, 0, &nc) == MPI_ERR_COMM);
    OK(MPI_Group_free(&g));
    int dims[1] = {1}, periods[1] = {0}, bad_dims[1] = {-1};
    CHECK(error_class(MPI_Cart_create(ic, 1, dims, periods, 0, &nc)) == MPI_ERR_COMM);
    CHECK(error_class(MPI_Cart_create(ic, 1, bad_dims, periods, 0, &nc)) == MPI_ERR_COMM);
    int index[1] = {1}, edges[1] = {0};
    CHECK(error_class(MPI_Graph_create(ic, 1, index, edges, 0, &nc)) == MPI_ERR_COMM);
    int src = 0, deg = 1, dst = 0, far = 1 << 20, w = 1;
    CHECK(error_class(MPI_Dist_graph_create(ic, 1, &src, &deg, &dst, &w,
                                            MPI_INFO_NULL, 0, &nc)) == MPI_ERR_COMM);
    CHECK(error_class(MPI_Dist_graph_create(ic, 1, &far, &deg, &far, &w,
                                            MPI_INFO_NULL, 0, &nc)) == MPI_ERR_COMM);
    CHECK(error_class(MPI_Dist_graph_create_adjacent(ic, 1, &src, &w, 1, &dst, &w,
                                                     MPI_INFO_NULL, 0, &nc)) ==
          MPI_ERR_COMM);
    CHECK(error_class(MPI_Dist_graph_create_adjacent(ic, 1, &far, &w, 1, &far, &w,
                                                     MPI_INFO_NULL, 0, &nc)) ==
          MPI_ERR_COMM);
}

static int copied;
static int copy_fn(MPI_Comm c, int key, void *extra, void *in, void *out, int *flag) {
    (void)c, (void)key, (void)extra;
    copied++;
    *(void **)out = in;
    *flag = 1;
    return MPI_SUCCESS;
}

static int half_lo, half_n;
static int remote_half(int q) { return half_lo + q; }
static int split_color;
/* Remote rank q of the split by colour: the other side's processes of
 * local rank ≡ split_color (mod 2), by key −(local rank), so the highest
 * first. */
static int remote_split(int q) {
    int on = parity_size(other_color);
    int c = 0;
    for (int r = on - 1; r >= 0; r--)
        if (r % 2 == split_color && c++ == q) return parity_world(other_color, r);
    return -1;
}
/* Remote rank q of the Comm_create: the other side's group without its
 * local rank 0 (all of it if it has one process). */
static int remote_create(int q) {
    int on = parity_size(other_color);
    return parity_world(other_color, on == 1 ? q : q + 1);
}

int main(int argc, char **argv) {
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    check_rank = rank;
    CHECK(size <= 64);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));

    /* Intra-communicators are not inter-communicators. */
    int flag = -1, n = -1;
    OK(MPI_Comm_test_inter(MPI_COMM_WORLD, &flag));
    CHECK(flag == 0);
    CHECK(MPI_Comm_remote_size(MPI_COMM_WORLD, &n) == MPI_ERR_COMM);
    MPI_Group g;
    CHECK(MPI_Comm_remote_group(MPI_COMM_WORLD, &g) == MPI_ERR_COMM);
    MPI_Comm nc;
    CHECK(MPI_Intercomm_merge(MPI_COMM_WORLD, 0, &nc) == MPI_ERR_COMM);

    if (size == 1) {
        /* Two groups need two processes: a leader that names itself as
         * the remote leader is refused. */
        OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
        CHECK(MPI_Intercomm_create(MPI_COMM_SELF, 0, MPI_COMM_WORLD, 0, 1, &nc) != MPI_SUCCESS);
        OK(MPI_Finalize());
        return 0;
    }

    /* Evens and odds, leaders world ranks 0 and 1. */
    int color = rank % 2;
    other_color = 1 - color;
    int ln = parity_size(color), rn = parity_size(other_color), lr = rank / 2;
    MPI_Comm local, ic;
    OK(MPI_Comm_split(MPI_COMM_WORLD, color, rank, &local));
    OK(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, other_color, 77, &ic));
    shape(ic, lr, ln, rn, remote_parity);
    p2p(ic, lr, ln, rn, remote_parity);

    /* The inter-communicator's messages are its own: a message on the
     * world with the same tag does not match there, nor the reverse. */
    if (lr == 0) {
        int v = -1;
        MPI_Status st;
        OK(MPI_Send(&color, 1, MPI_INT, other_color, 3, MPI_COMM_WORLD));
        OK(MPI_Send(&rank, 1, MPI_INT, 0, 3, ic));
        OK(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 3, ic, &st));
        CHECK(v == other_color && st.MPI_SOURCE == 0);
        OK(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 3, MPI_COMM_WORLD, &st));
        CHECK(v == other_color && st.MPI_SOURCE == other_color);
    }

    /* Names, attributes (copied on dup), compare, dup, idup. */
    char name[MPI_MAX_OBJECT_NAME];
    int len = -1, key, res = -1;
    OK(MPI_Comm_set_name(ic, "evens-odds"));
    OK(MPI_Comm_get_name(ic, name, &len));
    CHECK(len == 10 && strcmp(name, "evens-odds") == 0);
    OK(MPI_Comm_create_keyval(copy_fn, MPI_COMM_NULL_DELETE_FN, &key, NULL));
    OK(MPI_Comm_set_attr(ic, key, &copied));
    MPI_Comm dup, idup;
    OK(MPI_Comm_dup(ic, &dup));
    CHECK(copied == 1);
    void *val = NULL;
    OK(MPI_Comm_get_attr(dup, key, &val, &flag));
    CHECK(flag && val == &copied);
    shape(dup, lr, ln, rn, remote_parity);
    OK(MPI_Comm_compare(ic, ic, &res));
    CHECK(res == MPI_IDENT);
    OK(MPI_Comm_compare(ic, dup, &res));
    CHECK(res == MPI_CONGRUENT);
    OK(MPI_Comm_compare(ic, MPI_COMM_WORLD, &res));
    CHECK(res == MPI_UNEQUAL);
    OK(MPI_Comm_compare(ic, local, &res));
    CHECK(res == MPI_UNEQUAL);
    MPI_Request r;
    OK(MPI_Comm_idup(ic, &idup, &r));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    shape(idup, lr, ln, rn, remote_parity);
    /* dup's and ic's messages do not mix. */
    if (lr == 0) {
        int v = -1;
        OK(MPI_Send(&color, 1, MPI_INT, 0, 4, dup));
        OK(MPI_Send(&rank, 1, MPI_INT, 0, 4, idup));
        OK(MPI_Recv(&v, 1, MPI_INT, 0, 4, idup, MPI_STATUS_IGNORE));
        CHECK(v == other_color);
        OK(MPI_Recv(&v, 1, MPI_INT, 0, 4, dup, MPI_STATUS_IGNORE));
        CHECK(v == other_color);
    }
    p2p(dup, lr, ln, rn, remote_parity);
    collectives(dup, color, lr, ln, rn, remote_parity);
    nonblocking(dup, color, lr, ln, rn, remote_parity);

    /* Error handlers: ic inherited MPI_ERRORS_RETURN (through local). */
    MPI_Errhandler eh;
    OK(MPI_Comm_get_errhandler(ic, &eh));
    CHECK(eh == MPI_ERRORS_RETURN);
    collectives(ic, color, lr, ln, rn, remote_parity);
    nonblocking(ic, color, lr, ln, rn, remote_parity);
    not_provided(ic);

    /* Split: colour lr % 2, key -lr (§7.6.2): an inter-communicator of
     * the processes of that colour on both sides, MPI_COMM_NULL where the
     * other side has none. */
    split_color = lr % 2;
    MPI_Comm sp;
    OK(MPI_Comm_split(ic, split_color, -lr, &sp));
    {
        int lcount = (ln - split_color + 1) / 2, rcount = (rn - split_color + 1) / 2;
        if (rcount == 0) {
            CHECK(sp == MPI_COMM_NULL);
        } else {
            CHECK(sp != MPI_COMM_NULL);
            /* Ranks by key -lr: the highest local rank first. */
            int mine = 0;
            for (int x = ln - 1; x > lr; x--) mine += x % 2 == split_color;
            shape(sp, mine, lcount, rcount, remote_split);
            p2p(sp, mine, lcount, rcount, remote_split);
            OK(MPI_Comm_free(&sp));
        }
    }
    OK(MPI_Comm_split(ic, lr == 0 ? MPI_UNDEFINED : 0, 0, &sp));
    if (lr == 0) CHECK(sp == MPI_COMM_NULL);
    if (sp != MPI_COMM_NULL) OK(MPI_Comm_free(&sp));

    /* Create: each side keeps its group without local rank 0, unless it
     * has one process. */
    {
        MPI_Group lg, sub;
        OK(MPI_Comm_group(ic, &lg));
        int drop[1] = {0};
        if (ln > 1) {
            OK(MPI_Group_excl(lg, 1, drop, &sub));
        } else {
            OK(MPI_Group_incl(lg, 1, drop, &sub));
        }
        MPI_Comm cr;
        OK(MPI_Comm_create(ic, sub, &cr));
        int rcount = rn > 1 ? rn - 1 : 1;
        if (ln > 1 && lr == 0) {
            CHECK(cr == MPI_COMM_NULL);
        } else {
            CHECK(cr != MPI_COMM_NULL);
            int mine = ln > 1 ? lr - 1 : 0;
            int lcount = ln > 1 ? ln - 1 : 1;
            shape(cr, mine, lcount, rcount, remote_create);
            p2p(cr, mine, lcount, rcount, remote_create);
            OK(MPI_Comm_free(&cr));
        }
        OK(MPI_Group_free(&sub));
        OK(MPI_Group_free(&lg));
    }

    /* Merge: the side passing high = 0 first; with both the same, the
     * group whose leader has the lower world rank (the evens) first. */
    for (int k = 0; k < 3; k++) {
        int high = k == 0 ? color : k == 1 ? other_color : 0;
        MPI_Comm m;
        OK(MPI_Intercomm_merge(ic, high, &m));
        OK(MPI_Comm_test_inter(m, &flag));
        CHECK(flag == 0);
        OK(MPI_Comm_size(m, &n));
        CHECK(n == size);
        int mr = -1, first_is_mine = k == 2 ? color == 0 : high == 0;
        OK(MPI_Comm_rank(m, &mr));
        CHECK(mr == (first_is_mine ? lr : rn + lr));
        int sum = -1, want = size * (size - 1) / 2;
        OK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, m));
        CHECK(sum == want);
        /* Rank 0 of the merged communicator is the first group's leader. */
        int root = -1;
        if (mr == 0) root = rank;
        OK(MPI_Bcast(&root, 1, MPI_INT, 0, m));
        CHECK(root == (k == 1 ? 1 : 0));
        OK(MPI_Comm_free(&m));
    }

    /* An inter-communicator as the peer: the same groups again, the
     * leaders talking over ic (remote leader = remote rank 0). */
    MPI_Comm ic2;
    OK(MPI_Intercomm_create(local, 0, ic, 0, 78, &ic2));
    shape(ic2, lr, ln, rn, remote_parity);
    p2p(ic2, lr, ln, rn, remote_parity);
    OK(MPI_Comm_compare(ic, ic2, &res));
    CHECK(res == MPI_CONGRUENT);
    OK(MPI_Comm_free(&ic2));

    /* Halves, leaders the last process of each half, tag 0. */
    {
        int lo = size / 2, first = rank < lo;
        MPI_Comm hl, hc;
        OK(MPI_Comm_split(MPI_COMM_WORLD, first, rank, &hl));
        int hn = first ? lo : size - lo, hr = first ? rank : rank - lo;
        half_lo = first ? lo : 0;
        half_n = first ? size - lo : lo;
        OK(MPI_Intercomm_create(hl, hn - 1, MPI_COMM_WORLD, first ? size - 1 : lo - 1, 0, &hc));
        shape(hc, hr, hn, half_n, remote_half);
        p2p(hc, hr, hn, half_n, remote_half);
        OK(MPI_Comm_free(&hc));
        OK(MPI_Comm_free(&hl));
    }

    /* From groups (World model): evens and odds again, from their groups,
     * with the error handler given. */
    {
        MPI_Group world, lg, rg;
        int ev[64], od[64];
        for (int i = 0; i < ln; i++) ev[i] = parity_world(color, i);
        for (int i = 0; i < rn; i++) od[i] = parity_world(other_color, i);
        OK(MPI_Comm_group(MPI_COMM_WORLD, &world));
        OK(MPI_Group_incl(world, ln, ev, &lg));
        OK(MPI_Group_incl(world, rn, od, &rg));
        MPI_Comm fg;
        OK(MPI_Intercomm_create_from_groups(lg, 0, rg, 0, "o2g intercomm test", MPI_INFO_NULL,
                                            MPI_ERRORS_RETURN, &fg));
        shape(fg, lr, ln, rn, remote_parity);
        p2p(fg, lr, ln, rn, remote_parity);
        collectives(fg, color, lr, ln, rn, remote_parity);
        OK(MPI_Comm_get_errhandler(fg, &eh));
        CHECK(eh == MPI_ERRORS_RETURN);
        OK(MPI_Comm_free(&fg));
        OK(MPI_Group_free(&lg));
        OK(MPI_Group_free(&rg));
        OK(MPI_Group_free(&world));
    }

    OK(MPI_Comm_free(&idup));
    OK(MPI_Comm_free(&dup));
    OK(MPI_Comm_free(&ic));
    CHECK(ic == MPI_COMM_NULL);
    OK(MPI_Comm_free_keyval(&key));
    OK(MPI_Comm_free(&local));
    OK(MPI_Finalize());
    return 0;
}
