//! The only system calls of the crate: `futex(2)` wait and wake on a
//! 32-bit word of the shared mapping.
//!
//! The words live in a `MAP_SHARED` file mapping, so the calls use the
//! shared (not `FUTEX_PRIVATE_FLAG`) futex operations: the kernel keys the
//! waiter by the file page and offset, and a wake from any process that
//! maps the same file reaches it. Inside an ivshmem guest the word is a
//! PCI BAR, where a futex reaches only waiters of the same guest; a wait
//! there is always bounded by its timeout, so a wake that cannot arrive
//! costs at most one timeout slice (see `wait.rs`).

use std::sync::atomic::AtomicU32;
use std::time::Duration;

/// What a [`wait`] returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Woken {
    /// A wake, a signal, a spurious return, or the word already differed:
    /// the caller re-checks its condition.
    Maybe,
    /// The timeout ran out.
    TimedOut,
}

/// Sleeps while `*word == expected`, at most `timeout`.
///
/// Context: process context, may sleep; never called with a lock held
/// that the waker needs.
pub(crate) fn wait(word: &AtomicU32, expected: u32, timeout: Duration) -> Woken {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: `word` is a live, 4-aligned `AtomicU32` borrowed for the whole
    // call, so the kernel reads a valid futex word; `ts` is a valid relative
    // timeout on this stack frame; the remaining arguments are unused by
    // FUTEX_WAIT. The call neither keeps nor writes through the pointers.
    let r = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            &ts as *const libc::timespec,
            std::ptr::null::<u32>(),
            0u32,
        )
    };
    if r == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ETIMEDOUT) {
        Woken::TimedOut
    } else {
        // 0 (woken), EAGAIN (value changed), EINTR (signal): re-check.
        Woken::Maybe
    }
}

/// Wakes up to `count` waiters sleeping on `word` in any process.
pub(crate) fn wake(word: &AtomicU32, count: u32) {
    let count = count.min(i32::MAX as u32);
    // SAFETY: `word` is a live, aligned `AtomicU32`; FUTEX_WAKE only uses the
    // address as a key and the count, and never dereferences the other
    // (null) arguments.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE,
            count,
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            0u32,
        );
    }
}
