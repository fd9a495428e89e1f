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

/// `O2G_IOC_INIT`: sends the capacities in `args`, which the kernel
/// overwrites with the shared mapping's layout.
pub(crate) fn init(fd: BorrowedFd<'_>, args: &mut abi::InitArgs) -> io::Result<()> {
    // SAFETY: `_IOWR` of exactly `size_of::<InitArgs>()`: the kernel reads and
    // writes that many bytes of `args`, a valid, exclusively borrowed struct of
    // integers that any byte pattern may fill.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), abi::O2G_IOC_INIT as _, args) };
    check(rc)
}

/// `O2G_IOC_POST`: posts a receive into `args.buf[..args.buf_len]`.
///
/// # Safety
///
/// If the answer is [`abi::outcome::QUEUED`], the kernel keeps writing into
/// `args.buf[..args.buf_len]`, asynchronously, until the receive's completion
/// appears in the ring or a cancel of it returns 1 (or the endpoint's open
/// file is released). Until then that memory must stay allocated and must not
/// be accessed by the process. On any other answer the kernel did not keep
/// the buffer.
pub(crate) unsafe fn post(fd: BorrowedFd<'_>, args: &mut abi::PostArgs) -> io::Result<()> {
    // SAFETY: `_IOWR` of exactly `size_of::<PostArgs>()`, read and written in
    // `args`, a valid, exclusively borrowed struct of integers. The later,
    // asynchronous writes into the receive buffer are the caller's contract.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), abi::O2G_IOC_POST as _, args) };
    check(rc)
}

/// `O2G_IOC_CANCEL`: returns the ioctl's value, 1 (cancelled: no completion
/// will appear) or 0 (too late: the completion will appear, or has).
pub(crate) fn cancel(fd: BorrowedFd<'_>, arg: &abi::IdArg) -> io::Result<i32> {
    // SAFETY: `_IOW` of exactly `size_of::<IdArg>()`, read from a valid reference.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), abi::O2G_IOC_CANCEL as _, arg) };
    check(rc).map(|()| rc)
}

/// `O2G_IOC_FREE`: gives a taken unexpected message's dump space back.
///
/// Memory-safe by itself, but the kernel reuses the space at once: callers
/// must hold no borrow of the message's bytes (see `UnexpectedMessage`).
pub(crate) fn free(fd: BorrowedFd<'_>, arg: &abi::IdArg) -> io::Result<()> {
    // SAFETY: `_IOW` of exactly `size_of::<IdArg>()`, read from a valid reference.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), abi::O2G_IOC_FREE as _, arg) };
    check(rc)
}

/// `O2G_IOC_OFFER`: offers `args.buf[..args.len]` for a rendezvous send
/// (or, with `O2G_OFFER_REPLACE`, replaces an offer's buffer). The module
/// pins the pages and only reads them; they stay pinned, so allocated,
/// until the offer's `SENT` record, whatever the process does with the
/// memory meanwhile.
pub(crate) fn offer(fd: BorrowedFd<'_>, args: &mut abi::OfferArgs) -> io::Result<()> {
    // SAFETY: `_IOWR` of exactly `size_of::<OfferArgs>()` in a valid,
    // exclusively borrowed struct of integers. The module reads the
    // buffer through its own pins, never through this process's mapping.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), abi::O2G_IOC_OFFER as _, args) };
    check(rc)
}

/// `O2G_IOC_RNDV_STATS`.
pub(crate) fn rndv_stats(fd: BorrowedFd<'_>) -> io::Result<abi::RendezvousStats> {
    let mut stats = abi::RendezvousStats::default();
    // SAFETY: `_IOR` of exactly `size_of::<RendezvousStats>()` into a
    // valid, exclusively borrowed value that any byte pattern may fill.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), abi::O2G_IOC_RNDV_STATS as _, &mut stats) };
    check(rc).map(|()| stats)
}

/// `O2G_IOC_TAKE_CREDIT`.
pub(crate) fn take_credit(fd: BorrowedFd<'_>, args: &mut abi::CreditArgs) -> io::Result<()> {
    // SAFETY: `_IOWR` of exactly `size_of::<CreditArgs>()` in a valid,
    // exclusively borrowed struct of integers.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), abi::O2G_IOC_TAKE_CREDIT as _, args) };
    check(rc)
}

