/* The large-count `_c` functions outside the collectives (MPI 5.0
 * §2.5.8): every point-to-point send mode, receives, send-receives,
 * matched receives, persistent requests, the attached buffer,
 * Get_count_c, the type constructors with Type_get_envelope_c /
 * Type_get_contents_c, and packing; each compared with its `int` twin
 * where there is one, every value checked. Counts that do not fit
 * (negative, or bytes overflowing) are MPI_ERR_COUNT; the `int` forms
 * report a count above INT_MAX as MPI_UNDEFINED. Correct at any number
 * of ranks. */
#include <limits.h>
#include <string.h>
#include "check.h"

#define LEN 6

static int error_class(int rc) {
    int cls = -1;
    OK(MPI_Error_class(rc, &cls));
    return cls;
}

static void fill(int *v, int n, int base) {
    for (int i = 0; i < n; i++) v[i] = base + i;
}

static void check_vals(const int *v, int n, int base) {
    for (int i = 0; i < n; i++) CHECK(v[i] == base + i);
}

static void check_status(MPI_Status *st, int src, int tag, MPI_Count n) {
    MPI_Count c = -1;
    int ci = -1;
    CHECK(st->MPI_SOURCE == src && st->MPI_TAG == tag);
    OK(MPI_Get_count_c(st, MPI_INT, &c));
    CHECK(c == n);
    OK(MPI_Get_count(st, MPI_INT, &ci));
    CHECK(ci == (int)n);
}

/* Packs `count` elements of a and b from `src` and checks that the two
 * types give the same bytes, sizes and extents. */
static void same_type(MPI_Datatype a, MPI_Datatype b, const int *src) {
    MPI_Count sa, sb, lba, lbb, ea, eb;
    OK(MPI_Type_size_c(a, &sa));
    OK(MPI_Type_size_c(b, &sb));
    CHECK(sa == sb && sa > 0);
    OK(MPI_Type_get_extent_c(a, &lba, &ea));
    OK(MPI_Type_get_extent_c(b, &lbb, &eb));
    CHECK(lba == lbb && ea == eb);
    char pa[1024], pb[1024];
    MPI_Count posa = 0, psize = 0;
    int posb = 0;
    OK(MPI_Pack_size_c(2, a, MPI_COMM_WORLD, &psize));
    CHECK(psize == 2 * sa && psize <= (MPI_Count)sizeof pa);
    OK(MPI_Pack_c(src, 2, a, pa, sizeof pa, &posa, MPI_COMM_WORLD));
    OK(MPI_Pack(src, 2, b, pb, sizeof pb, &posb, MPI_COMM_WORLD));
    CHECK(posa == 2 * sa && posb == (int)posa);
    CHECK(memcmp(pa, pb, (size_t)posa) == 0);
}

/* The envelope and contents of a type made by a `_c` constructor. */
static void check_contents(MPI_Datatype t, int combiner, MPI_Count ni, MPI_Count na,
                           MPI_Count nc, MPI_Count nd, const int *ints,
                           const MPI_Count *counts) {
    MPI_Count gi, ga, gc, gd;
    int comb, i1, i2, i3, i4;
    OK(MPI_Type_get_envelope_c(t, &gi, &ga, &gc, &gd, &comb));
    CHECK(gi == ni && ga == na && gc == nc && gd == nd && comb == combiner);
    /* The int form cannot describe large counts. */
    if (nc > 0)
        CHECK(error_class(MPI_Type_get_envelope(t, &i1, &i2, &i3, &i4)) == MPI_ERR_TYPE);
    int gints[16];
    MPI_Aint gaddr[16];
    MPI_Count gcounts[32];
    MPI_Datatype gtypes[4];
    OK(MPI_Type_get_contents_c(t, 16, 16, 32, 4, gints, gaddr, gcounts, gtypes));
    for (MPI_Count i = 0; i < ni; i++) CHECK(gints[i] == ints[i]);
    for (MPI_Count i = 0; i < nc; i++) CHECK(gcounts[i] == counts[i]);
    for (MPI_Count i = 0; i < nd; i++) CHECK(gtypes[i] == MPI_INT);
    if (nc > 0)
        CHECK(error_class(MPI_Type_get_contents(t, 16, 16, 4, gints, gaddr, gtypes)) ==
              MPI_ERR_TYPE);
}

