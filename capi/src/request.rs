//! Completing requests (MPI 5.0 §3.7.3 wait and test, §3.7.5 multiple
//! completions, §3.7.6 `MPI_Request_get_status`, §3.8.4 cancel, §3.7.3
//! request free), for every kind of request: operations in the `mpi`
//! crate, operations with `MPI_PROC_NULL`, persistent requests
//! (`persistent.rs`) and generalized requests (`grequest.rs`).
//!
//! Every call takes its requests out of the table into [`Taken`] slots,
//! drives them ([`drive`]: the `mpi` crate's `wait_some`/`test_some`,
//! which progress every request together, so none waits behind another)
//! and then reports the completed ones: a reported request is set to
//! `MPI_REQUEST_NULL`, except a persistent one, which stays under its
//! handle, inactive. A request that completed but was not reported (the
//! others of `MPI_Waitany`, all of an incomplete `MPI_Testall`, every one
//! `MPI_Request_get_status` looks at) goes back as complete, with its
//! status and error, for a later call to report. `MPI_REQUEST_NULL` and
//! inactive persistent requests take part as the standard says: ignored
//! by the "any" and "some" calls, an empty status from the others.
//! Every status a multiple-completion call fills in gets its `MPI_ERROR`
//! (`MPI_SUCCESS` or the request's error), as MPICH's do.
//!
//! `MPI_Request_free` on a receive that has not completed cancels it (the
//! `mpi` crate holds no pointer into a buffer it no longer owns); on a
//! send the data still go out.

use o2g_mpi_abi_macros::export;
use std::ffi::c_int;
use std::time::Duration;

use crate::error::{boundary_req, Code, Res, MPI_ERR_IN_STATUS, MPI_ERR_REQUEST, MPI_SUCCESS};
use crate::ffi;
use crate::grequest;
use crate::handles::{self, ErrMode, Handle, ReqEntry};
use crate::p2p::recv_outcome;
use crate::persistent::Persistent;
use crate::status::{Status, ANY_TAG, PROC_NULL, UNDEFINED};

fn null() -> Handle {
    handles::handle(handles::REQUEST_NULL)
}

/// How long a wait that also waits for generalized requests lets the
/// transport wait between looks at them (another thread completes them).
const GENERALIZED_POLL: Duration = Duration::from_millis(1);

/// Where a request taken out of the table stands.
enum Slot {
    /// `MPI_REQUEST_NULL`, or an inactive persistent request.
    Null,
    /// Complete: its status, error code and error mode.
    Ready(Status, c_int, ErrMode),
    /// In progress in the `mpi` crate; the status it reports if not its
    /// own.
    Live(mpi::Request<'static>, ErrMode, Option<Status>),
    /// A generalized request, under its handle value.
    Generalized(usize, ErrMode),
}

/// A completed request's status, error code and error mode.
type Outcome = (Status, c_int, ErrMode);

/// A request taken out of the table: the persistent request it belongs to,
/// if any, and where its operation stands.
struct Taken {
    shell: Option<Box<Persistent>>,
    slot: Slot,
}

impl Slot {
    fn of(entry: ReqEntry, h: Handle) -> Self {
        match entry {
            ReqEntry::Live(r, m) => Slot::Live(r, m, None),
            ReqEntry::LiveAs(r, s, m) => Slot::Live(r, m, Some(s)),
            ReqEntry::ProcNull => Slot::Ready(
                Status::new(PROC_NULL, ANY_TAG, 0, false),
                MPI_SUCCESS,
                ErrMode::Return,
            ),
            ReqEntry::Done(s, c, m) => Slot::Ready(s, c, m),
            ReqEntry::Generalized(m) => Slot::Generalized(handles::value(h), m),
            // A persistent request never holds another.
            ReqEntry::Persistent(_) => Slot::Null,
        }
    }

