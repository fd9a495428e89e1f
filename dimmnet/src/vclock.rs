//! The timing model: virtual clocks that the primitives advance by what
//! the card would take ([`Costs`]), so that a program learns what it
//! would do on DIMMnet-1, not only what the emulation does on this host.
//!
//! # Clocks
//!
//! Everything lives in the shared region (the node's model page and its
//! stamps, see `layout`), so every handle and every process of a node
//! shares that node's clocks:
//!
//! - the **host clock**: the node's CPU. Only the node's own operations
//!   advance it: by the host's share of each primitive (stores into the
//!   card, polls, copies), and by [`Nic::spend`] for computation;
//! - the **send engine**: when the node's link is next free (packets leave
//!   one after another);
//! - the **receive engine**, per source: when the node has finished
//!   depositing the last packet of that source (the per-packet interval
//!   of §2.5 throttles a stream);
//! - the **core PU**: when the card's embedded processor is next free;
//! - **stamps**: the arrival time of the last remote write to each 8-byte
//!   LLCM word, of each ACK word, and into the network-facing bank.
//!
//! # Rules
//!
//! A packet issued when the host clock reads `t` leaves at
//! `max(t, send engine) + pkt_gen`, occupies the link for
//! `serialise(payload)`, crosses `wire + switch`, and is in the
//! destination's memory `deposit(payload)` after the later of its arrival
//! and the previous packet of the same source. The destination word's
//! stamp becomes that time; the data itself is written into the region at
//! once, as before.
//!
//! A host that **acts on** what it read (a poll that found its flag,
//! [`Nic::llcm_read`], [`Nic::wait_ack`]) catches up: its clock becomes
//! the later of itself and the words' stamps, plus the loads. A poll that
//! finds nothing charges nothing, so how often the emulation spins on
//! this host never shows in the model: a host waiting in the model
//! waits exactly until the arrival. Arrival carries the sender's clock;
//! this is how one node's time reaches another's.
//!
//! There is no sleeping or spinning to imitate a delay: the model is
//! arithmetic on these words, deterministic for a given program as long as
//! each stream has one writer.
//!
//! # Approximations
//!
//! - A stamp is the time of the *last* write to its word. A host that acts
//!   on a word a later write has already overwritten (in this host's real
//!   time) catches up with the later write; the protocols here rewrite a
//!   word only after an answer, so this does not happen in them.
//! - A poll that finds data sees it even if, in virtual time, it had not
//!   arrived yet; it then takes it at its arrival time. A program that
//!   polls and does something else when nothing is there can therefore
//!   take a branch the card would not have taken at that time.
//! - Streams from different sources do not contend at a receiver, nor
//!   packets of different destinations at the link's far end (one switch
//!   port per node, no congestion); the host's caches are not modelled.
//! - Handles made with [`Nic::unmodelled`] (the heartbeat thread: the
//!   card's own liveness, not the program's traffic) charge nothing.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::costs::{Costs, Ps};
use crate::error::Result;
use crate::nic::Nic;
use crate::rdma::NicAddr;

/// Model-page words (offsets in the node's model page).
const HOST: usize = 0;
const SEND_ENGINE: usize = 8;
const CORE_PU: usize = 16;
const BANK_ARRIVAL: usize = 24;
const WINDOW_FREE: usize = 32;
const STAGING_FREE: usize = 48;
/// The core PU's lock: held while the emulation runs an interrupt handler
/// (not a clock; it lives here because the model page is the card's).
pub(crate) const CORE_PU_LOCK: usize = 56;

/// When a packet left its sender's link and when it is in the
/// destination's memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Flight {
    /// The last byte has left the sender (its buffer may be reused).
    pub(crate) left: Ps,
    /// The packet has reached the destination's card.
    pub(crate) at_card: Ps,
    /// The payload is in the destination's memory.
    pub(crate) landed: Ps,
}

impl Nic {
    /// The costs this handle charges, or `None` for an unmodelled handle.
    pub fn costs(&self) -> Option<&Costs> {
        self.costs.as_ref()
    }

