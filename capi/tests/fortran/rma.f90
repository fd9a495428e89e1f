! One-sided communication from Fortran: MPI_WIN_CREATE over an array with
! an INTEGER(KIND=MPI_ADDRESS_KIND) size, MPI_PUT and MPI_GET under
! MPI_WIN_FENCE, MPI_ACCUMULATE of REAL(8) with MPI_SUM, MPI_FETCH_AND_OP
! on a counter under MPI_WIN_LOCK, MPI_WIN_ALLOCATE's base address as an
! integer, the window attributes as values (MPI_WIN_SIZE, MPI_WIN_DISP_UNIT),
! a keyval with MPI_WIN_NULL_COPY_FN / MPI_WIN_NULL_DELETE_FN, a window
! error handler that is a Fortran subroutine, and MPI_Win_c2f/f2c through
! the handle itself. Correct at any number of ranks.
module rma_errh
  implicit none
  integer :: calls = 0, last_code = 0, last_win = 0
contains
  subroutine on_error(win, code)
    integer :: win, code
    calls = calls + 1
    last_code = code
    last_win = win
  end subroutine on_error
end module rma_errh

program rma
  use mpi
  use rma_errh
  implicit none
  integer :: ierr, rank, size, left, right, win, win2, i, key, errh, flag_int
  integer(kind=MPI_ADDRESS_KIND) :: wsize, disp, val, base2, counter_one, fetched
  integer :: buf(10), src(3), got(3)
  real(8) :: acc(2), contrib(2)
  integer :: acc_win
  logical :: flag

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  right = mod(rank + 1, size)
  left = mod(rank + size - 1, size)

  ! Put to the right at displacement 4, then get it back from the left.
  buf = -1
  wsize = 10 * 4
  call MPI_Win_create(buf, wsize, 4, MPI_INFO_NULL, MPI_COMM_WORLD, win, ierr)
  call check(ierr == MPI_SUCCESS, 'win_create')
  call MPI_Win_get_attr(win, MPI_WIN_SIZE, val, flag, ierr)
  call check(flag .and. val == 40, 'window size attribute')
  call MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, val, flag, ierr)
  call check(flag .and. val == 4, 'disp unit attribute')
  call MPI_Win_fence(0, win, ierr)
  src = [(rank * 10 + i, i = 1, 3)]
  disp = 4
  call MPI_Put(src, 3, MPI_INTEGER, right, disp, 3, MPI_INTEGER, win, ierr)
  call MPI_Win_fence(0, win, ierr)
  call check(all(buf(5:7) == [(left * 10 + i, i = 1, 3)]), 'put arrived')
  call check(all(buf(1:4) == -1) .and. all(buf(8:10) == -1), 'put stayed in place')
  call MPI_Get(got, 3, MPI_INTEGER, left, disp, 3, MPI_INTEGER, win, ierr)
  call MPI_Win_fence(0, win, ierr)
  call check(all(got == [(mod(left + size - 1, size) * 10 + i, i = 1, 3)]), 'get')

  ! A Fortran error handler on the window: a put past its end.
  call MPI_Win_create_errhandler(on_error, errh, ierr)
  call MPI_Win_set_errhandler(win, errh, ierr)
  disp = 9
  call MPI_Win_fence(0, win, ierr)
  call MPI_Put(src, 3, MPI_INTEGER, right, disp, 3, MPI_INTEGER, win, ierr)
  call check(ierr /= MPI_SUCCESS .and. calls == 1 .and. last_code == ierr, 'error handler called')
  call check(last_win == win, 'error handler given the window')
  call MPI_Error_class(ierr, flag_int, ierr)
  call check(flag_int == MPI_ERR_RMA_RANGE, 'range error class')
  call MPI_Win_fence(0, win, ierr)
  call MPI_Errhandler_free(errh, ierr)

  ! A keyval with the predefined callbacks; the handle is an integer.
  call MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, MPI_WIN_NULL_DELETE_FN, key, 0_MPI_ADDRESS_KIND, ierr)
  val = 4242
  call MPI_Win_set_attr(win, key, val, ierr)
  val = 0
  call MPI_Win_get_attr(win, key, val, flag, ierr)
  call check(flag .and. val == 4242, 'user attribute')
  call MPI_Win_free_keyval(key, ierr)
  call MPI_Win_free(win, ierr)
  call check(win == MPI_WIN_NULL, 'win_free')

  ! Accumulate doubles into rank 0.
  acc = 0
  wsize = 16
  call MPI_Win_create(acc, wsize, 8, MPI_INFO_NULL, MPI_COMM_WORLD, acc_win, ierr)
  contrib = [1.5d0, dble(rank)]
  call MPI_Win_fence(0, acc_win, ierr)
  disp = 0
  call MPI_Accumulate(contrib, 2, MPI_DOUBLE_PRECISION, 0, disp, 2, MPI_DOUBLE_PRECISION, MPI_SUM, acc_win, ierr)
  call MPI_Win_fence(0, acc_win, ierr)
  if (rank == 0) then
    call check(acc(1) == 1.5d0 * size .and. acc(2) == dble(size * (size - 1) / 2), 'accumulate')
  end if
  call MPI_Win_free(acc_win, ierr)

  ! MPI_Win_allocate hands its base as an address; a counter at rank 0
  ! counts every rank once through MPI_Fetch_and_op.
  wsize = 8
  call MPI_Win_allocate(wsize, 8, MPI_INFO_NULL, MPI_COMM_WORLD, base2, win2, ierr)
  call check(ierr == MPI_SUCCESS .and. base2 /= 0, 'win_allocate')
  call MPI_Win_get_attr(win2, MPI_WIN_BASE, val, flag, ierr)
  call check(flag .and. val == base2, 'base attribute')
  call MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win2, ierr)
  counter_one = 0
  disp = 0
  call MPI_Put(counter_one, 1, MPI_INTEGER8, rank, disp, 1, MPI_INTEGER8, win2, ierr)
  call MPI_Win_unlock(rank, win2, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  counter_one = 1
  call MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win2, ierr)
  call MPI_Fetch_and_op(counter_one, fetched, MPI_INTEGER8, 0, disp, MPI_SUM, win2, ierr)
  call MPI_Win_unlock(0, win2, ierr)
  call check(fetched >= 0 .and. fetched < size, 'fetched a count')
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win2, ierr)
  call MPI_Get(fetched, 1, MPI_INTEGER8, 0, disp, 1, MPI_INTEGER8, win2, ierr)
  call MPI_Win_unlock(0, win2, ierr)
  call check(fetched == size, 'counter')
  call MPI_Win_free(win2, ierr)

  call MPI_Finalize(ierr)
  if (rank == 0) print '(a)', 'rma: ok'
contains
  include 'check.inc'
end program rma
