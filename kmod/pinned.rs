// SPDX-License-Identifier: GPL-2.0

//! A posted receive buffer: user pages pinned so that the protocol handler
//! can write them from softirq, whatever task that softirq interrupts.
//!
//! `copy_to_user()` is not an option there: on loopback the receive softirq
//! runs in the *sender's* context, so user addresses would name the wrong
//! process. The pages are pinned in the POST ioctl (process context of the
//! owner) with `FOLL_WRITE | FOLL_LONGTERM` and written through
//! `kmap_local_page()`; they are unpinned (and marked dirty) in process
//! context only, because `unpin_user_pages_dirty_lock()` may sleep.

use kernel::{alloc::KVVec, bindings, page::PAGE_SIZE, prelude::*};

use crate::shim;

/// Runs `f` with `page` mapped at a kernel address.
///
/// Context: any; must not sleep inside `f`.
///
/// # Safety
///
/// `page` must be a valid page that stays allocated during the call.
pub(crate) unsafe fn with_kmap<R>(page: *mut bindings::page, f: impl FnOnce(*mut u8) -> R) -> R {
    // SAFETY: `page` is valid (caller); a local mapping needs nothing else.
    let addr = unsafe { bindings::kmap_local_page(page) };
    let r = f(addr.cast());
    // SAFETY: Unmaps the mapping made above; nested mappings made inside
    // `f` were unmapped before it returned, so the LIFO order holds.
    unsafe { bindings::kunmap_local(addr) };
    r
}

/// Runs `fill(dst, done, chunk)` over bytes `start..start + n` of the
/// memory behind a page array, one mapped page piece at a time: `fill`
/// gets `chunk` bytes at `dst`, which are bytes `done..done + chunk` of the
/// walk. `page(i)` names the array's `i`-th page. Stops at the first error.
///
/// Context: any; must not sleep.
///
/// # Safety
///
/// Every page `page` returns must stay allocated during the call.
pub(crate) unsafe fn walk_pages(
    start: usize,
    n: usize,
    page: impl Fn(usize) -> Option<*mut bindings::page>,
    mut fill: impl FnMut(*mut u8, usize, usize) -> Result,
) -> Result {
    let mut done = 0;
    while done < n {
        let pos = start + done;
        let in_page = pos % PAGE_SIZE;
        let chunk = (PAGE_SIZE - in_page).min(n - done);
        let page = page(pos / PAGE_SIZE).ok_or(EINVAL)?;
        // SAFETY: The page stays allocated (caller).
        unsafe { with_kmap(page, |addr| fill(addr.wrapping_add(in_page), done, chunk)) }?;
        done += chunk;
    }
    Ok(())
}

/// A range of user memory, pinned.
///
/// # Invariants
///
/// `pages` holds exactly the pages covering `[addr, addr + len)` of the
/// process that pinned them, each with one pin this value owns; `first` is
/// `addr`'s offset in the first page. If `pages` is not empty, `mm` is that
/// process's mm, charged for `pages.len()` pinned pages and grabbed once.
/// The pages were pinned writable unless `read_only`.
pub(crate) struct PinnedBuf {
    pages: KVVec<*mut bindings::page>,
    first: usize,
    len: usize,
    read_only: bool,
    /// The process whose `RLIMIT_MEMLOCK` the pages are charged to (with
    /// an `mmgrab` reference); null for an empty buffer.
    mm: *mut core::ffi::c_void,
}

// SAFETY: The pins may be released from any process context (the reclaim
// work runs on a kworker), the page pointers are plain references to
// pinned pages, and the mm reference (`mmgrab`) may be dropped by any task.
unsafe impl Send for PinnedBuf {}

// SAFETY: Shared references only read the page array, which is never
// changed after `pin_with`, and reach the pinned pages through their own
// kernel mappings: a window's pages may be written by a reader (a put)
// while the send work reads them (a get), which is user memory changing
// under a device's DMA, not shared Rust state (an MPI program that lets
// the two overlap gets undefined contents, as §12.7 says).
unsafe impl Sync for PinnedBuf {}

impl PinnedBuf {
    /// Pins `len` bytes at user address `addr` of the current process for
    /// writing. A zero-length buffer pins nothing.
    ///
    /// The pages count against the process's `RLIMIT_MEMLOCK` (unless it
    /// has `CAP_IPC_LOCK`), as `mlock` and RDMA registrations do.
    ///
    /// Errors: `EFAULT` (not mapped writable, or inside an o2g mapping),
    /// `EINVAL` (range wraps), `ENOMEM` (over `RLIMIT_MEMLOCK`, or no
    /// memory).
    ///
    /// Context: process context of the buffer's owner, may sleep.
    pub(crate) fn pin(addr: u64, len: u64) -> Result<Self> {
        Self::pin_with(addr, len, false)
    }

    /// As [`PinnedBuf::pin`], for reading only: the source of a
    /// rendezvous send, which may be read-only memory.
    pub(crate) fn pin_read_only(addr: u64, len: u64) -> Result<Self> {
        Self::pin_with(addr, len, true)
    }

