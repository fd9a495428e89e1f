/* Groups and communicators made from them (MPI 5.0 §7.3, §7.4): every
 * group operation against a locally computed expectation, Comm_create,
 * Comm_create_group (collective over the group only), Comm_split_type,
 * Comm_idup, names. Correct for any number of ranks, 1 included. */
#include <string.h>
#include "check.h"

static int in(const int *v, int n, int x) {
    for (int i = 0; i < n; i++)
        if (v[i] == x) return 1;
    return 0;
}

/* The group's members as world ranks, checked against want[0..n). */
static void members_are(MPI_Group g, const int *want, int n) {
    MPI_Group world;
    int size = -1;
    OK(MPI_Group_size(g, &size));
    CHECK(size == n);
    OK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    int ranks[64], got[64];
    for (int i = 0; i < n; i++) ranks[i] = i;
    OK(MPI_Group_translate_ranks(g, n, ranks, world, got));
    for (int i = 0; i < n; i++) CHECK(got[i] == want[i]);
    OK(MPI_Group_free(&world));
    CHECK(world == MPI_GROUP_NULL);
}

/* The sum of the world ranks of comm's members, by an allreduce on it. */
static int sum_on(MPI_Comm c) {
    int me, s = -1;
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Allreduce(&me, &s, 1, MPI_INT, MPI_SUM, c));
    return s;
}

