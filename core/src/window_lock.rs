//! The lock of one memory window, as its target keeps it for MPI's
//! passive target (`MPI_Win_lock`, `MPI_Win_unlock`): any number of
//! shared holders or one exclusive holder, and the origins waiting in
//! first-come order.
//!
//! A request that is compatible with the holders *and* finds nobody
//! waiting is granted at once; otherwise it waits, so that a stream of
//! shared requests cannot starve an exclusive one. An unlock grants
//! from the head of the queue as long as the heads are compatible
//! (several shared requests in a row are granted together).
//!
//! Each origin holds or waits for at most one lock of a window at a
//! time, as MPI requires of a process; a second request is refused, not
//! queued. An origin whose connection is gone is [`WindowLock::forget`]-ed:
//! its lock is released and its wait withdrawn, so a dead peer cannot
//! block the others.
//!
//! Storage is the caller's (one entry per origin rank, and a queue of
//! the same length), so the kernel sizes it when a window is registered.

use core::ops::DerefMut;

use super::envelope::Rank;

/// A lock's kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LockKind {
    /// `MPI_LOCK_SHARED`.
    Shared,
    /// `MPI_LOCK_EXCLUSIVE`.
    Exclusive,
}

/// What one origin has of a window's lock; make storage with
/// [`Origin::EMPTY`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Origin {
    held: Option<LockKind>,
    waiting: Option<LockKind>,
}

impl Origin {
    /// An origin with no lock and no request.
    pub const EMPTY: Self = Self {
        held: None,
        waiting: None,
    };
}

impl Default for Origin {
    fn default() -> Self {
        Self::EMPTY
    }
}

/// What a lock request got.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Locked {
    /// The lock is the origin's now.
    Granted,
    /// The origin waits; an unlock or a forget grants it later.
    Queued,
}

/// Why a request was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LockError {
    /// The rank has no entry (at or above the window's rank count).
    NoSuchOrigin(Rank),
    /// The origin holds or waits for this window's lock already.
    AlreadyLocked(Rank),
    /// An unlock from an origin that holds no lock.
    NotLocked(Rank),
}

/// One window's lock; see the module documentation.
pub struct WindowLock<O, Q> {
    origins: O,
    /// Waiting ranks in arrival order: a ring of `origins.len()` entries
    /// from `head`, `waiting` long; each rank at most once.
    queue: Q,
    head: usize,
    waiting: usize,
    shared: u32,
    exclusive: bool,
}

