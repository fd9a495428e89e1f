//! The buffers of buffered-mode sends (MPI 5.0 §3.6): the process's
//! (`MPI_Buffer_attach`, `_detach`, `_flush`, `_iflush`) and each
//! communicator's (`MPI_Comm_attach_buffer`, ... §3.6.1), and the copy
//! every `MPI_Bsend`, `MPI_Ibsend` and started `MPI_Bsend_init` request
//! makes. A buffered send uses its communicator's buffer if one is
//! attached, else the process's. Session buffers are not here: o2g has
//! no sessions.
//!
//! A buffered send takes `MPI_BSEND_OVERHEAD` (512) bytes plus its
//! message's length of the buffer (first fit), copies the message there
//! and starts a standard-mode send from that copy; the space is free
//! again once that send completes, which each later buffered send
//! checks. When the message does not fit, the send fails with
//! `MPI_ERR_BUFFER`, as §3.6 asks. Detaching and the blocking flushes
//! wait until every buffered message has gone out; `MPI_Comm_free` does
//! so for the communicator's buffer, and detaches it. With
//! `MPI_BUFFER_AUTOMATIC` attached the library finds the room itself
//! (the transport's own copy), and no send fails for want of it.
//!
//! The nonblocking flushes move the sends in flight into one request
//! (the `mpi` crate's, joined pairwise as `MPI_Isendrecv` joins its two
//! halves), which completes when they all have; their blocks stay taken
//! while that request is in progress in the table, and a blocking flush
//! or detach waits for it (leaving it complete for the program to
//! report). A send belongs to one request: a second nonblocking flush
//! while the first is in progress covers only the sends started since.
//!
//! The buffers' bookkeeping is plain data behind a `Mutex`; the sends in
//! flight are requests of `handles.rs`'s table, under handles only this
//! module knows (or the flush request's, which the program holds).

use o2g_mpi_abi_macros::export;
use std::ffi::{c_int, c_void};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use crate::comm::CommMeta;
use crate::datatype::Count;
use crate::error::{boundary, Code, Res, MPI_ERR_ARG, MPI_ERR_BUFFER, MPI_ERR_COUNT, MPI_SUCCESS};
use crate::ffi::{self, int_and_c};
use crate::handles::{self, CommEntry, ErrMode, Handle, ReqEntry};
use crate::status::Status;

/// `MPI_BSEND_OVERHEAD` of the standard ABI.
const OVERHEAD: usize = 512;

/// `MPI_BUFFER_AUTOMATIC` of the standard ABI: `(void *)2`.
const AUTOMATIC: usize = 2;

/// Where the send of a buffered message stands: the handle value, in
/// `handles.rs`'s table, of the request that carries it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Flight {
    /// Its own request.
    Own(usize),
    /// Part of the request of a nonblocking flush: in flight while that
    /// request is in the table and in progress.
    Flushing(usize),
}

/// One message in an attached buffer: where, how long, and its send.
struct Block {
    off: usize,
    len: usize,
    flight: Flight,
}

/// An attached buffer.
struct Attached {
    /// The address the program attached (`AUTOMATIC` for that).
    base: usize,
    size: usize,
    /// Messages in flight, by offset.
    blocks: Vec<Block>,
    /// The first error a buffered send completed with, seen while making
    /// room for a later one: a flush or detach reports it (a later,
    /// unrelated `MPI_Bsend` must not fail for it).
    failed: Option<Code>,
}

/// Every attached buffer: the process's and the communicators'. A
/// communicator is known by its `CommMeta`; the `Weak` keeps that
/// allocation, so its address cannot be another communicator's.
#[derive(Default)]
struct Buffers {
    process: Option<Attached>,
    comms: Vec<(Weak<CommMeta>, Attached)>,
}

static BUFFERS: Mutex<Buffers> = Mutex::new(Buffers {
    process: None,
    comms: Vec::new(),
});

fn buffers() -> MutexGuard<'static, Buffers> {
    BUFFERS.lock().unwrap_or_else(|e| e.into_inner())
}

impl Buffers {
    /// Where the buffer of the communicator with data `meta` is.
    fn comm_at(&self, meta: &Arc<CommMeta>) -> Option<usize> {
        self.comms
            .iter()
            .position(|(w, _)| std::ptr::eq(w.as_ptr(), Arc::as_ptr(meta)))
    }

    /// The buffer of that communicator, if it has one.
    fn comm(&mut self, meta: &Arc<CommMeta>) -> Option<&mut Attached> {
        let at = self.comm_at(meta)?;
        Some(&mut self.comms[at].1)
    }
}

