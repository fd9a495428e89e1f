//! PB and EXT: the board's FIFO of 32-bit task ids, 255 deep, one per
//! node.
//!
//! # Memory map (at the node's FIFO offset)
//!
//! ```text
//! 0  tail u64 (ids ever pushed) | 8 head u64 (ids ever taken)
//! 16 events u32 (doorbell for EXT) | 20 EXT sleepers u32
//! 24 space u32 (doorbell for PB)   | 28 PB sleepers u32
//! 32 255 slots, u64 each: sequence number (high half) | task id (low half)
//! ```
//!
//! On the board the FIFO is hardware: a PB is one store to a register that
//! the board turns into a packet and the receiving board queues; an EXT is
//! one load. Here any node may push into any FIFO concurrently, so the
//! queue is a bounded multi-producer queue in the manner of Vyukov's: slot
//! `i` carries a sequence number saying whose turn it is. A producer claims
//! position `t` by advancing `tail` from `t` with a compare-and-swap once
//! slot `t % 255` says "free for lap t", then publishes id and sequence
//! `t + 1` in one 64-bit store. The consumer takes position `h` when the
//! slot says `h + 1`, and frees it for `h + 255`. The 64-bit store of
//! (sequence, id) is what keeps a 32-bit id and its "full" bit together,
//! as the board's FIFO entry would.
//!
//! A full FIFO never loses an id: [`Overflow::Wait`] makes the PB wait
//! (bounded) for the consumer to free a slot, [`Overflow::Error`] returns
//! [`Error::FifoFull`]. A producer that died between claiming and
//! publishing a slot leaves EXT waiting on it, which ends in
//! [`Error::Timeout`].
//!
//! The timing model (clock.rs) rides on the same steps: the producer that
//! has claimed a slot charges the PB and writes the id's arrival time into
//! the slot's stamp before it publishes the slot (release), and the
//! consumer that sees the slot (acquire) and takes it reads the stamp and
//! charges the EXT. A stamp has one writer at a time, the slot's owner.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use o2g_nicmem::Region;

use crate::board::Node;
use crate::clock::{ExtModel, PbModel};
use crate::error::{Error, Result};
use crate::layout::FIFO_DEPTH;
use crate::wait::{self, Doorbell};

const TAIL: usize = 0;
const HEAD: usize = 8;
const EVENTS: usize = 16;
const EXT_SLEEPERS: usize = 20;
const SPACE: usize = 24;
const PB_SLEEPERS: usize = 28;
const SLOTS: usize = 32;

/// What a PB does when the target FIFO is full.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Overflow {
    /// Wait for a free slot, bounded by the sender's wait policy.
    #[default]
    Wait,
    /// Fail at once with [`Error::FifoFull`].
    Error,
}

/// Writes an empty FIFO at `base`.
pub(crate) fn init(region: &Region, base: usize) -> Result<()> {
    region.fill(base, SLOTS, 0)?;
    for i in 0..FIFO_DEPTH {
        region
            .u64_at(base + SLOTS + 8 * i)?
            .store((i as u64) << 32, Ordering::Relaxed);
    }
    Ok(())
}

/// One node's FIFO in the shared region, and its slots' stamps.
struct Fifo<'a> {
    region: &'a Region,
    base: usize,
    stamps: usize,
}

/// Retries of a contended push or pop before the state is called corrupt.
const MAX_RETRIES: u32 = 1 << 24;

