//! Matched probe and receive (MPI 5.0 §3.8.2, §3.8.3): `MPI_Mprobe`,
//! `MPI_Improbe`, `MPI_Mrecv`, `MPI_Imrecv` and `MPI_Message` handles.
//!
//! A matched probe takes the message out of matching in the `mpi` crate
//! (`Communicator::improbe`), so no other receive or probe, of this
//! thread or another, can take it; the message handle then names it until
//! `MPI_Mrecv` or `MPI_Imrecv` receives it. A probe with `MPI_PROC_NULL`
//! returns `MPI_MESSAGE_NO_PROC`, whose receive completes at once with
//! the status of §3.11.

use o2g_mpi_abi_macros::export;
use std::ffi::{c_int, c_void};

use crate::datatype::Count;
use crate::error::{boundary, boundary_req, Res};
use crate::ffi::{self, int_and_c};
use crate::handles::{self, ErrMode, Handle, MsgEntry, ReqEntry};
use crate::p2p::{self, incoming, null_status, recv_outcome, Peer};
use crate::status::{Status, ANY_SOURCE, ANY_TAG};

/// `MPI_MESSAGE_NULL` of the standard ABI.
const MESSAGE_NULL: usize = 0x128;
/// `MPI_MESSAGE_NO_PROC` of the standard ABI.
const MESSAGE_NO_PROC: usize = 0x129;

/// A matched probe: the message handle and its status, `None` if nothing
/// matched yet (only without `block`).
fn probe(src: c_int, tag: c_int, comm: Handle, block: bool) -> Res<Option<(Handle, Status)>> {
    let c = handles::comm(comm)?;
    let tag = p2p::recv_tag(tag)?;
    let s = match p2p::source(src)? {
        Peer::Null => return Ok(Some((handles::handle(MESSAGE_NO_PROC), null_status()))),
        Peer::Rank(s) => s,
    };
    let found = if block {
        Some(c.comm.mprobe(s, tag)?)
    } else {
        c.comm.improbe(s, tag)?
    };
    match found {
        None => Ok(None),
        Some(msg) => {
            let status = Status::from_mpi(&msg.status());
            let h = handles::new_message(MsgEntry { msg, comm })?;
            Ok(Some((h, status)))
        }
    }
}

/// `MPI_Mprobe` (§3.8.2): waits for a matching message and takes it out
/// of matching; `message` names it for `MPI_Mrecv`/`MPI_Imrecv`.
///
/// # Safety
///
/// `message` must be valid for a write of one handle; `st` is
/// `MPI_STATUS_IGNORE` or valid for one `MPI_Status`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Mprobe(
    src: c_int,
    tag: c_int,
    comm: Handle,
    message: *mut Handle,
    st: *mut Status,
) -> c_int {
    boundary("MPI_Mprobe", comm, || {
        if let Some((h, status)) = probe(src, tag, comm, true)? {
            // SAFETY: the caller passes a valid output pointer.
            unsafe { ffi::out(message, h) }?;
            // SAFETY: the caller passes MPI_STATUS_IGNORE or a valid status.
            unsafe { status.store(st) };
        }
        Ok(())
    })
}

/// `MPI_Improbe` (§3.8.2): if a matching message has arrived, takes it out
/// of matching and sets `flag`; `message` names it.
///
/// # Safety
///
/// `flag` must be valid for one `int`, `message` for one handle; `st` is
/// `MPI_STATUS_IGNORE` or valid for one `MPI_Status`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Improbe(
    src: c_int,
    tag: c_int,
    comm: Handle,
    flag: *mut c_int,
    message: *mut Handle,
    st: *mut Status,
) -> c_int {
    boundary("MPI_Improbe", comm, || {
        let found = probe(src, tag, comm, false)?;
        // SAFETY: the caller passes a valid flag pointer.
        unsafe { ffi::out(flag, c_int::from(found.is_some())) }?;
        if let Some((h, status)) = found {
            // SAFETY: the caller passes a valid output pointer.
            unsafe { ffi::out(message, h) }?;
            // SAFETY: the caller passes MPI_STATUS_IGNORE or a valid status.
            unsafe { status.store(st) };
        }
        Ok(())
    })
}