impl<O, Q> WindowLock<O, Q>
where
    O: DerefMut<Target = [Origin]>,
    Q: DerefMut<Target = [Rank]>,
{
    /// A free lock for ranks below `origins.len()`; `queue` must be as
    /// long (shorter storage shrinks the rank count to its length).
    pub fn new(mut origins: O, queue: Q) -> Self {
        origins.fill(Origin::EMPTY);
        Self {
            origins,
            queue,
            head: 0,
            waiting: 0,
            shared: 0,
            exclusive: false,
        }
    }

    fn ranks(&self) -> usize {
        self.origins.len().min(self.queue.len())
    }

    /// What `rank` holds now.
    pub fn held(&self, rank: Rank) -> Option<LockKind> {
        self.origins.get(rank as usize).and_then(|o| o.held)
    }

    /// Whether nobody holds the lock and nobody waits.
    pub const fn is_free(&self) -> bool {
        self.shared == 0 && !self.exclusive && self.waiting == 0
    }

    /// `rank` asks for a lock of `kind`.
    ///
    /// # Errors
    ///
    /// [`LockError::NoSuchOrigin`], [`LockError::AlreadyLocked`]; nothing
    /// changed.
    pub fn lock(&mut self, rank: Rank, kind: LockKind) -> Result<Locked, LockError> {
        let len = self.ranks();
        let index = rank as usize;
        if index >= len {
            return Err(LockError::NoSuchOrigin(rank));
        }
        let now = self.compatible(kind) && self.waiting == 0;
        let slot = self.at(self.waiting);
        let o = self
            .origins
            .get_mut(index)
            .ok_or(LockError::NoSuchOrigin(rank))?;
        if o.held.is_some() || o.waiting.is_some() {
            return Err(LockError::AlreadyLocked(rank));
        }
        if now {
            o.held = Some(kind);
            self.take(kind);
            return Ok(Locked::Granted);
        }
        o.waiting = Some(kind);
        // Each rank waits at most once, so the ring has room.
        if let Some(q) = self.queue.get_mut(slot) {
            *q = rank;
        }
        self.waiting = self.waiting.saturating_add(1);
        Ok(Locked::Queued)
    }

    /// `rank` releases its lock; `granted` hears of each waiting origin
    /// that gets the lock now, in queue order.
    ///
    /// # Errors
    ///
    /// [`LockError::NoSuchOrigin`], [`LockError::NotLocked`] (a rank that
    /// only waits cannot unlock: MPI's unlock returns after the lock);
    /// nothing changed.
    pub fn unlock(
        &mut self,
        rank: Rank,
        granted: impl FnMut(Rank, LockKind),
    ) -> Result<(), LockError> {
        if rank as usize >= self.ranks() {
            return Err(LockError::NoSuchOrigin(rank));
        }
        let o = self
            .origins
            .get_mut(rank as usize)
            .ok_or(LockError::NoSuchOrigin(rank))?;
        let kind = o.held.take().ok_or(LockError::NotLocked(rank))?;
        self.give(kind);
        self.grant_waiting(granted);
        Ok(())
    }

    /// `rank` is gone: its lock is released and its wait withdrawn;
    /// `granted` hears of each origin that gets the lock because of it.
    /// A rank with neither is left alone.
    pub fn forget(&mut self, rank: Rank, granted: impl FnMut(Rank, LockKind)) {
        let Some(o) = self.origins.get_mut(rank as usize) else {
            return;
        };
        let held = o.held.take();
        let waited = o.waiting.take().is_some();
        if let Some(kind) = held {
            self.give(kind);
        }
        if waited {
            self.withdraw(rank);
        }
        if held.is_some() || waited {
            // A withdrawn head may have held back compatible requests.
            self.grant_waiting(granted);
        }
    }

    /// Takes `rank`'s entry out of the queue, keeping the others' order.
    fn withdraw(&mut self, rank: Rank) {
        let Some(pos) = (0..self.waiting).find(|&i| self.queue.get(self.at(i)) == Some(&rank))
        else {
            return;
        };
        let mut i = pos;
        while let Some(after) = i.checked_add(1).filter(|&a| a < self.waiting) {
            let next = self.queue.get(self.at(after)).copied().unwrap_or(Rank::MAX);
            let here = self.at(i);
            if let Some(q) = self.queue.get_mut(here) {
                *q = next;
            }
            i = after;
        }
        self.waiting = self.waiting.saturating_sub(1);
    }

    /// The ring index of the `i`-th waiting entry.
    fn at(&self, i: usize) -> usize {
        self.head
            .wrapping_add(i)
            .checked_rem(self.ranks())
            .unwrap_or(0)
    }

    fn compatible(&self, kind: LockKind) -> bool {
        match kind {
            LockKind::Shared => !self.exclusive,
            LockKind::Exclusive => !self.exclusive && self.shared == 0,
        }
    }

    fn take(&mut self, kind: LockKind) {
        match kind {
            LockKind::Shared => self.shared = self.shared.saturating_add(1),
            LockKind::Exclusive => self.exclusive = true,
        }
    }

    fn give(&mut self, kind: LockKind) {
        match kind {
            LockKind::Shared => self.shared = self.shared.saturating_sub(1),
            LockKind::Exclusive => self.exclusive = false,
        }
    }

    /// Grants from the head of the queue while the head is compatible.
    fn grant_waiting(&mut self, mut granted: impl FnMut(Rank, LockKind)) {
        let len = self.ranks();
        while self.waiting > 0 && len > 0 {
            let rank = self.queue.get(self.head).copied().unwrap_or(Rank::MAX);
            let Some(kind) = self.origins.get(rank as usize).and_then(|o| o.waiting) else {
                // Cannot happen: every queued rank waits. Drop the entry
                // rather than stop granting.
                self.pop();
                continue;
            };
            if !self.compatible(kind) {
                return;
            }
            self.pop();
            self.take(kind);
            if let Some(o) = self.origins.get_mut(rank as usize) {
                o.waiting = None;
                o.held = Some(kind);
            }
            granted(rank, kind);
        }
    }

    fn pop(&mut self) {
        self.head = self.at(1);
        self.waiting = self.waiting.saturating_sub(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec;
    use std::vec::Vec;

    type Lock = WindowLock<Vec<Origin>, Vec<Rank>>;

    fn lock(ranks: usize) -> Lock {
        WindowLock::new(vec![Origin::EMPTY; ranks], vec![0; ranks])
    }

    fn unlock(l: &mut Lock, rank: Rank) -> Vec<(Rank, LockKind)> {
        let mut got = Vec::new();
        l.unlock(rank, |r, k| got.push((r, k))).unwrap();
        got
    }

    use LockKind::{Exclusive as X, Shared as S};

    #[test]
    fn shared_locks_share_and_exclusive_waits_for_them() {
        let mut l = lock(4);
        assert_eq!(l.lock(0, S), Ok(Locked::Granted));
        assert_eq!(l.lock(1, S), Ok(Locked::Granted));
        assert_eq!(l.lock(2, X), Ok(Locked::Queued));
        // A shared request behind a waiting exclusive one waits too.
        assert_eq!(l.lock(3, S), Ok(Locked::Queued));
        assert_eq!(unlock(&mut l, 0), []);
        assert_eq!(unlock(&mut l, 1), [(2, X)]);
        assert_eq!(l.held(2), Some(X));
        assert_eq!(unlock(&mut l, 2), [(3, S)]);
        assert_eq!(unlock(&mut l, 3), []);
        assert!(l.is_free());
    }

    #[test]
    fn an_unlock_grants_every_shared_head_at_once() {
        let mut l = lock(4);
        assert_eq!(l.lock(3, X), Ok(Locked::Granted));
        for r in 0..3 {
            assert_eq!(l.lock(r, S), Ok(Locked::Queued));
        }
        assert_eq!(unlock(&mut l, 3), [(0, S), (1, S), (2, S)]);
    }

    #[test]
    fn misuse_is_refused_and_changes_nothing() {
        let mut l = lock(2);
        assert_eq!(l.lock(2, S), Err(LockError::NoSuchOrigin(2)));
        assert_eq!(l.unlock(0, |_, _| {}), Err(LockError::NotLocked(0)));
        assert_eq!(l.lock(0, X), Ok(Locked::Granted));
        assert_eq!(l.lock(0, S), Err(LockError::AlreadyLocked(0)));
        assert_eq!(l.lock(1, S), Ok(Locked::Queued));
        assert_eq!(l.lock(1, S), Err(LockError::AlreadyLocked(1)));
        assert_eq!(l.unlock(1, |_, _| {}), Err(LockError::NotLocked(1)));
        assert_eq!(unlock(&mut l, 0), [(1, S)]);
    }

    #[test]
    fn a_forgotten_origin_releases_and_stops_waiting() {
        let mut l = lock(4);
        assert_eq!(l.lock(0, X), Ok(Locked::Granted));
        assert_eq!(l.lock(1, X), Ok(Locked::Queued));
        assert_eq!(l.lock(2, S), Ok(Locked::Queued));
        let mut got = Vec::new();
        l.forget(1, |r, k| got.push((r, k)));
        assert_eq!(got, []);
        l.forget(0, |r, k| got.push((r, k)));
        assert_eq!(got, [(2, S)]);
        // Rank 1 may ask again, and queues once, in its new place.
        assert_eq!(l.lock(1, X), Ok(Locked::Queued));
        assert_eq!(l.lock(3, S), Ok(Locked::Queued));
        // Withdrawn from the head: the shared request behind it goes in.
        l.forget(1, |r, k| got.push((r, k)));
        assert_eq!(got, [(2, S), (3, S)]);
        assert_eq!(unlock(&mut l, 2), []);
        got.clear();
        l.forget(0, |r, k| got.push((r, k)));
        assert_eq!(got, []);
        assert_eq!(unlock(&mut l, 3), []);
        assert!(l.is_free());
    }

    /// Random requests, unlocks and forgets against the rules: never an
    /// exclusive holder beside another holder, first-come order among
    /// waiters, and nobody left waiting on a free lock.
    #[test]
    fn random_sequences_keep_the_rules() {
        const RANKS: usize = 5;
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..200 {
            let mut l = lock(RANKS);
            // The model: who holds what, and the waiting order.
            let mut held: Vec<Option<LockKind>> = vec![None; RANKS];
            let mut queue: Vec<(Rank, LockKind)> = Vec::new();
            for _ in 0..200 {
                let r = (next() % RANKS as u64) as Rank;
                let granted = |held: &mut Vec<Option<LockKind>>,
                               queue: &mut Vec<(Rank, LockKind)>,
                               got: Vec<(Rank, LockKind)>| {
                    for g in got {
                        assert_eq!(queue.first(), Some(&g), "first come, first served");
                        queue.remove(0);
                        held[g.0 as usize] = Some(g.1);
                    }
                };
                match next() % 3 {
                    0 => {
                        let kind = if next() % 2 == 0 { S } else { X };
                        match l.lock(r, kind) {
                            Ok(Locked::Granted) => held[r as usize] = Some(kind),
                            Ok(Locked::Queued) => queue.push((r, kind)),
                            Err(LockError::AlreadyLocked(_)) => assert!(
                                held[r as usize].is_some() || queue.iter().any(|q| q.0 == r)
                            ),
                            Err(e) => panic!("{e:?}"),
                        }
                    }
                    1 => {
                        let mut got = Vec::new();
                        match l.unlock(r, |a, b| got.push((a, b))) {
                            Ok(()) => held[r as usize] = None,
                            Err(LockError::NotLocked(_)) => assert!(held[r as usize].is_none()),
                            Err(e) => panic!("{e:?}"),
                        }
                        granted(&mut held, &mut queue, got);
                    }
                    _ => {
                        let mut got = Vec::new();
                        l.forget(r, |a, b| got.push((a, b)));
                        held[r as usize] = None;
                        queue.retain(|q| q.0 != r);
                        granted(&mut held, &mut queue, got);
                    }
                }
                let exclusive = held.iter().filter(|h| **h == Some(X)).count();
                let holders = held.iter().filter(|h| h.is_some()).count();
                assert!(exclusive == 0 || holders == 1, "{held:?}");
                if holders == 0 {
                    assert!(queue.is_empty(), "waiting on a free lock: {queue:?}");
                }
                for (rank, h) in held.iter().enumerate() {
                    assert_eq!(l.held(rank as Rank), *h);
                }
            }
        }
    }
}
