! A 2-D Cartesian stencil: MPI_Dims_create and MPI_Cart_create (periodic
! in both dimensions), MPI_Cart_shift and MPI_Cart_coords, a neighbourhood
! alltoallw, and a halo
! exchange per step in which a column is a strided MPI_Type_vector. Each
! cell holds a function of its global position, so every halo cell can
! be checked; then Jacobi steps keep a global sum invariant.
program stencil
  use mpi
  implicit none
  integer, parameter :: nx = 6, ny = 5, steps = 20
  integer :: ierr, rank, size, cart, dims(2), coords(2), ncoords(2), i, j, step
  integer :: up, down, left, right, column
  logical :: periods(2)
  integer :: nb_types(4), nb_counts(4), nb_send(4), nb_recv(4)
  integer(kind=MPI_ADDRESS_KIND) :: nb_displs(4)
  double precision :: u(0:nx+1, 0:ny+1), v(0:nx+1, 0:ny+1), s0, s

  call MPI_Init(ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  dims = 0
  call MPI_Dims_create(size, 2, dims, ierr)
  call check(dims(1)*dims(2) == size, 'dims_create')
  periods = .true.
  call MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, .true., cart, ierr)
  call MPI_Comm_rank(cart, rank, ierr)
  call MPI_Cart_coords(cart, rank, 2, coords, ierr)
  call MPI_Cart_shift(cart, 0, 1, left, right, ierr)
  call MPI_Cart_shift(cart, 1, 1, down, up, ierr)
  call MPI_Cart_coords(cart, right, 2, ncoords, ierr)
  call check(ncoords(1) == mod(coords(1) + 1, dims(1)) .and. ncoords(2) == coords(2), 'cart_shift')

  ! Neighbourhood alltoallw: one integer to and from each of the four
  ! neighbours, in the order -x, +x, -y, +y.
  nb_types = MPI_INTEGER
  nb_counts = 1
  nb_displs = [(int(4*(i-1), MPI_ADDRESS_KIND), i = 1, 4)]
  nb_send = rank
  nb_recv = -1
  call MPI_Neighbor_alltoallw(nb_send, nb_counts, nb_displs, nb_types, nb_recv, nb_counts, nb_displs, &
                              nb_types, cart, ierr)
  call check(all(nb_recv == [left, right, down, up]), 'neighbor_alltoallw')

  ! One row of u (fixed j, every i) is contiguous; a column (fixed i) has
  ! stride nx+2.
  call MPI_Type_vector(ny, 1, nx + 2, MPI_DOUBLE_PRECISION, column, ierr)
  call MPI_Type_commit(column, ierr)

  u = -1d0
  do j = 1, ny
    do i = 1, nx
      u(i, j) = f(coords(1)*nx + i, coords(2)*ny + j)
    end do
  end do
  call halo(u)
  do j = 1, ny
    call check(u(0, j) == f(modulo(coords(1)*nx - 1, dims(1)*nx) + 1, coords(2)*ny + j), 'left halo')
    call check(u(nx+1, j) == f(modulo((coords(1)+1)*nx, dims(1)*nx) + 1, coords(2)*ny + j), 'right halo')
  end do
  do i = 1, nx
    call check(u(i, 0) == f(coords(1)*nx + i, modulo(coords(2)*ny - 1, dims(2)*ny) + 1), 'lower halo')
    call check(u(i, ny+1) == f(coords(1)*nx + i, modulo((coords(2)+1)*ny, dims(2)*ny) + 1), 'upper halo')
  end do

  ! Jacobi averaging on a periodic grid keeps the global sum.
  call MPI_Allreduce(sum(u(1:nx, 1:ny)), s0, 1, MPI_DOUBLE_PRECISION, MPI_SUM, cart, ierr)
  do step = 1, steps
    call halo(u)
    v(1:nx, 1:ny) = 0.25d0 * (u(0:nx-1, 1:ny) + u(2:nx+1, 1:ny) + u(1:nx, 0:ny-1) + u(1:nx, 2:ny+1))
    u(1:nx, 1:ny) = v(1:nx, 1:ny)
  end do
  call MPI_Allreduce(sum(u(1:nx, 1:ny)), s, 1, MPI_DOUBLE_PRECISION, MPI_SUM, cart, ierr)
  call check(abs(s - s0) < 1d-9 * abs(s0), 'jacobi keeps the sum')

  call MPI_Type_free(column, ierr)
  call MPI_Comm_free(cart, ierr)
  call check(cart == MPI_COMM_NULL, 'comm_free')
  if (rank == 0) print '(a, i0, a, i0, a, i0)', 'stencil: ok on ', size, ' ranks, grid ', dims(1), 'x', dims(2)
  call MPI_Finalize(ierr)
contains
  include 'check.inc'

  ! The value at global position (gi, gj), 1-based.
  double precision function f(gi, gj)
    integer, intent(in) :: gi, gj
    f = dble(gi) * 1000d0 + dble(gj)
  end function f

  ! Fills the halo of w from the four neighbours.
  subroutine halo(w)
    double precision, intent(inout) :: w(0:nx+1, 0:ny+1)
    integer :: st(MPI_STATUS_SIZE)
    call MPI_Sendrecv(w(nx, 1), 1, column, right, 1, w(0, 1), 1, column, left, 1, cart, st, ierr)
    call MPI_Sendrecv(w(1, 1), 1, column, left, 2, w(nx+1, 1), 1, column, right, 2, cart, st, ierr)
    call MPI_Sendrecv(w(1, ny), nx, MPI_DOUBLE_PRECISION, up, 3, w(1, 0), nx, MPI_DOUBLE_PRECISION, &
                      down, 3, cart, st, ierr)
    call MPI_Sendrecv(w(1, 1), nx, MPI_DOUBLE_PRECISION, down, 4, w(1, ny+1), nx, MPI_DOUBLE_PRECISION, &
                      up, 4, cart, st, ierr)
  end subroutine halo
end program stencil
