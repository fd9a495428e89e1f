! Derived datatypes from Fortran: contiguous, vector, indexed, a struct
! built with MPI_Get_address and sent from MPI_BOTTOM, resized, pack and
! unpack, type queries, and the f90 kind types.
program ddt
  use mpi
  implicit none
  integer :: ierr, rank, size, peer, i, tvec, tidx, tstruct, tq, tres, tf90, tsame, tsize
  integer :: ni, na, nd, comb
  integer :: blocks(3), types(3), displs(3), position, status(MPI_STATUS_SIZE), count
  integer(kind=MPI_ADDRESS_KIND) :: addrs(3), qaddrs(3), lb, extent
  double precision :: m(4, 6), r(4, 6)
  integer :: ia(20), ib(20)
  character :: packed(200)
  type pt
    sequence
    integer :: id
    double precision :: x
    integer :: tag(3)
  end type pt
  type(pt) :: p, q

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  ! Everyone exchanges with its mirror rank (itself in the middle).
  peer = size - 1 - rank

  ! A row of a column-major matrix: 6 elements, stride 4.
  m = reshape([(dble(rank*100 + i), i = 1, 24)], [4, 6])
  call MPI_Type_vector(6, 1, 4, MPI_DOUBLE_PRECISION, tvec, ierr)
  call MPI_Type_commit(tvec, ierr)
  call MPI_Type_size(tvec, tsize, ierr)
  call check(tsize == 48, 'vector size')
  r = 0
  call MPI_Sendrecv(m(2, 1), 1, tvec, peer, 1, r(3, 1), 1, tvec, peer, 1, MPI_COMM_WORLD, status, ierr)
  call check(all(r(3, :) == [(dble(peer*100 + 2 + 4*i), i = 0, 5)]), 'vector row')
  call check(all(r(1:2, :) == 0) .and. all(r(4, :) == 0), 'vector leaves the rest')
  call MPI_Get_count(status, tvec, count, ierr)
  call check(count == 1, 'count of derived type')

  ! Indexed: elements 2-3, 7 and 11-14 of an integer array.
  ia = [(rank*1000 + i, i = 1, 20)]
  blocks(1:3) = [2, 1, 4]
  displs(1:3) = [1, 6, 10]
  call MPI_Type_indexed(3, blocks, displs, MPI_INTEGER, tidx, ierr)
  call MPI_Type_commit(tidx, ierr)
  ib = 0
  call MPI_Sendrecv(ia, 1, tidx, peer, 2, ib, 1, tidx, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  do i = 1, 20
    if (any(i == [2, 3, 7, 11, 12, 13, 14])) then
      call check(ib(i) == peer*1000 + i, 'indexed element')
    else
      call check(ib(i) == 0, 'indexed gap')
    end if
  end do

  ! A struct by absolute addresses, sent from and received at MPI_BOTTOM.
  p = pt(rank, rank + 0.5d0, [rank, -rank, 7])
  q = pt(-1, -1d0, [-1, -1, -1])
  call MPI_Get_address(p%id, addrs(1), ierr)
  call MPI_Get_address(p%x, addrs(2), ierr)
  call MPI_Get_address(p%tag, addrs(3), ierr)
  blocks = [1, 1, 3]
  types = [MPI_INTEGER, MPI_DOUBLE_PRECISION, MPI_INTEGER]
  call MPI_Type_create_struct(3, blocks, addrs, types, tstruct, ierr)
  call MPI_Type_commit(tstruct, ierr)
  call MPI_Get_address(q%id, qaddrs(1), ierr)
  call MPI_Get_address(q%x, qaddrs(2), ierr)
  call MPI_Get_address(q%tag, qaddrs(3), ierr)
  call MPI_Type_create_struct(3, blocks, qaddrs, types, tq, ierr)
  call MPI_Type_commit(tq, ierr)
  call MPI_Sendrecv(MPI_BOTTOM, 1, tstruct, peer, 3, MPI_BOTTOM, 1, tq, peer, 3, MPI_COMM_WORLD, &
                    MPI_STATUS_IGNORE, ierr)
  call check(q%id == peer .and. q%x == peer + 0.5d0 .and. all(q%tag == [peer, -peer, 7]), 'struct at MPI_BOTTOM')
  call MPI_Type_free(tq, ierr)
  call MPI_Type_free(tstruct, ierr)
  ! The same struct by displacements relative to p, received into q.
  addrs = addrs - addrs(1)
  call MPI_Type_create_struct(3, blocks, addrs, types, tstruct, ierr)
  call MPI_Type_commit(tstruct, ierr)
  q = pt(-1, -1d0, [-1, -1, -1])
  call MPI_Sendrecv(p, 1, tstruct, peer, 4, q, 1, tstruct, peer, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  call check(q%id == peer .and. q%x == peer + 0.5d0 .and. all(q%tag == [peer, -peer, 7]), 'struct')

  ! Resized: every other integer, as an array of a 2-integer extent.
  call MPI_Type_create_resized(MPI_INTEGER, 0_MPI_ADDRESS_KIND, 8_MPI_ADDRESS_KIND, tres, ierr)
  call MPI_Type_commit(tres, ierr)
  call MPI_Type_get_extent(tres, lb, extent, ierr)
  call check(lb == 0 .and. extent == 8, 'resized extent')
  ib = 0
  call MPI_Sendrecv(ia, 10, tres, peer, 5, ib, 10, tres, peer, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  call check(all(ib(1:20:2) == [(peer*1000 + i, i = 1, 20, 2)]) .and. all(ib(2:20:2) == 0), 'resized')

  ! Pack and unpack the indexed type and a real.
  position = 0
  call MPI_Pack(ia, 1, tidx, packed, 200, position, MPI_COMM_WORLD, ierr)
  call MPI_Pack(m(1, 1), 1, MPI_DOUBLE_PRECISION, packed, 200, position, MPI_COMM_WORLD, ierr)
  call check(position == 7*4 + 8, 'pack position')
  ib = 0
  r(1, 1) = 0
  position = 0
  call MPI_Unpack(packed, 200, position, ib, 1, tidx, MPI_COMM_WORLD, ierr)
  call MPI_Unpack(packed, 200, position, r(1, 1), 1, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, ierr)
  call check(ib(11) == ia(11) .and. ib(1) == 0 .and. r(1, 1) == m(1, 1), 'unpack')

  ! The f90 kinds: selected_real_kind(15) is 8 bytes, described by its
  ! envelope, the same handle each time, and usable for communication.
  call MPI_Type_create_f90_real(15, MPI_UNDEFINED, tf90, ierr)
  call MPI_Type_size(tf90, tsize, ierr)
  call MPI_Type_get_envelope(tf90, ni, na, nd, comb, ierr)
  call check(tsize == 8 .and. comb == MPI_COMBINER_F90_REAL .and. ni == 2, 'create_f90_real')
  call MPI_Type_create_f90_real(15, MPI_UNDEFINED, tsame, ierr)
  call check(tsame == tf90, 'create_f90_real gives the same handle')
  r(1, 1) = rank + 0.25d0
  call MPI_Sendrecv(r(1, 1), 1, tf90, peer, 6, r(2, 1), 1, tf90, peer, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  call check(r(2, 1) == peer + 0.25d0, 'communication in an f90 type')
  call MPI_Type_create_f90_integer(9, tf90, ierr)
  call MPI_Type_size(tf90, tsize, ierr)
  call check(tsize == 4, 'create_f90_integer')

  call MPI_Type_free(tvec, ierr)
  call MPI_Type_free(tidx, ierr)
  call MPI_Type_free(tstruct, ierr)
  call MPI_Type_free(tres, ierr)
  call check(tvec == MPI_DATATYPE_NULL .and. tres == MPI_DATATYPE_NULL, 'type_free')
  if (rank == 0) print '(a, i0, a)', 'ddt: ok on ', size, ' ranks'
  call MPI_Finalize(ierr)
contains
  include 'check.inc'
end program ddt
