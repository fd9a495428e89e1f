//! The two SO-DIMM banks and the bank switch.
//!
//! On DIMMnet-1 an SO-DIMM bank is wired either to the host's memory bus or
//! to the NIC's network side, never to both. At any time one bank faces the
//! host (plain loads and stores through [`Nic::dimm_read`] and
//! [`Nic::dimm_write`]) and the other faces the network (PUSH and PULL read
//! and write it). A bank switch swaps them.
//!
//! The bank-select word of each node (in its status page) is the arbiter:
//!
//! ```text
//! bits  0..32  DMA transfers in flight on the network-facing bank
//! bit   32     which physical bank faces the host (0 or 1)
//! bit   33     a switch is pending: no new transfer may start
//! ```
//!
//! A transfer (issued by any node's thread) increments the count with a
//! compare-and-swap unless a switch is pending, copies, and decrements. A
//! switch sets the pending bit, waits for the count to drain, and flips
//! the bank bit; the timing model charges the host the switch, after the
//! last DMA into the bank has landed in virtual time (nothing is spent in
//! real time). A node that dies in the
//! middle of a transfer leaves the count raised; the next switch then times
//! out instead of waiting forever.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, Result};
use crate::nic::Nic;

const COUNT_MASK: u64 = 0xffff_ffff;
const HOST_BANK: u64 = 1 << 32;
const PENDING: u64 = 1 << 33;
const KNOWN: u64 = COUNT_MASK | HOST_BANK | PENDING;

/// A transfer's hold on the network-facing bank of one node; released on
/// drop.
#[derive(Debug)]
pub(crate) struct DmaHold<'a> {
    word: &'a AtomicU64,
    /// The physical bank that faced the network when the hold was taken.
    pub(crate) bank: u32,
}

impl Drop for DmaHold<'_> {
    fn drop(&mut self) {
        self.word.fetch_sub(1, Ordering::Release);
    }
}

impl Nic {
    fn bank_word_of(&self, node: u32) -> Result<&AtomicU64> {
        self.check_node(node)?;
        Ok(self.region.u64_at(self.layout.bank_word(node))?)
    }

    /// The physical bank (0 or 1) that faces this node's host now.
    ///
    /// # Errors
    ///
    /// The bank-select word holds bits the model does not define.
    pub fn host_bank(&self) -> Result<u32> {
        let v = self.bank_word_of(self.node)?.load(Ordering::Acquire);
        decode(self.node, v).map(|(bank, _, _)| bank)
    }

    /// Swaps the banks of this node: the bank that faced the network (and
    /// holds what PUSHes delivered) now faces the host. Waits for transfers
    /// in flight; the model charges [`crate::Costs::bank_switch`].
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`] if a transfer never finishes (its issuer died) or
    /// another switch of this node never completes.
    pub fn switch_banks(&self) -> Result<()> {
        let word = self.bank_word_of(self.node)?;
        // Claim the switch.
        self.wait.wait(
            || format!("node {}'s earlier bank switch to finish", self.node),
            || {
                let v = word.load(Ordering::Acquire);
                decode(self.node, v)?;
                if v & PENDING != 0 {
                    return Ok(None);
                }
                let claimed = word
                    .compare_exchange(v, v | PENDING, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok();
                Ok(claimed.then_some(()))
            },
        )?;
        // Drain the transfers that started before the claim.
        let drained = self.wait.wait(
            || {
                format!(
                    "{} DMA transfer(s) into node {}'s network bank to finish",
                    word.load(Ordering::Relaxed) & COUNT_MASK,
                    self.node
                )
            },
            || Ok((word.load(Ordering::Acquire) & COUNT_MASK == 0).then_some(())),
        );
        if let Err(e) = drained {
            word.fetch_and(!PENDING, Ordering::Release);
            return Err(e);
        }
        // The model: the switch waits for DMA that lands after the host's
        // clock (the drain above, in virtual time), then costs the host.
        let landed = self.bank_arrival()?;
        self.host_after(landed, |c| c.bank_switch)?;
        // Only this switch may change the word now: the count is zero and
        // no transfer starts while PENDING is set.
        let v = word.load(Ordering::Acquire);
        word.store((v ^ HOST_BANK) & HOST_BANK, Ordering::Release);
        Ok(())
    }

    /// Takes a transfer hold on `node`'s network-facing bank, or `None` if
    /// a switch is pending there (the caller backs off and retries).
    pub(crate) fn try_dma_hold(&self, node: u32) -> Result<Option<DmaHold<'_>>> {
        let word = self.bank_word_of(node)?;
        let mut v = word.load(Ordering::Acquire);
        loop {
            let (host, pending, count) = decode(node, v)?;
            if pending {
                return Ok(None);
            }
            if count == COUNT_MASK {
                return Err(Error::Corrupt {
                    node,
                    field: "bank-select DMA count",
                    value: v,
                });
            }
            match word.compare_exchange_weak(v, v + 1, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => {
                    return Ok(Some(DmaHold {
                        word,
                        bank: host ^ 1,
                    }))
                }
                Err(now) => v = now,
            }
        }
    }
}

/// Splits a bank-select word into (host bank, pending, count), refusing
/// undefined bits.
fn decode(node: u32, v: u64) -> Result<(u32, bool, u64)> {
    if v & !KNOWN != 0 {
        return Err(Error::Corrupt {
            node,
            field: "bank-select word",
            value: v,
        });
    }
    Ok((
        u32::from(v & HOST_BANK != 0),
        v & PENDING != 0,
        v & COUNT_MASK,
    ))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::test_util::fabric;
    use crate::wait::WaitPolicy;

    #[test]
    fn a_switch_swaps_what_the_host_sees() {
        let (_r, nics) = fabric(1);
        let n = &nics[0];
        assert_eq!(n.host_bank().unwrap(), 0);
        n.dimm_write(0, b"bank zero").unwrap();
        n.switch_banks().unwrap();
        assert_eq!(n.host_bank().unwrap(), 1);
        let mut b = [0u8; 9];
        n.dimm_read(0, &mut b).unwrap();
        assert_eq!(&b, &[0; 9]);
        n.switch_banks().unwrap();
        n.dimm_read(0, &mut b).unwrap();
        assert_eq!(&b, b"bank zero");
    }

    #[test]
    fn a_transfer_in_flight_holds_the_switch_and_a_dead_one_times_out() {
        let (_r, nics) = fabric(2);
        let n0 = nics[0]
            .clone()
            .with_wait(WaitPolicy::with_deadline(Duration::from_millis(50)));
        let hold = nics[1].try_dma_hold(0).unwrap().unwrap();
        assert_eq!(hold.bank, 1);
        // The issuer "dies" holding the bank.
        std::mem::forget(hold);
        let e = n0.switch_banks().unwrap_err();
        assert!(e.is_timeout() && e.to_string().contains("DMA"), "{e}");
        // The failed switch does not leave the bank blocked for transfers.
        assert!(nics[1].try_dma_hold(0).unwrap().is_some());
    }

    #[test]
    fn garbage_in_the_bank_word_is_refused() {
        let (r, nics) = fabric(1);
        r.u64_at(nics[0].layout().bank_word(0))
            .unwrap()
            .store(1 << 40, Ordering::Release);
        assert!(matches!(nics[0].host_bank(), Err(Error::Corrupt { .. })));
        assert!(matches!(nics[0].switch_banks(), Err(Error::Corrupt { .. })));
    }
}
