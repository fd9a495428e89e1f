//! Window memory the library allocates: `MPI_Win_allocate`'s, from the
//! heap, and `MPI_Win_allocate_shared`'s, one mapping of a POSIX shared
//! memory object that every member on the node maps (§12.2.3), so that
//! each can load and store the others' segments directly.

use std::ffi::CString;

use crate::error::{Code, Res, MPI_ERR_NO_MEM, MPI_ERR_RMA_SHARED};

/// The alignment of every allocated window and of a shared mapping's
/// length.
const ALIGN: usize = 64;

/// Memory a window owns.
pub(crate) enum Owned {
    /// `len` bytes from the heap at `ptr`.
    Heap { ptr: usize, len: usize },
    /// A shared mapping of `len` bytes at `ptr`.
    Mapped { ptr: usize, len: usize },
}

impl Owned {
    /// `len` zeroed bytes from the heap, aligned for any element.
    pub(crate) fn heap(len: usize) -> Res<Self> {
        if len == 0 {
            return Ok(Owned::Heap { ptr: 0, len });
        }
        let layout =
            std::alloc::Layout::from_size_align(len, ALIGN).map_err(|_| Code(MPI_ERR_NO_MEM))?;
        // SAFETY: the layout has a non-zero size.
        let p = unsafe { std::alloc::alloc_zeroed(layout) };
        if p.is_null() {
            return Err(Code(MPI_ERR_NO_MEM));
        }
        Ok(Owned::Heap {
            ptr: p.expose_provenance(),
            len,
        })
    }

    /// The address of the memory.
    pub(crate) fn ptr(&self) -> usize {
        match self {
            Owned::Heap { ptr, .. } | Owned::Mapped { ptr, .. } => *ptr,
        }
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        match *self {
            Owned::Heap { ptr: 0, .. } | Owned::Mapped { ptr: 0, .. } => {}
            Owned::Heap { ptr, len } => {
                if let Ok(layout) = std::alloc::Layout::from_size_align(len, ALIGN) {
                    // SAFETY: allocated by `heap` with this layout, freed
                    // once (the window is gone, and its agent with it).
                    unsafe {
                        std::alloc::dealloc(std::ptr::with_exposed_provenance_mut(ptr), layout)
                    }
                }
            }
            Owned::Mapped { ptr, len } => {
                // SAFETY: our own mapping of `len` bytes, unmapped once.
                unsafe { libc::munmap(std::ptr::with_exposed_provenance_mut(ptr), len) };
            }
        }
    }
}

/// Where each member's segment starts in the shared mapping, and the
/// mapping's length: segments in rank order, each right after the one
/// before (§12.2.3: contiguous unless `alloc_shared_noncontig`).
pub(crate) fn layout(sizes: &[u64]) -> Res<(Vec<usize>, usize)> {
    let mut offsets = Vec::with_capacity(sizes.len());
    let mut at = 0usize;
    for &s in sizes {
        offsets.push(at);
        let s = usize::try_from(s).map_err(|_| Code(MPI_ERR_NO_MEM))?;
        at = at.checked_add(s).ok_or(Code(MPI_ERR_NO_MEM))?;
    }
    let len = at
        .checked_next_multiple_of(ALIGN)
        .ok_or(Code(MPI_ERR_NO_MEM))?;
    Ok((offsets, len))
}

/// The name of the shared memory object of window number `id` of the
/// job whose first member is process `pid`.
pub(crate) fn object_name(pid: u32, id: u64) -> String {
    format!("/o2g-win-{pid}-{id}")
}

/// Maps the object `name` (`create`: made by this process, of `len`
/// bytes, zeroed; else opened).
pub(crate) fn map(name: &str, len: usize, create: bool) -> Res<Owned> {
    if len == 0 {
        return Ok(Owned::Mapped { ptr: 0, len });
    }
    let fail = |what: &str| {
        let e = std::io::Error::last_os_error();
        crate::error::explained(
            MPI_ERR_RMA_SHARED,
            &format!("{what} the shared window memory {name}: {e}"),
        )
    };
    let c = CString::new(name).map_err(|_| Code(MPI_ERR_RMA_SHARED))?;
    let flags = if create {
        libc::O_RDWR | libc::O_CREAT | libc::O_EXCL
    } else {
        libc::O_RDWR
    };
    // SAFETY: a valid C string; the descriptor is closed below.
    let fd = unsafe { libc::shm_open(c.as_ptr(), flags, 0o600) };
    if fd < 0 {
        return Err(fail(if create { "creating" } else { "opening" }));
    }
    let sized = !create || {
        // SAFETY: our descriptor.
        unsafe { libc::ftruncate(fd, len as libc::off_t) == 0 }
    };
    let p = if sized {
        // SAFETY: a new shared mapping of our descriptor, not at a fixed
        // address.
        unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        }
    } else {
        libc::MAP_FAILED
    };
    let err = (p == libc::MAP_FAILED).then(|| fail(if sized { "mapping" } else { "sizing" }));
    // SAFETY: our descriptor, closed once (the mapping stays).
    unsafe { libc::close(fd) };
    if let Some(e) = err {
        if create {
            unlink(name);
        }
        return Err(e);
    }
    Ok(Owned::Mapped {
        ptr: p.expose_provenance(),
        len,
    })
}

/// Removes the object's name (the mappings stay).
pub(crate) fn unlink(name: &str) {
    if let Ok(c) = CString::new(name) {
        // SAFETY: a valid C string.
        unsafe { libc::shm_unlink(c.as_ptr()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_follow_each_other_in_rank_order() {
        let (offsets, len) = layout(&[10, 0, 64, 1]).unwrap();
        assert_eq!(offsets, vec![0, 10, 10, 74]);
        assert_eq!(len, 128);
        assert!(layout(&[u64::MAX, u64::MAX]).is_err());
    }

    #[test]
    fn a_mapping_is_shared_between_two_maps() {
        let name = object_name(std::process::id(), 0xfeed);
        let a = map(&name, 4096, true).unwrap();
        let b = map(&name, 4096, false).unwrap();
        unlink(&name);
        // SAFETY: both are live mappings of 4096 bytes.
        unsafe {
            std::ptr::with_exposed_provenance_mut::<u8>(a.ptr()).write(42);
            assert_eq!(std::ptr::with_exposed_provenance::<u8>(b.ptr()).read(), 42);
        }
        assert!(map(&name, 4096, false).is_err());
    }
}
