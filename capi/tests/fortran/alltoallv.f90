! Alltoall, alltoallv with a different count for every pair of ranks
! (including zero), allgatherv and reduce_scatter_block, as the sorting
! step of a bucket sort (IS) does them.
program alltoallv
  use mpi
  implicit none
  integer :: ierr, rank, size, i, j, k, total
  integer, allocatable :: scounts(:), sdispls(:), rcounts(:), rdispls(:)
  integer, allocatable :: sbuf(:), rbuf(:), a(:), b(:)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  allocate(scounts(size), sdispls(size), rcounts(size), rdispls(size))

  ! Alltoall: element j sent to rank j-1 is rank*100 + j.
  allocate(a(size), b(size))
  a = [(rank*100 + j, j = 1, size)]
  call MPI_Alltoall(a, 1, MPI_INTEGER, b, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call check(all(b == [((j-1)*100 + rank + 1, j = 1, size)]), 'alltoall')

  ! Alltoallv: rank r sends (r + d) mod 3 elements to rank d.
  do j = 1, size
    scounts(j) = mod(rank + j - 1, 3)
    rcounts(j) = mod(j - 1 + rank, 3)
  end do
  sdispls(1) = 0
  rdispls(1) = 0
  do j = 2, size
    sdispls(j) = sdispls(j-1) + scounts(j-1)
    rdispls(j) = rdispls(j-1) + rcounts(j-1)
  end do
  allocate(sbuf(max(1, sum(scounts))), rbuf(max(1, sum(rcounts))))
  do j = 1, size
    do k = 1, scounts(j)
      sbuf(sdispls(j) + k) = rank*10000 + (j-1)*100 + k
    end do
  end do
  rbuf = -1
  call MPI_Alltoallv(sbuf, scounts, sdispls, MPI_INTEGER, rbuf, rcounts, rdispls, MPI_INTEGER, &
                     MPI_COMM_WORLD, ierr)
  do j = 1, size
    do k = 1, rcounts(j)
      call check(rbuf(rdispls(j) + k) == (j-1)*10000 + rank*100 + k, 'alltoallv element')
    end do
  end do

  ! Allgatherv: rank r contributes r+1 copies of r.
  total = size*(size+1)/2
  deallocate(rbuf)
  allocate(rbuf(total))
  do j = 1, size
    rcounts(j) = j
    rdispls(j) = (j-1)*j/2
  end do
  sbuf(1:1) = rank
  a = rank
  call MPI_Allgatherv(a, rank + 1, MPI_INTEGER, rbuf, rcounts, rdispls, MPI_INTEGER, &
                      MPI_COMM_WORLD, ierr)
  i = 0
  do j = 0, size - 1
    do k = 0, j
      i = i + 1
      call check(rbuf(i) == j, 'allgatherv')
    end do
  end do

  ! Reduce_scatter_block: each rank gets the sum of its block.
  a = [(rank + j, j = 1, size)]
  call MPI_Reduce_scatter_block(a, i, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(i == size*(rank + 1) + size*(size-1)/2, 'reduce_scatter_block')

  if (rank == 0) print '(a, i0, a)', 'alltoallv: ok on ', size, ' ranks'
  call MPI_Finalize(ierr)
contains
  include 'check.inc'
end program alltoallv
