/*
 * NAS-IS-style integer sort (NPB 3.4 IS, MPI version), written for o2g so
 * that the same algorithm runs on our MPI and on Open MPI / MPICH.
 *
 *   mpirun -n 4 is A
 *
 * Follows the NPB IS specification: keys from NPB's linear congruential
 * generator (x' = a x mod 2^46, a = 5^13, seed 314159265), each rank holding
 * its slice of one global sequence; per iteration two keys are altered,
 * keys are counted into buckets, bucket sizes are summed with an allreduce,
 * buckets are split over the ranks, keys move with an alltoall of counts and
 * an alltoallv, and each rank ranks its keys by counting. Partial
 * verification checks five keys' ranks against NPB's published values each
 * iteration; full verification sorts the last ranking and checks the order
 * across ranks. Mop/s = 10 * TOTAL_KEYS / max rank time / 1e6.
 *
 * MPI calls used: Init, Comm_rank, Comm_size, Comm_split (only when the
 * process count is not a power of two: the largest power of two works, the
 * rest wait, as NPB does), Bcast, Allreduce, Alltoall, Alltoallv, Reduce,
 * Irecv, Send, Wait, Wtime, Abort, Finalize.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ITERATIONS 10
#define TESTS 5

struct class_params {
    char name;
    int total_keys_log2, max_key_log2, buckets_log2;
    /* NPB's partial verification: global key indices and their ranks. */
    int test_index[TESTS], test_rank[TESTS];
};

static const struct class_params classes[] = {
    {'S', 16, 11, 9, {48427, 17148, 23627, 62548, 4431}, {0, 18, 346, 64917, 65463}},
    {'W', 20, 16, 10, {357773, 934767, 875723, 898999, 404505},
     {1249, 11698, 1039987, 1043896, 1048018}},
    {'A', 23, 19, 10, {2112377, 662041, 5336171, 3642833, 4250760},
     {104, 17523, 123928, 8288932, 8388264}},
    {'B', 25, 21, 10, {41869, 812306, 5102857, 18232239, 26860214},
     {33422937, 10244, 59149, 33135281, 99}},
    {'C', 27, 23, 10, {44172927, 72999161, 74326391, 129606274, 21736814},
     {61147, 882988, 266290, 133997595, 133525895}},
};

/* The expected rank of test key t at an iteration: the two keys altered
 * each iteration shift the published ranks, differently per class. */
static long expected_rank(const struct class_params *c, int t, int it)
{
    long r = c->test_rank[t];
    switch (c->name) {
    case 'S': return t <= 2 ? r + it : r - it;
    case 'W': return t < 2 ? r + (it - 2) : r - it;
    case 'A': return t <= 2 ? r + (it - 1) : r - (it - 1);
    case 'B': return (t == 1 || t == 2 || t == 4) ? r + it : r - it;
    default: return t <= 2 ? r + it : r - it; /* C */
    }
}

/* ---- NPB's generator, in exact integer arithmetic ----------------------
 * NPB computes x' = a x mod 2^46 with doubles split into 23-bit halves; the
 * result is exact, so 64-bit wrapping multiplication masked to 46 bits gives
 * the same sequence bit for bit. */
#define MASK46 ((UINT64_C(1) << 46) - 1)
#define LCG_A UINT64_C(1220703125)
#define LCG_SEED UINT64_C(314159265)

static uint64_t mul46(uint64_t x, uint64_t y) { return (x * y) & MASK46; }

static uint64_t pow46(uint64_t base, uint64_t e)
{
    uint64_t r = 1;
    for (; e; e >>= 1, base = mul46(base, base))
        if (e & 1) r = mul46(r, base);
    return r;
}

/* ---- state of one run ------------------------------------------------- */
struct is {
    const struct class_params *c;
    MPI_Comm comm;
    int rank, size;
    long total_keys;
    int num_keys, max_key, buckets, shift;
    int *keys;          /* this rank's generated keys */
    int *bucketed;      /* keys grouped by bucket, to send */
    int *received;      /* keys this rank ranks */
    int received_cap;
    int *counts;        /* per key value in this rank's range, then prefix */
    int *bsize, *btotal, *bptr; /* bucket sizes (+TESTS hidden keys), totals */
    int *first, *last;  /* bucket range per rank */
    int *scount, *sdispl, *rcount, *rdispl;
    int passed;
    /* From the last iteration, for full verification. */
    int local_keys, min_key;
    /* Seconds in the small collectives (allreduce, alltoall) and in the
     * alltoallv, as NPB's timers split them (O2G_IS_TIMERS=1 prints). */
    double t_small, t_alltoallv;
};

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "is: out of memory (%zu bytes)\n", n);
        MPI_Abort(MPI_COMM_WORLD, 1);
        exit(1);
    }
    return p;
}

