/* MPI_Comm_create_from_group (MPI 5.0 §7.4.2) in the World model: from
 * the world's group, from disjoint and from overlapping groups (called
 * by their members only, told apart by their string tags), with a
 * reordered group, with info hints and each kind of error handler, the
 * MPI_TAG_UB attribute, and the error classes of bad input. Every value
 * checked; correct at any number of ranks. */
#include <stdint.h>
#include <string.h>
#include "check.h"

static int handler_calls;
static MPI_Comm handler_comm;

static void handler(MPI_Comm *c, int *code, ...) {
    (void)code;
    handler_calls++;
    handler_comm = *c;
}

static int error_class(int rc) {
    int cls = -1;
    OK(MPI_Error_class(rc, &cls));
    return cls;
}

/* The sum of the world ranks of c's members, by an allreduce on c. */
static int world_rank_sum(MPI_Comm c) {
    int me, sum = -1;
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, c));
    return sum;
}

int main(int argc, char **argv) {
    int rank, size, n, r, flag, *ub;
    MPI_Group world, g;
    MPI_Comm c, c2;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    check_rank = rank;
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    OK(MPI_Comm_group(MPI_COMM_WORLD, &world));

    /* Everyone: the same members in the same order as the world. */
    MPI_Info info;
    OK(MPI_Info_create(&info));
    OK(MPI_Info_set(info, "o2g_test_hint", "yes"));
    OK(MPI_Comm_create_from_group(world, "org.o2g.test.all", info, MPI_ERRORS_RETURN, &c));
    OK(MPI_Info_free(&info));
    OK(MPI_Comm_size(c, &n));
    OK(MPI_Comm_rank(c, &r));
    CHECK(n == size && r == rank);
    OK(MPI_Comm_compare(c, MPI_COMM_WORLD, &r));
    CHECK(r == MPI_CONGRUENT);
    CHECK(world_rank_sum(c) == size * (size - 1) / 2);
    OK(MPI_Comm_get_attr(c, MPI_TAG_UB, &ub, &flag));
    CHECK(flag && *ub >= 32767);
    MPI_Errhandler eh;
    OK(MPI_Comm_get_errhandler(c, &eh));
    CHECK(eh == MPI_ERRORS_RETURN);
    OK(MPI_Comm_get_info(c, &info));
    char val[MPI_MAX_INFO_VAL];
    int len = MPI_MAX_INFO_VAL;
    OK(MPI_Info_get_string(info, "o2g_test_hint", &len, val, &flag));
    CHECK(flag && strcmp(val, "yes") == 0);
    OK(MPI_Info_free(&info));
    /* Its errors go to its own handler: MPI_ERRORS_RETURN. */
    CHECK(error_class(MPI_Send(&n, 1, MPI_INT, size, 0, c)) == MPI_ERR_RANK);
    OK(MPI_Comm_free(&c));

    /* Disjoint groups (even and odd ranks) at the same time, each with
     * its own tag; reversed order in the odd group. */
    int evens[64], odds[64], ne = 0, no = 0;
    CHECK(size <= 128);
    for (int i = 0; i < size; i++) {
        if (i % 2 == 0) evens[ne++] = i;
    }
    for (int i = size - 1; i >= 0; i--) {
        if (i % 2 == 1) odds[no++] = i;
    }
    int mine = rank % 2 == 0;
    OK(MPI_Group_incl(world, mine ? ne : no, mine ? evens : odds, &g));
    OK(MPI_Comm_create_from_group(g, mine ? "even" : "odd", MPI_INFO_NULL, MPI_ERRORS_RETURN, &c));
    OK(MPI_Group_free(&g));
    OK(MPI_Comm_size(c, &n));
    OK(MPI_Comm_rank(c, &r));
    if (mine) {
        CHECK(n == ne && r == rank / 2);
        CHECK(world_rank_sum(c) == (ne - 1) * ne);
    } else {
        CHECK(n == no && r == no - 1 - rank / 2);
        CHECK(world_rank_sum(c) == no * no);
    }
    OK(MPI_Comm_free(&c));

    /* Overlapping groups, called in the same order by the processes in
     * both: the lower half (and one more) and the upper half. */
    int lo = size / 2 + 1, hi_first = size / 2;
    if (lo > size) lo = size;
    int range_lo[1][3] = {{0, lo - 1, 1}}, range_hi[1][3] = {{hi_first, size - 1, 1}};
    MPI_Comm cl = MPI_COMM_NULL, ch = MPI_COMM_NULL;
    if (rank < lo) {
        OK(MPI_Group_range_incl(world, 1, range_lo, &g));
        OK(MPI_Comm_create_from_group(g, "low", MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, &cl));
        OK(MPI_Group_free(&g));
    }
    if (rank >= hi_first) {
        OK(MPI_Group_range_incl(world, 1, range_hi, &g));
        OK(MPI_Comm_create_from_group(g, "high", MPI_INFO_NULL, MPI_ERRHANDLER_NULL, &ch));
        OK(MPI_Group_free(&g));
    }
    if (cl != MPI_COMM_NULL) {
        OK(MPI_Comm_size(cl, &n));
        OK(MPI_Comm_rank(cl, &r));
        CHECK(n == lo && r == rank);
        CHECK(world_rank_sum(cl) == lo * (lo - 1) / 2);
        OK(MPI_Comm_get_errhandler(cl, &eh));
        CHECK(eh == MPI_ERRORS_ARE_FATAL);
        OK(MPI_Comm_free(&cl));
    }
    if (ch != MPI_COMM_NULL) {
        OK(MPI_Comm_size(ch, &n));
        OK(MPI_Comm_rank(ch, &r));
        CHECK(n == size - hi_first && r == rank - hi_first);
        CHECK(world_rank_sum(ch) == (size - 1 + hi_first) * (size - hi_first) / 2);
        OK(MPI_Comm_free(&ch));
    }

    /* A user error handler: called with the new communicator. */
    MPI_Errhandler mine_eh;
    OK(MPI_Comm_create_errhandler(handler, &mine_eh));
    OK(MPI_Comm_create_from_group(world, "org.o2g.test.user-handler", MPI_INFO_NULL, mine_eh, &c));
    CHECK(MPI_Send(&n, 1, MPI_INT, size, 0, c) != MPI_SUCCESS);
    CHECK(handler_calls == 1 && handler_comm == c);
    /* A dup of it is an ordinary communicator again: no MPI_TAG_UB. */
    OK(MPI_Comm_dup(c, &c2));
    OK(MPI_Comm_get_attr(c2, MPI_TAG_UB, &ub, &flag));
    CHECK(!flag);
    OK(MPI_Comm_free(&c2));
    OK(MPI_Comm_free(&c));
    OK(MPI_Errhandler_free(&mine_eh));

    /* Bad input, found before any communication. */
    int me[1] = {rank}, other[1] = {(rank + 1) % size};
    MPI_Group self_g, other_g;
    OK(MPI_Group_incl(world, 1, me, &self_g));
    c = MPI_COMM_WORLD;
    CHECK(error_class(MPI_Comm_create_from_group(self_g, NULL, MPI_INFO_NULL, MPI_ERRORS_RETURN,
                                                 &c)) == MPI_ERR_ARG);
    CHECK(error_class(MPI_Comm_create_from_group(self_g, "t", MPI_INFO_NULL, MPI_ERRORS_RETURN,
                                                 NULL)) == MPI_ERR_ARG);
    CHECK(error_class(MPI_Comm_create_from_group(MPI_GROUP_NULL, "t", MPI_INFO_NULL,
                                                 MPI_ERRORS_RETURN, &c)) == MPI_ERR_GROUP);
    CHECK(error_class(MPI_Comm_create_from_group(self_g, "t", MPI_INFO_NULL,
                                                 (MPI_Errhandler)(intptr_t)0x12345, &c)) ==
          MPI_ERR_ERRHANDLER);
    static char longtag[MPI_MAX_STRINGTAG_LEN + 1];
    memset(longtag, 'x', MPI_MAX_STRINGTAG_LEN);
    CHECK(error_class(MPI_Comm_create_from_group(self_g, longtag, MPI_INFO_NULL,
                                                 MPI_ERRORS_RETURN, &c)) == MPI_ERR_ARG);
    if (size > 1) {
        OK(MPI_Group_incl(world, 1, other, &other_g));
        CHECK(error_class(MPI_Comm_create_from_group(other_g, "t", MPI_INFO_NULL,
                                                     MPI_ERRORS_RETURN, &c)) == MPI_ERR_GROUP);
        OK(MPI_Group_free(&other_g));
    }
    CHECK(c == MPI_COMM_WORLD);
    /* A group of one: no other process takes part. */
    OK(MPI_Comm_create_from_group(self_g, "org.o2g.test.self", MPI_INFO_NULL, MPI_ERRORS_RETURN,
                                  &c));
    OK(MPI_Comm_size(c, &n));
    CHECK(n == 1 && world_rank_sum(c) == rank);
    OK(MPI_Comm_free(&c));
    OK(MPI_Group_free(&self_g));

    OK(MPI_Group_free(&world));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Finalize());
    if (rank == 0) printf("comm_from_group: ok\n");
    return 0;
}
