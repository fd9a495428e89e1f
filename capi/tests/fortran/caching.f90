! Callbacks written in Fortran: attribute caching on communicators and
! datatypes (a user copy subroutine that adds one, MPI_COMM_DUP_FN,
! MPI_COMM_NULL_COPY_FN, a delete subroutine that counts), and a
! communicator error handler that records the error and lets the call
! return it, and a generalized request whose query, free and cancel
! subroutines are Fortran.
module counters
  implicit none
  integer :: deleted = 0, handled = 0, last_code = 0, freed = 0, cancelled = 0
end module counters

program caching
  use mpi
  use counters
  implicit none
  integer :: ierr, rank, size, kplus, kdup, knull, ktype, c1, c2, t1, t2, errh, eclass, greq
  integer :: status(MPI_STATUS_SIZE)
  integer(kind=MPI_ADDRESS_KIND) :: v
  logical :: flag
  external :: add_one, count_delete, record_error, gquery, gfree, gcancel

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)

  call MPI_Comm_create_keyval(add_one, count_delete, kplus, 7_MPI_ADDRESS_KIND, ierr)
  call MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, kdup, 0_MPI_ADDRESS_KIND, ierr)
  call MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, count_delete, knull, 0_MPI_ADDRESS_KIND, ierr)
  call MPI_Comm_dup(MPI_COMM_WORLD, c1, ierr)
  call MPI_Comm_set_attr(c1, kplus, 100_MPI_ADDRESS_KIND, ierr)
  call MPI_Comm_set_attr(c1, kdup, 2000000000000_MPI_ADDRESS_KIND, ierr)
  call MPI_Comm_set_attr(c1, knull, 5_MPI_ADDRESS_KIND, ierr)
  call MPI_Comm_get_attr(c1, kplus, v, flag, ierr)
  call check(flag .and. v == 100, 'get the value set')
  call MPI_Comm_dup(c1, c2, ierr)
  call MPI_Comm_get_attr(c2, kplus, v, flag, ierr)
  call check(flag .and. v == 101 + 7, 'the copy subroutine ran, with extra_state')
  call MPI_Comm_get_attr(c2, kdup, v, flag, ierr)
  call check(flag .and. v == 2000000000000_MPI_ADDRESS_KIND, 'MPI_COMM_DUP_FN copies')
  call MPI_Comm_get_attr(c2, knull, v, flag, ierr)
  call check(.not. flag, 'MPI_COMM_NULL_COPY_FN does not')
  call MPI_Comm_delete_attr(c2, kplus, ierr)
  call check(deleted == 1, 'delete_attr runs the delete subroutine')
  call MPI_Comm_free(c1, ierr)
  call check(deleted == 3, 'comm_free runs it for each attribute')
  call MPI_Comm_free(c2, ierr)
  call MPI_Comm_free_keyval(kplus, ierr)
  call check(kplus == MPI_KEYVAL_INVALID, 'free_keyval')
  call MPI_Comm_free_keyval(kdup, ierr)
  call MPI_Comm_free_keyval(knull, ierr)

  ! On datatypes, with MPI_TYPE_DUP_FN.
  call MPI_Type_create_keyval(MPI_TYPE_DUP_FN, MPI_TYPE_NULL_DELETE_FN, ktype, 0_MPI_ADDRESS_KIND, ierr)
  call MPI_Type_contiguous(3, MPI_INTEGER, t1, ierr)
  call MPI_Type_set_attr(t1, ktype, 42_MPI_ADDRESS_KIND, ierr)
  call MPI_Type_dup(t1, t2, ierr)
  call MPI_Type_get_attr(t2, ktype, v, flag, ierr)
  call check(flag .and. v == 42, 'MPI_TYPE_DUP_FN copies')
  call MPI_Type_delete_attr(t2, ktype, ierr)
  call MPI_Type_get_attr(t2, ktype, v, flag, ierr)
  call check(.not. flag, 'type_delete_attr')
  call MPI_Type_free(t1, ierr)
  call MPI_Type_free(t2, ierr)
  call MPI_Type_free_keyval(ktype, ierr)

  ! A Fortran error handler: a send to a rank that does not exist.
  call MPI_Comm_dup(MPI_COMM_WORLD, c1, ierr)
  call MPI_Comm_create_errhandler(record_error, errh, ierr)
  call MPI_Comm_set_errhandler(c1, errh, ierr)
  call MPI_Errhandler_free(errh, ierr)
  call check(errh == MPI_ERRHANDLER_NULL, 'errhandler_free')
  call MPI_Send(rank, 1, MPI_INTEGER, size, 0, c1, ierr)
  call check(handled == 1, 'the handler ran once')
  call check(ierr /= MPI_SUCCESS .and. ierr == last_code, 'the call returned the code the handler saw')
  call MPI_Error_class(ierr, eclass, ierr)
  call check(eclass == MPI_ERR_RANK, 'the error is MPI_ERR_RANK')
  call MPI_Comm_free(c1, ierr)

  ! A generalized request: cancelled (not yet complete), completed, then
  ! waited for: the query subroutine fills the status, free runs once.
  call MPI_Grequest_start(gquery, gfree, gcancel, 77_MPI_ADDRESS_KIND, greq, ierr)
  call MPI_Cancel(greq, ierr)
  call check(cancelled == 1, 'the cancel subroutine ran, told not complete')
  call MPI_Grequest_complete(greq, ierr)
  call MPI_Wait(greq, status, ierr)
  call check(greq == MPI_REQUEST_NULL, 'the generalized request is freed')
  call check(status(MPI_SOURCE) == 77 .and. status(MPI_TAG) == 5, 'the query subroutine filled the status')
  call check(freed == 1, 'the free subroutine ran once')

  if (rank == 0) print '(a, i0, a)', 'caching: ok on ', size, ' ranks'
  call MPI_Finalize(ierr)
