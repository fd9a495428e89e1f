//! The dump area's allocator: contiguous regions for unexpected payloads.
//!
//! The kernel module stores each unexpected message's payload in one
//! contiguous region of its dump area (memory the process maps), so that
//! the process copies it out with one slice. Regions are handed out in
//! arrival order from a circular byte range and freed in any order (the
//! process receives messages in whatever order its program wants). A freed
//! region becomes reusable once every region allocated before it is freed
//! too: simple, O(1) per operation, and the space held by early regions the
//! process keeps is what back-pressure is for.
//!
//! A region never wraps around the end of the area: when the tail is too
//! short, the allocation skips to offset 0 and the skipped bytes belong to
//! that region until it is reclaimed (so do the few bytes of alignment
//! padding before it). A zero-length region holds no byte: it takes only a
//! record, and sits at offset 0.
//!
//! Like the matching engine, it works over storage the caller provides (one
//! [`Record`] per region that may exist at once) and never panics on input.
//!
//! # Invariants
//!
//! The bytes held (by live regions and by freed ones not yet reclaimed)
//! are the circular range of `used` bytes starting at `head`, in
//! allocation order: each region that holds bytes starts where the one
//! before it ended. So a new region only ever goes after the held range
//! and before `head`, regions never share a byte, and `used <= size`.
//! When no byte is held, `head` means nothing and the next region starts
//! at offset 0: zero-length regions still waiting for reclaim must not pin
//! the area to a stale position (issue 19: they did, and a wrapped region
//! was booked over itself and over later ones).

use core::ops::DerefMut;

/// Bookkeeping for one region; make storage with [`Record::EMPTY`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    /// Where the payload starts.
    offset: u64,
    /// Bytes this region holds: its payload, the padding before it and the
    /// tail it skipped; zero for a zero-length region.
    held: u64,
    /// Its payload's length.
    len: u64,
    live: bool,
}

impl Record {
    /// An unused record.
    pub const EMPTY: Self = Self {
        offset: 0,
        held: 0,
        len: 0,
        live: false,
    };
}

impl Default for Record {
    fn default() -> Self {
        Self::EMPTY
    }
}

/// What one [`DumpAlloc::free_reclaiming`] made reusable: the regions
/// reclaimed and their payload bytes (not their padding or skipped tails).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Reclaimed {
    /// Regions reclaimed.
    pub regions: u32,
    /// Sum of their payload lengths.
    pub payload: u64,
}

/// Names an allocated region until it is freed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RegionId(u32);

impl RegionId {
    /// The id as a number, to store elsewhere.
    pub const fn to_raw(self) -> u32 {
        self.0
    }

    /// The id [`Self::to_raw`] made; [`DumpAlloc`] refuses ids that name
    /// no live region.
    pub const fn from_raw(raw: u32) -> Self {
        Self(raw)
    }
}

/// The allocator over a dump area of `size` bytes.
///
/// Records are used as a FIFO in allocation order: `first` is the oldest
/// record and `count` are in use (live, or freed and awaiting reclaim).
///
/// # Invariants
///
/// `used <= size`; `head < size` whenever `used > 0`; `used` is the sum of
/// `held` over the records in use, and those bytes are the circular range
/// `[head, head + used)` (see the module documentation).
pub struct DumpAlloc<S> {
    records: S,
    size: u64,
    align: u64,
    first: usize,
    count: usize,
    /// Offset of the oldest held byte, if `used > 0`.
    head: u64,
    used: u64,
}