static void commit_pair(MPI_Datatype *a, MPI_Datatype *b, const int *src) {
    OK(MPI_Type_commit(a));
    OK(MPI_Type_commit(b));
    same_type(*a, *b, src);
}

static void free_pair(MPI_Datatype *a, MPI_Datatype *b) {
    OK(MPI_Type_free(a));
    OK(MPI_Type_free(b));
}

static void constructors(int rank) {
    int src[256];
    fill(src, 256, 1000 * rank);
    MPI_Datatype a, b;

    OK(MPI_Type_contiguous_c(3, MPI_INT, &a));
    OK(MPI_Type_contiguous(3, MPI_INT, &b));
    check_contents(a, MPI_COMBINER_CONTIGUOUS, 0, 0, 1, 1, NULL, (MPI_Count[]){3});
    commit_pair(&a, &b, src);
    free_pair(&a, &b);

    OK(MPI_Type_vector_c(3, 2, 4, MPI_INT, &a));
    OK(MPI_Type_vector(3, 2, 4, MPI_INT, &b));
    check_contents(a, MPI_COMBINER_VECTOR, 0, 0, 3, 1, NULL, (MPI_Count[]){3, 2, 4});
    commit_pair(&a, &b, src);
    free_pair(&a, &b);

    OK(MPI_Type_create_hvector_c(2, 3, 20, MPI_INT, &a));
    OK(MPI_Type_create_hvector(2, 3, 20, MPI_INT, &b));
    check_contents(a, MPI_COMBINER_HVECTOR, 0, 0, 3, 1, NULL, (MPI_Count[]){2, 3, 20});
    commit_pair(&a, &b, src);
    free_pair(&a, &b);

    {
        MPI_Count bl[3] = {2, 1, 3}, d[3] = {0, 5, 9};
        int bli[3] = {2, 1, 3}, di[3] = {0, 5, 9};
        OK(MPI_Type_indexed_c(3, bl, d, MPI_INT, &a));
        OK(MPI_Type_indexed(3, bli, di, MPI_INT, &b));
        check_contents(a, MPI_COMBINER_INDEXED, 0, 0, 7, 1, NULL,
                       (MPI_Count[]){3, 2, 1, 3, 0, 5, 9});
        commit_pair(&a, &b, src);
        free_pair(&a, &b);
    }
    {
        MPI_Count bl[2] = {2, 3}, d[2] = {4, 24};
        int bli[2] = {2, 3};
        MPI_Aint da[2] = {4, 24};
        OK(MPI_Type_create_hindexed_c(2, bl, d, MPI_INT, &a));
        OK(MPI_Type_create_hindexed(2, bli, da, MPI_INT, &b));
        check_contents(a, MPI_COMBINER_HINDEXED, 0, 0, 5, 1, NULL,
                       (MPI_Count[]){2, 2, 3, 4, 24});
        commit_pair(&a, &b, src);
        free_pair(&a, &b);
    }
    {
        MPI_Count d[3] = {1, 4, 8};
        int di[3] = {1, 4, 8};
        OK(MPI_Type_create_indexed_block_c(3, 2, d, MPI_INT, &a));
        OK(MPI_Type_create_indexed_block(3, 2, di, MPI_INT, &b));
        check_contents(a, MPI_COMBINER_INDEXED_BLOCK, 0, 0, 5, 1, NULL,
                       (MPI_Count[]){3, 2, 1, 4, 8});
        commit_pair(&a, &b, src);
        free_pair(&a, &b);
    }
    {
        MPI_Count d[2] = {8, 40};
        MPI_Aint da[2] = {8, 40};
        OK(MPI_Type_create_hindexed_block_c(2, 3, d, MPI_INT, &a));
        OK(MPI_Type_create_hindexed_block(2, 3, da, MPI_INT, &b));
        check_contents(a, MPI_COMBINER_HINDEXED_BLOCK, 0, 0, 4, 1, NULL,
                       (MPI_Count[]){2, 3, 8, 40});
        commit_pair(&a, &b, src);
        free_pair(&a, &b);
    }
    {
        MPI_Count bl[2] = {1, 2}, d[2] = {0, 12};
        int bli[2] = {1, 2};
        MPI_Aint da[2] = {0, 12};
        MPI_Datatype ts[2] = {MPI_INT, MPI_INT};
        OK(MPI_Type_create_struct_c(2, bl, d, ts, &a));
        OK(MPI_Type_create_struct(2, bli, da, ts, &b));
        check_contents(a, MPI_COMBINER_STRUCT, 0, 0, 5, 2, NULL,
                       (MPI_Count[]){2, 1, 2, 0, 12});
        commit_pair(&a, &b, src);
        free_pair(&a, &b);
    }
    {
        MPI_Count sz[2] = {4, 6}, sub[2] = {2, 3}, st[2] = {1, 2};
        int szi[2] = {4, 6}, subi[2] = {2, 3}, sti[2] = {1, 2};
        OK(MPI_Type_create_subarray_c(2, sz, sub, st, MPI_ORDER_C, MPI_INT, &a));
        OK(MPI_Type_create_subarray(2, szi, subi, sti, MPI_ORDER_C, MPI_INT, &b));
        check_contents(a, MPI_COMBINER_SUBARRAY, 2, 0, 6, 1, (int[]){2, MPI_ORDER_C},
                       (MPI_Count[]){4, 6, 2, 3, 1, 2});
        commit_pair(&a, &b, src);
        free_pair(&a, &b);
    }
    {
        MPI_Count g[2] = {4, 6};
        int gi[2] = {4, 6}, dist[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC};
        int darg[2] = {MPI_DISTRIBUTE_DFLT_DARG, 2}, ps[2] = {2, 2};
        /* Rank 1 of a 2 x 2 grid, whatever the job's size. */
        OK(MPI_Type_create_darray_c(4, 1, 2, g, dist, darg, ps, MPI_ORDER_C, MPI_INT, &a));
        OK(MPI_Type_create_darray(4, 1, 2, gi, dist, darg, ps, MPI_ORDER_C, MPI_INT, &b));
        int ints[] = {4, 1, 2, MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC,
                      MPI_DISTRIBUTE_DFLT_DARG, 2, 2, 2, MPI_ORDER_C};
        check_contents(a, MPI_COMBINER_DARRAY, 10, 0, 2, 1, ints, (MPI_Count[]){4, 6});
        commit_pair(&a, &b, src);
        free_pair(&a, &b);
    }
    {
        OK(MPI_Type_create_resized_c(MPI_INT, -4, 16, &a));
        OK(MPI_Type_create_resized(MPI_INT, -4, 16, &b));
        check_contents(a, MPI_COMBINER_RESIZED, 0, 0, 2, 1, NULL, (MPI_Count[]){-4, 16});
        MPI_Count lb, ext;
        OK(MPI_Type_get_extent_c(a, &lb, &ext));
        CHECK(lb == -4 && ext == 16);
        commit_pair(&a, &b, src + 4);
        free_pair(&a, &b);
    }

    /* A type made by an int constructor: no large counts in either form. */
    {
        MPI_Count gi, ga, gc, gd;
        int comb, i1, i2, i3, ints[3];
        OK(MPI_Type_vector(3, 2, 4, MPI_INT, &b));
        OK(MPI_Type_get_envelope_c(b, &gi, &ga, &gc, &gd, &comb));
        CHECK(gi == 3 && ga == 0 && gc == 0 && gd == 1 && comb == MPI_COMBINER_VECTOR);
        OK(MPI_Type_get_envelope(b, &i1, &i2, &i3, &comb));
        CHECK(i1 == 3 && i2 == 0 && i3 == 1);
        MPI_Datatype t;
        OK(MPI_Type_get_contents(b, 3, 0, 1, ints, NULL, &t));
        CHECK(ints[0] == 3 && ints[1] == 2 && ints[2] == 4 && t == MPI_INT);
        OK(MPI_Type_free(&b));
    }

    /* Bad counts: negative, and byte sizes that overflow. */
    CHECK(error_class(MPI_Type_contiguous_c(-1, MPI_INT, &a)) == MPI_ERR_COUNT);
    CHECK(error_class(MPI_Type_vector_c(2, -1, 1, MPI_INT, &a)) == MPI_ERR_ARG);

    /* A type of 2^34 bytes: its size is MPI_UNDEFINED in the int form. */
    MPI_Datatype page;
    OK(MPI_Type_contiguous_c(4096, MPI_INT, &page));
    OK(MPI_Type_contiguous_c((MPI_Count)1 << 20, page, &a));
    MPI_Count big = 0;
    int small = 0;
    OK(MPI_Type_size_c(a, &big));
    CHECK(big == (MPI_Count)1 << 34);
    OK(MPI_Type_size(a, &small));
    CHECK(small == MPI_UNDEFINED);
    OK(MPI_Type_free(&a));
    OK(MPI_Type_free(&page));
}

