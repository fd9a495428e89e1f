//! The dump area under eager credit: one ring per sending rank.
//!
//! Eager credit counts bytes and messages (`credit.rs`). Each sending rank
//! gets its own stretch of the dump area (`region` bytes, rank `r` at
//! `r * region`), allocated as a ring by [`DumpAlloc`]: a payload takes
//! its length (plus alignment), not a slot of the eager limit's size, so
//! the limit can be large without making short messages scarce.
//!
//! A ring reuses space only in arrival order. So a sender's credit comes
//! back when its ring *reclaims* a message, not when the process frees it
//! ([`SenderRings::take_returned`]): a message the process keeps holds
//! back the credit of that sender's later ones, which then go by
//! rendezvous (no room needed here) until it is taken. Every other sender
//! is unaffected. In exchange, a message within credit always finds room:
//! what a ring holds is at most the credit it granted plus, per message,
//! the alignment padding, plus one tail skipped at the wrap;
//! [`window_for`] grants no more than that leaves.
//!
//! Like the matching engine, it works over storage the caller provides and
//! never panics on input.

use core::ops::DerefMut;

use super::credit::{Credit, Window};
use super::dump::{DumpAlloc, Record, RegionId};
use super::envelope::Rank;
use super::receive::Store;

/// Payloads start at multiples of this.
pub const ALIGN: u64 = 64;

/// Bytes of a dump area of `dump_bytes` that each of `ranks` rings gets:
/// an equal share, rounded down to [`ALIGN`] (so every ring starts
/// aligned); 0 for no ranks. The module and libo2g cut the area with it.
pub const fn region_for(dump_bytes: u64, ranks: u32) -> u64 {
    let Some(share) = dump_bytes.checked_div(ranks as u64) else {
        return 0;
    };
    share.wrapping_sub(share.wrapping_rem(ALIGN))
}

/// The window a ring of `region` bytes with `msgs` records can grant for
/// messages of at most `largest` bytes: `None` if that window would not
/// cover one message of `largest` bytes.
///
/// The ring's bytes are bounded by the credit outstanding (at most the
/// window) plus `ALIGN - 1` padding per message (at most `msgs`), plus one
/// skipped tail (less than `largest + ALIGN`, and only one region holding
/// a skipped tail can be live: a later wrap needs the held bytes not to
/// wrap, so that region is reclaimed). The window leaves that room.
pub const fn window_for(region: u64, msgs: u32, largest: u64) -> Option<Window> {
    let Some(margin) = padding(msgs).checked_add(largest) else {
        return None;
    };
    match region.checked_sub(margin) {
        Some(bytes) if bytes >= largest && msgs > 0 => Some(Window {
            bytes,
            msgs,
            largest,
        }),
        _ => None,
    }
}

/// The longest eager message a ring of `region` bytes with `msgs` records
/// can grant credit for ([`window_for`] of it is `Some`), a multiple of
/// [`ALIGN`]; 0 if none.
pub const fn largest_for(region: u64, msgs: u32) -> u64 {
    // Halved, so a window holds at least one message of it.
    let half = region.saturating_sub(padding(msgs)).wrapping_div(2);
    half.wrapping_sub(half.wrapping_rem(ALIGN))
}

/// Room for the alignment padding of `msgs` messages, and of the skipped
/// tail beyond its message's length.
const fn padding(msgs: u32) -> u64 {
    (msgs as u64).saturating_add(2).saturating_mul(ALIGN)
}

/// One sender's ring and the credit reclaimed from it not yet taken.
pub struct SenderRing<R> {
    ring: DumpAlloc<R>,
    returned: Credit,
}

impl<R: DerefMut<Target = [Record]>> SenderRing<R> {
    /// A ring of `region` bytes holding at most `records.len()` messages.
    pub fn new(records: R, region: u64) -> Self {
        Self {
            ring: DumpAlloc::new(records, region, ALIGN),
            returned: Credit::default(),
        }
    }
}

