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
//!   compares.
//!
//! Ranks and tags use this crate's wildcards ([`crate::ANY_SOURCE`],
//! [`crate::ANY_TAG`]); a binding translates its own.

use crate::communicator::Communicator;
use crate::error::{Error, Result};
use crate::point_to_point::Message;
use crate::request::Request;

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
