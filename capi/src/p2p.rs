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

use crate::datatype::{self, buffer_len};
use crate::error::{boundary, Code, Res, MPI_ERR_RANK, MPI_ERR_TAG, MPI_ERR_TRUNCATE};
use crate::ffi;
use crate::handles::{self, CommEntry, Handle, ReqEntry};
use crate::status::{self, Status, ANY_SOURCE, ANY_TAG, PROC_NULL, UNDEFINED};

/// A peer argument: a rank (possibly the `mpi` crate's wildcard) or
/// `MPI_PROC_NULL`.
#[derive(Clone, Copy)]
enum Peer {
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

fn source(rank: c_int) -> Res<Peer> {
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

fn recv_tag(tag: c_int) -> Res<i32> {
    match tag {
        ANY_TAG => Ok(mpi::ANY_TAG),
        t => send_tag(t),
    }
}

/// The status of `MPI_PROC_NULL` operations (§3.11).
fn null_status() -> Status {
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

/// The checked arguments of a send: the communicator, the message, the
/// tag and the destination. Every send checks them in this order.
///
/// # Safety
///
/// `buf` must be valid for reading `count` elements of `dt`.
unsafe fn outgoing<'a>(
    comm: Handle,
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dst: c_int,
    tag: c_int,
) -> Res<(Rc<CommEntry>, &'a [u8], i32, Peer)> {
    let c = handles::comm(comm)?;
    let (len, _) = buffer_len(count, dt)?;
    let tag = send_tag(tag)?;
    // SAFETY: the caller's buffer holds `count` elements of `dt`.
    let data = unsafe { ffi::bytes(buf, len) }?;
    Ok((c, data, tag, dest(dst)?))
}

/// The checked arguments of a receive: the communicator, the room for
/// the message, the tag and the source. Every receive checks them in this
/// order.
///
/// # Safety
///
/// `buf` must be valid for writing `count` elements of `dt`.
unsafe fn incoming<'a>(
    comm: Handle,
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    src: c_int,
    tag: c_int,
) -> Res<(Rc<CommEntry>, &'a mut [u8], i32, Peer)> {
    let c = handles::comm(comm)?;
    let (len, _) = buffer_len(count, dt)?;
    let tag = recv_tag(tag)?;
    // SAFETY: the caller's buffer has room for `count` elements.
    let data = unsafe { ffi::bytes_mut(buf, len) }?;
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

/// The blocking sends: standard mode, or synchronous mode.
#[derive(Clone, Copy)]
enum Mode {
    Standard,
    Synchronous,
}

/// `MPI_Send` and `MPI_Ssend`.
///
/// # Safety
///
/// `buf` must be valid for reading `count` elements of `dt`.
unsafe fn blocking_send(
    mode: Mode,
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dst: c_int,
    tag: c_int,
    comm: Handle,
) -> c_int {
    let name = match mode {
        Mode::Standard => "MPI_Send",
        Mode::Synchronous => "MPI_Ssend",
    };
    boundary(name, comm, || {
        // SAFETY: the caller's buffer holds `count` elements of `dt`.
        let (c, data, tag, to) = unsafe { outgoing(comm, buf, count, dt, dst, tag) }?;
        match (to, mode) {
            (Peer::Null, _) => Ok(()),
            (Peer::Rank(r), Mode::Standard) => Ok(c.comm.send(data, r, tag)?),
            (Peer::Rank(r), Mode::Synchronous) => Ok(c.comm.ssend(data, r, tag)?),
        }
    })
}

/// `MPI_Send` (§3.2.1): standard-mode blocking send.
///
/// # Safety
///
/// `buf` must be valid for reading `count` elements of `dt`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Send(
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dst: c_int,
    tag: c_int,
    comm: Handle,
) -> c_int {
    // SAFETY: the caller upholds `blocking_send`'s contract, which is ours.
    unsafe { blocking_send(Mode::Standard, buf, count, dt, dst, tag, comm) }
}

/// `MPI_Ssend` (§3.4): synchronous-mode blocking send; returns once the
/// destination has started a receive that matched the message.
///
/// # Safety
///
/// As for `MPI_Send`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Ssend(
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dst: c_int,
    tag: c_int,
    comm: Handle,
) -> c_int {
    // SAFETY: the caller upholds `blocking_send`'s contract, which is ours.
    unsafe { blocking_send(Mode::Synchronous, buf, count, dt, dst, tag, comm) }
}

/// `MPI_Recv` (§3.2.4): blocking receive.
///
/// # Safety
///
/// `buf` must be valid for writing `count` elements of `dt`; `st` is
/// `MPI_STATUS_IGNORE` or valid for one `MPI_Status`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Recv(
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    src: c_int,
    tag: c_int,
    comm: Handle,
    st: *mut Status,
) -> c_int {
    boundary("MPI_Recv", comm, || {
        // SAFETY: the caller's buffer has room for `count` elements.
        let (c, data, tag, from) = unsafe { incoming(comm, buf, count, dt, src, tag) }?;
        let (status, r) = match from {
            Peer::Null => (null_status(), Ok(())),
            Peer::Rank(s) => recv_outcome(c.comm.recv(data, s, tag)),
        };
        // SAFETY: the caller passes MPI_STATUS_IGNORE or a valid status.
        unsafe { status.store(st) };
        r
    })
}

