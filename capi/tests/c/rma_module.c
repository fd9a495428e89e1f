/* Passive-target epochs while the target sits outside MPI.
 *
 * Rank 0 exposes a window, then blocks in read(2) on a FIFO: no MPI call,
 * no progress of its own. Every other rank locks rank 0's window
 * (exclusive, then all of them shared at once), puts, flushes, gets back,
 * unlocks, and only then writes one byte to the FIFO. Over o2g the
 * target's kernel module grants the locks, places the puts, answers the
 * gets with the window's bytes and the flushes and unlocks by itself, so
 * the origins finish and wake rank 0,
 * which finds every value in its window and the module's count of the
 * puts it placed (MPI_Win_get_info "o2g_placed_puts").
 *
 * Where no module serves the window (the socket transports, or
 * O2G_WIN_MODULE=0), the same epochs run with rank 0 waiting inside
 * MPI_Barrier instead, where its library serves them; with
 * RMA_MODULE_REQUIRED=1 that is a failure. Then, with rank 0 back in MPI,
 * an epoch that mixes a put with an accumulate and a get (which the
 * target's library serves) checks that unlock waits for both. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

/* Slots per origin: its exclusive put, its flushed put, its shared put. */
#define SLOTS 3

static int info_flag(MPI_Win win, const char *key, char *value, int len) {
    MPI_Info info;
    int flag = 0;
    OK(MPI_Win_get_info(win, &info));
    OK(MPI_Info_get_string(info, key, &len, value, &flag));
    OK(MPI_Info_free(&info));
    return flag;
}

static int value_of(int origin, int slot) { return 1000 * origin + slot + 1; }

int main(int argc, char **argv) {
    int rank, size;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    check_rank = rank;

    int *base;
    MPI_Win win;
    MPI_Aint bytes = (MPI_Aint)(size * SLOTS + 2) * (MPI_Aint)sizeof(int);
    OK(MPI_Win_allocate(rank == 0 ? bytes : 0, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                        &base, &win));
    if (rank == 0)
        memset(base, 0, (size_t)bytes);

    char value[64] = "";
    int served = 0;
    if (rank == 0)
        served = info_flag(win, "o2g_module_agent", value, sizeof value) &&
                 strcmp(value, "true") == 0;
    OK(MPI_Bcast(&served, 1, MPI_INT, 0, MPI_COMM_WORLD));
    const char *required = getenv("RMA_MODULE_REQUIRED");
    if (required && strcmp(required, "1") == 0)
        CHECK(served);

    /* The FIFO that wakes rank 0: named after its pid. */
    int pid = (int)getpid();
    OK(MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD));
    char fifo[64];
    snprintf(fifo, sizeof fifo, "/tmp/o2g-rma-module-%d", pid);
    int fd = -1;
    if (rank == 0 && served && size > 1) {
        CHECK(mkfifo(fifo, 0600) == 0 || errno == EEXIST);
        /* Read and write: the FIFO never reads as closed in between. */
        fd = open(fifo, O_RDWR);
        CHECK(fd >= 0);
    }
    OK(MPI_Barrier(MPI_COMM_WORLD));

    if (rank == 0) {
        if (served && size > 1) {
            char buf[64];
            int got = 0;
            while (got < size - 1) {
                ssize_t n = read(fd, buf, sizeof buf);
                CHECK(n > 0 || (n < 0 && errno == EINTR));
                if (n > 0)
                    got += (int)n;
            }
            close(fd);
            unlink(fifo);
        }
        OK(MPI_Barrier(MPI_COMM_WORLD));
    } else {
        int v = value_of(rank, 0);
        OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
        OK(MPI_Put(&v, 1, MPI_INT, 0, rank * SLOTS, 1, MPI_INT, win));
        OK(MPI_Win_flush(0, win));
        /* Read back what the flush made visible, and a whole row. */
        int back = -1, row[SLOTS] = {-1, -1, -1};
        OK(MPI_Get(&back, 1, MPI_INT, 0, rank * SLOTS, 1, MPI_INT, win));
        OK(MPI_Get(row, SLOTS, MPI_INT, 0, rank * SLOTS, SLOTS, MPI_INT, win));
        OK(MPI_Win_flush(0, win));
        CHECK(back == v && row[0] == v && row[1] == 0);
        int w = value_of(rank, 1);
        OK(MPI_Put(&w, 1, MPI_INT, 0, rank * SLOTS + 1, 1, MPI_INT, win));
        OK(MPI_Win_unlock(0, win));
        /* Every origin at once, under shared locks of every window. */
        int x = value_of(rank, 2);
        OK(MPI_Win_lock_all(0, win));
        OK(MPI_Put(&x, 1, MPI_INT, 0, rank * SLOTS + 2, 1, MPI_INT, win));
        OK(MPI_Win_unlock_all(win));
        if (served) {
            int wfd = open(fifo, O_WRONLY);
            CHECK(wfd >= 0);
            CHECK(write(wfd, "x", 1) == 1);
            close(wfd);
        }
        OK(MPI_Barrier(MPI_COMM_WORLD));
    }

    if (rank == 0) {
        for (int o = 1; o < size; o++)
            for (int s = 0; s < SLOTS; s++)
                CHECK(base[o * SLOTS + s] == value_of(o, s));
        if (served) {
            CHECK(info_flag(win, "o2g_placed_puts", value, sizeof value));
            CHECK(atol(value) >= (long)SLOTS * (size - 1));
        }
        printf("rma_module: %d origins, %s\n", size - 1,
               served ? "the module served every epoch while rank 0 sat in read(2)"
                      : "rank 0's library served the epochs (no module)");
    }

    /* A put, an accumulate and a get in one epoch: the library serves the
     * last two, and unlock waits for all three. */
    int counter = size * SLOTS, last = size * SLOTS + 1;
    if (rank != 0) {
        int one = 1, mine = rank, seen = -1;
        OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        OK(MPI_Accumulate(&one, 1, MPI_INT, 0, counter, 1, MPI_INT, MPI_SUM, win));
        OK(MPI_Put(&mine, 1, MPI_INT, 0, last, 1, MPI_INT, win));
        OK(MPI_Get(&seen, 1, MPI_INT, 0, rank * SLOTS, 1, MPI_INT, win));
        OK(MPI_Win_unlock(0, win));
        CHECK(seen == value_of(rank, 0));
    }
    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
        CHECK(base[counter] == size - 1);
        CHECK(size == 1 || (base[last] >= 1 && base[last] < size));
    }
    OK(MPI_Win_free(&win));
    OK(MPI_Finalize());
    return 0;
}