    fn into_entry(self) -> Option<ReqEntry> {
        match self {
            Slot::Null => None,
            Slot::Ready(s, c, m) => Some(ReqEntry::Done(s, c, m)),
            Slot::Live(r, m, None) => Some(ReqEntry::Live(r, m)),
            Slot::Live(r, m, Some(s)) => Some(ReqEntry::LiveAs(r, s, m)),
            Slot::Generalized(_, m) => Some(ReqEntry::Generalized(m)),
        }
    }

    /// Whether the operation is complete (never for `Null`).
    fn complete(&self) -> bool {
        match self {
            Slot::Ready(..) => true,
            Slot::Generalized(h, _) => grequest::is_complete(*h),
            Slot::Null | Slot::Live(..) => false,
        }
    }

    /// Whether there is an operation that has not completed.
    fn pending(&self) -> bool {
        !matches!(self, Slot::Null) && !self.complete()
    }
}

/// Takes the request behind `h` out of the table.
fn take(h: Handle) -> Res<Taken> {
    Ok(match handles::take_request(h)? {
        None => Taken {
            shell: None,
            slot: Slot::Null,
        },
        Some(ReqEntry::Persistent(mut p)) => {
            let slot = p.active.take().map_or(Slot::Null, |e| Slot::of(e, h));
            Taken {
                shell: Some(p),
                slot,
            }
        }
        Some(e) => Taken {
            shell: None,
            slot: Slot::of(e, h),
        },
    })
}

/// Takes every request of `hs`; on an invalid handle puts the ones taken
/// back and fails.
fn take_all(hs: &[Handle]) -> Res<Vec<Taken>> {
    let mut taken = Vec::with_capacity(hs.len());
    for (i, &h) in hs.iter().enumerate() {
        match take(h) {
            Ok(t) => taken.push(t),
            Err(e) => {
                restore_all(&hs[..i], taken)?;
                return Err(e);
            }
        }
    }
    Ok(taken)
}

/// Puts a request back under `h` as it stands.
fn restore(h: Handle, t: Taken) -> Res<()> {
    match t.shell {
        Some(mut p) => {
            p.active = t.slot.into_entry();
            handles::put_request(h, ReqEntry::Persistent(p))
        }
        None => match t.slot.into_entry() {
            Some(e) => handles::put_request(h, e),
            None => Ok(()),
        },
    }
}

fn restore_all(hs: &[Handle], taken: Vec<Taken>) -> Res<()> {
    for (&h, t) in hs.iter().zip(taken) {
        restore(h, t)?;
    }
    Ok(())
}

/// Reports a request: its status, error code and error mode, `None` for
/// `MPI_REQUEST_NULL` and inactive requests. A completed request is
/// retired: `*h` becomes `MPI_REQUEST_NULL`, or a persistent one goes back
/// inactive; a generalized one is queried and freed (§13.2).
fn report(h: &mut Handle, t: Taken) -> Res<Option<Outcome>> {
    let out = match t.slot {
        Slot::Null => None,
        Slot::Ready(s, c, m) => Some((s, c, m)),
        Slot::Generalized(g, m) => {
            let (s, c) = grequest::finish(g);
            Some((s, c, m))
        }
        Slot::Live(..) => {
            // Not complete: callers report complete slots only.
            restore(*h, t)?;
            return Ok(None);
        }
    };
    match t.shell {
        Some(p) => handles::put_request(*h, ReqEntry::Persistent(p))?,
        None if out.is_some() => *h = null(),
        None => {}
    }
    Ok(out)
}

/// The status of a completed request without retiring it
/// (`MPI_Request_get_status`): a generalized request is queried, not
/// freed.
fn peek(t: &Taken) -> Option<Outcome> {
    match &t.slot {
        Slot::Ready(s, c, m) => Some((*s, *c, *m)),
        Slot::Generalized(g, m) if grequest::is_complete(*g) => {
            let (s, c) = grequest::query(*g);
            Some((s, c, *m))
        }
        _ => None,
    }
}

/// What a call waits for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Need {
    /// One request complete, or none active.
    Any,
    /// Every active request complete.
    All,
}

