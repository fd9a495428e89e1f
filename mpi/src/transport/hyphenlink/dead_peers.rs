//! Telling live peers from dead ones.
//!
//! Every node keeps a line in the board's liveness table
//! ([`o2g_hyphen::liveness`]): a state word (`ALIVE`, `CLOSED` when its
//! transport is dropped, `EXITED` from an `atexit` hook, so a process that
//! calls `exit` without finalizing is seen at once) and a heartbeat
//! counter a helper thread bumps every [`HEARTBEAT_PERIOD`]. A peer whose
//! state is not `ALIVE`, or whose heartbeat stood still for
//! `O2G_HYPHEN_DEAD_AFTER` seconds (default 10; a killed or frozen
//! process), is dead: its ring is drained one last time (what it wrote
//! before dying is delivered), then receives from it fail, sends to it
//! fail, queued sends fail. States are checked every progress round,
//! heartbeats every [`BEAT_CHECK_EVERY`] rounds and whenever a wait is
//! about to sleep.

use std::time::{Duration, Instant};

use o2g_hyphen::liveness::Liveness;

use super::HyphenLink;

/// How often a rank's heartbeat thread beats.
pub(super) const HEARTBEAT_PERIOD: Duration = Duration::from_millis(100);
/// Progress rounds between heartbeat checks while busy.
const BEAT_CHECK_EVERY: u32 = 64;

impl HyphenLink {
    /// Finds peers that left or stopped beating; whether any did. `force`
    /// checks the heartbeats whatever the round.
    pub(super) fn check_peers(&mut self, force: bool) -> bool {
        self.polls = self.polls.wrapping_add(1);
        let now = (force || self.polls % BEAT_CHECK_EVERY == 0).then(Instant::now);
        let mut found = false;
        for rank in 0..self.peers.len() {
            if rank == self.me as usize || self.peers[rank].dead.is_some() {
                continue;
            }
            let why = match self.watch.status(rank as u32, now) {
                Liveness::Alive => continue,
                Liveness::Closed => "it left MPI (its HyphenLink endpoint is closed)".to_owned(),
                Liveness::Exited => "it exited without finalizing".to_owned(),
                Liveness::Silent(quiet) => {
                    format!("no heartbeat for {quiet:.1?} (killed or frozen)")
                }
            };
            // Deliver what it wrote before it went.
            self.drain(rank);
            self.kill(rank, why);
            found = true;
        }
        found
    }
}