/// The dump area as one [`SenderRing`] per rank; see the module
/// documentation.
///
/// # Invariant
///
/// `used` and `records` are the sums of the rings' [`DumpAlloc::used`]
/// and [`DumpAlloc::records_used`], kept so that reading them (the
/// module's statistics, with bottom halves off) does not visit every
/// rank.
pub struct SenderRings<S> {
    rings: S,
    region: u64,
    used: u64,
    records: usize,
}

impl<S, R> SenderRings<S>
where
    S: DerefMut<Target = [SenderRing<R>]>,
    R: DerefMut<Target = [Record]>,
{
    /// Rings for the ranks below `rings.len()`, each `region` bytes (a
    /// multiple of [`ALIGN`]; the one each ring was built with).
    pub fn new(rings: S, region: u64) -> Self {
        // INVARIANT: the rings are new and hold nothing.
        Self {
            rings,
            region,
            used: 0,
            records: 0,
        }
    }

    /// What the ring of `rank` reclaimed since the last call, as credit to
    /// give back to it; zero for a rank beyond the table.
    pub fn take_returned(&mut self, rank: Rank) -> Credit {
        self.rings
            .get_mut(rank as usize)
            .map(|r| core::mem::take(&mut r.returned))
            .unwrap_or_default()
    }

    /// Bytes the rings hold now, reclaimable or not.
    pub const fn used(&self) -> u64 {
        self.used
    }

    /// Messages the rings hold now, reclaimable or not.
    pub const fn records_used(&self) -> usize {
        self.records
    }

    /// Moves the sums from what one ring held (`before`: bytes, records)
    /// to what it holds (`after`).
    fn account(&mut self, before: (u64, usize), after: (u64, usize)) {
        // INVARIANT: the other rings did not change, and this one's part
        // of each sum was `before`.
        self.used = self.used.saturating_sub(before.0).saturating_add(after.0);
        self.records = self
            .records
            .saturating_sub(before.1)
            .saturating_add(after.1);
    }
}

/// A store id: the rank in the high half, the ring's region id below.
fn split(id: u64) -> (usize, RegionId) {
    ((id >> 32) as usize, RegionId::from_raw(id as u32))
}

