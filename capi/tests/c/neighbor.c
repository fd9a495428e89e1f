/* Neighborhood collectives (MPI 5.0 §8.6, nonblocking §8.7, persistent
 * §8.8): all 30 functions (allgather, allgatherv, alltoall, alltoallv,
 * alltoallw; blocking, MPI_Ineighbor_*, MPI_Neighbor_*_init; each in its
 * int and _c form) on six topologies: a periodic and a non-periodic 2-d
 * grid, a 3-d grid periodic in two dimensions (of sizes 1 and 2 at 4
 * ranks, where both neighbours are the same process), a graph (a ring,
 * with self-loops), a distributed graph with repeated edges and weights,
 * and a sparse one where some processes (all, at 1 rank) have no
 * neighbours. Every value received is checked, and so is every element
 * of the receive buffers that must stay as it was (gaps, and the blocks
 * of MPI_PROC_NULL neighbours). Which sent block lands in which receive
 * block: a Cartesian process's block 2d+e lands in its neighbour's block
 * 2d+1-e; otherwise the k-th block sent to a process lands in the k-th
 * block it receives from the sender. Persistent requests are started
 * three times, the send data changed in between. Vector types (with
 * gaps) check the staging of non-contiguous data. The alltoallv and
 * alltoallw int forms take negative displacements. Also: MPI_ERR_TOPOLOGY
 * without a topology, MPI_ERR_BUFFER for MPI_IN_PLACE. Correct for any
 * number of ranks. */
#include <stdlib.h>
#include <string.h>
#include "check.h"

enum { MAXD = 16, SENT = -7, ROUNDS = 3, BLK = 0, NB = 1, PERS = 2 };

static int wrank, wsize;

/* One topology communicator and what this process knows of it. */
typedef struct {
    MPI_Comm comm;
    const char *name;
    int me, cart, indeg, outdeg;
    int src[MAXD], dst[MAXD];
    /* For receive block j: the index of the sender's block that lands in
     * it, -1 for MPI_PROC_NULL. */
    int blk[MAXD];
} Topo;

/* Element k of block i that process s sends in round gen. */
static int val(int s, int i, int k, int gen) { return 100000 * gen + 1000 * s + 50 * i + k; }

static void fill(int *b, int n, int v) {
    for (int i = 0; i < n; i++) b[i] = v;
}

