// SPDX-License-Identifier: GPL-2.0

//! The work queue every work item of the module runs on.
//!
//! 7.2's `kernel::workqueue::system()` names `system_wq`, which the kernel
//! now warns about ("enqueued on deprecated workqueue"); `system_percpu_wq`
//! is the same queue under its new name, so the readers and the reclaim
//! work keep running on the CPU that queued them (the one whose softirq saw
//! the data). The send work runs on its endpoint's own CPU instead
//! ([`enqueue_on`]).

use kernel::{
    bindings,
    cpu::CpuId,
    workqueue::{Queue, RawWorkItem},
};

/// The per-CPU system work queue (`system_percpu_wq`).
pub(crate) fn percpu() -> &'static Queue {
    // SAFETY: `system_percpu_wq` is set up before any module loads and is
    // never destroyed, so the pointer is valid for `'static`; reading the
    // C global races with no writer after boot.
    unsafe { Queue::from_raw(bindings::system_percpu_wq) }
}

/// Queues `w` on the per-CPU system queue, to run on `cpu`.
///
/// `Queue::enqueue` always passes `WORK_CPU_UNBOUND` (the calling CPU);
/// this is the same call with the CPU named. `cpu` must have been online
/// once (`queue_work_on` warns otherwise); one that went offline since
/// only moves the work elsewhere, as its pool then runs unbound.
///
/// Context: any.
pub(crate) fn enqueue_on<W, const ID: u64>(cpu: CpuId, w: W) -> W::EnqueueOutput
where
    W: RawWorkItem<ID> + Send + 'static,
{
    // SAFETY: The closure returns `queue_work_on`'s answer, which is false
    // only when the work is already queued, as `__enqueue` requires; `W` is
    // `Send` and `'static`, so neither of its other conditions applies.
    // `system_percpu_wq` is valid for `'static` (see `percpu`), and
    // `__enqueue` keeps `work` valid until the work function runs whenever
    // `queue_work_on` returns true.
    unsafe {
        w.__enqueue(move |work| {
            // A `CpuId` fits an `i32` (its invariants).
            bindings::queue_work_on(cpu.as_u32() as i32, bindings::system_percpu_wq, work)
        })
    }
}
