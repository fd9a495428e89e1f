/* Shared by o2g's C test programs: a failed check prints where and ends
 * the whole job with a non-zero exit code. */
#ifndef O2G_TEST_CHECK_H
#define O2G_TEST_CHECK_H
#include <stdio.h>
#include <stdlib.h>
#include <mpi.h>

static int check_rank = -1;

#define CHECK(cond)                                                              \
    do {                                                                         \
        if (!(cond)) {                                                           \
            fprintf(stderr, "rank %d: %s:%d: check failed: %s\n", check_rank,    \
                    __FILE__, __LINE__, #cond);                                  \
            MPI_Abort(MPI_COMM_WORLD, 1);                                        \
            exit(1);                                                             \
        }                                                                        \
    } while (0)

#define OK(call) CHECK((call) == MPI_SUCCESS)

#endif
