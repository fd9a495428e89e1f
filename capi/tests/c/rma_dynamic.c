/* Dynamic windows (MPI 4.1 §12.2.4): MPI_Win_create_dynamic, the
 * attributes of one (create flavor MPI_WIN_FLAVOR_DYNAMIC, base MPI_BOTTOM,
 * size 0), MPI_Win_attach of two malloc'd regions, their MPI_Get_address
 * exchanged with MPI_Allgather as MPI_AINT, Put and Get at those absolute
 * displacements (MPI_Aint_add) under lock_all, MPI_Win_detach, attaching
 * again after a detach, MPI_Win_free. Every value checked; correct at any
 * number of ranks. */
#include <string.h>
#include "check.h"

#define R 8

int main(int argc, char **argv) {
    int rank, size, flag;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    check_rank = rank;
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int leftleft = (rank + 2 * size - 2) % size;

    MPI_Win win = MPI_WIN_NULL;
    OK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    CHECK(win != MPI_WIN_NULL);
    int *flavor = NULL;
    flag = 0;
    OK(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag));
    CHECK(flag && flavor != NULL && *flavor == MPI_WIN_FLAVOR_DYNAMIC);
    void *base = (void *)&flag;
    flag = 0;
    OK(MPI_Win_get_attr(win, MPI_WIN_BASE, &base, &flag));
    CHECK(flag && base == MPI_BOTTOM);
    MPI_Aint *wsize = NULL;
    flag = 0;
    OK(MPI_Win_get_attr(win, MPI_WIN_SIZE, &wsize, &flag));
    CHECK(flag && wsize != NULL && *wsize == 0);

    /* Two regions: r1 read by the right neighbour, r2 written by the left. */
    int *r1 = malloc(R * sizeof(int)), *r2 = malloc(R * sizeof(int));
    for (int i = 0; i < R; i++) {
        r1[i] = rank * 100 + i;
        r2[i] = -1;
    }
    OK(MPI_Win_attach(win, r1, R * sizeof(int)));
    OK(MPI_Win_attach(win, r2, R * sizeof(int)));
    MPI_Aint mine[2], *addrs = malloc(2 * size * sizeof(MPI_Aint));
    OK(MPI_Get_address(r1, &mine[0]));
    OK(MPI_Get_address(r2, &mine[1]));
    OK(MPI_Allgather(mine, 2, MPI_AINT, addrs, 2, MPI_AINT, MPI_COMM_WORLD));
    CHECK(addrs[2 * rank] == mine[0] && addrs[2 * rank + 1] == mine[1]);

    OK(MPI_Win_lock_all(0, win));
    /* Put 3 ints into the right's r2 at element 2. */
    int src[3] = {rank * 10, rank * 10 + 1, rank * 10 + 2};
    MPI_Aint at = MPI_Aint_add(addrs[2 * right + 1], 2 * sizeof(int));
    OK(MPI_Put(src, 3, MPI_INT, right, at, 3, MPI_INT, win));
    /* Get 4 ints from the left's r1 at element 4. */
    int got[4] = {-7, -7, -7, -7};
    at = MPI_Aint_add(addrs[2 * left], 4 * sizeof(int));
    OK(MPI_Get(got, 4, MPI_INT, left, at, 4, MPI_INT, win));
    OK(MPI_Win_flush_all(win));
    for (int k = 0; k < 4; k++) CHECK(got[k] == left * 100 + 4 + k);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Win_sync(win));
    for (int i = 0; i < R; i++)
        CHECK(r2[i] == ((i >= 2 && i < 5) ? left * 10 + (i - 2) : -1));
    /* And the left's r2, written by its left, read back. */
    int back[3] = {-7, -7, -7};
    at = MPI_Aint_add(addrs[2 * left + 1], 2 * sizeof(int));
    OK(MPI_Get(back, 3, MPI_INT, left, at, 3, MPI_INT, win));
    OK(MPI_Win_flush(left, win));
    for (int k = 0; k < 3; k++) CHECK(back[k] == leftleft * 10 + k);
    OK(MPI_Win_unlock_all(win));

    /* Nobody uses r1 any more: detach it, attach a third region, use it. */
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Win_detach(win, r1));
    int *r3 = malloc(R * sizeof(int));
    for (int i = 0; i < R; i++) r3[i] = -3;
    OK(MPI_Win_attach(win, r3, R * sizeof(int)));
    MPI_Aint a3, *addrs3 = malloc(size * sizeof(MPI_Aint));
    OK(MPI_Get_address(r3, &a3));
    OK(MPI_Allgather(&a3, 1, MPI_AINT, addrs3, 1, MPI_AINT, MPI_COMM_WORLD));
    OK(MPI_Win_lock_all(0, win));
    int last = rank + 7000;
    OK(MPI_Put(&last, 1, MPI_INT, right, MPI_Aint_add(addrs3[right], (R - 1) * sizeof(int)), 1,
               MPI_INT, win));
    OK(MPI_Win_flush(right, win));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Win_sync(win));
    for (int i = 0; i < R; i++) CHECK(r3[i] == (i == R - 1 ? left + 7000 : -3));
    OK(MPI_Win_unlock_all(win));

    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Win_detach(win, r2));
    OK(MPI_Win_detach(win, r3));
    OK(MPI_Win_free(&win));
    CHECK(win == MPI_WIN_NULL);
    free(r1);
    free(r2);
    free(r3);
    free(addrs);
    free(addrs3);
    OK(MPI_Finalize());
    return 0;
}
