! Handles cross from Fortran to C and back (MPI_Comm_f2c/c2f and
! MPI_Status_f2c in interop_c.c), and a communicator C made is used
! and freed from Fortran.
program interop
  use mpi
  implicit none
  integer :: ierr, rank, size, csize, dup, newcomm, err, status(MPI_STATUS_SIZE), x

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  call MPI_Comm_dup(MPI_COMM_WORLD, dup, ierr)
  call MPI_Sendrecv(rank, 1, MPI_INTEGER, rank, 11, x, 1, MPI_INTEGER, rank, 11, dup, status, ierr)
  call c_side(dup, status, newcomm, csize, err)
  call check(err == 0, 'the C side')
  call check(csize == size, 'size seen from C')
  call MPI_Allreduce(1, x, 1, MPI_INTEGER, MPI_SUM, newcomm, ierr)
  call check(x == size, 'allreduce on the communicator C made')
  call MPI_Comm_free(newcomm, ierr)
  call MPI_Comm_free(dup, ierr)
  call check(newcomm == MPI_COMM_NULL .and. dup == MPI_COMM_NULL, 'freed')
  if (rank == 0) print '(a, i0, a)', 'interop: ok on ', size, ' ranks'
  call MPI_Finalize(ierr)
contains
  include 'check.inc'
end program interop
