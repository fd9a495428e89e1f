//! Nonblocking send-receive (MPI 5.0 §3.10): `MPI_Isendrecv` and
//! `MPI_Isendrecv_replace`, a send and a receive as one request, which
//! completes once both have, with the receive's status (`MPI_PROC_NULL`'s
//! when the receive is from `MPI_PROC_NULL`). `MPI_Isendrecv_replace`
//! copies the outgoing message before the receive may write the buffer.

use std::borrow::Cow;
use std::ffi::{c_int, c_void};

use crate::buffer;
use crate::datatype::Count;
use crate::error::{boundary, Res};
use crate::ffi::{self, int_and_c};
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
unsafe fn start<N: Count>(
    c: &handles::CommEntry,
    data: Cow<'static, [u8]>,
    to: Peer,
    stag: i32,
    recvbuf: *mut c_void,
    count: N,
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

/// `MPI_Isendrecv` and `MPI_Isendrecv_c`.
///
/// # Safety
///
/// `sendbuf` must hold `sendcount` elements of `sendtype`, unchanged, and
/// `recvbuf` have room for `recvcount` elements of `recvtype`, untouched,
/// until the request completes; the two do not overlap; `req` is valid
/// for a write of one handle.
#[allow(clippy::too_many_arguments)]
unsafe fn isendrecv<N: Count>(
    name: &str,
    sendbuf: *const c_void,
    sendcount: N,
    sendtype: Handle,
    dst: c_int,
    sendtag: c_int,
    recvbuf: *mut c_void,
    recvcount: N,
    recvtype: Handle,
    src: c_int,
    recvtag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    boundary(name, comm, || {
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

int_and_c! {
    /// `MPI_Isendrecv` (§3.10): starts a send and a receive as one request.
    fn MPI_Isendrecv / MPI_Isendrecv_c(
        sendbuf: [*const c_void], sendcount: [N], sendtype: [Handle], dst: [c_int],
        sendtag: [c_int], recvbuf: [*mut c_void], recvcount: [N], recvtype: [Handle],
        src: [c_int], recvtag: [c_int], comm: [Handle], req: [*mut Handle],
    ) => isendrecv;
}

/// `MPI_Isendrecv_replace` and `MPI_Isendrecv_replace_c`.
///
/// # Safety
///
/// `buf` must be valid for reading and writing `count` elements of `dt`,
/// untouched until the request completes or is freed; `req` valid for a
/// write of one handle.
#[allow(clippy::too_many_arguments)]
unsafe fn isendrecv_replace<N: Count>(
    name: &str,
    buf: *mut c_void,
    count: N,
    dt: Handle,
    dst: c_int,
    sendtag: c_int,
    src: c_int,
    recvtag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    boundary(name, comm, || {
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

int_and_c! {
    /// `MPI_Isendrecv_replace` (§3.10): sends the buffer's contents and
    /// receives into it, as one request; the outgoing message is copied
    /// first.
    fn MPI_Isendrecv_replace / MPI_Isendrecv_replace_c(
        buf: [*mut c_void], count: [N], dt: [Handle], dst: [c_int], sendtag: [c_int],
        src: [c_int], recvtag: [c_int], comm: [Handle], req: [*mut Handle],
    ) => isendrecv_replace;
}
