//! Handles (MPI 5.0 §20.3, "Handles" of the standard ABI) and the tables
//! behind them.
//!
//! In the standard ABI every handle type (`MPI_Comm`, `MPI_Request`, …) is
//! a pointer to an incomplete struct. The predefined handles are the small
//! integers the standard fixes (`MPI_COMM_WORLD` is `0x101`, all of them
//! below `0x400`); handles this library creates are integers from
//! [`FIRST_DYNAMIC`] up, never dereferenced, so C sees opaque pointers and
//! Rust only compares values.
//!
//! Communicators and requests hold the `mpi` crate's objects, which are
//! single-threaded (`Rc`), so their tables live in one [`State`] that only
//! a thread allowed to call MPI touches, one at a time
//! ([`crate::thread::may_use_state`]); every plain-data object
//! (datatypes, operations, ...) lives in a concurrent
//! [`crate::table::Table`] instead, ready for threads. The
//! state is never borrowed while control is in the `mpi` crate or in user
//! code (callers clone an `Rc` out first), so a user reduction function
//! may itself call MPI.

use std::cell::{Cell, RefCell};
use std::ffi::c_void;
use std::rc::Rc;

use foldhash::{HashMap, HashMapExt};

use crate::error::{Code, Res, MPI_ERR_COMM, MPI_ERR_INTERN, MPI_ERR_OTHER, MPI_ERR_REQUEST};

/// Every handle type of the standard ABI, as Rust sees it.
pub(crate) type Handle = *mut c_void;

/// The integer value of a handle.
pub(crate) fn value(h: Handle) -> usize {
    h.addr()
}

/// The handle with integer value `v` (it is never dereferenced).
pub(crate) fn handle(v: usize) -> Handle {
    std::ptr::without_provenance_mut(v)
}

/// `MPI_COMM_NULL`.
pub(crate) const COMM_NULL: usize = 0x100;
/// `MPI_COMM_WORLD`.
pub(crate) const COMM_WORLD: usize = 0x101;
/// `MPI_COMM_SELF`.
pub(crate) const COMM_SELF: usize = 0x102;
/// `MPI_REQUEST_NULL`.
pub(crate) const REQUEST_NULL: usize = 0x180;
/// `MPI_ERRHANDLER_NULL`.
pub(crate) const ERRHANDLER_NULL: usize = 0x140;
/// `MPI_ERRORS_ARE_FATAL`.
pub(crate) const ERRORS_ARE_FATAL: usize = 0x141;
/// `MPI_ERRORS_ABORT`.
pub(crate) const ERRORS_ABORT: usize = 0x142;
/// `MPI_ERRORS_RETURN`.
pub(crate) const ERRORS_RETURN: usize = 0x143;
/// The first value of a handle this library creates.
pub(crate) const FIRST_DYNAMIC: usize = 0x10000;

/// What an error raised on a communicator does (§9.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ErrMode {
    /// `MPI_ERRORS_ARE_FATAL` (the default).
    Fatal,
    /// `MPI_ERRORS_ABORT`: ends the job as `Fatal` does (o2g aborts
    /// the whole job, which covers the communicator's processes), kept
    /// apart so that `MPI_Comm_get_errhandler` returns the handle set.
    Abort,
    /// `MPI_ERRORS_RETURN`: the call returns the error code.
    Return,
    /// A handler made by `MPI_Comm_create_errhandler` (`errhandler.rs`):
    /// the value of its handle, and of the communicator it is set on
    /// (which the handler is called with).
    User { errh: usize, comm: usize },
}

impl ErrMode {
    /// This mode as set on the communicator with handle value `comm`.
    pub(crate) fn on(self, comm: usize) -> Self {
        match self {
            ErrMode::User { errh, .. } => ErrMode::User { errh, comm },
            m => m,
        }
    }
}

/// A communicator handle's object.
pub(crate) struct CommEntry {
    pub(crate) comm: mpi::Communicator,
    pub(crate) errh: Cell<ErrMode>,
    /// Its plain data (name, attributes, info, topology), `Send + Sync`.
    pub(crate) meta: std::sync::Arc<crate::comm::CommMeta>,
}