/// Drives the requests: with `block`, until `need` is met; without, one
/// round of progress (none if `need` is met already). Every operation
/// that completes meanwhile becomes `Slot::Ready`.
fn drive(taken: &mut [Taken], need: Need, block: bool) -> Res<()> {
    let mut at = Vec::new();
    let mut live = Vec::new();
    let mut modes = Vec::new();
    for (i, t) in taken.iter_mut().enumerate() {
        if let Slot::Live(..) = t.slot {
            if let Slot::Live(r, m, s) = std::mem::replace(&mut t.slot, Slot::Null) {
                at.push(i);
                live.push(Some(r));
                modes.push((m, s));
            }
        }
    }
    let mut rounds = 0;
    let result = loop {
        let live_pending = live.iter().flatten().count();
        let gen_pending = taken.iter().filter(|t| t.slot.pending()).count();
        let complete = taken.iter().filter(|t| t.slot.complete()).count();
        let met = match need {
            Need::Any => complete > 0 || live_pending + gen_pending == 0,
            Need::All => live_pending + gen_pending == 0,
        };
        if met || (!block && rounds > 0) {
            break Ok(());
        }
        rounds += 1;
        let got = if !block {
            mpi::request::test_some(&mut live)
        } else if gen_pending > 0 {
            if live_pending == 0 {
                // Nothing of the transport's to wait for, but the process
                // keeps receiving and advancing collectives meanwhile.
                handles::comm(handles::handle(handles::COMM_WORLD))?
                    .comm
                    .poll(GENERALIZED_POLL)?;
            }
            mpi::request::test_some_waiting(&mut live, GENERALIZED_POLL)
        } else {
            mpi::request::wait_some(&mut live)
        };
        match got {
            Ok(done) => {
                for (k, outcome) in done {
                    let (m, instead) = modes[k];
                    let (status, r) = recv_outcome(outcome);
                    let code = r.err().map_or(MPI_SUCCESS, |Code(c)| c);
                    let status = match instead {
                        Some(s) if code == MPI_SUCCESS => s,
                        _ => status,
                    };
                    taken[at[k]].slot = Slot::Ready(status, code, m);
                }
            }
            Err(e) => break Err(Code::from(e)),
        }
    };
    for ((i, r), (m, s)) in at.into_iter().zip(live).zip(modes) {
        if let Some(r) = r {
            taken[i].slot = Slot::Live(r, m, s);
        }
    }
    result
}

/// A single completion's result: the error code as the call's.
fn single(code: c_int, m: ErrMode, mode: &mut ErrMode) -> Res<()> {
    *mode = m;
    if code == MPI_SUCCESS {
        Ok(())
    } else {
        Err(Code(code))
    }
}

/// `MPI_Wait` and `MPI_Test`.
///
/// # Safety
///
/// `req` valid for reading and writing one handle, a non-null `flag` for
/// one `int`; `st` is `MPI_STATUS_IGNORE` or valid for one `MPI_Status`.
unsafe fn wait_or_test(
    req: *mut Handle,
    flag: Option<&mut c_int>,
    st: *mut Status,
    mode: &mut ErrMode,
) -> Res<()> {
    // SAFETY: the caller passes a valid in-out pointer.
    let h = unsafe { ffi::inout(req) }?;
    let mut t = [take(*h)?];
    let block = flag.is_none();
    if let Err(e) = drive(&mut t, Need::Any, block) {
        let [t] = t;
        restore(*h, t)?;
        return Err(e);
    }
    let [t] = t;
    if t.slot.pending() {
        restore(*h, t)?;
        if let Some(f) = flag {
            *f = 0;
        }
        return Ok(());
    }
    let (status, code, m) = report(h, t)?.unwrap_or((Status::empty(), MPI_SUCCESS, *mode));
    if let Some(f) = flag {
        *f = 1;
    }
    // SAFETY: the caller passes MPI_STATUS_IGNORE or a valid status.
    unsafe { status.store(st) };
    single(code, m, mode)
}

