/* One-sided communication under MPI_Win_fence (MPI 4.1 chapter 12):
 * MPI_Win_create and MPI_Win_allocate, the window attributes (base, size,
 * disp_unit, create flavor, memory model), the window's group, name and
 * info; Put and Get to the neighbours at a displacement, a strided origin
 * type into a contiguous target and the reverse, MPI_Put_c / MPI_Get_c;
 * MPI_Accumulate with every predefined op valid for MPI_INT, with MPI_SUM
 * and MPI_MAX on MPI_DOUBLE and MPI_MINLOC / MPI_MAXLOC on MPI_2INT, all
 * ranks into rank 0; MPI_Get_accumulate (old values are a serialisation),
 * with MPI_NO_OP (atomic read), MPI_Fetch_and_op (a shared counter),
 * MPI_Compare_and_swap (exactly one winner); the request-based Rput, Rget,
 * Raccumulate, Rget_accumulate in a lock_all epoch; MPI_PROC_NULL targets
 * do nothing; MPI_Win_free sets MPI_WIN_NULL. Every value checked; correct
 * at any number of ranks. */
#include <string.h>
#include "check.h"

#define N 32

/* Byte offsets in the MPI_Win_allocate window (disp_unit 1) at rank 0. */
enum {
    A_SUM = 0,  /* 3 ints */
    A_PROD = 12,
    A_MAX = 16,
    A_MIN = 20,
    A_BAND = 24,
    A_BOR = 28,
    A_BXOR = 32,
    A_LAND = 36,
    A_LOR = 40,
    A_LXOR = 44,
    A_REPL = 48,
    A_GACC = 52,  /* Get_accumulate */
    A_FOP = 56,   /* Fetch_and_op counter */
    A_CAS = 60,   /* Compare_and_swap */
    A_RACC = 64,  /* Raccumulate */
    A_RGACC = 68, /* Rget_accumulate */
    A_DSUM = 72,  /* double */
    A_DMAX = 80,  /* double */
    A_MINLOC = 88, /* 2 ints */
    A_MAXLOC = 96, /* 2 ints */
    A_BYTES = 128
};

typedef struct {
    int val, loc;
} int2;

static int init_of(int i) { return -1 - i; }

static int *ip(char *base, int off) { return (int *)(base + off); }

