//! Point-to-point communication (MPI 5.0 chapter 3): blocking and
//! nonblocking send and receive, sendrecv, probe, and status queries, on
//! the `mpi` crate's communicator calls with bytes as the element type.
//!
//! Ranks and tags arrive with the standard ABI's wildcards
//! (`MPI_ANY_SOURCE` = −1, `MPI_ANY_TAG` = −2, `MPI_PROC_NULL` = −3) and
//! are translated to the `mpi` crate's here. Operations with
//! `MPI_PROC_NULL` complete at once with the empty status of §3.11.

use o2g_mpi_abi_macros::export;
use std::ffi::{c_int, c_void};
use std::rc::Rc;

use std::borrow::Cow;

use crate::buffer;
use crate::datatype::{self, Count, Datatype};
use crate::error::{boundary, Code, Res, MPI_ERR_RANK, MPI_ERR_TAG, MPI_ERR_TRUNCATE};
use crate::ffi::{self, int_and_c};
use crate::handles::{self, CommEntry, Handle, ReqEntry};
use crate::status::{self, Status, ANY_SOURCE, ANY_TAG, PROC_NULL};

/// A peer argument: a rank (possibly the `mpi` crate's wildcard) or
/// `MPI_PROC_NULL`.
#[derive(Clone, Copy)]
pub(crate) enum Peer {
    Rank(i32),
    Null,
}

fn dest(rank: c_int) -> Res<Peer> {
    match rank {
        PROC_NULL => Ok(Peer::Null),
        r if r >= 0 => Ok(Peer::Rank(r)),
        _ => Err(Code(MPI_ERR_RANK)),
    }
}

pub(crate) fn source(rank: c_int) -> Res<Peer> {
    match rank {
        ANY_SOURCE => Ok(Peer::Rank(mpi::ANY_SOURCE)),
        r => dest(r),
    }
}

fn send_tag(tag: c_int) -> Res<i32> {
    if tag >= 0 {
        Ok(tag)
    } else {
        Err(Code(MPI_ERR_TAG))
    }
}

pub(crate) fn recv_tag(tag: c_int) -> Res<i32> {
    match tag {
        ANY_TAG => Ok(mpi::ANY_TAG),
        t => send_tag(t),
    }
}

/// The status of `MPI_PROC_NULL` operations (§3.11).
pub(crate) fn null_status() -> Status {
    Status::new(PROC_NULL, ANY_TAG, 0, false)
}

/// Turns a finished receive into a status, keeping what a truncated
/// receive still reports.
pub(crate) fn recv_outcome(r: mpi::Result<mpi::Status>) -> (Status, Res<()>) {
    match r {
        Ok(s) => (Status::from_mpi(&s), Ok(())),
        Err(mpi::Error::Truncated {
            capacity,
            source_rank,
            tag,
            ..
        }) => (
            Status::new(source_rank, tag, capacity, false),
            Err(Code(MPI_ERR_TRUNCATE)),
        ),
        Err(e) => (Status::empty(), Err(Code::from(e))),
    }
}

/// A checked send: the communicator, the message (packed if its type is
/// not contiguous), the tag and the destination.
pub(crate) type Outgoing<'a> = (Rc<CommEntry>, Cow<'a, [u8]>, i32, Peer);

/// The checked arguments of a send: the communicator, the message, the
/// tag and the destination. Every send checks them in this order.
///
/// # Safety
///
/// `buf` must be valid for reading `count` elements of `dt`.
pub(crate) unsafe fn outgoing<'a, N: Count>(
    comm: Handle,
    buf: *const c_void,
    count: N,
    dt: Handle,
    dst: c_int,
    tag: c_int,
) -> Res<Outgoing<'a>> {
    let c = handles::comm(comm)?;
    let (d, n) = buffer::typed(count, dt)?;
    let tag = send_tag(tag)?;
    // SAFETY: the caller's buffer holds `count` elements of `dt`.
    let data = unsafe { buffer::send_typed(&d, n, buf) }?;
    Ok((c, data, tag, dest(dst)?))
}