static void generate(struct is *s)
{
    /* Four randoms per key; this rank starts 4*num_keys*rank into the
     * global sequence. key = MAX_KEY/4 * (r1+r2+r3+r4), r = x * 2^-46:
     * the sum of the four x, shifted, is the same value exactly. */
    uint64_t x = mul46(LCG_SEED, pow46(LCG_A, (uint64_t)4 * s->num_keys * s->rank));
    int drop = 46 - (s->c->max_key_log2 - 2);
    for (int i = 0; i < s->num_keys; i++) {
        uint64_t sum = 0;
        for (int k = 0; k < 4; k++) {
            x = mul46(x, LCG_A);
            sum += x;
        }
        s->keys[i] = (int)(sum >> drop);
    }
}

/* One ranking iteration. Page-aligned, and shorter than a page, so that
 * its loops over every key never straddle a page boundary: under QEMU's
 * TCG a jump to another page costs a hash lookup, and where the compiler
 * happens to put the function would change every library's figures
 * (docs/results.md, "The Rust IS's speed depends on where its code
 * lands"). bench/c/build.sh checks both. */
__attribute__((aligned(4096))) static void rank_keys(struct is *s, int it)
{
    const int nb = s->buckets;

    if (s->rank == 0) { /* global indices it and it+10 live on rank 0 */
        s->keys[it] = it;
        s->keys[it + ITERATIONS] = s->max_key - it;
    }

    memset(s->bsize, 0, sizeof(int) * (nb + TESTS));
    /* Hide the test keys after the buckets: the allreduce delivers them. */
    for (int t = 0; t < TESTS; t++)
        if (s->c->test_index[t] / s->num_keys == s->rank)
            s->bsize[nb + t] = s->keys[s->c->test_index[t] % s->num_keys];
    for (int i = 0; i < s->num_keys; i++)
        s->bsize[s->keys[i] >> s->shift]++;
    s->bptr[0] = 0;
    for (int b = 1; b < nb; b++)
        s->bptr[b] = s->bptr[b - 1] + s->bsize[b - 1];
    for (int i = 0; i < s->num_keys; i++) {
        int k = s->keys[i];
        s->bucketed[s->bptr[k >> s->shift]++] = k;
    }

    double t = MPI_Wtime();
    MPI_Allreduce(s->bsize, s->btotal, nb + TESTS, MPI_INT, MPI_SUM, s->comm);
    s->t_small += MPI_Wtime() - t;

    /* Rank j takes consecutive buckets until the running global total
     * reaches (j+1)*num_keys; ranks left over get nothing. */
    long acc = 0;
    int local = 0, j = 0;
    for (int r = 0; r < s->size; r++) {
        s->scount[r] = 0;
        s->first[r] = 1;
        s->last[r] = 0; /* empty range */
    }
    s->first[0] = 0;
    s->sdispl[0] = 0;
    for (int b = 0; b < nb && j < s->size; b++) {
        acc += s->btotal[b];
        local += s->bsize[b];
        if (acc >= (long)(j + 1) * s->num_keys) {
            s->scount[j] = local;
            if (j > 0) s->first[j] = s->last[j - 1] + 1;
            s->last[j++] = b;
            local = 0;
        }
    }
    for (int r = 1; r < s->size; r++)
        s->sdispl[r] = s->sdispl[r - 1] + s->scount[r - 1];

    t = MPI_Wtime();
    MPI_Alltoall(s->scount, 1, MPI_INT, s->rcount, 1, MPI_INT, s->comm);
    s->t_small += MPI_Wtime() - t;
    long incoming = 0;
    for (int r = 0; r < s->size; r++) {
        s->rdispl[r] = (int)incoming;
        incoming += s->rcount[r];
    }
    if (incoming > s->received_cap) {
        free(s->received);
        s->received_cap = (int)incoming;
        s->received = xmalloc(sizeof(int) * (size_t)incoming);
    }
    t = MPI_Wtime();
    MPI_Alltoallv(s->bucketed, s->scount, s->sdispl, MPI_INT, s->received, s->rcount,
                  s->rdispl, MPI_INT, s->comm);
    s->t_alltoallv += MPI_Wtime() - t;

    /* Rank locally by counting over this rank's key range. */
    int mine = s->first[s->rank] <= s->last[s->rank];
    int min_key = s->first[s->rank] << s->shift;
    int max_key = mine ? ((s->last[s->rank] + 1) << s->shift) - 1 : min_key - 1;
    long lesser = 0; /* keys held by lower ranks */
    for (int r = 0; r < s->rank; r++)
        for (int b = s->first[r]; b <= s->last[r]; b++)
            lesser += s->btotal[b];
    int n = (int)incoming;
    int span = max_key - min_key + 1;
    memset(s->counts, 0, sizeof(int) * (size_t)(span > 0 ? span : 0));
    for (int i = 0; i < n; i++)
        s->counts[s->received[i] - min_key]++;
    for (int v = 1; v < span; v++)
        s->counts[v] += s->counts[v - 1];

    /* Partial verification: the rank of test key k is the number of keys
     * below it; the rank whose range holds k checks it. */
    for (int t = 0; t < TESTS; t++) {
        int k = s->btotal[nb + t];
        if (!mine || k < min_key || k > max_key) continue;
        long got = lesser + (k > min_key ? s->counts[k - 1 - min_key] : 0);
        long want = expected_rank(s->c, t, it);
        if (got == want) {
            s->passed++;
        } else {
            printf("Failed partial verification: iteration %d, processor %d, "
                   "test key %d, key rank %ld (expected %ld)\n",
                   it, s->rank, t, got, want);
        }
    }
    s->local_keys = n;
    s->min_key = min_key;
}

