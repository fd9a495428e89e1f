//! The buffer of buffered-mode sends (MPI 5.0 §3.6): `MPI_Buffer_attach`,
//! `MPI_Buffer_detach`, `MPI_Buffer_flush`, and the copy every `MPI_Bsend`,
//! `MPI_Ibsend` and started `MPI_Bsend_init` request makes.
//!
//! A buffered send takes `MPI_BSEND_OVERHEAD` (512) bytes plus its
//! message's length of the attached buffer (first fit), copies the
//! message there and starts a standard-mode send from that copy; the
//! space is free again once that send completes, which each later
//! buffered send checks. When the message does not fit, the send fails
//! with `MPI_ERR_BUFFER`, as §3.6 asks. `MPI_Buffer_detach` and
//! `MPI_Buffer_flush` wait until every buffered message has gone out.
//! With `MPI_BUFFER_AUTOMATIC` attached the library finds the room
//! itself (the transport's own copy), and no send fails for want of it.
//!
//! The buffer's bookkeeping is plain data behind a `Mutex`; the sends in
//! flight are requests of `handles.rs`'s table, under handles only this
//! module knows.

use o2g_mpi_abi_macros::export;
use std::ffi::{c_int, c_void};
use std::sync::{Mutex, MutexGuard};

use crate::datatype::Count;
use crate::error::{boundary, Code, Res, MPI_ERR_BUFFER, MPI_ERR_COUNT};
use crate::ffi::{self, int_and_c};
use crate::handles::{self, CommEntry, ErrMode, ReqEntry};

/// `MPI_BSEND_OVERHEAD` of the standard ABI.
const OVERHEAD: usize = 512;

/// `MPI_BUFFER_AUTOMATIC` of the standard ABI: `(void *)2`.
const AUTOMATIC: usize = 2;

/// One message in the attached buffer: where, how long, and the request
/// of its send (a handle value of `handles.rs`'s table).
struct Block {
    off: usize,
    len: usize,
    req: usize,
}

/// The attached buffer.
struct Attached {
    /// The address the program attached (`AUTOMATIC` for that).
    base: usize,
    size: usize,
    /// Messages in flight, by offset.
    blocks: Vec<Block>,
    /// The first error a buffered send completed with, seen while making
    /// room for a later one: `MPI_Buffer_flush` / `detach` report it (a
    /// later, unrelated `MPI_Bsend` must not fail for it).
    failed: Option<Code>,
}

static BUFFER: Mutex<Option<Attached>> = Mutex::new(None);

fn buffer() -> MutexGuard<'static, Option<Attached>> {
    BUFFER.lock().unwrap_or_else(|e| e.into_inner())
}

impl Attached {
    /// Forgets the blocks whose send has completed; with `wait`, waits
    /// for all of them first. The first error a send completed with.
    fn reclaim(&mut self, wait: bool) -> Res<()> {
        let mut live = Vec::with_capacity(self.blocks.len());
        let mut modes = Vec::with_capacity(self.blocks.len());
        for b in &self.blocks {
            let (r, m) = match handles::take_request(handles::handle(b.req))? {
                Some(ReqEntry::Live(r, m)) => (Some(r), m),
                _ => (None, ErrMode::Return),
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
            if let Some(r) = r {
                handles::put_request(handles::handle(b.req), ReqEntry::Live(r, mode))?;
                kept.push(b);
            }
        }
        self.blocks = kept;
        first_err
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
}

/// A buffered-mode send of `data` to `dest` (§3.6): copied into the
/// attached buffer, from which a standard-mode send starts.
pub(crate) fn send(c: &CommEntry, data: &[u8], dest: i32, tag: i32) -> Res<()> {
    let mut guard = buffer();
    let Some(att) = guard.as_mut() else {
        return Err(Code(MPI_ERR_BUFFER));
    };
    if att.base == AUTOMATIC {
        // SAFETY: the request is dropped at once, which copies what the
        // transport has not taken yet; `data` is not touched meanwhile.
        drop(unsafe { mpi::raw::isend(&c.comm, data, dest, tag) }?);
        return Ok(());
    }
    if let Err(e) = att.reclaim(false) {
        att.failed.get_or_insert(e);
    }
    let need = data
        .len()
        .checked_add(OVERHEAD)
        .ok_or(Code(MPI_ERR_BUFFER))?;
    let off = att.fit(need).ok_or(Code(MPI_ERR_BUFFER))?;
    let at = std::ptr::with_exposed_provenance_mut::<c_void>(att.base + off);
    // SAFETY: the attached buffer belongs to MPI until it is detached
    // (§3.6), and `off + len` is within its `size` bytes, in a gap no
    // block in flight uses.
    let copy = unsafe { ffi::bytes_mut(at, data.len()) }?;
    copy.copy_from_slice(data);
    // SAFETY: the copy stays unchanged until the request completes: the
    // block keeps its bytes until then, detach waits for it, and the
    // request is never leaked (finalize drops it, which copies what is
    // left).
    let r = unsafe { mpi::raw::isend(&c.comm, copy, dest, tag) }?;
    let req = handles::value(handles::new_request(ReqEntry::Live(r, c.errh.get()))?);
    let pos = att.blocks.partition_point(|b| b.off < off);
    att.blocks.insert(
        pos,
        Block {
            off,
            len: data.len(),
            req,
        },
    );
    Ok(())
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
        let base = buf.expose_provenance();
        let size = if base == AUTOMATIC {
            0
        } else {
            let size = size.try_into().map_err(|_| Code(MPI_ERR_BUFFER))?;
            // SAFETY: only checked for null with a size; not kept.
            unsafe { ffi::bytes_mut(buf, size) }?;
            size
        };
        let mut guard = buffer();
        if guard.is_some() {
            return Err(Code(MPI_ERR_BUFFER));
        }
        *guard = Some(Attached {
            base,
            size,
            blocks: Vec::new(),
            failed: None,
        });
        Ok(())
    })
}