/// `MPI_Wait` (§3.7.3): blocks until the request completes, then sets it
/// to `MPI_REQUEST_NULL` (a persistent one becomes inactive); at once with
/// the empty status for `MPI_REQUEST_NULL` or an inactive request.
///
/// # Safety
///
/// `req` must be valid for reading and writing one handle; `st` is
/// `MPI_STATUS_IGNORE` or valid for one `MPI_Status`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Wait(req: *mut Handle, st: *mut Status) -> c_int {
    boundary_req("MPI_Wait", |mode| {
        // SAFETY: the caller's contract is `wait_or_test`'s.
        unsafe { wait_or_test(req, None, st, mode) }
    })
}

/// `MPI_Test` (§3.7.3): whether the request has completed, after one
/// round of progress; a completed request is retired as by `MPI_Wait`.
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
        // SAFETY: the caller passes a valid flag pointer.
        let flag = unsafe { ffi::inout(flag) }?;
        // SAFETY: the caller's contract is `wait_or_test`'s.
        unsafe { wait_or_test(req, Some(flag), st, mode) }
    })
}

/// The statuses argument of a multiple-completion call: `None` for
/// `MPI_STATUSES_IGNORE`.
///
/// # Safety
///
/// A non-null `sts` is valid for `n` statuses.
unsafe fn statuses<'a>(sts: *mut Status, n: usize) -> Res<Option<&'a mut [Status]>> {
    if sts.is_null() {
        Ok(None)
    } else {
        // SAFETY: by the caller's contract.
        Ok(Some(unsafe { ffi::array_mut(sts, n) }?))
    }
}

/// `MPI_Waitall` and `MPI_Testall`: with `flag`, only if every request is
/// complete (otherwise none is touched).
///
/// # Safety
///
/// `reqs` valid for `count` handles; `sts` is `MPI_STATUSES_IGNORE` or
/// valid for `count` statuses.
unsafe fn all(
    count: c_int,
    reqs: *mut Handle,
    flag: Option<&mut c_int>,
    sts: *mut Status,
    mode: &mut ErrMode,
) -> Res<()> {
    let n = crate::datatype::count(count)?;
    // SAFETY: the caller passes `count` request handles.
    let reqs = unsafe { ffi::array_mut(reqs, n) }?;
    // SAFETY: the caller passes MPI_STATUSES_IGNORE or `count` statuses.
    let statuses = unsafe { statuses(sts, n) }?;
    let mut taken = take_all(reqs)?;
    let block = flag.is_none();
    let driven = drive(&mut taken, Need::All, block);
    if driven.is_err() || taken.iter().any(|t| t.slot.pending()) {
        restore_all(reqs, taken)?;
        if let Some(f) = flag {
            *f = 0;
        }
        return driven;
    }
    let mut out = Vec::with_capacity(n);
    let mut failed = false;
    for (h, t) in reqs.iter_mut().zip(taken) {
        let (s, c, m) = report(h, t)?.unwrap_or((Status::empty(), MPI_SUCCESS, *mode));
        if c != MPI_SUCCESS && !failed {
            failed = true;
            *mode = m;
        }
        out.push(s.with_error(c));
    }
    if let Some(f) = flag {
        *f = 1;
    }
    if let Some(sts) = statuses {
        for (o, s) in sts.iter_mut().zip(out) {
            *o = s;
        }
    }
    if failed {
        Err(Code(MPI_ERR_IN_STATUS))
    } else {
        Ok(())
    }
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
        // SAFETY: the caller's contract is `all`'s.
        unsafe { all(count, reqs, None, sts, mode) }
    })
}

/// `MPI_Testall` (§3.7.5): after one round of progress, whether every
/// request has completed; if so all are retired and the statuses filled,
/// otherwise none is touched.
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
        // SAFETY: the caller passes a valid flag pointer.
        let flag = unsafe { ffi::inout(flag) }?;
        // SAFETY: the caller's contract is `all`'s.
        unsafe { all(count, reqs, Some(flag), sts, mode) }
    })
}