    /// The same handle charging `costs` instead of DIMMnet-1's (tests use
    /// round numbers; every handle of a region should use the same).
    pub fn with_costs(mut self, costs: Costs) -> Self {
        self.costs = Some(costs);
        self
    }

    /// The same handle charging nothing: for work that is the emulator's
    /// and not the program's (a heartbeat).
    pub fn unmodelled(mut self) -> Self {
        self.costs = None;
        self
    }

    fn model_word(&self, node: u32, off: usize) -> Result<&AtomicU64> {
        Ok(self.region.u64_at(self.layout.model_word(node, off))?)
    }

    /// This node's host clock: virtual picoseconds since the region was
    /// made (0 for an unmodelled handle's reads too: the clock is shared,
    /// only charging is per handle).
    ///
    /// # Errors
    ///
    /// Shared-memory access failed.
    pub fn now(&self) -> Result<Ps> {
        Ok(self.model_word(self.node, HOST)?.load(Ordering::Acquire))
    }

    /// Moves this node's host clock forward to `t` (no change if it is
    /// later already): lines up nodes before a timed section.
    ///
    /// # Errors
    ///
    /// Shared-memory access failed.
    pub fn advance_to(&self, t: Ps) -> Result<Ps> {
        let w = self.model_word(self.node, HOST)?;
        Ok(w.fetch_max(t, Ordering::AcqRel).max(t))
    }

    /// Charges `d` of host time (computation between operations) and
    /// returns the new host clock.
    ///
    /// # Errors
    ///
    /// Shared-memory access failed.
    pub fn spend(&self, d: Ps) -> Result<Ps> {
        self.host(|_| d)
    }

    /// Charges the host `cost(costs)`, after first catching up with `at`:
    /// the host clock becomes `max(host, at) + cost`. Returns it.
    pub(crate) fn host_after(&self, at: Ps, cost: impl FnOnce(&Costs) -> Ps) -> Result<Ps> {
        let Some(c) = self.costs else {
            return self.now();
        };
        Ok(occupy(self.model_word(self.node, HOST)?, at, cost(&c)))
    }

    /// Charges the host `cost(costs)`; returns the new host clock.
    pub(crate) fn host(&self, cost: impl FnOnce(&Costs) -> Ps) -> Result<Ps> {
        self.host_after(0, cost)
    }

    /// One packet of `payload` bytes from `from`'s card, ready to leave at
    /// `ready`, to `to`'s memory. Advances `from`'s send engine and `to`'s
    /// receive engine for `from`. `None` for an unmodelled handle.
    pub(crate) fn fly(
        &self,
        from: u32,
        to: u32,
        ready: Ps,
        payload: usize,
    ) -> Result<Option<Flight>> {
        let Some(c) = self.costs else {
            return Ok(None);
        };
        let engine = self.model_word(from, SEND_ENGINE)?;
        let left = occupy(engine, ready, c.pkt_gen + c.serialise(payload));
        let at_card = left + c.wire + c.switch;
        let rx = self.region.u64_at(self.layout.rx_busy(to, from))?;
        Ok(Some(Flight {
            left,
            at_card,
            landed: occupy(rx, at_card, c.deposit(payload)),
        }))
    }

    /// Records that `[off, off + len)` of `node`'s LLCM was written
    /// remotely at `t`. Call before the data is stored, so that a reader
    /// that sees the data sees the stamp.
    pub(crate) fn stamp_llcm(&self, node: u32, off: usize, len: usize, t: Ps) -> Result<()> {
        for stamp in self.stamps(node, off, len) {
            stamp?.fetch_max(t, Ordering::AcqRel);
        }
        Ok(())
    }