static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int rank, size, flag, len;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    check_rank = rank;
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int leftleft = (rank + 2 * size - 2) % size;

    /* ---- MPI_Win_create over a user array, disp_unit sizeof(int). ---- */
    int buf[N];
    for (int i = 0; i < N; i++) buf[i] = init_of(i);
    MPI_Win win = MPI_WIN_NULL;
    OK(MPI_Win_create(buf, (MPI_Aint)sizeof buf, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    CHECK(win != MPI_WIN_NULL);

    /* Attributes: WIN_BASE is the base itself, the others point at it. */
    void *base = NULL;
    MPI_Aint *wsize = NULL;
    int *du = NULL, *flavor = NULL, *model = NULL;
    flag = 0;
    OK(MPI_Win_get_attr(win, MPI_WIN_BASE, &base, &flag));
    CHECK(flag && base == (void *)buf);
    flag = 0;
    OK(MPI_Win_get_attr(win, MPI_WIN_SIZE, &wsize, &flag));
    CHECK(flag && wsize != NULL && *wsize == (MPI_Aint)sizeof buf);
    flag = 0;
    OK(MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &du, &flag));
    CHECK(flag && du != NULL && *du == (int)sizeof(int));
    flag = 0;
    OK(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag));
    CHECK(flag && flavor != NULL && *flavor == MPI_WIN_FLAVOR_CREATE);
    flag = 0;
    OK(MPI_Win_get_attr(win, MPI_WIN_MODEL, &model, &flag));
    CHECK(flag && model != NULL && (*model == MPI_WIN_UNIFIED || *model == MPI_WIN_SEPARATE));

    /* The window's group is the communicator's. */
    MPI_Group wg, cg;
    int cmp = -1;
    OK(MPI_Win_get_group(win, &wg));
    OK(MPI_Comm_group(MPI_COMM_WORLD, &cg));
    OK(MPI_Group_compare(wg, cg, &cmp));
    CHECK(cmp == MPI_IDENT);
    OK(MPI_Group_free(&wg));
    OK(MPI_Group_free(&cg));
    CHECK(wg == MPI_GROUP_NULL);

    /* Name: empty at first, then what was set. */
    char name[MPI_MAX_OBJECT_NAME];
    len = -1;
    memset(name, 'x', sizeof name);
    OK(MPI_Win_get_name(win, name, &len));
    CHECK(len == 0 && name[0] == '\0');
    OK(MPI_Win_set_name(win, "o2g rma window"));
    len = -1;
    OK(MPI_Win_get_name(win, name, &len));
    CHECK(len == (int)strlen("o2g rma window") && strcmp(name, "o2g rma window") == 0);

    /* Info: set_info accepts hints, get_info returns a new valid object. */
    MPI_Info info, used = MPI_INFO_NULL;
    int nkeys = -1;
    OK(MPI_Info_create(&info));
    OK(MPI_Info_set(info, "accumulate_ordering", "rar,raw,war,waw"));
    OK(MPI_Win_set_info(win, info));
    OK(MPI_Info_free(&info));
    OK(MPI_Win_get_info(win, &used));
    CHECK(used != MPI_INFO_NULL);
    OK(MPI_Info_get_nkeys(used, &nkeys));
    CHECK(nkeys >= 0);
    OK(MPI_Info_free(&used));
    CHECK(used == MPI_INFO_NULL);

    /* ---- Put and Get under fence. ---- */
    int src[8], got[8];
    OK(MPI_Win_fence(0, win));
    for (int k = 0; k < 4; k++) src[k] = rank * 100 + k;
    OK(MPI_Put(src, 4, MPI_INT, right, 2, 4, MPI_INT, win));
    OK(MPI_Win_fence(0, win));
    for (int i = 0; i < N; i++)
        CHECK(buf[i] == ((i >= 2 && i < 6) ? left * 100 + (i - 2) : init_of(i)));

    /* Get from the left; strided origin into a contiguous target and a
     * contiguous origin into a strided target. */
    MPI_Datatype vec;
    OK(MPI_Type_vector(4, 1, 2, MPI_INT, &vec));
    OK(MPI_Type_commit(&vec));
    for (int k = 0; k < 8; k++) got[k] = -7;
    OK(MPI_Get(got, 4, MPI_INT, left, 2, 4, MPI_INT, win));
    int strided[8], c4[4];
    for (int i = 0; i < 8; i++) strided[i] = rank * 10 + i;
    for (int k = 0; k < 4; k++) c4[k] = rank * 1000 + k;
    OK(MPI_Put(strided, 1, vec, right, 8, 4, MPI_INT, win));
    OK(MPI_Put(c4, 4, MPI_INT, right, 16, 1, vec, win));
    OK(MPI_Win_fence(0, win));
    for (int k = 0; k < 4; k++) CHECK(got[k] == leftleft * 100 + k);
    for (int k = 4; k < 8; k++) CHECK(got[k] == -7);
    for (int k = 0; k < 4; k++) CHECK(buf[8 + k] == left * 10 + 2 * k);
    for (int k = 0; k < 4; k++) CHECK(buf[16 + 2 * k] == left * 1000 + k);
    for (int k = 0; k < 3; k++) CHECK(buf[17 + 2 * k] == init_of(17 + 2 * k));
    CHECK(buf[7] == init_of(7) && buf[12] == init_of(12) && buf[23] == init_of(23));

    /* A strided target type on a Get; MPI_Put_c. */
    for (int k = 0; k < 8; k++) got[k] = -7;
    OK(MPI_Get(got, 4, MPI_INT, left, 16, 1, vec, win));
    int one = rank * 7 + 1;
    OK(MPI_Put_c(&one, 1, MPI_INT, right, 24, 1, MPI_INT, win));
    OK(MPI_Win_fence(0, win));
    for (int k = 0; k < 4; k++) CHECK(got[k] == leftleft * 1000 + k);
    CHECK(got[4] == -7);
    CHECK(buf[24] == left * 7 + 1 && buf[25] == init_of(25));

    /* MPI_Get_c. */
    int g1 = -7;
    OK(MPI_Get_c(&g1, 1, MPI_INT, left, 24, 1, MPI_INT, win));
    OK(MPI_Win_fence(0, win));
    CHECK(g1 == leftleft * 7 + 1);

    /* ---- MPI_Win_allocate, disp_unit 1, accumulate at rank 0. ---- */
    char *ab = NULL;
    MPI_Win aw = MPI_WIN_NULL;
    OK(MPI_Win_allocate(A_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &ab, &aw));
    CHECK(aw != MPI_WIN_NULL && ab != NULL);
    memset(ab, 0, A_BYTES); /* writable */
    flag = 0;
    OK(MPI_Win_get_attr(aw, MPI_WIN_BASE, &base, &flag));
    CHECK(flag && base == (void *)ab);
    OK(MPI_Win_get_attr(aw, MPI_WIN_SIZE, &wsize, &flag));
    CHECK(flag && *wsize == A_BYTES);
    OK(MPI_Win_get_attr(aw, MPI_WIN_DISP_UNIT, &du, &flag));
    CHECK(flag && *du == 1);
    OK(MPI_Win_get_attr(aw, MPI_WIN_CREATE_FLAVOR, &flavor, &flag));
    CHECK(flag && *flavor == MPI_WIN_FLAVOR_ALLOCATE);
    OK(MPI_Win_get_attr(aw, MPI_WIN_MODEL, &model, &flag));
    CHECK(flag && (*model == MPI_WIN_UNIFIED || *model == MPI_WIN_SEPARATE));

    if (rank == 0) {
        ip(ab, A_PROD)[0] = 1;
        ip(ab, A_MAX)[0] = -100;
        ip(ab, A_MIN)[0] = 100;
        ip(ab, A_BAND)[0] = 0xff;
        ip(ab, A_BXOR)[0] = 0x100;
        ip(ab, A_LAND)[0] = 5;
        ip(ab, A_REPL)[0] = -1;
        ip(ab, A_CAS)[0] = -1;
        double dmax = -1e9;
        memcpy(ab + A_DMAX, &dmax, sizeof dmax);
        int2 mn = {1000, -1}, mx = {-1000, -1};
        memcpy(ab + A_MINLOC, &mn, sizeof mn);
        memcpy(ab + A_MAXLOC, &mx, sizeof mx);
    }
    OK(MPI_Win_fence(0, aw));
    int sumv[3] = {rank, 2 * rank, 1};
    int prodv = rank + 1, mmv = rank * 3 - 5, bandv = ~(1 << rank), borv = 1 << rank;
    int bxorv = (1 << rank) | 0x400, landv = (rank != 1) ? 7 : 0;
    int lorv = (rank == size - 1) ? 3 : 0, lxorv = (rank % 2 == 0) ? 9 : 0, replv = rank * 11 + 3;
    double dsum = rank + 0.5, dmaxv = rank * 1.5;
    int2 minlocv = {10 - rank / 2, rank}, maxlocv = {rank / 2, rank};
    OK(MPI_Accumulate(sumv, 3, MPI_INT, 0, A_SUM, 3, MPI_INT, MPI_SUM, aw));
    OK(MPI_Accumulate(&prodv, 1, MPI_INT, 0, A_PROD, 1, MPI_INT, MPI_PROD, aw));
    OK(MPI_Accumulate(&mmv, 1, MPI_INT, 0, A_MAX, 1, MPI_INT, MPI_MAX, aw));
    OK(MPI_Accumulate(&mmv, 1, MPI_INT, 0, A_MIN, 1, MPI_INT, MPI_MIN, aw));
    OK(MPI_Accumulate(&bandv, 1, MPI_INT, 0, A_BAND, 1, MPI_INT, MPI_BAND, aw));
    OK(MPI_Accumulate(&borv, 1, MPI_INT, 0, A_BOR, 1, MPI_INT, MPI_BOR, aw));
    OK(MPI_Accumulate(&bxorv, 1, MPI_INT, 0, A_BXOR, 1, MPI_INT, MPI_BXOR, aw));
    OK(MPI_Accumulate(&landv, 1, MPI_INT, 0, A_LAND, 1, MPI_INT, MPI_LAND, aw));
    OK(MPI_Accumulate(&lorv, 1, MPI_INT, 0, A_LOR, 1, MPI_INT, MPI_LOR, aw));
    OK(MPI_Accumulate(&lxorv, 1, MPI_INT, 0, A_LXOR, 1, MPI_INT, MPI_LXOR, aw));
    OK(MPI_Accumulate(&replv, 1, MPI_INT, 0, A_REPL, 1, MPI_INT, MPI_REPLACE, aw));
    OK(MPI_Accumulate(&dsum, 1, MPI_DOUBLE, 0, A_DSUM, 1, MPI_DOUBLE, MPI_SUM, aw));
    OK(MPI_Accumulate(&dmaxv, 1, MPI_DOUBLE, 0, A_DMAX, 1, MPI_DOUBLE, MPI_MAX, aw));
    OK(MPI_Accumulate(&minlocv, 1, MPI_2INT, 0, A_MINLOC, 1, MPI_2INT, MPI_MINLOC, aw));
    OK(MPI_Accumulate(&maxlocv, 1, MPI_2INT, 0, A_MAXLOC, 1, MPI_2INT, MPI_MAXLOC, aw));
    /* Get_accumulate of distinct bits: the old values show one order. */
    int gaccv = 1 << rank, gacc_old = -7;
    OK(MPI_Get_accumulate(&gaccv, 1, MPI_INT, &gacc_old, 1, MPI_INT, 0, A_GACC, 1, MPI_INT,
                          MPI_SUM, aw));
    /* Fetch_and_op: a counter. */
    int inc = 1, fop_old = -7;
    OK(MPI_Fetch_and_op(&inc, &fop_old, MPI_INT, 0, A_FOP, MPI_SUM, aw));
    /* Compare_and_swap: from -1, exactly one rank wins. */
    int cas_new = rank, cas_cmp = -1, cas_old = -7;
    OK(MPI_Compare_and_swap(&cas_new, &cas_cmp, &cas_old, MPI_INT, 0, A_CAS, aw));
    OK(MPI_Win_fence(0, aw));

    if (rank == 0) {
        int s = size * (size - 1) / 2, fact = 1, lxor = ((size + 1) / 2) % 2;
        for (int p = 1; p <= size; p++) fact *= p;
        int mask = (1 << size) - 1;
        CHECK(ip(ab, A_SUM)[0] == s && ip(ab, A_SUM)[1] == 2 * s && ip(ab, A_SUM)[2] == size);
        CHECK(ip(ab, A_PROD)[0] == fact);
        CHECK(ip(ab, A_MAX)[0] == (size - 1) * 3 - 5);
        CHECK(ip(ab, A_MIN)[0] == -5);
        CHECK(ip(ab, A_BAND)[0] == (0xff & ~mask));
        CHECK(ip(ab, A_BOR)[0] == mask);
        CHECK(ip(ab, A_BXOR)[0] == (0x100 ^ mask ^ ((size % 2) ? 0x400 : 0)));
        CHECK(ip(ab, A_LAND)[0] == (size >= 2 ? 0 : 1));
        CHECK(ip(ab, A_LOR)[0] == 1);
        CHECK(ip(ab, A_LXOR)[0] == lxor);
        int repl = ip(ab, A_REPL)[0], from = (repl - 3) / 11;
        CHECK(repl >= 3 && (repl - 3) % 11 == 0 && from < size);
        CHECK(ip(ab, A_GACC)[0] == mask);
        CHECK(ip(ab, A_FOP)[0] == size);
        double d;
        memcpy(&d, ab + A_DSUM, sizeof d);
        CHECK(d == s + 0.5 * size);
        memcpy(&d, ab + A_DMAX, sizeof d);
        CHECK(d == (size - 1) * 1.5);
        int2 v;
        memcpy(&v, ab + A_MINLOC, sizeof v);
        CHECK(v.val == 10 - (size - 1) / 2 && v.loc == 2 * ((size - 1) / 2));
        memcpy(&v, ab + A_MAXLOC, sizeof v);
        CHECK(v.val == (size - 1) / 2 && v.loc == 2 * ((size - 1) / 2));
    }

    /* The fetched values of every rank. */
    int mine[3] = {gacc_old, fop_old, cas_old};
    int *all = malloc(sizeof(int) * 3 * size), *tmp = malloc(sizeof(int) * size);
    OK(MPI_Allgather(mine, 3, MPI_INT, all, 3, MPI_INT, MPI_COMM_WORLD));
    /* Get_accumulate: following the old values from 0 visits every rank
     * once (each rank's old value holds exactly the bits added before it). */
    CHECK((gacc_old & (1 << rank)) == 0);
    {
        int cur = 0;
        for (int step = 0; step < size; step++) {
            int who = -1;
            for (int p = 0; p < size; p++)
                if (all[3 * p] == cur) {
                    CHECK(who == -1);
                    who = p;
                }
            CHECK(who >= 0);
            cur |= 1 << who;
        }
        CHECK(cur == (1 << size) - 1);
    }
    /* Fetch_and_op: the old values are 0 .. size-1. */
    for (int p = 0; p < size; p++) tmp[p] = all[3 * p + 1];
    qsort(tmp, size, sizeof(int), cmp_int);
    for (int p = 0; p < size; p++) CHECK(tmp[p] == p);
    /* Compare_and_swap: one winner saw -1, the others saw the winner. */
    {
        int winner = -1;
        for (int p = 0; p < size; p++)
            if (all[3 * p + 2] == -1) {
                CHECK(winner == -1);
                winner = p;
            }
        CHECK(winner >= 0);
        for (int p = 0; p < size; p++) CHECK(p == winner || all[3 * p + 2] == winner);
        if (rank == 0) CHECK(ip(ab, A_CAS)[0] == winner);
    }

    /* Get_accumulate with MPI_NO_OP, and Fetch_and_op with MPI_NO_OP: atomic
     * reads that leave the target as it was. */
    int dummy = 12345, rd = -7, rd2 = -7;
    OK(MPI_Get_accumulate(&dummy, 1, MPI_INT, &rd, 1, MPI_INT, 0, A_GACC, 1, MPI_INT, MPI_NO_OP,
                          aw));
    OK(MPI_Fetch_and_op(NULL, &rd2, MPI_INT, 0, A_FOP, MPI_NO_OP, aw));
    OK(MPI_Win_fence(0, aw));
    CHECK(rd == (1 << size) - 1 && rd2 == size && dummy == 12345);
    if (rank == 0) CHECK(ip(ab, A_GACC)[0] == (1 << size) - 1 && ip(ab, A_FOP)[0] == size);

    /* ---- Request-based operations in a lock_all epoch. ---- */
    OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, aw));
    OK(MPI_Win_lock_all(0, win));
    OK(MPI_Win_lock_all(0, aw));
    MPI_Request req[4];
    int rputv = rank + 500, rgetv = -7, raccv = rank + 1, rgaccv = 1, rgacc_old = -7;
    OK(MPI_Rput(&rputv, 1, MPI_INT, right, 26, 1, MPI_INT, win, &req[0]));
    OK(MPI_Rget(&rgetv, 1, MPI_INT, left, 24, 1, MPI_INT, win, &req[1]));
    OK(MPI_Raccumulate(&raccv, 1, MPI_INT, 0, A_RACC, 1, MPI_INT, MPI_SUM, aw, &req[2]));
    OK(MPI_Rget_accumulate(&rgaccv, 1, MPI_INT, &rgacc_old, 1, MPI_INT, 0, A_RGACC, 1, MPI_INT,
                           MPI_SUM, aw, &req[3]));
    for (int k = 0; k < 4; k++) CHECK(req[k] != MPI_REQUEST_NULL);
    OK(MPI_Wait(&req[1], MPI_STATUS_IGNORE));
    CHECK(req[1] == MPI_REQUEST_NULL);
    CHECK(rgetv == leftleft * 7 + 1);
    OK(MPI_Waitall(4, req, MPI_STATUSES_IGNORE));
    for (int k = 0; k < 4; k++) CHECK(req[k] == MPI_REQUEST_NULL);
    CHECK(rgacc_old >= 0 && rgacc_old < size);
    /* An Rget to MPI_PROC_NULL completes at once with nothing read. */
    int pnull = 77;
    MPI_Request pr;
    OK(MPI_Rget(&pnull, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, win, &pr));
    OK(MPI_Wait(&pr, MPI_STATUS_IGNORE));
    CHECK(pnull == 77 && pr == MPI_REQUEST_NULL);
    OK(MPI_Win_unlock_all(aw));
    OK(MPI_Win_unlock_all(win));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    /* Read what arrived in the local window under a lock on oneself. */
    OK(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win));
    CHECK(buf[26] == left + 500 && buf[27] == init_of(27));
    OK(MPI_Win_unlock(rank, win));
    if (rank == 0) {
        OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, aw));
        CHECK(ip(ab, A_RACC)[0] == size * (size + 1) / 2);
        CHECK(ip(ab, A_RGACC)[0] == size);
        OK(MPI_Win_unlock(0, aw));
    }
    OK(MPI_Allgather(&rgacc_old, 1, MPI_INT, tmp, 1, MPI_INT, MPI_COMM_WORLD));
    qsort(tmp, size, sizeof(int), cmp_int);
    for (int p = 0; p < size; p++) CHECK(tmp[p] == p);

    /* ---- MPI_PROC_NULL targets: successful no-ops. ---- */
    int snap[N];
    OK(MPI_Win_fence(MPI_MODE_NOPRECEDE, win));
    memcpy(snap, buf, sizeof buf);
    int pv = 99, pg = 55, pres = 66, pcmp = 0;
    OK(MPI_Put(&pv, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, win));
    OK(MPI_Get(&pg, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, win));
    OK(MPI_Accumulate(&pv, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, MPI_SUM, win));
    OK(MPI_Get_accumulate(&pv, 1, MPI_INT, &pres, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT,
                          MPI_SUM, win));
    OK(MPI_Fetch_and_op(&pv, &pres, MPI_INT, MPI_PROC_NULL, 0, MPI_SUM, win));
    OK(MPI_Compare_and_swap(&pv, &pcmp, &pres, MPI_INT, MPI_PROC_NULL, 0, win));
    OK(MPI_Win_fence(0, win));
    CHECK(pv == 99 && pg == 55 && pres == 66);
    CHECK(memcmp(snap, buf, sizeof buf) == 0);
    OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));

    /* ---- MPI_Win_free sets the handle to MPI_WIN_NULL. ---- */
    OK(MPI_Type_free(&vec));
    OK(MPI_Win_free(&aw));
    CHECK(aw == MPI_WIN_NULL);
    OK(MPI_Win_free(&win));
    CHECK(win == MPI_WIN_NULL);
    free(all);
    free(tmp);
    OK(MPI_Finalize());
    return 0;
}
