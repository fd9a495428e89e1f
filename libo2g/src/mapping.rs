//! The endpoint's shared mapping: the only place where libo2g maps memory
//! or touches it through raw pointers.
//!
//! The mapping is shared with the kernel, which writes the completion ring
//! and the dump area. Accessors here never hand out a reference to memory the
//! kernel may write, except `AtomicU32`s (which tolerate concurrent atomic
//! writers) and, through the `unsafe` [`Mapping::bytes`], byte ranges whose
//! caller vouches that nobody writes them for the borrow's duration.

use std::io;
use std::num::NonZeroUsize;
use std::os::fd::BorrowedFd;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicU32, AtomicU64};

use nix::sys::mman::{self, MapFlags, ProtFlags};

use crate::abi;

/// A `MAP_SHARED`, read-write mapping of an o2g endpoint, unmapped on drop.
pub(crate) struct Mapping {
    base: NonNull<u8>,
    len: usize,
    backing: Backing,
}

enum Backing {
    /// `mmap` of the device.
    Device,
    /// A zeroed heap allocation standing in for the device, in host tests.
    #[cfg(test)]
    Heap(std::alloc::Layout),
}

// SAFETY: `Mapping` owns its memory like a `Box<[u8]>` would (nothing else in
// this process refers to it), and all access through a shared `&Mapping` is by
// atomics, volatile reads of plain integers, or through `bytes`, whose callers
// guarantee the bytes are not written while borrowed. So it may be sent to and
// shared with other threads.
unsafe impl Send for Mapping {}
// SAFETY: See `Send` above.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps `len` bytes of the endpoint behind `fd` at offset 0.
    pub(crate) fn map_device(fd: BorrowedFd<'_>, len: usize) -> io::Result<Self> {
        // mmap(2) refuses an empty mapping with EINVAL.
        let size = NonZeroUsize::new(len).ok_or(io::Error::from_raw_os_error(libc::EINVAL))?;
        let rw = ProtFlags::PROT_READ | ProtFlags::PROT_WRITE;
        // SAFETY: With no address hint and no MAP_FIXED, the kernel picks a
        // range that overlaps no existing mapping, so no Rust object's memory
        // changes under it. `fd` is a valid open file for the whole call.
        let p = unsafe { mman::mmap(None, size, rw, MapFlags::MAP_SHARED, fd, 0) }?;
        Ok(Self {
            base: p.cast(),
            len,
            backing: Backing::Device,
        })
    }

    /// A zeroed, page-aligned heap buffer of `len` bytes standing in for the
    /// device mapping.
    #[cfg(test)]
    pub(crate) fn heap(len: usize) -> Self {
        let layout =
            std::alloc::Layout::from_size_align(len.max(1), abi::O2G_PAGE as usize).unwrap();
        // SAFETY: `layout` has a non-zero size.
        let p = unsafe { std::alloc::alloc_zeroed(layout) };
        let base = NonNull::new(p).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        Self {
            base,
            len,
            backing: Backing::Heap(layout),
        }
    }

    /// Length of the mapping in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Panics unless `offset..offset + size` lies in the mapping at an
    /// `align`-aligned address. Callers pass offsets from a checked
    /// [`crate::Layout`]; a failure here is a bug in this library.
    fn check(&self, offset: usize, size: usize, align: usize) -> *mut u8 {
        assert!(
            offset.checked_add(size).is_some_and(|end| end <= self.len),
            "mapping access {offset}+{size} beyond {} bytes",
            self.len
        );
        // The base is page-aligned, so aligning the offset aligns the address.
        assert_eq!(offset % align, 0, "misaligned mapping access at {offset}");
        // SAFETY: `offset + size <= len`, so the result stays inside the mapping.
        unsafe { self.base.as_ptr().add(offset) }
    }

    /// The `u32` at `offset`, shared with the kernel, as an atomic.
    pub(crate) fn atomic_u32(&self, offset: usize) -> &AtomicU32 {
        let p = self.check(offset, 4, 4);
        // SAFETY: `p` is in the mapping, 4-aligned, and valid for as long as
        // `&self`. Nothing in this process accesses it other than through
        // atomics; the kernel accesses the ring indices only atomically
        // (`smp_store_release`/`smp_load_acquire`), per the ABI.
        unsafe { AtomicU32::from_ptr(p.cast::<u32>()) }
    }

    /// The `u64` at `offset`, shared with the kernel, as an atomic.
    pub(crate) fn atomic_u64(&self, offset: usize) -> &AtomicU64 {
        let p = self.check(offset, 8, 8);
        // SAFETY: As for `atomic_u32`, with 8-byte alignment checked; the
        // kernel reads the release ring's ids only atomically.
        unsafe { AtomicU64::from_ptr(p.cast::<u64>()) }
    }

    /// A copy of the completion record at `offset`.
    pub(crate) fn read_completion(&self, offset: usize) -> abi::Completion {
        let p = self.check(
            offset,
            std::mem::size_of::<abi::Completion>(),
            std::mem::align_of::<abi::Completion>(),
        );
        // SAFETY: `p` is in the mapping, aligned for `Completion`, and every bit
        // pattern is a valid `Completion` (integers only). The read is volatile
        // and makes a copy, so no reference to kernel-written memory is formed;
        // the ring protocol (acquire load of the producer index first) makes
        // the kernel's writes to this record visible and keeps it from
        // rewriting the record until the consumer index moves past it.
        unsafe { ptr::read_volatile(p.cast::<abi::Completion>()) }
    }

    /// The `len` bytes at `offset`.
    ///
    /// # Safety
    ///
    /// Neither the kernel nor this process may write those bytes while the
    /// returned borrow lives.
    pub(crate) unsafe fn bytes(&self, offset: usize, len: usize) -> &[u8] {
        let p = self.check(offset, len, 1);
        // SAFETY: `p..p + len` lies in the mapping, which lives as long as
        // `&self`; `len <= self.len <= isize::MAX` (checked by `Layout`); the
        // caller guarantees the bytes stay unchanged for the borrow.
        unsafe { std::slice::from_raw_parts(p, len) }
    }

    /// Writes a completion record at `offset`, as the kernel would.
    #[cfg(test)]
    pub(crate) fn write_completion(&self, offset: usize, c: abi::Completion) {
        let p = self.check(offset, 32, 8);
        // SAFETY: In bounds and aligned; tests write only records the consumer
        // does not read at the same time, and never through a live reference.
        unsafe { ptr::write_volatile(p.cast::<abi::Completion>(), c) }
    }

    /// Writes `data` at `offset`, as the kernel fills the dump area.
    #[cfg(test)]
    pub(crate) fn write_bytes(&self, offset: usize, data: &[u8]) {
        let p = self.check(offset, data.len(), 1);
        // SAFETY: In bounds; tests write only bytes no live borrow covers, and
        // `data` cannot overlap the mapping (no borrow of it is outstanding).
        unsafe { ptr::copy_nonoverlapping(data.as_ptr(), p, data.len()) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        match self.backing {
            Backing::Device => {
                // SAFETY: `base..base + len` is the mapping `mmap` returned, and
                // every borrow of it is tied to `&self`, so none outlives this.
                // A failure (impossible for a whole, valid mapping) leaves the
                // range mapped, which is only a leak.
                let _ = unsafe { mman::munmap(self.base.cast(), self.len) };
            }
            #[cfg(test)]
            Backing::Heap(layout) => {
                // SAFETY: Allocated in `heap` with this very layout; no borrow
                // outlives `&self`.
                unsafe { std::alloc::dealloc(self.base.as_ptr(), layout) }
            }
        }
    }
}

