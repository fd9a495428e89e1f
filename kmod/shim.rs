// SPDX-License-Identifier: GPL-2.0

//! Declarations of the C helpers in `o2g_shim.c`, in one place.
//!
//! Keep in step with `o2g_shim.h`. Each helper exists only because the 7.2
//! Rust kernel crate has no binding for what it touches.

extern "C" {
    /// `sizeof(struct sock)` for the kernel this module was built against.
    pub(crate) fn o2g_shim_sizeof_sock() -> usize;
}

/// Size of the kernel's `struct sock`, from the C shim.
pub(crate) fn sizeof_sock() -> usize {
    // SAFETY: The helper only returns a compile-time constant.
    unsafe { o2g_shim_sizeof_sock() }
}