/// Settles the flush request under handle value `h`: whether its sends
/// have all completed. With `wait`, waits for it; without, tests it once.
/// A request that completes is put back complete, for the program to
/// report; one the program has completed or freed is gone from the table
/// (a freed request let go of the data when it was dropped).
fn settle_flush(h: usize, wait: bool) -> Res<bool> {
    let h = handles::handle(h);
    let Ok(Some(entry)) = handles::take_request(h) else {
        return Ok(true);
    };
    let ReqEntry::Live(mut r, m) = entry else {
        handles::put_request(h, entry)?;
        return Ok(true);
    };
    let outcome = if wait {
        r.wait()
    } else {
        match r.test() {
            Ok(None) => {
                handles::put_request(h, ReqEntry::Live(r, m))?;
                return Ok(false);
            }
            Ok(Some(s)) => Ok(s),
            Err(e) => Err(e),
        }
    };
    let (status, res) = crate::p2p::recv_outcome(outcome);
    let code = res.err().map_or(MPI_SUCCESS, |Code(c)| c);
    handles::put_request(h, ReqEntry::Done(status, code, m))?;
    Ok(true)
}

impl Attached {
    /// Forgets the blocks whose send has completed; with `wait`, waits
    /// for all of them first. The first error a send of its own completed
    /// with (a flush request reports its sends' errors itself).
    fn reclaim(&mut self, wait: bool) -> Res<()> {
        let mut flushes: Vec<usize> = Vec::new();
        for b in &self.blocks {
            if let Flight::Flushing(h) = b.flight {
                if !flushes.contains(&h) {
                    flushes.push(h);
                }
            }
        }
        let mut settled = Vec::with_capacity(flushes.len());
        for &h in &flushes {
            if settle_flush(h, wait)? {
                settled.push(h);
            }
        }
        self.blocks
            .retain(|b| !matches!(b.flight, Flight::Flushing(h) if settled.contains(&h)));

        let mut live = Vec::with_capacity(self.blocks.len());
        let mut modes = Vec::with_capacity(self.blocks.len());
        for b in &self.blocks {
            let (r, m) = match b.flight {
                Flight::Own(req) => match handles::take_request(handles::handle(req))? {
                    Some(ReqEntry::Live(r, m)) => (Some(r), m),
                    _ => (None, ErrMode::Return),
                },
                Flight::Flushing(_) => (None, ErrMode::Return),
            };
            live.push(r);
            modes.push(m);
        }
        let mut first_err = Ok(());
        let outcomes = if wait {
            mpi::request::wait_each(live.iter_mut().filter_map(Option::take).collect())
                .map(|v| v.into_iter().enumerate().collect::<Vec<_>>())
        } else {
            mpi::request::test_some(&mut live)
        };
        for (_, outcome) in outcomes? {
            if let (Err(e), Ok(())) = (outcome, &first_err) {
                first_err = Err(Code::from(e));
            }
        }
        // What is still in flight goes back under its handle.
        let mut kept = Vec::with_capacity(self.blocks.len());
        for ((b, r), mode) in self.blocks.drain(..).zip(live).zip(modes) {
            match (b.flight, r) {
                (Flight::Own(req), Some(r)) => {
                    handles::put_request(handles::handle(req), ReqEntry::Live(r, mode))?;
                    kept.push(b);
                }
                (Flight::Flushing(_), _) => kept.push(b),
                (Flight::Own(_), None) => {}
            }
        }
        self.blocks = kept;
        first_err
    }

    /// Waits until every message buffered so far has gone out; the first
    /// error any of them (or an earlier one, seen meanwhile) ended with.
    fn flush(&mut self) -> Res<()> {
        let waited = self.reclaim(true);
        let earlier = self.failed.take();
        waited?;
        earlier.map_or(Ok(()), Err)
    }

    /// `MPI_Buffer_iflush`'s work: a request (error mode `mode`) that
    /// completes once the messages buffered so far, and not covered by an
    /// earlier flush request still in progress, have gone out.
    fn iflush(&mut self, mode: ErrMode) -> Res<Handle> {
        if let Err(e) = self.reclaim(false) {
            self.failed.get_or_insert(e);
        }
        let mut sends = Vec::new();
        let mut moved = Vec::new();
        for (i, b) in self.blocks.iter().enumerate() {
            let Flight::Own(req) = b.flight else { continue };
            let h = handles::handle(req);
            match handles::take_request(h)? {
                Some(ReqEntry::Live(r, _)) => {
                    sends.push(r);
                    moved.push(i);
                }
                Some(other) => handles::put_request(h, other)?,
                None => {}
            }
        }
        let Some(all) = join(sends) else {
            // Nothing in flight: complete at once, with an earlier error.
            let code = self.failed.take().map_or(MPI_SUCCESS, |Code(c)| c);
            return handles::new_request(ReqEntry::Done(Status::empty(), code, mode));
        };
        let h = handles::new_request(ReqEntry::Live(all, mode))?;
        for i in moved {
            self.blocks[i].flight = Flight::Flushing(handles::value(h));
        }
        Ok(h)
    }