/// The checked arguments of a receive: the communicator, the room for
/// the message, the tag and the source. Every receive checks them in this
/// order.
///
/// # Safety
///
/// `buf` must be valid for writing `count` elements of `dt`.
pub(crate) unsafe fn incoming<'a, N: Count>(
    comm: Handle,
    buf: *mut c_void,
    count: N,
    dt: Handle,
    src: c_int,
    tag: c_int,
) -> Res<(Rc<CommEntry>, buffer::Recv<'a>, i32, Peer)> {
    let c = handles::comm(comm)?;
    let (d, n) = buffer::typed(count, dt)?;
    let tag = recv_tag(tag)?;
    // SAFETY: the caller's buffer has room for `count` elements.
    let data = unsafe { buffer::recv_typed(d, n, buf) }?;
    Ok((c, data, tag, source(src)?))
}

/// Makes a request handle for `entry` and writes it to `req`.
///
/// # Safety
///
/// A non-null `req` is valid for a write of one handle.
unsafe fn new_request(entry: ReqEntry, req: *mut Handle) -> Res<()> {
    let h = handles::new_request(entry)?;
    // SAFETY: by the caller's contract.
    unsafe { ffi::out(req, h) }
}

/// The send modes (§3.4). Ready mode is sent as standard mode, which the
/// standard allows (a correct ready-mode program has its receive posted).
#[derive(Clone, Copy)]
pub(crate) enum SendMode {
    Standard,
    Synchronous,
    Ready,
    Buffered,
}

/// `MPI_Send`, `MPI_Ssend`, `MPI_Rsend` and `MPI_Bsend` (and `_c`), in
/// `mode`.
///
/// # Safety
///
/// `buf` must be valid for reading `count` elements of `dt`.
#[allow(clippy::too_many_arguments)]
unsafe fn blocking_send<N: Count>(
    name: &str,
    mode: SendMode,
    buf: *const c_void,
    count: N,
    dt: Handle,
    dst: c_int,
    tag: c_int,
    comm: Handle,
) -> c_int {
    boundary(name, comm, || {
        // SAFETY: the caller's buffer holds `count` elements of `dt`.
        let (c, data, tag, to) = unsafe { outgoing(comm, buf, count, dt, dst, tag) }?;
        match (to, mode) {
            (Peer::Null, _) => Ok(()),
            (Peer::Rank(r), SendMode::Standard | SendMode::Ready) => {
                Ok(c.comm.send(&data, r, tag)?)
            }
            (Peer::Rank(r), SendMode::Synchronous) => Ok(c.comm.ssend(&data, r, tag)?),
            (Peer::Rank(r), SendMode::Buffered) => crate::bsend::send(&c, &data, r, tag),
        }
    })
}

int_and_c! {
    (
        buf: [*const c_void], count: [N], dt: [Handle], dst: [c_int], tag: [c_int],
        comm: [Handle],
    ) => blocking_send;
    /// `MPI_Send` (§3.2.1): standard-mode blocking send.
    fn MPI_Send / MPI_Send_c(SendMode::Standard);
    /// `MPI_Ssend` (§3.4): synchronous-mode blocking send; returns once the
    /// destination has started a receive that matched the message.
    fn MPI_Ssend / MPI_Ssend_c(SendMode::Synchronous);
    /// `MPI_Rsend` (§3.4): ready-mode blocking send, sent in standard mode.
    fn MPI_Rsend / MPI_Rsend_c(SendMode::Ready);
    /// `MPI_Bsend` (§3.4, §3.6): buffered-mode send; copies the message into
    /// the buffer attached with `MPI_Buffer_attach` and returns
    /// (`MPI_ERR_BUFFER` when the attached space is exhausted).
    fn MPI_Bsend / MPI_Bsend_c(SendMode::Buffered);
}

