//! A barrier with no parent: every node tells every other node by AOTF
//! that it has arrived, then waits for all of theirs.
//!
//! Fagus's evaluation (Table 2 ①) compares its SYNC_ENTRY/SYNC_PERMIT
//! barrier ([`crate::Barrier`]) with `_expBarrier`, a barrier of the
//! DIMMnet library's extended API that takes 4.09 us against 29.80 us.
//! The paper does not describe `_expBarrier`'s algorithm. This is the
//! baseline we put in its place: the fastest AOTF-only barrier for a few
//! nodes, one network leg instead of two, at the price of N-1 AOTFs per
//! node instead of one.
//!
//! Node `r` entering barrier epoch `e` writes `e` into its word of `e`'s
//! parity in every other node's all-to-all area (4-byte AOTFs), then waits
//! until each of its own words of that parity reads `e`. A node that has
//! left barrier `e` may already have entered `e + 1`, but that goes to the
//! other word; it cannot be further ahead, because barrier `e + 1` needs
//! this node's arrival. Two words per node also keep the timing model
//! exact: the word a node observes was last written for this epoch, so it
//! catches up with that arrival and not with a later one.

use std::sync::atomic::Ordering;

use crate::error::Result;
use crate::layout::{LLCM_ALL_ARRIVED, MAX_NODES};
use crate::nic::Nic;

/// One node's side of the all-to-all AOTF barrier.
#[derive(Debug)]
pub struct AllToAllBarrier {
    nic: Nic,
    epoch: u32,
}

impl AllToAllBarrier {
    /// The barrier of `nic`'s node; seeds the headers to every node.
    ///
    /// # Errors
    ///
    /// Seeding failed.
    pub fn new(nic: Nic) -> Result<Self> {
        nic.seed_all()?;
        Ok(Self { nic, epoch: 0 })
    }

    /// Barriers completed by this node.
    pub fn epoch(&self) -> u32 {
        self.epoch
    }

    /// Waits until every node has arrived, with the NIC's
    /// [`crate::WaitPolicy`].
    ///
    /// # Errors
    ///
    /// An AOTF failed, or [`crate::Error::Timeout`] naming the nodes that
    /// did not arrive.
    pub fn wait(&mut self) -> Result<()> {
        let nic = &self.nic;
        let (me, n) = (nic.node(), nic.nodes());
        let e = self.epoch.wrapping_add(1);
        for r in (0..n).filter(|&r| r != me) {
            nic.aotf_u32(r, word(me, e), e)?;
        }
        let arrived =
            |r: u32| -> Result<bool> { Ok(nic.llcm_u32(word(r, e))?.load(Ordering::Acquire) == e) };
        let mut next = 0;
        nic.wait.wait(
            || {
                let missing: Vec<u32> = (0..n)
                    .filter(|&r| r != me && !arrived(r).unwrap_or(false))
                    .collect();
                format!("all-to-all barrier {e} at node {me}: nodes {missing:?} missing")
            },
            || {
                while next < n {
                    if next != me {
                        if !arrived(next)? {
                            return Ok(None);
                        }
                        nic.observed(word(next, e), 4)?;
                    }
                    next += 1;
                }
                Ok(Some(()))
            },
        )?;
        self.epoch = e;
        Ok(())
    }
}

/// The word `node` writes for epoch `e`: one 8-byte word per node and
/// parity, so no other write shares its arrival stamp.
fn word(node: u32, e: u32) -> usize {
    LLCM_ALL_ARRIVED + 8 * (node + (e & 1) * MAX_NODES) as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::fabric;

    #[test]
    fn nodes_meet_many_times_and_none_runs_ahead() {
        let (_r, nics) = fabric(3);
        let passed = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
        let threads: Vec<_> = nics
            .into_iter()
            .map(|nic| {
                let passed = passed.clone();
                std::thread::spawn(move || {
                    let mut b = AllToAllBarrier::new(nic).unwrap();
                    for round in 1..=200u32 {
                        passed.fetch_add(1, Ordering::SeqCst);
                        b.wait().unwrap();
                        // Everyone has arrived at this round: 3 per round.
                        assert!(passed.load(Ordering::SeqCst) >= 3 * round);
                        assert_eq!(b.epoch(), round);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    }
}
