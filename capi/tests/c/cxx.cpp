// A C++ program on mpi.h, built with mpicxx: the header's constants in C++
// contexts (constant expressions, switch labels, templates, overloads) and
// a few calls whose results are checked.
#include <cstring>
#include <vector>
#include "check.h"

static_assert(MPI_ANY_SOURCE == -1 && MPI_ANY_TAG == -2 && MPI_PROC_NULL == -3, "sentinels");
static_assert(MPI_THREAD_SINGLE < MPI_THREAD_FUNNELED && MPI_THREAD_SERIALIZED < MPI_THREAD_MULTIPLE,
              "thread levels are ordered");
static_assert(sizeof(MPI_Status) == 32 && sizeof(MPI_Aint) == sizeof(void *), "layout");
static_assert(sizeof(MPI_Count) == 8 && sizeof(MPI_Offset) == 8, "64-bit counts");

template <typename T> struct Type;
template <> struct Type<int> { static MPI_Datatype get() { return MPI_INT; } };
template <> struct Type<double> { static MPI_Datatype get() { return MPI_DOUBLE; } };

// Overloads on handle types: each is a distinct type in C++.
static int kind(MPI_Comm) { return 1; }
static int kind(MPI_Datatype) { return 2; }
static int kind(MPI_Op) { return 3; }

static const char *topology(int t) {
    switch (t) {
    case MPI_CART: return "cart";
    case MPI_GRAPH: return "graph";
    case MPI_DIST_GRAPH: return "dist_graph";
    case MPI_UNDEFINED: return "none";
    default: return "?";
    }
}

template <typename T> static T sum_over_ranks(T mine) {
    T total = T();
    OK(MPI_Allreduce(&mine, &total, 1, Type<T>::get(), MPI_SUM, MPI_COMM_WORLD));
    return total;
}

int main(int argc, char **argv) {
    int rank = -1, size = 0;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    check_rank = rank;
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(kind(MPI_COMM_WORLD) == 1 && kind(MPI_INT) == 2 && kind(MPI_SUM) == 3);
    CHECK(std::strcmp(topology(MPI_CART), "cart") == 0);
    CHECK(MPI_COMM_NULL_COPY_FN == nullptr && MPI_UNWEIGHTED != MPI_WEIGHTS_EMPTY);

    CHECK(sum_over_ranks(rank + 1) == size * (size + 1) / 2);
    CHECK(sum_over_ranks(0.5) == 0.5 * size);

    std::vector<int> all(static_cast<size_t>(size), -1);
    OK(MPI_Allgather(&rank, 1, MPI_INT, all.data(), 1, MPI_INT, MPI_COMM_WORLD));
    for (int r = 0; r < size; r++) CHECK(all[static_cast<size_t>(r)] == r);

    std::vector<double> v(4, rank == 0 ? 2.5 : 0.0);
    OK(MPI_Bcast(v.data(), 4, MPI_DOUBLE, 0, MPI_COMM_WORLD));
    for (double x : v) CHECK(x == 2.5);

    OK(MPI_Finalize());
    return 0;
}
