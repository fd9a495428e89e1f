/*
 * A timeline of a process's writev calls, for LD_PRELOAD: each call's
 * entry and return on CLOCK_MONOTONIC, which every process of a machine
 * shares, so the timelines of two ranks line up. On loopback the receive
 * side of a TCP message (o2g's reader included) runs inside the sender's
 * writev, and the time from one rank's return to the other's next call is
 * the partner's reaction (see qemu/tests/bench-timeline.sh).
 *
 *   cc -O2 -shared -fPIC -o libo2g-timeline.so writev_timeline.c -ldl
 *   LD_PRELOAD=./libo2g-timeline.so O2G_TIMELINE_DIR=/tmp/tl prog
 *
 * At exit the process writes "START_NS END_NS PID" lines, one per call, to
 * $O2G_TIMELINE_DIR/timeline.PID (nothing without the variable). Up to
 * MAX_CALLS calls are kept; later ones are counted, not recorded.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define MAX_CALLS 100000

static struct {
    long long start, end;
} calls[MAX_CALLS];
static long recorded, dropped;

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

ssize_t writev(int fd, const struct iovec *iov, int n) {
    static ssize_t (*next)(int, const struct iovec *, int);
    if (!next) next = (ssize_t(*)(int, const struct iovec *, int))dlsym(RTLD_NEXT, "writev");
    long long start = now_ns();
    ssize_t r = next(fd, iov, n);
    if (recorded < MAX_CALLS) {
        calls[recorded].start = start;
        calls[recorded].end = now_ns();
        recorded++;
    } else {
        dropped++;
    }
    return r;
}

__attribute__((destructor)) static void write_timeline(void) {
    const char *dir = getenv("O2G_TIMELINE_DIR");
    if (!dir || recorded == 0) return;
    char path[4096];
    snprintf(path, sizeof path, "%s/timeline.%d", dir, (int)getpid());
    FILE *f = fopen(path, "w");
    if (!f) return;
    for (long i = 0; i < recorded; i++)
        fprintf(f, "%lld %lld %d\n", calls[i].start, calls[i].end, (int)getpid());
    if (dropped) fprintf(stderr, "writev_timeline: %ld calls past %d not recorded\n", dropped, MAX_CALLS);
    fclose(f);
}
