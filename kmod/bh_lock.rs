// SPDX-License-Identifier: GPL-2.0

//! A spinlock that also keeps bottom halves off: `spin_lock_bh()`.
//!
//! State touched both from the socket hook (softirq) and from ioctls
//! (process context) must be locked with BH disabled on the process side, or
//! a softirq on the same CPU could spin on a lock its own CPU holds. The 7.2
//! kernel crate's `SpinLock` has no `_bh` variant, so this is a
//! [`Backend`] for the crate's generic [`Lock`], with the C shim doing the
//! locking (the `_bh` functions are inline in C). In softirq context the
//! BH-off part is a no-op, so one lock type serves both sides.

use kernel::{
    bindings,
    sync::lock::{Backend, Lock},
};

use crate::shim;

/// A spinlock taken with `spin_lock_bh()`.
pub(crate) type SpinLockBh<T> = Lock<T, SpinLockBhBackend>;

/// Creates a [`SpinLockBh`] initialiser with a lockdep class of its own.
macro_rules! new_spinlock_bh {
    ($inner:expr, $name:expr $(,)?) => {
        $crate::bh_lock::SpinLockBh::new($inner, $name, kernel::static_lock_class!())
    };
}
pub(crate) use new_spinlock_bh;

/// The [`Backend`] of [`SpinLockBh`].
pub(crate) struct SpinLockBhBackend;

// SAFETY: `spinlock_t` provides mutual exclusion; `lock` and `relock` (the
// default) both take it the same way, with BH disabled until `unlock`.
unsafe impl Backend for SpinLockBhBackend {
    type State = bindings::spinlock_t;
    type GuardState = ();

    unsafe fn init(
        ptr: *mut Self::State,
        name: *const kernel::ffi::c_char,
        key: *mut bindings::lock_class_key,
    ) {
        // SAFETY: The caller guarantees `ptr` is valid for writes and that
        // `name` and `key` live forever.
        unsafe { bindings::__spin_lock_init(ptr, name, key) }
    }

    unsafe fn lock(ptr: *mut Self::State) -> Self::GuardState {
        // SAFETY: The caller guarantees the lock is initialised.
        unsafe { shim::o2g_spin_lock_bh(ptr) }
    }

    unsafe fn try_lock(ptr: *mut Self::State) -> Option<Self::GuardState> {
        // SAFETY: The caller guarantees the lock is initialised.
        (unsafe { shim::o2g_spin_trylock_bh(ptr) } != 0).then_some(())
    }

    unsafe fn unlock(ptr: *mut Self::State, _guard_state: &Self::GuardState) {
        // SAFETY: The caller owns the lock, taken by `lock` or `try_lock`.
        unsafe { shim::o2g_spin_unlock_bh(ptr) }
    }

    unsafe fn assert_is_held(ptr: *mut Self::State) {
        // SAFETY: The caller guarantees the lock is initialised.
        unsafe { bindings::spin_assert_is_held(ptr) }
    }
}