/// `MPI_Waitany` and `MPI_Testany`: the index of one completed request,
/// `MPI_UNDEFINED` if none is active (or, testing, none completed).
///
/// # Safety
///
/// `reqs` valid for `count` handles, `index` for one `int`; `st` is
/// `MPI_STATUS_IGNORE` or valid for one `MPI_Status`.
unsafe fn any(
    count: c_int,
    reqs: *mut Handle,
    index: *mut c_int,
    flag: Option<&mut c_int>,
    st: *mut Status,
    mode: &mut ErrMode,
) -> Res<()> {
    let n = crate::datatype::count(count)?;
    // SAFETY: the caller passes `count` request handles and an index.
    let (reqs, index) = unsafe { (ffi::array_mut(reqs, n)?, ffi::inout(index)?) };
    let mut taken = take_all(reqs)?;
    let driven = drive(&mut taken, Need::Any, flag.is_none());
    let found = match driven {
        Ok(()) => taken.iter().position(|t| t.slot.complete()),
        Err(_) => None,
    };
    let active = taken.iter().any(|t| !matches!(t.slot, Slot::Null));
    let mut outcome = None;
    for (i, (h, t)) in reqs.iter_mut().zip(taken).enumerate() {
        if Some(i) == found {
            outcome = report(h, t)?;
        } else {
            restore(*h, t)?;
        }
    }
    driven?;
    *index = found.map_or(UNDEFINED, |i| i as c_int);
    let done = found.is_some() || !active;
    if let Some(f) = flag {
        *f = c_int::from(done);
    }
    if done {
        let (status, code, m) = outcome.unwrap_or((Status::empty(), MPI_SUCCESS, *mode));
        // SAFETY: the caller passes MPI_STATUS_IGNORE or a valid status.
        unsafe { status.store(st) };
        return single(code, m, mode);
    }
    Ok(())
}

/// `MPI_Waitany` (§3.7.5): waits until one request completes, retires it
/// and returns its index; `MPI_UNDEFINED` and the empty status if none is
/// active.
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
        // SAFETY: the caller's contract is `any`'s.
        unsafe { any(count, reqs, index, None, st, mode) }
    })
}

/// `MPI_Testany` (§3.7.5): after one round of progress, retires one
/// completed request and returns its index with `flag` set; `flag` set,
/// `MPI_UNDEFINED` and the empty status if none is active; `flag` clear
/// and `MPI_UNDEFINED` otherwise.
///
/// # Safety
///
/// As for `MPI_Waitany`; `flag` valid for one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Testany(
    count: c_int,
    reqs: *mut Handle,
    index: *mut c_int,
    flag: *mut c_int,
    st: *mut Status,
) -> c_int {
    boundary_req("MPI_Testany", |mode| {
        // SAFETY: the caller passes a valid flag pointer.
        let flag = unsafe { ffi::inout(flag) }?;
        // SAFETY: the caller's contract is `any`'s.
        unsafe { any(count, reqs, index, Some(flag), st, mode) }
    })
}

