//! [`Region`]: one shared mapping and the only raw-pointer code of the crate.

use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::io;
use std::num::NonZeroUsize;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicU32, AtomicU64};

use nix::sys::mman::{self, MapFlags, ProtFlags};

/// PCI vendor and device id of QEMU's `ivshmem-plain` (Red Hat, Inc.).
const IVSHMEM_VENDOR: &str = "0x1af4";
const IVSHMEM_DEVICE: &str = "0x1110";

/// Why a region could not be opened or an access was refused.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A system call failed.
    #[error("{what} {path}: {source}")]
    Io {
        /// The operation.
        what: &'static str,
        /// The file it was applied to.
        path: PathBuf,
        /// The system's reason.
        #[source]
        source: io::Error,
    },
    /// A shared-memory name was not a plain file name.
    #[error("bad shared-memory name {0:?}: use a plain file name without '/'")]
    BadName(String),
    /// The backing file exists with another size than the caller expects.
    #[error("{path} holds {found} bytes, expected {expected}")]
    SizeMismatch {
        /// The file.
        path: PathBuf,
        /// Its size.
        found: u64,
        /// The size the caller asked for.
        expected: u64,
    },
    /// No `ivshmem-plain` device with that index exists in this guest.
    #[error("no ivshmem-plain PCI device number {0} (is the VM started with one?)")]
    NoIvshmem(usize),
    /// An access fell (partly) outside the region.
    #[error("access of {len} bytes at offset {offset} is outside the {size}-byte region")]
    OutOfBounds {
        /// Start of the access.
        offset: usize,
        /// Its length.
        len: usize,
        /// Size of the region.
        size: usize,
    },
    /// An atomic access was not aligned to its size.
    #[error("offset {offset} is not aligned to {align} bytes")]
    Misaligned {
        /// The offset.
        offset: usize,
        /// The alignment the access needs.
        align: usize,
    },
}

/// Result alias for this crate.
pub type Result<T> = std::result::Result<T, Error>;

/// A read-write `MAP_SHARED` mapping of a file, unmapped on drop.
///
/// Other processes (or guests) map the same file and write it at any time,
/// so the region never hands out a Rust reference to its bytes except
/// atomics (and, through the `unsafe` [`Region::bytes`], ranges whose caller
/// vouches that nobody writes them meanwhile).
#[derive(Debug)]
pub struct Region {
    base: NonNull<u8>,
    len: usize,
    path: PathBuf,
}

// SAFETY: The region is plain shared memory. Everything reachable through a
// shared `&Region` is accessed with atomics or raw copies whose ordering the
// caller establishes through atomics, exactly as for another process that maps
// the same file; which thread of this process performs the access changes
// nothing.
unsafe impl Send for Region {}
// SAFETY: See `Send` above.
unsafe impl Sync for Region {}