/// `MPI_Recv` and `MPI_Recv_c`.
///
/// # Safety
///
/// `buf` must be valid for writing `count` elements of `dt`; `st` is
/// `MPI_STATUS_IGNORE` or valid for one `MPI_Status`.
#[allow(clippy::too_many_arguments)]
unsafe fn recv<N: Count>(
    name: &str,
    buf: *mut c_void,
    count: N,
    dt: Handle,
    src: c_int,
    tag: c_int,
    comm: Handle,
    st: *mut Status,
) -> c_int {
    boundary(name, comm, || {
        // SAFETY: the caller's buffer has room for `count` elements.
        let (c, mut data, tag, from) = unsafe { incoming(comm, buf, count, dt, src, tag) }?;
        let (status, r) = match from {
            Peer::Null => (null_status(), Ok(())),
            Peer::Rank(s) => {
                let r = c.comm.recv(data.bytes(), s, tag);
                data.finish(buffer::received(&r));
                recv_outcome(r)
            }
        };
        // SAFETY: the caller passes MPI_STATUS_IGNORE or a valid status.
        unsafe { status.store(st) };
        r
    })
}

int_and_c! {
    /// `MPI_Recv` (§3.2.4): blocking receive.
    fn MPI_Recv / MPI_Recv_c(
        buf: [*mut c_void], count: [N], dt: [Handle], src: [c_int], tag: [c_int], comm: [Handle],
        st: [*mut Status],
    ) => recv;
}

/// The send and the receive of a send-receive, checked: the outgoing
/// message, the tag and destination, the room for the incoming one, its
/// tag and source.
type Exchange<'a> = (Cow<'a, [u8]>, i32, Peer, buffer::Recv<'a>, i32, Peer);

/// Runs a send-receive on `c` and stores the receive's status in `st`.
///
/// # Safety
///
/// `st` is `MPI_STATUS_IGNORE` or valid for one `MPI_Status`; the
/// receive room is valid as [`buffer::recv_typed`] asks.
unsafe fn exchange(c: &CommEntry, x: Exchange<'_>, st: *mut Status) -> Res<()> {
    let (out, stag, to, mut inp, rtag, from) = x;
    let (status, r) = match (to, from) {
        (Peer::Rank(d), Peer::Rank(s)) => {
            let r = c.comm.sendrecv(&out, d, stag, inp.bytes(), s, rtag);
            inp.finish(buffer::received(&r));
            recv_outcome(r)
        }
        (Peer::Rank(d), Peer::Null) => (
            null_status(),
            c.comm.send(&out, d, stag).map_err(Code::from),
        ),
        (Peer::Null, Peer::Rank(s)) => {
            let r = c.comm.recv(inp.bytes(), s, rtag);
            inp.finish(buffer::received(&r));
            recv_outcome(r)
        }
        (Peer::Null, Peer::Null) => (null_status(), Ok(())),
    };
    // SAFETY: the caller passes MPI_STATUS_IGNORE or a valid status.
    unsafe { status.store(st) };
    r
}

/// `MPI_Sendrecv` and `MPI_Sendrecv_c`.
///
/// # Safety
///
/// As for `MPI_Send` on the send side and `MPI_Recv` on the receive side;
/// the two buffers do not overlap.
#[allow(clippy::too_many_arguments)]
unsafe fn sendrecv<N: Count>(
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
    st: *mut Status,
) -> c_int {
    boundary(name, comm, || {
        let c = handles::comm(comm)?;
        let (sd, sn) = buffer::typed(sendcount, sendtype)?;
        let (rd, rn) = buffer::typed(recvcount, recvtype)?;
        let (stag, rtag) = (send_tag(sendtag)?, recv_tag(recvtag)?);
        let (to, from) = (dest(dst)?, source(src)?);
        // SAFETY: the caller's send buffer holds `sendcount` elements.
        let out = unsafe { buffer::send_typed(&sd, sn, sendbuf) }?;
        // SAFETY: the caller's receive buffer has room for `recvcount`.
        let inp = unsafe { buffer::recv_typed(rd, rn, recvbuf) }?;
        // SAFETY: the caller's contract for `st` and the buffers.
        unsafe { exchange(&c, (out, stag, to, inp, rtag, from), st) }
    })
}

