//! The Fortran bindings that take Fortran subroutines: attribute caching
//! on communicators and datatypes (§7.7, with `INTEGER(KIND=
//! MPI_ADDRESS_KIND)` attribute values), communicator error handlers
//! (§9.3.1) and generalized requests (§13.2); and the predefined callbacks `MPI_COMM_NULL_COPY_FN`,
//! `MPI_COMM_DUP_FN`, `MPI_COMM_NULL_DELETE_FN` and their `MPI_TYPE_`
//! twins, which in Fortran are subroutines the program passes by name.
//!
//! # Safety (of every function here)
//!
//! As for the generated bindings: the caller is Fortran code compiled
//! with `mpif.h` or `use mpi`, so each pointer is a valid argument of the
//! type the standard's Fortran binding gives it, and each procedure
//! argument a subroutine of the interface the standard gives it.

use std::ffi::{c_int, c_void};

use super::handles::{c2f, f2c, Fint};
use super::set;
use crate::attr::{new_fortran_keyval, FCopyFn, FDeleteFn, Object};
use crate::errhandler::{ErrhFnF, ErrhFunc};
use crate::error::{boundary, Code, MPI_ERR_ARG};
use crate::grequest::{Callbacks, FCancelFn, FFreeFn, FQueryFn};
use crate::handles::Handle;

type SetAttr = unsafe extern "C" fn(Handle, c_int, *mut c_void) -> c_int;
type GetAttr = unsafe extern "C" fn(Handle, c_int, *mut c_void, *mut c_int) -> c_int;

extern "C" {
    fn MPI_Comm_set_attr(comm: Handle, key: c_int, val: *mut c_void) -> c_int;
    fn PMPI_Comm_set_attr(comm: Handle, key: c_int, val: *mut c_void) -> c_int;
    fn MPI_Type_set_attr(ty: Handle, key: c_int, val: *mut c_void) -> c_int;
    fn PMPI_Type_set_attr(ty: Handle, key: c_int, val: *mut c_void) -> c_int;
    fn MPI_Type_get_attr(ty: Handle, key: c_int, val: *mut c_void, flag: *mut c_int) -> c_int;
    fn PMPI_Type_get_attr(ty: Handle, key: c_int, val: *mut c_void, flag: *mut c_int) -> c_int;
}

/// `MPI_COMM_NULL_COPY_FN` (and `MPI_TYPE_NULL_COPY_FN`): the new object
/// does not get the attribute.
#[no_mangle]
pub(crate) unsafe extern "C" fn mpi_comm_null_copy_fn_(
    _old: *mut Fint,
    _key: *mut Fint,
    _extra: *mut isize,
    _value_in: *mut isize,
    _value_out: *mut isize,
    flag: *mut Fint,
    ierr: *mut Fint,
) {
    // SAFETY: the arguments are the library's own locals (`attr.rs`) or
    // Fortran's.
    unsafe {
        *flag = 0;
        set(ierr, 0)
    }
}

/// `MPI_COMM_DUP_FN` (and `MPI_TYPE_DUP_FN`): the new object gets the
/// same value.
#[no_mangle]
pub(crate) unsafe extern "C" fn mpi_comm_dup_fn_(
    _old: *mut Fint,
    _key: *mut Fint,
    _extra: *mut isize,
    value_in: *mut isize,
    value_out: *mut isize,
    flag: *mut Fint,
    ierr: *mut Fint,
) {
    // SAFETY: as for `mpi_comm_null_copy_fn_`.
    unsafe {
        *value_out = *value_in;
        *flag = 1;
        set(ierr, 0)
    }
}

/// `MPI_COMM_NULL_DELETE_FN` (and `MPI_TYPE_NULL_DELETE_FN`): nothing.
#[no_mangle]
pub(crate) unsafe extern "C" fn mpi_comm_null_delete_fn_(
    _obj: *mut Fint,
    _key: *mut Fint,
    _value: *mut isize,
    _extra: *mut isize,
    ierr: *mut Fint,
) {
    // SAFETY: as for `mpi_comm_null_copy_fn_`.
    unsafe { set(ierr, 0) }
}