    /// The arrival stamps of the LLCM words `[off, off + len)` of `node`
    /// touches (at least one).
    fn stamps(
        &self,
        node: u32,
        off: usize,
        len: usize,
    ) -> impl Iterator<Item = Result<&AtomicU64>> + '_ {
        (off & !7..off + len.max(1))
            .step_by(8)
            .map(move |word| Ok(self.region.u64_at(self.layout.stamp(node, word))?))
    }

    /// Records a DMA write that reached `node`'s network-facing bank at `t`.
    pub(crate) fn stamp_bank(&self, node: u32, t: Ps) -> Result<()> {
        self.model_word(node, BANK_ARRIVAL)?
            .fetch_max(t, Ordering::AcqRel);
        Ok(())
    }

    /// Records that this node's ACK word `slot` was bumped at `t`.
    pub(crate) fn stamp_ack(&self, slot: usize, t: Ps) -> Result<()> {
        self.region
            .u64_at(self.layout.ack_stamp(self.node, slot))?
            .fetch_max(t, Ordering::AcqRel);
        Ok(())
    }

    /// Stamps where a transfer wrote: LLCM words, or the network bank.
    pub(crate) fn stamp_addr(&self, node: u32, at: NicAddr, len: usize, t: Ps) -> Result<()> {
        match at {
            NicAddr::Llcm(off) => self.stamp_llcm(node, off, len, t),
            NicAddr::Dimm(_) => self.stamp_bank(node, t),
        }
    }

    /// The host acted on `[off, off + len)` of its LLCM (a poll that found
    /// its flag, a copy out of a landing slot): its clock catches up with
    /// the words' arrival and pays the uncached loads. Returns the new
    /// host clock. Programs that poll words themselves call this once they
    /// found what they waited for.
    ///
    /// # Errors
    ///
    /// The range leaves the LLCM.
    pub fn observed(&self, off: usize, len: usize) -> Result<Ps> {
        self.llcm_range(self.node, off, len)?;
        if self.costs.is_none() {
            return self.now();
        }
        let mut arrival = 0;
        for stamp in self.stamps(self.node, off, len) {
            arrival = arrival.max(stamp?.load(Ordering::Acquire));
        }
        self.host_after(arrival, |c| c.uc_read(len))
    }

    /// The host found its ACK word `slot` advanced: catch up with the
    /// ACK's arrival and pay one load.
    pub(crate) fn observed_ack(&self, slot: usize) -> Result<Ps> {
        let t = self
            .region
            .u64_at(self.layout.ack_stamp(self.node, slot))?
            .load(Ordering::Acquire);
        self.host_after(t, |c| c.uc_load)
    }

    /// When the last DMA into this node's network-facing bank landed.
    pub(crate) fn bank_arrival(&self) -> Result<Ps> {
        Ok(self
            .model_word(self.node, BANK_ARRIVAL)?
            .load(Ordering::Acquire))
    }

    /// The time BOTF window `w` of this node is free again, and a setter.
    pub(crate) fn window_free(&self, w: usize) -> Result<&AtomicU64> {
        self.model_word(self.node, WINDOW_FREE + 8 * w)
    }

    /// The time the DIMM_Send staging area of this node is free again.
    pub(crate) fn staging_free(&self) -> Result<&AtomicU64> {
        self.model_word(self.node, STAGING_FREE)
    }

    /// The core PU of `node` handles something that reached its card at
    /// `at` and takes `d`: returns when it is done.
    pub(crate) fn core_pu(&self, node: u32, at: Ps, d: Ps) -> Result<Ps> {
        Ok(occupy(self.model_word(node, CORE_PU)?, at, d))
    }
}

/// A resource whose clock is `busy` (a host, an engine, the core PU) takes
/// work that can start at `at` and lasts `d`: it starts at the later of
/// the two, and the clock becomes its end, which is returned. Atomic, as
/// several threads may charge one resource.
fn occupy(busy: &AtomicU64, at: Ps, d: Ps) -> Ps {
    let step = |b: Ps| b.max(at) + d;
    match busy.fetch_update(Ordering::AcqRel, Ordering::Acquire, |b| Some(step(b))) {
        Ok(b) | Err(b) => step(b),
    }
}