int_and_c! {
    /// `MPI_Sendrecv` (§3.10): a send and a receive at once, deadlock-free.
    fn MPI_Sendrecv / MPI_Sendrecv_c(
        sendbuf: [*const c_void], sendcount: [N], sendtype: [Handle], dst: [c_int],
        sendtag: [c_int], recvbuf: [*mut c_void], recvcount: [N], recvtype: [Handle],
        src: [c_int], recvtag: [c_int], comm: [Handle], st: [*mut Status],
    ) => sendrecv;
}

/// `MPI_Sendrecv_replace` and `MPI_Sendrecv_replace_c`.
///
/// # Safety
///
/// `buf` must be valid for reading and writing `count` elements of `dt`;
/// `st` is `MPI_STATUS_IGNORE` or valid for one `MPI_Status`.
#[allow(clippy::too_many_arguments)]
unsafe fn sendrecv_replace<N: Count>(
    name: &str,
    buf: *mut c_void,
    count: N,
    dt: Handle,
    dst: c_int,
    sendtag: c_int,
    src: c_int,
    recvtag: c_int,
    comm: Handle,
    st: *mut Status,
) -> c_int {
    boundary(name, comm, || {
        let (out, stag, to) = {
            // SAFETY: the caller's buffer holds `count` elements; the
            // slice is copied and dropped before the buffer is written.
            let (_, data, stag, to) = unsafe { outgoing(comm, buf, count, dt, dst, sendtag) }?;
            (data.to_vec(), stag, to)
        };
        // SAFETY: the caller's buffer has room for `count` elements.
        let (c, inp, rtag, from) = unsafe { incoming(comm, buf, count, dt, src, recvtag) }?;
        // SAFETY: the caller's contract for `st` and the buffer.
        unsafe { exchange(&c, (Cow::Owned(out), stag, to, inp, rtag, from), st) }
    })
}

int_and_c! {
    /// `MPI_Sendrecv_replace` (§3.10): sends the buffer's contents and
    /// receives into the same buffer; the outgoing message is copied first.
    fn MPI_Sendrecv_replace / MPI_Sendrecv_replace_c(
        buf: [*mut c_void], count: [N], dt: [Handle], dst: [c_int], sendtag: [c_int],
        src: [c_int], recvtag: [c_int], comm: [Handle], st: [*mut Status],
    ) => sendrecv_replace;
}

/// Starts a nonblocking send in `mode` (what `MPI_Isend` and its mode
/// variants begin).
///
/// # Safety
///
/// `buf` must be valid for reading `count` elements of `dt`, unchanged,
/// until the request completes.
pub(crate) unsafe fn start_send<N: Count>(
    mode: SendMode,
    buf: *const c_void,
    count: N,
    dt: Handle,
    dst: c_int,
    tag: c_int,
    comm: Handle,
) -> Res<ReqEntry> {
    // SAFETY: the caller's buffer holds `count` elements of `dt`.
    let (c, data, tag, to) = unsafe { outgoing(comm, buf, count, dt, dst, tag) }?;
    // SAFETY: as above, until the request completes.
    unsafe { start_send_data(mode, &c, data, tag, to) }
}

/// Starts a nonblocking send of the checked `data` in `mode` (also what
/// `MPI_Start` of a persistent send begins).
///
/// # Safety
///
/// A borrowed `data` stays valid and unchanged until the request
/// completes.
pub(crate) unsafe fn start_send_data(
    mode: SendMode,
    c: &CommEntry,
    data: Cow<'_, [u8]>,
    tag: i32,
    to: Peer,
) -> Res<ReqEntry> {
    let errh = c.errh.get();
    Ok(match (to, mode) {
        (Peer::Null, _) => ReqEntry::ProcNull,
        (Peer::Rank(r), SendMode::Standard | SendMode::Ready) => {
            // SAFETY: MPI 5.0 §3.7.2: the caller leaves the buffer alone
            // until the request completes; a freed request
            // (`MPI_Request_free`) is dropped, which copies what has not
            // gone out. A packed copy moves into the request
            // (`buffer::keep`).
            let req = unsafe { mpi::raw::isend(&c.comm, &data, r, tag) }?;
            ReqEntry::Live(buffer::keep(req, data), errh)
        }
        (Peer::Rank(r), SendMode::Synchronous) => {
            // SAFETY: as above.
            let req = unsafe { mpi::raw::issend(&c.comm, &data, r, tag) }?;
            ReqEntry::Live(buffer::keep(req, data), errh)
        }
        // The data are in the attached buffer when this returns: done.
        (Peer::Rank(r), SendMode::Buffered) => {
            crate::bsend::send(c, &data, r, tag)?;
            ReqEntry::Done(Status::empty(), 0, errh)
        }
    })
}

