//! Peer liveness: a heartbeat each node sends, and a watch that tells a
//! live peer from one that left or died.
//!
//! The card has no link-level failure detection in this emulation, and a
//! peer that dies leaves its flag words as they were, so waiting for it
//! costs a full [`crate::WaitPolicy`] deadline. A transport that must fail
//! receives from a dead peer promptly uses these two halves:
//!
//! - [`Heartbeat`]: a thread that every `period` stores a growing beat
//!   count by AOTF into word `off + 8 * me` of every peer's LLCM (a table
//!   of one u64 per node that the caller reserves in the application part
//!   of the LLCM). Dropping the heartbeat (a clean exit) stores [`LEFT`]
//!   instead, so peers learn at once that this node is gone. A process
//!   that is killed, or exits without dropping it, simply stops beating.
//! - [`PeerWatch`]: reads those words in the node's own LLCM (loads only,
//!   no system call) and reports a peer as [`Liveness::Left`] when it
//!   stored [`LEFT`], or [`Liveness::Silent`] when its count did not move
//!   for the watch's timeout.
//!
//! Every word carries the job's pgid in its top 16 bits, beat or
//! [`LEFT`] in the low 48: a straggler of an earlier job on the same
//! region cannot make a node look alive, or gone, to the next job.
//!
//! The beat runs on its own thread, so a peer that computes for a long
//! time outside any communication call still counts as alive.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::nic::Nic;

/// The count (low 48 bits of a heartbeat word) a node stores when it
/// leaves cleanly.
pub const LEFT: u64 = (1 << 48) - 1;

fn word(pgid: u16, count: u64) -> u64 {
    u64::from(pgid) << 48 | (count & LEFT)
}

/// What a [`PeerWatch`] knows about one peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Liveness {
    /// Its heartbeat moved within the timeout.
    Alive,
    /// It stored [`LEFT`]: it dropped its heartbeat (left cleanly).
    Left,
    /// Its heartbeat has not moved for this long (at least the timeout).
    Silent(Duration),
}

fn check_table(nic: &Nic, off: usize) -> Result<()> {
    if off % 8 != 0 {
        return Err(Error::BadArgument(format!(
            "heartbeat table at LLCM offset {off:#x} is not 8-aligned"
        )));
    }
    nic.llcm_range(nic.node(), off, 8 * nic.nodes() as usize)
        .map(drop)
}

