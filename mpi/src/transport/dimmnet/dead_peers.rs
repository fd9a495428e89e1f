//! Telling live peers from dead ones.
//!
//! Every rank runs a heartbeat thread ([`o2g_dimmnet::Heartbeat`]) that
//! stores a growing count into each peer's LLCM every
//! [`HEARTBEAT_PERIOD`]; a rank that leaves cleanly (drops the transport)
//! stores "left" instead. A rank that was killed, or exited without
//! finalizing, stops beating, and its peers declare it dead after
//! `O2G_DIMMNET_PEER_TIMEOUT` seconds (5 by default) without a beat
//! ([`o2g_dimmnet::PeerWatch`]). Before a peer is declared dead, whatever
//! it already delivered is taken. A dead peer fails receives that depend
//! on it (through [`Transport::peer_failure`]), queued and new sends to
//! it, and the crate's protocol errors (`Corrupt`, `ForeignPeer`, a
//! `Timeout` in a bank switch) mark the peer dead with that reason.
//! Liveness is checked whenever a wait backs off, and every
//! [`WATCH_EVERY`] rounds otherwise.
//!
//! [`Transport::peer_failure`]: crate::transport::Transport::peer_failure

use std::time::{Duration, Instant};

use o2g_dimmnet::Liveness;

use super::Dimmnet;

/// How often a rank's heartbeat thread beats.
pub(super) const HEARTBEAT_PERIOD: Duration = Duration::from_millis(20);
/// Liveness is checked at least every this many busy progress rounds.
pub(super) const WATCH_EVERY: u32 = 1024;

impl Dimmnet {
    /// Declares dead the peers whose heartbeat stopped or who left, after
    /// taking what they delivered; whether any was.
    pub(super) fn watch(&mut self) -> bool {
        let now = Instant::now();
        let mut changed = false;
        for p in 0..self.peers.len() as u32 {
            if p == self.me || self.peers[p as usize].dead.is_some() {
                continue;
            }
            let Some(net) = self.net.as_mut() else {
                return false;
            };
            let reason = match net.watch.status(p, now) {
                Ok(Liveness::Alive) => continue,
                Ok(Liveness::Left) => "left MPI (its transport was closed)".to_owned(),
                Ok(Liveness::Silent(d)) => format!(
                    "no heartbeat for {:.1} s (the process died or exited without finalizing)",
                    d.as_secs_f64()
                ),
                Err(e) => format!("DIMMnet: {e}"),
            };
            // What it delivered before it went is still good.
            while self.receive_from(p) {}
            self.drain_overflow();
            self.kill(p, reason);
            changed = true;
        }
        changed
    }

    /// How many peers are still alive.
    pub(super) fn live_peers(&self) -> usize {
        (0..self.peers.len() as u32)
            .filter(|&p| p != self.me && self.peers[p as usize].dead.is_none())
            .count()
    }
}
