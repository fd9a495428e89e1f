//! Memory windows the o2g kernel module serves as the passive target's
//! agent (`docs/protocol.md`, Windows): a binding registers its window's
//! memory, then takes locks and puts through the module with `Lock` and
//! `Put` frames, which the target's module handles in its protocol
//! handler while the target process computes. Answers to `Lock` requests
//! arrive as ordinary messages on the window's communicator (source: the
//! target, tag: the one the request named), so a binding receives them
//! like any other reply; their payload is [`LockAnswer`].

use o2g_core::proto::envelope::Envelope;
use o2g_core::proto::wire::Kind;
pub use o2g_core::proto::wire::{lock_op, LockAnswer};

use crate::communicator::Communicator;
use crate::error::{Error, Result};
use crate::request::Request;

/// Registers `len` bytes at `base` as this process's memory of the window
/// whose communicator is `comm`: its id, or `None` when the transport has
/// no module that serves windows (or the module refused, say for want of
/// pinnable memory): the binding then serves the window itself.
///
/// # Safety
///
/// The memory must stay valid until [`unregister_window`]: the module
/// writes it whenever a put of a lock holder arrives, whatever this
/// process is doing.
pub unsafe fn register_window(comm: &Communicator, base: *mut u8, len: usize) -> Option<u32> {
    comm.rt
        .with(|t| match t.windows() {
            None => Ok(None),
            // SAFETY: This function's contract.
            Some(w) => Ok(unsafe { w.register_window(base, len, comm.context) }.ok()),
        })
        .ok()
        .flatten()
}

/// Unregisters window `id` of `comm`: no put lands in its memory after
/// this returns.
///
/// # Errors
///
/// The module's refusal (an id it does not know).
pub fn unregister_window(comm: &Communicator, id: u32) -> Result<()> {
    comm.rt.with(|t| match t.windows() {
        Some(w) => w.unregister_window(id),
        None => Err(no_windows()),
    })
}

/// Puts the module placed in window `id` so far.
///
/// # Errors
///
/// The module's refusal (an id it does not know).
pub fn placed_puts(comm: &Communicator, id: u32) -> Result<u64> {
    comm.rt.with(|t| match t.windows() {
        Some(w) => w.placed_puts(id),
        None => Err(no_windows()),
    })
}

/// Posts the receive of the answer to a request with `answer_tag` to
/// `target` (before asking): its bytes, at most `len` ([`LockAnswer::LEN`]
/// for a lock request, the length of a get), go to `unpack` when it
/// completes.
///
/// # Errors
///
/// [`Error::InvalidRank`], [`Error::InvalidTag`], transport errors.
pub fn answer(
    comm: &Communicator,
    target: i32,
    answer_tag: i32,
    len: usize,
    unpack: super::Unpack,
) -> Result<Request<'static>> {
    let mut stage = vec![0u8; len];
    let ptr = stage.as_mut_ptr();
    // SAFETY: the staging vector's heap memory moves into the
    // continuation, which the request owns and drops only after the inner
    // receive; nothing touches it before the receive completes.
    let inner = unsafe { comm.irecv_answer(ptr, len, target, answer_tag) }?;
    Ok(inner.then(Box::new(move |n| unpack(&stage[..n.min(len)]))))
}

/// Starts a get of `len` bytes at byte `offset` of `target`'s window,
/// whose module answers with them under `answer_tag` if this process
/// holds the window's lock there (post the [`answer`] first; a refused
/// get's answer has no bytes).
///
/// # Errors
///
/// [`Error::InvalidRank`], [`Error::InvalidTag`], transport errors.
pub fn get(
    comm: &Communicator,
    target: i32,
    offset: u32,
    len: u64,
    answer_tag: i32,
) -> Result<Request<'static>> {
    let tag = tag_of(answer_tag)?;
    frame(comm, target, Kind::Get, offset, len, tag, &[])
}

/// Tells the module that this process has completed `epoch` fences on
/// window `id` of `comm`: a lock request made after as many fences waits
/// at the module until then, so an epoch begun after a fence sees what
/// the fence ended here.
///
/// # Errors
///
/// The module's refusal (an id it does not know).
pub fn set_epoch(comm: &Communicator, id: u32, epoch: u64) -> Result<()> {
    comm.rt.with(|t| match t.windows() {
        Some(w) => w.set_epoch(id, epoch),
        None => Err(no_windows()),
    })
}

/// Starts a put of `data` at byte `offset` of `target`'s window (rank of
/// `comm`), which its module places if this process holds the window's
/// lock there. `data` is copied if it does not go out at once.
///
/// # Errors
///
/// [`Error::InvalidRank`], transport errors.
pub fn put(comm: &Communicator, target: i32, offset: u32, data: &[u8]) -> Result<Request<'static>> {
    frame(comm, target, Kind::Put, offset, data.len() as u64, 0, data)
}

/// Starts a lock request `op` ([`lock_op`]) to `target`'s window, made
/// after `epoch` fences on it, whose answer comes as a message with
/// `answer_tag` (post its receive first).
///
/// # Errors
///
/// [`Error::InvalidRank`], [`Error::InvalidTag`], transport errors.
pub fn request(
    comm: &Communicator,
    target: i32,
    op: u32,
    answer_tag: i32,
    epoch: u64,
) -> Result<Request<'static>> {
    let tag = tag_of(answer_tag)?;
    frame(comm, target, Kind::Lock, op, epoch, tag, &[])
}

/// An answer's tag as the wire carries it.
fn tag_of(answer_tag: i32) -> Result<u32> {
    u32::try_from(answer_tag).map_err(|_| Error::InvalidTag(answer_tag))
}

/// Starts a window frame of `kind` to `target`, with `tag`, the length
/// field `len` (a put's payload length, a get's length, a lock request's
/// fences) and `reference`, carrying `data`.
fn frame(
    comm: &Communicator,
    target: i32,
    kind: Kind,
    tag: u32,
    len: u64,
    reference: u32,
    data: &[u8],
) -> Result<Request<'static>> {
    let world = comm.world_rank(target)?;
    let env = Envelope {
        source: comm.me(),
        tag,
        context: comm.context,
    };
    let token = comm.rt.with(|t| match t.windows() {
        Some(w) => w.window_frame(world, kind, env, len, reference, data),
        None => Err(no_windows()),
    })?;
    Ok(Request::send(comm.rt.clone(), token))
}

fn no_windows() -> Error {
    Error::InvalidArgument("this transport has no module windows".into())
}
