// SPDX-License-Identifier: GPL-2.0

//! The receive side of an endpoint: what the socket hooks update from
//! softirq and the ioctls use from process context.
//!
//! Every registered socket's [`crate::conn::Conn`] holds a reference, so the
//! state outlives any hook that can still reach it. It sits under one
//! BH-safe spinlock, taken after the socket's `sk_callback_lock` and the
//! connection's own reader lock (see the lock order in `endpoint.rs`).
//! Waiters in POLL sleep on [`EndpointRx::wake`]'s condition variable.
//!
//! Buffers of receives that finish in softirq are unpinned in process
//! context: by the owning process at its next POST, POLL or STATS, or by
//! the unpin work [`UNPIN_LATER_MS`] later if it makes none. Queuing a
//! work item per finished receive instead cost a kworker wake-up and two
//! context switches on a busy CPU each time: streams and collectives of
//! 16-64 KiB ran at half speed (`docs/results.md`, "Unpinning finished
//! receives in the process").

use core::sync::atomic::{fence, AtomicU64, AtomicUsize, Ordering};

use kernel::{
    alloc::KVVec,
    cpu::CpuId,
    impl_has_delayed_work, impl_has_work, new_condvar, new_delayed_work, new_mutex, new_work,
    prelude::*,
    sync::{Arc, CondVar, Mutex, SetOnce},
    types::ScopeGuard,
    workqueue::{DelayedWork, Work, WorkItem},
};

use crate::bh_lock::{new_spinlock_bh, SpinLockBh};
use crate::conn::Conn;
use crate::data_path::DataPath;
use crate::shared::SharedArea;
use crate::window::WindowTable;
use crate::work_queue;
use crate::zerocopy::ZcHub;

/// How long a finished receive's buffer may stay pinned when its process
/// makes no POST, POLL or STATS call: short next to a computation between
/// messages, long next to a receive (one timer per 10 ms at most, however
/// many receives finish meanwhile).
pub(crate) const UNPIN_LATER_MS: u32 = 10;

/// Counters of the module's own mechanics, kept from open to release;
/// the receive decisions' counters are the machine's (`data_path::Machine`).
#[derive(Default)]
pub(crate) struct Counters {
    /// Stored messages announced in the ring.
    pub(crate) notices: u64,
    /// Copies of stored messages left to the reclaim work.
    pub(crate) deferred_copies: u64,
    /// Clear-to-send messages written.
    pub(crate) cts_sent: u64,
    /// Offers made, and those whose data went out in full.
    pub(crate) offers: u64,
    pub(crate) offers_sent: u64,
    /// Payload bytes sent from offers.
    pub(crate) offer_bytes_sent: u64,
    /// The most eager bytes one peer held here, seen at a decision.
    pub(crate) held_peak: u64,
    /// Credit messages written (or handed to this process itself).
    pub(crate) credits_sent: u64,
    /// Credit messages received.
    pub(crate) credits_received: u64,
}

/// The receive-side state, under [`EndpointRx`]'s lock.
#[derive(Default)]
pub(crate) struct EndpointRxLocked {
    pub(crate) counters: Counters,
    /// Present after INIT.
    pub(crate) recv: Option<KBox<DataPath>>,
}

/// What the hook and the ioctls share.
#[pin_data]
pub(crate) struct EndpointRx {
    #[pin]
    state: SpinLockBh<EndpointRxLocked>,
    /// Signalled when a completion is published or an unexpected message
    /// is stored.
    #[pin]
    wake: CondVar,
    /// Processes in [`EndpointRx::wait`] that may be asleep on `wake`: a
    /// notification with none skips the wait queue's lock (one per message
    /// otherwise, while the process spins on the ring instead of waiting).
    sleepers: AtomicUsize,
    /// Counted by the hook on every call, outside the rx lock: calls of
    /// `sk_data_ready`, and those that found the socket owned.
    pub(crate) data_ready_events: AtomicU64,
    pub(crate) deferred_reads: AtomicU64,
    /// The shared pages, set once by INIT (before `EndpointRxLocked::recv`).
    shared: SetOnce<SharedArea>,
    #[pin]
    reclaim: Work<EndpointRx>,
    /// Unpins finished receives' buffers the process left pinned.
    #[pin]
    unpin_later: DelayedWork<EndpointRx, 2>,
    /// The control connections, sorted by rank: where the send work
    /// writes. Lock order: after the endpoint's own mutex, before a
    /// connection's tx mutex and the rx lock. Emptied at teardown (each
    /// connection holds a reference to this `EndpointRx`).
    #[pin]
    controls: Mutex<KVVec<Arc<Conn>>>,
    /// Writes clear-to-send and rendezvous data (`tx.rs`).
    #[pin]
    send: Work<EndpointRx, 1>,
    /// Control connections the send work must visit: a half-written
    /// message waits for room, or an offer's data waits between two
    /// pieces (`tx.rs`).
    blocked: AtomicUsize,
    /// Where the send work runs: endpoints take the online CPUs in turn,
    /// so that two ranks' rendezvous data, sent at once, are written and
    /// (on loopback, in the sender's softirq) read on two CPUs rather
    /// than on whichever one saw the last acknowledgement.
    send_cpu: CpuId,
    /// The registered memory windows (`window.rs`): their own BH-safe
    /// lock, taken by readers after their reader lock and by the window
    /// ioctls, never together with the rx lock.
    #[pin]
    windows: SpinLockBh<WindowTable>,
    /// Where zero-copy sends' completions find this endpoint; attached by
    /// open, detached by release (`zerocopy.rs`).
    zc_hub: Arc<ZcHub>,
}

