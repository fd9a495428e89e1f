//! Nonblocking send-receive (MPI 5.0 §3.10): `MPI_Isendrecv` and
//! `MPI_Isendrecv_replace`, a send and a receive as one request, which
//! completes once both have, with the receive's status (`MPI_PROC_NULL`'s
//! when the receive is from `MPI_PROC_NULL`). `MPI_Isendrecv_replace`
//! copies the outgoing message before the receive may write the buffer.

use o2g_mpi_abi_macros::export;
use std::borrow::Cow;
use std::ffi::{c_int, c_void};

use crate::buffer;
use crate::error::{boundary, Res};
use crate::ffi;
use crate::handles::{self, Handle, ReqEntry};
use crate::p2p::{incoming, null_status, outgoing, Peer};

/// The request of a send of `data` to `to` and a receive of `count`
/// elements of `dt` into `recvbuf` from `from`.
///
/// # Safety
///
/// `data` stays unchanged until the request completes (it is moved into
/// the request when owned); `recvbuf` is valid for writing `count`
/// elements of `dt`, untouched otherwise, until the request completes or
/// is freed.
#[allow(clippy::too_many_arguments)]
unsafe fn start(
    c: &handles::CommEntry,
    data: Cow<'static, [u8]>,
    to: Peer,
    stag: i32,
    recvbuf: *mut c_void,
    count: c_int,
    dt: Handle,
    from: Peer,
    rtag: i32,
) -> Res<ReqEntry> {
    let errh = c.errh.get();
    let recv = match from {
        Peer::Null => None,
        // SAFETY: the caller's contract for `recvbuf`.
        Peer::Rank(s) => Some(unsafe { buffer::irecv(&c.comm, recvbuf, count, dt, s, rtag) }?),
    };
    let send = match to {
        Peer::Null => None,
        Peer::Rank(d) => {
            // SAFETY: the caller's contract for `data`; an owned copy
            // moves into the request (`buffer::keep`), whose heap bytes
            // do not move.
            let r = unsafe { mpi::raw::isend(&c.comm, &data, d, stag) }?;
            Some(buffer::keep(r, data))
        }
    };
    Ok(match (send, recv) {
        (None, None) => ReqEntry::ProcNull,
        (None, Some(r)) => ReqEntry::Live(r, errh),
        (Some(s), None) => ReqEntry::LiveAs(s, null_status(), errh),
        (Some(s), Some(r)) => ReqEntry::Live(mpi::raw::send_recv(s, r), errh),
    })
}

/// `MPI_Isendrecv` (§3.10): starts a send and a receive as one request.
///
/// # Safety
///
/// `sendbuf` must hold `sendcount` elements of `sendtype`, unchanged, and
/// `recvbuf` have room for `recvcount` elements of `recvtype`, untouched,
/// until the request completes; the two do not overlap; `req` is valid
/// for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Isendrecv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Handle,
    dst: c_int,
    sendtag: c_int,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Handle,
    src: c_int,
    recvtag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    boundary("MPI_Isendrecv", comm, || {
        // SAFETY: the caller's send buffer holds `sendcount` elements.
        let (c, data, stag, to) =
            unsafe { outgoing(comm, sendbuf, sendcount, sendtype, dst, sendtag) }?;
        // SAFETY: only checks; the receive buffer is not kept here.
        let (_, _, rtag, from) =
            unsafe { incoming(comm, recvbuf, recvcount, recvtype, src, recvtag) }?;
        // The request keeps reading the caller's send buffer (or owns its
        // packed copy) until it completes, as §3.10 lets it.
        let data: Cow<'static, [u8]> = match data {
            Cow::Owned(v) => Cow::Owned(v),
            // SAFETY: the caller leaves the send buffer unchanged until
            // the request completes (this function's contract).
            Cow::Borrowed(b) => Cow::Borrowed(unsafe { ffi::bytes(b.as_ptr().cast(), b.len()) }?),
        };
        // SAFETY: this function's contract.
        let entry = unsafe { start(&c, data, to, stag, recvbuf, recvcount, recvtype, from, rtag) }?;
        let h = handles::new_request(entry)?;
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(req, h) }
    })
}

/// `MPI_Isendrecv_replace` (§3.10): sends the buffer's contents and
/// receives into it, as one request; the outgoing message is copied
/// first.
///
/// # Safety
///
/// `buf` must be valid for reading and writing `count` elements of `dt`,
/// untouched until the request completes or is freed; `req` valid for a
/// write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Isendrecv_replace(
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    dst: c_int,
    sendtag: c_int,
    src: c_int,
    recvtag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    boundary("MPI_Isendrecv_replace", comm, || {
        let (c, data, stag, to) = {
            // SAFETY: the caller's buffer holds `count` elements; the
            // bytes are copied and the view dropped before any receive.
            let (c, data, stag, to) = unsafe { outgoing(comm, buf, count, dt, dst, sendtag) }?;
            (c, Cow::Owned(data.into_owned()), stag, to)
        };
        // SAFETY: only checks; the buffer is not kept here.
        let (_, _, rtag, from) = unsafe { incoming(comm, buf, count, dt, src, recvtag) }?;
        // SAFETY: the copy is owned by the request; `buf` is the
        // receive's until the request completes (this function's
        // contract).
        let entry = unsafe { start(&c, data, to, stag, buf, count, dt, from, rtag) }?;
        let h = handles::new_request(entry)?;
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(req, h) }
    })
}
