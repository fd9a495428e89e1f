/* A profiling tool as the MPI profiling interface allows one (MPI 5.0
 * §15.2): it defines MPI functions of its own, counts the calls and
 * passes each on to the library's PMPI_ name. Built as a shared library
 * and preloaded (LD_PRELOAD) into an unchanged program; at MPI_Finalize
 * it prints one line per rank with its counts. */
#include <stdio.h>
#include <mpi.h>

static int n_init, n_isend, n_recv, n_wait, n_allreduce;

int MPI_Init(int *argc, char ***argv)
{
    n_init++;
    return PMPI_Init(argc, argv);
}

int MPI_Isend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm,
              MPI_Request *req)
{
    n_isend++;
    return PMPI_Isend(buf, count, dt, dest, tag, comm, req);
}

int MPI_Recv(void *buf, int count, MPI_Datatype dt, int src, int tag, MPI_Comm comm,
             MPI_Status *st)
{
    n_recv++;
    return PMPI_Recv(buf, count, dt, src, tag, comm, st);
}

int MPI_Wait(MPI_Request *req, MPI_Status *st)
{
    n_wait++;
    return PMPI_Wait(req, st);
}

int MPI_Allreduce(const void *in, void *out, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    n_allreduce++;
    return PMPI_Allreduce(in, out, count, dt, op, comm);
}

int MPI_Finalize(void)
{
    int rank;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    printf("o2g-profile rank %d: init=%d isend=%d recv=%d wait=%d allreduce=%d\n", rank, n_init,
           n_isend, n_recv, n_wait, n_allreduce);
    fflush(stdout);
    return PMPI_Finalize();
}