impl std::fmt::Debug for Mapping {
    // Never prints the contents: the kernel may be writing them.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mapping")
            .field("base", &self.base)
            .field("len", &self.len)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn heap_stand_in_is_zeroed_and_round_trips() {
        let m = Mapping::heap(3 * 4096);
        assert_eq!(m.len(), 3 * 4096);
        assert_eq!(m.atomic_u32(abi::O2G_RING_CONS).load(Ordering::Relaxed), 0);
        m.atomic_u32(abi::O2G_RING_PROD).store(7, Ordering::Release);
        assert_eq!(m.atomic_u32(0).load(Ordering::Acquire), 7);
        let c = abi::Completion {
            user_data: 1,
            len: 2,
            source: 3,
            tag: 4,
            context: 5,
            status: -6,
            ..Default::default()
        };
        m.write_completion(4096 + 32, c);
        assert_eq!(m.read_completion(4096 + 32), c);
        m.write_bytes(8192, b"hello");
        // SAFETY: Nothing writes these bytes while the borrow lives.
        assert_eq!(unsafe { m.bytes(8192, 5) }, b"hello");
    }

    #[test]
    #[should_panic(expected = "beyond")]
    fn out_of_bounds_access_panics_instead_of_reading() {
        let m = Mapping::heap(4096);
        let _ = m.read_completion(4096 - 16);
    }

    #[test]
    #[should_panic(expected = "misaligned")]
    fn misaligned_atomic_panics() {
        let m = Mapping::heap(4096);
        let _ = m.atomic_u32(2);
    }
}
