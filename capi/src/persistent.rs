//! Persistent requests (MPI 5.0 §3.9): `MPI_Send_init`, `Bsend_init`,
//! `Ssend_init`, `Rsend_init`, `Recv_init`, `MPI_Start`, `MPI_Startall`.
//!
//! A persistent request keeps the arguments of its operation and is
//! inactive until started; each `MPI_Start` begins the operation anew
//! exactly as the matching nonblocking call (`MPI_Isend`, ...) would, with
//! the arguments checked again, and a completion call (`request.rs`) makes
//! it inactive again instead of setting the handle to `MPI_REQUEST_NULL`.
//! The arguments are checked at initialisation too, so that a wrong one
//! is reported where the program gave it.

use o2g_mpi_abi_macros::export;
use std::ffi::{c_int, c_void};

use crate::error::{boundary, boundary_req, Code, Res, MPI_ERR_RANK, MPI_ERR_REQUEST};
use crate::ffi;
use crate::handles::{self, ErrMode, Handle, ReqEntry};
use crate::p2p::{self, SendMode};

/// The operation a persistent request starts.
#[derive(Clone, Copy)]
enum Kind {
    Send(SendMode),
    Recv,
}

/// A persistent request: its operation's arguments, and the operation of
/// its active phase (`None` while inactive).
pub(crate) struct Persistent {
    kind: Kind,
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    peer: c_int,
    tag: c_int,
    comm: Handle,
    /// The error mode of its communicator.
    pub(crate) mode: ErrMode,
    /// The operation started last, until a completion call reported it.
    pub(crate) active: Option<ReqEntry>,
}

impl Persistent {
    /// Starts the operation (`MPI_Start`): what the nonblocking call with
    /// the same arguments returns.
    ///
    /// # Safety
    ///
    /// The buffer given at initialisation is valid for the operation until
    /// it completes (the caller's promise at `MPI_*_init`, §3.9).
    unsafe fn start(&self) -> Res<ReqEntry> {
        let (buf, count, dt, peer, tag, comm) = (
            self.buf, self.count, self.dt, self.peer, self.tag, self.comm,
        );
        match self.kind {
            // SAFETY: the initialisation's promise, forwarded.
            Kind::Send(mode) => unsafe { p2p::start_send(mode, buf, count, dt, peer, tag, comm) },
            // SAFETY: as above.
            Kind::Recv => unsafe { p2p::start_recv(buf, count, dt, peer, tag, comm) },
        }
    }
}

/// Checks the arguments and files an inactive persistent request.
///
/// # Safety
///
/// `buf` is valid for the operation whenever the request is active;
/// `req` is valid for a write of one handle.
#[allow(clippy::too_many_arguments)]
unsafe fn init(
    name: &str,
    kind: Kind,
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    peer: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    boundary(name, comm, || {
        let c = handles::comm(comm)?;
        // The checks of the nonblocking call, without starting it.
        match kind {
            // SAFETY: only checks and makes a slice that is not kept.
            Kind::Send(_) => unsafe { p2p::check_send(buf, count, dt, peer, tag, comm) }?,
            // SAFETY: as above.
            Kind::Recv => unsafe { p2p::check_recv(buf, count, dt, peer, tag, comm) }?,
        }
        // The nonblocking call learns this from the `mpi` crate when it
        // starts; a persistent request must say it now.
        if peer >= c.comm.size() {
            return Err(Code(MPI_ERR_RANK));
        }
        let p = Persistent {
            kind,
            buf,
            count,
            dt,
            peer,
            tag,
            comm,
            mode: c.errh.get(),
            active: None,
        };
        let h = handles::new_request(ReqEntry::Persistent(Box::new(p)))?;
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(req, h) }
    })
}

/// `MPI_Send_init` (§3.9): a persistent standard-mode send.
///
/// # Safety
///
/// `buf` must hold `count` elements of `dt` whenever the request is
/// active; `req` valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Send_init(
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dst: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let kind = Kind::Send(SendMode::Standard);
    // SAFETY: the caller's contract is `init`'s (a send only reads).
    unsafe {
        init(
            "MPI_Send_init",
            kind,
            buf.cast_mut(),
            count,
            dt,
            dst,
            tag,
            comm,
            req,
        )
    }
}

