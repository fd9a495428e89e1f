//! Completing nonblocking operations (MPI 5.0 §3.7.3 wait and test,
//! §3.7.5 multiple completions, §3.8.4 cancel, §3.7.3 request free), on
//! the `mpi` crate's `Request`.
//!
//! `MPI_Waitall` waits for the requests one after the other: every wait
//! drives the transport's progress for all of them, so the order does not
//! matter, and each request's error lands in its own status
//! (`MPI_ERR_IN_STATUS`). `MPI_Request_free` on a receive that has not
//! completed cancels it (the `mpi` crate holds no pointer into a buffer
//! it no longer owns); on a send the data still go out.

use o2g_mpi_abi_macros::export;
use std::ffi::c_int;

use crate::error::{boundary_req, Code, Res, MPI_ERR_IN_STATUS, MPI_ERR_REQUEST, MPI_SUCCESS};
use crate::ffi;
use crate::handles::{self, ErrMode, Handle, ReqEntry};
use crate::p2p::recv_outcome;
use crate::status::{Status, ANY_TAG, PROC_NULL, UNDEFINED};

fn null() -> Handle {
    handles::handle(handles::REQUEST_NULL)
}

/// Waits for one request taken out of the table.
fn finish(entry: Option<ReqEntry>, mode: &mut ErrMode) -> (Status, Res<()>) {
    match entry {
        None => (Status::empty(), Ok(())),
        Some(ReqEntry::ProcNull) => (Status::new(PROC_NULL, ANY_TAG, 0, false), Ok(())),
        Some(ReqEntry::Live(r, m)) => {
            *mode = m;
            recv_outcome(r.wait())
        }
    }
}

/// `MPI_Wait` (§3.7.3): blocks until the request completes, then sets it
/// to `MPI_REQUEST_NULL`.
///
/// # Safety
///
/// `req` must be valid for reading and writing one handle; `st` is
/// `MPI_STATUS_IGNORE` or valid for one `MPI_Status`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Wait(req: *mut Handle, st: *mut Status) -> c_int {
    boundary_req("MPI_Wait", |mode| {
        // SAFETY: the caller passes a valid in-out pointer.
        let h = unsafe { ffi::inout(req) }?;
        let entry = handles::take_request(*h)?;
        *h = null();
        let (status, r) = finish(entry, mode);
        // SAFETY: the caller passes MPI_STATUS_IGNORE or a valid status.
        unsafe { status.store(st) };
        r
    })
}

/// `MPI_Waitall` (§3.7.5): waits for every request; with an error, returns
/// `MPI_ERR_IN_STATUS` and each status's `MPI_ERROR` says which.
///
/// # Safety
///
/// `reqs` must be valid for `count` handles; `sts` is
/// `MPI_STATUSES_IGNORE` or valid for `count` statuses.
#[export]
pub(crate) unsafe extern "C" fn MPI_Waitall(
    count: c_int,
    reqs: *mut Handle,
    sts: *mut Status,
) -> c_int {
    boundary_req("MPI_Waitall", |mode| {
        let n = crate::datatype::count(count)?;
        // SAFETY: the caller passes `count` request handles.
        let reqs = unsafe { ffi::array_mut(reqs, n) }?;
        let mut statuses = if sts.is_null() {
            None
        } else {
            // SAFETY: the caller passes `count` statuses (not ignored).
            Some(unsafe { ffi::array_mut(sts, n) }?)
        };
        // Take every request first and wait for the live ones together:
        // one at a time, each would wait behind the one before it.
        let mut others = Vec::with_capacity(n);
        let (mut live, mut modes) = (Vec::new(), Vec::new());
        for h in reqs.iter_mut() {
            match handles::take_request(*h)? {
                Some(ReqEntry::Live(r, m)) => {
                    live.push(r);
                    modes.push(m);
                    others.push(None);
                }
                // MPI_REQUEST_NULL (None) and MPI_PROC_NULL requests.
                other => others.push(Some(other)),
            }
            *h = null();
        }
        let mut outcomes = mpi::request::wait_each(live)
            .map_err(Code::from)?
            .into_iter()
            .zip(modes);
        let mut failed = false;
        for (i, other) in others.into_iter().enumerate() {
            let mut m = *mode;
            let (mut status, r) = match other {
                Some(entry) => finish(entry, &mut m),
                // A live request: the next outcome, in order.
                None => match outcomes.next() {
                    Some((outcome, em)) => {
                        m = em;
                        recv_outcome(outcome)
                    }
                    None => finish(None, &mut m),
                },
            };
            if let Err(Code(c)) = r {
                failed = true;
                *mode = m;
                status.error = c;
            } else {
                status.error = MPI_SUCCESS;
            }
            if let Some(s) = statuses.as_deref_mut() {
                s[i] = status;
            }
        }
        if failed {
            Err(Code(MPI_ERR_IN_STATUS))
        } else {
            Ok(())
        }
    })
}

