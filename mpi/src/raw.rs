//! A bytes-level API for foreign-language bindings (o2g's C ABI, the
//! `capi` crate), where buffers are raw pointers whose lifetime the caller
//! guarantees by the MPI standard's rules rather than by borrows.
//!
//! Everything else of a binding goes through the ordinary safe API with
//! `u8` as the element type (`Communicator::send::<u8>`, the collectives on
//! byte slices with a [`crate::UserOperation`] doing the element-wise
//! reduction); this module adds only what that API cannot express:
//!
//! - [`isend`]: a nonblocking send whose request does not borrow the
//!   buffer, which the caller keeps unchanged until the request completes
//!   (MPI 4.1 §3.7.2), so the transport may send from it without a copy;
//! - [`irecv`]: a nonblocking receive into memory that a C caller owns
//!   until the request completes (MPI 4.1 §3.7.2);
//! - [`issend`] and [`imrecv`]: the same for a synchronous-mode send
//!   and for the receive of a message a matched probe took;
//! - [`send_recv`]: a send and a receive as one request;
//! - [`irecv_staged`] and [`hold`]: a receive into a staging buffer
//!   unpacked when it completes, and a send from a packed copy, for
//!   datatypes that are not contiguous;
//! - [`world_ranks`] and [`context_id`]: what `MPI_Comm_compare` (§7.4.1)
//!   compares;
//! - [`add_agent`], [`advance`], [`check`] and [`peer_failure`]: what a
//!   binding's one-sided communication (§12, `capi/src/rma/`) needs to
//!   serve other processes' requests whenever this process waits;
//! - [`set_turns`]: how a binding that lets several threads call MPI
//!   (`MPI_THREAD_MULTIPLE`, one at a time by a lock of its own) gets
//!   waiting threads their turn;
//! - [`window`]: memory windows the o2g module serves as the passive
//!   target's agent.
//!
//! Ranks and tags use this crate's wildcards ([`crate::ANY_SOURCE`],
//! [`crate::ANY_TAG`]); a binding translates its own.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use crate::collective::schedule::Advance;
use crate::communicator::Communicator;
use crate::error::{Error, Result};
use crate::point_to_point::{Message, Status};
use crate::request::Request;

pub mod window;

/// `MPI_Isend` (§3.7.2) of raw bytes on the communicator's point-to-point
/// context. The transport may read `data` until the request completes
/// (the socket transports keep what the socket did not take at once by
/// reference); dropping the request before that copies what is left, so
/// the memory is free to reuse once the drop returns.
///
/// # Safety
///
/// `data` must stay allocated and unchanged for as long as the returned
/// request exists (until it completes or is dropped), which is the rule
/// MPI 4.1 §3.7.2 states for a pending send buffer; and the request must
/// be dropped, not leaked, before the memory is reused.
///
/// # Errors
///
/// [`Error::InvalidRank`], [`Error::InvalidTag`], transport errors.
pub unsafe fn isend(
    comm: &Communicator,
    data: &[u8],
    dest: i32,
    tag: i32,
) -> Result<Request<'static>> {
    let tag = u32::try_from(tag).map_err(|_| Error::InvalidTag(tag))?;
    // SAFETY: This function's contract is `isend_bytes_lent`'s.
    unsafe { comm.isend_bytes_lent(data, dest, tag, comm.context) }
}

/// `MPI_Issend` (§3.7.2) of raw bytes: as [`isend`], and the request
/// completes only once a receive on `dest` matched the message.
///
/// # Safety
///
/// As for [`isend`].
///
/// # Errors
///
/// As for [`isend`].
pub unsafe fn issend(
    comm: &Communicator,
    data: &[u8],
    dest: i32,
    tag: i32,
) -> Result<Request<'static>> {
    let tag = u32::try_from(tag).map_err(|_| Error::InvalidTag(tag))?;
    // SAFETY: This function's contract is `issend_bytes_lent`'s.
    unsafe { comm.issend_bytes_lent(data, dest, tag, comm.context) }
}

