//! The dump area as fixed slots: room for unexpected eager payloads that
//! follows from eager credit.
//!
//! Each slot holds one payload of at most the slot size (the largest eager
//! message the receiver accepts), so a receiver that has granted its peers
//! at most as many eager messages in all as it has slots always has a slot
//! for a message within credit, in whatever order the process takes its
//! messages: freeing any slot makes it reusable at once. (A circular
//! allocator reclaims space only in allocation order, so one message the
//! process keeps would pin the area while credit keeps flowing.) The cost
//! is space: a short message takes a whole slot.
//!
//! The store also counts, per sending rank, what left it since the
//! receiver last asked ([`SlotStore::take_returned`]): that is the eager
//! credit the receiver may hand back to that peer, whichever path freed
//! the slot (a release, a copy into a late receive, a failure).
//!
//! Like the matching engine, it works over storage the caller provides and
//! never panics on input.

use core::ops::DerefMut;

use super::credit::Credit;
use super::envelope::Rank;
use super::receive::Store;

/// Marks the end of the free list.
const NONE: u32 = u32::MAX;

/// Bookkeeping for one slot; make storage with [`SlotEntry::EMPTY`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotEntry {
    /// Payload bytes stored, while in use.
    len: u64,
    /// Who sent it.
    source: Rank,
    /// The next free slot, while free.
    next_free: u32,
    used: bool,
}

impl SlotEntry {
    /// An unused entry.
    pub const EMPTY: Self = Self {
        len: 0,
        source: 0,
        next_free: NONE,
        used: false,
    };
}

/// The slot store over `entries` (one per slot) and `returned` (one per
/// sending rank); see the module documentation.
///
/// # Invariants
///
/// The free list chains exactly the unused entries; `in_use` counts the
/// used ones and `held` sums their `len`.
pub struct SlotStore<E, R> {
    entries: E,
    returned: R,
    slot: u64,
    first_free: u32,
    in_use: u32,
    held: u64,
}

impl<E, R> SlotStore<E, R>
where
    E: DerefMut<Target = [SlotEntry]>,
    R: DerefMut<Target = [Credit]>,
{
    /// A store of `entries.len()` slots of `slot` bytes each (slot `i`
    /// starts at `i * slot`), counting what returns for ranks below
    /// `returned.len()`.
    pub fn new(mut entries: E, mut returned: R, slot: u64) -> Self {
        entries.fill(SlotEntry::EMPTY);
        returned.fill(Credit::default());
        let count = u32::try_from(entries.len()).unwrap_or(NONE);
        let mut next = NONE;
        for (i, e) in entries.iter_mut().enumerate().rev() {
            if (i as u64) < u64::from(count) {
                e.next_free = next;
                next = i as u32;
            }
        }
        // INVARIANT: every entry below `count` is unused and chained.
        Self {
            entries,
            returned,
            slot,
            first_free: next,
            in_use: 0,
            held: 0,
        }
    }

    /// Number of slots.
    pub fn slots(&self) -> u32 {
        u32::try_from(self.entries.len()).unwrap_or(NONE)
    }

    /// Bytes per slot: the largest payload one slot holds.
    pub const fn slot_size(&self) -> u64 {
        self.slot
    }

    /// Payload bytes stored now.
    pub const fn held_bytes(&self) -> u64 {
        self.held
    }

    /// Slots in use now.
    pub const fn in_use(&self) -> u32 {
        self.in_use
    }

    /// What left the store from `rank` since the last call, as credit to
    /// give back to it; zero for a rank beyond the table.
    pub fn take_returned(&mut self, rank: Rank) -> Credit {
        self.returned
            .get_mut(rank as usize)
            .map(core::mem::take)
            .unwrap_or_default()
    }
}

impl<E, R> Store for SlotStore<E, R>
where
    E: DerefMut<Target = [SlotEntry]>,
    R: DerefMut<Target = [Credit]>,
{
    fn book(&mut self, source: Rank, len: u64) -> Option<u64> {
        if len > self.slot {
            return None;
        }
        let i = self.first_free;
        let e = self.entries.get_mut(i as usize)?;
        self.first_free = e.next_free;
        *e = SlotEntry {
            len,
            source,
            next_free: NONE,
            used: true,
        };
        self.in_use = self.in_use.saturating_add(1);
        self.held = self.held.saturating_add(len);
        Some(u64::from(i))
    }

    fn locate(&self, id: u64) -> u64 {
        id.saturating_mul(self.slot)
    }

    fn give_back(&mut self, id: u64) {
        let Ok(i) = u32::try_from(id) else {
            return;
        };
        let Some(e) = self.entries.get_mut(i as usize) else {
            return;
        };
        if !e.used {
            return;
        }
        let (len, source) = (e.len, e.source);
        *e = SlotEntry {
            next_free: self.first_free,
            ..SlotEntry::EMPTY
        };
        self.first_free = i;
        self.in_use = self.in_use.saturating_sub(1);
        self.held = self.held.saturating_sub(len);
        if let Some(r) = self.returned.get_mut(source as usize) {
            r.bytes = r.bytes.saturating_add(len);
            r.msgs = r.msgs.saturating_add(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(slots: usize, ranks: usize) -> SlotStore<Vec<SlotEntry>, Vec<Credit>> {
        SlotStore::new(
            vec![SlotEntry::EMPTY; slots],
            vec![Credit::default(); ranks],
            64,
        )
    }

    #[test]
    fn any_freed_slot_is_reusable_at_once() {
        let mut s = store(3, 2);
        let a = s.book(0, 64).expect("room");
        let b = s.book(1, 0).expect("room");
        let c = s.book(0, 10).expect("room");
        assert_eq!(s.book(0, 1), None, "full");
        assert_eq!(s.book(0, 65), None, "longer than a slot");
        // The first region is kept; freeing a later one makes room.
        s.give_back(b);
        let d = s.book(1, 5).expect("b's slot");
        assert_eq!(d, b);
        let offsets = [a, c, d].map(|id| s.locate(id));
        assert_eq!(offsets.len(), 3);
        assert!(offsets.iter().all(|o| o % 64 == 0 && *o < 3 * 64));
        assert_eq!(s.held_bytes(), 79);
        assert_eq!(s.in_use(), 3);
    }

    #[test]
    fn what_leaves_is_counted_per_sender_once() {
        let mut s = store(4, 2);
        let a = s.book(0, 7).expect("room");
        let b = s.book(1, 9).expect("room");
        let c = s.book(0, 3).expect("room");
        s.give_back(a);
        s.give_back(a);
        s.give_back(c);
        s.give_back(b);
        s.give_back(99);
        assert_eq!(s.take_returned(0), Credit { bytes: 10, msgs: 2 });
        assert_eq!(s.take_returned(0), Credit::default());
        assert_eq!(s.take_returned(1), Credit { bytes: 9, msgs: 1 });
        assert_eq!(s.take_returned(7), Credit::default());
        assert_eq!((s.held_bytes(), s.in_use()), (0, 0));
    }

    #[test]
    fn a_rank_beyond_the_table_still_stores() {
        let mut s = store(1, 1);
        let a = s.book(5, 1).expect("room");
        s.give_back(a);
        assert_eq!(s.take_returned(5), Credit::default());
        assert!(s.book(0, 1).is_some());
    }
}