/// `MPI_Isend` and its mode variants (and `_c`), in `mode`.
///
/// # Safety
///
/// As for [`start_send`]; `req` valid for a write of one handle.
#[allow(clippy::too_many_arguments)]
unsafe fn nonblocking_send<N: Count>(
    name: &str,
    mode: SendMode,
    buf: *const c_void,
    count: N,
    dt: Handle,
    dst: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    boundary(name, comm, || {
        // SAFETY: the caller's contract is `start_send`'s.
        let entry = unsafe { start_send(mode, buf, count, dt, dst, tag, comm) }?;
        // SAFETY: the caller passes a valid output pointer.
        unsafe { new_request(entry, req) }
    })
}

int_and_c! {
    (
        buf: [*const c_void], count: [N], dt: [Handle], dst: [c_int], tag: [c_int],
        comm: [Handle], req: [*mut Handle],
    ) => nonblocking_send;
    /// `MPI_Isend` (§3.7.2): starts a standard-mode send, which may read
    /// `buf` until it completes.
    fn MPI_Isend / MPI_Isend_c(SendMode::Standard);
    /// `MPI_Issend` (§3.7.2): starts a synchronous-mode send; the request
    /// completes once the destination has started a receive that matched the
    /// message (acknowledged as for `MPI_Ssend`).
    fn MPI_Issend / MPI_Issend_c(SendMode::Synchronous);
    /// `MPI_Irsend` (§3.7.2): starts a ready-mode send, sent in standard mode.
    fn MPI_Irsend / MPI_Irsend_c(SendMode::Ready);
    /// `MPI_Ibsend` (§3.7.2): a buffered-mode send; the message is copied into
    /// the attached buffer at once, so the request is complete when this
    /// returns (`MPI_ERR_BUFFER` when the attached space is exhausted).
    fn MPI_Ibsend / MPI_Ibsend_c(SendMode::Buffered);
}

/// `MPI_Irecv` and `MPI_Irecv_c`.
///
/// # Safety
///
/// `buf` must be valid for writing `count` elements of `dt` until the
/// request completes or is freed; `req` valid for a write of one handle.
#[allow(clippy::too_many_arguments)]
unsafe fn irecv<N: Count>(
    name: &str,
    buf: *mut c_void,
    count: N,
    dt: Handle,
    src: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    boundary(name, comm, || {
        // SAFETY: checks the arguments and the pointer for null; the
        // buffer is not kept.
        let (c, _, tag, from) = unsafe { incoming(comm, buf, count, dt, src, tag) }?;
        let (d, n) = buffer::typed(count, dt)?;
        // SAFETY: the caller's contract.
        let entry = unsafe { start_recv(&c, buf, d, n, from, tag) }?;
        // SAFETY: the caller passes a valid output pointer.
        unsafe { new_request(entry, req) }
    })
}

int_and_c! {
    /// `MPI_Irecv` (§3.7.2): starts a receive into `buf`, which belongs to
    /// the request until it completes.
    fn MPI_Irecv / MPI_Irecv_c(
        buf: [*mut c_void], count: [N], dt: [Handle], src: [c_int], tag: [c_int],
        comm: [Handle], req: [*mut Handle],
    ) => irecv;
}

