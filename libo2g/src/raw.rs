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

/// `O2G_IOC_REGISTER_SOCKET`.
pub(crate) fn register_socket(fd: BorrowedFd<'_>, reg: &abi::SocketRegistration) -> io::Result<()> {
    // SAFETY: `_IOW` of exactly `size_of::<SocketRegistration>()`: the kernel
    // only reads that many bytes from `reg`, which is a valid reference.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), abi::O2G_IOC_REGISTER_SOCKET as _, reg) };
    check(rc)
}

/// `O2G_IOC_UNREGISTER_SOCKET`.
pub(crate) fn unregister_socket(fd: BorrowedFd<'_>, arg: &abi::RankArg) -> io::Result<()> {
    // SAFETY: `_IOW` of exactly `size_of::<RankArg>()`, read from a valid reference.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), abi::O2G_IOC_UNREGISTER_SOCKET as _, arg) };
    check(rc)
}

/// `O2G_IOC_STATS`.
pub(crate) fn stats(fd: BorrowedFd<'_>) -> io::Result<abi::EndpointStats> {
    let mut stats = abi::EndpointStats::default();
    // SAFETY: `_IOR` of exactly `size_of::<EndpointStats>()` into a valid,
    // exclusively borrowed value that any byte pattern may fill.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), abi::O2G_IOC_STATS as _, &mut stats) };
    check(rc).map(|()| stats)
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
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