int_and_c! {
    /// `MPI_Buffer_attach` (§3.6.1): gives MPI `size` bytes at `buf` for
    /// buffered sends, or `MPI_BUFFER_AUTOMATIC`; `MPI_ERR_BUFFER` if a
    /// buffer is attached already or `size` is negative.
    fn MPI_Buffer_attach / MPI_Buffer_attach_c(buf: [*mut c_void], size: [N]) => attach;
}

/// `MPI_Buffer_detach` and `MPI_Buffer_detach_c`: the size as a `T`.
///
/// # Safety
///
/// `buf_addr` must be valid for a write of one pointer, `size` of one
/// `T`.
unsafe fn detach<T: TryFrom<usize>>(name: &str, buf_addr: *mut c_void, size: *mut T) -> c_int {
    boundary(name, std::ptr::null_mut(), || {
        handles::running()?;
        let mut guard = buffer();
        let (base, len) = match guard.as_mut() {
            Some(att) => {
                // A size the output cannot hold leaves the buffer attached.
                let len = T::try_from(att.size).map_err(|_| Code(MPI_ERR_COUNT))?;
                let waited = att.reclaim(true);
                let earlier = att.failed.take();
                let base = att.base;
                *guard = None;
                waited?;
                earlier.map_or(Ok(()), Err)?;
                (base, len)
            }
            None => (0, T::try_from(0).map_err(|_| Code(MPI_ERR_COUNT))?),
        };
        let addr = std::ptr::with_exposed_provenance_mut::<c_void>(base);
        // SAFETY: the C binding passes a `void **` as `void *`.
        unsafe { ffi::out(buf_addr.cast::<*mut c_void>(), addr) }?;
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(size, len) }
    })
}

int_and_c! {
    /// `MPI_Buffer_detach` (§3.6.1): waits until every buffered message has
    /// gone out, then hands back the buffer's address (in `*buf_addr`) and
    /// size; null and 0 when none is attached. `MPI_ERR_COUNT`, with the
    /// buffer left attached, if the `int` form cannot hold its size.
    fn MPI_Buffer_detach / MPI_Buffer_detach_c(buf_addr: [*mut c_void], size: [*mut N]) => detach;
}

/// `MPI_Buffer_flush` (§3.6.1): waits until every message buffered so far
/// has gone out; the buffer stays attached.
#[export]
pub(crate) extern "C" fn MPI_Buffer_flush() -> c_int {
    boundary("MPI_Buffer_flush", std::ptr::null_mut(), || {
        handles::running()?;
        match buffer().as_mut() {
            Some(att) => {
                let waited = att.reclaim(true);
                let earlier = att.failed.take();
                waited?;
                earlier.map_or(Ok(()), Err)
            }
            None => Ok(()),
        }
    })
}
