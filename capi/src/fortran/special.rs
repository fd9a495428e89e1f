//! The Fortran bindings written by hand: those whose Fortran form is not
//! the C one argument for argument (§19.1 and the standard's Fortran
//! bindings of each function).
//!
//! # Safety (of every function here)
//!
//! As for the generated bindings: the caller is Fortran code compiled
//! with `mpif.h` or `use mpi`, so each pointer is a valid argument of the
//! type the standard's Fortran binding gives it.

use std::ffi::{c_int, c_void};

use super::handles::{c2f, f2c, Fint};
use crate::handles::Handle;
use crate::op::{UserFnF, UserFunc};

type Init = unsafe extern "C" fn(*mut c_int, *mut *mut *mut i8) -> c_int;
type InitThread = unsafe extern "C" fn(*mut c_int, *mut *mut *mut i8, c_int, *mut c_int) -> c_int;
type BufferDetach = unsafe extern "C" fn(*mut c_void, *mut c_int) -> c_int;
type CommDetachBuffer = unsafe extern "C" fn(Handle, *mut c_void, *mut c_int) -> c_int;
type InfoCreateEnv = unsafe extern "C" fn(c_int, *mut *mut i8, *mut Handle) -> c_int;
type CommGetAttr = unsafe extern "C" fn(Handle, c_int, *mut c_void, *mut c_int) -> c_int;

extern "C" {
    fn MPI_Init(argc: *mut c_int, argv: *mut *mut *mut i8) -> c_int;
    fn PMPI_Init(argc: *mut c_int, argv: *mut *mut *mut i8) -> c_int;
    fn MPI_Init_thread(
        a: *mut c_int,
        v: *mut *mut *mut i8,
        required: c_int,
        provided: *mut c_int,
    ) -> c_int;
    fn PMPI_Init_thread(
        a: *mut c_int,
        v: *mut *mut *mut i8,
        required: c_int,
        provided: *mut c_int,
    ) -> c_int;
    fn MPI_Buffer_detach(buffer_addr: *mut c_void, size: *mut c_int) -> c_int;
    fn PMPI_Buffer_detach(buffer_addr: *mut c_void, size: *mut c_int) -> c_int;
    fn MPI_Comm_detach_buffer(comm: Handle, buffer_addr: *mut c_void, size: *mut c_int) -> c_int;
    fn PMPI_Comm_detach_buffer(comm: Handle, buffer_addr: *mut c_void, size: *mut c_int) -> c_int;
    fn MPI_Info_create_env(argc: c_int, argv: *mut *mut i8, info: *mut Handle) -> c_int;
    fn PMPI_Info_create_env(argc: c_int, argv: *mut *mut i8, info: *mut Handle) -> c_int;
    fn MPI_Comm_get_attr(comm: Handle, key: c_int, val: *mut c_void, flag: *mut c_int) -> c_int;
    fn PMPI_Comm_get_attr(comm: Handle, key: c_int, val: *mut c_void, flag: *mut c_int) -> c_int;
}

use super::set;

/// `MPI_INIT(IERROR)`: Fortran has no command line to pass.
unsafe fn init(c: Init, ierr: *mut Fint) {
    // SAFETY: MPI_Init takes null argc/argv; `ierr` is Fortran's.
    unsafe { set(ierr, c(std::ptr::null_mut(), std::ptr::null_mut())) }
}
twice!(init, mpi_init_(ierr: *mut Fint) => MPI_Init, pmpi_init_ => PMPI_Init);

/// `MPI_INIT_THREAD(REQUIRED, PROVIDED, IERROR)`.
unsafe fn init_thread(c: InitThread, required: *const Fint, provided: *mut Fint, ierr: *mut Fint) {
    // SAFETY: the arguments are Fortran's (module docs).
    unsafe {
        let rc = c(
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            *required,
            provided,
        );
        set(ierr, rc)
    }
}
twice!(init_thread, mpi_init_thread_(required: *const Fint, provided: *mut Fint, ierr: *mut Fint)
    => MPI_Init_thread, pmpi_init_thread_ => PMPI_Init_thread);

/// `MPI_PCONTROL(LEVEL)`: no `IERROR`, and like the C function it does
/// nothing (o2g has no profiling levels).
#[no_mangle]
pub(crate) unsafe extern "C" fn mpi_pcontrol_(_level: *const Fint) {}

/// `PMPI_PCONTROL(LEVEL)`, as `mpi_pcontrol_`.
#[no_mangle]
pub(crate) unsafe extern "C" fn pmpi_pcontrol_(_level: *const Fint) {}

