//! The only place where libo2g calls `ioctl(2)`: every opcode is paired with
//! its argument type here, once.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

use crate::abi;

/// `O2G_IOC_VERSION`: reads the module's ABI version.
pub(crate) fn version(fd: BorrowedFd<'_>) -> io::Result<abi::VersionInfo> {
    let mut info = abi::VersionInfo::default();
    // SAFETY: `O2G_IOC_VERSION` is `_IOR` of exactly `size_of::<VersionInfo>()`
    // bytes; the kernel writes at most that many into `info`, which is a valid,
    // exclusively borrowed `VersionInfo` for any byte pattern.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), abi::O2G_IOC_VERSION as _, &mut info) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(info)
}

/// Issues an arbitrary ioctl on an o2g file descriptor.
///
/// This exists for tests that play a hostile or buggy caller (unknown opcodes,
/// bad pointers); normal code uses [`crate::Device`].
///
/// # Safety
///
/// If `arg` is an address in this process, the kernel may read or write there
/// as `cmd` describes; the caller must ensure that memory may be accessed so.
/// Addresses that are not mapped are safe to pass: the kernel reports `EFAULT`.
pub unsafe fn ioctl(fd: BorrowedFd<'_>, cmd: u32, arg: usize) -> io::Result<i32> {
    // SAFETY: The caller upholds the contract for `cmd` and `arg`.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), cmd as _, arg) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(rc)
}