/// What a matched receive receives: the message (`None` for
/// `MPI_MESSAGE_NO_PROC`), the room for it and the communicator's error
/// mode. `*message` becomes `MPI_MESSAGE_NULL`; on an error the message
/// stays where it was.
///
/// # Safety
///
/// `message` valid for reading and writing one handle; `buf` valid for
/// writing `count` elements of `dt` (and kept for the receive).
unsafe fn matched<'a, N: Count>(
    message: *mut Handle,
    buf: *mut c_void,
    count: N,
    dt: Handle,
    mode: &mut ErrMode,
) -> Res<Option<(mpi::Message, crate::buffer::Recv<'a>)>> {
    // SAFETY: the caller passes a valid in-out pointer.
    let mh = unsafe { ffi::inout(message) }?;
    if handles::value(*mh) == MESSAGE_NO_PROC {
        *mh = handles::handle(MESSAGE_NULL);
        return Ok(None);
    }
    let MsgEntry { msg, comm } = handles::take_message(*mh)?;
    // SAFETY: the caller's buffer has room for `count` elements of `dt`.
    match unsafe { incoming(comm, buf, count, dt, ANY_SOURCE, ANY_TAG) } {
        Ok((c, data, _, _)) => {
            *mode = c.errh.get();
            *mh = handles::handle(MESSAGE_NULL);
            Ok(Some((msg, data)))
        }
        Err(e) => {
            handles::put_message(*mh, MsgEntry { msg, comm })?;
            Err(e)
        }
    }
}

/// `MPI_Mrecv` and `MPI_Mrecv_c`.
///
/// # Safety
///
/// `buf` must be valid for writing `count` elements of `dt`; `message`
/// valid for reading and writing one handle; `st` is
/// `MPI_STATUS_IGNORE` or valid for one `MPI_Status`.
unsafe fn mrecv<N: Count>(
    name: &str,
    buf: *mut c_void,
    count: N,
    dt: Handle,
    message: *mut Handle,
    st: *mut Status,
) -> c_int {
    boundary_req(name, |mode| {
        // SAFETY: the caller's contract is `matched`'s.
        let (status, r) = match unsafe { matched(message, buf, count, dt, mode) }? {
            None => (null_status(), Ok(())),
            Some((msg, mut data)) => {
                let r = msg.recv(data.bytes());
                data.finish(crate::buffer::received(&r));
                recv_outcome(r)
            }
        };
        // SAFETY: the caller passes MPI_STATUS_IGNORE or a valid status.
        unsafe { status.store(st) };
        r
    })
}

int_and_c! {
    /// `MPI_Mrecv` (§3.8.3): receives the message a matched probe took.
    fn MPI_Mrecv / MPI_Mrecv_c(
        buf: [*mut c_void], count: [N], dt: [Handle], message: [*mut Handle], st: [*mut Status],
    ) => mrecv;
}

/// `MPI_Imrecv` and `MPI_Imrecv_c`.
///
/// # Safety
///
/// `buf` must be valid for writing `count` elements of `dt` until the
/// request completes or is freed; `message` valid for reading and writing
/// one handle, `req` for a write of one.
unsafe fn imrecv<N: Count>(
    name: &str,
    buf: *mut c_void,
    count: N,
    dt: Handle,
    message: *mut Handle,
    req: *mut Handle,
) -> c_int {
    boundary_req(name, |mode| {
        // SAFETY: the caller's contract is `matched`'s; the slice is not
        // kept (only its length).
        let entry = match unsafe { matched(message, buf, count, dt, mode) }? {
            None => ReqEntry::ProcNull,
            Some((msg, crate::buffer::Recv::Direct(data))) => {
                let (p, len) = (data.as_mut_ptr(), data.len());
                // SAFETY: the caller keeps `len` bytes at `buf` for this
                // request until it completes or is freed (§3.8.3).
                let r = unsafe { mpi::raw::imrecv(msg, p, len) };
                ReqEntry::Live(r, *mode)
            }
            Some((msg, staged)) => ReqEntry::Live(crate::buffer::imrecv_staged(msg, staged), *mode),
        };
        let h = handles::new_request(entry)?;
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(req, h) }
    })
}

int_and_c! {
    /// `MPI_Imrecv` (§3.8.3): starts receiving the message a matched probe
    /// took; `buf` belongs to the request until it completes.
    fn MPI_Imrecv / MPI_Imrecv_c(
        buf: [*mut c_void], count: [N], dt: [Handle], message: [*mut Handle], req: [*mut Handle],
    ) => imrecv;
}