impl<'a> Fifo<'a> {
    fn u64(&self, off: usize) -> Result<&'a AtomicU64> {
        Ok(self.region.u64_at(self.base + off)?)
    }

    fn u32(&self, off: usize) -> Result<&'a AtomicU32> {
        Ok(self.region.u32_at(self.base + off)?)
    }

    fn slot(&self, pos: u64) -> Result<&'a AtomicU64> {
        self.u64(SLOTS + 8 * (pos % FIFO_DEPTH as u64) as usize)
    }

    fn stamp(&self, pos: u64) -> Result<&'a AtomicU64> {
        Ok(self
            .region
            .u64_at(self.stamps + 8 * (pos % FIFO_DEPTH as u64) as usize)?)
    }

    fn events(&self) -> Result<Doorbell<'a>> {
        Ok(Doorbell {
            bell: self.u32(EVENTS)?,
            sleepers: self.u32(EXT_SLEEPERS)?,
        })
    }

    fn space(&self) -> Result<Doorbell<'a>> {
        Ok(Doorbell {
            bell: self.u32(SPACE)?,
            sleepers: self.u32(PB_SLEEPERS)?,
        })
    }

    /// Pushes `id`, charging `model` once it has a slot; `false` if the
    /// FIFO is full.
    fn try_push(&self, id: u32, model: Option<&PbModel<'_>>) -> Result<bool> {
        let tail = self.u64(TAIL)?;
        for _ in 0..MAX_RETRIES {
            let pos = tail.load(Ordering::Acquire);
            let slot = self.slot(pos)?;
            let stamp = self.stamp(pos)?;
            let word = slot.load(Ordering::Acquire);
            let turn = ((word >> 32) as u32).wrapping_sub(pos as u32) as i32;
            if turn == 0 {
                if tail
                    .compare_exchange(pos, pos + 1, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
                {
                    // An unmodelled PB's id is there from the start.
                    let arrival = model.map_or(0, PbModel::arrival);
                    stamp.store(arrival, Ordering::Relaxed);
                    slot.store(
                        (u64::from((pos + 1) as u32) << 32) | u64::from(id),
                        Ordering::Release,
                    );
                    self.events()?.ring();
                    return Ok(true);
                }
            } else if turn < 0 {
                // The slot still holds the id of the previous lap.
                return Ok(false);
            }
            // Another producer claimed `pos`: reload the tail.
            std::hint::spin_loop();
        }
        Err(Error::Corrupt(format!(
            "FIFO at {} never settles",
            self.base
        )))
    }

    /// Takes the oldest id, if any, charging `model` for it.
    fn try_pop(&self, model: Option<&ExtModel<'_>>) -> Result<Option<u32>> {
        let head = self.u64(HEAD)?;
        for _ in 0..MAX_RETRIES {
            let pos = head.load(Ordering::Acquire);
            let slot = self.slot(pos)?;
            let stamp = self.stamp(pos)?;
            let word = slot.load(Ordering::Acquire);
            let turn = ((word >> 32) as u32).wrapping_sub((pos + 1) as u32) as i32;
            if turn < 0 {
                return Ok(None);
            }
            if turn == 0
                && head
                    .compare_exchange(pos, pos + 1, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
            {
                if let Some(m) = model {
                    m.take(stamp.load(Ordering::Relaxed));
                }
                slot.store(
                    u64::from((pos + FIFO_DEPTH as u64) as u32) << 32,
                    Ordering::Release,
                );
                self.space()?.ring();
                return Ok(Some(word as u32));
            }
            std::hint::spin_loop();
        }
        Err(Error::Corrupt(format!(
            "FIFO at {} never settles",
            self.base
        )))
    }

    fn len(&self) -> Result<usize> {
        let head = self.u64(HEAD)?.load(Ordering::Acquire);
        let tail = self.u64(TAIL)?.load(Ordering::Acquire);
        let n = tail.wrapping_sub(head);
        if n > FIFO_DEPTH as u64 {
            return Err(Error::Corrupt(format!(
                "FIFO at {}: head {head}, tail {tail}",
                self.base
            )));
        }
        Ok(n as usize)
    }
}

impl Node {
    fn fifo_of(&self, physical: u32) -> Fifo<'_> {
        let layout = self.board.layout();
        Fifo {
            region: self.board.region(),
            base: layout.fifo(physical),
            stamps: layout.fifo_stamp(physical, 0),
        }
    }

    /// PB: puts task id `id` into the FIFO of logical node `logical`,
    /// translated through the board's logical→physical table.
    ///
    /// The model charges the PB once the id has a slot (see clock.rs); a
    /// PB refused by a full FIFO charges nothing.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchNode`]; [`Error::FifoFull`] with
    /// [`Overflow::Error`]; [`Error::Timeout`] if it stays full with
    /// [`Overflow::Wait`]; [`Error::Corrupt`].
    pub fn pb(&self, logical: u32, id: u32, overflow: Overflow) -> Result<()> {
        let physical = self.board.physical(logical)?;
        let fifo = self.fifo_of(physical);
        let model = self.pb_model(physical)?;
        let model = model.as_ref();
        match overflow {
            Overflow::Error => {
                if fifo.try_push(id, model)? {
                    Ok(())
                } else {
                    Err(Error::FifoFull(physical))
                }
            }
            Overflow::Wait => wait::wait_for(
                &self.policy,
                fifo.space()?,
                || format!("a free slot in node {physical}'s EXT FIFO"),
                || Ok(fifo.try_push(id, model)?.then_some(())),
            ),
        }
    }

    /// EXT without waiting: the next task id of this node's FIFO, if any.
    /// The model charges one poll of the FIFO when it finds an id, nothing
    /// when it does not.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupt`].
    pub fn try_ext(&self) -> Result<Option<u32>> {
        let model = self.ext_model(false)?;
        self.fifo_of(self.id).try_pop(model.as_ref())
    }

    /// EXT: the next task id of this node's FIFO, polling or blocking as
    /// the node's policy says. The model charges a polling EXT or, for a
    /// blocking policy, an interrupt EXT (see clock.rs).
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`] if none arrives in time; [`Error::Corrupt`].
    pub fn ext(&self) -> Result<u32> {
        let fifo = self.fifo_of(self.id);
        let model = self.ext_model(true)?;
        wait::wait_for(
            &self.policy,
            fifo.events()?,
            || format!("a task in node {}'s EXT FIFO", self.id),
            || fifo.try_pop(model.as_ref()),
        )
    }

    /// Task ids waiting in this node's FIFO.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupt`].
    pub fn fifo_len(&self) -> Result<usize> {
        self.fifo_of(self.id).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::board::Board;
    use crate::layout::BoardConfig;
    use crate::testutil::scratch_region;
    use crate::wait::WaitPolicy;
    use std::sync::Arc;
    use std::time::Duration;

    fn board(nodes: u32) -> Board {
        let cfg = BoardConfig {
            nodes,
            ..BoardConfig::default()
        };
        let region = scratch_region("fifo", Board::required_len(&cfg).unwrap());
        Board::create(region, cfg).unwrap()
    }

    #[test]
    fn fifo_order_depth_and_overflow() {
        let b = board(2);
        let p = WaitPolicy::polling(Duration::from_millis(30));
        let a = b.node(0, p).unwrap();
        let z = b.node(1, p).unwrap();
        for lap in 0..3u32 {
            for i in 0..255u32 {
                a.pb(1, lap << 16 | i, Overflow::Error).unwrap();
            }
            assert_eq!(z.fifo_len().unwrap(), 255);
            assert!(matches!(
                a.pb(1, 9, Overflow::Error),
                Err(Error::FifoFull(1))
            ));
            let e = a.pb(1, 9, Overflow::Wait).unwrap_err();
            assert!(
                matches!(&e, Error::Timeout { what, .. } if what.contains("free slot")),
                "{e}"
            );
            for i in 0..255u32 {
                assert_eq!(z.try_ext().unwrap(), Some(lap << 16 | i));
            }
            assert_eq!(z.try_ext().unwrap(), None);
        }
        let e = z.ext().unwrap_err();
        assert!(
            matches!(&e, Error::Timeout { what, .. } if what.contains("node 1")),
            "{e}"
        );
    }

    #[test]
    fn pb_goes_through_the_logical_table() {
        let b = board(3);
        b.set_logical(1, 2).unwrap();
        let p = WaitPolicy::polling(Duration::from_secs(1));
        b.node(0, p).unwrap().pb(1, 42, Overflow::Error).unwrap();
        assert_eq!(b.node(2, p).unwrap().try_ext().unwrap(), Some(42));
        assert_eq!(b.node(1, p).unwrap().try_ext().unwrap(), None);
        assert!(b.node(0, p).unwrap().pb(3, 1, Overflow::Error).is_err());
    }

    #[test]
    fn many_producers_one_blocking_consumer_lose_nothing() {
        let b = board(4);
        let producers: Vec<_> = (1..4u32)
            .map(|me| {
                let b = b.clone();
                std::thread::spawn(move || {
                    let n = b
                        .node(me, WaitPolicy::blocking(Duration::from_secs(20)))
                        .unwrap();
                    for i in 0..3000u32 {
                        n.pb(0, me << 24 | i, Overflow::Wait).unwrap();
                    }
                })
            })
            .collect();
        let consumer = b
            .node(0, WaitPolicy::blocking(Duration::from_secs(20)))
            .unwrap();
        let mut next = [0u32; 4];
        for _ in 0..9000 {
            let id = consumer.ext().unwrap();
            let (who, i) = ((id >> 24) as usize, id & 0xff_ffff);
            assert_eq!(i, next[who], "per-producer FIFO order");
            next[who] += 1;
        }
        for p in producers {
            p.join().unwrap();
        }
        assert_eq!(consumer.try_ext().unwrap(), None);
        let _ = Arc::clone(b.region());
    }
}