/// `MPI_Waitsome` and `MPI_Testsome`: every completed request, retired;
/// `MPI_UNDEFINED` if none is active.
///
/// # Safety
///
/// `reqs` valid for `incount` handles, `outcount` for one `int`,
/// `indices` for `incount` `int`s; `sts` is `MPI_STATUSES_IGNORE` or
/// valid for `incount` statuses.
unsafe fn some(
    incount: c_int,
    reqs: *mut Handle,
    outcount: *mut c_int,
    indices: *mut c_int,
    sts: *mut Status,
    block: bool,
    mode: &mut ErrMode,
) -> Res<()> {
    let n = crate::datatype::count(incount)?;
    // SAFETY: the caller passes `incount` handles and `int`s, and an int.
    let (reqs, outcount, indices) = unsafe {
        (
            ffi::array_mut(reqs, n)?,
            ffi::inout(outcount)?,
            ffi::array_mut(indices, n)?,
        )
    };
    // SAFETY: the caller passes MPI_STATUSES_IGNORE or `incount` statuses.
    let mut statuses = unsafe { statuses(sts, n) }?;
    let mut taken = take_all(reqs)?;
    let driven = drive(&mut taken, Need::Any, block);
    let active = taken.iter().any(|t| !matches!(t.slot, Slot::Null));
    let mut done = Vec::new();
    for (i, (h, t)) in reqs.iter_mut().zip(taken).enumerate() {
        if driven.is_ok() && t.slot.complete() {
            if let Some(out) = report(h, t)? {
                done.push((i, out));
            }
        } else {
            restore(*h, t)?;
        }
    }
    driven?;
    if !active {
        *outcount = UNDEFINED;
        return Ok(());
    }
    *outcount = done.len() as c_int;
    let failed = done.iter().any(|(_, (_, c, _))| *c != MPI_SUCCESS);
    for (k, (i, (s, c, m))) in done.into_iter().enumerate() {
        indices[k] = i as c_int;
        if c != MPI_SUCCESS && *mode != m {
            *mode = m;
        }
        if let Some(sts) = statuses.as_deref_mut() {
            sts[k] = s.with_error(c);
        }
    }
    if failed {
        Err(Code(MPI_ERR_IN_STATUS))
    } else {
        Ok(())
    }
}

/// `MPI_Waitsome` (§3.7.5): waits until at least one request completes,
/// then retires every completed one and returns how many and which;
/// `MPI_UNDEFINED` if none is active. With an error, `MPI_ERR_IN_STATUS`
/// and each status's `MPI_ERROR`.
///
/// # Safety
///
/// `reqs` must be valid for `incount` handles, `outcount` for one `int`,
/// `indices` for `incount` `int`s; `sts` is `MPI_STATUSES_IGNORE` or
/// valid for `incount` statuses.
#[export]
pub(crate) unsafe extern "C" fn MPI_Waitsome(
    incount: c_int,
    reqs: *mut Handle,
    outcount: *mut c_int,
    indices: *mut c_int,
    sts: *mut Status,
) -> c_int {
    boundary_req("MPI_Waitsome", |mode| {
        // SAFETY: the caller's contract is `some`'s.
        unsafe { some(incount, reqs, outcount, indices, sts, true, mode) }
    })
}

/// `MPI_Testsome` (§3.7.5): as `MPI_Waitsome` after one round of progress
/// without waiting; `outcount` 0 if none completed.
///
/// # Safety
///
/// As for `MPI_Waitsome`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Testsome(
    incount: c_int,
    reqs: *mut Handle,
    outcount: *mut c_int,
    indices: *mut c_int,
    sts: *mut Status,
) -> c_int {
    boundary_req("MPI_Testsome", |mode| {
        // SAFETY: the caller's contract is `some`'s.
        unsafe { some(incount, reqs, outcount, indices, sts, false, mode) }
    })
}

/// Takes the requests of a `MPI_Request_get_status*` call, drives them
/// one round, looks at each, and puts them all back, complete or not.
/// What each looks like: `None` for a pending one, the empty status for
/// `MPI_REQUEST_NULL` and inactive requests (`active` false).
fn look(hs: &[Handle], need: Need) -> Res<Vec<(bool, Option<Outcome>)>> {
    let mut taken = take_all(hs)?;
    let driven = drive(&mut taken, need, false);
    let mut seen = Vec::with_capacity(hs.len());
    for (&h, t) in hs.iter().zip(taken) {
        let active = !matches!(t.slot, Slot::Null);
        let out = if active {
            peek(&t)
        } else {
            Some((Status::empty(), MPI_SUCCESS, ErrMode::Return))
        };
        seen.push((active, out));
        restore(h, t)?;
    }
    driven.map(|()| seen)
}