/// `MPI_Imrecv` (§3.8.3) of `message` into `len` bytes at `buf`. The
/// bytes are copied in when the request completes.
///
/// # Safety
///
/// Unless `len` is 0, `buf` must be valid for writes of `len` bytes and
/// must not be read or written through any other path for as long as the
/// returned request exists (until it completes or is dropped).
pub unsafe fn imrecv(message: Message, buf: *mut u8, len: usize) -> Request<'static> {
    let buf: &'static mut [u8] = if len == 0 {
        &mut []
    } else {
        // SAFETY: Valid and exclusively the request's for its whole life
        // (this function's contract).
        unsafe { std::slice::from_raw_parts_mut(buf, len) }
    };
    message.irecv_bytes(buf)
}

/// `MPI_Irecv` (§3.7.2) into `len` bytes at `buf`, on the communicator's
/// point-to-point context. A transport may write the message into `buf` as
/// it arrives (o2g does for receives above its ring size), so the bytes
/// are only meaningful once the request completes. Dropping the request
/// before that cancels the receive or, if its message is already arriving,
/// waits for the rest of it.
///
/// # Safety
///
/// Unless `len` is 0, `buf` must be valid for writes of `len` bytes and
/// must not be read or written through any other path for as long as the
/// returned request exists (until it completes or is dropped), which is
/// the rule MPI 4.1 §3.7.2 states for a pending receive buffer; and the
/// request must be dropped, not leaked, before the memory is reused.
///
/// # Errors
///
/// Invalid rank or tag; a full posted-receive queue.
pub unsafe fn irecv(
    comm: &Communicator,
    buf: *mut u8,
    len: usize,
    source: i32,
    tag: i32,
) -> Result<Request<'static>> {
    // SAFETY: This function's contract is `irecv_bytes_direct`'s.
    unsafe { comm.irecv_bytes_direct(buf, len, source, tag, comm.context) }
}

/// What a staged receive does with the bytes that arrived.
pub type Unpack = Box<dyn FnOnce(&[u8])>;

/// `MPI_Irecv` (§3.7.2) of up to `len` bytes into a staging buffer the
/// request owns: for a receive whose datatype is not contiguous, so its
/// bytes must be unpacked into the caller's memory. `unpack` gets the
/// bytes that arrived (all of a truncated message's that fit) when the
/// receive completes, in whichever wait or test sees it complete; a
/// request dropped before that never calls it.
///
/// # Errors
///
/// As for [`irecv`].
pub fn irecv_staged(
    comm: &Communicator,
    len: usize,
    source: i32,
    tag: i32,
    unpack: Unpack,
) -> Result<Request<'static>> {
    let mut stage = vec![0u8; len];
    let ptr = stage.as_mut_ptr();
    // SAFETY: the staging vector's heap memory (`len` bytes) moves into the
    // continuation below, which the request owns and drops only after the
    // inner receive (`Request::then`), and nothing touches it until the
    // receive has completed; moving a `Vec` does not move its heap memory.
    let inner = unsafe { comm.irecv_bytes_direct(ptr, len, source, tag, comm.context) }?;
    Ok(inner.then(Box::new(move |n| unpack(&stage[..n.min(len)]))))
}

/// `MPI_Imrecv` (§3.8.3) of `message` into a staging buffer of `len`
/// bytes the request owns, as [`irecv_staged`].
pub fn imrecv_staged(message: Message, len: usize, unpack: Unpack) -> Request<'static> {
    let mut stage = vec![0u8; len];
    let ptr = stage.as_mut_ptr();
    // SAFETY: as in `irecv_staged`: the vector's heap memory moves into
    // the continuation, dropped only after the inner receive, and nothing
    // else touches it before the receive completes.
    let inner = unsafe { imrecv(message, ptr, len) };
    inner.then(Box::new(move |n| unpack(&stage[..n.min(len)])))
}

