//! The Fortran bindings of windows that are not the C ones argument for
//! argument (§19.1): keyvals with Fortran callbacks and the predefined
//! `MPI_WIN_NULL_COPY_FN`, `MPI_WIN_DUP_FN`, `MPI_WIN_NULL_DELETE_FN`;
//! attributes as `INTEGER(KIND=MPI_ADDRESS_KIND)` values (a predefined
//! attribute's value itself, `MPI_WIN_BASE`'s the address); and window
//! error handlers that are Fortran subroutines.
//!
//! # Safety (of every function here)
//!
//! As for `caching.rs`: the caller is Fortran code compiled with
//! `mpif.h` or `use mpi`.

use std::ffi::{c_int, c_void};

use super::caching::{
    create_errhandler_named, create_keyval, mpi_comm_dup_fn_, mpi_comm_null_copy_fn_,
    mpi_comm_null_delete_fn_, set_attr,
};
use super::handles::{f2c, Fint};
use super::set;
use crate::attr::{FCopyFn, FDeleteFn, Object};
use crate::errhandler::ErrhFnF;
use crate::handles::Handle;

type GetAttr = unsafe extern "C" fn(Handle, c_int, *mut c_void, *mut c_int) -> c_int;

extern "C" {
    fn MPI_Win_set_attr(win: Handle, key: c_int, val: *mut c_void) -> c_int;
    fn PMPI_Win_set_attr(win: Handle, key: c_int, val: *mut c_void) -> c_int;
    fn MPI_Win_get_attr(win: Handle, key: c_int, val: *mut c_void, flag: *mut c_int) -> c_int;
    fn PMPI_Win_get_attr(win: Handle, key: c_int, val: *mut c_void, flag: *mut c_int) -> c_int;
}

/// `MPI_WIN_NULL_COPY_FN`, as `MPI_COMM_NULL_COPY_FN` (windows are never
/// duplicated: it is never called).
#[no_mangle]
pub(crate) unsafe extern "C" fn mpi_win_null_copy_fn_(
    old: *mut Fint,
    key: *mut Fint,
    extra: *mut isize,
    value_in: *mut isize,
    value_out: *mut isize,
    flag: *mut Fint,
    ierr: *mut Fint,
) {
    // SAFETY: the same arguments.
    unsafe { mpi_comm_null_copy_fn_(old, key, extra, value_in, value_out, flag, ierr) }
}

/// `MPI_WIN_DUP_FN`, as `MPI_COMM_DUP_FN`.
#[no_mangle]
pub(crate) unsafe extern "C" fn mpi_win_dup_fn_(
    old: *mut Fint,
    key: *mut Fint,
    extra: *mut isize,
    value_in: *mut isize,
    value_out: *mut isize,
    flag: *mut Fint,
    ierr: *mut Fint,
) {
    // SAFETY: the same arguments.
    unsafe { mpi_comm_dup_fn_(old, key, extra, value_in, value_out, flag, ierr) }
}

/// `MPI_WIN_NULL_DELETE_FN`, as `MPI_COMM_NULL_DELETE_FN`.
#[no_mangle]
pub(crate) unsafe extern "C" fn mpi_win_null_delete_fn_(
    obj: *mut Fint,
    key: *mut Fint,
    value: *mut isize,
    extra: *mut isize,
    ierr: *mut Fint,
) {
    // SAFETY: the same arguments.
    unsafe { mpi_comm_null_delete_fn_(obj, key, value, extra, ierr) }
}

/// `MPI_WIN_CREATE_KEYVAL(WIN_COPY_ATTR_FN, WIN_DELETE_ATTR_FN,
/// WIN_KEYVAL, EXTRA_STATE, IERROR)`.
unsafe fn win_create_keyval(
    copy: Option<FCopyFn>,
    delete: Option<FDeleteFn>,
    keyval: *mut Fint,
    extra: *const isize,
    ierr: *mut Fint,
) {
    // SAFETY: the arguments are Fortran's.
    unsafe {
        create_keyval(
            "MPI_Win_create_keyval",
            Object::Win,
            copy,
            delete,
            keyval,
            extra,
            ierr,
        )
    }
}
both!(win_create_keyval, mpi_win_create_keyval_, pmpi_win_create_keyval_(
    copy: Option<FCopyFn>, delete: Option<FDeleteFn>, keyval: *mut Fint, extra: *const isize, ierr: *mut Fint
));

// `MPI_WIN_SET_ATTR(WIN, WIN_KEYVAL, ATTRIBUTE_VAL, IERROR)`: as
// `MPI_COMM_SET_ATTR` (`caching.rs`).
twice!(set_attr, mpi_win_set_attr_(win: *const Fint, key: *const Fint, value: *const isize, ierr: *mut Fint)
    => MPI_Win_set_attr, pmpi_win_set_attr_ => PMPI_Win_set_attr);

/// `MPI_WIN_SIZE`, an `MPI_Aint`; the other predefined keys from 602 to
/// 605 are `int`s, and `MPI_WIN_BASE` (601) is the address itself.
const WIN_SIZE: Fint = 603;

/// `MPI_WIN_GET_ATTR(WIN, WIN_KEYVAL, ATTRIBUTE_VAL, FLAG, IERROR)`: a
/// predefined attribute's value itself (the base address for
/// `MPI_WIN_BASE`), a user attribute's as it was set.
unsafe fn win_get_attr(
    c: GetAttr,
    win: *const Fint,
    key: *const Fint,
    value: *mut isize,
    flag: *mut Fint,
    ierr: *mut Fint,
) {
    let mut v: *mut c_void = std::ptr::null_mut();
    // SAFETY: the C function writes one pointer into `v`, which for
    // `MPI_WIN_SIZE` points to an `MPI_Aint` and for the other predefined
    // keys but the base to an `int` (`rma/attrs.rs`); the rest is
    // Fortran's.
    unsafe {
        let rc = c(f2c(*win), *key, (&raw mut v).cast(), flag);
        if rc == 0 && *flag != 0 {
            *value = match *key {
                WIN_SIZE if !v.is_null() => *v.cast::<isize>(),
                k if (602..=605).contains(&k) && !v.is_null() => *v.cast::<c_int>() as isize,
                _ => v.addr() as isize,
            };
        }
        set(ierr, rc)
    }
}
twice!(win_get_attr, mpi_win_get_attr_(
    win: *const Fint, key: *const Fint, value: *mut isize, flag: *mut Fint, ierr: *mut Fint
) => MPI_Win_get_attr, pmpi_win_get_attr_ => PMPI_Win_get_attr);

/// `MPI_WIN_CREATE_ERRHANDLER(WIN_ERRHANDLER_FN, ERRHANDLER, IERROR)`:
/// the handler is a Fortran subroutine `(WIN, ERROR_CODE)`.
unsafe fn win_create_errhandler(f: Option<ErrhFnF>, errhandler: *mut Fint, ierr: *mut Fint) {
    // SAFETY: the arguments are Fortran's.
    unsafe { create_errhandler_named("MPI_Win_create_errhandler", f, errhandler, ierr) }
}
both!(win_create_errhandler, mpi_win_create_errhandler_, pmpi_win_create_errhandler_(
    f: Option<ErrhFnF>, errhandler: *mut Fint, ierr: *mut Fint
));
