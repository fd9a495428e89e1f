//! How a rank waits for the NIC.
//!
//! `progress` polls NIC memory (plain loads of flag words in this node's
//! LLCM: no system call on the common receive path) and returns as soon
//! as a chunk moved. With nothing to do it backs off (`backoff.rs`):
//! [`SPINS`] rounds with `spin_loop`, then [`YIELDS`] rounds with
//! `yield_now`, then sleeps starting at [`FIRST_SLEEP`] and doubling up to
//! [`MAX_SLEEP`] (1 ms), never past the caller's timeout. Any work resets
//! the back-off. When the ranks share one host (`shm`) and there are more
//! of them than CPUs, the spinning phase is skipped: a spinning rank would
//! only hold the CPU its peer needs to answer, so it yields at once.

use std::time::{Duration, Instant};

use super::dead_peers::WATCH_EVERY;
use super::Dimmnet;
use crate::transport::backoff::{Backoff, Phases};

/// Busy-wait rounds before a wait starts yielding.
pub(super) const SPINS: u32 = 1000;
/// `yield_now` rounds before a wait starts sleeping.
const YIELDS: u32 = 100;
/// First sleep of a wait; it doubles each round up to [`MAX_SLEEP`].
const FIRST_SLEEP: Duration = Duration::from_micros(10);
/// Longest sleep of a wait.
const MAX_SLEEP: Duration = Duration::from_millis(1);

impl Dimmnet {
    /// The back-off of a wait that starts now.
    pub(super) fn backoff(&self) -> Backoff {
        let phases = Phases::Rounds {
            spins: self.spins,
            yields: YIELDS,
        };
        Backoff::new(phases, FIRST_SLEEP, MAX_SLEEP)
    }

    /// Counts a round that found work (or did not wait), checking
    /// liveness every [`WATCH_EVERY`] of them.
    pub(super) fn busy_round(&mut self) {
        self.rounds = self.rounds.wrapping_add(1);
        if self.rounds % WATCH_EVERY == 0 {
            self.watch();
        }
    }

    /// One step of a wait: a pump, and when nothing moved, a liveness check
    /// (when idle or every [`WATCH_EVERY`] rounds) and a snooze. Whether
    /// anything happened.
    pub(super) fn wait_step(&mut self, backoff: &mut Backoff, deadline: Option<Instant>) -> bool {
        if self.pump() {
            *backoff = self.backoff();
            self.busy_round();
            return true;
        }
        self.rounds = self.rounds.wrapping_add(1);
        if (backoff.idle() || self.rounds % WATCH_EVERY == 0) && self.watch() {
            return true;
        }
        backoff.snooze(deadline);
        false
    }
}