/// `MPI_Bsend_init` (§3.9): a persistent buffered-mode send; each start
/// copies the message into the attached buffer (`bsend.rs`).
///
/// # Safety
///
/// As for `MPI_Send_init`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Bsend_init(
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dst: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let kind = Kind::Send(SendMode::Buffered);
    // SAFETY: the caller's contract is `init`'s (a send only reads).
    unsafe {
        init(
            "MPI_Bsend_init",
            kind,
            buf.cast_mut(),
            count,
            dt,
            dst,
            tag,
            comm,
            req,
        )
    }
}

/// `MPI_Ssend_init` (§3.9): a persistent synchronous-mode send.
///
/// # Safety
///
/// As for `MPI_Send_init`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Ssend_init(
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dst: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let kind = Kind::Send(SendMode::Synchronous);
    // SAFETY: the caller's contract is `init`'s (a send only reads).
    unsafe {
        init(
            "MPI_Ssend_init",
            kind,
            buf.cast_mut(),
            count,
            dt,
            dst,
            tag,
            comm,
            req,
        )
    }
}

/// `MPI_Rsend_init` (§3.9): a persistent ready-mode send (sent as a
/// standard-mode one, which §3.4 allows).
///
/// # Safety
///
/// As for `MPI_Send_init`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Rsend_init(
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dst: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let kind = Kind::Send(SendMode::Ready);
    // SAFETY: the caller's contract is `init`'s (a send only reads).
    unsafe {
        init(
            "MPI_Rsend_init",
            kind,
            buf.cast_mut(),
            count,
            dt,
            dst,
            tag,
            comm,
            req,
        )
    }
}

/// `MPI_Recv_init` (§3.9): a persistent receive.
///
/// # Safety
///
/// `buf` must have room for `count` elements of `dt`, untouched by the
/// caller, whenever the request is active; `req` valid for a write of one
/// handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Recv_init(
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    src: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    // SAFETY: the caller's contract is `init`'s.
    unsafe {
        init(
            "MPI_Recv_init",
            Kind::Recv,
            buf,
            count,
            dt,
            src,
            tag,
            comm,
            req,
        )
    }
}

/// Starts the persistent request behind `h`: `MPI_ERR_REQUEST` for one
/// that is not persistent or is active already.
///
/// # Safety
///
/// As for [`Persistent::start`].
unsafe fn start_one(h: Handle, mode: &mut ErrMode) -> Res<()> {
    let mut p = match handles::take_request(h)? {
        Some(ReqEntry::Persistent(p)) => p,
        Some(other) => {
            handles::put_request(h, other)?;
            return Err(Code(MPI_ERR_REQUEST));
        }
        None => return Err(Code(MPI_ERR_REQUEST)),
    };
    *mode = p.mode;
    let started = if p.active.is_some() {
        Err(Code(MPI_ERR_REQUEST))
    } else {
        // SAFETY: the caller's contract.
        unsafe { p.start() }
    };
    let r = started.map(|op| p.active = Some(op));
    handles::put_request(h, ReqEntry::Persistent(p))?;
    r
}

/// `MPI_Start` (§3.9): starts an inactive persistent request.
///
/// # Safety
///
/// `req` must be valid for reading one handle; the request's buffer is
/// valid for its operation until it completes.
#[export]
pub(crate) unsafe extern "C" fn MPI_Start(req: *mut Handle) -> c_int {
    boundary_req("MPI_Start", |mode| {
        // SAFETY: the caller passes a valid pointer.
        let h = *unsafe { ffi::inout(req) }?;
        // SAFETY: the caller's contract.
        unsafe { start_one(h, mode) }
    })
}

/// `MPI_Startall` (§3.9): starts every request of the array, in order;
/// stops at the first that fails.
///
/// # Safety
///
/// `reqs` must be valid for reading `count` handles; as for `MPI_Start`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Startall(count: c_int, reqs: *mut Handle) -> c_int {
    boundary_req("MPI_Startall", |mode| {
        let n = crate::datatype::count(count)?;
        // SAFETY: the caller passes `count` handles.
        let reqs = unsafe { ffi::array(reqs.cast_const(), n) }?;
        for &h in reqs {
            // SAFETY: the caller's contract.
            unsafe { start_one(h, mode) }?;
        }
        Ok(())
    })
}
