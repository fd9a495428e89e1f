// SPDX-License-Identifier: GPL-2.0

//! The work queue every work item of the module runs on.
//!
//! 7.2's `kernel::workqueue::system()` names `system_wq`, which the kernel
//! now warns about ("enqueued on deprecated workqueue"); `system_percpu_wq`
//! is the same queue under its new name, so the readers, the send work and
//! the reclaim work keep running on the CPU that queued them (the one whose
//! softirq saw the data).

use kernel::{bindings, workqueue::Queue};

/// The per-CPU system work queue (`system_percpu_wq`).
pub(crate) fn percpu() -> &'static Queue {
    // SAFETY: `system_percpu_wq` is set up before any module loads and is
    // never destroyed, so the pointer is valid for `'static`; reading the
    // C global races with no writer after boot.
    unsafe { Queue::from_raw(bindings::system_percpu_wq) }
}