int main(int argc, char **argv) {
    int rank, size, r, n, res;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    check_rank = rank;
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK(size <= 64);

    MPI_Group world, evens, odds, rev, u, x, d, e;
    OK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    OK(MPI_Group_size(world, &n));
    CHECK(n == size);
    OK(MPI_Group_rank(world, &r));
    CHECK(r == rank);

    /* evens by range, odds by exclusion of the evens. */
    int ev[64], ne = 0, od[64], no = 0, all[64], rv[64];
    for (int i = 0; i < size; i++) {
        all[i] = i;
        rv[i] = size - 1 - i;
        if (i % 2 == 0) ev[ne++] = i; else od[no++] = i;
    }
    int range[1][3] = {{0, size - 1, 2}};
    OK(MPI_Group_range_incl(world, 1, range, &evens));
    members_are(evens, ev, ne);
    OK(MPI_Group_excl(world, ne, ev, &odds));
    members_are(odds, od, no);
    OK(MPI_Group_range_excl(world, 1, range, &x));
    OK(MPI_Group_compare(x, odds, &res));
    CHECK(res == MPI_IDENT);
    OK(MPI_Group_free(&x));
    OK(MPI_Group_rank(evens, &r));
    CHECK(r == (rank % 2 == 0 ? rank / 2 : MPI_UNDEFINED));
    OK(MPI_Group_rank(odds, &r));
    CHECK(r == (rank % 2 == 1 ? rank / 2 : MPI_UNDEFINED));

    /* reversed by incl, and a reversed range. */
    OK(MPI_Group_incl(world, size, rv, &rev));
    members_are(rev, rv, size);
    int rrange[1][3] = {{size - 1, 0, -1}};
    OK(MPI_Group_range_incl(world, 1, rrange, &x));
    OK(MPI_Group_compare(x, rev, &res));
    CHECK(res == MPI_IDENT);
    OK(MPI_Group_free(&x));
    OK(MPI_Group_compare(world, rev, &res));
    CHECK(res == (size == 1 ? MPI_IDENT : MPI_SIMILAR));
    OK(MPI_Group_compare(world, world, &res));
    CHECK(res == MPI_IDENT);
    OK(MPI_Group_compare(evens, world, &res));
    CHECK(res == (size == 1 ? MPI_IDENT : MPI_UNEQUAL));

    /* union, intersection, difference, in the standard's orders. */
    OK(MPI_Group_union(odds, evens, &u));
    {
        int want[64], k = 0;
        for (int i = 0; i < no; i++) want[k++] = od[i];
        for (int i = 0; i < ne; i++) want[k++] = ev[i];
        members_are(u, want, size);
    }
    OK(MPI_Group_compare(u, world, &res));
    CHECK(res == (size <= 1 ? MPI_IDENT : MPI_SIMILAR));
    OK(MPI_Group_intersection(rev, evens, &x));
    {
        int want[64], k = 0;
        for (int i = 0; i < size; i++)
            if (in(ev, ne, rv[i])) want[k++] = rv[i];
        members_are(x, want, k);
    }
    OK(MPI_Group_free(&x));
    OK(MPI_Group_difference(world, odds, &d));
    OK(MPI_Group_compare(d, evens, &res));
    CHECK(res == MPI_IDENT);
    OK(MPI_Group_intersection(evens, odds, &e));
    OK(MPI_Group_size(e, &n));
    CHECK(n == 0);
    OK(MPI_Group_compare(e, MPI_GROUP_EMPTY, &res));
    CHECK(res == MPI_IDENT);
    OK(MPI_Group_rank(MPI_GROUP_EMPTY, &r));
    CHECK(r == MPI_UNDEFINED);
    OK(MPI_Group_size(MPI_GROUP_EMPTY, &n));
    CHECK(n == 0);

    /* translate_ranks: into the reversed group, PROC_NULL, not members. */
    {
        int in_[3] = {0, MPI_PROC_NULL, size - 1}, out[3];
        OK(MPI_Group_translate_ranks(world, 3, in_, rev, out));
        CHECK(out[0] == size - 1 && out[1] == MPI_PROC_NULL && out[2] == 0);
        OK(MPI_Group_translate_ranks(world, 1, all + (size > 1 ? 1 : 0), evens, out));
        CHECK(out[0] == (size > 1 ? MPI_UNDEFINED : 0));
    }

    /* Bad input comes back as error classes. */
    {
        int bad = size, cls = -1, dup2[2] = {0, 0};
        int rc = MPI_Group_incl(world, 1, &bad, &x);
        OK(MPI_Error_class(rc, &cls));
        CHECK(cls == MPI_ERR_RANK);
        rc = MPI_Group_incl(world, 2, dup2, &x);
        CHECK(rc != MPI_SUCCESS);
        int zero[1][3] = {{0, 0, 0}};
        rc = MPI_Group_range_incl(world, 1, zero, &x);
        CHECK(rc != MPI_SUCCESS);
        rc = MPI_Group_size(MPI_GROUP_NULL, &n);
        OK(MPI_Error_class(rc, &cls));
        CHECK(cls == MPI_ERR_GROUP);
    }

    /* Comm_create: evens get a communicator, odds MPI_COMM_NULL. */
    MPI_Comm ce, cg, cr;
    OK(MPI_Comm_create(MPI_COMM_WORLD, evens, &ce));
    if (rank % 2 == 0) {
        CHECK(ce != MPI_COMM_NULL);
        OK(MPI_Comm_size(ce, &n));
        CHECK(n == ne);
        OK(MPI_Comm_rank(ce, &r));
        CHECK(r == rank / 2);
        int want = 0;
        for (int i = 0; i < ne; i++) want += ev[i];
        CHECK(sum_on(ce) == want);
        MPI_Group back;
        OK(MPI_Comm_group(ce, &back));
        OK(MPI_Group_compare(back, evens, &res));
        CHECK(res == MPI_IDENT);
        OK(MPI_Group_free(&back));
        OK(MPI_Comm_free(&ce));
        CHECK(ce == MPI_COMM_NULL);
    } else {
        CHECK(ce == MPI_COMM_NULL);
    }
    /* Comm_create with disjoint groups on each side (MPI 2.2). */
    OK(MPI_Comm_create(MPI_COMM_WORLD, rank % 2 ? odds : evens, &ce));
    CHECK(ce != MPI_COMM_NULL);
    OK(MPI_Comm_size(ce, &n));
    CHECK(n == (rank % 2 ? no : ne));
    {
        int want = 0;
        for (int i = rank % 2; i < size; i += 2) want += i;
        CHECK(sum_on(ce) == want);
    }
    OK(MPI_Comm_free(&ce));
    /* the reversed world: ranks reversed. */
    OK(MPI_Comm_create(MPI_COMM_WORLD, rev, &cr));
    OK(MPI_Comm_rank(cr, &r));
    CHECK(r == size - 1 - rank);
    OK(MPI_Comm_compare(cr, MPI_COMM_WORLD, &res));
    CHECK(res == (size == 1 ? MPI_CONGRUENT : MPI_SIMILAR));
    OK(MPI_Comm_free(&cr));
    OK(MPI_Comm_create(MPI_COMM_WORLD, MPI_GROUP_EMPTY, &cr));
    CHECK(cr == MPI_COMM_NULL);

    /* Comm_create_group: only the odds call it (with tag 7), then only
     * the evens (tag MPI_TAG_UB-1... any tag); a concurrent world
     * collective afterwards must not mix with it. */
    if (rank % 2 == 1) {
        OK(MPI_Comm_create_group(MPI_COMM_WORLD, odds, 7, &cg));
        CHECK(cg != MPI_COMM_NULL);
        OK(MPI_Comm_rank(cg, &r));
        CHECK(r == rank / 2);
        int want = 0;
        for (int i = 0; i < no; i++) want += od[i];
        CHECK(sum_on(cg) == want);
        OK(MPI_Comm_free(&cg));
    } else {
        int *ub, flag;
        OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag));
        CHECK(flag && *ub >= 32767);
        OK(MPI_Comm_create_group(MPI_COMM_WORLD, evens, *ub, &cg));
        OK(MPI_Comm_size(cg, &n));
        CHECK(n == ne);
        MPI_Comm cg2;
        OK(MPI_Comm_create_group(cg, MPI_GROUP_EMPTY, 0, &cg2));
        CHECK(cg2 == MPI_COMM_NULL);
        OK(MPI_Comm_free(&cg));
    }
    /* A non-member gets MPI_COMM_NULL at once. */
    OK(MPI_Comm_create_group(MPI_COMM_WORLD, rank % 2 ? evens : odds, 3, &cg));
    CHECK(cg == MPI_COMM_NULL);
    CHECK(sum_on(MPI_COMM_WORLD) == size * (size - 1) / 2);

    /* Comm_split_type: every rank of this test runs on one host. */
    MPI_Comm sh;
    OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, -rank, MPI_INFO_NULL, &sh));
    OK(MPI_Comm_size(sh, &n));
    CHECK(n == size);
    OK(MPI_Comm_rank(sh, &r));
    CHECK(r == size - 1 - rank);
    OK(MPI_Comm_free(&sh));
    OK(MPI_Comm_split_type(MPI_COMM_WORLD, rank == 0 ? MPI_UNDEFINED : MPI_COMM_TYPE_SHARED, 0,
                           MPI_INFO_NULL, &sh));
    if (rank == 0) {
        CHECK(sh == MPI_COMM_NULL);
    } else {
        OK(MPI_Comm_size(sh, &n));
        CHECK(n == size - 1);
        OK(MPI_Comm_free(&sh));
    }
    /* one host: no strictly smaller hardware level. */
    OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_UNGUIDED, 0, MPI_INFO_NULL, &sh));
    CHECK(sh == MPI_COMM_NULL);
    /* resource-guided (MPI 4.1): shared memory is the host; no hint or
     * an unknown resource gives MPI_COMM_NULL. */
    {
        MPI_Info hint;
        OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_RESOURCE_GUIDED, 0, MPI_INFO_NULL,
                               &sh));
        CHECK(sh == MPI_COMM_NULL);
        OK(MPI_Info_create(&hint));
        OK(MPI_Info_set(hint, "mpi_hw_resource_type", "no-such-thing"));
        OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_RESOURCE_GUIDED, 0, hint, &sh));
        CHECK(sh == MPI_COMM_NULL);
        OK(MPI_Info_set(hint, "mpi_hw_resource_type", "mpi_shared_memory"));
        OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_RESOURCE_GUIDED, 0, hint, &sh));
        CHECK(sh != MPI_COMM_NULL);
        CHECK(sum_on(sh) == size * (size - 1) / 2);
        OK(MPI_Comm_free(&sh));
        OK(MPI_Info_free(&hint));
    }

    /* Comm_idup: complete at once, a working copy. */
    MPI_Comm c2;
    MPI_Request req;
    MPI_Status st;
    OK(MPI_Comm_idup(MPI_COMM_WORLD, &c2, &req));
    OK(MPI_Wait(&req, &st));
    CHECK(req == MPI_REQUEST_NULL);
    OK(MPI_Comm_compare(c2, MPI_COMM_WORLD, &res));
    CHECK(res == MPI_CONGRUENT);
    CHECK(sum_on(c2) == size * (size - 1) / 2);

    /* Names. */
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    OK(MPI_Comm_get_name(MPI_COMM_WORLD, name, &len));
    CHECK(strcmp(name, "MPI_COMM_WORLD") == 0 && len == 14);
    OK(MPI_Comm_get_name(MPI_COMM_SELF, name, &len));
    CHECK(strcmp(name, "MPI_COMM_SELF") == 0 && len == 13);
    OK(MPI_Comm_get_name(MPI_COMM_NULL, name, &len));
    CHECK(strcmp(name, "MPI_COMM_NULL") == 0 && len == 13);
    OK(MPI_Comm_get_name(c2, name, &len));
    CHECK(len == 0 && name[0] == 0);
    OK(MPI_Comm_set_name(c2, "a copy"));
    OK(MPI_Comm_get_name(c2, name, &len));
    CHECK(strcmp(name, "a copy") == 0 && len == 6);
    {
        char longname[300];
        memset(longname, 'x', sizeof longname - 1);
        longname[sizeof longname - 1] = 0;
        OK(MPI_Comm_set_name(c2, longname));
        OK(MPI_Comm_get_name(c2, name, &len));
        CHECK(len == MPI_MAX_OBJECT_NAME - 1 && (int)strlen(name) == len);
    }
    OK(MPI_Comm_free(&c2));
    OK(MPI_Comm_test_inter(MPI_COMM_WORLD, &n));
    CHECK(n == 0);

    /* A synchronous send in flight while the same pair agrees on a
     * communicator: the acknowledgement and the agreement must not take
     * each other's messages. */
    if (size >= 2 && rank < 2) {
        MPI_Group pair01;
        int r01[2] = {0, 1};
        OK(MPI_Group_incl(world, 2, r01, &pair01));
        MPI_Comm c01;
        int x = 41, y = 0;
        if (rank == 0) {
            MPI_Request sreq;
            OK(MPI_Issend(&x, 1, MPI_INT, 1, 1, MPI_COMM_WORLD, &sreq));
            OK(MPI_Comm_create_group(MPI_COMM_WORLD, pair01, 0, &c01));
            OK(MPI_Wait(&sreq, MPI_STATUS_IGNORE));
        } else {
            OK(MPI_Comm_create_group(MPI_COMM_WORLD, pair01, 0, &c01));
            OK(MPI_Recv(&y, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK(y == 41);
        }
        int csize;
        OK(MPI_Comm_size(c01, &csize));
        CHECK(csize == 2);
        OK(MPI_Comm_free(&c01));
        OK(MPI_Group_free(&pair01));
    }

    MPI_Group *gs[] = {&world, &evens, &odds, &rev, &u, &d, &e};
    for (unsigned i = 0; i < sizeof gs / sizeof *gs; i++) {
        OK(MPI_Group_free(gs[i]));
        CHECK(*gs[i] == MPI_GROUP_NULL);
    }
    OK(MPI_Finalize());
    return 0;
}