/// `MPI_Waitany` (§3.7.5): waits until one request completes and returns
/// its index; `MPI_UNDEFINED` if all are `MPI_REQUEST_NULL`.
///
/// # Safety
///
/// `reqs` must be valid for `count` handles, `index` for one `int`; `st`
/// is `MPI_STATUS_IGNORE` or valid for one `MPI_Status`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Waitany(
    count: c_int,
    reqs: *mut Handle,
    index: *mut c_int,
    st: *mut Status,
) -> c_int {
    boundary_req("MPI_Waitany", |mode| {
        let n = crate::datatype::count(count)?;
        // SAFETY: the caller passes `count` request handles.
        let reqs = unsafe { ffi::array_mut(reqs, n) }?;
        // SAFETY: the caller passes a valid index pointer.
        let index = unsafe { ffi::inout(index) }?;
        let mut slots = Vec::with_capacity(n);
        let mut modes = Vec::with_capacity(n);
        let mut entries = Vec::with_capacity(n);
        for h in reqs.iter() {
            entries.push(handles::take_request(*h));
        }
        let mut done = None;
        for (i, e) in entries.into_iter().enumerate() {
            match e {
                Ok(Some(ReqEntry::Live(r, m))) => {
                    slots.push(Some(r));
                    modes.push(m);
                }
                Ok(Some(ReqEntry::ProcNull)) if done.is_none() => {
                    done = Some(i);
                    slots.push(None);
                    modes.push(*mode);
                }
                Ok(Some(ReqEntry::ProcNull)) => {
                    handles::put_request(reqs[i], ReqEntry::ProcNull)?;
                    slots.push(None);
                    modes.push(*mode);
                }
                Ok(None) | Err(_) => {
                    slots.push(None);
                    modes.push(*mode);
                }
            }
        }
        let live: Vec<bool> = slots.iter().map(Option::is_some).collect();
        let outcome = match done {
            Some(i) => Ok(Some((i, Status::new(PROC_NULL, ANY_TAG, 0, false)))),
            None => match mpi::request::wait_any(&mut slots) {
                Ok(found) => Ok(found.map(|(i, s)| (i, Status::from_mpi(&s)))),
                Err(e) => {
                    let i = (0..n).find(|&i| live[i] && slots[i].is_none());
                    Err((i, e))
                }
            },
        };
        for (i, slot) in slots.into_iter().enumerate() {
            if let Some(r) = slot {
                handles::put_request(reqs[i], ReqEntry::Live(r, modes[i]))?;
            }
        }
        match outcome {
            Ok(Some((i, status))) => {
                reqs[i] = null();
                *index = i as c_int;
                // SAFETY: the caller passes MPI_STATUS_IGNORE or a valid status.
                unsafe { status.store(st) };
                Ok(())
            }
            Ok(None) => {
                *index = UNDEFINED;
                // SAFETY: as above.
                unsafe { Status::empty().store(st) };
                Ok(())
            }
            Err((i, e)) => {
                if let Some(i) = i {
                    reqs[i] = null();
                    *index = i as c_int;
                    *mode = modes[i];
                }
                let (status, r) = recv_outcome(Err(e));
                // SAFETY: as above.
                unsafe { status.store(st) };
                r
            }
        }
    })
}

/// `MPI_Test` (§3.7.3): whether the request has completed, after one
/// round of progress; a completed request becomes `MPI_REQUEST_NULL`.
///
/// # Safety
///
/// `req` must be valid for reading and writing one handle, `flag` for one
/// `int`; `st` is `MPI_STATUS_IGNORE` or valid for one `MPI_Status`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Test(
    req: *mut Handle,
    flag: *mut c_int,
    st: *mut Status,
) -> c_int {
    boundary_req("MPI_Test", |mode| {
        // SAFETY: the caller passes valid in-out pointers.
        let (h, flag) = unsafe { (ffi::inout(req)?, ffi::inout(flag)?) };
        let (status, r) = match handles::take_request(*h)? {
            Some(ReqEntry::Live(mut r, m)) => {
                *mode = m;
                match r.test() {
                    Ok(Some(s)) => (Status::from_mpi(&s), Ok(())),
                    Ok(None) => {
                        handles::put_request(*h, ReqEntry::Live(r, m))?;
                        *flag = 0;
                        return Ok(());
                    }
                    Err(e) => recv_outcome(Err(e)),
                }
            }
            other => finish(other, mode),
        };
        *h = null();
        *flag = 1;
        // SAFETY: the caller passes MPI_STATUS_IGNORE or a valid status.
        unsafe { status.store(st) };
        r
    })
}

