//! Persistent requests (MPI 5.0 §3.9): `MPI_Send_init`, `Bsend_init`,
//! `Ssend_init`, `Rsend_init`, `Recv_init` (and their `_c` forms),
//! `MPI_Start`, `MPI_Startall`.
//!
//! A persistent request keeps the arguments of its operation, checked at
//! initialisation, with the datatype and the communicator they name
//! resolved: the program may free either while the request exists
//! (§2.5.1: MPI keeps an object in use alive), and every later
//! `MPI_Start` still uses it. It is inactive until started; each
//! `MPI_Start` begins the operation anew exactly as the matching
//! nonblocking call (`MPI_Isend`, ...) would, and a completion call
//! (`request.rs`) makes it inactive again instead of setting the handle
//! to `MPI_REQUEST_NULL`.

use std::ffi::{c_int, c_void};
use std::rc::Rc;
use std::sync::Arc;

use o2g_mpi_abi_macros::export;

use crate::buffer;
use crate::datatype::{Count, Datatype};
use crate::error::{boundary, boundary_req, Code, Res, MPI_ERR_RANK, MPI_ERR_REQUEST};
use crate::ffi::{self, int_and_c};
use crate::handles::{self, CommEntry, ErrMode, Handle, ReqEntry};
use crate::p2p::{self, Peer, SendMode};

/// The operation a persistent request starts.
#[derive(Clone, Copy)]
enum Kind {
    Send(SendMode),
    Recv,
}

/// A persistent request: its operation's checked arguments, and the
/// operation of its active phase (`None` while inactive).
pub(crate) struct Persistent {
    kind: Kind,
    buf: *mut c_void,
    /// `count` elements of `dt`.
    count: usize,
    dt: Arc<Datatype>,
    peer: Peer,
    tag: i32,
    comm: Rc<CommEntry>,
    /// The error mode of its communicator.
    pub(crate) mode: ErrMode,
    /// The operation started last, until a completion call reported it.
    pub(crate) active: Option<ReqEntry>,
    /// A persistent collective's start (`pcoll.rs`), which replaces the
    /// point-to-point operation above.
    coll: Option<CollStart>,
}

/// What starts a persistent collective: the nonblocking collective with
/// the arguments of its `MPI_*_init` call (`pcoll.rs`).
pub(crate) type CollStart = Box<crate::icoll::Run>;

/// Files an inactive persistent collective request on `comm`, started
/// by `f`; its handle.
pub(crate) fn collective(comm: Rc<CommEntry>, f: CollStart) -> Res<Handle> {
    let p = Persistent {
        kind: Kind::Recv,
        buf: std::ptr::null_mut(),
        count: 0,
        dt: crate::datatype::resolve(handles::handle(0x247))?,
        peer: Peer::Null,
        tag: 0,
        mode: comm.errh.get(),
        comm,
        active: None,
        coll: Some(f),
    };
    handles::new_request(ReqEntry::Persistent(Box::new(p)))
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
        let (c, d, n, buf) = (&self.comm, &self.dt, self.count, self.buf);
        if let Some(f) = &self.coll {
            return Ok(ReqEntry::Live(f(c)?, self.mode));
        }
        match self.kind {
            Kind::Send(mode) => {
                // SAFETY: the initialisation's promise: `buf` holds the
                // elements until the send completes.
                let data = unsafe { buffer::send_typed(d, n, buf) }?;
                // SAFETY: as above.
                unsafe { p2p::start_send_data(mode, c, data, self.tag, self.peer) }
            }
            // SAFETY: as above, for the receive's elements.
            Kind::Recv => unsafe { p2p::start_recv(c, buf, d.clone(), n, self.peer, self.tag) },
        }
    }
}

/// Checks the arguments and files an inactive persistent request.
///
/// # Safety
///
/// `buf` is valid for the operation whenever the request is active
/// (for writes too if it is a receive); `req` is valid for a write of
/// one handle.
#[allow(clippy::too_many_arguments)]
unsafe fn init<N: Count>(
    name: &str,
    kind: Kind,
    buf: *const c_void,
    count: N,
    dt: Handle,
    peer: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let buf = buf.cast_mut();
    boundary(name, comm, || {
        // The checks of the nonblocking call, without starting it.
        let (c, tag, peer) = match kind {
            Kind::Send(_) => {
                // SAFETY: only checks and makes a slice that is not kept.
                let (c, _, tag, to) = unsafe { p2p::outgoing(comm, buf, count, dt, peer, tag) }?;
                (c, tag, to)
            }
            Kind::Recv => {
                // SAFETY: as above.
                let (c, _, tag, from) = unsafe { p2p::incoming(comm, buf, count, dt, peer, tag) }?;
                (c, tag, from)
            }
        };
        // The nonblocking call learns this from the `mpi` crate when it
        // starts; a persistent request must say it now.
        if matches!(peer, Peer::Rank(r) if r >= c.comm.target_size()) {
            return Err(Code(MPI_ERR_RANK));
        }
        let (dt, count) = buffer::typed(count, dt)?;
        let p = Persistent {
            kind,
            buf,
            count,
            dt,
            peer,
            tag,
            mode: c.errh.get(),
            comm: c,
            active: None,
            coll: None,
        };
        let h = handles::new_request(ReqEntry::Persistent(Box::new(p)))?;
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(req, h) }
    })
}

int_and_c! {
    (
        buf: [*const c_void], count: [N], dt: [Handle], dst: [c_int], tag: [c_int],
        comm: [Handle], req: [*mut Handle],
    ) => init;
    /// `MPI_Send_init` (§3.9): a persistent standard-mode send.
    fn MPI_Send_init / MPI_Send_init_c(Kind::Send(SendMode::Standard));
    /// `MPI_Bsend_init` (§3.9): a persistent buffered-mode send; each start
    /// copies the message into the attached buffer (`bsend.rs`).
    fn MPI_Bsend_init / MPI_Bsend_init_c(Kind::Send(SendMode::Buffered));
    /// `MPI_Ssend_init` (§3.9): a persistent synchronous-mode send.
    fn MPI_Ssend_init / MPI_Ssend_init_c(Kind::Send(SendMode::Synchronous));
    /// `MPI_Rsend_init` (§3.9): a persistent ready-mode send (sent as a
    /// standard-mode one, which §3.4 allows).
    fn MPI_Rsend_init / MPI_Rsend_init_c(Kind::Send(SendMode::Ready));
}

int_and_c! {
    /// `MPI_Recv_init` (§3.9): a persistent receive; `buf` must have room
    /// for `count` elements of `dt`, untouched by the caller, whenever the
    /// request is active.
    fn MPI_Recv_init / MPI_Recv_init_c(
        buf: [*mut c_void], count: [N], dt: [Handle], src: [c_int], tag: [c_int],
        comm: [Handle], req: [*mut Handle],
    ) => init(Kind::Recv);
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