impl<S, R> Store for SenderRings<S>
where
    S: DerefMut<Target = [SenderRing<R>]>,
    R: DerefMut<Target = [Record]>,
{
    fn book(&mut self, source: Rank, len: u64) -> Option<u64> {
        let ring = &mut self.rings.get_mut(source as usize)?.ring;
        let before = (ring.used(), ring.records_used());
        let id = ring.alloc(len)?;
        let after = (ring.used(), ring.records_used());
        self.account(before, after);
        Some((u64::from(source) << 32) | u64::from(id.to_raw()))
    }

    fn locate(&self, id: u64) -> u64 {
        let (rank, region) = split(id);
        let Some(ring) = self.rings.get(rank) else {
            return 0;
        };
        (rank as u64)
            .saturating_mul(self.region)
            .saturating_add(ring.ring.offset(region).unwrap_or(0))
    }

    fn give_back(&mut self, id: u64) {
        let (rank, region) = split(id);
        let Some(ring) = self.rings.get_mut(rank) else {
            return;
        };
        let before = (ring.ring.used(), ring.ring.records_used());
        let Some(r) = ring.ring.free_reclaiming(region) else {
            return;
        };
        let c = &mut ring.returned;
        c.bytes = c.bytes.saturating_add(r.payload);
        c.msgs = c.msgs.saturating_add(r.regions);
        let after = (ring.ring.used(), ring.ring.records_used());
        self.account(before, after);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::vec;
    use std::vec::Vec;

    type Rings = SenderRings<Vec<SenderRing<Vec<Record>>>>;

    fn rings(ranks: usize, msgs: usize, region: u64) -> Rings {
        SenderRings::new(
            (0..ranks)
                .map(|_| SenderRing::new(vec![Record::EMPTY; msgs], region))
                .collect(),
            region,
        )
    }

    #[test]
    fn senders_get_their_own_stretch() {
        let mut s = rings(2, 4, 1024);
        let a = s.book(0, 100).expect("room");
        let b = s.book(1, 100).expect("room");
        let c = s.book(0, 10).expect("room");
        assert_eq!((s.locate(a), s.locate(b), s.locate(c)), (0, 1024, 128));
        assert_eq!(s.book(2, 1), None, "beyond the table");
        assert_eq!(s.records_used(), 3);
    }

    #[test]
    fn credit_returns_only_as_the_ring_reclaims() {
        let mut s = rings(2, 4, 1024);
        let a = s.book(1, 100).expect("room");
        let b = s.book(1, 50).expect("room");
        s.give_back(b);
        assert_eq!(s.take_returned(1), Credit::default(), "a is older");
        s.give_back(a);
        s.give_back(a);
        assert_eq!(
            s.take_returned(1),
            Credit {
                bytes: 150,
                msgs: 2
            }
        );
        assert_eq!(s.take_returned(1), Credit::default());
        assert_eq!(s.take_returned(0), Credit::default());
        assert_eq!(s.take_returned(9), Credit::default());
        assert_eq!(s.used(), 0);
    }

    #[test]
    fn the_window_leaves_room_for_padding_and_one_skipped_tail() {
        assert_eq!(window_for(1000, 4, 600), None, "not one message");
        assert_eq!(window_for(100, 0, 1), None);
        let w = window_for(4096, 4, 1000).expect("fits");
        assert_eq!(
            (w.bytes, w.msgs, w.largest),
            (4096 - 6 * 64 - 1000, 4, 1000)
        );
        let l = largest_for(4096, 4);
        assert!(window_for(4096, 4, l).is_some());
        assert!(window_for(4096, 4, l + ALIGN).is_none());
        assert_eq!(l % ALIGN, 0);
        assert_eq!(largest_for(64, 4), 0);
        assert_eq!(region_for(64 << 10, 3), 21824);
        assert_eq!(region_for(100, 0), 0);
    }

    proptest! {
        /// A sender that keeps to its credit always finds room, whatever
        /// lengths it sends and in whatever order the process frees them;
        /// payloads never overlap and stay in the sender's stretch. The
        /// sender here gets its credit back the moment the ring reclaims
        /// (a real receiver batches it), the hardest case for the ring.
        #[test]
        fn within_credit_a_message_always_fits(
            // Mostly long messages, mostly freed oldest first: that fills
            // the ring up to its credit and makes it wrap.
            ops in proptest::collection::vec(
                (prop_oneof![0u64..=300, 240u64..=300], any::<bool>(), 0usize..16),
                1..600,
            ),
            msgs in 1u32..8,
        ) {
            let region = 2048;
            let largest = 300;
            let Some(window) = window_for(region, msgs, largest) else {
                return Ok(());
            };
            let mut s = rings(2, msgs as usize, region);
            let mut credit = Credit { bytes: window.bytes, msgs: window.msgs };
            let mut live: Vec<(u64, u64, u64)> = Vec::new();
            for (len, free, pick) in ops {
                if free && !live.is_empty() {
                    let i = if pick < 12 { 0 } else { pick % live.len() };
                    let (id, _, _) = live.remove(i);
                    s.give_back(id);
                    let back = s.take_returned(1);
                    credit.bytes += back.bytes;
                    credit.msgs += back.msgs;
                    prop_assert!(credit.bytes <= window.bytes && credit.msgs <= window.msgs);
                    continue;
                }
                if len > credit.bytes || credit.msgs == 0 {
                    continue;
                }
                credit.bytes -= len;
                credit.msgs -= 1;
                let id = s.book(1, len);
                prop_assert!(id.is_some(), "no room for {} within credit", len);
                let id = id.unwrap_or_default();
                let at = s.locate(id);
                prop_assert!(at >= region && at + len <= 2 * region);
                for &(_, o, l) in &live {
                    prop_assert!(len == 0 || l == 0 || at + len <= o || o + l <= at);
                }
                live.push((id, at, len));
                let used: u64 = s.rings.iter().map(|r| r.ring.used()).sum();
                let records: usize = s.rings.iter().map(|r| r.ring.records_used()).sum();
                prop_assert_eq!((s.used(), s.records_used()), (used, records));
            }
        }
    }
}