contains
  include 'check.inc'
end program caching

subroutine add_one(oldcomm, keyval, extra_state, value_in, value_out, flag, ierr)
  use mpi
  implicit none
  integer :: oldcomm, keyval, ierr
  integer(kind=MPI_ADDRESS_KIND) :: extra_state, value_in, value_out
  logical :: flag
  if (oldcomm == MPI_COMM_NULL .or. keyval == MPI_KEYVAL_INVALID) stop 4
  value_out = value_in + 1 + extra_state
  flag = .true.
  ierr = MPI_SUCCESS
end subroutine add_one

subroutine count_delete(comm, keyval, value, extra_state, ierr)
  use mpi
  use counters
  implicit none
  integer :: comm, keyval, ierr
  integer(kind=MPI_ADDRESS_KIND) :: value, extra_state
  if (comm == MPI_COMM_NULL .or. keyval == MPI_KEYVAL_INVALID .or. value < 0 .or. extra_state < 0) stop 5
  deleted = deleted + 1
  ierr = MPI_SUCCESS
end subroutine count_delete

subroutine record_error(comm, code)
  use mpi
  use counters
  implicit none
  integer :: comm, code
  if (comm == MPI_COMM_NULL) stop 6
  handled = handled + 1
  last_code = code
end subroutine record_error

subroutine gquery(extra_state, status, ierr)
  use mpi
  implicit none
  integer(kind=MPI_ADDRESS_KIND) :: extra_state
  integer :: status(MPI_STATUS_SIZE), ierr
  status(MPI_SOURCE) = int(extra_state)
  status(MPI_TAG) = 5
  call MPI_Status_set_elements(status, MPI_BYTE, 0, ierr)
  call MPI_Status_set_cancelled(status, .false., ierr)
end subroutine gquery

subroutine gfree(extra_state, ierr)
  use mpi
  use counters
  implicit none
  integer(kind=MPI_ADDRESS_KIND) :: extra_state
  integer :: ierr
  if (extra_state /= 77) stop 7
  freed = freed + 1
  ierr = MPI_SUCCESS
end subroutine gfree

subroutine gcancel(extra_state, complete, ierr)
  use mpi
  use counters
  implicit none
  integer(kind=MPI_ADDRESS_KIND) :: extra_state
  logical :: complete
  integer :: ierr
  if (extra_state /= 77 .or. complete) stop 8
  cancelled = cancelled + 1
  ierr = MPI_SUCCESS
end subroutine gcancel
