/*
 * Asynchronous progress, measured: the C twin of o2g-overlap
 * (bench/src/bin/overlap.rs), so the same protocol runs on our MPI and on
 * Open MPI / MPICH:
 *
 *   mpirun -n 2 overlap LABEL [--min BYTES] [--max BYTES] [--reps N]
 *                             [--factor F] [--side receiver|sender] [--thread]
 *
 * Rank 0 computes, rank 1 is its peer. For every power of 4 from --min
 * (64K) to --max (64M; K/M/G suffixes) and each side (receiver: rank 0
 * receives, rank 1 sends; sender: the other way round):
 *   1. t_comm: after a barrier rank 0 posts its MPI_Irecv / MPI_Isend and
 *      waits at once; rank 1 posts the matching operation and waits. Rank
 *      0 times post to end of wait; median of REPS (after one untimed).
 *   2. T = F x t_comm (F = 1.2).
 *   3. t_total: the same, but rank 0 spins on the clock for T between its
 *      post and its wait, with no MPI call.
 * overlap = clamp((t_comm + T - t_total) / t_comm, 0, 1): the share of the
 * transfer hidden behind the compute. The CPU time of each process in the
 * measured window (getrusage RUSAGE_SELF, all threads) shows what the
 * progress costs; rank 0's includes T itself. Rank 0 prints a table and
 *
 *   csv,<side>,<label>,<bytes>,<overlap%>,<t_comm_us>,<t_total_us>,<cpu_us>,<peer_cpu_us>
 *   reps,<side>,<label>,<bytes>,<t_comm;...>,<t_total;...>,<cpu;...>,<peer_cpu;...>
 *
 * as o2g-overlap does (medians; the interval in the table is the same
 * percentile bootstrap as bench/src/stats.rs, with another generator).
 *
 * --thread initialises with MPI_Init_thread(MPI_THREAD_MULTIPLE): MPICH
 * starts its progress thread (MPIR_CVAR_ASYNC_PROGRESS=1) only at that
 * level. The program itself calls MPI from one thread only, so whatever
 * level the library provides will do: o2g's libmpi_abi provides
 * MPI_THREAD_SINGLE whatever is asked (and has no progress thread to
 * start); the level provided is printed.
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define TAG 7
#define TAG_REPORT 8
#define RESAMPLES 2000

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* User plus system CPU time of this process (all its threads), seconds. */
static double cpu_time(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

/* The compute: spins on the clock for `secs`, calling no MPI function. */
static volatile uint64_t turns;
static void compute(double secs) {
    double end = now() + secs;
    while (now() < end) turns++;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(const double *v, int n, double *scratch) {
    memcpy(scratch, v, (size_t)n * sizeof *v);
    qsort(scratch, (size_t)n, sizeof *v, by_value);
    return n % 2 ? scratch[n / 2] : (scratch[n / 2 - 1] + scratch[n / 2]) / 2;
}

/* The 95% percentile-bootstrap interval of the median of v[0..n). */
static void interval(const double *v, int n, double *low, double *high) {
    static double meds[RESAMPLES];
    double *pick = malloc((size_t)n * sizeof *v), *scratch = malloc((size_t)n * sizeof *v);
    uint64_t x = 0x6f326721;
    if (!pick || !scratch) MPI_Abort(MPI_COMM_WORLD, 3);
    for (int r = 0; r < RESAMPLES; r++) {
        for (int i = 0; i < n; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            pick[i] = v[x % (uint64_t)n];
        }
        meds[r] = median(pick, n, scratch);
    }
    qsort(meds, RESAMPLES, sizeof *meds, by_value);
    *low = meds[(int)((RESAMPLES - 1) * 0.025 + 0.5)];
    *high = meds[(int)((RESAMPLES - 1) * 0.975 + 0.5)];
    free(pick);
    free(scratch);
}

static long parse_size(const char *s) {
    char *end;
    long n = strtol(s, &end, 10);
    switch (*end) {
    case 'K': case 'k': n <<= 10; end++; break;
    case 'M': case 'm': n <<= 20; end++; break;
    case 'G': case 'g': n <<= 30; end++; break;
    }
    return *end ? -1 : n;
}

/* One repetition: a barrier, then rank 0's operation (with `work` seconds
 * of compute between post and wait) and rank 1's matching one. Rank 0
 * times from its post, rank 1 from the barrier; both to their wait's end. */
static void exchange(int rank, int receiver_side, char *buf, long n, double work,
                     double *wall, double *cpu) {
    int peer = 1 - rank, receives = (rank == 0) == receiver_side;
    MPI_Request req;
    MPI_Status status;
    MPI_Barrier(MPI_COMM_WORLD);
    double c0 = cpu_time(), t0 = MPI_Wtime();
    if (receives)
        MPI_Irecv(buf, (int)n, MPI_BYTE, peer, TAG, MPI_COMM_WORLD, &req);
    else
        MPI_Isend(buf, (int)n, MPI_BYTE, peer, TAG, MPI_COMM_WORLD, &req);
    if (rank == 0 && work > 0) compute(work);
    MPI_Wait(&req, &status);
    *wall = (MPI_Wtime() - t0) * 1e6;
    *cpu = (cpu_time() - c0) * 1e6;
}

static void print_list(const double *v, int n) {
    for (int i = 0; i < n; i++) printf("%s%.1f", i ? ";" : "", v[i]);
}

static void usage(int rank) {
    if (rank == 0)
        fprintf(stderr, "usage: overlap LABEL [--min BYTES] [--max BYTES] [--reps N] [--factor F]"
                        " [--side receiver|sender] [--thread]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
}

int main(int argc, char **argv) {
    int rank, size, thread = 0, provided = -1, reps = 5, sides = 3;
    long min = 64L << 10, max = 64L << 20;
    double factor = 1.2;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--thread") == 0) thread = 1;
    if (thread)
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    else
        MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0) fprintf(stderr, "overlap: needs exactly 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (argc < 2 || argv[1][0] == '-') usage(rank);
    const char *label = argv[1];
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--thread") == 0) continue;
        if (!v) usage(rank);
        if (strcmp(a, "--min") == 0) min = parse_size(v);
        else if (strcmp(a, "--max") == 0) max = parse_size(v);
        else if (strcmp(a, "--reps") == 0) reps = atoi(v);
        else if (strcmp(a, "--factor") == 0) factor = atof(v);
        else if (strcmp(a, "--side") == 0 && strcmp(v, "receiver") == 0) sides = 1;
        else if (strcmp(a, "--side") == 0 && strcmp(v, "sender") == 0) sides = 2;
        else usage(rank);
        i++;
    }
    if (min < 1 || max < min || max > (long)INT32_MAX || reps < 1 || !(factor > 0)) usage(rank);
    char *buf = malloc((size_t)max);
    double *comm = calloc((size_t)reps, sizeof(double)), *total = calloc((size_t)reps, sizeof(double)),
           *cpu = calloc((size_t)reps, sizeof(double)), *peer_cpu = calloc((size_t)reps, sizeof(double)),
           *scratch = calloc((size_t)reps, sizeof(double));
    if (!buf || !comm || !total || !cpu || !peer_cpu || !scratch) MPI_Abort(MPI_COMM_WORLD, 3);
    memset(buf, 0x5a, (size_t)max);
    if (rank == 0) {
        printf("# overlap of a nonblocking transfer with %gx its time of compute (no MPI calls), %s (C",
               factor, label);
        if (thread)
            printf(", MPI_Init_thread(MPI_THREAD_MULTIPLE) provided %s",
                   provided == MPI_THREAD_MULTIPLE     ? "MPI_THREAD_MULTIPLE"
                   : provided == MPI_THREAD_SERIALIZED ? "MPI_THREAD_SERIALIZED"
                   : provided == MPI_THREAD_FUNNELED   ? "MPI_THREAD_FUNNELED"
                                                       : "MPI_THREAD_SINGLE");
        printf("): medians of %d repetitions, 95%% interval\n", reps);
        printf("%8s %10s %11s %11s %11s %11s %11s %8s %11s %11s\n", "side", "bytes", "t_comm(us)",
               "compute(us)", "t_total(us)", "low", "high", "overlap%", "cpu(us)", "peer-cpu");
        fflush(stdout);
    }
    for (int side = 1; side <= 2; side++) {
        if (!(sides & side)) continue;
        int receiver_side = side == 1;
        const char *name = receiver_side ? "receiver" : "sender";
        for (long n = min; n <= max; n *= 4) {
            double wall, c;
            /* 1. The transfer alone (one untimed repetition first). */
            for (int rep = 0; rep <= reps; rep++) {
                exchange(rank, receiver_side, buf, n, 0, &wall, &c);
                if (rep > 0) comm[rep - 1] = wall;
            }
            double t_comm = median(comm, reps, scratch);
            /* 2. The compute that would cover it; only rank 0 uses it. */
            double work = t_comm * factor;
            /* 3. The transfer behind the compute. */
            for (int rep = 0; rep < reps; rep++)
                exchange(rank, receiver_side, buf, n, work / 1e6, &total[rep], &cpu[rep]);
            if (rank == 1) {
                MPI_Send(cpu, reps, MPI_DOUBLE, 0, TAG_REPORT, MPI_COMM_WORLD);
                continue;
            }
            MPI_Status status;
            MPI_Recv(peer_cpu, reps, MPI_DOUBLE, 1, TAG_REPORT, MPI_COMM_WORLD, &status);
            double t = median(total, reps, scratch), low, high;
            interval(total, reps, &low, &high);
            double cm = median(cpu, reps, scratch), pcm = median(peer_cpu, reps, scratch);
            double o = (t_comm + work - t) / t_comm;
            o = o < 0 ? 0 : o > 1 ? 1 : o;
            printf("%8s %10ld %11.1f %11.1f %11.1f %11.1f %11.1f %8.1f %11.1f %11.1f\n", name, n, t_comm,
                   work, t, low, high, o * 100, cm, pcm);
            printf("csv,%s,%s,%ld,%.1f,%.1f,%.1f,%.1f,%.1f\n", name, label, n, o * 100, t_comm, t, cm, pcm);
            printf("reps,%s,%s,%ld,", name, label, n);
            print_list(comm, reps);
            printf(",");
            print_list(total, reps);
            printf(",");
            print_list(cpu, reps);
            printf(",");
            print_list(peer_cpu, reps);
            printf("\n");
            fflush(stdout);
        }
    }
    free(buf);
    free(comm);
    free(total);
    free(cpu);
    free(peer_cpu);
    free(scratch);
    MPI_Finalize();
    return 0;
}