/// `MPI_Request_get_status` (§3.7.3): whether the request has completed,
/// and its status, without retiring it; `flag` set and the empty status
/// for `MPI_REQUEST_NULL` or an inactive request.
///
/// # Safety
///
/// `flag` must be valid for one `int`; `st` is `MPI_STATUS_IGNORE` or
/// valid for one `MPI_Status`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Request_get_status(
    req: Handle,
    flag: *mut c_int,
    st: *mut Status,
) -> c_int {
    boundary_req("MPI_Request_get_status", |mode| {
        // SAFETY: the caller passes a valid flag pointer.
        let flag = unsafe { ffi::inout(flag) }?;
        let (_, out) = look(&[req], Need::Any)?.remove(0);
        *flag = c_int::from(out.is_some());
        if let Some((s, c, m)) = out {
            // SAFETY: the caller passes MPI_STATUS_IGNORE or a valid status.
            unsafe { s.store(st) };
            return single(c, m, mode);
        }
        Ok(())
    })
}

/// `MPI_Request_get_status_any` (MPI 5.0 §3.7.6): as `MPI_Testany`
/// without retiring the request it reports.
///
/// # Safety
///
/// `reqs` must be valid for reading `count` handles, `index` and `flag`
/// for one `int` each; `st` is `MPI_STATUS_IGNORE` or valid for one
/// `MPI_Status`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Request_get_status_any(
    count: c_int,
    reqs: *const Handle,
    index: *mut c_int,
    flag: *mut c_int,
    st: *mut Status,
) -> c_int {
    boundary_req("MPI_Request_get_status_any", |mode| {
        let n = crate::datatype::count(count)?;
        // SAFETY: the caller passes `count` handles and two ints.
        let (reqs, index, flag) =
            unsafe { (ffi::array(reqs, n)?, ffi::inout(index)?, ffi::inout(flag)?) };
        let seen = look(reqs, Need::Any)?;
        let found = seen.iter().position(|(a, out)| *a && out.is_some());
        let active = seen.iter().any(|(a, _)| *a);
        *index = found.map_or(UNDEFINED, |i| i as c_int);
        *flag = c_int::from(found.is_some() || !active);
        if *flag == 0 {
            return Ok(());
        }
        let (s, c, m) =
            found
                .and_then(|i| seen[i].1)
                .unwrap_or((Status::empty(), MPI_SUCCESS, *mode));
        // SAFETY: the caller passes MPI_STATUS_IGNORE or a valid status.
        unsafe { s.store(st) };
        single(c, m, mode)
    })
}

/// `MPI_Request_get_status_all` (MPI 5.0 §3.7.6): as `MPI_Testall`
/// without retiring the requests.
///
/// # Safety
///
/// `reqs` must be valid for reading `count` handles, `flag` for one
/// `int`; `sts` is `MPI_STATUSES_IGNORE` or valid for `count` statuses.
#[export]
pub(crate) unsafe extern "C" fn MPI_Request_get_status_all(
    count: c_int,
    reqs: *const Handle,
    flag: *mut c_int,
    sts: *mut Status,
) -> c_int {
    boundary_req("MPI_Request_get_status_all", |mode| {
        let n = crate::datatype::count(count)?;
        // SAFETY: the caller passes `count` handles and an int.
        let (reqs, flag) = unsafe { (ffi::array(reqs, n)?, ffi::inout(flag)?) };
        // SAFETY: the caller passes MPI_STATUSES_IGNORE or `count` statuses.
        let statuses = unsafe { statuses(sts, n) }?;
        let seen = look(reqs, Need::All)?;
        if seen.iter().any(|(_, out)| out.is_none()) {
            *flag = 0;
            return Ok(());
        }
        *flag = 1;
        let outs: Vec<_> = seen.into_iter().filter_map(|(_, out)| out).collect();
        let failed = outs.iter().find(|(_, c, _)| *c != MPI_SUCCESS).map(|o| o.2);
        if let Some(sts) = statuses {
            for (o, (s, c, _)) in sts.iter_mut().zip(&outs) {
                *o = s.with_error(*c);
            }
        }
        match failed {
            Some(m) => {
                *mode = m;
                Err(Code(MPI_ERR_IN_STATUS))
            }
            None => Ok(()),
        }
    })
}

