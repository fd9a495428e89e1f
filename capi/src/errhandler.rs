//! Error handlers and error classes the user makes (MPI 5.0 §9.3, §9.5):
//! `MPI_Comm_create_errhandler`, `MPI_Comm_call_errhandler`,
//! `MPI_Add_error_class`/`code`/`string` and their `Remove_` partners.
//! The predefined handlers and the boundary that applies them are in
//! `error.rs`.
//!
//! A user handler lives in a concurrent [`Table`] with a count of the
//! handles the user holds (`MPI_Comm_create_errhandler` and each
//! `MPI_Comm_get_errhandler` make one, `MPI_Errhandler_free` drops one).
//! At zero its handle is no longer valid, but the handler stays, so the
//! communicators it is set on keep calling it (§9.3.4): a few bytes per
//! handler created are kept until the process ends.
//!
//! Error classes and codes the user adds take values from
//! `MPI_ERR_LASTCODE + 1` up; `MPI_LASTUSEDCODE` (an attribute of
//! `MPI_COMM_WORLD`) is the largest so far.

use o2g_mpi_abi_macros::export;
use std::collections::BTreeMap;
use std::ffi::{c_char, c_int};
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::error::{
    boundary, raise, Code, Res, MPI_ERR_ABI, MPI_ERR_ARG, MPI_ERR_ERRHANDLER, MPI_ERR_LASTCODE,
};
use crate::ffi;
use crate::handles::{self, ErrMode, Handle};
use crate::table::Table;

/// `MPI_Comm_errhandler_function` (§9.3.1): variadic in C; o2g passes no
/// further argument.
pub(crate) type ErrhFn = unsafe extern "C" fn(*mut Handle, *mut c_int, ...);

/// A Fortran error handler (§19.1): `SUBROUTINE F(COMM, ERROR_CODE)`, both
/// integers by reference.
pub(crate) type ErrhFnF = unsafe extern "C" fn(*mut crate::fortran::Fint, *mut c_int);

/// A user handler, as C's or Fortran's `MPI_Comm_create_errhandler` got it.
#[derive(Clone, Copy)]
pub(crate) enum ErrhFunc {
    C(ErrhFn),
    Fortran(ErrhFnF),
}

struct UserErrh {
    f: ErrhFunc,
    /// Handles the user holds.
    refs: AtomicUsize,
}

static ERRHS: Table<UserErrh> = Table::new();

/// The user's error classes (their own class) and codes (with their
/// class), and the strings of both.
struct Added {
    classes: BTreeMap<c_int, c_int>,
    strings: BTreeMap<c_int, String>,
}

static ADDED: Mutex<Added> = Mutex::new(Added {
    classes: BTreeMap::new(),
    strings: BTreeMap::new(),
});

/// The largest error code in use (`MPI_LASTUSEDCODE`).
static LAST_USED: AtomicI32 = AtomicI32::new(MPI_ERR_LASTCODE);

fn added() -> std::sync::MutexGuard<'static, Added> {
    ADDED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Where `MPI_LASTUSEDCODE`'s value is.
pub(crate) fn last_used_code() -> *const c_int {
    LAST_USED.as_ptr()
}

/// The class of a code the user added, if `code` is one.
pub(crate) fn class_of(code: c_int) -> Option<c_int> {
    added().classes.get(&code).copied()
}

/// The string of a code the user added (empty until one is set), if
/// `code` is one.
pub(crate) fn string_of(code: c_int) -> Option<String> {
    let a = added();
    a.classes
        .contains_key(&code)
        .then(|| a.strings.get(&code).cloned().unwrap_or_default())
}

/// The error mode a user handler's handle stands for, set on the
/// communicator `comm`; `None` if `h` is not a live user handler.
pub(crate) fn mode(h: Handle, comm: Handle) -> Option<ErrMode> {
    let e = ERRHS.get(h)?;
    (e.refs.load(Ordering::Acquire) > 0).then(|| ErrMode::User {
        errh: handles::value(h),
        comm: handles::value(comm),
    })
}

/// One more handle to the user handler `errh` (`MPI_Comm_get_errhandler`).
pub(crate) fn retain(errh: usize) {
    if let Some(e) = ERRHS.get(handles::handle(errh)) {
        e.refs.fetch_add(1, Ordering::AcqRel);
    }
}

/// Drops a handle to a user handler (`MPI_Errhandler_free`);
/// `MPI_ERR_ERRHANDLER` if `h` is none.
pub(crate) fn release(h: Handle) -> Res<()> {
    let e = ERRHS.get(h).ok_or(Code(MPI_ERR_ERRHANDLER))?;
    e.refs
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
        .map(drop)
        .map_err(|_| Code(MPI_ERR_ERRHANDLER))
}

/// Calls the user handler `errh` for error `code` on the communicator
/// `comm` (§9.3.1): with a pointer to the communicator's handle and to
/// the code.
pub(crate) fn invoke(errh: usize, comm: usize, code: c_int) {
    if let Some(e) = ERRHS.get(handles::handle(errh)) {
        let mut c = handles::handle(comm);
        let mut code = code;
        // SAFETY: `f` is the user's `MPI_Comm_errhandler_function` (or
        // Fortran's, which takes the integer handle), called with valid
        // pointers to locals as §9.3.1 describes; it may call MPI
        // (nothing is borrowed or locked here).
        unsafe {
            match e.f {
                ErrhFunc::C(f) => f(&raw mut c, &raw mut code),
                ErrhFunc::Fortran(f) => {
                    let mut fc = crate::fortran::c2f(c);
                    f(&raw mut fc, &raw mut code)
                }
            }
        };
    }
}

