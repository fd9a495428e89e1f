/* An integer bucket sort in the shape of NAS IS: random keys, bucket
 * sizes by Allreduce, key counts by Alltoall, keys by Alltoallv, a local
 * counting sort, then full verification (global order across ranks with
 * Irecv/Send/Wait, key count and checksum with Reduce/Bcast), on a
 * Comm_dup'd and a Comm_split communicator. */
#include <stdint.h>
#include <string.h>
#include "check.h"

#define KEYS_PER_RANK 20000
#define MAX_KEY (1 << 16)
#define ITERATIONS 3

static uint32_t lcg(uint32_t *s) { return *s = *s * 1103515245u + 12345u; }

static void sort_and_verify(MPI_Comm comm, int iter) {
    int rank, size;
    OK(MPI_Comm_rank(comm, &rank));
    OK(MPI_Comm_size(comm, &size));
    int *keys = malloc(sizeof(int) * KEYS_PER_RANK);
    uint32_t seed = 7919u * (uint32_t)(rank + 1) + (uint32_t)iter;
    long long local_sum = 0;
    for (int i = 0; i < KEYS_PER_RANK; i++) {
        keys[i] = (int)((lcg(&seed) >> 8) % MAX_KEY);
        local_sum += keys[i];
    }
    int per = (MAX_KEY + size - 1) / size;
    int *counts = calloc(size, sizeof(int)), *bucket = calloc(size, sizeof(int));
    for (int i = 0; i < KEYS_PER_RANK; i++) counts[keys[i] / per]++;
    OK(MPI_Allreduce(counts, bucket, size, MPI_INT, MPI_SUM, comm));
    int *sdispl = malloc(sizeof(int) * size), *rcounts = malloc(sizeof(int) * size),
        *rdispl = malloc(sizeof(int) * size), *fill = calloc(size, sizeof(int));
    OK(MPI_Alltoall(counts, 1, MPI_INT, rcounts, 1, MPI_INT, comm));
    int so = 0, ro = 0;
    for (int i = 0; i < size; i++) { sdispl[i] = so; so += counts[i]; rdispl[i] = ro; ro += rcounts[i]; }
    CHECK(ro == bucket[rank]);
    int *packed = malloc(sizeof(int) * KEYS_PER_RANK), *mine = malloc(sizeof(int) * (ro + 1));
    for (int i = 0; i < KEYS_PER_RANK; i++) {
        int b = keys[i] / per;
        packed[sdispl[b] + fill[b]++] = keys[i];
    }
    OK(MPI_Alltoallv(packed, counts, sdispl, MPI_INT, mine, rcounts, rdispl, MPI_INT, comm));
    /* Counting sort of this rank's key range. */
    int lo = rank * per, *hist = calloc(per, sizeof(int));
    for (int i = 0; i < ro; i++) {
        CHECK(mine[i] >= lo && mine[i] < lo + per);
        hist[mine[i] - lo]++;
    }
    int k = 0;
    for (int v = 0; v < per; v++)
        while (hist[v]--) mine[k++] = lo + v;
    for (int i = 1; i < ro; i++) CHECK(mine[i - 1] <= mine[i]);
    /* Global order: my smallest key is not below the left rank's largest. */
    int left_max = -1, my_max = ro ? mine[ro - 1] : lo - 1;
    MPI_Request req = MPI_REQUEST_NULL;
    if (rank > 0) OK(MPI_Irecv(&left_max, 1, MPI_INT, rank - 1, 21, comm, &req));
    if (rank < size - 1) OK(MPI_Send(&my_max, 1, MPI_INT, rank + 1, 21, comm));
    OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    if (rank > 0 && ro > 0) CHECK(left_max <= mine[0]);
    /* Nothing lost: count and checksum. */
    long long sorted_sum = 0, totals[2] = {0, 0}, mine2[2];
    for (int i = 0; i < ro; i++) sorted_sum += mine[i];
    mine2[0] = ro;
    mine2[1] = sorted_sum - local_sum;
    OK(MPI_Reduce(mine2, totals, 2, MPI_LONG_LONG, MPI_SUM, 0, comm));
    OK(MPI_Bcast(totals, 2, MPI_LONG_LONG, 0, comm));
    CHECK(totals[0] == (long long)KEYS_PER_RANK * size && totals[1] == 0);
    double t = MPI_Wtime(), tmax;
    OK(MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, comm));
    free(keys); free(counts); free(bucket); free(sdispl); free(rcounts); free(rdispl);
    free(fill); free(packed); free(mine); free(hist);
}

int main(int argc, char **argv) {
    int rank, size;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    check_rank = rank;
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    MPI_Comm work, halves;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &work));
    for (int it = 0; it < ITERATIONS; it++) sort_and_verify(work, it);
    OK(MPI_Comm_split(work, rank < (size + 1) / 2, rank, &halves));
    sort_and_verify(halves, 99);
    OK(MPI_Comm_free(&halves));
    OK(MPI_Comm_free(&work));
    OK(MPI_Finalize());
    if (rank == 0) printf("is: ok on %d ranks\n", size);
    return 0;
}
