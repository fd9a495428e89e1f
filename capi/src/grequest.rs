//! Generalized requests (MPI 5.0 §13.2): `MPI_Grequest_start`,
//! `MPI_Grequest_complete`, and the status setters their query functions
//! use, `MPI_Status_set_elements(_c, _x)` and `MPI_Status_set_cancelled`.
//!
//! A generalized request is an operation the program carries out itself;
//! MPI learns that it is done from `MPI_Grequest_complete`. Its callbacks
//! are called as §13.2 says: `query_fn` by the call that completes the
//! request (`MPI_Wait`, `MPI_Test`, ... and `MPI_Request_get_status`,
//! which does not free it) to fill in its status, whose error it returns;
//! `free_fn` once after that, or, for a request freed with
//! `MPI_Request_free`, when both that and `MPI_Grequest_complete` have
//! happened; `cancel_fn` by `MPI_Cancel`, told whether the request has
//! completed already.
//!
//! The callbacks and the completion state are plain data in a concurrent
//! [`Table`], under the request's own handle value, so
//! `MPI_Grequest_complete` may come from any thread (another thread often
//! carries out the operation); the request handle itself is in
//! `handles.rs`'s table as [`ReqEntry::Generalized`].

use o2g_mpi_abi_macros::export;
use std::ffi::{c_int, c_void};
use std::sync::Mutex;

use crate::datatype;
use crate::error::{
    boundary, boundary_any_thread, Code, Res, MPI_ERR_COUNT, MPI_ERR_REQUEST, MPI_SUCCESS,
};
use crate::ffi;
use crate::handles::{self, Handle, ReqEntry};
use crate::status::Status;
use crate::table::Table;

/// `MPI_Grequest_query_function`.
type QueryFn = unsafe extern "C" fn(*mut c_void, *mut Status) -> c_int;
/// `MPI_Grequest_free_function`.
type FreeFn = unsafe extern "C" fn(*mut c_void) -> c_int;
/// `MPI_Grequest_cancel_function`.
type CancelFn = unsafe extern "C" fn(*mut c_void, c_int) -> c_int;

/// Fortran's callbacks (§19.1), every argument by reference:
/// `QUERY_FN(EXTRA_STATE, STATUS, IERROR)`, `FREE_FN(EXTRA_STATE,
/// IERROR)`, `CANCEL_FN(EXTRA_STATE, COMPLETE, IERROR)`, `EXTRA_STATE` an
/// `INTEGER(KIND=MPI_ADDRESS_KIND)`, `COMPLETE` a `LOGICAL`, `STATUS` the
/// C status's integers.
pub(crate) type FQueryFn = unsafe extern "C" fn(*mut isize, *mut Status, *mut c_int);
pub(crate) type FFreeFn = unsafe extern "C" fn(*mut isize, *mut c_int);
pub(crate) type FCancelFn = unsafe extern "C" fn(*mut isize, *mut c_int, *mut c_int);

/// The callbacks of a generalized request, C's (each may be null) or
/// Fortran's.
#[derive(Clone, Copy)]
pub(crate) enum Callbacks {
    C(Option<QueryFn>, Option<FreeFn>, Option<CancelFn>),
    Fortran(FQueryFn, FFreeFn, FCancelFn),
}

/// Whether the operation is done and whether the request was freed.
#[derive(Default)]
struct Progress {
    complete: bool,
    freed: bool,
}

/// One generalized request.
struct Greq {
    calls: Callbacks,
    /// The program's `extra_state` pointer, handed back to the callbacks.
    extra: usize,
    progress: Mutex<Progress>,
}

static GREQS: Table<Greq> = Table::new();

impl Greq {
    fn progress(&self) -> std::sync::MutexGuard<'_, Progress> {
        self.progress.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn extra(&self) -> *mut c_void {
        std::ptr::with_exposed_provenance_mut(self.extra)
    }

    /// Calls `free_fn`; its error code.
    fn call_free(&self) -> c_int {
        match self.calls {
            // SAFETY: §13.2: the program's free function, with its own
            // `extra_state`, called once.
            Callbacks::C(_, Some(f), _) => unsafe { f(self.extra()) },
            Callbacks::C(_, None, _) => MPI_SUCCESS,
            Callbacks::Fortran(_, f, _) => {
                let (mut extra, mut ierr) = (self.extra as isize, 0);
                // SAFETY: as above, Fortran's, with references to locals.
                unsafe { f(&mut extra, &mut ierr) };
                ierr
            }
        }
    }
}

