! Reductions on Fortran types: every predefined arithmetic and logical
! operation the program's types allow, MPI_IN_PLACE, reduce to a root,
! scan and exscan, MINLOC/MAXLOC on MPI_2INTEGER, a user operation
! written in Fortran, and the rooted collectives that move data.
program reduce
  use mpi
  implicit none
  integer :: ierr, rank, size, i, op, root
  integer :: ia(10), ib(10), pair(2), pairs(2)
  real :: ra(5), rb(5)
  double precision :: da(3), dpair(2), dpairs(2)
  complex :: za, zb
  complex(kind=8) :: zda, zdb
  integer :: tz
  logical :: la, lb
  integer, allocatable :: every(:)
  external :: absmax

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)

  ia = [(rank + i, i = 1, 10)]
  call MPI_Allreduce(ia, ib, 10, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(all(ib == [(size*i + size*(size-1)/2, i = 1, 10)]), 'integer sum')
  call MPI_Allreduce(ia, ib, 10, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, ierr)
  call check(all(ib == [(size - 1 + i, i = 1, 10)]), 'integer max')
  call MPI_Allreduce(ia, ib, 10, MPI_INTEGER, MPI_MIN, MPI_COMM_WORLD, ierr)
  call check(all(ib == [(i, i = 1, 10)]), 'integer min')

  ra = real(rank + 1) * 0.5
  call MPI_Allreduce(ra, rb, 5, MPI_REAL, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(all(abs(rb - 0.25*size*(size+1)) < 1e-4), 'real sum')
  da = dble(rank + 1)
  call MPI_Allreduce(MPI_IN_PLACE, da, 3, MPI_DOUBLE_PRECISION, MPI_PROD, MPI_COMM_WORLD, ierr)
  call check(all(abs(da - gamma(dble(size + 1))) < 1d-9), 'double product in place')

  la = rank == 0
  call MPI_Allreduce(la, lb, 1, MPI_LOGICAL, MPI_LOR, MPI_COMM_WORLD, ierr)
  call check(lb, 'logical or')
  call MPI_Allreduce(la, lb, 1, MPI_LOGICAL, MPI_LAND, MPI_COMM_WORLD, ierr)
  call check(lb .eqv. (size == 1), 'logical and')

  ! Reduce to each root in turn.
  do root = 0, size - 1
    ib = -1
    call MPI_Reduce(ia, ib, 10, MPI_INTEGER, MPI_SUM, root, MPI_COMM_WORLD, ierr)
    if (rank == root) call check(ib(1) == size + size*(size-1)/2, 'reduce at root')
    if (rank /= root) call check(ib(1) == -1, 'reduce leaves others')
  end do

  call MPI_Scan(rank + 1, i, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(i == (rank + 1)*(rank + 2)/2, 'scan')
  i = -5
  call MPI_Exscan(rank + 1, i, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank > 0) call check(i == rank*(rank + 1)/2, 'exscan')

  pair = [mod(rank * 7, size + 3), rank]
  call MPI_Allreduce(pair, pairs, 1, MPI_2INTEGER, MPI_MAXLOC, MPI_COMM_WORLD, ierr)
  call check(pairs(1) == maxval([(mod(i * 7, size + 3), i = 0, size - 1)]), 'maxloc value')
  call check(pairs(2) == minloc([(-mod(i * 7, size + 3), i = 0, size - 1)], 1) - 1, 'maxloc index')
  dpair = [dble(mod(rank, 2)), dble(rank)]
  call MPI_Allreduce(dpair, dpairs, 1, MPI_2DOUBLE_PRECISION, MPI_MINLOC, MPI_COMM_WORLD, ierr)
  call check(dpairs(1) == 0d0 .and. dpairs(2) == 0d0, 'minloc on 2double_precision')
  za = cmplx(rank, 1)
  call MPI_Allreduce(za, zb, 1, MPI_COMPLEX, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(abs(zb - cmplx(size*(size-1)/2, size)) < 1e-4, 'complex sum')
  ! The same in the type MPI_Type_create_f90_complex gives for complex(8).
  call MPI_Type_create_f90_complex(15, MPI_UNDEFINED, tz, ierr)
  zda = cmplx(rank, 1, kind=8)
  call MPI_Allreduce(zda, zdb, 1, tz, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(abs(zdb - cmplx(size*(size-1)/2, size, kind=8)) < 1d-9, 'f90 complex sum')

  ! A user operation in Fortran: the largest magnitude, keeping its sign.
  call MPI_Op_create(absmax, .true., op, ierr)
  ia = 0
  ia(1) = merge(-(rank + 1), rank + 1, mod(rank, 2) == 1)
  call MPI_Allreduce(ia, ib, 2, MPI_INTEGER, op, MPI_COMM_WORLD, ierr)
  call check(abs(ib(1)) == size .and. ib(2) == 0, 'user operation')
  call check(ib(1) == merge(-size, size, mod(size - 1, 2) == 1), 'user operation sign')
  call MPI_Op_free(op, ierr)
  call check(op == MPI_OP_NULL, 'op freed')

  ! Bcast, gather and scatter.
  i = merge(42, 0, rank == 0)
  call MPI_Bcast(i, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  call check(i == 42, 'bcast')
  allocate(every(size))
  call MPI_Gather(rank * 3, 1, MPI_INTEGER, every, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) call check(all(every == [(3*i, i = 0, size - 1)]), 'gather')
  if (rank == 0) every = [(100 + i, i = 0, size - 1)]
  call MPI_Scatter(every, 1, MPI_INTEGER, i, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  call check(i == 100 + rank, 'scatter')
  call MPI_Allgather(rank, 1, MPI_INTEGER, every, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call check(all(every == [(i, i = 0, size - 1)]), 'allgather')

  if (rank == 0) print '(a, i0, a)', 'reduce: ok on ', size, ' ranks'
  call MPI_Finalize(ierr)
contains
  include 'check.inc'
end program reduce

! The user operation: keep the element of larger magnitude.
subroutine absmax(invec, inoutvec, len, datatype)
  use mpi
  implicit none
  integer :: len, datatype, i
  integer :: invec(len), inoutvec(len)
  if (datatype /= MPI_INTEGER) stop 3
  do i = 1, len
    if (abs(invec(i)) > abs(inoutvec(i))) inoutvec(i) = invec(i)
  end do
end subroutine absmax
