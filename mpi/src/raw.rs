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
//! - [`world_ranks`] and [`context_id`]: what `MPI_Comm_compare` (§7.4.1)
//!   compares.
//!
//! Ranks and tags use this crate's wildcards ([`crate::ANY_SOURCE`],
//! [`crate::ANY_TAG`]); a binding translates its own.

use crate::communicator::Communicator;
use crate::error::{Error, Result};
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