/* Sort by the last ranking, then check order locally and across the
 * boundary with the previous rank. Returns 1 when in order. */
static int full_verify(struct is *s)
{
    int n = s->local_keys;
    int *sorted = xmalloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++) {
        int k = s->received[i];
        sorted[--s->counts[k - s->min_key]] = k;
    }

    /* A rank with no keys forwards what it received, so every boundary
     * compares against the largest key below it. */
    int prev = -1, mine = n > 0 ? sorted[n - 1] : -1;
    MPI_Request req = MPI_REQUEST_NULL;
    if (s->rank > 0) MPI_Irecv(&prev, 1, MPI_INT, s->rank - 1, 1000, s->comm, &req);
    if (n == 0 && s->rank > 0) {
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        mine = prev;
    }
    if (s->rank < s->size - 1) MPI_Send(&mine, 1, MPI_INT, s->rank + 1, 1000, s->comm);
    if (n > 0 && s->rank > 0) MPI_Wait(&req, MPI_STATUS_IGNORE);

    long bad = 0;
    if (n > 0 && prev > sorted[0]) bad++;
    for (int i = 1; i < n; i++)
        if (sorted[i - 1] > sorted[i]) bad++;
    free(sorted);
    if (bad) printf("Processor %d:  Full_verify: number of keys out of sort: %ld\n", s->rank, bad);
    return bad == 0;
}

static const struct class_params *find_class(const char *arg)
{
    if (!arg || strlen(arg) != 1) return NULL;
    for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++)
        if (classes[i].name == arg[0] || classes[i].name == arg[0] - 'a' + 'A') return &classes[i];
    return NULL;
}