impl Region {
    /// Opens `/dev/shm/<name>`, creating it with `len` zero bytes if it does
    /// not exist. An existing file must already have exactly `len` bytes,
    /// or have none (a creator that has not sized it yet).
    pub fn create_shm(name: &str, len: usize) -> Result<Self> {
        let path = shm_path(name)?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&path)
            .map_err(|source| io_error("open", &path, source))?;
        let found = file_len(&file, &path)?;
        if found == 0 {
            file.set_len(len as u64)
                .map_err(|source| io_error("ftruncate", &path, source))?;
        } else if found != len as u64 {
            return Err(Error::SizeMismatch {
                path,
                found,
                expected: len as u64,
            });
        }
        Self::map(&file, len, path)
    }

    /// Opens an existing `/dev/shm/<name>` at its current size.
    pub fn open_shm(name: &str) -> Result<Self> {
        Self::open_path(&shm_path(name)?)
    }

    /// Removes `/dev/shm/<name>`; mappings stay valid until dropped.
    pub fn unlink_shm(name: &str) -> Result<()> {
        let path = shm_path(name)?;
        std::fs::remove_file(&path).map_err(|source| io_error("unlink", &path, source))
    }

    /// Maps an existing file (a `/dev/shm` file, or a PCI `resourceN`
    /// file in sysfs) at its full size.
    pub fn open_path(path: &Path) -> Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|source| io_error("open", path, source))?;
        let len = file_len(&file, path)?;
        let len = usize::try_from(len).map_err(|_| Error::SizeMismatch {
            path: path.into(),
            found: len,
            expected: usize::MAX as u64,
        })?;
        Self::map(&file, len, path.into())
    }

    /// Maps BAR 2 (the shared memory) of the `index`-th `ivshmem-plain`
    /// device of this guest, in PCI address order.
    pub fn open_ivshmem(index: usize) -> Result<Self> {
        let dir = Path::new("/sys/bus/pci/devices");
        let entries = std::fs::read_dir(dir).map_err(|source| io_error("readdir", dir, source))?;
        let mut devices: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                let id = |f: &str| std::fs::read_to_string(p.join(f)).unwrap_or_default();
                id("vendor").trim() == IVSHMEM_VENDOR && id("device").trim() == IVSHMEM_DEVICE
            })
            .collect();
        devices.sort();
        let device = devices.get(index).ok_or(Error::NoIvshmem(index))?;
        // No driver binds ivshmem-plain, so nothing has turned on the
        // device's memory decoding: until then the BAR reads as ones and
        // drops stores. Enabling is counted and harmless when repeated.
        let enable = device.join("enable");
        std::fs::write(&enable, "1").map_err(|source| io_error("enable", &enable, source))?;
        Self::open_path(&device.join("resource2"))
    }

    fn map(file: &File, len: usize, path: PathBuf) -> Result<Self> {
        let Some(size) = NonZeroUsize::new(len) else {
            return Err(Error::SizeMismatch {
                path,
                found: 0,
                expected: 1,
            });
        };
        let rw = ProtFlags::PROT_READ | ProtFlags::PROT_WRITE;
        // SAFETY: With no address hint and no MAP_FIXED the kernel picks a
        // range that overlaps no existing mapping, so no Rust object's memory
        // changes under it; `file` is open for the whole call.
        let p = unsafe { mman::mmap(None, size, rw, MapFlags::MAP_SHARED, file, 0) }
            .map_err(|e| io_error("mmap", &path, e.into()))?;
        Ok(Self {
            base: p.cast(),
            len,
            path,
        })
    }

    /// Size of the region in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always `false`: an empty file cannot be mapped.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The file behind the mapping.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Checks that `[offset, offset + len)` lies inside the region.
    pub fn check(&self, offset: usize, len: usize) -> Result<()> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len => Ok(()),
            _ => Err(Error::OutOfBounds {
                offset,
                len,
                size: self.len,
            }),
        }
    }

    fn aligned(&self, offset: usize, align: usize) -> Result<*mut u8> {
        self.check(offset, align)?;
        if offset % align != 0 {
            return Err(Error::Misaligned { offset, align });
        }
        // SAFETY: `offset + align <= len` was just checked, so the pointer
        // stays inside the mapping.
        Ok(unsafe { self.base.as_ptr().add(offset) })
    }

    /// The 32-bit word at `offset` (4-aligned), shared with every node.
    pub fn u32_at(&self, offset: usize) -> Result<&AtomicU32> {
        let p = self.aligned(offset, 4)?;
        // SAFETY: `p` is 4-aligned (the mapping is page-aligned), in bounds,
        // and valid for the lifetime of `&self`; every access to this memory
        // from any node is atomic or ordered by atomics.
        Ok(unsafe { AtomicU32::from_ptr(p.cast()) })
    }

    /// The 64-bit word at `offset` (8-aligned), shared with every node.
    pub fn u64_at(&self, offset: usize) -> Result<&AtomicU64> {
        let p = self.aligned(offset, 8)?;
        // SAFETY: As in `u32_at`, with 8-byte alignment checked.
        Ok(unsafe { AtomicU64::from_ptr(p.cast()) })
    }

    /// Copies `data` into the region at `offset`.
    pub fn write(&self, offset: usize, data: &[u8]) -> Result<()> {
        self.check(offset, data.len())?;
        // SAFETY: The destination range is inside the mapping (checked) and
        // cannot overlap `data`, which Rust borrows from ordinary memory
        // (a caller passing bytes obtained from `bytes` keeps them unwritten).
        unsafe {
            ptr::copy_nonoverlapping(data.as_ptr(), self.base.as_ptr().add(offset), data.len())
        };
        Ok(())
    }

    /// Copies `out.len()` bytes from the region at `offset` into `out`.
    pub fn read(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        self.check(offset, out.len())?;
        // SAFETY: The source range is inside the mapping (checked); `out` is
        // an exclusive borrow of other memory, so the ranges are disjoint.
        unsafe {
            ptr::copy_nonoverlapping(self.base.as_ptr().add(offset), out.as_mut_ptr(), out.len())
        };
        Ok(())
    }

    /// Copies `len` bytes inside the region from `src` to `dst` (ranges may
    /// overlap): the emulated NIC's DMA engine.
    pub fn copy_within(&self, src: usize, dst: usize, len: usize) -> Result<()> {
        self.check(src, len)?;
        self.check(dst, len)?;
        // SAFETY: Both ranges are inside the mapping (checked); `ptr::copy`
        // allows overlap.
        unsafe {
            ptr::copy(
                self.base.as_ptr().add(src),
                self.base.as_ptr().add(dst),
                len,
            )
        };
        Ok(())
    }

    /// Sets `len` bytes at `offset` to `byte`.
    pub fn fill(&self, offset: usize, len: usize, byte: u8) -> Result<()> {
        self.check(offset, len)?;
        // SAFETY: The range is inside the mapping (checked).
        unsafe { ptr::write_bytes(self.base.as_ptr().add(offset), byte, len) };
        Ok(())
    }

    /// Borrows `len` bytes at `offset` without copying.
    ///
    /// # Safety
    /// No node (this process or another) may write these bytes while the
    /// borrow lives; the caller's protocol must guarantee it (for example,
    /// the range belongs to a received message the writer has handed over
    /// and will not reuse until the reader releases it).
    pub unsafe fn bytes(&self, offset: usize, len: usize) -> Result<&[u8]> {
        self.check(offset, len)?;
        // SAFETY: In bounds (checked) and valid for `&self`; the caller
        // guarantees the bytes are not written during the borrow.
        Ok(unsafe { std::slice::from_raw_parts(self.base.as_ptr().add(offset), len) })
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: `base`/`len` describe a mapping this value created and
        // nothing else unmaps; no reference into it outlives `self`.
        let _ = unsafe { mman::munmap(self.base.cast(), self.len) };
    }
}