/// `MPI_Request_get_status_some` (MPI 5.0 §3.7.6): as `MPI_Testsome`
/// without retiring the requests it reports.
///
/// # Safety
///
/// `reqs` must be valid for reading `incount` handles, `outcount` for one
/// `int`, `indices` for `incount`; `sts` is `MPI_STATUSES_IGNORE` or
/// valid for `incount` statuses.
#[export]
pub(crate) unsafe extern "C" fn MPI_Request_get_status_some(
    incount: c_int,
    reqs: *const Handle,
    outcount: *mut c_int,
    indices: *mut c_int,
    sts: *mut Status,
) -> c_int {
    boundary_req("MPI_Request_get_status_some", |mode| {
        let n = crate::datatype::count(incount)?;
        // SAFETY: the caller passes `incount` handles and ints, and an int.
        let (reqs, outcount, indices) = unsafe {
            (
                ffi::array(reqs, n)?,
                ffi::inout(outcount)?,
                ffi::array_mut(indices, n)?,
            )
        };
        // SAFETY: the caller passes MPI_STATUSES_IGNORE or `incount` statuses.
        let mut statuses = unsafe { statuses(sts, n) }?;
        let seen = look(reqs, Need::Any)?;
        if !seen.iter().any(|(a, _)| *a) {
            *outcount = UNDEFINED;
            return Ok(());
        }
        let done: Vec<_> = seen
            .into_iter()
            .enumerate()
            .filter_map(|(i, (a, out))| out.filter(|_| a).map(|o| (i, o)))
            .collect();
        *outcount = done.len() as c_int;
        let failed = done
            .iter()
            .find(|(_, (_, c, _))| *c != MPI_SUCCESS)
            .map(|d| d.1 .2);
        for (k, (i, (s, c, _))) in done.into_iter().enumerate() {
            indices[k] = i as c_int;
            if let Some(sts) = statuses.as_deref_mut() {
                sts[k] = s.with_error(c);
            }
        }
        match failed {
            Some(m) => {
                *mode = m;
                Err(Code(MPI_ERR_IN_STATUS))
            }
            None => Ok(()),
        }
    })
}

/// `MPI_Cancel` (§3.8.4): a receive that has not matched completes as
/// cancelled; sends are not cancelled (the data are already out); a
/// generalized request's cancel function is called (§13.2).
///
/// # Safety
///
/// `req` must be valid for reading one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Cancel(req: *mut Handle) -> c_int {
    boundary_req("MPI_Cancel", |mode| {
        // SAFETY: the caller passes a valid pointer.
        let h = *unsafe { ffi::inout(req) }?;
        if handles::value(h) == handles::REQUEST_NULL {
            return Err(Code(MPI_ERR_REQUEST));
        }
        let mut t = take(h)?;
        let res = match &mut t.slot {
            Slot::Live(r, m, _) => {
                *mode = *m;
                r.cancel().map_err(Code::from)
            }
            Slot::Generalized(g, m) => {
                *mode = *m;
                grequest::cancel(*g)
            }
            Slot::Null | Slot::Ready(..) => Ok(()),
        };
        restore(h, t)?;
        res
    })
}

/// `MPI_Request_free` (§3.7.3): releases the request and sets it to
/// `MPI_REQUEST_NULL` (see the module docs for a pending receive); a
/// generalized request is freed once complete (§13.2).
///
/// # Safety
///
/// `req` must be valid for reading and writing one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Request_free(req: *mut Handle) -> c_int {
    boundary_req("MPI_Request_free", |_| {
        // SAFETY: the caller passes a valid in-out pointer.
        let h = unsafe { ffi::inout(req) }?;
        let entry = handles::take_request(*h)?.ok_or(Code(MPI_ERR_REQUEST))?;
        if let ReqEntry::Generalized(_) = entry {
            grequest::release(handles::value(*h));
        }
        *h = null();
        Ok(())
    })
}
