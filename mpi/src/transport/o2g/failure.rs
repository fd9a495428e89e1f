//! Dead peers: a connection the module failed marks its rank dead, fails
//! its queued sends and the receives that can only match from it.

use libo2g::abi;

use crate::error::{Error, Result};
use crate::transport::bootstrap::socket_error_in_words;
use crate::transport::RecvOutcome;

use super::{lib_err, O2g, Peer};

/// Why a receive from any source failed over o2g: the module completes or
/// refuses it once every registered connection has failed.
pub(super) const NO_LIVE_PEER: &str =
    "waiting for a message from any source, but no live peer is left that could send it";

/// Why a connection the module failed broke, as far as the process can
/// tell without TCP's word: the module does not say which.
const UNEXPLAINED: &str = "it closed, was reset or broke the protocol";

impl O2g {
    pub(super) fn peer(&mut self, dest: u32) -> Result<&mut Peer> {
        let size = self.peers.len() as i32;
        // Not `ok_or`: that builds and drops an `Error` on every send.
        let Some(p) = self.peers.get_mut(dest as usize) else {
            return Err(Error::InvalidRank {
                rank: dest as i32,
                size,
            });
        };
        match &p.dead {
            Some(reason) => Err(Error::PeerGone {
                rank: dest,
                reason: reason.clone(),
            }),
            None => Ok(p),
        }
    }

    /// Marks `rank` dead for a failure the module reported without its
    /// cause (`what` failed): TCP's cause (`SO_ERROR`) if it has one, else
    /// the module's possibilities. The reason it is dead for.
    pub(super) fn kill_unexplained(&mut self, rank: u32, what: &str) -> String {
        let cause = match self.peers.get(rank as usize) {
            Some(p) if p.dead.is_none() => socket_error(p),
            _ => None,
        };
        let cause = cause.map_or_else(|| UNEXPLAINED.to_owned(), |e| socket_error_in_words(&e));
        self.kill(rank, format!("{what}: {cause}"))
    }

    /// Marks `rank` dead because writing to it failed with `e`.
    pub(super) fn kill_on_write(&mut self, rank: u32, e: &std::io::Error) -> String {
        self.kill(rank, format!("write failed: {}", socket_error_in_words(e)))
    }

    /// Marks `rank` dead and fails its queued sends; the reason it is
    /// dead for (the first one given).
    pub(super) fn kill(&mut self, rank: u32, reason: String) -> String {
        let Some(p) = self.peers.get_mut(rank as usize) else {
            return reason;
        };
        if let Some(why) = &p.dead {
            return why.clone();
        }
        p.outbox.fail_all(&mut self.sends, &reason);
        p.dead = Some(reason.clone());
        // As the module does for posted receives: those naming exactly
        // this rank can never match now.
        for w in self.held.unwait_from(rank) {
            self.settle(
                w.token,
                RecvOutcome::Failed {
                    rank,
                    reason: reason.clone(),
                },
            );
        }
        reason
    }

    /// Learns of connections the module failed that no completion reported
    /// (a peer that left while nothing was posted for it).
    pub(super) fn check_failures(&mut self) -> Result<()> {
        let failed = self
            .ep
            .stats()
            .map_err(|e| lib_err("endpoint counters", e))?
            .failed_sockets;
        if failed == self.failures_seen {
            return Ok(());
        }
        self.failures_seen = failed;
        for rank in 0..self.peers.len() as u32 {
            if self.peers[rank as usize].dead.is_some() {
                continue;
            }
            let st = self
                .ep
                .socket_stats(rank)
                .map_err(|e| lib_err("socket counters", e))?;
            if st.state == abi::socket_state::FAILED {
                self.kill_unexplained(rank, "the connection failed");
            }
        }
        Ok(())
    }
}

/// What TCP says broke the peer's connections (`SO_ERROR`, which the
/// module leaves to the process), if it says anything.
fn socket_error(p: &Peer) -> Option<std::io::Error> {
    [Some(&p.registered), p.writer.as_ref()]
        .into_iter()
        .flatten()
        .chain(p.controls())
        .find_map(|s| s.take_error().ok().flatten())
}
