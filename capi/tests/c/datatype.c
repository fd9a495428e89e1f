/* Derived datatypes: constructors, bounds, envelope and contents, names,
 * pack/unpack, external32, and vector/struct types through Send/Recv,
 * Isend/Irecv (staged, unpacked at Wait), Sendrecv and Bcast, with the
 * gaps of every receive buffer checked untouched. Any rank count. */
#include <stdlib.h>
#include <string.h>
#include "check.h"

int main(int argc, char **argv) {
    int rank, size;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    check_rank = rank;

    /* vector: 3 blocks of 2 ints, stride 4: size 24, extent 40. */
    MPI_Datatype vec;
    OK(MPI_Type_vector(3, 2, 4, MPI_INT, &vec));
    OK(MPI_Type_commit(&vec));
    int sz;
    MPI_Aint lb, ext, tlb, text;
    OK(MPI_Type_size(vec, &sz));
    OK(MPI_Type_get_extent(vec, &lb, &ext));
    OK(MPI_Type_get_true_extent(vec, &tlb, &text));
    CHECK(sz == 24 && lb == 0 && ext == 40 && tlb == 0 && text == 40);
    int ni, na, nd, comb;
    OK(MPI_Type_get_envelope(vec, &ni, &na, &nd, &comb));
    CHECK(ni == 3 && na == 0 && nd == 1 && comb == MPI_COMBINER_VECTOR);
    int ints[3];
    MPI_Aint addrs[1];
    MPI_Datatype types[1];
    OK(MPI_Type_get_contents(vec, 3, 0, 1, ints, addrs, types));
    CHECK(ints[0] == 3 && ints[1] == 2 && ints[2] == 4 && types[0] == MPI_INT);
    OK(MPI_Type_get_envelope(MPI_INT, &ni, &na, &nd, &comb));
    CHECK(comb == MPI_COMBINER_NAMED);

    /* names */
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    OK(MPI_Type_get_name(MPI_INT, name, &len));
    CHECK(strcmp(name, "MPI_INT") == 0 && len == 7);
    OK(MPI_Type_set_name(vec, "my vector"));
    OK(MPI_Type_get_name(vec, name, &len));
    CHECK(strcmp(name, "my vector") == 0 && len == 9);

    /* struct { double; char; }: extent 16; resized to 24. */
    struct s { double d; char c; } sv[2];
    MPI_Aint base, a1;
    OK(MPI_Get_address(&sv[0], &base));
    OK(MPI_Get_address(&sv[0].c, &a1));
    CHECK(MPI_Aint_diff(a1, base) == 8 && MPI_Aint_add(base, 8) == a1);
    int bl[2] = {1, 1};
    MPI_Aint disp[2] = {0, 8};
    MPI_Datatype tys[2] = {MPI_DOUBLE, MPI_CHAR}, st, rs;
    OK(MPI_Type_create_struct(2, bl, disp, tys, &st));
    OK(MPI_Type_size(st, &sz));
    OK(MPI_Type_get_extent(st, &lb, &ext));
    CHECK(sz == 9 && lb == 0 && ext == 16);
    OK(MPI_Type_create_resized(st, 0, 24, &rs));
    OK(MPI_Type_get_extent(rs, &lb, &ext));
    OK(MPI_Type_get_true_extent(rs, &tlb, &text));
    CHECK(lb == 0 && ext == 24 && tlb == 0 && text == 9);

    /* subarray: the 2x3 block at (1,2) of a 4x5 int array. */
    int sizes[2] = {4, 5}, subs[2] = {2, 3}, starts[2] = {1, 2};
    MPI_Datatype sub;
    OK(MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_C, MPI_INT, &sub));
    OK(MPI_Type_commit(&sub));
    OK(MPI_Type_get_extent(sub, &lb, &ext));
    OK(MPI_Type_get_true_extent(sub, &tlb, &text));
    CHECK(lb == 0 && ext == 80 && tlb == 28 && text == 32);

    /* pack / unpack the vector */
    int src[12], dst[12], packed[6];
    for (int i = 0; i < 12; i++) src[i] = 100 + i;
    int pos = 0;
    OK(MPI_Pack_size(1, vec, MPI_COMM_WORLD, &sz));
    CHECK(sz == 24);
    OK(MPI_Pack(src, 1, vec, packed, sizeof packed, &pos, MPI_COMM_WORLD));
    CHECK(pos == 24 && packed[0] == 100 && packed[1] == 101 && packed[2] == 104 &&
          packed[5] == 109);
    for (int i = 0; i < 12; i++) dst[i] = -1;
    pos = 0;
    OK(MPI_Unpack(packed, sizeof packed, &pos, dst, 1, vec, MPI_COMM_WORLD));
    CHECK(pos == 24);
    for (int i = 0; i < 12; i++) CHECK(dst[i] == (i % 4 < 2 && i < 10 ? 100 + i : -1));

    /* external32: big-endian */
    int one = 0x01020304;
    unsigned char ebuf[8];
    MPI_Aint epos = 0, esz;
    OK(MPI_Pack_external_size("external32", 1, MPI_INT, &esz));
    CHECK(esz == 4);
    OK(MPI_Pack_external("external32", &one, 1, MPI_INT, ebuf, 8, &epos));
    CHECK(epos == 4 && ebuf[0] == 1 && ebuf[1] == 2 && ebuf[2] == 3 && ebuf[3] == 4);
    int back = 0;
    epos = 0;
    OK(MPI_Unpack_external("external32", ebuf, 4, &epos, &back, 1, MPI_INT));
    CHECK(epos == 4 && back == one);

    /* point-to-point in a ring: vector out, vector in, gaps untouched */
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    for (int i = 0; i < 12; i++) src[i] = rank * 1000 + i, dst[i] = -7;
    MPI_Status status;
    OK(MPI_Sendrecv(src, 1, vec, next, 5, dst, 1, vec, prev, 5, MPI_COMM_WORLD, &status));
    for (int i = 0; i < 12; i++)
        CHECK(dst[i] == (i % 4 < 2 && i < 10 ? prev * 1000 + i : -7));
    int cnt;
    OK(MPI_Get_count(&status, vec, &cnt));
    CHECK(cnt == 1);
    OK(MPI_Get_elements(&status, vec, &cnt));
    CHECK(cnt == 6);
    /* received as 6 contiguous ints */
    int flat[6];
    MPI_Request rq[2];
    OK(MPI_Irecv(flat, 6, MPI_INT, prev, 6, MPI_COMM_WORLD, &rq[0]));
    OK(MPI_Isend(src, 1, vec, next, 6, MPI_COMM_WORLD, &rq[1]));
    OK(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
    CHECK(flat[0] == prev * 1000 && flat[2] == prev * 1000 + 4 && flat[5] == prev * 1000 + 9);
    /* nonblocking receive into the vector (staged, unpacked at Wait) */
    for (int i = 0; i < 12; i++) dst[i] = -7;
    OK(MPI_Irecv(dst, 1, vec, prev, 7, MPI_COMM_WORLD, &rq[0]));
    OK(MPI_Send(flat, 6, MPI_INT, next, 7, MPI_COMM_WORLD));
    OK(MPI_Wait(&rq[0], &status));
    for (int i = 0; i < 12; i++) {
        int from = (prev + size - 1) % size;
        CHECK(dst[i] == (i % 4 < 2 && i < 10 ? from * 1000 + i : -7));
    }
    /* a short message: 3 ints into the vector, Get_elements 3 */
    for (int i = 0; i < 12; i++) dst[i] = -7;
    OK(MPI_Sendrecv(src, 3, MPI_INT, next, 8, dst, 1, vec, prev, 8, MPI_COMM_WORLD, &status));
    OK(MPI_Get_elements(&status, vec, &cnt));
    CHECK(cnt == 3);
    OK(MPI_Get_count(&status, vec, &cnt));
    CHECK(cnt == MPI_UNDEFINED);
    CHECK(dst[0] == prev * 1000 && dst[1] == prev * 1000 + 1 && dst[4] == prev * 1000 + 2);
    CHECK(dst[2] == -7 && dst[5] == -7 && dst[8] == -7);

    /* struct array through Send/Recv, and Bcast of the subarray */
    MPI_Datatype st2;
    OK(MPI_Type_dup(st, &st2));
    OK(MPI_Type_commit(&st2));
    OK(MPI_Type_get_envelope(st2, &ni, &na, &nd, &comb));
    CHECK(comb == MPI_COMBINER_DUP && nd == 1);
    struct s out[2] = {{1.5 + rank, 'a'}, {2.5 + rank, 'b'}}, in[2];
    memset(in, 0x5a, sizeof in);
    OK(MPI_Sendrecv(out, 2, st2, next, 9, in, 2, st2, prev, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK(in[0].d == 1.5 + prev && in[0].c == 'a' && in[1].d == 2.5 + prev && in[1].c == 'b');
    CHECK(((unsigned char *)&in[0])[9] == 0x5a && ((unsigned char *)&in[1])[15] == 0x5a);
    int arr[20];
    for (int i = 0; i < 20; i++) arr[i] = rank == 0 ? i : -1;
    OK(MPI_Bcast(arr, 1, sub, 0, MPI_COMM_WORLD));
    for (int i = 0; i < 20; i++) {
        int r = i / 5, c = i % 5, in_sub = r >= 1 && r < 3 && c >= 2;
        CHECK(arr[i] == (rank == 0 || in_sub ? i : -1));
    }

    /* Collectives stage non-contiguous data (ddt_coll.c tests each);
     * a contiguous derived type still works in place. */
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int gv[10], gs[10];
    for (int i = 0; i < 10; i++) gv[i] = 1, gs[i] = -1;
    OK(MPI_Allreduce(gv, gs, 1, vec, MPI_SUM, MPI_COMM_WORLD));
    for (int i = 0; i < 10; i++) CHECK(gs[i] == (i % 4 < 2 ? size : -1));
    int *all = calloc((size_t)size * 10, sizeof(int));
    CHECK(all != NULL);
    OK(MPI_Allgather(arr, 1, vec, all, 1, vec, MPI_COMM_WORLD));
    for (int q = 0; q < size; q++)
        for (int i = 0; i < 10; i++) {
            int in_sub = i == 8 || i == 9, data = i % 4 < 2;
            CHECK(all[q * 10 + i] == (!data ? 0 : q == 0 || in_sub ? i : -1));
        }
    MPI_Datatype pair;
    OK(MPI_Type_contiguous(2, MPI_INT, &pair));
    OK(MPI_Type_commit(&pair));
    int two[2] = {rank, 1}, sum2[2] = {-1, -1};
    OK(MPI_Allreduce(two, sum2, 1, pair, MPI_SUM, MPI_COMM_WORLD));
    CHECK(sum2[0] == size * (size - 1) / 2 && sum2[1] == size);
    OK(MPI_Type_free(&pair));
    free(all);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));

    MPI_Datatype t;
    OK(MPI_Type_match_size(MPI_TYPECLASS_REAL, 8, &t));
    CHECK(t == MPI_DOUBLE);
    /* No C type of these sizes: the Fortran one (as MPICH). */
    OK(MPI_Type_match_size(MPI_TYPECLASS_INTEGER, 16, &t));
    CHECK(t == MPI_INTEGER16);
    OK(MPI_Type_match_size(MPI_TYPECLASS_REAL, 2, &t));
    CHECK(t == MPI_REAL2);
    OK(MPI_Type_match_size(MPI_TYPECLASS_COMPLEX, 4, &t));
    CHECK(t == MPI_COMPLEX4);
    /* Pair types: the predefined one, else MPI_DATATYPE_NULL (no new
     * type is made). */
    OK(MPI_Type_get_value_index(MPI_DOUBLE, MPI_INT, &t));
    CHECK(t == MPI_DOUBLE_INT);
    OK(MPI_Type_get_value_index(MPI_FLOAT, MPI_FLOAT, &t));
    CHECK(t == MPI_DATATYPE_NULL);
    OK(MPI_Type_get_value_index(MPI_LONG_LONG, MPI_LONG, &t));
    CHECK(t == MPI_DATATYPE_NULL);
    {
        char nm[MPI_MAX_OBJECT_NAME];
        int nl;
        OK(MPI_Type_get_name(MPI_DATATYPE_NULL, nm, &nl));
        CHECK(strcmp(nm, "MPI_DATATYPE_NULL") == 0 && nl == 17);
    }
    OK(MPI_Type_free(&st2));
    OK(MPI_Type_free(&rs));
    OK(MPI_Type_free(&st));
    OK(MPI_Type_free(&sub));
    OK(MPI_Type_free(&vec));
    CHECK(vec == MPI_DATATYPE_NULL);
    OK(MPI_Finalize());
    return 0;
}
