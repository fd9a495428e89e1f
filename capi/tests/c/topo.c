/* Process topologies (MPI 5.0 chapter 8): Dims_create, Cartesian grids
 * (coordinates, ranks, shifts checked by messages to the neighbours,
 * sub-grids), graphs and distributed graphs, each value against one
 * computed here. Correct for any number of ranks. */
#include <string.h>
#include "check.h"

static void dims_are(int nnodes, int ndims, const int *in, const int *want) {
    int d[8];
    memcpy(d, in, ndims * sizeof *d);
    OK(MPI_Dims_create(nnodes, ndims, d));
    for (int i = 0; i < ndims; i++) CHECK(d[i] == want[i]);
}

int main(int argc, char **argv) {
    int rank, size, n, t, r, flag;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    check_rank = rank;
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));

    dims_are(6, 2, (int[]){0, 0}, (int[]){3, 2});
    dims_are(7, 2, (int[]){0, 0}, (int[]){7, 1});
    dims_are(12, 3, (int[]){0, 0, 0}, (int[]){3, 2, 2});
    dims_are(16, 4, (int[]){0, 0, 0, 0}, (int[]){2, 2, 2, 2});
    dims_are(24, 3, (int[]){0, 3, 0}, (int[]){4, 3, 2});
    dims_are(1, 2, (int[]){0, 0}, (int[]){1, 1});
    {
        int d[2] = {3, 0}, cls;
        int rc = MPI_Dims_create(10, 2, d);
        OK(MPI_Error_class(rc, &cls));
        CHECK(cls == MPI_ERR_DIMS);
    }

    OK(MPI_Topo_test(MPI_COMM_WORLD, &t));
    CHECK(t == MPI_UNDEFINED);

    /* A 2-d grid over every rank: periodic in dimension 0 only. */
    int dims[2] = {0, 0}, periods[2] = {1, 0};
    OK(MPI_Dims_create(size, 2, dims));
    CHECK(dims[0] * dims[1] == size && dims[0] >= dims[1]);
    MPI_Comm cart;
    OK(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 1, &cart));
    CHECK(cart != MPI_COMM_NULL);
    OK(MPI_Topo_test(cart, &t));
    CHECK(t == MPI_CART);
    OK(MPI_Cartdim_get(cart, &n));
    CHECK(n == 2);
    int gd[2], gp[2], gc[2];
    OK(MPI_Cart_get(cart, 2, gd, gp, gc));
    CHECK(gd[0] == dims[0] && gd[1] == dims[1] && gp[0] == 1 && gp[1] == 0);
    CHECK(gc[0] == rank / dims[1] && gc[1] == rank % dims[1]);
    for (int q = 0; q < size; q++) {
        int c[2];
        OK(MPI_Cart_coords(cart, q, 2, c));
        CHECK(c[0] == q / dims[1] && c[1] == q % dims[1]);
        OK(MPI_Cart_rank(cart, c, &r));
        CHECK(r == q);
    }
    {
        int c[2] = {-1, 0};
        OK(MPI_Cart_rank(cart, c, &r));
        CHECK(r == (dims[0] - 1) * dims[1]);
        c[0] = 0;
        c[1] = dims[1];
        CHECK(MPI_Cart_rank(cart, c, &r) != MPI_SUCCESS);
    }
    /* Shifts, checked by sending each neighbour our rank. */
    int src, dst;
    OK(MPI_Cart_shift(cart, 0, 1, &src, &dst));
    CHECK(src == ((gc[0] - 1 + dims[0]) % dims[0]) * dims[1] + gc[1]);
    CHECK(dst == ((gc[0] + 1) % dims[0]) * dims[1] + gc[1]);
    {
        int got = -1;
        OK(MPI_Sendrecv(&rank, 1, MPI_INT, dst, 5, &got, 1, MPI_INT, src, 5, cart, MPI_STATUS_IGNORE));
        CHECK(got == src);
    }
    OK(MPI_Cart_shift(cart, 1, 1, &src, &dst));
    CHECK(src == (gc[1] == 0 ? MPI_PROC_NULL : rank - 1));
    CHECK(dst == (gc[1] == dims[1] - 1 ? MPI_PROC_NULL : rank + 1));
    {
        int got = -7;
        OK(MPI_Sendrecv(&rank, 1, MPI_INT, dst, 6, &got, 1, MPI_INT, src, 6, cart, MPI_STATUS_IGNORE));
        CHECK(got == (src == MPI_PROC_NULL ? -7 : src));
    }
    OK(MPI_Cart_shift(cart, 1, -2, &src, &dst));
    CHECK(src == (gc[1] + 2 < dims[1] ? rank + 2 : MPI_PROC_NULL));
    CHECK(dst == (gc[1] - 2 >= 0 ? rank - 2 : MPI_PROC_NULL));
    CHECK(MPI_Cart_shift(cart, 2, 1, &src, &dst) != MPI_SUCCESS);

    /* Rows (keep dimension 1) and columns (keep dimension 0). */
    MPI_Comm row, col;
    OK(MPI_Cart_sub(cart, (int[]){0, 1}, &row));
    OK(MPI_Comm_size(row, &n));
    CHECK(n == dims[1]);
    OK(MPI_Comm_rank(row, &r));
    CHECK(r == gc[1]);
    OK(MPI_Cartdim_get(row, &n));
    CHECK(n == 1);
    {
        int sum = -1;
        OK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, row));
        int want = 0;
        for (int j = 0; j < dims[1]; j++) want += gc[0] * dims[1] + j;
        CHECK(sum == want);
    }
    OK(MPI_Cart_sub(cart, (int[]){1, 0}, &col));
    OK(MPI_Comm_size(col, &n));
    CHECK(n == dims[0]);
    OK(MPI_Cart_get(col, 1, gd, gp, gc + 1));
    CHECK(gd[0] == dims[0] && gp[0] == 1 && gc[1] == rank / dims[1]);
    OK(MPI_Comm_free(&row));
    OK(MPI_Comm_free(&col));
    {
        MPI_Comm dup;
        OK(MPI_Comm_dup(cart, &dup));
        OK(MPI_Topo_test(dup, &t));
        CHECK(t == MPI_CART);
        OK(MPI_Comm_free(&dup));
    }
    OK(MPI_Comm_free(&cart));

    /* A 1-d grid of all but the last rank: the last gets COMM_NULL. */
    {
        int d1 = size > 1 ? size - 1 : 1, p1 = 0;
        OK(MPI_Cart_map(MPI_COMM_WORLD, 1, &d1, &p1, &r));
        CHECK(r == (rank < d1 ? rank : MPI_UNDEFINED));
        OK(MPI_Cart_create(MPI_COMM_WORLD, 1, &d1, &p1, 0, &cart));
        if (rank < d1) {
            OK(MPI_Comm_size(cart, &n));
            CHECK(n == d1);
            OK(MPI_Comm_free(&cart));
        } else {
            CHECK(cart == MPI_COMM_NULL);
        }
        int big = size + 1;
        CHECK(MPI_Cart_create(MPI_COMM_WORLD, 1, &big, &p1, 0, &cart) != MPI_SUCCESS);
    }

    /* A graph: a ring, node i linked to i-1 and i+1. */
    {
        int index[64], edges[128], e = 0;
        CHECK(size <= 64);
        for (int i = 0; i < size; i++) {
            if (size > 1) edges[e++] = (i + size - 1) % size;
            if (size > 2) edges[e++] = (i + 1) % size;
            index[i] = e;
        }
        MPI_Comm g;
        OK(MPI_Graph_map(MPI_COMM_WORLD, size, index, edges, &r));
        CHECK(r == rank);
        OK(MPI_Graph_create(MPI_COMM_WORLD, size, index, edges, 0, &g));
        OK(MPI_Topo_test(g, &t));
        CHECK(t == MPI_GRAPH);
        int nn, ne;
        OK(MPI_Graphdims_get(g, &nn, &ne));
        CHECK(nn == size && ne == e);
        int gi[64], ge[128];
        OK(MPI_Graph_get(g, 64, 128, gi, ge));
        CHECK(memcmp(gi, index, size * sizeof(int)) == 0 && memcmp(ge, edges, e * sizeof(int)) == 0);
        int want = size > 2 ? 2 : size - 1, nb[2];
        OK(MPI_Graph_neighbors_count(g, rank, &n));
        CHECK(n == want);
        OK(MPI_Graph_neighbors(g, rank, 2, nb));
        if (want > 0) CHECK(nb[0] == (rank + size - 1) % size);
        if (want > 1) CHECK(nb[1] == (rank + 1) % size);
        CHECK(MPI_Cartdim_get(g, &n) != MPI_SUCCESS);
        OK(MPI_Comm_free(&g));
    }

    /* A distributed graph, adjacent form: edges to the next rank, with
     * weights; then the same graph given by rank 0 alone. */
    {
        int next = (rank + 1) % size, prev = (rank + size - 1) % size;
        int wout = 10 + rank, win = 10 + prev;
        MPI_Comm dg;
        OK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &prev, &win, 1, &next, &wout,
                                          MPI_INFO_NULL, 0, &dg));
        OK(MPI_Topo_test(dg, &t));
        CHECK(t == MPI_DIST_GRAPH);
        int in, out, s, sw, d, dw;
        OK(MPI_Dist_graph_neighbors_count(dg, &in, &out, &flag));
        CHECK(in == 1 && out == 1 && flag == 1);
        OK(MPI_Dist_graph_neighbors(dg, 1, &s, &sw, 1, &d, &dw));
        CHECK(s == prev && sw == win && d == next && dw == wout);
        int got = -1;
        OK(MPI_Sendrecv(&rank, 1, MPI_INT, d, 0, &got, 1, MPI_INT, s, 0, dg, MPI_STATUS_IGNORE));
        CHECK(got == prev);
        OK(MPI_Comm_free(&dg));

        int srcs[64], degs[64], dsts[64], ws[64], k = rank == 0 ? size : 0;
        for (int i = 0; i < k; i++) {
            srcs[i] = i;
            degs[i] = 1;
            dsts[i] = (i + 1) % size;
            ws[i] = 10 + i;
        }
        OK(MPI_Dist_graph_create(MPI_COMM_WORLD, k, srcs, degs, dsts, ws, MPI_INFO_NULL, 0, &dg));
        OK(MPI_Dist_graph_neighbors_count(dg, &in, &out, &flag));
        CHECK(in == 1 && out == 1 && flag == 1);
        OK(MPI_Dist_graph_neighbors(dg, 1, &s, &sw, 1, &d, &dw));
        CHECK(s == prev && sw == win && d == next && dw == wout);
        OK(MPI_Comm_free(&dg));

        /* Unweighted, and a process with no edges at all. */
        /* (through a volatile, so that the compiler does not take the
         * special values for arrays it could check) */
        int none = 0;
        int *volatile w = rank == 0 ? MPI_WEIGHTS_EMPTY : MPI_UNWEIGHTED;
        OK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 0, &none, w, 0, &none, w, MPI_INFO_NULL, 0,
                                          &dg));
        OK(MPI_Dist_graph_neighbors_count(dg, &in, &out, &flag));
        CHECK(in == 0 && out == 0 && flag == (rank == 0));
        OK(MPI_Comm_free(&dg));
    }

    OK(MPI_Finalize());
    return 0;
}