static void packing(int rank) {
    int src[LEN], dst[LEN];
    fill(src, LEN, 50 + rank);
    char buf[256];
    MPI_Count pos = 0, size = 0;
    OK(MPI_Pack_size_c(LEN, MPI_INT, MPI_COMM_WORLD, &size));
    CHECK(size == LEN * (MPI_Count)sizeof(int));
    OK(MPI_Pack_c(src, LEN, MPI_INT, buf, sizeof buf, &pos, MPI_COMM_WORLD));
    CHECK(pos == size);
    MPI_Count in = 0;
    memset(dst, 0, sizeof dst);
    OK(MPI_Unpack_c(buf, pos, &in, dst, LEN, MPI_INT, MPI_COMM_WORLD));
    CHECK(in == pos);
    check_vals(dst, LEN, 50 + rank);
    /* Too little room is an error, not a short copy. */
    pos = 0;
    CHECK(error_class(MPI_Pack_c(src, LEN, MPI_INT, buf, 8, &pos, MPI_COMM_WORLD)) ==
          MPI_ERR_TRUNCATE);
    CHECK(error_class(MPI_Pack_size_c(-2, MPI_INT, MPI_COMM_WORLD, &size)) == MPI_ERR_COUNT);

    MPI_Count esize = 0, epos = 0, eout = 0;
    OK(MPI_Pack_external_size_c("external32", LEN, MPI_INT, &esize));
    CHECK(esize == 4 * LEN);
    OK(MPI_Pack_external_c("external32", src, LEN, MPI_INT, buf, sizeof buf, &epos));
    CHECK(epos == esize);
    /* Big-endian: the last byte of the first int is its low byte. */
    CHECK((unsigned char)buf[3] == (unsigned char)(50 + rank) && buf[0] == 0);
    memset(dst, 0, sizeof dst);
    OK(MPI_Unpack_external_c("external32", buf, epos, &eout, dst, LEN, MPI_INT));
    CHECK(eout == epos);
    check_vals(dst, LEN, 50 + rank);
}