    /// The offset of the first gap of `need` bytes.
    fn fit(&self, need: usize) -> Option<usize> {
        let mut at = 0;
        for b in &self.blocks {
            if b.off - at >= need {
                return Some(at);
            }
            at = b.off + b.len + OVERHEAD;
        }
        (self.size.checked_sub(at)? >= need).then_some(at)
    }

    /// A buffered-mode send of `data` to `dest` on `c` from this buffer.
    fn send(&mut self, c: &CommEntry, data: &[u8], dest: i32, tag: i32) -> Res<()> {
        if self.base == AUTOMATIC {
            // SAFETY: the request is dropped at once, which copies what
            // the transport has not taken yet; `data` is not touched
            // meanwhile.
            drop(unsafe { mpi::raw::isend(&c.comm, data, dest, tag) }?);
            return Ok(());
        }
        if let Err(e) = self.reclaim(false) {
            self.failed.get_or_insert(e);
        }
        let need = data
            .len()
            .checked_add(OVERHEAD)
            .ok_or(Code(MPI_ERR_BUFFER))?;
        let off = self.fit(need).ok_or(Code(MPI_ERR_BUFFER))?;
        let at = std::ptr::with_exposed_provenance_mut::<c_void>(self.base + off);
        // SAFETY: the attached buffer belongs to MPI until it is detached
        // (§3.6), and `off + len` is within its `size` bytes, in a gap no
        // block in flight uses.
        let copy = unsafe { ffi::bytes_mut(at, data.len()) }?;
        copy.copy_from_slice(data);
        // SAFETY: the copy stays unchanged until the request completes:
        // the block keeps its bytes until then (also inside a flush
        // request), detach waits for it, and the request is never leaked
        // (dropping it, at finalize or when the program frees a flush
        // request, waits until the transport no longer reads the bytes).
        let r = unsafe { mpi::raw::isend(&c.comm, copy, dest, tag) }?;
        let req = handles::value(handles::new_request(ReqEntry::Live(r, c.errh.get()))?);
        let pos = self.blocks.partition_point(|b| b.off < off);
        self.blocks.insert(
            pos,
            Block {
                off,
                len: data.len(),
                flight: Flight::Own(req),
            },
        );
        Ok(())
    }
}