/// This node's heartbeat thread; see the module documentation.
#[derive(Debug)]
pub struct Heartbeat {
    nic: Nic,
    off: usize,
    pgid: u16,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Heartbeat {
    /// Starts beating into the table at LLCM offset `off` of every other
    /// node, every `period`, for process group `pgid`. Seeds the headers
    /// it needs.
    ///
    /// # Errors
    ///
    /// The table (8 bytes per node at `off`) is misaligned or leaves the
    /// LLCM, or seeding failed.
    pub fn start(nic: Nic, off: usize, period: Duration, pgid: u16) -> Result<Self> {
        check_table(&nic, off)?;
        nic.seed_all()?;
        let stop = Arc::new(AtomicBool::new(false));
        // The card's liveness is the emulator's, not the program's traffic:
        // it must not advance the timing model at random moments.
        let nic = nic.unmodelled();
        let beat_nic = nic.clone();
        let beat_stop = Arc::clone(&stop);
        let me = nic.node();
        let thread = std::thread::Builder::new()
            .name("dimmnet-heartbeat".into())
            .spawn(move || {
                let mut beat: u64 = 1;
                while !beat_stop.load(Ordering::Acquire) {
                    for p in (0..beat_nic.nodes()).filter(|&p| p != me) {
                        // A failure here (bad seed) would show as silence.
                        let _ = beat_nic.aotf_u64(p, off + 8 * me as usize, word(pgid, beat));
                    }
                    beat = (beat + 1) % LEFT;
                    std::thread::park_timeout(period);
                }
            })
            .map_err(|e| Error::BadArgument(format!("cannot start the heartbeat thread: {e}")))?;
        Ok(Self {
            nic,
            off,
            pgid,
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
        let me = self.nic.node();
        for p in (0..self.nic.nodes()).filter(|&p| p != me) {
            let _ = self
                .nic
                .aotf_u64(p, self.off + 8 * me as usize, word(self.pgid, LEFT));
        }
    }
}

/// Watches the heartbeats other nodes store into this node's table.
#[derive(Debug)]
pub struct PeerWatch {
    nic: Nic,
    off: usize,
    pgid: u16,
    timeout: Duration,
    /// Per node: the last beat seen and when it was first seen.
    last: Vec<(u64, Instant)>,
}

impl PeerWatch {
    /// A watch over the table at LLCM offset `off` that calls a peer
    /// silent after `timeout` without a new beat of process group `pgid`
    /// (words of other groups count as no beat). Every peer starts as
    /// just seen, so one that never beats is silent `timeout` from now.
    ///
    /// # Errors
    ///
    /// The table is misaligned or leaves the LLCM.
    pub fn new(nic: Nic, off: usize, timeout: Duration, pgid: u16) -> Result<Self> {
        check_table(&nic, off)?;
        let now = Instant::now();
        let last = (0..nic.nodes()).map(|_| (0, now)).collect();
        Ok(Self {
            nic,
            off,
            pgid,
            timeout,
            last,
        })
    }

    /// What is known about `peer` at `now`.
    ///
    /// # Errors
    ///
    /// `peer` does not exist.
    pub fn status(&mut self, peer: u32, now: Instant) -> Result<Liveness> {
        self.nic.check_node(peer)?;
        let beat = self
            .nic
            .llcm_u64(self.off + 8 * peer as usize)?
            .load(Ordering::Acquire);
        if beat >> 48 != u64::from(self.pgid) {
            // Nothing of this job yet (or a stale word): no news.
            let quiet = now.saturating_duration_since(self.last[peer as usize].1);
            return Ok(if quiet >= self.timeout {
                Liveness::Silent(quiet)
            } else {
                Liveness::Alive
            });
        }
        if beat & LEFT == LEFT {
            return Ok(Liveness::Left);
        }
        let (seen, since) = &mut self.last[peer as usize];
        if beat != *seen {
            *seen = beat;
            *since = now;
            return Ok(Liveness::Alive);
        }
        let quiet = now.saturating_duration_since(*since);
        Ok(if quiet >= self.timeout {
            Liveness::Silent(quiet)
        } else {
            Liveness::Alive
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::LLCM_USER;
    use crate::test_util::fabric;

    #[test]
    fn beating_leaving_and_silence() {
        let (_r, nics) = fabric(3);
        let mut watch =
            PeerWatch::new(nics[0].clone(), LLCM_USER, Duration::from_secs(3600), 7).unwrap();
        // A heartbeat of another job leaving does not count.
        drop(Heartbeat::start(nics[2].clone(), LLCM_USER, Duration::from_millis(1), 8).unwrap());
        let hb = Heartbeat::start(nics[1].clone(), LLCM_USER, Duration::from_millis(1), 7).unwrap();
        // Node 1's beat arrives; node 2 never beats but the timeout is far.
        let t0 = Instant::now();
        while watch.status(1, Instant::now()).unwrap() != Liveness::Alive
            || nics[0]
                .llcm_u64(LLCM_USER + 8)
                .unwrap()
                .load(Ordering::Acquire)
                == 0
        {
            assert!(t0.elapsed() < Duration::from_secs(10), "no beat");
            std::thread::yield_now();
        }
        assert_eq!(watch.status(2, Instant::now()).unwrap(), Liveness::Alive);
        // Far in the future, node 2 has been silent; node 1 too unless a
        // new beat came, so only node 2 is checked.
        let later = Instant::now() + Duration::from_secs(7200);
        assert!(matches!(
            watch.status(2, later).unwrap(),
            Liveness::Silent(d) if d >= Duration::from_secs(3600)
        ));
        drop(hb);
        assert_eq!(watch.status(1, Instant::now()).unwrap(), Liveness::Left);
        assert!(watch.status(3, Instant::now()).is_err());
    }

    #[test]
    fn tables_outside_the_llcm_are_refused() {
        let (_r, nics) = fabric(2);
        let llcm = crate::layout::LLCM_SIZE;
        assert!(PeerWatch::new(nics[0].clone(), llcm - 8, Duration::ZERO, 1).is_err());
        assert!(PeerWatch::new(nics[0].clone(), LLCM_USER + 4, Duration::ZERO, 1).is_err());
        assert!(Heartbeat::start(nics[0].clone(), llcm, Duration::ZERO, 1).is_err());
    }
}