/// `MPI_BUFFER_DETACH(BUFFER_ADDR, SIZE, IERROR)`: Fortran cannot use the
/// buffer's address (§3.6.1), so it is not written into `BUFFER_ADDR`.
unsafe fn buffer_detach(
    c: BufferDetach,
    _buffer_addr: *mut c_void,
    size: *mut Fint,
    ierr: *mut Fint,
) {
    let mut addr: *mut c_void = std::ptr::null_mut();
    // SAFETY: the C function writes one address into `addr`, and `size`
    // and `ierr` are Fortran's.
    unsafe { set(ierr, c((&raw mut addr).cast(), size)) }
}
twice!(buffer_detach, mpi_buffer_detach_(buffer_addr: *mut c_void, size: *mut Fint, ierr: *mut Fint)
    => MPI_Buffer_detach, pmpi_buffer_detach_ => PMPI_Buffer_detach);

/// `MPI_COMM_DETACH_BUFFER(COMM, BUFFER_ADDR, SIZE, IERROR)`, as
/// `buffer_detach`.
unsafe fn comm_detach_buffer(
    c: CommDetachBuffer,
    comm: *const Fint,
    _buffer_addr: *mut c_void,
    size: *mut Fint,
    ierr: *mut Fint,
) {
    let mut addr: *mut c_void = std::ptr::null_mut();
    // SAFETY: as for `buffer_detach`; `comm` is Fortran's.
    unsafe { set(ierr, c(f2c(*comm), (&raw mut addr).cast(), size)) }
}
twice!(comm_detach_buffer, mpi_comm_detach_buffer_(
    comm: *const Fint, buffer_addr: *mut c_void, size: *mut Fint, ierr: *mut Fint
) => MPI_Comm_detach_buffer, pmpi_comm_detach_buffer_ => PMPI_Comm_detach_buffer);

/// `MPI_OP_CREATE(USER_FN, COMMUTE, OP, IERROR)`: the user function is a
/// Fortran subroutine, called with the datatype as an integer handle.
/// (The C `MPI_Op_create` cannot take it, so both names call the
/// library's own `create`.)
unsafe fn op_create(
    user_fn: Option<UserFnF>,
    commute: *const Fint,
    op: *mut Fint,
    ierr: *mut Fint,
) {
    let mut h: Handle = std::ptr::null_mut();
    // SAFETY: `h` is room for one handle; the rest is Fortran's.
    unsafe {
        let rc = crate::op::create(
            "MPI_Op_create",
            user_fn.map(UserFunc::Fortran),
            *commute,
            &mut h,
        );
        if rc == 0 {
            *op = c2f(h);
        }
        set(ierr, rc)
    }
}

both!(op_create, mpi_op_create_, pmpi_op_create_(
    user_fn: Option<UserFnF>, commute: *const Fint, op: *mut Fint, ierr: *mut Fint
));

/// `MPI_INFO_CREATE_ENV(INFO, IERROR)`: Fortran passes no command line.
unsafe fn info_create_env(c: InfoCreateEnv, info: *mut Fint, ierr: *mut Fint) {
    let mut h: Handle = std::ptr::null_mut();
    // SAFETY: no arguments are a valid command line; `h` is room for one
    // handle; `info` and `ierr` are Fortran's.
    unsafe {
        let rc = c(0, std::ptr::null_mut(), &mut h);
        if rc == 0 {
            *info = c2f(h);
        }
        set(ierr, rc)
    }
}
twice!(info_create_env, mpi_info_create_env_(info: *mut Fint, ierr: *mut Fint)
    => MPI_Info_create_env, pmpi_info_create_env_ => PMPI_Info_create_env);

/// The predefined attribute keys of `MPI_COMM_WORLD` (§9.1.2), whose C
/// values are pointers to an `int`.
const PREDEFINED_KEYS: std::ops::RangeInclusive<c_int> = 501..=507;

/// `MPI_COMM_GET_ATTR(COMM, COMM_KEYVAL, ATTRIBUTE_VAL, FLAG, IERROR)`:
/// `ATTRIBUTE_VAL` is an `INTEGER(KIND=MPI_ADDRESS_KIND)`; for a
/// predefined key it is the value (`MPI_TAG_UB`, ...), for another the
/// attribute C stored.
unsafe fn comm_get_attr(
    c: CommGetAttr,
    comm: *const Fint,
    keyval: *const Fint,
    attribute_val: *mut isize,
    flag: *mut Fint,
    ierr: *mut Fint,
) {
    let mut val: *mut c_void = std::ptr::null_mut();
    // SAFETY: the C function writes one pointer into `val`, which for a
    // predefined key points to the attribute's `int` (`attr.rs`); the
    // rest is Fortran's.
    unsafe {
        let rc = c(f2c(*comm), *keyval, (&raw mut val).cast(), flag);
        if rc == 0 && *flag != 0 {
            *attribute_val = if PREDEFINED_KEYS.contains(&*keyval) && !val.is_null() {
                *val.cast::<c_int>() as isize
            } else {
                val.addr() as isize
            };
        }
        set(ierr, rc)
    }
}
twice!(comm_get_attr, mpi_comm_get_attr_(
    comm: *const Fint, keyval: *const Fint, attribute_val: *mut isize, flag: *mut Fint, ierr: *mut Fint
) => MPI_Comm_get_attr, pmpi_comm_get_attr_ => PMPI_Comm_get_attr);
