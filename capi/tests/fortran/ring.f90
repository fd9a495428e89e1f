! Point-to-point around a ring: blocking send/receive with status fields,
! MPI_ANY_SOURCE, probe, sendrecv, MPI_PROC_NULL, and many nonblocking
! rounds (request handles are created and freed thousands of times).
program ring
  use mpi
  implicit none
  integer :: ierr, rank, size, left, right, token, count, i, n
  integer :: status(MPI_STATUS_SIZE), reqs(4), statuses(MPI_STATUS_SIZE, 4)
  integer :: a(100), b(100)

  call MPI_Init(ierr)
  call check(ierr == MPI_SUCCESS, 'init')
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  right = mod(rank + 1, size)
  left = mod(rank + size - 1, size)

  ! A token goes once round, each rank adding its rank.
  if (rank == 0) then
    token = 1000
    call MPI_Send(token, 1, MPI_INTEGER, right, 5, MPI_COMM_WORLD, ierr)
    call MPI_Recv(token, 1, MPI_INTEGER, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, status, ierr)
    call check(token == 1000 + size*(size-1)/2, 'token sum')
  else
    call MPI_Probe(left, 5, MPI_COMM_WORLD, status, ierr)
    call MPI_Get_count(status, MPI_INTEGER, count, ierr)
    call check(count == 1, 'probe count')
    call MPI_Recv(token, 1, MPI_INTEGER, left, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    token = token + rank
    call MPI_Send(token, 1, MPI_INTEGER, right, 5, MPI_COMM_WORLD, ierr)
  end if
  if (rank == 0) then
    call check(status(MPI_SOURCE) == left .and. status(MPI_TAG) == 5, 'status fields')
  end if

  ! Sendrecv of an array; a receive from MPI_PROC_NULL changes nothing.
  a = [(rank*1000 + i, i = 1, 100)]
  call MPI_Sendrecv(a, 100, MPI_INTEGER, right, 6, b, 100, MPI_INTEGER, left, 6, &
                    MPI_COMM_WORLD, status, ierr)
  call check(all(b == [(left*1000 + i, i = 1, 100)]), 'sendrecv data')
  call MPI_Get_count(status, MPI_INTEGER, count, ierr)
  call check(count == 100 .and. status(MPI_SOURCE) == left, 'sendrecv status')
  b(1) = -7
  call MPI_Recv(b, 1, MPI_INTEGER, MPI_PROC_NULL, 0, MPI_COMM_WORLD, status, ierr)
  call check(b(1) == -7 .and. status(MPI_SOURCE) == MPI_PROC_NULL, 'proc null')

  ! Many rounds of nonblocking exchange with both neighbours.
  do n = 1, 3000
    call MPI_Irecv(b(1), 1, MPI_INTEGER, left, n, MPI_COMM_WORLD, reqs(1), ierr)
    call MPI_Irecv(b(2), 1, MPI_INTEGER, right, n, MPI_COMM_WORLD, reqs(2), ierr)
    a(1) = rank + n
    call MPI_Isend(a(1), 1, MPI_INTEGER, right, n, MPI_COMM_WORLD, reqs(3), ierr)
    call MPI_Isend(a(1), 1, MPI_INTEGER, left, n, MPI_COMM_WORLD, reqs(4), ierr)
    if (mod(n, 2) == 0) then
      call MPI_Waitall(4, reqs, MPI_STATUSES_IGNORE, ierr)
    else
      call MPI_Waitall(4, reqs, statuses, ierr)
      call check(statuses(MPI_SOURCE, 1) == left .and. statuses(MPI_TAG, 2) == n, 'waitall statuses')
    end if
    call check(all(reqs == MPI_REQUEST_NULL), 'requests freed')
    call check(b(1) == left + n .and. b(2) == right + n, 'nonblocking data')
  end do

  ! Waitany gives a 1-based index.
  call MPI_Irecv(b(1), 1, MPI_INTEGER, left, 9, MPI_COMM_WORLD, reqs(1), ierr)
  reqs(2) = MPI_REQUEST_NULL
  call MPI_Send(rank, 1, MPI_INTEGER, right, 9, MPI_COMM_WORLD, ierr)
  call MPI_Waitany(2, reqs, i, status, ierr)
  call check(i == 1 .and. b(1) == left, 'waitany index')

  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a, i0, a)', 'ring: ok on ', size, ' ranks'
  call MPI_Finalize(ierr)
contains
  include 'check.inc'
end program ring
