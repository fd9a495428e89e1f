/* Shared-memory windows (MPI 4.1 §12.2.3): MPI_Comm_split_type with
 * MPI_COMM_TYPE_SHARED, MPI_Win_allocate_shared with a different size per
 * rank (rank 0 allocating nothing when there are several), the create
 * flavor and size attributes, MPI_Win_shared_query (and _c) for every rank
 * (size, disp_unit, a usable pointer; segments contiguous in rank order by
 * default) and for MPI_PROC_NULL (the lowest rank with a non-empty
 * segment); direct stores into the neighbour's segment and loads from
 * every segment, ordered by MPI_Win_sync + MPI_Barrier + MPI_Win_sync in a
 * lock_all epoch; an MPI_Put into a segment seen by a load. Every value
 * checked; correct at any number of ranks. */
#include "check.h"

/* Ints allocated by rank q of n. */
static int count_of(int q, int n) { return (q == 0 && n > 1) ? 0 : q + 2; }

int main(int argc, char **argv) {
    int wrank, flag;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &wrank));
    check_rank = wrank;

    MPI_Comm shm = MPI_COMM_NULL;
    int rank, size;
    OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shm));
    CHECK(shm != MPI_COMM_NULL);
    OK(MPI_Comm_rank(shm, &rank));
    OK(MPI_Comm_size(shm, &size));
    int right = (rank + 1) % size, left = (rank + size - 1) % size;

    int n = count_of(rank, size);
    int *mine = NULL;
    MPI_Win win = MPI_WIN_NULL;
    OK(MPI_Win_allocate_shared((MPI_Aint)(n * sizeof(int)), sizeof(int), MPI_INFO_NULL, shm, &mine,
                               &win));
    CHECK(win != MPI_WIN_NULL);
    if (n > 0) CHECK(mine != NULL);
    int *flavor = NULL;
    flag = 0;
    OK(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag));
    CHECK(flag && *flavor == MPI_WIN_FLAVOR_SHARED);
    MPI_Aint *wsize = NULL;
    flag = 0;
    OK(MPI_Win_get_attr(win, MPI_WIN_SIZE, &wsize, &flag));
    CHECK(flag && *wsize == (MPI_Aint)(n * sizeof(int)));

    /* Every rank's segment. */
    int **seg = malloc(size * sizeof(int *));
    for (int q = 0; q < size; q++) {
        MPI_Aint qs = -1;
        int qdu = -1;
        seg[q] = NULL;
        OK(MPI_Win_shared_query(win, q, &qs, &qdu, &seg[q]));
        CHECK(qs == (MPI_Aint)(count_of(q, size) * sizeof(int)));
        CHECK(qdu == (int)sizeof(int));
        if (count_of(q, size) > 0) CHECK(seg[q] != NULL);
    }
    if (n > 0) CHECK(seg[rank] == mine);
    /* Contiguous across ranks unless alloc_shared_noncontig is given. */
    for (int q = 0, prev = -1; q < size; q++) {
        if (count_of(q, size) == 0) continue;
        if (prev >= 0)
            CHECK((char *)seg[q] == (char *)seg[prev] + count_of(prev, size) * sizeof(int));
        prev = q;
    }
    /* The large-count variant. */
    {
        MPI_Aint qs = -1, qdu = -1;
        int *p = NULL;
        OK(MPI_Win_shared_query_c(win, right, &qs, &qdu, &p));
        CHECK(qs == (MPI_Aint)(count_of(right, size) * sizeof(int)) && qdu == (MPI_Aint)sizeof(int));
        if (count_of(right, size) > 0) CHECK(p == seg[right]);
    }
    /* MPI_PROC_NULL: the segment of the lowest rank that has one. */
    {
        int low = size > 1 ? 1 : 0;
        MPI_Aint qs = -1;
        int qdu = -1, *p = NULL;
        OK(MPI_Win_shared_query(win, MPI_PROC_NULL, &qs, &qdu, &p));
        CHECK(qs == (MPI_Aint)(count_of(low, size) * sizeof(int)) && qdu == (int)sizeof(int));
        CHECK(p == seg[low]);
    }

    /* Stores into the right neighbour's segment, loads from all. */
    OK(MPI_Win_lock_all(0, win));
    for (int i = 0; i < count_of(right, size); i++) seg[right][i] = rank * 100 + i;
    OK(MPI_Win_sync(win));
    OK(MPI_Barrier(shm));
    OK(MPI_Win_sync(win));
    for (int i = 0; i < n; i++) CHECK(mine[i] == left * 100 + i);
    for (int q = 0; q < size; q++) {
        int writer = (q + size - 1) % size;
        for (int i = 0; i < count_of(q, size); i++) CHECK(seg[q][i] == writer * 100 + i);
    }
    OK(MPI_Barrier(shm));

    /* An MPI_Put into the right's segment, seen by a load there. */
    int pv = (rank + 1) * 1000;
    if (count_of(right, size) > 0) {
        OK(MPI_Put(&pv, 1, MPI_INT, right, 0, 1, MPI_INT, win));
        OK(MPI_Win_flush(right, win));
    }
    OK(MPI_Win_sync(win));
    OK(MPI_Barrier(shm));
    OK(MPI_Win_sync(win));
    for (int i = 0; i < n; i++) CHECK(mine[i] == (i == 0 ? (left + 1) * 1000 : left * 100 + i));
    OK(MPI_Win_unlock_all(win));

    OK(MPI_Win_free(&win));
    CHECK(win == MPI_WIN_NULL);
    OK(MPI_Comm_free(&shm));
    free(seg);
    OK(MPI_Finalize());
    return 0;
}