/// Makes `request` own `data` until it completes or is dropped: for a
/// nonblocking send of bytes packed into a vector of the library's own
/// (`data` is dropped after the send has let go of it).
pub fn hold(request: Request<'static>, data: Vec<u8>) -> Request<'static> {
    request.then(Box::new(move |_| drop(data)))
}

/// `MPI_Isendrecv` and `MPI_Isendrecv_replace` (§3.10): a send and a
/// receive started by the binding, as one request that completes once
/// both have, with the receive's status.
pub fn send_recv<'b>(send: Request<'b>, recv: Request<'b>) -> Request<'b> {
    Request::send_recv(send, recv)
}

/// The `MPI_COMM_WORLD` rank of each member, in communicator rank order
/// (the group of §7.4.1 `MPI_Comm_compare`).
pub fn world_ranks(comm: &Communicator) -> &[u32] {
    &comm.members
}

/// The communicator's point-to-point context id: two handles with the same
/// id and the same members are the same communicator (`MPI_IDENT`).
pub fn context_id(comm: &Communicator) -> u32 {
    comm.context
}

/// What an agent's round did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AgentStep {
    /// Nothing to do now.
    Idle,
    /// It did some work (what a wait waits for may have happened).
    Worked,
    /// It is finished and may be forgotten.
    Finished,
}

/// A binding's work that runs whenever the process waits.
struct Agent {
    f: Box<dyn FnMut() -> AgentStep>,
    worked: Rc<Cell<bool>>,
}

impl Advance for Agent {
    fn advance(&mut self) -> bool {
        match (self.f)() {
            AgentStep::Idle => false,
            AgentStep::Worked => {
                self.worked.set(true);
                false
            }
            AgentStep::Finished => true,
        }
    }
}

/// Runs `agent` without waiting every time this process waits for
/// anything (every wait loop, probe and poll of the communicator's
/// runtime, as a nonblocking collective's schedule is advanced), until it
/// returns [`AgentStep::Finished`]. An agent already running further up
/// the stack is not entered again. It must never wait itself; when it
/// did some work, the wait that ran it looks at what it waits for again
/// before it sleeps.
pub fn add_agent(comm: &Communicator, agent: Box<dyn FnMut() -> AgentStep>) {
    let worked = comm.rt.agent_worked.clone();
    comm.rt
        .add_schedule(Rc::new(RefCell::new(Agent { f: agent, worked })));
}

/// Runs every agent and nonblocking collective of the process once,
/// without waiting (what every wait does before it waits).
pub fn advance(comm: &Communicator) {
    comm.rt.advance_schedules();
}

/// Whether `request` has completed, without making progress (the caller
/// is an agent, or has just made progress); its status once it has. A
/// completed request keeps answering with its status.
///
/// # Errors
///
/// The request's failure.
pub fn check(request: &mut Request<'_>) -> Result<Option<Status>> {
    request.check()
}

/// Why the process at `rank` of `comm` is dead, or `None` while it is
/// alive (or `rank` names nobody).
pub fn peer_failure(comm: &Communicator, rank: i32) -> Option<String> {
    let w = comm.world_rank(rank).ok()?;
    comm.rt.with(|t| Ok(t.peer_failure(w))).ok().flatten()
}

/// Another handle to `comm` (the same context and members), for an agent
/// to keep.
pub fn another_handle(comm: &Communicator) -> Communicator {
    comm.handle()
}

/// A binding's turn-taking between threads, for `MPI_THREAD_MULTIPLE`:
/// the binding lets one thread at a time into this crate (a lock of its
/// own, taken for each call), and a thread that waits inside must let the
/// others in from time to time.
#[derive(Clone, Copy)]
pub struct Turns {
    /// Whether another thread waits for its turn.
    pub contended: fn() -> bool,
    /// Lets every thread that waits have its turn, then takes this
    /// thread's back. Called only between two calls to the transport,
    /// when this crate holds no borrow of shared state.
    pub pass: fn(),
}

static TURNS: std::sync::OnceLock<Turns> = std::sync::OnceLock::new();

/// Installs `turns` for the rest of the process (the first call wins):
/// from then on every wait blocks in the transport for at most a
/// millisecond at a time, and not at all while another thread waits,
/// then calls `turns.pass`.
pub fn set_turns(turns: Turns) {
    let _ = TURNS.set(turns);
}

/// The turn-taking hooks, once installed.
pub(crate) fn turns() -> Option<&'static Turns> {
    TURNS.get()
}