impl_has_work! {
    impl HasWork<EndpointRx> for EndpointRx { self.reclaim }
    impl HasWork<EndpointRx, 1> for EndpointRx { self.send }
}

impl_has_delayed_work! {
    impl HasDelayedWork<EndpointRx, 2> for EndpointRx { self.unpin_later }
}

impl EndpointRx {
    /// Allocates the receive side of a new endpoint.
    pub(crate) fn new() -> Result<Arc<EndpointRx>> {
        let zc_hub = ZcHub::new()?;
        Arc::pin_init(
            pin_init!(EndpointRx {
                state <- new_spinlock_bh!(EndpointRxLocked::default(), c"o2g_endpoint_rx"),
                wake <- new_condvar!("o2g_endpoint_wake"),
                sleepers: AtomicUsize::new(0),
                data_ready_events: AtomicU64::new(0),
                deferred_reads: AtomicU64::new(0),
                shared: SetOnce::new(),
                reclaim <- new_work!("o2g_reclaim"),
                unpin_later <- new_delayed_work!("o2g_unpin_later"),
                controls <- new_mutex!(KVVec::new(), "o2g_endpoint_controls"),
                send <- new_work!("o2g_send"),
                blocked: AtomicUsize::new(0),
                // SAFETY: The call only reads the online CPU mask. It
                // returns a valid CPU id, so `current` is never taken.
                send_cpu: CpuId::from_i32(unsafe { crate::shim::o2g_next_online_cpu() })
                    .unwrap_or_else(CpuId::current),
                windows <- new_spinlock_bh!(WindowTable::new(), c"o2g_endpoint_windows"),
                zc_hub,
            }),
            GFP_KERNEL_ACCOUNT,
        )
    }