/// `MPI_Testall` (§3.7.5): after one round of progress, whether every
/// request has completed; if so all become `MPI_REQUEST_NULL` and the
/// statuses are filled, otherwise none is touched.
///
/// # Safety
///
/// `reqs` must be valid for `count` handles, `flag` for one `int`; `sts`
/// is `MPI_STATUSES_IGNORE` or valid for `count` statuses.
#[export]
pub(crate) unsafe extern "C" fn MPI_Testall(
    count: c_int,
    reqs: *mut Handle,
    flag: *mut c_int,
    sts: *mut Status,
) -> c_int {
    boundary_req("MPI_Testall", |mode| {
        let n = crate::datatype::count(count)?;
        // SAFETY: the caller passes `count` handles and a flag.
        let (reqs, flag) = unsafe { (ffi::array_mut(reqs, n)?, ffi::inout(flag)?) };
        let mut live = Vec::new();
        let mut at = Vec::new();
        let mut others = Vec::new();
        for (i, h) in reqs.iter().enumerate() {
            match handles::take_request(*h)? {
                Some(ReqEntry::Live(r, m)) => {
                    live.push(r);
                    at.push((i, m));
                }
                Some(ReqEntry::ProcNull) => others.push(i),
                None => {}
            }
        }
        let result = mpi::request::test_all(&mut live);
        let complete = matches!(result, Ok(Some(_)));
        if !complete {
            for (r, &(i, m)) in live.into_iter().zip(&at) {
                handles::put_request(reqs[i], ReqEntry::Live(r, m))?;
            }
            for &i in &others {
                handles::put_request(reqs[i], ReqEntry::ProcNull)?;
            }
            *flag = 0;
            if let Some(&(_, m)) = at.first() {
                *mode = m;
            }
            return result.map(drop).map_err(Code::from);
        }
        let mut statuses = vec![Status::empty(); n];
        if let Ok(Some(done)) = result {
            for (s, &(i, _)) in done.iter().zip(&at) {
                statuses[i] = Status::from_mpi(s);
            }
        }
        for &i in &others {
            statuses[i] = Status::new(PROC_NULL, ANY_TAG, 0, false);
        }
        for h in reqs.iter_mut() {
            *h = null();
        }
        *flag = 1;
        if !sts.is_null() {
            // SAFETY: the caller passes `count` statuses (not ignored).
            let out = unsafe { ffi::array_mut(sts, n) }?;
            for (o, s) in out.iter_mut().zip(statuses) {
                *o = s.with_error(o.error);
            }
        }
        Ok(())
    })
}

/// `MPI_Cancel` (§3.8.4): a receive that has not matched completes as
/// cancelled; sends are not cancelled (the data are already out).
///
/// # Safety
///
/// `req` must be valid for reading one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Cancel(req: *mut Handle) -> c_int {
    boundary_req("MPI_Cancel", |mode| {
        // SAFETY: the caller passes a valid pointer.
        let h = *unsafe { ffi::inout(req) }?;
        match handles::take_request(h)? {
            None => Err(Code(MPI_ERR_REQUEST)),
            Some(ReqEntry::Live(mut r, m)) => {
                *mode = m;
                let res = r.cancel();
                handles::put_request(h, ReqEntry::Live(r, m))?;
                Ok(res?)
            }
            Some(e) => handles::put_request(h, e),
        }
    })
}

/// `MPI_Request_free` (§3.7.3): releases the request and sets it to
/// `MPI_REQUEST_NULL` (see the module docs for a pending receive).
///
/// # Safety
///
/// `req` must be valid for reading and writing one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Request_free(req: *mut Handle) -> c_int {
    boundary_req("MPI_Request_free", |_| {
        // SAFETY: the caller passes a valid in-out pointer.
        let h = unsafe { ffi::inout(req) }?;
        handles::take_request(*h)?.ok_or(Code(MPI_ERR_REQUEST))?;
        *h = null();
        Ok(())
    })
}
