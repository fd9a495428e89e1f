//! Dead peers: a connection the module failed marks its rank dead, fails
//! its queued sends and the receives that can only match from it.

use libo2g::{abi, RecvError};

use crate::error::{Error, Result};
use crate::transport::RecvOutcome;

use super::{lib_err, O2g, Peer};

/// Why a receive from any source failed over o2g: the module completes or
/// refuses it once every registered connection has failed.
pub(super) const NO_LIVE_PEER: &str =
    "waiting for a message from any source, but no live peer is left that could send it";

/// Why a connection the module failed broke, as far as the process can
/// tell without TCP's word.
const CONNECTION_BROKE: &str = "the connection closed, was reset or broke the protocol";

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

    /// Marks `rank` dead and fails its queued sends; the reason it is
    /// dead for (the first one given, with what TCP said).
    pub(super) fn kill(&mut self, rank: u32, reason: String) -> String {
        let Some(p) = self.peers.get_mut(rank as usize) else {
            return reason;
        };
        if let Some(why) = &p.dead {
            return why.clone();
        }
        let reason = with_socket_error(reason, p);
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
                self.kill(rank, CONNECTION_BROKE.into());
            }
        }
        Ok(())
    }
}

/// `reason`, with what TCP says broke the peer's connections if it says
/// anything (`SO_ERROR`; the module leaves it to the process): above all
/// a timeout, which only `O2G_PEER_TIMEOUT` explains.
fn with_socket_error(reason: String, p: &Peer) -> String {
    let error = [Some(&p.registered), p.control.as_ref()]
        .into_iter()
        .flatten()
        .find_map(|s| s.take_error().ok().flatten());
    // The module's guesses at a cause give way to TCP's word.
    let guessed = reason == CONNECTION_BROKE || reason == RecvError::ConnectionFailed.to_string();
    let reason = if guessed && error.is_some() {
        "the connection failed".to_owned()
    } else {
        reason
    };
    match error {
        Some(e) if e.raw_os_error() == Some(nix::libc::ETIMEDOUT) => format!(
            "{reason}: the connection timed out (the peer's host was silent longer than \
             O2G_PEER_TIMEOUT)"
        ),
        Some(e) => format!("{reason}: {e}"),
        None => reason,
    }
}
