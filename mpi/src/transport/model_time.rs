//! `O2G_MODEL_TIME=1`: `MPI_Wtime` from an emulated NIC's timing model, so
//! that an MPI program over `dimmnet` or `hyphenlink` reports what it
//! would take on the paper's hardware rather than on this host.
//!
//! A rank's time is its node's virtual clock (`o2g_dimmnet::Nic::now`,
//! `o2g_hyphen::Node::now`).
//! Communication advances it by the model: every primitive the transport
//! uses charges it, and an arrival carries the sender's clock.
//! Computation advances it by the calling thread's CPU time
//! (`CLOCK_THREAD_CPUTIME_ID`) between two entries into the transport:
//! the CPU time the transport itself spends (copying, polling, spinning in
//! a wait) is the emulation's, not the hardware's, and is left out. The
//! computation is this host's CPU's, not the paper's Pentium III: the
//! figure says what the network would cost a program that computes at
//! this host's speed.

use std::cell::Cell;
use std::sync::Arc;
use std::time::Duration;

/// A node's virtual clock in an emulated NIC's timing model.
pub(crate) trait VirtualClock: Send + Sync + 'static {
    /// The node's host clock, in picoseconds.
    fn now_ps(&self) -> Option<u64>;
    /// Charges `ps` of host time (computation).
    fn spend_ps(&self, ps: u64);
}

impl VirtualClock for o2g_dimmnet::Nic {
    fn now_ps(&self) -> Option<u64> {
        self.now().ok()
    }
    fn spend_ps(&self, ps: u64) {
        // A model clock that cannot be read or written (a corrupt region)
        // shows in the transport's next operation; the clock stops here.
        let _ = self.spend(ps);
    }
}

impl VirtualClock for o2g_hyphen::Node {
    fn now_ps(&self) -> Option<u64> {
        self.now().ok()
    }
    fn spend_ps(&self, ps: u64) {
        let _ = self.spend(ps);
    }
}

thread_local! {
    /// This thread's CPU time when it last left the transport.
    static LEFT_AT: Cell<Option<Duration>> = const { Cell::new(None) };
}

/// The calling thread's CPU time.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec the call fills in.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    debug_assert_eq!(r, 0, "CLOCK_THREAD_CPUTIME_ID is always there on Linux");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// One rank's model clock.
struct ModelTime {
    clock: Box<dyn VirtualClock>,
}

/// The model clock while it is `MPI_Wtime`; dropping it (with the
/// transport) gives `MPI_Wtime` back to the host's clock.
pub(crate) struct ModelClock(Arc<ModelTime>);

/// Held while a thread is inside the transport: its drop marks where the
/// thread's computation starts again.
#[must_use]
pub(crate) struct InTransport(());

impl Drop for InTransport {
    fn drop(&mut self) {
        LEFT_AT.with(|l| l.set(Some(thread_cpu())));
    }
}

impl ModelClock {
    /// The clock of a node, installed as `MPI_Wtime`.
    pub(crate) fn install(clock: impl VirtualClock) -> Self {
        let time = Arc::new(ModelTime {
            clock: Box::new(clock),
        });
        let clock = Arc::clone(&time);
        crate::environment::use_clock(Some(Arc::new(move || clock.seconds())));
        Self(time)
    }

    /// Entering the transport: the computation before it is charged.
    pub(crate) fn enter(&self) -> InTransport {
        self.0.computed();
        InTransport(())
    }
}

impl Drop for ModelClock {
    fn drop(&mut self) {
        crate::environment::use_clock(None);
    }
}

impl ModelTime {
    /// Charges the computation since this thread last left the transport.
    fn computed(&self) {
        let now = thread_cpu();
        if let Some(then) = LEFT_AT.with(|l| l.replace(Some(now))) {
            let ps = now.saturating_sub(then).as_nanos() as u64 * 1_000;
            self.clock.spend_ps(ps);
        }
    }

    /// The node's virtual time in seconds, the computation so far included.
    fn seconds(&self) -> f64 {
        self.computed();
        self.clock.now_ps().map_or(f64::NAN, |ps| ps as f64 * 1e-12)
    }
}