    fn pin_with(addr: u64, len: u64, read_only: bool) -> Result<Self> {
        let len = usize::try_from(len).map_err(|_| EINVAL)?;
        let addr = usize::try_from(addr).map_err(|_| EFAULT)?;
        if len == 0 {
            return Ok(Self {
                pages: KVVec::new(),
                first: 0,
                len: 0,
                read_only,
                mm: core::ptr::null_mut(),
            });
        }
        let end = addr.checked_add(len).ok_or(EINVAL)?;
        let first_page = addr & !(PAGE_SIZE - 1);
        let n = (end - first_page).div_ceil(PAGE_SIZE);
        let mut pages = KVVec::<*mut bindings::page>::with_capacity(n, GFP_KERNEL_ACCOUNT)?;
        // SAFETY: Process context of the pinning task (caller).
        let mm = unsafe { shim::o2g_charge_pinned(n as _) };
        if mm.is_null() {
            return Err(ENOMEM);
        }
        let flags = if read_only {
            bindings::FOLL_LONGTERM
        } else {
            bindings::FOLL_WRITE | bindings::FOLL_LONGTERM
        };
        while pages.len() < n {
            let done = pages.len();
            let want = i32::try_from(n - done).unwrap_or(i32::MAX);
            // SAFETY: `pages` has room for `n` pointers and `done` are filled,
            // so `want` more fit at `as_mut_ptr() + done`.
            let got = unsafe {
                bindings::pin_user_pages_fast(
                    (first_page + done * PAGE_SIZE) as _,
                    want,
                    flags,
                    pages.as_mut_ptr().add(done),
                )
            };
            if got <= 0 {
                // SAFETY: The first `done` entries hold pins we own, and `mm`
                // was charged for `n` pages above.
                unsafe {
                    bindings::unpin_user_pages(pages.as_mut_ptr(), done as _);
                    shim::o2g_uncharge_pinned(mm, n as _);
                }
                return Err(if got < 0 {
                    Error::from_errno(got)
                } else {
                    EFAULT
                });
            }
            // SAFETY: The kernel filled `got` more entries.
            unsafe { pages.inc_len(got as usize) };
        }
        Ok(Self {
            pages,
            first: addr - first_page,
            len,
            read_only,
            mm,
        })
    }

    /// Length of the buffer in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Copies `n` bytes into the buffer at `offset` (clamped to its end)
    /// with `fill(dst, done, chunk)`, one page at a time: `fill` writes
    /// `chunk` bytes at `dst`, which are bytes `done..done + chunk` of the
    /// copy. Returns how many bytes were copied, or the first error `fill`
    /// returns.
    ///
    /// Context: any (softirq included); must not sleep.
    pub(crate) fn copy_in(
        &self,
        offset: usize,
        n: usize,
        fill: impl FnMut(*mut u8, usize, usize) -> Result,
    ) -> Result<usize> {
        let n = n.min(self.len.saturating_sub(offset));
        let page = |i: usize| self.pages.get(i).copied();
        // SAFETY: The pages are pinned by this value (type invariants).
        unsafe { walk_pages(self.first + offset, n, page, fill) }?;
        Ok(n)
    }

    /// Reads `n` bytes of the buffer from `offset` (clamped to its end)
    /// with `take(src, done, chunk)`, one page at a time: `take` reads
    /// `chunk` bytes at `src`, which are bytes `done..done + chunk` of the
    /// read. Returns how many bytes were read, or the first error.
    ///
    /// Context: any; must not sleep.
    pub(crate) fn read(
        &self,
        offset: usize,
        n: usize,
        mut take: impl FnMut(*const u8, usize, usize) -> Result,
    ) -> Result<usize> {
        let n = n.min(self.len.saturating_sub(offset));
        let page = |i: usize| self.pages.get(i).copied();
        // SAFETY: The pages are pinned by this value (type invariants).
        unsafe {
            walk_pages(self.first + offset, n, page, |p, done, chunk| {
                take(p, done, chunk)
            })
        }?;
        Ok(n)
    }

    /// Queues bytes `offset..offset + n` of the buffer (clamped to its end)
    /// on `sock` without blocking; returns how many were queued (TCP
    /// copies them, or with `zc` references the pages). `EAGAIN` when the
    /// send buffer is full. `n` is all that is still to send: TCP pushes
    /// once the last of it is queued.
    ///
    /// Context: process context, may sleep (takes the socket lock).
    pub(crate) fn send_on(
        &self,
        sock: &crate::sock::TcpSocket,
        offset: usize,
        n: usize,
        zc: Option<&crate::zerocopy::ZcSend>,
    ) -> Result<usize> {
        let n = n.min(self.len.saturating_sub(offset));
        if n == 0 {
            return Ok(0);
        }
        // SAFETY: The pages cover bytes `first..first + len` of the array
        // and stay pinned while `self` lives (type invariants), and
        // `first + offset + n <= first + len`.
        unsafe {
            sock.send_pages(
                self.pages.as_ptr().cast_mut().cast(),
                self.first + offset,
                n,
                zc,
            )
        }
    }
}

impl Drop for PinnedBuf {
    /// Unpins the pages, marking them dirty.
    ///
    /// Context: process context only (may sleep on a page lock); the
    /// softirq paths park buffers in the retired list instead of dropping.
    fn drop(&mut self) {
        if self.pages.is_empty() {
            return;
        }
        // SAFETY: Every entry holds a pin this value owns, charged to `mm`
        // (type invariants); process context (see above). Only pages the
        // module may have written are marked dirty.
        unsafe {
            bindings::unpin_user_pages_dirty_lock(
                self.pages.as_mut_ptr(),
                self.pages.len() as _,
                !self.read_only,
            );
            shim::o2g_uncharge_pinned(self.mm, self.pages.len() as _);
        };
    }
}