/// Starts a nonblocking receive of `n` elements of the checked type `d`
/// (what `MPI_Irecv` and `MPI_Start` of a persistent receive begin).
///
/// # Safety
///
/// `buf` must be valid for writing `n` elements of `d` until the request
/// completes or is freed, and not accessed otherwise meanwhile.
pub(crate) unsafe fn start_recv(
    c: &CommEntry,
    buf: *mut c_void,
    d: std::sync::Arc<Datatype>,
    n: usize,
    from: Peer,
    tag: i32,
) -> Res<ReqEntry> {
    Ok(match from {
        Peer::Null => ReqEntry::ProcNull,
        Peer::Rank(s) => {
            // SAFETY: the caller keeps the elements at `buf` for this
            // request until it completes or is freed (MPI §3.7.2).
            let r = unsafe { buffer::irecv_typed(&c.comm, buf, d, n, s, tag) }?;
            ReqEntry::Live(r, c.errh.get())
        }
    })
}

/// `MPI_Probe` (§3.8.1): waits for a matching message without receiving.
///
/// # Safety
///
/// `st` is `MPI_STATUS_IGNORE` or valid for one `MPI_Status`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Probe(
    src: c_int,
    tag: c_int,
    comm: Handle,
    st: *mut Status,
) -> c_int {
    boundary("MPI_Probe", comm, || {
        let c = handles::comm(comm)?;
        let tag = recv_tag(tag)?;
        let status = match source(src)? {
            Peer::Null => null_status(),
            Peer::Rank(s) => Status::from_mpi(&c.comm.probe(s, tag)?),
        };
        // SAFETY: the caller passes MPI_STATUS_IGNORE or a valid status.
        unsafe { status.store(st) };
        Ok(())
    })
}

/// `MPI_Iprobe` (§3.8.1): whether a matching message has arrived.
///
/// # Safety
///
/// `flag` must be valid for one `int`; `st` is `MPI_STATUS_IGNORE` or
/// valid for one `MPI_Status`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Iprobe(
    src: c_int,
    tag: c_int,
    comm: Handle,
    flag: *mut c_int,
    st: *mut Status,
) -> c_int {
    boundary("MPI_Iprobe", comm, || {
        let c = handles::comm(comm)?;
        let tag = recv_tag(tag)?;
        let found = match source(src)? {
            Peer::Null => Some(null_status()),
            Peer::Rank(s) => c.comm.iprobe(s, tag)?.as_ref().map(Status::from_mpi),
        };
        // SAFETY: the caller passes a valid flag pointer.
        unsafe { ffi::out(flag, c_int::from(found.is_some())) }?;
        if let Some(status) = found {
            // SAFETY: the caller passes MPI_STATUS_IGNORE or a valid status.
            unsafe { status.store(st) };
        }
        Ok(())
    })
}

/// `MPI_Get_count` and `MPI_Get_count_c`: the count as a `T`.
///
/// # Safety
///
/// `st` must be valid for reading one `MPI_Status`, `count` for writing
/// one `T`.
unsafe fn get_count<T: TryFrom<u64> + From<c_int>>(
    name: &str,
    st: *const Status,
    dt: Handle,
    count: *mut T,
) -> c_int {
    boundary(name, std::ptr::null_mut(), || {
        // SAFETY: the caller passes a valid status.
        let s = unsafe { status::read(st) }?;
        let size = datatype::lookup(dt)?.size as u64;
        let n = match (s.bytes(), size) {
            (0, _) => Some(0),
            (_, 0) => None,
            (b, z) => (b % z == 0).then_some(b / z),
        };
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(count, status::count_or_undefined(n)) }
    })
}

int_and_c! {
    /// `MPI_Get_count` (§3.2.5): elements of `dt` received; `MPI_UNDEFINED`
    /// if the bytes are not a whole number of them, or if the count does
    /// not fit the output.
    fn MPI_Get_count / MPI_Get_count_c(st: [*const Status], dt: [Handle], count: [*mut N]) => get_count;
}

/// `MPI_Test_cancelled` (§3.8.4).
///
/// # Safety
///
/// `st` must be valid for reading one `MPI_Status`, `flag` for writing
/// one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Test_cancelled(st: *const Status, flag: *mut c_int) -> c_int {
    boundary("MPI_Test_cancelled", std::ptr::null_mut(), || {
        // SAFETY: the caller passes a valid status.
        let s = unsafe { status::read(st) }?;
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(flag, c_int::from(s.cancelled())) }
    })
}
