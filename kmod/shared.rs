// SPDX-License-Identifier: GPL-2.0

//! The memory an endpoint shares with its process: the completion ring and
//! the dump area, as module-owned pages the process maps (`mmap`).
//!
//! Module memory rather than pinned user memory: the pages exist from INIT
//! to the endpoint's release whatever the process does with its address
//! space, the softirq writes them without any user-memory concern, and one
//! `mmap` shows them to the process. The layout is `abi::InitArgs`'s: a
//! control page with the ring indices, the ring records, the dump area.
//!
//! The module trusts nothing the process writes here: it reads the ring's
//! consumer index only to decide whether the ring has room, and the release
//! ring's producer index and ids only through [`SharedArea::releases`],
//! which clamps the one and leaves checking the others to the caller. The
//! indices the module produces (the completion ring's producer, the release
//! ring's consumer) are kept in module memory and only published here:
//! what the process writes over them is never read back.
//!
//! The mapping is `VM_IO`: no `get_user_pages` reaches these pages, so a
//! receive buffer placed inside the mapping cannot be pinned (POST fails
//! with `EFAULT`), and a copy between the dump area and a pinned receive
//! buffer is always between distinct memory.

use core::ptr::NonNull;

use kernel::{
    bindings,
    mm::virt::{flags as vm_flags, VmaNew},
    page::{BorrowedPage, PAGE_SIZE},
    prelude::*,
    sync::atomic::{Acquire, Atomic, Relaxed, Release},
};

use crate::abi;
use crate::pinned::{walk_pages, with_kmap};

// The release ring fits in the control page, after the index words.
const _: () = assert!(
    abi::O2G_RELEASE_RING >= abi::O2G_RELEASE_CONS + 64
        && abi::O2G_RELEASE_RING + abi::O2G_RELEASE_ENTRIES as usize * 8 <= PAGE_SIZE
);

/// One zeroed page of the shared area, charged to the memory cgroup of the
/// process that made the endpoint.
///
/// # Invariants
///
/// `0` is an order-0 page this value owns (freed on drop).
struct ChargedPage(NonNull<bindings::page>);

// SAFETY: The page is plain memory owned by this value; it may be freed,
// and its pointer read, from any thread.
unsafe impl Send for ChargedPage {}
// SAFETY: Shared references only read the pointer.
unsafe impl Sync for ChargedPage {}

impl ChargedPage {
    /// Errors: `ENOMEM`, also when the caller's memory cgroup is at its
    /// limit.
    ///
    /// Context: process context, may sleep.
    fn alloc() -> Result<Self> {
        // SAFETY: The helper only allocates.
        let page = unsafe { crate::shim::o2g_alloc_charged_page() };
        // INVARIANT: A non-null result is a fresh page we own.
        NonNull::new(page.cast::<bindings::page>())
            .map(Self)
            .ok_or(ENOMEM)
    }

    fn as_ptr(&self) -> *mut bindings::page {
        self.0.as_ptr()
    }

    /// The page as the kernel crate's `Page`, for `vm_insert_page`.
    fn borrow(&self) -> BorrowedPage<'_> {
        // SAFETY: The page is valid while `self` lives (type invariants).
        unsafe { BorrowedPage::from_raw(self.0) }
    }
}

impl Drop for ChargedPage {
    fn drop(&mut self) {
        // SAFETY: We own this order-0 page (type invariants).
        unsafe { bindings::__free_pages(self.0.as_ptr(), 0) };
    }
}

/// The shared pages and where things lie in them.
pub(crate) struct SharedArea {
    pages: KVVec<ChargedPage>,
    /// The completion ring's producer index: the module's own copy (rx
    /// lock held to change it), published to `abi::O2G_RING_PROD`.
    prod: Atomic<u32>,
    ring_entries: u32,
    ring_offset: usize,
    dump_offset: usize,
    dump_bytes: usize,
}