/// One request that completes once all of `rs` have (joined pairwise, so
/// testing it recurses only as deep as the logarithm of their number);
/// `None` for none.
fn join(mut rs: Vec<mpi::Request<'static>>) -> Option<mpi::Request<'static>> {
    while rs.len() > 1 {
        let mut next = Vec::with_capacity(rs.len().div_ceil(2));
        let mut it = rs.into_iter();
        while let Some(a) = it.next() {
            next.push(match it.next() {
                Some(b) => mpi::raw::send_recv(a, b),
                None => a,
            });
        }
        rs = next;
    }
    rs.pop()
}

/// A buffered-mode send of `data` to `dest` (§3.6): copied into the
/// buffer attached to `c`, or else the process's, from which a
/// standard-mode send starts.
pub(crate) fn send(c: &CommEntry, data: &[u8], dest: i32, tag: i32) -> Res<()> {
    let mut guard = buffers();
    let b = &mut *guard;
    let att = match b.comm_at(&c.meta) {
        Some(i) => &mut b.comms[i].1,
        None => b.process.as_mut().ok_or(Code(MPI_ERR_BUFFER))?,
    };
    att.send(c, data, dest, tag)
}

/// `MPI_Comm_free`'s part (§3.6.1): waits until the messages buffered on
/// the communicator with data `meta` have gone out, then detaches its
/// buffer; the first error they ended with.
pub(crate) fn comm_freed(meta: &Arc<CommMeta>) -> Res<()> {
    let mut guard = buffers();
    let Some(at) = guard.comm_at(meta) else {
        return Ok(());
    };
    let flushed = guard.comms[at].1.flush();
    guard.comms.swap_remove(at);
    flushed
}

/// A new buffer for `attach`: `size` bytes at `buf`, or
/// `MPI_BUFFER_AUTOMATIC`.
///
/// # Safety
///
/// As for [`attach`].
unsafe fn new_buffer<N: Count>(buf: *mut c_void, size: N) -> Res<Attached> {
    let base = buf.expose_provenance();
    let size = if base == AUTOMATIC {
        0
    } else {
        let size = size.try_into().map_err(|_| Code(MPI_ERR_BUFFER))?;
        // SAFETY: only checked for null with a size; not kept.
        unsafe { ffi::bytes_mut(buf, size) }?;
        size
    };
    Ok(Attached {
        base,
        size,
        blocks: Vec::new(),
        failed: None,
    })
}

/// `MPI_Buffer_attach` and `MPI_Buffer_attach_c`.
///
/// # Safety
///
/// `buf` is `MPI_BUFFER_AUTOMATIC` or valid for reads and writes of
/// `size` bytes, and left to MPI until detached.
unsafe fn attach<N: Count>(name: &str, buf: *mut c_void, size: N) -> c_int {
    boundary(name, std::ptr::null_mut(), || {
        handles::running()?;
        // SAFETY: the caller's contract.
        let new = unsafe { new_buffer(buf, size) }?;
        let mut guard = buffers();
        if guard.process.is_some() {
            return Err(Code(MPI_ERR_BUFFER));
        }
        guard.process = Some(new);
        Ok(())
    })
}

int_and_c! {
    /// `MPI_Buffer_attach` (§3.6.1): gives MPI `size` bytes at `buf` for
    /// buffered sends, or `MPI_BUFFER_AUTOMATIC`; `MPI_ERR_BUFFER` if a
    /// buffer is attached already or `size` is negative.
    fn MPI_Buffer_attach / MPI_Buffer_attach_c(buf: [*mut c_void], size: [N]) => attach;
}

/// `MPI_Comm_attach_buffer` and `MPI_Comm_attach_buffer_c`.
///
/// # Safety
///
/// As for [`attach`].
unsafe fn comm_attach<N: Count>(name: &str, comm: Handle, buf: *mut c_void, size: N) -> c_int {
    boundary(name, comm, || {
        let c = handles::comm(comm)?;
        // SAFETY: the caller's contract.
        let new = unsafe { new_buffer(buf, size) }?;
        let mut guard = buffers();
        if guard.comm_at(&c.meta).is_some() {
            return Err(Code(MPI_ERR_BUFFER));
        }
        guard.comms.push((Arc::downgrade(&c.meta), new));
        Ok(())
    })
}

int_and_c! {
    /// `MPI_Comm_attach_buffer` (§3.6.1): gives MPI `size` bytes at `buf`
    /// (or `MPI_BUFFER_AUTOMATIC`) for the buffered sends on `comm`, which
    /// then use it instead of the process's; `MPI_ERR_BUFFER` if `comm`
    /// has one already or `size` is negative. Not inherited by
    /// communicators made from `comm`.
    fn MPI_Comm_attach_buffer / MPI_Comm_attach_buffer_c(
        comm: [Handle], buf: [*mut c_void], size: [N]
    ) => comm_attach;
}

/// Detaches `slot`'s buffer after waiting for its messages, and writes
/// its address and size (null and 0 for none) to the C out-arguments.
///
/// # Safety
///
/// `buf_addr` must be valid for a write of one pointer, `size` of one
/// `T`.
unsafe fn detach_from<T: TryFrom<usize>>(
    slot: &mut Option<Attached>,
    buf_addr: *mut c_void,
    size: *mut T,
) -> Res<()> {
    let (base, len) = match slot.as_mut() {
        Some(att) => {
            // A size the output cannot hold leaves the buffer attached.
            let len = T::try_from(att.size).map_err(|_| Code(MPI_ERR_COUNT))?;
            let flushed = att.flush();
            let base = att.base;
            *slot = None;
            flushed?;
            (base, len)
        }
        None => (0, T::try_from(0).map_err(|_| Code(MPI_ERR_COUNT))?),
    };
    let addr = std::ptr::with_exposed_provenance_mut::<c_void>(base);
    // SAFETY: the C binding passes a `void **` as `void *`.
    unsafe { ffi::out(buf_addr.cast::<*mut c_void>(), addr) }?;
    // SAFETY: the caller passes a valid output pointer.
    unsafe { ffi::out(size, len) }
}

/// `MPI_Buffer_detach` and `MPI_Buffer_detach_c`: the size as a `T`.
///
/// # Safety
///
/// As for [`detach_from`].
unsafe fn detach<T: TryFrom<usize>>(name: &str, buf_addr: *mut c_void, size: *mut T) -> c_int {
    boundary(name, std::ptr::null_mut(), || {
        handles::running()?;
        let mut guard = buffers();
        // SAFETY: the caller's contract.
        unsafe { detach_from(&mut guard.process, buf_addr, size) }
    })
}

int_and_c! {
    /// `MPI_Buffer_detach` (§3.6.1): waits until every buffered message has
    /// gone out, then hands back the buffer's address (in `*buf_addr`) and
    /// size; null and 0 when none is attached. `MPI_ERR_COUNT`, with the
    /// buffer left attached, if the `int` form cannot hold its size.
    fn MPI_Buffer_detach / MPI_Buffer_detach_c(buf_addr: [*mut c_void], size: [*mut N]) => detach;
}

/// `MPI_Comm_detach_buffer` and `MPI_Comm_detach_buffer_c`.
///
/// # Safety
///
/// As for [`detach_from`].
unsafe fn comm_detach<T: TryFrom<usize>>(
    name: &str,
    comm: Handle,
    buf_addr: *mut c_void,
    size: *mut T,
) -> c_int {
    boundary(name, comm, || {
        let c = handles::comm(comm)?;
        let mut guard = buffers();
        let mut slot = guard.comm_at(&c.meta).map(|i| guard.comms.swap_remove(i).1);
        // SAFETY: the caller's contract.
        let res = unsafe { detach_from(&mut slot, buf_addr, size) };
        // Still attached if its size did not fit the output.
        if let Some(att) = slot {
            guard.comms.push((Arc::downgrade(&c.meta), att));
        }
        res
    })
}

int_and_c! {
    /// `MPI_Comm_detach_buffer` (§3.6.1): as `MPI_Buffer_detach`, for the
    /// buffer attached to `comm`.
    fn MPI_Comm_detach_buffer / MPI_Comm_detach_buffer_c(
        comm: [Handle], buf_addr: [*mut c_void], size: [*mut N]
    ) => comm_detach;
}

/// `MPI_Buffer_flush` (§3.6.1): waits until every message buffered so far
/// in the process's buffer has gone out; the buffer stays attached.
#[export]
pub(crate) extern "C" fn MPI_Buffer_flush() -> c_int {
    boundary("MPI_Buffer_flush", std::ptr::null_mut(), || {
        handles::running()?;
        buffers().process.as_mut().map_or(Ok(()), Attached::flush)
    })
}

/// `MPI_Comm_flush_buffer` (§3.6.1): as `MPI_Buffer_flush`, for the
/// buffer attached to `comm` (nothing to do if it has none).
#[export]
pub(crate) extern "C" fn MPI_Comm_flush_buffer(comm: Handle) -> c_int {
    boundary("MPI_Comm_flush_buffer", comm, || {
        let c = handles::comm(comm)?;
        buffers().comm(&c.meta).map_or(Ok(()), Attached::flush)
    })
}

/// A flush request for `att` (complete at once for no buffer).
fn iflush_of(att: Option<&mut Attached>, mode: ErrMode) -> Res<Handle> {
    match att {
        Some(att) => att.iflush(mode),
        None => handles::new_request(ReqEntry::Done(Status::empty(), MPI_SUCCESS, mode)),
    }
}

/// `MPI_Buffer_iflush` (§3.6.1): a request that completes once the
/// messages in the process's buffer at the call have gone out (see the
/// module docs for two flush requests at once); the buffer stays
/// attached.
///
/// # Safety
///
/// `request` must be valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Buffer_iflush(request: *mut Handle) -> c_int {
    boundary("MPI_Buffer_iflush", std::ptr::null_mut(), || {
        handles::running()?;
        // Checked first: a request made for nowhere would hold the sends.
        if request.is_null() {
            return Err(Code(MPI_ERR_ARG));
        }
        let mode = handles::errmode(handles::handle(handles::COMM_WORLD));
        let h = iflush_of(buffers().process.as_mut(), mode)?;
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(request, h) }
    })
}

/// `MPI_Comm_iflush_buffer` (§3.6.1): as `MPI_Buffer_iflush`, for the
/// buffer attached to `comm` (a complete request if it has none).
///
/// # Safety
///
/// `request` must be valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Comm_iflush_buffer(
    comm: Handle,
    request: *mut Handle,
) -> c_int {
    boundary("MPI_Comm_iflush_buffer", comm, || {
        let c = handles::comm(comm)?;
        // Checked first: a request made for nowhere would hold the sends.
        if request.is_null() {
            return Err(Code(MPI_ERR_ARG));
        }
        let h = iflush_of(buffers().comm(&c.meta), c.errh.get())?;
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(request, h) }
    })
}
