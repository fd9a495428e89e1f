//! The Fagus barrier: SYNC_ENTRY / SYNC_PERMIT over AOTF only.
//!
//! Node 0 is the parent. Every other node announces its arrival at
//! barrier epoch `e` with one 4-byte AOTF of `e` into its SYNC_ENTRY word
//! in node 0's LLCM, then waits for its own SYNC_PERMIT word to read `e`.
//! Node 0 waits until every SYNC_ENTRY word reads `e`, then sends `e` to
//! every SYNC_PERMIT word, again by AOTF. No word is ever reset: epochs only
//! grow, so a node that is one barrier ahead cannot be mistaken for one
//! that has arrived at the current barrier (it cannot get ahead anyway: it
//! needs the permit of the current epoch first).
//!
//! One barrier instance per node; all nodes of the region take part.
//! [`Barrier::wait`] blocks; [`Barrier::enter`] and [`Barrier::test`] are
//! its halves that never wait, for a caller that must keep other work
//! (receiving) going while it waits for the barrier.

use std::sync::atomic::Ordering;

use crate::error::Result;
use crate::layout::{LLCM_SYNC_ENTRY, LLCM_SYNC_PERMIT};
use crate::nic::Nic;

/// One node's side of the AOTF barrier.
#[derive(Debug)]
pub struct Barrier {
    nic: Nic,
    epoch: u32,
    /// Node 0: the next SYNC_ENTRY to look at during the current barrier.
    next: u32,
    /// Entered the barrier of epoch `epoch + 1`, not left it yet.
    entered: bool,
}

impl Barrier {
    /// The barrier of `nic`'s node; seeds the headers it needs (node 0 to
    /// every node, every node to node 0).
    ///
    /// # Errors
    ///
    /// Seeding failed.
    pub fn new(nic: Nic) -> Result<Self> {
        if nic.node() == 0 {
            nic.seed_all()?;
        } else {
            nic.seed_header(0)?;
        }
        Ok(Self {
            nic,
            epoch: 0,
            next: 1,
            entered: false,
        })
    }

    /// Barriers completed by this node.
    pub fn epoch(&self) -> u32 {
        self.epoch
    }

    /// Waits until every node has entered this barrier: [`Barrier::enter`]
    /// then [`Barrier::test`] until it succeeds, with the NIC's
    /// [`crate::WaitPolicy`].
    ///
    /// # Errors
    ///
    /// [`crate::Error::Timeout`] naming the nodes that did not arrive
    /// (node 0) or the missing permit (others).
    pub fn wait(&mut self) -> Result<()> {
        self.enter()?;
        let e = self.epoch.wrapping_add(1);
        let policy = self.nic.wait;
        let what = |nic: &Nic| {
            if nic.node() == 0 {
                let n = nic.nodes();
                let missing: Vec<u32> = (1..n)
                    .filter(|&r| {
                        nic.llcm_u32(LLCM_SYNC_ENTRY + 8 * r as usize)
                            .map_or(true, |w| w.load(Ordering::Relaxed) != e)
                    })
                    .collect();
                format!("SYNC_ENTRY of barrier {e} from nodes {missing:?}")
            } else {
                format!(
                    "SYNC_PERMIT of barrier {e} from node 0 at node {}",
                    nic.node()
                )
            }
        };
        let nic = self.nic.clone();
        policy.wait(|| what(&nic), || Ok(self.test()?.then_some(())))
    }

    /// Enters the next barrier without waiting: a node other than 0 sends
    /// its SYNC_ENTRY. Idempotent until the barrier completes.
    ///
    /// # Errors
    ///
    /// The AOTF failed.
    pub fn enter(&mut self) -> Result<()> {
        if self.entered {
            return Ok(());
        }
        let e = self.epoch.wrapping_add(1);
        if self.nic.node() != 0 {
            self.nic
                .aotf_u32(0, LLCM_SYNC_ENTRY + 8 * self.nic.node() as usize, e)?;
        }
        self.next = 1;
        self.entered = true;
        Ok(())
    }

    /// Whether the barrier entered with [`Barrier::enter`] has completed,
    /// without waiting. Node 0 sends the SYNC_PERMITs once every
    /// SYNC_ENTRY is there. `false` if no barrier was entered.
    ///
    /// # Errors
    ///
    /// Shared-memory access or an AOTF failed.
    pub fn test(&mut self) -> Result<bool> {
        if !self.entered {
            return Ok(false);
        }
        let e = self.epoch.wrapping_add(1);
        let nic = &self.nic;
        let n = nic.nodes();
        if nic.node() == 0 {
            while self.next < n {
                let w = nic.llcm_u32(LLCM_SYNC_ENTRY + 8 * self.next as usize)?;
                if w.load(Ordering::Acquire) != e {
                    return Ok(false);
                }
                nic.observed(LLCM_SYNC_ENTRY + 8 * self.next as usize, 4)?;
                self.next += 1;
            }
            for r in 1..n {
                nic.aotf_u32(r, LLCM_SYNC_PERMIT, e)?;
            }
        } else if nic.llcm_u32(LLCM_SYNC_PERMIT)?.load(Ordering::Acquire) != e {
            return Ok(false);
        } else {
            nic.observed(LLCM_SYNC_PERMIT, 4)?;
        }
        self.epoch = e;
        self.entered = false;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::fabric;

    #[test]
    fn entering_and_testing_from_one_thread() {
        let (_r, nics) = fabric(3);
        let mut bs: Vec<Barrier> = nics.into_iter().map(|n| Barrier::new(n).unwrap()).collect();
        for round in 1..=3u32 {
            assert!(!bs[0].test().unwrap(), "not entered yet");
            bs[0].enter().unwrap();
            bs[1].enter().unwrap();
            // Node 2 is missing: nobody gets through.
            for b in &mut bs[..2] {
                assert!(!b.test().unwrap());
            }
            bs[2].enter().unwrap();
            bs[2].enter().unwrap();
            assert!(!bs[1].test().unwrap(), "node 0 has not permitted yet");
            assert!(bs[0].test().unwrap());
            assert!(bs[1].test().unwrap() && bs[2].test().unwrap());
            assert!(bs.iter().all(|b| b.epoch() == round));
        }
    }
}