impl SharedArea {
    /// Allocates zeroed pages for a ring of `ring_entries` (a power of two)
    /// records and a dump area of `dump_bytes` (a page multiple).
    ///
    /// Context: process context, may sleep.
    pub(crate) fn new(ring_entries: u32, dump_bytes: usize) -> Result<Self> {
        let ring_offset = PAGE_SIZE;
        let ring_bytes = (ring_entries as usize)
            .checked_mul(size_of::<abi::Completion>())
            .ok_or(EINVAL)?
            .next_multiple_of(PAGE_SIZE);
        let dump_offset = ring_offset + ring_bytes;
        let total = dump_offset.checked_add(dump_bytes).ok_or(EINVAL)?;
        let n = total / PAGE_SIZE;
        let mut pages = KVVec::with_capacity(n, GFP_KERNEL_ACCOUNT)?;
        for _ in 0..n {
            pages.push(ChargedPage::alloc()?, GFP_KERNEL_ACCOUNT)?;
        }
        Ok(Self {
            pages,
            prod: Atomic::new(0),
            ring_entries,
            ring_offset,
            dump_offset,
            dump_bytes,
        })
    }

    /// The layout, as INIT reports it.
    pub(crate) fn layout(&self) -> (u32, u64, u64, u64) {
        (
            self.ring_entries,
            self.ring_offset as u64,
            self.dump_offset as u64,
            (self.pages.len() * PAGE_SIZE) as u64,
        )
    }

    /// Offset of the dump area in the mapping.
    pub(crate) fn dump_offset(&self) -> u64 {
        self.dump_offset as u64
    }

    /// Maps every page into `vma`, which must cover exactly the area, from
    /// offset 0, shared (a private mapping would hide the consumer index
    /// from the module).
    ///
    /// Context: process context (`mmap(2)`), mmap lock held for writing.
    pub(crate) fn map(&self, vma: &VmaNew) -> Result {
        // SAFETY: `vma` is valid during the call; `vm_pgoff` is a plain field.
        let pgoff = unsafe { (*vma.as_ptr()).vm_pgoff };
        let len = vma.end() - vma.start();
        if pgoff != 0 || len != self.pages.len() * PAGE_SIZE {
            return Err(EINVAL);
        }
        if vma.flags() & vm_flags::SHARED == 0 {
            return Err(EINVAL);
        }
        vma.try_clear_mayexec()?;
        // No get_user_pages on these pages (see the module docs).
        vma.set_io();
        vma.set_dontcopy();
        vma.set_dontexpand();
        let vma = vma.set_mixedmap();
        for (i, page) in self.pages.iter().enumerate() {
            vma.vm_insert_page(vma.start() + i * PAGE_SIZE, &page.borrow())?;
        }
        Ok(())
    }

    /// Runs `f` on the `u32` at byte `offset` of the control page, as an
    /// atomic shared with the process.
    fn control<R>(&self, offset: usize, f: impl FnOnce(&Atomic<u32>) -> R) -> R {
        let page = self.pages[0].as_ptr();
        // SAFETY: Page 0 lives as long as `self`. The process may write the
        // word concurrently, which is why it is only accessed atomically.
        unsafe {
            with_kmap(page, |addr| {
                f(Atomic::from_ptr(addr.wrapping_add(offset).cast::<u32>()))
            })
        }
    }

    /// Publishes `value` in the control-page word at `offset` (one of the
    /// module-written `abi::O2G_*` words).
    pub(crate) fn set_word(&self, offset: usize, value: u32) {
        self.control(offset, |a| a.store(value, Release));
    }