int main(int argc, char **argv)
{
    int world_rank, world_size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);

    const struct class_params *c = find_class(argc > 1 ? argv[1] : NULL);
    if (!c) {
        if (world_rank == 0) fprintf(stderr, "usage: is S|W|A|B|C\n");
        MPI_Finalize();
        return 2;
    }
    int active = 1;
    while (active * 2 <= world_size) active *= 2;
    long total_keys = 1L << c->total_keys_log2;
    /* Rank 0 alters keys at indices up to 2*ITERATIONS. */
    if (total_keys / active <= 2 * ITERATIONS) {
        if (world_rank == 0)
            fprintf(stderr, "is: class %c cannot run on %d processes\n", c->name, active);
        MPI_Finalize();
        return 2;
    }

    struct is s = {0};
    s.c = c;
    s.comm = MPI_COMM_WORLD;
    if (active != world_size) {
        /* NPB works on a power of two; the others only wait. */
        MPI_Comm_split(MPI_COMM_WORLD, world_rank < active ? 0 : MPI_UNDEFINED, world_rank,
                       &s.comm);
        if (world_rank >= active) {
            int verdict = 0;
            MPI_Bcast(&verdict, 1, MPI_INT, 0, MPI_COMM_WORLD);
            MPI_Finalize();
            return verdict ? 0 : 1;
        }
    }
    MPI_Comm_rank(s.comm, &s.rank);
    MPI_Comm_size(s.comm, &s.size);
    s.total_keys = total_keys;
    s.num_keys = (int)(total_keys / s.size);
    s.max_key = 1 << c->max_key_log2;
    s.buckets = 1 << c->buckets_log2;
    s.shift = c->max_key_log2 - c->buckets_log2;

    s.keys = xmalloc(sizeof(int) * (size_t)s.num_keys);
    s.bucketed = xmalloc(sizeof(int) * (size_t)s.num_keys);
    s.received_cap = s.num_keys + s.num_keys / 2;
    s.received = xmalloc(sizeof(int) * (size_t)s.received_cap);
    s.counts = xmalloc(sizeof(int) * (size_t)s.max_key);
    s.bsize = xmalloc(sizeof(int) * (size_t)(s.buckets + TESTS));
    s.btotal = xmalloc(sizeof(int) * (size_t)(s.buckets + TESTS));
    s.bptr = xmalloc(sizeof(int) * (size_t)s.buckets);
    int *per_rank[6];
    for (int i = 0; i < 6; i++) per_rank[i] = xmalloc(sizeof(int) * (size_t)s.size);
    s.first = per_rank[0];
    s.last = per_rank[1];
    s.scount = per_rank[2];
    s.sdispl = per_rank[3];
    s.rcount = per_rank[4];
    s.rdispl = per_rank[5];

    if (s.rank == 0) {
        printf("\n\n NAS Parallel Benchmarks 3.4 -- IS Benchmark (o2g, C)\n\n");
        printf(" Size:  %ld  (class %c)\n", total_keys, c->name);
        printf(" Iterations:   %d\n", ITERATIONS);
        printf(" Total number of processes:  %d\n", world_size);
        if (active != world_size)
            printf(" WARNING: Number of processes is not a power of two (%d active)\n", active);
        fflush(stdout);
    }

    generate(&s);
    rank_keys(&s, 1); /* untimed warm-up, as NPB does */
    s.passed = 0;
    s.t_small = s.t_alltoallv = 0;

    double t0 = MPI_Wtime();
    for (int it = 1; it <= ITERATIONS; it++) rank_keys(&s, it);
    double elapsed = MPI_Wtime() - t0, max_time = 0;
    MPI_Reduce(&elapsed, &max_time, 1, MPI_DOUBLE, MPI_MAX, 0, s.comm);

    s.passed += full_verify(&s);
    int passed = 0;
    MPI_Reduce(&s.passed, &passed, 1, MPI_INT, MPI_SUM, 0, s.comm);
    /* Every partial check runs on exactly one rank; full once per rank. */
    int verdict = passed == TESTS * ITERATIONS + s.size;

    if (s.rank == 0) {
        double mops = (double)ITERATIONS * (double)total_keys / max_time / 1e6;
        printf("\n\n IS Benchmark Completed\n");
        printf(" Class           =  %c\n", c->name);
        printf(" Size            =  %ld\n", total_keys);
        printf(" Iterations      =  %d\n", ITERATIONS);
        printf(" Time in seconds =  %.2f\n", max_time);
        printf(" Total processes =  %d\n", world_size);
        printf(" Active processes=  %d\n", active);
        printf(" Mop/s total     =  %.2f\n", mops);
        printf(" Mop/s/process   =  %.2f\n", mops / active);
        printf(" Operation type  =  keys ranked\n");
        printf(" Verification    =  %s\n", verdict ? "SUCCESSFUL" : "UNSUCCESSFUL");
        if (!verdict)
            printf(" (%d of %d checks passed)\n", passed, TESTS * ITERATIONS + s.size);
        fflush(stdout);
    }
    /* Rank 0's environment decides, as a launcher may not pass it on to
     * every rank; the split is gathered and printed there. */
    const char *timers = getenv("O2G_IS_TIMERS");
    int want_timers = s.rank == 0 && timers && strcmp(timers, "1") == 0;
    MPI_Bcast(&want_timers, 1, MPI_INT, 0, s.comm);
    if (want_timers) {
        double mine[3] = {elapsed, s.t_small, s.t_alltoallv};
        double *all = s.rank == 0 ? xmalloc(sizeof(double) * 3 * (size_t)s.size) : NULL;
        MPI_Gather(mine, 3, MPI_DOUBLE, all, 3, MPI_DOUBLE, 0, s.comm);
        for (int r = 0; s.rank == 0 && r < s.size; r++) {
            const double *t = &all[3 * r];
            printf(" timers: rank %d: total %.3f s, allreduce+alltoall %.3f s, alltoallv "
                   "%.3f s, rest %.3f s\n",
                   r, t[0], t[1], t[2], t[0] - t[1] - t[2]);
        }
        free(all);
        fflush(stdout);
    }
    /* Only rank 0 holds the reduced count: every rank exits with its verdict. */
    MPI_Bcast(&verdict, 1, MPI_INT, 0, MPI_COMM_WORLD);

    free(s.keys);
    free(s.bucketed);
    free(s.received);
    free(s.counts);
    free(s.bsize);
    free(s.btotal);
    free(s.bptr);
    for (int i = 0; i < 6; i++) free(per_rank[i]);
    MPI_Finalize();
    return verdict ? 0 : 1;
}