static void same(const Topo *t, const char *what, int mode, int big, const int *got,
                 const int *want, int n) {
    for (int i = 0; i < n; i++) {
        if (got[i] != want[i]) {
            fprintf(stderr, "rank %d: %s %s mode %d big %d: element %d is %d, expected %d\n",
                    wrank, t->name, what, mode, big, i, got[i], want[i]);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
}

/* The neighbours, from the inquiry functions, and the block pairing,
 * from every process's destinations. */
static void learn(Topo *t) {
    int kind, size;
    OK(MPI_Comm_rank(t->comm, &t->me));
    OK(MPI_Comm_size(t->comm, &size));
    OK(MPI_Topo_test(t->comm, &kind));
    t->cart = kind == MPI_CART;
    if (kind == MPI_CART) {
        int nd;
        OK(MPI_Cartdim_get(t->comm, &nd));
        CHECK(2 * nd <= MAXD);
        for (int d = 0; d < nd; d++) {
            int lo, hi;
            OK(MPI_Cart_shift(t->comm, d, 1, &lo, &hi));
            t->src[2 * d] = t->dst[2 * d] = lo;
            t->src[2 * d + 1] = t->dst[2 * d + 1] = hi;
        }
        t->indeg = t->outdeg = 2 * nd;
    } else if (kind == MPI_GRAPH) {
        OK(MPI_Graph_neighbors_count(t->comm, t->me, &t->indeg));
        CHECK(t->indeg <= MAXD);
        OK(MPI_Graph_neighbors(t->comm, t->me, MAXD, t->src));
        t->outdeg = t->indeg;
        memcpy(t->dst, t->src, sizeof t->src);
    } else {
        int w;
        CHECK(kind == MPI_DIST_GRAPH);
        OK(MPI_Dist_graph_neighbors_count(t->comm, &t->indeg, &t->outdeg, &w));
        CHECK(t->indeg <= MAXD && t->outdeg <= MAXD);
        int sw[MAXD], dw[MAXD];
        OK(MPI_Dist_graph_neighbors(t->comm, MAXD, t->src, sw, MAXD, t->dst, dw));
    }
    int mine[MAXD + 1];
    mine[0] = t->outdeg;
    memcpy(mine + 1, t->dst, sizeof t->dst);
    int *all = malloc(sizeof(int) * (MAXD + 1) * size);
    CHECK(all);
    OK(MPI_Allgather(mine, MAXD + 1, MPI_INT, all, MAXD + 1, MPI_INT, t->comm));
    for (int j = 0; j < t->indeg; j++) {
        int s = t->src[j];
        t->blk[j] = -1;
        if (s == MPI_PROC_NULL) continue;
        const int *sd = all + s * (MAXD + 1) + 1;
        int sn = sd[-1];
        if (t->cart) {
            CHECK((j ^ 1) < sn && sd[j ^ 1] == t->me);
            t->blk[j] = j ^ 1;
            continue;
        }
        int k = 0;
        for (int q = 0; q < j; q++) k += t->src[q] == s;
        for (int i = 0; i < sn; i++) {
            if (sd[i] == t->me && k-- == 0) {
                t->blk[j] = i;
                break;
            }
        }
        CHECK(t->blk[j] >= 0);
    }
    free(all);
}

#define EXPAND(...) __VA_ARGS__

/* Runs MPI_Neighbor_<f>, MPI_Ineighbor_<f> or MPI_Neighbor_<f>_init (at
 * round 0; then MPI_Start), in the int form with the arguments `a` or in
 * the _c form with `c`, and completes it. */
#define RUN(f, mode, big, gen, req, a, c)                                               \
    do {                                                                                \
        if ((mode) == BLK) {                                                            \
            if (big)                                                                    \
                OK(MPI_Neighbor_##f##_c(EXPAND c));                                     \
            else                                                                        \
                OK(MPI_Neighbor_##f(EXPAND a));                                         \
        } else if ((mode) == NB) {                                                      \
            if (big)                                                                    \
                OK(MPI_Ineighbor_##f##_c(EXPAND c, (req)));                             \
            else                                                                        \
                OK(MPI_Ineighbor_##f(EXPAND a, (req)));                                 \
            if ((gen) % 2) {                                                            \
                int done_ = 0;                                                          \
                while (!done_) OK(MPI_Test((req), &done_, MPI_STATUS_IGNORE));          \
            } else {                                                                    \
                OK(MPI_Wait((req), MPI_STATUS_IGNORE));                                 \
            }                                                                           \
            CHECK(*(req) == MPI_REQUEST_NULL);                                          \
        } else {                                                                        \
            if ((gen) == 0) {                                                           \
                if (big)                                                                \
                    OK(MPI_Neighbor_##f##_init_c(EXPAND c, MPI_INFO_NULL, (req)));      \
                else                                                                    \
                    OK(MPI_Neighbor_##f##_init(EXPAND a, MPI_INFO_NULL, (req)));        \
            }                                                                           \
            OK(MPI_Start(req));                                                         \
            OK(MPI_Wait((req), MPI_STATUS_IGNORE));                                     \
            CHECK(*(req) != MPI_REQUEST_NULL);                                          \
        }                                                                               \
    } while (0)

static int rounds(int mode) { return mode == PERS ? ROUNDS : 2; }

static void release(int mode, MPI_Request *req) {
    if (mode == PERS) {
        OK(MPI_Request_free(req));
        CHECK(*req == MPI_REQUEST_NULL);
    }
}

/* A vector of two ints with a gap between them: extent 3 ints. */
static MPI_Datatype vec2;

/* MPI_Neighbor_allgather: 3 ints from every source. */
static void t_allgather(const Topo *t, int mode, int big) {
    enum { N = 3 };
    int send[N], recv[N * MAXD], want[N * MAXD];
    MPI_Request req = MPI_REQUEST_NULL;
    for (int gen = 0; gen < rounds(mode); gen++) {
        for (int k = 0; k < N; k++) send[k] = val(t->me, 0, k, gen);
        fill(recv, N * t->indeg, SENT);
        fill(want, N * t->indeg, SENT);
        for (int j = 0; j < t->indeg; j++)
            if (t->blk[j] >= 0)
                for (int k = 0; k < N; k++) want[N * j + k] = val(t->src[j], 0, k, gen);
        RUN(allgather, mode, big, gen, &req, (send, N, MPI_INT, recv, N, MPI_INT, t->comm),
            (send, (MPI_Count)N, MPI_INT, recv, (MPI_Count)N, MPI_INT, t->comm));
        same(t, "allgather", mode, big, recv, want, N * t->indeg);
    }
    release(mode, &req);
}

/* MPI_Neighbor_allgatherv: process s sends 1 + s % 3 ints; the blocks
 * lie in reverse order in the receive buffer, a gap after each. */
static void t_allgatherv(const Topo *t, int mode, int big) {
    int n = 1 + t->me % 3, send[3], recv[5 * MAXD], want[5 * MAXD];
    int rc[MAXD], rd[MAXD];
    MPI_Count rcc[MAXD];
    MPI_Aint rdc[MAXD];
    int at = 0;
    for (int j = t->indeg - 1; j >= 0; j--) {
        rc[j] = t->blk[j] >= 0 ? 1 + t->src[j] % 3 : 2;
        rd[j] = at;
        at += rc[j] + 1;
        rcc[j] = rc[j];
        rdc[j] = rd[j];
    }
    MPI_Request req = MPI_REQUEST_NULL;
    for (int gen = 0; gen < rounds(mode); gen++) {
        for (int k = 0; k < n; k++) send[k] = val(t->me, 0, k, gen);
        fill(recv, at, SENT);
        fill(want, at, SENT);
        for (int j = 0; j < t->indeg; j++)
            if (t->blk[j] >= 0)
                for (int k = 0; k < rc[j]; k++) want[rd[j] + k] = val(t->src[j], 0, k, gen);
        RUN(allgatherv, mode, big, gen, &req,
            (send, n, MPI_INT, recv, rc, rd, MPI_INT, t->comm),
            (send, (MPI_Count)n, MPI_INT, recv, rcc, rdc, MPI_INT, t->comm));
        same(t, "allgatherv", mode, big, recv, want, at);
    }
    release(mode, &req);
}

/* MPI_Neighbor_alltoall: 2 ints per block, sent from a vector type
 * (ints 3i and 3i+2 of the send buffer for block i), received as ints;
 * in the _c form the other way round. */
static void t_alltoall(const Topo *t, int mode, int big) {
    int send[3 * MAXD], recv[3 * MAXD], want[3 * MAXD];
    MPI_Request req = MPI_REQUEST_NULL;
    int rlen = big ? 3 * t->indeg : 2 * t->indeg;
    for (int gen = 0; gen < rounds(mode); gen++) {
        fill(send, 3 * MAXD, -1);
        for (int i = 0; i < t->outdeg; i++)
            for (int k = 0; k < 2; k++) {
                if (big)
                    send[2 * i + k] = val(t->me, i, k, gen);
                else
                    send[3 * i + 2 * k] = val(t->me, i, k, gen);
            }
        fill(recv, rlen, SENT);
        fill(want, rlen, SENT);
        for (int j = 0; j < t->indeg; j++)
            if (t->blk[j] >= 0)
                for (int k = 0; k < 2; k++)
                    want[big ? 3 * j + 2 * k : 2 * j + k] = val(t->src[j], t->blk[j], k, gen);
        RUN(alltoall, mode, big, gen, &req, (send, 1, vec2, recv, 2, MPI_INT, t->comm),
            (send, (MPI_Count)2, MPI_INT, recv, (MPI_Count)1, vec2, t->comm));
        same(t, "alltoall", mode, big, recv, want, rlen);
    }
    release(mode, &req);
}

/* Ints process s sends in its block i of an alltoallv (zero included). */
static int cnt_v(int s, int i) { return (s + i) % 3; }

/* MPI_Neighbor_alltoallv: blocks of cnt_v ints, a gap after each; the
 * receive blocks in reverse order; negative displacements in the int
 * form. */
static void t_alltoallv(const Topo *t, int mode, int big) {
    int send[4 * MAXD], recv[4 * MAXD], want[4 * MAXD];
    int sc[MAXD], sd[MAXD], rc[MAXD], rd[MAXD];
    MPI_Count scc[MAXD], rcc[MAXD];
    MPI_Aint sdc[MAXD], rdc[MAXD];
    int sat = 0, rat = 0;
    for (int i = 0; i < t->outdeg; i++) {
        sc[i] = cnt_v(t->me, i);
        sd[i] = sat;
        sat += sc[i] + 1;
        scc[i] = sc[i];
        sdc[i] = sd[i];
    }
    for (int j = t->indeg - 1; j >= 0; j--) {
        rc[j] = t->blk[j] >= 0 ? cnt_v(t->src[j], t->blk[j]) : 1;
        rd[j] = rat;
        rat += rc[j] + 1;
        rcc[j] = rc[j];
        rdc[j] = rd[j];
    }
    /* The int form's displacements, from the end of the send blocks and
     * the middle of the receive ones: negative, or of both signs. */
    int nsd[MAXD], nrd[MAXD];
    for (int i = 0; i < t->outdeg; i++) nsd[i] = sd[i] - sat;
    for (int j = 0; j < t->indeg; j++) nrd[j] = rd[j] - rat / 2;
    MPI_Request req = MPI_REQUEST_NULL;
    for (int gen = 0; gen < rounds(mode); gen++) {
        fill(send, sat, -1);
        for (int i = 0; i < t->outdeg; i++)
            for (int k = 0; k < sc[i]; k++) send[sd[i] + k] = val(t->me, i, k, gen);
        fill(recv, rat, SENT);
        fill(want, rat, SENT);
        for (int j = 0; j < t->indeg; j++)
            if (t->blk[j] >= 0)
                for (int k = 0; k < rc[j]; k++)
                    want[rd[j] + k] = val(t->src[j], t->blk[j], k, gen);
        RUN(alltoallv, mode, big, gen, &req,
            (send + sat, sc, nsd, MPI_INT, recv + rat / 2, rc, nrd, MPI_INT, t->comm),
            (send, scc, sdc, MPI_INT, recv, rcc, rdc, MPI_INT, t->comm));
        same(t, "alltoallv", mode, big, recv, want, rat);
    }
    release(mode, &req);
}

/* Ints process s sends in its block i of an alltoallw: 2 or 4. */
static int cnt_w(int s, int i) { return 2 * (1 + (s + i) % 2); }

/* MPI_Neighbor_alltoallw: sent as ints, received into odd blocks as
 * vectors (two ints with a gap each), into even ones as ints; byte
 * displacements, a gap after each block, the receive blocks in reverse
 * order; negative displacements in the int form. */
static void t_alltoallw(const Topo *t, int mode, int big) {
    int send[5 * MAXD], recv[7 * MAXD], want[7 * MAXD];
    int sc[MAXD], rc[MAXD];
    MPI_Count scc[MAXD], rcc[MAXD];
    MPI_Aint sd[MAXD], rd[MAXD];
    MPI_Datatype st[MAXD], rt[MAXD];
    int sat = 0, rat = 0;
    for (int i = 0; i < t->outdeg; i++) {
        scc[i] = sc[i] = cnt_w(t->me, i);
        sd[i] = (MPI_Aint)sizeof(int) * sat;
        st[i] = MPI_INT;
        sat += sc[i] + 1;
    }
    for (int j = t->indeg - 1; j >= 0; j--) {
        int n = t->blk[j] >= 0 ? cnt_w(t->src[j], t->blk[j]) : 2;
        rd[j] = (MPI_Aint)sizeof(int) * rat;
        if (j % 2) {
            rc[j] = n / 2;
            rt[j] = vec2;
            rat += 3 * (n / 2) + 1;
        } else {
            rc[j] = n;
            rt[j] = MPI_INT;
            rat += n + 1;
        }
        rcc[j] = rc[j];
    }
    /* The int form's byte displacements, from the end of the send
     * blocks and the middle of the receive ones: negative, or of both
     * signs. */
    MPI_Aint nsd[MAXD], nrd[MAXD];
    for (int i = 0; i < t->outdeg; i++) nsd[i] = sd[i] - (MPI_Aint)sizeof(int) * sat;
    for (int j = 0; j < t->indeg; j++) nrd[j] = rd[j] - (MPI_Aint)sizeof(int) * (rat / 2);
    MPI_Request req = MPI_REQUEST_NULL;
    for (int gen = 0; gen < rounds(mode); gen++) {
        fill(send, sat, -1);
        for (int i = 0; i < t->outdeg; i++)
            for (int k = 0; k < sc[i]; k++)
                send[sd[i] / (MPI_Aint)sizeof(int) + k] = val(t->me, i, k, gen);
        fill(recv, rat, SENT);
        fill(want, rat, SENT);
        for (int j = 0; j < t->indeg; j++) {
            if (t->blk[j] < 0) continue;
            int base = (int)(rd[j] / (MPI_Aint)sizeof(int));
            int n = cnt_w(t->src[j], t->blk[j]);
            for (int k = 0; k < n; k++) {
                int at = j % 2 ? 3 * (k / 2) + 2 * (k % 2) : k;
                want[base + at] = val(t->src[j], t->blk[j], k, gen);
            }
        }
        RUN(alltoallw, mode, big, gen, &req,
            (send + sat, sc, nsd, st, recv + rat / 2, rc, nrd, rt, t->comm),
            (send, scc, sd, st, recv, rcc, rd, rt, t->comm));
        same(t, "alltoallw", mode, big, recv, want, rat);
    }
    release(mode, &req);
}

static void all_of(Topo *t) {
    learn(t);
    for (int mode = BLK; mode <= PERS; mode++) {
        for (int big = 0; big < 2; big++) {
            t_allgather(t, mode, big);
            t_allgatherv(t, mode, big);
            t_alltoall(t, mode, big);
            t_alltoallv(t, mode, big);
            t_alltoallw(t, mode, big);
        }
    }
    /* Two nonblocking ones outstanding at once, completed in reverse. */
    int a[1] = {val(t->me, 0, 0, 7)}, b[1] = {val(t->me, 0, 0, 8)};
    int ra[MAXD], rb[MAXD];
    fill(ra, MAXD, SENT);
    fill(rb, MAXD, SENT);
    MPI_Request r[2];
    OK(MPI_Ineighbor_allgather(a, 1, MPI_INT, ra, 1, MPI_INT, t->comm, &r[0]));
    OK(MPI_Ineighbor_allgather(b, 1, MPI_INT, rb, 1, MPI_INT, t->comm, &r[1]));
    OK(MPI_Wait(&r[1], MPI_STATUS_IGNORE));
    OK(MPI_Wait(&r[0], MPI_STATUS_IGNORE));
    for (int j = 0; j < t->indeg; j++) {
        int ok = t->blk[j] < 0 ? ra[j] == SENT && rb[j] == SENT
                               : ra[j] == val(t->src[j], 0, 0, 7) && rb[j] == val(t->src[j], 0, 0, 8);
        CHECK(ok);
    }
    OK(MPI_Comm_free(&t->comm));
}

static void cart(const char *name, int nd, const int *periods) {
    int dims[3] = {0, 0, 0};
    Topo t = {.name = name};
    OK(MPI_Dims_create(wsize, nd, dims));
    OK(MPI_Cart_create(MPI_COMM_WORLD, nd, dims, periods, 0, &t.comm));
    CHECK(t.comm != MPI_COMM_NULL);
    all_of(&t);
}

int main(int argc, char **argv) {
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &wrank));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &wsize));
    check_rank = wrank;
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    OK(MPI_Type_vector(2, 1, 2, MPI_INT, &vec2));
    OK(MPI_Type_commit(&vec2));
    int cls, x = 0, y[MAXD];

    /* No topology. */
    int rc = MPI_Neighbor_allgather(&x, 1, MPI_INT, y, 1, MPI_INT, MPI_COMM_WORLD);
    OK(MPI_Error_class(rc, &cls));
    CHECK(cls == MPI_ERR_TOPOLOGY);
    MPI_Request req;
    rc = MPI_Ineighbor_alltoall(&x, 1, MPI_INT, y, 1, MPI_INT, MPI_COMM_WORLD, &req);
    OK(MPI_Error_class(rc, &cls));
    CHECK(cls == MPI_ERR_TOPOLOGY);

    cart("periodic 2-d grid", 2, (int[]){1, 1});
    cart("non-periodic 2-d grid", 2, (int[]){0, 0});
    cart("3-d grid periodic in dimensions 1 and 2", 3, (int[]){0, 1, 1});

    /* A ring (both ways), with a self-loop at even ranks. */
    {
        int *index = malloc(sizeof(int) * wsize), *edges = malloc(sizeof(int) * 3 * wsize);
        CHECK(index && edges);
        int e = 0;
        for (int r = 0; r < wsize; r++) {
            edges[e++] = (r + 1) % wsize;
            if (r % 2 == 0) edges[e++] = r;
            edges[e++] = (r + wsize - 1) % wsize;
            index[r] = e;
        }
        Topo t = {.name = "graph"};
        OK(MPI_Graph_create(MPI_COMM_WORLD, wsize, index, edges, 0, &t.comm));
        free(index);
        free(edges);
        all_of(&t);
    }

    /* Repeated edges: twice to the next rank, once to the one after;
     * the sources listed in an order of their own, with weights. */
    {
        int n = wsize, r = wrank;
        int srcs[3] = {(r + n - 1) % n, (r + n - 2) % n, (r + n - 1) % n};
        int dsts[3] = {(r + 1) % n, (r + 2) % n, (r + 1) % n};
        int sw[3] = {5, 6, 7}, dw[3] = {1, 2, 3};
        Topo t = {.name = "distributed graph with repeated edges"};
        OK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 3, srcs, sw, 3, dsts, dw,
                                          MPI_INFO_NULL, 0, &t.comm));
        CHECK(t.comm != MPI_COMM_NULL);
        OK(MPI_Comm_set_errhandler(t.comm, MPI_ERRORS_RETURN));
        /* MPI_IN_PLACE is not allowed. */
        int z[3 * MAXD];
        rc = MPI_Neighbor_alltoall(MPI_IN_PLACE, 1, MPI_INT, z, 1, MPI_INT, t.comm);
        OK(MPI_Error_class(rc, &cls));
        CHECK(cls == MPI_ERR_BUFFER);
        all_of(&t);
    }

    /* Sparse: even rank r to r + 1 (none from the last even rank); the
     * others and, at 1 rank, everybody have empty neighbourhoods of one
     * side or both. Edges given by the rank after the source. */
    {
        int src = wrank - 1, dst = wrank;
        int give = wrank % 2 == 1;
        Topo t = {.name = "sparse distributed graph"};
        int deg = 1, w = 4;
        OK(MPI_Dist_graph_create(MPI_COMM_WORLD, give, &src, &deg, &dst, &w, MPI_INFO_NULL, 0,
                                 &t.comm));
        CHECK(t.comm != MPI_COMM_NULL);
        all_of(&t);
    }

    OK(MPI_Type_free(&vec2));
    OK(MPI_Finalize());
    return 0;
}