/// Whether generalized request `g` (a handle value) has completed; a
/// request that is not in the table any more is.
pub(crate) fn is_complete(g: usize) -> bool {
    GREQS
        .get(handles::handle(g))
        .is_none_or(|r| r.progress().complete)
}

/// The status `query_fn` gives for completed request `g`, and its error
/// code.
pub(crate) fn query(g: usize) -> (Status, c_int) {
    let Some(r) = GREQS.get(handles::handle(g)) else {
        return (Status::empty(), MPI_ERR_REQUEST);
    };
    let mut st = Status::empty();
    let code = match r.calls {
        // SAFETY: §13.2: the program's query function, with its own
        // `extra_state` and a status it may fill in.
        Callbacks::C(Some(q), ..) => unsafe { q(r.extra(), &mut st) },
        Callbacks::C(None, ..) => MPI_SUCCESS,
        Callbacks::Fortran(q, ..) => {
            let (mut extra, mut ierr) = (r.extra as isize, 0);
            // SAFETY: as above, Fortran's, with references to locals (a
            // Fortran status is the C status's integers).
            unsafe { q(&mut extra, &mut st, &mut ierr) };
            ierr
        }
    };
    (st, code)
}

/// Completes request `g` for a wait or test: `query_fn`, then `free_fn`;
/// the status and the first error code either returned.
pub(crate) fn finish(g: usize) -> (Status, c_int) {
    let (st, code) = query(g);
    let freed = GREQS
        .remove(handles::handle(g))
        .map_or(MPI_SUCCESS, |r| r.call_free());
    (st, if code != MPI_SUCCESS { code } else { freed })
}

/// `MPI_Cancel` of request `g`: `cancel_fn`, told whether it completed.
pub(crate) fn cancel(g: usize) -> Res<()> {
    let Some(r) = GREQS.get(handles::handle(g)) else {
        return Err(Code(MPI_ERR_REQUEST));
    };
    let complete = r.progress().complete;
    let code = match r.calls {
        // SAFETY: §13.2: the program's cancel function with its own
        // `extra_state`.
        Callbacks::C(_, _, Some(c)) => unsafe { c(r.extra(), c_int::from(complete)) },
        Callbacks::C(_, _, None) => MPI_SUCCESS,
        Callbacks::Fortran(_, _, c) => {
            let (mut extra, mut done, mut ierr) = (r.extra as isize, c_int::from(complete), 0);
            // SAFETY: as above, Fortran's, with references to locals.
            unsafe { c(&mut extra, &mut done, &mut ierr) };
            ierr
        }
    };
    match code {
        MPI_SUCCESS => Ok(()),
        c => Err(Code(c)),
    }
}

/// `MPI_Request_free` of request `g`: freed now if complete, otherwise
/// by `MPI_Grequest_complete`.
pub(crate) fn release(g: usize) {
    let h = handles::handle(g);
    let Some(r) = GREQS.get(h) else { return };
    let now = {
        let mut p = r.progress();
        p.freed = true;
        p.complete
    };
    if now {
        GREQS.remove(h);
        r.call_free();
    }
}

/// `MPI_Grequest_start` (§13.2): a new generalized request, active until
/// `MPI_Grequest_complete`.
///
/// # Safety
///
/// The callbacks are null or functions of the types §13.2 gives, which
/// may be called with `extra_state` until the request is freed; `req` is
/// valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Grequest_start(
    query_fn: Option<QueryFn>,
    free_fn: Option<FreeFn>,
    cancel_fn: Option<CancelFn>,
    extra_state: *mut c_void,
    req: *mut Handle,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        start(
            Callbacks::C(query_fn, free_fn, cancel_fn),
            extra_state.expose_provenance(),
            req,
        )
    }
}