fn shm_path(name: &str) -> Result<PathBuf> {
    let plain = !name.is_empty() && name != "." && name != ".." && !name.contains('/');
    if !plain || CString::new(name).is_err() {
        return Err(Error::BadName(name.into()));
    }
    Ok(Path::new("/dev/shm").join(name))
}

fn file_len(file: &File, path: &Path) -> Result<u64> {
    file.metadata()
        .map(|m| m.len())
        .map_err(|source| io_error("stat", path, source))
}

fn io_error(what: &'static str, path: &Path, source: io::Error) -> Error {
    Error::Io {
        what,
        path: path.into(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unique(tag: &str) -> String {
        format!("o2g-nicmem-test-{tag}-{}", std::process::id())
    }

    #[test]
    fn two_mappings_of_one_file_see_each_other() {
        let name = unique("shared");
        let a = Region::create_shm(&name, 8192).unwrap();
        let b = Region::open_shm(&name).unwrap();
        Region::unlink_shm(&name).unwrap();
        assert_eq!(b.len(), 8192);
        a.write(100, b"hello").unwrap();
        a.u32_at(4096)
            .unwrap()
            .store(7, std::sync::atomic::Ordering::Release);
        let mut out = [0u8; 5];
        b.read(100, &mut out).unwrap();
        assert_eq!(&out, b"hello");
        assert_eq!(
            b.u32_at(4096)
                .unwrap()
                .load(std::sync::atomic::Ordering::Acquire),
            7
        );
        b.copy_within(100, 8187, 5).unwrap();
        a.read(8187, &mut out).unwrap();
        assert_eq!(&out, b"hello");
    }

    #[test]
    fn accesses_outside_or_misaligned_are_refused() {
        let name = unique("bounds");
        let r = Region::create_shm(&name, 4096).unwrap();
        Region::unlink_shm(&name).unwrap();
        assert!(matches!(
            r.write(4095, b"ab"),
            Err(Error::OutOfBounds { .. })
        ));
        assert!(matches!(
            r.read(usize::MAX, &mut [0u8; 2]),
            Err(Error::OutOfBounds { .. })
        ));
        assert!(matches!(
            r.copy_within(0, 4000, 100),
            Err(Error::OutOfBounds { .. })
        ));
        assert!(matches!(r.u32_at(2), Err(Error::Misaligned { .. })));
        assert!(matches!(r.u64_at(4092), Err(Error::OutOfBounds { .. })));
        assert!(r.u64_at(4088).is_ok());
    }

    #[test]
    fn a_file_of_another_size_is_refused_and_names_are_plain() {
        let name = unique("size");
        let _r = Region::create_shm(&name, 4096).unwrap();
        let e = Region::create_shm(&name, 8192).unwrap_err();
        Region::unlink_shm(&name).unwrap();
        assert!(matches!(e, Error::SizeMismatch { found: 4096, .. }), "{e}");
        for bad in ["", "..", "a/b"] {
            assert!(matches!(
                Region::create_shm(bad, 4096),
                Err(Error::BadName(_))
            ));
        }
    }
}
