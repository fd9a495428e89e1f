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
//! that region until it is freed.
//!
//! Like the matching engine, it works over storage the caller provides (one
//! [`Record`] per region that may exist at once) and never panics on input.

use core::ops::DerefMut;

/// Bookkeeping for one region; make storage with [`Record::EMPTY`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    /// Where the bytes this region holds start (including skipped bytes).
    span_start: u64,
    /// Where the payload starts.
    offset: u64,
    /// One past the region's last byte.
    end: u64,
    live: bool,
}

impl Record {
    /// An unused record.
    pub const EMPTY: Self = Self {
        span_start: 0,
        offset: 0,
        end: 0,
        live: false,
    };
}

impl Default for Record {
    fn default() -> Self {
        Self::EMPTY
    }
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
/// live record and `count` are in use.
pub struct DumpAlloc<S> {
    records: S,
    size: u64,
    align: u64,
    first: usize,
    count: usize,
    /// Offset of the oldest live byte (where the oldest region's span starts).
    head: u64,
    /// Offset where the next region would start.
    tail: u64,
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
        Self {
            records,
            size,
            align: if align.is_power_of_two() { align } else { 1 },
            first: 0,
            count: 0,
            head: 0,
            tail: 0,
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
        if self.count == 0 {
            self.head = 0;
            self.tail = 0;
        }
        let start = self.align_up(self.tail)?;
        let fits_after_tail = start.checked_add(len)? <= self.size;
        let (span_start, offset) = if self.used == 0 {
            // No live bytes (at most zero-length regions): anywhere goes.
            (self.tail, if fits_after_tail { start } else { 0 })
        } else if self.tail > self.head {
            // Live bytes are [head, tail): room after tail, else before head.
            if fits_after_tail {
                (self.tail, start)
            } else if len <= self.head {
                (self.tail, 0)
            } else {
                return None;
            }
        } else if self.tail < self.head && start.checked_add(len)? <= self.head {
            // Wrapped: live bytes are [head, size) and [0, tail).
            (self.tail, start)
        } else {
            // Wrapped without room, or every byte live.
            return None;
        };
        let end = offset.checked_add(len)?;
        let slot = self
            .first
            .checked_add(self.count)?
            .checked_rem(self.records.len())?;
        let span = self.span(span_start, offset, end);
        let rec = self.records.get_mut(slot)?;
        *rec = Record {
            span_start,
            offset,
            end,
            live: true,
        };
        self.count = self.count.saturating_add(1);
        self.used = self.used.saturating_add(span);
        self.tail = if end == self.size { 0 } else { end };
        u32::try_from(slot).ok().map(RegionId)
    }

    /// Where region `id`'s payload starts, if it is live.
    pub fn offset(&self, id: RegionId) -> Option<u64> {
        self.live(id).map(|r| r.offset)
    }

    /// Frees region `id`; returns false (and changes nothing) if it names
    /// no live region.
    pub fn free(&mut self, id: RegionId) -> bool {
        let in_use = Self::in_use(self.first, self.count, self.records.len(), id.0);
        let Some(rec) = self.records.get_mut(id.0 as usize) else {
            return false;
        };
        if !rec.live || !in_use {
            return false;
        }
        rec.live = false;
        // Reclaim the oldest regions that are now free.
        while self.count > 0 {
            let Some(oldest) = self.records.get(self.first) else {
                break;
            };
            if oldest.live {
                break;
            }
            let oldest = *oldest;
            let span = self.span(oldest.span_start, oldest.offset, oldest.end);
            self.used = self.used.saturating_sub(span);
            self.head = if oldest.end == self.size {
                0
            } else {
                oldest.end
            };
            self.first = self
                .first
                .saturating_add(1)
                .checked_rem(self.records.len())
                .unwrap_or(0);
            self.count = self.count.saturating_sub(1);
        }
        true
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

    /// Bytes a region holds: from its span start (which may lie before a
    /// wrap to offset 0) to its end.
    fn span(&self, span_start: u64, offset: u64, end: u64) -> u64 {
        if offset >= span_start {
            end.saturating_sub(span_start)
        } else {
            self.size.saturating_sub(span_start).saturating_add(end)
        }
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
