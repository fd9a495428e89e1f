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

extern "C" {
    fn MPI_Init(argc: *mut c_int, argv: *mut *mut *mut i8) -> c_int;
    fn MPI_Init_thread(
        argc: *mut c_int,
        argv: *mut *mut *mut i8,
        required: c_int,
        provided: *mut c_int,
    ) -> c_int;
    fn MPI_Buffer_detach(buffer_addr: *mut c_void, size: *mut c_int) -> c_int;
    fn MPI_Comm_detach_buffer(comm: Handle, buffer_addr: *mut c_void, size: *mut c_int) -> c_int;
    fn MPI_Comm_get_attr(
        comm: Handle,
        keyval: c_int,
        attribute_val: *mut c_void,
        flag: *mut c_int,
    ) -> c_int;
}

/// Stores `rc` in Fortran's `ierror`.
///
/// # Safety
///
/// `ierr` is null or valid for one integer.
unsafe fn set(ierr: *mut Fint, rc: c_int) {
    if !ierr.is_null() {
        // SAFETY: the caller's contract.
        unsafe { *ierr = rc };
    }
}

/// `MPI_INIT(IERROR)`: Fortran has no command line to pass.
#[no_mangle]
pub(crate) unsafe extern "C" fn mpi_init_(ierr: *mut Fint) {
    // SAFETY: MPI_Init takes null argc/argv; `ierr` is Fortran's.
    unsafe { set(ierr, MPI_Init(std::ptr::null_mut(), std::ptr::null_mut())) }
}

/// `MPI_INIT_THREAD(REQUIRED, PROVIDED, IERROR)`.
#[no_mangle]
pub(crate) unsafe extern "C" fn mpi_init_thread_(
    required: *const Fint,
    provided: *mut Fint,
    ierr: *mut Fint,
) {
    // SAFETY: the arguments are Fortran's (module docs).
    unsafe {
        let rc = MPI_Init_thread(
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            *required,
            provided,
        );
        set(ierr, rc)
    }
}

/// `MPI_PCONTROL(LEVEL)`: no `IERROR`, and like the C function it does
/// nothing (o2g has no profiling levels).
#[no_mangle]
pub(crate) unsafe extern "C" fn mpi_pcontrol_(_level: *const Fint) {}

/// `MPI_BUFFER_DETACH(BUFFER_ADDR, SIZE, IERROR)`: Fortran cannot use the
/// buffer's address (§3.6.1), so it is not written into `BUFFER_ADDR`.
#[no_mangle]
pub(crate) unsafe extern "C" fn mpi_buffer_detach_(
    _buffer_addr: *mut c_void,
    size: *mut Fint,
    ierr: *mut Fint,
) {
    let mut addr: *mut c_void = std::ptr::null_mut();
    // SAFETY: the C function writes one address into `addr`, and `size`
    // and `ierr` are Fortran's.
    unsafe { set(ierr, MPI_Buffer_detach((&raw mut addr).cast(), size)) }
}

/// `MPI_COMM_DETACH_BUFFER(COMM, BUFFER_ADDR, SIZE, IERROR)`, as
/// `mpi_buffer_detach_`.
#[no_mangle]
pub(crate) unsafe extern "C" fn mpi_comm_detach_buffer_(
    comm: *const Fint,
    _buffer_addr: *mut c_void,
    size: *mut Fint,
    ierr: *mut Fint,
) {
    let mut addr: *mut c_void = std::ptr::null_mut();
    // SAFETY: as for `mpi_buffer_detach_`; `comm` is Fortran's.
    unsafe {
        set(
            ierr,
            MPI_Comm_detach_buffer(f2c(*comm), (&raw mut addr).cast(), size),
        )
    }
}

/// `MPI_OP_CREATE(USER_FN, COMMUTE, OP, IERROR)`: the user function is a
/// Fortran subroutine, called with the datatype as an integer handle.
#[no_mangle]
pub(crate) unsafe extern "C" fn mpi_op_create_(
    user_fn: Option<UserFnF>,
    commute: *const Fint,
    op: *mut Fint,
    ierr: *mut Fint,
) {
    let mut h: Handle = std::ptr::null_mut();
    // SAFETY: `h` is room for one handle; the rest is Fortran's.
    unsafe {
        let rc = crate::op::create(
            "MPI_OP_CREATE",
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

/// The predefined attribute keys of `MPI_COMM_WORLD` (§9.1.2), whose C
/// values are pointers to an `int`.
const PREDEFINED_KEYS: std::ops::RangeInclusive<c_int> = 501..=507;

/// `MPI_COMM_GET_ATTR(COMM, COMM_KEYVAL, ATTRIBUTE_VAL, FLAG, IERROR)`:
/// `ATTRIBUTE_VAL` is an `INTEGER(KIND=MPI_ADDRESS_KIND)`; for a
/// predefined key it is the value (`MPI_TAG_UB`, ...), for another the
/// attribute C stored.
#[no_mangle]
pub(crate) unsafe extern "C" fn mpi_comm_get_attr_(
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
        let rc = MPI_Comm_get_attr(f2c(*comm), *keyval, (&raw mut val).cast(), flag);
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