impl<S> DumpAlloc<S>
where
    S: DerefMut<Target = [Record]>,
{
    /// An empty allocator for `size` bytes, with regions starting at
    /// multiples of `align` (a power of two; anything else counts as 1).
    /// At most `records.len()` regions are live at once.
    pub fn new(mut records: S, size: u64, align: u64) -> Self {
        records.fill(Record::EMPTY);
        // INVARIANT: nothing is held.
        Self {
            records,
            size,
            align: if align.is_power_of_two() { align } else { 1 },
            first: 0,
            count: 0,
            head: 0,
            used: 0,
        }
    }

    /// Allocates `len` contiguous bytes, or returns `None` if there is no
    /// record left or no contiguous room now (freeing earlier regions makes
    /// room). A zero-length region takes a record but no bytes.
    pub fn alloc(&mut self, len: u64) -> Option<RegionId> {
        if self.count >= self.records.len() || len > self.size {
            return None;
        }
        let (offset, held) = if len == 0 {
            (0, 0)
        } else if self.used == 0 {
            // INVARIANT: nothing is held, so the held range may start
            // anywhere; offset 0 leaves the most contiguous room.
            self.head = 0;
            (0, len)
        } else {
            self.place(len)?
        };
        let slot = self
            .first
            .checked_add(self.count)?
            .checked_rem(self.records.len())?;
        let id = u32::try_from(slot).ok()?;
        let rec = self.records.get_mut(slot)?;
        *rec = Record {
            offset,
            held,
            len,
            live: true,
        };
        self.count = self.count.saturating_add(1);
        // INVARIANT: `place` only hands out bytes past the held range and
        // before `head`, so this stays within `size`.
        self.used = self.used.saturating_add(held);
        Some(RegionId(id))
    }

    /// Where `len > 0` bytes go while some bytes are held: the payload
    /// offset and the bytes the region holds from the current tail.
    fn place(&self, len: u64) -> Option<(u64, u64)> {
        if self.used >= self.size {
            // Full: the tail is back at `head`.
            return None;
        }
        // Not full, so the tail differs from `head`. If it is past `head`,
        // the held range does not wrap and [tail, size) and [0, head) are
        // free; otherwise only [tail, head) is.
        let tail = self.tail();
        let limit = if tail > self.head {
            self.size
        } else {
            self.head
        };
        // Past `u64::MAX` (an area that large) does not fit either.
        let end = self
            .align_up(tail)
            .and_then(|start| start.checked_add(len))
            .filter(|&end| end <= limit);
        if let Some(end) = end {
            return Some((end.saturating_sub(len), end.saturating_sub(tail)));
        }
        // Skip the rest of the area and start at 0, before `head`.
        if tail > self.head && len <= self.head {
            let skipped = self.size.saturating_sub(tail);
            return Some((0, skipped.saturating_add(len)));
        }
        None
    }

    /// Offset just past the newest held byte (`head` when the area is full).
    fn tail(&self) -> u64 {
        let to_end = self.size.saturating_sub(self.head);
        if self.used >= to_end {
            self.used.saturating_sub(to_end)
        } else {
            self.head.saturating_add(self.used)
        }
    }

    /// Where region `id`'s payload starts, if it is live.
    pub fn offset(&self, id: RegionId) -> Option<u64> {
        self.live(id).map(|r| r.offset)
    }

    /// Frees region `id`; returns false (and changes nothing) if it names
    /// no live region.
    pub fn free(&mut self, id: RegionId) -> bool {
        self.free_reclaiming(id).is_some()
    }

    /// Frees region `id` and returns what became reusable: the oldest
    /// regions, up to the first one still live (nothing if an older one
    /// is). `None` (and nothing changes) if `id` names no live region.
    pub fn free_reclaiming(&mut self, id: RegionId) -> Option<Reclaimed> {
        let in_use = Self::in_use(self.first, self.count, self.records.len(), id.0);
        let rec = self.records.get_mut(id.0 as usize)?;
        if !rec.live || !in_use {
            return None;
        }
        rec.live = false;
        let mut reclaimed = Reclaimed::default();
        // Reclaim the oldest regions that are now free: each one's bytes
        // are the first `held` of the held range.
        while self.count > 0 {
            let Some(oldest) = self.records.get(self.first) else {
                break;
            };
            if oldest.live {
                break;
            }
            let (held, len) = (oldest.held, oldest.len);
            reclaimed.regions = reclaimed.regions.saturating_add(1);
            reclaimed.payload = reclaimed.payload.saturating_add(len);
            self.used = self.used.saturating_sub(held);
            // `head + held` modulo `size`, without overflowing near
            // `u64::MAX` (`head < size` while bytes are held).
            let to_end = self.size.saturating_sub(self.head);
            self.head = if held >= to_end {
                held.saturating_sub(to_end)
            } else {
                self.head.saturating_add(held)
            };
            self.first = self
                .first
                .saturating_add(1)
                .checked_rem(self.records.len())
                .unwrap_or(0);
            self.count = self.count.saturating_sub(1);
        }
        Some(reclaimed)
    }

    /// Bytes held by live regions and the free regions behind them.
    pub const fn used(&self) -> u64 {
        self.used
    }

    /// Regions live or awaiting reclaim.
    pub const fn records_used(&self) -> usize {
        self.count
    }

    fn live(&self, id: RegionId) -> Option<&Record> {
        let rec = self.records.get(id.0 as usize)?;
        (rec.live && Self::in_use(self.first, self.count, self.records.len(), id.0)).then_some(rec)
    }

    /// Whether record slot `slot` lies in the FIFO window.
    fn in_use(first: usize, count: usize, cap: usize, slot: u32) -> bool {
        let slot = slot as usize;
        if slot >= cap || first >= cap {
            return false;
        }
        // Both are below `cap`, so neither step can overflow.
        let distance = if slot >= first {
            slot.wrapping_sub(first)
        } else {
            slot.wrapping_add(cap).wrapping_sub(first)
        };
        distance < count
    }

    fn align_up(&self, at: u64) -> Option<u64> {
        let mask = self.align.wrapping_sub(1);
        Some(at.checked_add(mask)? & !mask)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::vec;
    use std::vec::Vec;

    fn alloc(records: usize, size: u64) -> DumpAlloc<Vec<Record>> {
        DumpAlloc::new(vec![Record::EMPTY; records], size, 8)
    }

    /// Found by a 30-minute fuzz run: reclaiming a region that wrapped, in
    /// an area near `u64::MAX` bytes, overflowed `head + held`, and the
    /// next region landed on a live one.
    #[test]
    fn reclaim_near_u64_max_wraps_the_head_without_overflow() {
        let size = u64::MAX - 10;
        let mut d = DumpAlloc::new(vec![Record::EMPTY; 4], size, 1);
        let a = d.alloc(size - 5).unwrap();
        let b = d.alloc(3).unwrap();
        assert!(d.free(a));
        let c = d.alloc(100).unwrap();
        assert_eq!(d.offset(c), Some(0), "skips the 2-byte tail");
        let live = d.alloc(50).unwrap();
        assert_eq!(d.offset(live), Some(100));
        assert!(d.free(b));
        assert!(d.free(c));
        assert_eq!(d.used(), 50);
        if let Some(e) = d.alloc(60) {
            let off = d.offset(e).unwrap();
            assert!(
                off >= 150 || off + 60 <= 100,
                "[{off}, +60) overlaps [100, +50)"
            );
        }
    }

    #[test]
    fn regions_are_contiguous_and_wrap_to_the_start() {
        let mut d = alloc(4, 100);
        let a = d.alloc(40).unwrap();
        let b = d.alloc(40).unwrap();
        assert_eq!((d.offset(a), d.offset(b)), (Some(0), Some(40)));
        assert_eq!(
            d.alloc(30),
            None,
            "only 20 bytes at the tail, none before the head"
        );
        assert!(d.free(a));
        let c = d.alloc(30).unwrap();
        assert_eq!(d.offset(c), Some(0), "skips the short tail");
        assert_eq!(d.used(), 40 + 20 + 30);
        assert!(d.free(b));
        assert_eq!(d.used(), 20 + 30, "c holds the skipped tail too");
        assert!(d.free(c));
        assert_eq!((d.used(), d.records_used()), (0, 0));
    }

    #[test]
    fn out_of_order_frees_reclaim_only_behind_the_oldest() {
        let mut d = alloc(4, 96);
        let a = d.alloc(32).unwrap();
        let b = d.alloc(32).unwrap();
        let c = d.alloc(32).unwrap();
        assert!(d.free(b));
        assert_eq!(d.alloc(8), None, "b's bytes wait for a");
        assert!(!d.free(b), "double free is refused");
        assert!(d.free(a));
        let e = d.alloc(64).unwrap();
        assert_eq!(d.offset(e), Some(0));
        assert!(d.free(c));
    }

    #[test]
    fn frees_report_what_they_reclaim_in_order() {
        let mut d = alloc(4, 96);
        let a = d.alloc(30).unwrap();
        let b = d.alloc(20).unwrap();
        let z = d.alloc(0).unwrap();
        let c = d.alloc(40).unwrap();
        assert_eq!(
            d.free_reclaiming(b),
            Some(Reclaimed::default()),
            "a is older"
        );
        assert_eq!(d.free_reclaiming(z), Some(Reclaimed::default()));
        assert_eq!(
            d.free_reclaiming(a),
            Some(Reclaimed {
                regions: 3,
                payload: 50
            }),
            "payload only, not a's padding"
        );
        assert_eq!(d.free_reclaiming(a), None);
        assert_eq!(
            d.free_reclaiming(c),
            Some(Reclaimed {
                regions: 1,
                payload: 40
            })
        );
        assert_eq!((d.used(), d.records_used()), (0, 0));
    }

    #[test]
    fn bad_ids_and_sizes_are_refused() {
        let mut d = alloc(2, 64);
        assert_eq!(d.alloc(65), None);
        assert!(!d.free(RegionId::from_raw(7)));
        assert!(!d.free(RegionId::from_raw(1)), "slot not in use");
        let z = d.alloc(0).unwrap();
        assert_eq!(d.used(), 0);
        let _ = d.alloc(64).unwrap();
        assert_eq!(d.alloc(0), None, "out of records");
        assert!(d.free(z));
        let mut empty = DumpAlloc::new(Vec::new(), 64, 8);
        assert_eq!(empty.alloc(1), None);
    }

    /// Live payload ranges of `regions` are pairwise disjoint.
    fn assert_disjoint(d: &DumpAlloc<Vec<Record>>, regions: &[(RegionId, u64)]) {
        for (i, &(a, alen)) in regions.iter().enumerate() {
            for &(b, blen) in &regions[i + 1..] {
                let (ao, bo) = (d.offset(a).unwrap(), d.offset(b).unwrap());
                assert!(
                    alen == 0 || blen == 0 || ao + alen <= bo || bo + blen <= ao,
                    "[{ao}, +{alen}) overlaps [{bo}, +{blen})"
                );
            }
        }
    }

    /// Issue 19, item 1: a stored message, then a stored empty one; the
    /// first is received, so only the empty region is left and no byte is
    /// held. The next messages must not overlap each other, also once the
    /// empty region is gone.
    #[test]
    fn an_empty_region_left_alone_does_not_let_regions_overlap() {
        let mut d = alloc(4, 256);
        let a = d.alloc(96).unwrap();
        let empty = d.alloc(0).unwrap();
        assert!(d.free(a));
        assert_eq!(d.used(), 0);
        let b = d.alloc(200).unwrap();
        let mut live = vec![(b, 200)];
        if let Some(c) = d.alloc(96) {
            live.push((c, 96));
            assert_disjoint(&d, &live);
        }
        assert!(d.free(empty));
        if let Some(e) = d.alloc(48) {
            live.push((e, 48));
            assert_disjoint(&d, &live);
        }
        assert!(d.used() <= 256, "used {} of 256", d.used());
        for (id, _) in live {
            assert!(d.free(id));
        }
        assert_eq!((d.used(), d.records_used()), (0, 0));
    }

    #[test]
    fn a_full_area_still_takes_an_empty_region() {
        let mut d = alloc(4, 64);
        let a = d.alloc(64).unwrap();
        let z = d.alloc(0).expect("an empty message needs no byte");
        assert_eq!((d.offset(z), d.used()), (Some(0), 64));
        assert!(d.free(a));
        assert!(d.free(z));
        assert_eq!((d.used(), d.records_used()), (0, 0));
    }

    #[test]
    fn a_full_area_refuses_also_when_its_bytes_start_mid_area() {
        let mut d = alloc(4, 64);
        let a = d.alloc(32).unwrap();
        let b = d.alloc(32).unwrap();
        assert!(d.free(a));
        let c = d.alloc(32).unwrap();
        assert_eq!(d.offset(c), Some(0));
        assert_eq!(d.used(), 64);
        assert_eq!(d.alloc(8), None, "tail and head meet: full, not empty");
        assert!(d.free(b));
        let e = d.alloc(32).unwrap();
        assert_eq!(d.offset(e), Some(32));
    }

    proptest! {
        /// Live regions never overlap, stay inside the area and keep their
        /// offsets; freeing everything empties the allocator.
        #[test]
        fn live_regions_never_overlap(ops in proptest::collection::vec((0u64..80, any::<bool>(), 0usize..8), 1..300)) {
            let size = 256;
            let mut d = alloc(8, size);
            let mut live: Vec<(RegionId, u64, u64)> = Vec::new();
            for (len, do_free, pick) in ops {
                if do_free && !live.is_empty() {
                    let (id, _, _) = live.remove(pick % live.len());
                    prop_assert!(d.free(id));
                    prop_assert!(!d.free(id));
                } else if let Some(id) = d.alloc(len) {
                    let off = d.offset(id).unwrap();
                    prop_assert!(off % 8 == 0 && off + len <= size);
                    for &(_, o, l) in &live {
                        prop_assert!(len == 0 || l == 0 || off + len <= o || o + l <= off,
                            "[{off}, +{len}) overlaps [{o}, +{l})");
                    }
                    live.push((id, off, len));
                } else {
                    prop_assert!(live.len() == 8 || d.used() > 0 || len > size);
                }
                for &(id, o, _) in &live {
                    prop_assert_eq!(d.offset(id), Some(o));
                }
                prop_assert!(d.used() <= size);
            }
            for (id, _, _) in live {
                prop_assert!(d.free(id));
            }
            prop_assert_eq!((d.used(), d.records_used()), (0, 0));
        }
    }
}