/// `MPI_Comm_create_errhandler` (§9.3.1): a handler that MPI calls with
/// the communicator and the error code, after which the failing call
/// returns the code.
///
/// # Safety
///
/// `function` is an `MPI_Comm_errhandler_function`; `errhandler` is
/// valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Comm_create_errhandler(
    function: Option<ErrhFn>,
    errhandler: *mut Handle,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        create(
            "MPI_Comm_create_errhandler",
            function.map(ErrhFunc::C),
            errhandler,
        )
    }
}

/// `MPI_Comm_create_errhandler` for C and Fortran functions.
///
/// # Safety
///
/// `errhandler` is valid for a write of one handle.
pub(crate) unsafe fn create(name: &str, f: Option<ErrhFunc>, errhandler: *mut Handle) -> c_int {
    boundary(name, std::ptr::null_mut(), || {
        handles::running()?;
        let f = f.ok_or(Code(MPI_ERR_ARG))?;
        let h = ERRHS.insert(UserErrh {
            f,
            refs: AtomicUsize::new(1),
        });
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(errhandler, h) }
    })
}

/// `MPI_Comm_call_errhandler` (§9.3.5): applies the communicator's
/// handler to `errorcode`; returns `MPI_SUCCESS` once a handler that
/// returns has run (`MPI_ERRORS_RETURN` does nothing).
#[export]
pub(crate) extern "C" fn MPI_Comm_call_errhandler(comm: Handle, errorcode: c_int) -> c_int {
    let c = match handles::comm(comm) {
        Ok(c) => c,
        Err(_) => {
            return boundary("MPI_Comm_call_errhandler", comm, || {
                Err(Code(crate::error::MPI_ERR_COMM))
            })
        }
    };
    let mode = c.errh.get();
    drop(c);
    raise("MPI_Comm_call_errhandler", mode, errorcode);
    crate::error::MPI_SUCCESS
}

/// A fresh error code above every one in use.
fn next_code() -> c_int {
    LAST_USED.fetch_add(1, Ordering::AcqRel) + 1
}

/// `MPI_Add_error_class` (§9.5): a new error class.
///
/// # Safety
///
/// `errorclass` is valid for a write of one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Add_error_class(errorclass: *mut c_int) -> c_int {
    boundary("MPI_Add_error_class", std::ptr::null_mut(), || {
        let mut a = added();
        let c = next_code();
        a.classes.insert(c, c);
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(errorclass, c) }
    })
}

/// `MPI_Add_error_code` (§9.5): a new error code of class `errorclass`
/// (predefined or added).
///
/// # Safety
///
/// `errorcode` is valid for a write of one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Add_error_code(
    errorclass: c_int,
    errorcode: *mut c_int,
) -> c_int {
    boundary("MPI_Add_error_code", std::ptr::null_mut(), || {
        let mut a = added();
        let user_class = a.classes.get(&errorclass) == Some(&errorclass);
        if !user_class && !(1..=MPI_ERR_ABI).contains(&errorclass) {
            return Err(Code(MPI_ERR_ARG));
        }
        let c = next_code();
        a.classes.insert(c, errorclass);
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(errorcode, c) }
    })
}

/// `MPI_Add_error_string` (§9.5): the text of an added class or code (at
/// most `MPI_MAX_ERROR_STRING - 1` bytes).
///
/// # Safety
///
/// `string` is a NUL-terminated C string.
#[export]
pub(crate) unsafe extern "C" fn MPI_Add_error_string(
    errorcode: c_int,
    string: *const c_char,
) -> c_int {
    boundary("MPI_Add_error_string", std::ptr::null_mut(), || {
        // SAFETY: the caller passes a C string.
        let s = unsafe { ffi::c_str(string) }?;
        let mut a = added();
        if !a.classes.contains_key(&errorcode) || s.len() >= 512 {
            return Err(Code(MPI_ERR_ARG));
        }
        a.strings.insert(errorcode, s);
        Ok(())
    })
}

/// `MPI_Remove_error_class` (§9.5): removes an added class once its
/// codes and its string have been removed (removing it before is
/// erroneous, and reported).
#[export]
pub(crate) extern "C" fn MPI_Remove_error_class(errorclass: c_int) -> c_int {
    boundary("MPI_Remove_error_class", std::ptr::null_mut(), || {
        let mut a = added();
        let is_class = a.classes.get(&errorclass) == Some(&errorclass);
        let used = a
            .classes
            .iter()
            .any(|(&k, &c)| c == errorclass && k != errorclass);
        if !is_class || used || a.strings.contains_key(&errorclass) {
            return Err(Code(MPI_ERR_ARG));
        }
        a.classes.remove(&errorclass);
        Ok(())
    })
}

/// `MPI_Remove_error_code` (§9.5): removes an added code once its string
/// has been removed.
#[export]
pub(crate) extern "C" fn MPI_Remove_error_code(errorcode: c_int) -> c_int {
    boundary("MPI_Remove_error_code", std::ptr::null_mut(), || {
        let mut a = added();
        match a.classes.get(&errorcode) {
            Some(&c) if c != errorcode && !a.strings.contains_key(&errorcode) => {
                a.classes.remove(&errorcode);
                Ok(())
            }
            _ => Err(Code(MPI_ERR_ARG)),
        }
    })
}

/// `MPI_Remove_error_string` (§9.5): the added class or code has an
/// empty string again; one without a string is an error.
#[export]
pub(crate) extern "C" fn MPI_Remove_error_string(errorcode: c_int) -> c_int {
    boundary("MPI_Remove_error_string", std::ptr::null_mut(), || {
        let mut a = added();
        if !a.classes.contains_key(&errorcode) || a.strings.remove(&errorcode).is_none() {
            return Err(Code(MPI_ERR_ARG));
        }
        Ok(())
    })
}