/// `O2G_IOC_WIN_REGISTER`: the module pins `args.base[..args.len]`
/// writable and writes peers' puts into it until unregistered.
///
/// # Safety
///
/// The memory must stay valid (mapped and owned by the caller's data)
/// until [`win_unregister`] or the endpoint's close: the module writes
/// it, through its own pins, at any time meanwhile.
pub(crate) unsafe fn win_register(
    fd: BorrowedFd<'_>,
    args: &mut abi::WindowArgs,
) -> io::Result<()> {
    // SAFETY: `_IOWR` of exactly `size_of::<WindowArgs>()` in a valid,
    // exclusively borrowed struct of integers; the window's lifetime is
    // the caller's promise.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), abi::O2G_IOC_WIN_REGISTER as _, args) };
    check(rc)
}

/// `O2G_IOC_WIN_UNREGISTER`: no put lands in the window after it returns.
pub(crate) fn win_unregister(fd: BorrowedFd<'_>, arg: &abi::IdArg) -> io::Result<()> {
    // SAFETY: `_IOW` of exactly `size_of::<IdArg>()` from a valid struct.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), abi::O2G_IOC_WIN_UNREGISTER as _, arg) };
    check(rc)
}

/// `O2G_IOC_WIN_EPOCH`.
pub(crate) fn win_epoch(fd: BorrowedFd<'_>, arg: &abi::WindowEpoch) -> io::Result<()> {
    // SAFETY: `_IOW` of exactly `size_of::<WindowEpoch>()` from a valid struct.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), abi::O2G_IOC_WIN_EPOCH as _, arg) };
    check(rc)
}

/// `O2G_IOC_WIN_STATS`.
pub(crate) fn win_stats(fd: BorrowedFd<'_>, stats: &mut abi::WindowStats) -> io::Result<()> {
    // SAFETY: `_IOWR` of exactly `size_of::<WindowStats>()` in a valid,
    // exclusively borrowed struct of integers.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), abi::O2G_IOC_WIN_STATS as _, stats) };
    check(rc)
}

/// `O2G_IOC_SYNC`: applies the release ring and resumes stalled connections.
pub(crate) fn sync(fd: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: `_IO`: the module reads no argument.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), abi::O2G_IOC_SYNC as _, 0) };
    check(rc)
}

/// `O2G_IOC_POLL`: waits up to `args.timeout_ns`; fills `args.events`.
pub(crate) fn poll(fd: BorrowedFd<'_>, args: &mut abi::PollArgs) -> io::Result<()> {
    // SAFETY: `_IOWR` of exactly `size_of::<PollArgs>()` in a valid, exclusively
    // borrowed struct of integers.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), abi::O2G_IOC_POLL as _, args) };
    check(rc)
}

/// `O2G_IOC_PROBE`: looks for a stored unexpected message matching `args`.
pub(crate) fn probe(fd: BorrowedFd<'_>, args: &mut abi::ProbeArgs) -> io::Result<()> {
    // SAFETY: `_IOWR` of exactly `size_of::<ProbeArgs>()` in a valid, exclusively
    // borrowed struct of integers.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), abi::O2G_IOC_PROBE as _, args) };
    check(rc)
}

/// `O2G_IOC_SOCKET_STATS`: `stats.rank` in, the rest out.
pub(crate) fn socket_stats(fd: BorrowedFd<'_>, stats: &mut abi::SocketStats) -> io::Result<()> {
    // SAFETY: `_IOWR` of exactly `size_of::<SocketStats>()` in a valid,
    // exclusively borrowed struct of integers.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), abi::O2G_IOC_SOCKET_STATS as _, stats) };
    check(rc)
}

/// `O2G_IOC_LIST_ENDPOINTS` into `buf` (at most [`abi::O2G_MAX_LIST`] entries
/// of it are offered). Returns the number of endpoints that exist; the first
/// `min(count, offered)` entries of `buf` were written.
pub(crate) fn list_endpoints(
    fd: BorrowedFd<'_>,
    buf: &mut [abi::EndpointSummary],
) -> io::Result<u32> {
    let capacity = u32::try_from(buf.len()).map_or(abi::O2G_MAX_LIST, |n| n.min(abi::O2G_MAX_LIST));
    let mut list = abi::EndpointList {
        buf: buf.as_mut_ptr() as u64,
        capacity,
        count: 0,
    };
    // SAFETY: `_IOWR` of exactly `size_of::<EndpointList>()` in `list`, a valid,
    // exclusively borrowed struct of integers. During the call the kernel
    // writes at most `capacity <= buf.len()` `EndpointSummary` records (plain
    // integers) at `list.buf`, which points to `buf`, exclusively borrowed for
    // the whole call; nothing is written after the call returns.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), abi::O2G_IOC_LIST_ENDPOINTS as _, &mut list) };
    check(rc).map(|()| list.count)
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