/// `MPI_Grequest_start` with C's or Fortran's callbacks.
///
/// # Safety
///
/// `req` is valid for a write of one handle.
pub(crate) unsafe fn start(calls: Callbacks, extra: usize, req: *mut Handle) -> c_int {
    boundary("MPI_Grequest_start", std::ptr::null_mut(), || {
        handles::running()?;
        let g = GREQS.insert(Greq {
            calls,
            extra,
            progress: Mutex::new(Progress::default()),
        });
        let mode = handles::errmode(std::ptr::null_mut());
        if let Err(e) = handles::put_request(g, ReqEntry::Generalized(mode)) {
            GREQS.remove(g);
            return Err(e);
        }
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(req, g) }
    })
}

/// `MPI_Grequest_complete` (§13.2): the operation of the generalized
/// request is done; a request freed already is freed now (`free_fn`).
/// Any thread may call it.
#[export]
pub(crate) extern "C" fn MPI_Grequest_complete(req: Handle) -> c_int {
    boundary_any_thread("MPI_Grequest_complete", || {
        let r = GREQS.get(req).ok_or(Code(MPI_ERR_REQUEST))?;
        let free_now = {
            let mut p = r.progress();
            if p.complete {
                return Err(Code(MPI_ERR_REQUEST));
            }
            p.complete = true;
            p.freed
        };
        if free_now {
            GREQS.remove(req);
            r.call_free();
        }
        Ok(())
    })
}

/// Sets the element count of `st` to `count` elements of `dt`.
///
/// # Safety
///
/// A non-null `st` is valid for reading and writing one `MPI_Status`.
unsafe fn set_elements(name: &str, st: *mut Status, dt: Handle, count: i64) -> c_int {
    boundary_any_thread(name, || {
        // SAFETY: by the caller's contract.
        let s = unsafe { ffi::inout(st) }?;
        let size = datatype::lookup(dt)?.size as u64;
        let n = u64::try_from(count).map_err(|_| Code(MPI_ERR_COUNT))?;
        let bytes = n.checked_mul(size).ok_or(Code(MPI_ERR_COUNT))?;
        let bytes = usize::try_from(bytes).map_err(|_| Code(MPI_ERR_COUNT))?;
        *s = Status::new(s.source, s.tag, bytes, s.cancelled()).with_error(s.error);
        Ok(())
    })
}

/// `MPI_Status_set_elements` (§13.3): the status says `count` elements of
/// `dt` were received (for `MPI_Get_count` and `MPI_Get_elements`).
///
/// # Safety
///
/// `st` must be valid for reading and writing one `MPI_Status`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Status_set_elements(
    st: *mut Status,
    dt: Handle,
    count: c_int,
) -> c_int {
    // SAFETY: the caller's contract is `set_elements`'s.
    unsafe { set_elements("MPI_Status_set_elements", st, dt, i64::from(count)) }
}

/// `MPI_Status_set_elements_c` (§13.3): as `MPI_Status_set_elements` with
/// an `MPI_Count`.
///
/// # Safety
///
/// As for `MPI_Status_set_elements`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Status_set_elements_c(
    st: *mut Status,
    dt: Handle,
    count: i64,
) -> c_int {
    // SAFETY: the caller's contract is `set_elements`'s.
    unsafe { set_elements("MPI_Status_set_elements_c", st, dt, count) }
}

/// `MPI_Status_set_elements_x` (§13.3, deprecated since MPI 4.1): as
/// `MPI_Status_set_elements_c`.
///
/// # Safety
///
/// As for `MPI_Status_set_elements`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Status_set_elements_x(
    st: *mut Status,
    dt: Handle,
    count: i64,
) -> c_int {
    // SAFETY: the caller's contract is `set_elements`'s.
    unsafe { set_elements("MPI_Status_set_elements_x", st, dt, count) }
}

/// `MPI_Status_set_cancelled` (§13.3): what `MPI_Test_cancelled` will say.
///
/// # Safety
///
/// `st` must be valid for reading and writing one `MPI_Status`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Status_set_cancelled(st: *mut Status, flag: c_int) -> c_int {
    boundary_any_thread("MPI_Status_set_cancelled", || {
        // SAFETY: by the caller's contract.
        let s = unsafe { ffi::inout(st) }?;
        *s = Status::new(s.source, s.tag, s.bytes() as usize, flag != 0).with_error(s.error);
        Ok(())
    })
}
