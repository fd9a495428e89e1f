/* MPI_Abi_get_info (MPI 5.0 §20.2), before MPI_Init and after, and
 * MPI_Get_hw_resource_info (§11.4): every key and value checked against
 * what the header and the system say; the hardware info's resource type
 * works with MPI_Comm_split_type(MPI_COMM_TYPE_HW_GUIDED). Local to each
 * process: correct at any number of ranks. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"

static int get(MPI_Info info, const char *key, char *val) {
    int flag = 0, len = MPI_MAX_INFO_VAL;
    OK(MPI_Info_get_string(info, key, &len, val, &flag));
    return flag;
}

static void check_abi(MPI_Info info) {
    char val[MPI_MAX_INFO_VAL];
    int n = -1;
    OK(MPI_Info_get_nkeys(info, &n));
    CHECK(n == 3);
    CHECK(get(info, "mpi_aint_size", val) && atoi(val) == (int)sizeof(MPI_Aint));
    CHECK(get(info, "mpi_count_size", val) && atoi(val) == (int)sizeof(MPI_Count));
    CHECK(get(info, "mpi_offset_size", val) && atoi(val) == (int)sizeof(MPI_Offset));
}

int main(int argc, char **argv) {
    int rank, flag;
    MPI_Info info = MPI_INFO_NULL, other = MPI_INFO_NULL;
    char val[MPI_MAX_INFO_VAL];

    /* Before MPI_Init. */
    OK(MPI_Abi_get_info(&info));
    CHECK(info != MPI_INFO_NULL);
    check_abi(info);
    OK(MPI_Info_free(&info));

    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    check_rank = rank;
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));

    /* Each call makes a new object, which the caller frees. */
    OK(MPI_Abi_get_info(&info));
    OK(MPI_Abi_get_info(&other));
    CHECK(info != other);
    check_abi(info);
    OK(MPI_Info_free(&info));
    check_abi(other);
    OK(MPI_Info_free(&other));
    CHECK(MPI_Abi_get_info(NULL) != MPI_SUCCESS);

    OK(MPI_Get_hw_resource_info(&info));
    CHECK(info != MPI_INFO_NULL);
    CHECK(get(info, "mpi_hw_resource_type", val) && strcmp(val, "mpi_shared_memory") == 0);
    char host[MPI_MAX_PROCESSOR_NAME];
    int len;
    OK(MPI_Get_processor_name(host, &len));
    CHECK(get(info, "host", val) && strcmp(val, host) == 0);
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    CHECK(online > 0);
    CHECK(get(info, "num_cpus_online", val) && atol(val) == online);
    CHECK(get(info, "num_cpus_available", val) && atol(val) >= 1 && atol(val) <= online);
    int n = -1;
    OK(MPI_Info_get_nkeys(info, &n));
    CHECK(n == 4);
    CHECK(MPI_Get_hw_resource_info(NULL) != MPI_SUCCESS);

    /* The resource type it names is one MPI_COMM_TYPE_HW_GUIDED groups by:
     * the processes of this host. */
    MPI_Comm node;
    OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, 0, info, &node));
    CHECK(node != MPI_COMM_NULL);
    MPI_Comm shared;
    OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared));
    OK(MPI_Comm_compare(node, shared, &flag));
    CHECK(flag == MPI_CONGRUENT);
    OK(MPI_Comm_free(&node));
    OK(MPI_Comm_free(&shared));
    OK(MPI_Info_free(&info));

    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Finalize());
    /* After MPI_Finalize too (the object is not looked at: no other
     * info call is allowed now). */
    info = MPI_INFO_NULL;
    OK(MPI_Abi_get_info(&info));
    CHECK(info != MPI_INFO_NULL);
    if (rank == 0) printf("abi_info: ok\n");
    return 0;
}
