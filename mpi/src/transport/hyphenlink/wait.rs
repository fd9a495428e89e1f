//! How a rank with nothing to do waits, and how its peers wake it.
//!
//! A rank with nothing to do polls its rings spinning for 20 µs, then
//! yielding the CPU between polls until 200 µs, then sleeps (`backoff.rs`).
//! Before sleeping it sets its `waiting` word (its line's spare word in the
//! [`LivenessTable`]) and re-checks everything; a sender that publishes a
//! frame, and a receiver that frees ring space, PB a task id into the FIFO
//! of a peer whose `waiting` word is set (the Dekker pattern with `SeqCst`
//! fences on both sides makes a missed wake-up impossible; PBs are hints, a
//! full FIFO already means "wake up"). The sleep is `O2G_HYPHEN_WAIT`:
//! `block` (default for `shm`) is the interrupt EXT, a futex sleep on the
//! node's FIFO doorbell; `sleep` (default for `ivshmem`, where futexes do
//! not cross guests) sleeps 20 µs, doubling to 1 ms. Each sleep lasts at
//! most 50 ms, after which liveness is re-checked.
//!
//! [`LivenessTable`]: o2g_hyphen::liveness::LivenessTable

use std::sync::atomic::{fence, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use o2g_hyphen::wait::WaitPolicy;
use o2g_hyphen::Overflow;

use super::HyphenLink;
use crate::config::HyphenWait;
use crate::error::Result;
use crate::transport::backoff::{Backoff, Phase, Phases};

/// Task ids this transport PBs: kind "HL", the sender's rank as argument.
const TASK_WAKE: u32 = 0x484c_0000;

/// An idle rank spins this long, then yields until `YIELD_UNTIL`, then
/// sleeps.
const SPIN_FOR: Duration = Duration::from_micros(20);
const YIELD_UNTIL: Duration = Duration::from_micros(200);
/// Longest single sleep; liveness is re-checked after it.
const SLICE: Duration = Duration::from_millis(50);
const SLEEP_MIN: Duration = Duration::from_micros(20);
const SLEEP_MAX: Duration = Duration::from_millis(1);

impl HyphenLink {
    /// Whether `rank` sleeps (set by `rank` itself).
    fn waiting(&self, rank: usize) -> &AtomicU32 {
        self.table.spare(rank as u32)
    }

    /// Wakes `rank` if it sleeps: after publishing a frame in its ring, or
    /// freeing room in the ring it writes to us.
    pub(super) fn notify(&self, rank: usize) {
        fence(Ordering::SeqCst);
        if self.waiting(rank).load(Ordering::SeqCst) != 0 {
            // A full FIFO already wakes it; an id is only a hint.
            let _ = self
                .node
                .pb(rank as u32, TASK_WAKE | self.me, Overflow::Error);
        }
    }

    /// Calls `attempt` (which does a round of work) until it reports
    /// progress, spinning, then yielding, then sleeping; `false` once
    /// `deadline` passes first.
    pub(super) fn wait_for(
        &mut self,
        deadline: Option<Instant>,
        mut attempt: impl FnMut(&mut Self, bool) -> Result<bool>,
    ) -> Result<bool> {
        let phases = Phases::Elapsed {
            spin: SPIN_FOR,
            yield_until: YIELD_UNTIL,
        };
        let mut backoff = Backoff::new(phases, SLEEP_MIN, SLEEP_MAX);
        loop {
            let phase = backoff.next();
            match phase {
                Phase::Spin => std::hint::spin_loop(),
                Phase::Yield => std::thread::yield_now(),
                Phase::Sleep => {
                    // Announce the sleep, then re-check: whoever makes
                    // progress possible after this sees the flag and PBs us.
                    self.waiting(self.me as usize).store(1, Ordering::SeqCst);
                    fence(Ordering::SeqCst);
                    while let Ok(Some(_)) = self.node.try_ext() {}
                    let ready = attempt(self, true);
                    if !matches!(ready, Ok(false)) {
                        self.waiting(self.me as usize).store(0, Ordering::SeqCst);
                        return ready;
                    }
                    match self.sleep {
                        HyphenWait::Block => {
                            let left = deadline
                                .map_or(SLICE, |d| d.saturating_duration_since(Instant::now()))
                                .min(SLICE);
                            let _ = self.node.with_policy(WaitPolicy::blocking(left)).ext();
                        }
                        HyphenWait::Timed => backoff.nap(deadline),
                    }
                    self.waiting(self.me as usize).store(0, Ordering::SeqCst);
                }
            }
            if attempt(self, phase == Phase::Sleep)? {
                return Ok(true);
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(false);
            }
        }
    }
}