/// `MPI_Sendrecv` (§3.10): a send and a receive at once, deadlock-free.
///
/// # Safety
///
/// As for `MPI_Send` on the send side and `MPI_Recv` on the receive side;
/// the two buffers do not overlap.
#[export]
pub(crate) unsafe extern "C" fn MPI_Sendrecv(
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
    st: *mut Status,
) -> c_int {
    boundary("MPI_Sendrecv", comm, || {
        let c = handles::comm(comm)?;
        let (slen, _) = buffer_len(sendcount, sendtype)?;
        let (rlen, _) = buffer_len(recvcount, recvtype)?;
        let (stag, rtag) = (send_tag(sendtag)?, recv_tag(recvtag)?);
        let (to, from) = (dest(dst)?, source(src)?);
        // SAFETY: the caller's send buffer holds `sendcount` elements.
        let out = unsafe { ffi::bytes(sendbuf, slen) }?;
        // SAFETY: the caller's receive buffer has room for `recvcount`.
        let inp = unsafe { ffi::bytes_mut(recvbuf, rlen) }?;
        let (status, r) = match (to, from) {
            (Peer::Rank(d), Peer::Rank(s)) => {
                recv_outcome(c.comm.sendrecv(out, d, stag, inp, s, rtag))
            }
            (Peer::Rank(d), Peer::Null) => {
                (null_status(), c.comm.send(out, d, stag).map_err(Code::from))
            }
            (Peer::Null, Peer::Rank(s)) => recv_outcome(c.comm.recv(inp, s, rtag)),
            (Peer::Null, Peer::Null) => (null_status(), Ok(())),
        };
        // SAFETY: the caller passes MPI_STATUS_IGNORE or a valid status.
        unsafe { status.store(st) };
        r
    })
}

/// `MPI_Isend` (§3.7.2): starts a standard-mode send, which may read
/// `buf` until it completes.
///
/// # Safety
///
/// `buf` must be valid for reading `count` elements of `dt`; `req` valid
/// for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Isend(
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dst: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    boundary("MPI_Isend", comm, || {
        // SAFETY: the caller's buffer holds `count` elements of `dt`.
        let (c, data, tag, to) = unsafe { outgoing(comm, buf, count, dt, dst, tag) }?;
        let entry = match to {
            Peer::Null => ReqEntry::ProcNull,
            // SAFETY: MPI 4.1 §3.7.2: the caller leaves the buffer alone
            // until the request completes; a freed request (`MPI_Request_free`)
            // is dropped, which copies what has not gone out.
            Peer::Rank(r) => ReqEntry::Live(
                unsafe { mpi::raw::isend(&c.comm, data, r, tag) }?,
                c.errh.get(),
            ),
        };
        // SAFETY: the caller passes a valid output pointer.
        unsafe { new_request(entry, req) }
    })
}

/// `MPI_Irecv` (§3.7.2): starts a receive into `buf`, which belongs to
/// the request until it completes.
///
/// # Safety
///
/// `buf` must be valid for writing `count` elements of `dt` until the
/// request completes or is freed; `req` valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Irecv(
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    src: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    boundary("MPI_Irecv", comm, || {
        // SAFETY: checks the arguments and the pointer for null; the slice
        // is not kept (only its length).
        let (c, data, tag, from) = unsafe { incoming(comm, buf, count, dt, src, tag) }?;
        let len = data.len();
        let entry = match from {
            Peer::Null => ReqEntry::ProcNull,
            Peer::Rank(s) => {
                // SAFETY: the caller keeps `len` bytes at `buf` for this
                // request until it completes or is freed (MPI §3.7.2).
                let r = unsafe { mpi::raw::irecv(&c.comm, buf.cast(), len, s, tag) }?;
                ReqEntry::Live(r, c.errh.get())
            }
        };
        // SAFETY: the caller passes a valid output pointer.
        unsafe { new_request(entry, req) }
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

/// `MPI_Get_count` (§3.2.5): elements of `dt` received; `MPI_UNDEFINED`
/// if the bytes are not a whole number of them.
///
/// # Safety
///
/// `st` must be valid for reading one `MPI_Status`, `count` for writing
/// one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Get_count(
    st: *const Status,
    dt: Handle,
    count: *mut c_int,
) -> c_int {
    boundary("MPI_Get_count", std::ptr::null_mut(), || {
        // SAFETY: the caller passes a valid status.
        let s = unsafe { status::read(st) }?;
        let size = datatype::lookup(dt)?.extent as u64;
        let n = match (s.bytes(), size) {
            (0, _) => 0,
            (_, 0) => UNDEFINED,
            (b, z) if b % z == 0 => c_int::try_from(b / z).unwrap_or(UNDEFINED),
            _ => UNDEFINED,
        };
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(count, n) }
    })
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