    /// Runs `f` with the state locked (BH off); must not sleep.
    ///
    /// Context: any (softirq or process); takes the endpoint's rx lock.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut EndpointRxLocked) -> R) -> R {
        f(&mut self.state.lock())
    }

    /// Runs `f` with the state locked and INIT's state, or fails with
    /// `EBADFD` (the endpoint was not initialised).
    pub(crate) fn with_recv<R>(
        &self,
        f: impl FnOnce(&SharedArea, &mut DataPath, &mut Counters) -> Result<R>,
    ) -> Result<R> {
        let shared = self
            .shared
            .as_ref()
            .ok_or_else(crate::sock::errno::ebadfd)?;
        let mut st = self.state.lock();
        let EndpointRxLocked { counters, recv } = &mut *st;
        let recv = recv.as_deref_mut().ok_or_else(crate::sock::errno::ebadfd)?;
        f(shared, recv, counters)
    }

    /// Runs `f` with the window table locked (BH off); must not sleep.
    ///
    /// Context: any; takes the window lock, never with the rx lock held.
    pub(crate) fn with_windows<R>(&self, f: impl FnOnce(&mut WindowTable) -> R) -> R {
        f(&mut self.windows.lock())
    }

    /// Where this endpoint's zero-copy completions find it.
    pub(crate) fn zc_hub(&self) -> &Arc<ZcHub> {
        &self.zc_hub
    }

    /// The shared pages, after INIT.
    pub(crate) fn shared(&self) -> Option<&SharedArea> {
        self.shared.as_ref()
    }

    /// Installs INIT's state, once. Errors: `EBUSY` if already done.
    ///
    /// Context: process context; takes the rx lock.
    pub(crate) fn install(&self, shared: SharedArea, recv: KBox<DataPath>) -> Result {
        if !self.shared.populate(shared) {
            return Err(EBUSY);
        }
        self.with(|st| st.recv = Some(recv));
        Ok(())
    }

    /// Wakes every POLL waiter.
    ///
    /// Context: any.
    pub(crate) fn notify(&self) {
        // Pairs with the fence in `wait`: either the waiter sees what the
        // caller published before this call, or this sees the waiter.
        fence(Ordering::SeqCst);
        if self.sleepers.load(Ordering::Relaxed) != 0 {
            self.wake.notify_all();
        }
    }

    /// Waits until `ready` holds, `timeout` jiffies pass (`None`: no limit),
    /// or a signal arrives. Returns `ready`'s last answer; `EINTR` on a
    /// signal.
    ///
    /// Context: process context, may sleep; no locks held.
    pub(crate) fn wait(
        &self,
        timeout: Option<u64>,
        mut ready: impl FnMut(&mut EndpointRxLocked) -> u32,
    ) -> Result<u32> {
        use kernel::sync::CondVarTimeoutResult as R;
        let mut guard = self.state.lock();
        let mut left = timeout;
        // Counted before `ready` looks (see `notify`) and until the loop ends.
        self.sleepers.fetch_add(1, Ordering::Relaxed);
        let _counted = ScopeGuard::new(|| {
            self.sleepers.fetch_sub(1, Ordering::Relaxed);
        });
        loop {
            fence(Ordering::SeqCst);
            let events = ready(&mut guard);
            if events != 0 || left == Some(0) {
                return Ok(events);
            }
            match left {
                None => {
                    if self.wake.wait_interruptible(&mut guard) {
                        return Err(EINTR);
                    }
                }
                Some(j) => {
                    let j = j.min(i64::MAX as u64 / 2) as kernel::time::Jiffies;
                    match self.wake.wait_interruptible_timeout(&mut guard, j) {
                        R::Timeout => left = Some(0),
                        R::Woken { jiffies } => left = Some(jiffies as u64),
                        R::Signal { .. } => return Err(EINTR),
                    }
                }
            }
        }
    }

    /// Queues the reclaim work at once: copies the readers left to it, or
    /// buffers a failure or the send work finished.
    ///
    /// Context: any.
    pub(crate) fn schedule_reclaim(self: &Arc<Self>) {
        // Already queued is fine: one run reclaims everything.
        let _ = work_queue::percpu().enqueue::<Arc<EndpointRx>, 0>(self.clone());
    }

    /// Queues the unpin work to run [`UNPIN_LATER_MS`] from now, unless it
    /// is queued already: a receive finished, and its process unpins the
    /// buffer itself if it calls before then.
    ///
    /// Context: any.
    pub(crate) fn schedule_unpin(self: &Arc<Self>) {
        let later = kernel::time::msecs_to_jiffies(UNPIN_LATER_MS);
        // Already queued is fine: one run unpins everything.
        let _ = work_queue::percpu().enqueue_delayed::<Arc<EndpointRx>, 2>(self.clone(), later);
    }

    /// Unpins every finished buffer.
    ///
    /// Context: process context, may sleep; takes the rx lock briefly per
    /// buffer, never across an unpin.
    pub(crate) fn unpin_retired(&self) {
        let mut unpinned = 0;
        loop {
            // The budget gets a buffer's bytes back once it is unpinned,
            // in the next buffer's critical section.
            let buf = self.with(|st| {
                let r = st.recv.as_mut()?;
                r.book.pinned = r.book.pinned.saturating_sub(unpinned);
                r.book.pop_retired()
            });
            let Some(buf) = buf else {
                return;
            };
            unpinned = buf.len() as u64;
            drop(buf);
        }
    }

    /// Copies the stored messages the readers left to this work into their
    /// receives and completes them, then unpins every finished buffer.
    ///
    /// Context: process context, may sleep; takes the rx lock briefly per
    /// copy and per buffer, never across a copy.
    pub(crate) fn reclaim_now(&self) {
        while let Some(d) = self.with(|st| st.recv.as_mut().and_then(|r| r.book.pop_deferred())) {
            // INIT set `shared` before `recv`, which the pop found.
            let status = match self.shared() {
                Some(shared) => {
                    crate::reader::copy_stored(shared, &d.recv, d.region.at as usize, d.len, true)
                }
                None => EINVAL.to_errno(),
            };
            let len = d.recv.buf.len() as u64;
            self.with(|st| {
                if let (Some(r), Some(shared)) = (st.recv.as_mut(), self.shared.as_ref()) {
                    r.rx.copied(d.region);
                    crate::data_path::publish(shared, d.recv.user_data, d.env, d.len, status);
                }
            });
            // Unpinned here, in process context, rather than retired.
            drop(d.recv);
            self.with(|st| {
                if let Some(r) = st.recv.as_mut() {
                    r.book.pinned = r.book.pinned.saturating_sub(len);
                }
            });
            self.notify();
        }
        self.unpin_retired();
    }

    /// Queues the send work (messages for control connections wait, or
    /// one of them has room again).
    ///
    /// Context: any.
    pub(crate) fn schedule_send(self: &Arc<Self>) {
        // Already queued is fine: one pass sends everything it can.
        let _ = work_queue::enqueue_on::<Arc<EndpointRx>, 1>(self.send_cpu, self.clone());
    }

    /// Counts a control connection in (`true`) or out of those waiting
    /// for room. Called under that connection's tx mutex.
    pub(crate) fn count_blocked(&self, blocked: bool) {
        if blocked {
            self.blocked.fetch_add(1, Ordering::Relaxed);
        } else {
            self.blocked.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Whether some control connection waits for room.
    pub(crate) fn any_blocked(&self) -> bool {
        self.blocked.load(Ordering::Relaxed) != 0
    }

    /// The control connections, sorted by rank.
    ///
    /// Context: process context, may sleep.
    pub(crate) fn controls(&self) -> kernel::sync::MutexGuard<'_, KVVec<Arc<Conn>>> {
        self.controls.lock()
    }

    /// Waits until a queued send work has finished.
    ///
    /// Context: process context, may sleep; no locks held.
    pub(crate) fn flush_send(&self) {
        // SAFETY: `send` is an initialised work item inside `self`, which
        // the caller's reference keeps alive for the call.
        unsafe { kernel::bindings::flush_work(Work::<EndpointRx, 1>::raw_get(&self.send)) };
    }

    /// Waits until a queued reclaim work has finished.
    ///
    /// Context: process context, may sleep; no locks held.
    pub(crate) fn flush_reclaim(&self) {
        // SAFETY: `reclaim` is an initialised work item inside `self`, which
        // the caller's reference keeps alive for the call.
        unsafe { kernel::bindings::flush_work(Work::raw_get(&self.reclaim)) };
    }

    /// Runs a pending unpin work now, rather than when its timer fires,
    /// and waits until it has finished.
    ///
    /// Context: process context, may sleep; no locks held.
    pub(crate) fn flush_unpin(&self) {
        // SAFETY: `unpin_later` is an initialised delayed work inside
        // `self`, which the caller's reference keeps alive for the call.
        let work = unsafe { DelayedWork::raw_as_work(&self.unpin_later) };
        // SAFETY: `work` points at the `work` field of the `delayed_work`
        // that `unpin_later` wraps (`raw_as_work`), so the containing
        // structure is that `delayed_work`.
        let dwork = unsafe {
            kernel::container_of!(Work::raw_get(work), kernel::bindings::delayed_work, work)
        };
        // SAFETY: `dwork` is the initialised `delayed_work` found above.
        unsafe { kernel::bindings::flush_delayed_work(dwork) };
    }
}

impl WorkItem for EndpointRx {
    type Pointer = Arc<EndpointRx>;

    /// Context: process context (system workqueue), may sleep.
    fn run(this: Arc<EndpointRx>) {
        this.reclaim_now();
    }
}

impl WorkItem<2> for EndpointRx {
    type Pointer = Arc<EndpointRx>;

    /// Unpins what finished receives left pinned (see [`UNPIN_LATER_MS`]).
    ///
    /// Context: process context (system workqueue), may sleep.
    fn run(this: Arc<EndpointRx>) {
        this.unpin_retired();
    }
}

impl WorkItem<1> for EndpointRx {
    type Pointer = Arc<EndpointRx>;

    /// One pass of sending (see `tx.rs`).
    ///
    /// Context: process context (system workqueue), may sleep; takes the
    /// control-connection list, then each connection's tx mutex, then
    /// the rx lock briefly.
    fn run(this: Arc<EndpointRx>) {
        let controls = this.controls.lock();
        crate::tx::send_pass(&this, &controls);
        drop(controls);
        this.reclaim_now();
    }
}
