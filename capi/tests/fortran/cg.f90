! A conjugate-gradient kernel, as NAS CG does it with MPI: the 1-D
! Laplacian (2 on the diagonal, -1 beside it) split by rows, a halo
! exchange per matrix-vector product (nonblocking, with MPI_PROC_NULL at
! the ends), dot products by MPI_Allreduce. The right-hand side comes
! from a known solution, which CG must find again (verification).
program cg
  use mpi
  implicit none
  integer, parameter :: nlocal = 40
  integer :: ierr, rank, size, n, first, it, i, left, right, reqs(4)
  double precision :: x(nlocal), r(nlocal), p(0:nlocal+1), ap(nlocal), b(nlocal), xtrue(nlocal)
  double precision :: rr, rr_new, alpha, err, errmax

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  n = nlocal * size
  first = rank * nlocal
  left = merge(MPI_PROC_NULL, rank - 1, rank == 0)
  right = merge(MPI_PROC_NULL, rank + 1, rank == size - 1)

  xtrue = [(sin(dble(first + i) * 3.0d0 / n) + 1d0, i = 1, nlocal)]
  p(1:nlocal) = xtrue
  call matvec(p, b)
  x = 0
  r = b
  p(1:nlocal) = r
  rr = dot(r, r)
  do it = 1, n
    call matvec(p, ap)
    alpha = rr / dot(p(1:nlocal), ap)
    x = x + alpha * p(1:nlocal)
    r = r - alpha * ap
    rr_new = dot(r, r)
    if (sqrt(rr_new) < 1d-12) exit
    p(1:nlocal) = r + (rr_new / rr) * p(1:nlocal)
    rr = rr_new
  end do
  err = maxval(abs(x - xtrue))
  call MPI_Allreduce(err, errmax, 1, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
  call check(errmax < 1d-8, 'CG converged to the known solution')
  call check(it <= n, 'CG within n iterations')
  if (rank == 0) print '(a, i0, a, i0, a, es9.2)', 'cg: ok on ', size, ' ranks, ', it, &
      ' iterations, error ', errmax
  call MPI_Finalize(ierr)
contains
  include 'check.inc'

  double precision function dot(u, v)
    double precision, intent(in) :: u(nlocal), v(nlocal)
    double precision :: part
    part = sum(u * v)
    call MPI_Allreduce(part, dot, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  end function dot

  ! y = A v, with v's halo fetched from the neighbours (zero outside).
  subroutine matvec(v, y)
    double precision, intent(inout) :: v(0:nlocal+1)
    double precision, intent(out) :: y(nlocal)
    v(0) = 0
    v(nlocal+1) = 0
    call MPI_Irecv(v(0), 1, MPI_DOUBLE_PRECISION, left, 1, MPI_COMM_WORLD, reqs(1), ierr)
    call MPI_Irecv(v(nlocal+1), 1, MPI_DOUBLE_PRECISION, right, 2, MPI_COMM_WORLD, reqs(2), ierr)
    call MPI_Isend(v(1), 1, MPI_DOUBLE_PRECISION, left, 2, MPI_COMM_WORLD, reqs(3), ierr)
    call MPI_Isend(v(nlocal), 1, MPI_DOUBLE_PRECISION, right, 1, MPI_COMM_WORLD, reqs(4), ierr)
    call MPI_Waitall(4, reqs, MPI_STATUSES_IGNORE, ierr)
    y = 2 * v(1:nlocal) - v(0:nlocal-1) - v(2:nlocal+1)
  end subroutine matvec
end program cg