/// A request handle's object.
pub(crate) enum ReqEntry {
    /// An operation in the `mpi` crate, with the error mode of its
    /// communicator.
    Live(mpi::Request<'static>, ErrMode),
    /// An operation with `MPI_PROC_NULL`: complete at once (§3.11).
    ProcNull,
    /// A complete operation not reported yet: its status, its error code
    /// and the error mode of its communicator (a buffered send, or a
    /// request a multiple-completion call saw complete but did not
    /// report).
    Done(crate::status::Status, std::ffi::c_int, ErrMode),
    /// An operation in the `mpi` crate whose status, when it succeeds, is
    /// this one (an `MPI_Isendrecv` receiving from `MPI_PROC_NULL`).
    LiveAs(mpi::Request<'static>, crate::status::Status, ErrMode),
    /// A persistent request (§3.9, `persistent.rs`).
    Persistent(Box<crate::persistent::Persistent>),
    /// A generalized request (§13.2): its callbacks and state are in
    /// `grequest.rs`'s table, under this request's handle.
    Generalized(ErrMode),
}

/// A message handle's object (`MPI_Message`, §3.8.2): the message a
/// matched probe took, and the communicator it came on.
pub(crate) struct MsgEntry {
    pub(crate) msg: mpi::Message,
    pub(crate) comm: Handle,
}

/// Where the library is in its life (§11.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    Before,
    Running,
    After,
}

/// The whole per-process state.
pub(crate) struct State {
    pub(crate) phase: Phase,
    pub(crate) universe: Option<mpi::Universe>,
    comms: HashMap<usize, Rc<CommEntry>>,
    requests: HashMap<usize, ReqEntry>,
    messages: HashMap<usize, MsgEntry>,
    wins: HashMap<usize, Rc<crate::rma::Win>>,
}

/// The process's one [`State`], behind the rule of `thread.rs`.
struct Shared(RefCell<Option<State>>);

// SAFETY: the state (and every `Rc` cloned out of it) is used only by a
// thread that `thread::may_use_state` allows: the one that initialised
// MPI, or under `MPI_THREAD_SERIALIZED` and `MPI_THREAD_MULTIPLE` the
// holder of the token, whose acquire and release order each thread's
// accesses after the last one's. No two threads ever touch it at once:
// the token changes hands only between calls, or inside a wait of the
// `mpi` crate between two calls to the transport, never while the state
// is borrowed (it is never borrowed across a call into the crate).
unsafe impl Sync for Shared {}

static STATE: Shared = Shared(RefCell::new(None));

/// Runs `f` on the state. Fails with `MPI_ERR_INTERN` if this thread may
/// not touch it now, or if it is already in use further up the stack (it
/// never is, by construction). Under `MPI_THREAD_SERIALIZED` and
/// `MULTIPLE` a thread that does not hold the token takes it for the
/// access (a call that reads a handle before its boundary).
pub(crate) fn with<R>(f: impl FnOnce(&mut State) -> R) -> Res<R> {
    let _entered = crate::thread::enter().map_err(|()| Code(MPI_ERR_INTERN))?;
    if !crate::thread::may_use_state() {
        return Err(Code(MPI_ERR_INTERN));
    }
    match STATE.0.try_borrow_mut() {
        Ok(mut s) => Ok(f(s.get_or_insert_with(|| State {
            phase: Phase::Before,
            universe: None,
            comms: HashMap::new(),
            requests: HashMap::new(),
            messages: HashMap::new(),
            wins: HashMap::new(),
        }))),
        Err(_) => Err(Code(MPI_ERR_INTERN)),
    }
}

impl State {
    /// A fresh handle value (from the process-wide counter).
    pub(crate) fn fresh(&mut self) -> usize {
        crate::table::fresh_handle()
    }

    /// Registers a communicator and returns its handle value.
    pub(crate) fn add_comm(&mut self, value: usize, entry: CommEntry) {
        self.comms.insert(value, Rc::new(entry));
    }

