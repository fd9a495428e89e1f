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

use std::sync::atomic::Ordering;

use crate::error::Result;
use crate::layout::{LLCM_SYNC_ENTRY, LLCM_SYNC_PERMIT};
use crate::nic::Nic;

/// One node's side of the AOTF barrier.
#[derive(Debug)]
pub struct Barrier {
    nic: Nic,
    epoch: u32,
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
        Ok(Self { nic, epoch: 0 })
    }

    /// Barriers completed by this node.
    pub fn epoch(&self) -> u32 {
        self.epoch
    }

    /// Waits until every node has entered this barrier.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Timeout`] naming the nodes that did not arrive
    /// (node 0) or the missing permit (others).
    pub fn wait(&mut self) -> Result<()> {
        let e = self.epoch.wrapping_add(1);
        let nic = &self.nic;
        let n = nic.nodes();
        if nic.node() == 0 {
            let entries = (1..n)
                .map(|r| nic.llcm_u32(LLCM_SYNC_ENTRY + 4 * r as usize))
                .collect::<Result<Vec<_>>>()?;
            let mut next = 0;
            nic.wait.wait(
                || {
                    let missing: Vec<u32> = (1..n)
                        .filter(|&r| entries[r as usize - 1].load(Ordering::Relaxed) != e)
                        .collect();
                    format!("SYNC_ENTRY of barrier {e} from nodes {missing:?}")
                },
                || {
                    while next < entries.len() && entries[next].load(Ordering::Acquire) == e {
                        next += 1;
                    }
                    Ok((next == entries.len()).then_some(()))
                },
            )?;
            for r in 1..n {
                nic.aotf_u32(r, LLCM_SYNC_PERMIT, e)?;
            }
        } else {
            nic.aotf_u32(0, LLCM_SYNC_ENTRY + 4 * nic.node() as usize, e)?;
            let permit = nic.llcm_u32(LLCM_SYNC_PERMIT)?;
            nic.wait.wait(
                || {
                    format!(
                        "SYNC_PERMIT of barrier {e} from node 0 at node {}",
                        nic.node()
                    )
                },
                || Ok((permit.load(Ordering::Acquire) == e).then_some(())),
            )?;
        }
        self.epoch = e;
        Ok(())
    }
}