static void statuses(void) {
    MPI_Status st;
    MPI_Count c = 0, huge = (MPI_Count)INT_MAX + 10;
    int ci = 0;
    OK(MPI_Status_set_elements_c(&st, MPI_BYTE, huge));
    OK(MPI_Get_count_c(&st, MPI_BYTE, &c));
    CHECK(c == huge);
    OK(MPI_Get_count(&st, MPI_BYTE, &ci));
    CHECK(ci == MPI_UNDEFINED);
    OK(MPI_Get_elements_c(&st, MPI_BYTE, &c));
    CHECK(c == huge);
    OK(MPI_Get_elements(&st, MPI_BYTE, &ci));
    CHECK(ci == MPI_UNDEFINED);
    /* Not a whole number of ints. */
    OK(MPI_Get_count_c(&st, MPI_INT, &c));
    CHECK(c == MPI_UNDEFINED);
    OK(MPI_Status_set_elements_c(&st, MPI_INT, 7));
    OK(MPI_Get_count_c(&st, MPI_INT, &c));
    CHECK(c == 7);
}

int main(int argc, char **argv) {
    int rank, size;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    check_rank = rank;
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Count n = LEN;
    int out[LEN], in[LEN];
    MPI_Status st;
    MPI_Request r, rs[2];
    fill(out, LEN, 100 * rank);

    /* Send_c, Ssend_c to a posted Irecv_c; Recv_c after Isend_c. */
    OK(MPI_Irecv_c(in, n, MPI_INT, left, 1, MPI_COMM_WORLD, &r));
    OK(MPI_Send_c(out, n, MPI_INT, right, 1, MPI_COMM_WORLD));
    OK(MPI_Wait(&r, &st));
    check_status(&st, left, 1, LEN);
    check_vals(in, LEN, 100 * left);

    memset(in, 0, sizeof in);
    OK(MPI_Irecv_c(in, n, MPI_INT, left, 2, MPI_COMM_WORLD, &r));
    OK(MPI_Ssend_c(out, n - 1, MPI_INT, right, 2, MPI_COMM_WORLD));
    OK(MPI_Wait(&r, &st));
    check_status(&st, left, 2, LEN - 1);
    check_vals(in, LEN - 1, 100 * left);

    memset(in, 0, sizeof in);
    OK(MPI_Isend_c(out, n, MPI_INT, right, 3, MPI_COMM_WORLD, &r));
    OK(MPI_Recv_c(in, n, MPI_INT, left, 3, MPI_COMM_WORLD, &st));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    check_status(&st, left, 3, LEN);
    check_vals(in, LEN, 100 * left);

    /* Ready mode: the receive is posted before the barrier. */
    memset(in, 0, sizeof in);
    OK(MPI_Irecv_c(in, n, MPI_INT, left, 4, MPI_COMM_WORLD, &rs[0]));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Rsend_c(out, n, MPI_INT, right, 4, MPI_COMM_WORLD));
    OK(MPI_Wait(&rs[0], &st));
    check_status(&st, left, 4, LEN);
    check_vals(in, LEN, 100 * left);

    int in2[LEN];
    memset(in, 0, sizeof in);
    OK(MPI_Irecv_c(in, n, MPI_INT, left, 5, MPI_COMM_WORLD, &rs[0]));
    OK(MPI_Irecv_c(in2, n, MPI_INT, left, 6, MPI_COMM_WORLD, &rs[1]));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_Request sr[2];
    OK(MPI_Irsend_c(out, n, MPI_INT, right, 5, MPI_COMM_WORLD, &sr[0]));
    OK(MPI_Issend_c(out, n, MPI_INT, right, 6, MPI_COMM_WORLD, &sr[1]));
    OK(MPI_Waitall(2, sr, MPI_STATUSES_IGNORE));
    MPI_Status sts[2];
    OK(MPI_Waitall(2, rs, sts));
    check_status(&sts[0], left, 5, LEN);
    check_status(&sts[1], left, 6, LEN);
    check_vals(in, LEN, 100 * left);
    check_vals(in2, LEN, 100 * left);

    /* Buffered: Buffer_attach_c, Bsend_c, Ibsend_c, Buffer_detach_c. */
    MPI_Count bsize = 2 * (LEN * (MPI_Count)sizeof(int) + MPI_BSEND_OVERHEAD);
    char *bbuf = malloc((size_t)bsize);
    OK(MPI_Buffer_attach_c(bbuf, bsize));
    OK(MPI_Bsend_c(out, n, MPI_INT, right, 7, MPI_COMM_WORLD));
    OK(MPI_Ibsend_c(out, n, MPI_INT, right, 8, MPI_COMM_WORLD, &r));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    for (int tag = 7; tag <= 8; tag++) {
        memset(in, 0, sizeof in);
        OK(MPI_Recv_c(in, n, MPI_INT, left, tag, MPI_COMM_WORLD, &st));
        check_status(&st, left, tag, LEN);
        check_vals(in, LEN, 100 * left);
    }
    void *back = NULL;
    MPI_Count backsize = 0;
    OK(MPI_Buffer_detach_c(&back, &backsize));
    CHECK(back == bbuf && backsize == bsize);
    free(bbuf);
    CHECK(error_class(MPI_Buffer_attach_c(out, -1)) == MPI_ERR_BUFFER);

    /* Send-receives. */
    memset(in, 0, sizeof in);
    OK(MPI_Sendrecv_c(out, n, MPI_INT, right, 9, in, n, MPI_INT, left, 9, MPI_COMM_WORLD,
                      &st));
    check_status(&st, left, 9, LEN);
    check_vals(in, LEN, 100 * left);
    int rep[LEN];
    fill(rep, LEN, 100 * rank);
    OK(MPI_Sendrecv_replace_c(rep, n, MPI_INT, right, 10, left, 10, MPI_COMM_WORLD, &st));
    check_status(&st, left, 10, LEN);
    check_vals(rep, LEN, 100 * left);
    memset(in, 0, sizeof in);
    OK(MPI_Isendrecv_c(out, n, MPI_INT, right, 11, in, n, MPI_INT, left, 11, MPI_COMM_WORLD,
                       &r));
    OK(MPI_Wait(&r, &st));
    check_status(&st, left, 11, LEN);
    check_vals(in, LEN, 100 * left);
    fill(rep, LEN, 100 * rank);
    OK(MPI_Isendrecv_replace_c(rep, n, MPI_INT, right, 12, left, 12, MPI_COMM_WORLD, &r));
    OK(MPI_Wait(&r, &st));
    check_status(&st, left, 12, LEN);
    check_vals(rep, LEN, 100 * left);

    /* A derived type made with a _c constructor, staged: every other int. */
    MPI_Datatype every2;
    OK(MPI_Type_vector_c(LEN, 1, 2, MPI_INT, &every2));
    OK(MPI_Type_commit(&every2));
    int wide[2 * LEN];
    for (int i = 0; i < 2 * LEN; i++) wide[i] = -1;
    OK(MPI_Sendrecv_c(out, n, MPI_INT, right, 13, wide, 1, every2, left, 13, MPI_COMM_WORLD,
                      &st));
    check_status(&st, left, 13, LEN);
    for (int i = 0; i < LEN; i++) CHECK(wide[2 * i] == 100 * left + i && wide[2 * i + 1] == -1);
    OK(MPI_Type_free(&every2));

    /* Matched probe and receive. */
    MPI_Message msg;
    OK(MPI_Isend_c(out, n, MPI_INT, right, 14, MPI_COMM_WORLD, &rs[0]));
    OK(MPI_Isend_c(out, n - 2, MPI_INT, right, 15, MPI_COMM_WORLD, &rs[1]));
    memset(in, 0, sizeof in);
    OK(MPI_Mprobe(left, 14, MPI_COMM_WORLD, &msg, &st));
    OK(MPI_Mrecv_c(in, n, MPI_INT, &msg, &st));
    CHECK(msg == MPI_MESSAGE_NULL);
    check_status(&st, left, 14, LEN);
    check_vals(in, LEN, 100 * left);
    memset(in, 0, sizeof in);
    OK(MPI_Mprobe(left, 15, MPI_COMM_WORLD, &msg, &st));
    OK(MPI_Imrecv_c(in, n, MPI_INT, &msg, &r));
    OK(MPI_Wait(&r, &st));
    check_status(&st, left, 15, LEN - 2);
    check_vals(in, LEN - 2, 100 * left);
    OK(MPI_Waitall(2, rs, MPI_STATUSES_IGNORE));

    /* Persistent requests, every mode, two rounds. */
    bsize = 2 * (LEN * (MPI_Count)sizeof(int) + MPI_BSEND_OVERHEAD);
    bbuf = malloc((size_t)bsize);
    OK(MPI_Buffer_attach_c(bbuf, bsize));
    int pin[4][LEN];
    MPI_Request p[8];
    OK(MPI_Send_init_c(out, n, MPI_INT, right, 20, MPI_COMM_WORLD, &p[0]));
    OK(MPI_Ssend_init_c(out, n, MPI_INT, right, 21, MPI_COMM_WORLD, &p[1]));
    OK(MPI_Rsend_init_c(out, n, MPI_INT, right, 22, MPI_COMM_WORLD, &p[2]));
    OK(MPI_Bsend_init_c(out, n, MPI_INT, right, 23, MPI_COMM_WORLD, &p[3]));
    for (int m = 0; m < 4; m++)
        OK(MPI_Recv_init_c(pin[m], n, MPI_INT, left, 20 + m, MPI_COMM_WORLD, &p[4 + m]));
    for (int round = 0; round < 2; round++) {
        fill(out, LEN, 100 * rank + round);
        memset(pin, 0, sizeof pin);
        OK(MPI_Startall(4, &p[4]));
        OK(MPI_Barrier(MPI_COMM_WORLD)); /* receives posted: ready mode is fine */
        OK(MPI_Startall(4, p));
        MPI_Status pst[8];
        OK(MPI_Waitall(8, p, pst));
        for (int m = 0; m < 4; m++) {
            check_status(&pst[4 + m], left, 20 + m, LEN);
            check_vals(pin[m], LEN, 100 * left + round);
        }
        OK(MPI_Barrier(MPI_COMM_WORLD)); /* before `out` changes */
    }
    for (int i = 0; i < 8; i++) OK(MPI_Request_free(&p[i]));
    OK(MPI_Buffer_detach_c(&back, &backsize));
    CHECK(back == bbuf && backsize == bsize);
    free(bbuf);

    /* Counts that do not fit: negative, or bytes beyond what memory holds. */
    MPI_Count huge = (MPI_Count)1 << 62;
    CHECK(error_class(MPI_Send_c(out, -1, MPI_INT, right, 0, MPI_COMM_WORLD)) == MPI_ERR_COUNT);
    CHECK(error_class(MPI_Send_c(out, huge, MPI_INT, right, 0, MPI_COMM_WORLD)) ==
          MPI_ERR_COUNT);
    CHECK(error_class(MPI_Recv_c(in, huge, MPI_INT, left, 0, MPI_COMM_WORLD, &st)) ==
          MPI_ERR_COUNT);
    CHECK(error_class(MPI_Irecv_c(in, -5, MPI_INT, left, 0, MPI_COMM_WORLD, &r)) ==
          MPI_ERR_COUNT);
    CHECK(error_class(MPI_Send_init_c(out, huge, MPI_INT, right, 0, MPI_COMM_WORLD, &r)) ==
          MPI_ERR_COUNT);
    CHECK(error_class(MPI_Sendrecv_c(out, n, MPI_INT, right, 0, in, -1, MPI_INT, left, 0,
                                     MPI_COMM_WORLD, &st)) == MPI_ERR_COUNT);

    /* MPI_PROC_NULL with large counts. */
    OK(MPI_Recv_c(in, n, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st));
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG);
    MPI_Count c = -1;
    OK(MPI_Get_count_c(&st, MPI_INT, &c));
    CHECK(c == 0);

    statuses();
    constructors(rank);
    packing(rank);

    OK(MPI_Finalize());
    return 0;
}