/// `MPI_TYPE_NULL_COPY_FN`, as `MPI_COMM_NULL_COPY_FN`.
#[no_mangle]
pub(crate) unsafe extern "C" fn mpi_type_null_copy_fn_(
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

/// `MPI_TYPE_DUP_FN`, as `MPI_COMM_DUP_FN`.
#[no_mangle]
pub(crate) unsafe extern "C" fn mpi_type_dup_fn_(
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

/// `MPI_TYPE_NULL_DELETE_FN`, as `MPI_COMM_NULL_DELETE_FN`.
#[no_mangle]
pub(crate) unsafe extern "C" fn mpi_type_null_delete_fn_(
    obj: *mut Fint,
    key: *mut Fint,
    value: *mut isize,
    extra: *mut isize,
    ierr: *mut Fint,
) {
    // SAFETY: the same arguments.
    unsafe { mpi_comm_null_delete_fn_(obj, key, value, extra, ierr) }
}

/// `MPI_COMM_CREATE_KEYVAL` / `MPI_TYPE_CREATE_KEYVAL(COPY_FN,
/// DELETE_FN, KEYVAL, EXTRA_STATE, IERROR)`.
pub(super) unsafe fn create_keyval(
    name: &str,
    object: Object,
    copy: Option<FCopyFn>,
    delete: Option<FDeleteFn>,
    keyval: *mut Fint,
    extra: *const isize,
    ierr: *mut Fint,
) {
    // SAFETY: the arguments are Fortran's.
    unsafe {
        let extra = *extra;
        let rc = boundary(name, std::ptr::null_mut(), || {
            let (Some(c), Some(d)) = (copy, delete) else {
                return Err(Code(MPI_ERR_ARG));
            };
            *keyval = new_fortran_keyval(object, c, d, extra)?;
            Ok(())
        });
        set(ierr, rc)
    }
}

/// `MPI_COMM_CREATE_KEYVAL`.
unsafe fn comm_create_keyval(
    copy: Option<FCopyFn>,
    delete: Option<FDeleteFn>,
    keyval: *mut Fint,
    extra: *const isize,
    ierr: *mut Fint,
) {
    // SAFETY: the arguments are Fortran's.
    unsafe {
        create_keyval(
            "MPI_Comm_create_keyval",
            Object::Comm,
            copy,
            delete,
            keyval,
            extra,
            ierr,
        )
    }
}
both!(comm_create_keyval, mpi_comm_create_keyval_, pmpi_comm_create_keyval_(
    copy: Option<FCopyFn>, delete: Option<FDeleteFn>, keyval: *mut Fint, extra: *const isize, ierr: *mut Fint
));

/// `MPI_TYPE_CREATE_KEYVAL`.
unsafe fn type_create_keyval(
    copy: Option<FCopyFn>,
    delete: Option<FDeleteFn>,
    keyval: *mut Fint,
    extra: *const isize,
    ierr: *mut Fint,
) {
    // SAFETY: the arguments are Fortran's.
    unsafe {
        create_keyval(
            "MPI_Type_create_keyval",
            Object::Type,
            copy,
            delete,
            keyval,
            extra,
            ierr,
        )
    }
}
both!(type_create_keyval, mpi_type_create_keyval_, pmpi_type_create_keyval_(
    copy: Option<FCopyFn>, delete: Option<FDeleteFn>, keyval: *mut Fint, extra: *const isize, ierr: *mut Fint
));

/// `MPI_COMM_SET_ATTR` / `MPI_TYPE_SET_ATTR(OBJ, KEYVAL, ATTRIBUTE_VAL,
/// IERROR)`: the address-sized integer is the attribute.
pub(super) unsafe fn set_attr(
    c: SetAttr,
    obj: *const Fint,
    key: *const Fint,
    value: *const isize,
    ierr: *mut Fint,
) {
    // SAFETY: the arguments are Fortran's; the C function stores the
    // value as a pointer it never dereferences.
    unsafe {
        set(
            ierr,
            c(
                f2c(*obj),
                *key,
                std::ptr::without_provenance_mut(*value as usize),
            ),
        )
    }
}
twice!(set_attr, mpi_comm_set_attr_(obj: *const Fint, key: *const Fint, value: *const isize, ierr: *mut Fint)
    => MPI_Comm_set_attr, pmpi_comm_set_attr_ => PMPI_Comm_set_attr);
twice!(set_attr, mpi_type_set_attr_(obj: *const Fint, key: *const Fint, value: *const isize, ierr: *mut Fint)
    => MPI_Type_set_attr, pmpi_type_set_attr_ => PMPI_Type_set_attr);

/// `MPI_TYPE_GET_ATTR(DATATYPE, KEYVAL, ATTRIBUTE_VAL, FLAG, IERROR)`.
unsafe fn get_attr(
    c: GetAttr,
    obj: *const Fint,
    key: *const Fint,
    value: *mut isize,
    flag: *mut Fint,
    ierr: *mut Fint,
) {
    let mut v: *mut c_void = std::ptr::null_mut();
    // SAFETY: the C function writes one pointer into `v`; the rest is
    // Fortran's.
    unsafe {
        let rc = c(f2c(*obj), *key, (&raw mut v).cast(), flag);
        if rc == 0 && *flag != 0 {
            *value = v.addr() as isize;
        }
        set(ierr, rc)
    }
}
twice!(get_attr, mpi_type_get_attr_(
    obj: *const Fint, key: *const Fint, value: *mut isize, flag: *mut Fint, ierr: *mut Fint
) => MPI_Type_get_attr, pmpi_type_get_attr_ => PMPI_Type_get_attr);

/// `MPI_COMM_CREATE_ERRHANDLER(COMM_ERRHANDLER_FN, ERRHANDLER, IERROR)`:
/// the handler is a Fortran subroutine `(COMM, ERROR_CODE)`.
unsafe fn create_errhandler(f: Option<ErrhFnF>, errhandler: *mut Fint, ierr: *mut Fint) {
    // SAFETY: the arguments are Fortran's.
    unsafe { create_errhandler_named("MPI_Comm_create_errhandler", f, errhandler, ierr) }
}

/// `MPI_COMM_CREATE_ERRHANDLER` and `MPI_WIN_CREATE_ERRHANDLER`, as
/// `name`.
pub(super) unsafe fn create_errhandler_named(
    name: &str,
    f: Option<ErrhFnF>,
    errhandler: *mut Fint,
    ierr: *mut Fint,
) {
    let mut h: Handle = std::ptr::null_mut();
    // SAFETY: `h` is room for one handle; the rest is Fortran's.
    unsafe {
        let rc = crate::errhandler::create(name, f.map(ErrhFunc::Fortran), &mut h);
        if rc == 0 {
            *errhandler = c2f(h);
        }
        set(ierr, rc)
    }
}

both!(create_errhandler, mpi_comm_create_errhandler_, pmpi_comm_create_errhandler_(
    f: Option<ErrhFnF>, errhandler: *mut Fint, ierr: *mut Fint
));

/// `MPI_GREQUEST_START(QUERY_FN, FREE_FN, CANCEL_FN, EXTRA_STATE, REQUEST,
/// IERROR)`: the three callbacks are Fortran subroutines.
unsafe fn grequest_start(
    query: Option<FQueryFn>,
    free: Option<FFreeFn>,
    cancel: Option<FCancelFn>,
    extra: *const isize,
    request: *mut Fint,
    ierr: *mut Fint,
) {
    let (Some(q), Some(f), Some(c)) = (query, free, cancel) else {
        let rc = boundary("MPI_Grequest_start", std::ptr::null_mut(), || {
            Err(Code(MPI_ERR_ARG))
        });
        // SAFETY: `ierr` is Fortran's.
        return unsafe { set(ierr, rc) };
    };
    let mut h: Handle = std::ptr::null_mut();
    // SAFETY: `h` is room for one handle; the rest is Fortran's.
    unsafe {
        let rc = crate::grequest::start(Callbacks::Fortran(q, f, c), *extra as usize, &mut h);
        if rc == 0 {
            *request = c2f(h);
        }
        set(ierr, rc)
    }
}

both!(grequest_start, mpi_grequest_start_, pmpi_grequest_start_(
    query: Option<FQueryFn>,
    free: Option<FFreeFn>,
    cancel: Option<FCancelFn>,
    extra: *const isize,
    request: *mut Fint,
    ierr: *mut Fint
));