    /// Forgets every object (at finalize).
    pub(crate) fn clear(&mut self) {
        self.wins.clear();
        self.messages.clear();
        self.requests.clear();
        self.comms.clear();
    }
}

/// Fails unless MPI is initialised and not finalised.
pub(crate) fn running() -> Res<()> {
    with(require_running)?
}

/// `running`'s check, on a state already entered.
fn require_running(s: &mut State) -> Res<()> {
    match s.phase {
        Phase::Running => Ok(()),
        _ => Err(Code(MPI_ERR_OTHER)),
    }
}

/// The communicator behind `h` (`MPI_ERR_COMM` if there is none).
pub(crate) fn comm(h: Handle) -> Res<Rc<CommEntry>> {
    // One visit to the state, as `running` then the lookup: this is on
    // every call that names a communicator.
    with(|s| {
        require_running(s)?;
        s.comms.get(&value(h)).cloned().ok_or(Code(MPI_ERR_COMM))
    })?
}

/// The communicator behind `h` for a collective operation not provided
/// on inter-communicators (the nonblocking and persistent ones, scan,
/// exscan, the reduce-scatters; `intercoll.rs` has the others, §6.2.2):
/// as [`comm`], and `MPI_ERR_COMM`, saying why, for an
/// inter-communicator.
pub(crate) fn intra(h: Handle) -> Res<Rc<CommEntry>> {
    let c = comm(h)?;
    if c.comm.is_inter() {
        return Err(crate::error::explained(
            MPI_ERR_COMM,
            "this collective operation is not provided on inter-communicators",
        ));
    }
    Ok(c)
}

/// The intra-communicator behind `h`, for `what`, which is not defined
/// on inter-communicators (`MPI_Comm_create_group`, `MPI_Comm_split_type`,
/// the topology constructors, §8.1): as [`comm`], and `MPI_ERR_COMM`,
/// saying so, for an inter-communicator.
pub(crate) fn intra_for(h: Handle, what: &str) -> Res<Rc<CommEntry>> {
    let c = comm(h)?;
    if c.comm.is_inter() {
        let why = format!("{what} needs an intra-communicator, not an inter-communicator");
        return Err(crate::error::explained(MPI_ERR_COMM, &why));
    }
    Ok(c)
}

/// The error mode of the communicator behind `h`, `MPI_COMM_WORLD`'s if
/// `h` is not one, and "return" before `MPI_Init` or after finalize.
pub(crate) fn errmode(h: Handle) -> ErrMode {
    let found = with(|s| {
        if s.phase != Phase::Running {
            return None;
        }
        let e = s.comms.get(&value(h)).or_else(|| s.comms.get(&COMM_WORLD));
        e.map(|e| e.errh.get())
    });
    found.ok().flatten().unwrap_or(ErrMode::Return)
}

/// Files `entry` under a fresh handle in the table `table` picks; returns
/// the handle.
fn register<T>(table: impl FnOnce(&mut State) -> &mut HashMap<usize, T>, entry: T) -> Res<Handle> {
    with(|s| {
        let v = s.fresh();
        table(s).insert(v, entry);
        handle(v)
    })
}

/// Registers a new communicator; returns its handle.
pub(crate) fn new_comm(comm: mpi::Communicator, errh: ErrMode) -> Res<Handle> {
    with(|s| {
        let v = s.fresh();
        let errh = Cell::new(errh.on(v));
        let meta = Default::default();
        s.comms.insert(v, Rc::new(CommEntry { comm, errh, meta }));
        handle(v)
    })
}

/// Removes a communicator this library created (`MPI_ERR_COMM` for the
/// predefined ones and unknown handles).
pub(crate) fn free_comm(h: Handle) -> Res<()> {
    running()?;
    let v = value(h);
    if v < FIRST_DYNAMIC {
        return Err(Code(MPI_ERR_COMM));
    }
    with(|s| s.comms.remove(&v))?
        .map(drop)
        .ok_or(Code(MPI_ERR_COMM))
}

/// Registers a request; returns its handle.
pub(crate) fn new_request(r: ReqEntry) -> Res<Handle> {
    register(|s| &mut s.requests, r)
}

/// Takes the request behind `h` out of the table: `None` for
/// `MPI_REQUEST_NULL`, `MPI_ERR_REQUEST` for an unknown handle.
pub(crate) fn take_request(h: Handle) -> Res<Option<ReqEntry>> {
    let v = value(h);
    if v == REQUEST_NULL {
        return Ok(None);
    }
    with(|s| s.requests.remove(&v))?
        .map(Some)
        .ok_or(Code(MPI_ERR_REQUEST))
}

/// Whether request handle `h` (a value) is still in the table.
pub(crate) fn has_request(h: usize) -> bool {
    with(|s| s.requests.contains_key(&h)).unwrap_or(false)
}

/// Puts a request that is not complete back under its handle.
pub(crate) fn put_request(h: Handle, r: ReqEntry) -> Res<()> {
    with(|s| {
        s.requests.insert(value(h), r);
    })
}

/// Registers a message a matched probe took; returns its handle.
pub(crate) fn new_message(m: MsgEntry) -> Res<Handle> {
    register(|s| &mut s.messages, m)
}

/// Puts a message back under its handle.
pub(crate) fn put_message(h: Handle, m: MsgEntry) -> Res<()> {
    with(|s| {
        s.messages.insert(value(h), m);
    })
}

/// Takes the message behind `h` out of the table (`MPI_ERR_REQUEST` for
/// a handle that names none).
pub(crate) fn take_message(h: Handle) -> Res<MsgEntry> {
    with(|s| s.messages.remove(&value(h)))?.ok_or(Code(MPI_ERR_REQUEST))
}

/// The window behind `h`, if there is one.
pub(crate) fn win(h: Handle) -> Option<Rc<crate::rma::Win>> {
    with(|s| s.wins.get(&value(h)).cloned()).ok().flatten()
}

/// Registers a new window; returns its handle.
pub(crate) fn new_win(w: crate::rma::Win) -> Res<Handle> {
    with(|s| {
        let v = s.fresh();
        let mut w = w;
        w.errh = Cell::new(w.errh.get().on(v));
        s.wins.insert(v, Rc::new(w));
        handle(v)
    })
}

/// Forgets window `h`.
pub(crate) fn free_win(h: Handle) -> Res<()> {
    with(|s| s.wins.remove(&value(h))).map(drop)
}