    /// Passes the ids the process queued in the release ring since index
    /// `cons` to `f`, at most one ring's worth, and returns the new
    /// consumer index, which it also publishes. `cons` is the module's own
    /// copy: a process that scribbles over the control page can make it
    /// read garbage ids (the caller checks each), never read out of bounds.
    ///
    /// Context: any; caller holds the endpoint's rx lock (one consumer).
    pub(crate) fn releases(&self, cons: u32, mut f: impl FnMut(u64)) -> u32 {
        let prod = self.control(abi::O2G_RELEASE_PROD, |a| a.load(Acquire));
        let n = prod.wrapping_sub(cons).min(abi::O2G_RELEASE_ENTRIES);
        if n == 0 {
            return cons;
        }
        let page = self.pages[0].as_ptr();
        // SAFETY: Page 0 lives as long as `self`, and the ring lies inside it
        // (checked at compile time) with 8-byte aligned slots. The process
        // may write a slot concurrently, hence the atomic loads.
        unsafe {
            with_kmap(page, |addr| {
                for i in 0..n {
                    let slot = (cons.wrapping_add(i) % abi::O2G_RELEASE_ENTRIES) as usize;
                    let at = abi::O2G_RELEASE_RING + slot * size_of::<u64>();
                    f(Atomic::from_ptr(addr.wrapping_add(at).cast::<u64>()).load(Relaxed));
                }
            })
        };
        let cons = cons.wrapping_add(n);
        self.set_word(abi::O2G_RELEASE_CONS, cons);
        cons
    }

    /// The producer index the module last published (its own copy).
    pub(crate) fn ring_prod(&self) -> u32 {
        self.prod.load(Relaxed)
    }

    /// Records the process has not consumed yet, clamped to the ring size
    /// (a consumer index the process corrupted cannot make it look bigger).
    pub(crate) fn ring_pending(&self) -> u32 {
        let cons = self.control(abi::O2G_RING_CONS, |a| a.load(Acquire));
        self.ring_prod().wrapping_sub(cons).min(self.ring_entries)
    }

    /// Writes `rec` at the next producer slot and publishes it.
    ///
    /// Context: any; caller holds the endpoint's rx lock (one producer).
    pub(crate) fn push(&self, rec: &abi::Completion) {
        let prod = self.ring_prod();
        let slot = (prod & (self.ring_entries - 1)) as usize;
        let at = self.ring_offset + slot * size_of::<abi::Completion>();
        let page = self.pages[at / PAGE_SIZE].as_ptr();
        // SAFETY: The record lies inside one page (records are 64 bytes and
        // pages a multiple of that), which lives as long as `self`.
        unsafe {
            with_kmap(page, |addr| {
                core::ptr::write_unaligned(
                    addr.wrapping_add(at % PAGE_SIZE).cast::<abi::Completion>(),
                    *rec,
                )
            })
        };
        // Release: the record is visible before the index that covers it.
        let next = prod.wrapping_add(1);
        self.prod.store(next, Relaxed);
        self.set_word(abi::O2G_RING_PROD, next);
    }

    /// Copies `n` bytes to dump offset `at` with `fill(dst, done, chunk)`,
    /// page by page (see `PinnedBuf::copy_in`).
    ///
    /// Context: any; must not sleep.
    pub(crate) fn dump_in(
        &self,
        at: usize,
        n: usize,
        fill: impl FnMut(*mut u8, usize, usize) -> Result,
    ) -> Result {
        if at.checked_add(n).is_none_or(|end| end > self.dump_bytes) {
            return Err(EINVAL);
        }
        let page = |i: usize| self.pages.get(i).map(ChargedPage::as_ptr);
        // SAFETY: The pages live as long as `self`.
        unsafe { walk_pages(self.dump_offset + at, n, page, fill) }
    }

    /// Runs `f(src, done, chunk)` over `n` bytes of the dump area from `at`,
    /// page by page, for copying out of it.
    ///
    /// Context: any; must not sleep.
    pub(crate) fn dump_out(
        &self,
        at: usize,
        n: usize,
        mut f: impl FnMut(*const u8, usize, usize) -> Result,
    ) -> Result {
        self.dump_in(at, n, |p, done, chunk| f(p.cast_const(), done, chunk))
    }
}
