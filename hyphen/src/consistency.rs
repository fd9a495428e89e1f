//! [`Shared`]: a shared-memory API on the DSM with release consistency, in
//! the manner of Fagus.
//!
//! Programs allocate shared ranges (whole DSM pages on a chosen home
//! node), read and write them through this node's cache, and order their
//! accesses with *synchronisation variables*, each a lock word with an
//! owner in the board header:
//!
//! - [`Shared::acquire`] takes the variable (waiting, bounded, while
//!   another node owns it), then writes back and drops this node's cached
//!   pages in the variable's scope, so the next access CACHEs them afresh
//!   from their homes, where the last releaser's diffs were applied: an
//!   acquire sees what the last releaser wrote.
//! - [`Shared::release`] writes back the diffs of every cached page in the
//!   scope (WB), records itself as last releaser, and frees the variable.
//! - [`Shared::barrier`] writes back everything, then waits for every node
//!   in the style of Fagus's AOTF barrier: each node stores its barrier
//!   epoch into its own word of a flag array (one small remote store per
//!   node on the real network) and waits until every word has reached the
//!   epoch.
//!
//! A variable's *scope* is the ranges [`Shared::bind`] tied to it (entry
//! consistency: only the data the lock guards moves), or, for an unbound
//! variable, every cached page (release consistency). Writes made between
//! synchronisations stay in this node's cache, invisible to others,
//! until a release, a barrier or [`Shared::flush`]. Because write back
//! sends diffs, nodes writing different bytes of the same page under
//! different variables do not undo each other (multiple writers).
//!
//! There is no page-fault mode: accesses go through [`Shared::read`] and
//! [`Shared::write`], which CACHE missing pages on demand, and
//! [`Shared::flush`] is the explicit write back.

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use crate::board::Node;
use crate::dsm::{CacheEntry, GlobalPage};
use crate::error::{Error, Result};
use crate::layout::{H_BARRIER_BELL, H_BARRIER_FLAGS, H_BARRIER_SLEEPERS, NODE_ALLOCATED, PAGE};
use crate::wait::{self, Doorbell};

const V_LOCK: usize = 0;
const V_LAST: usize = 4;
const V_RELEASES: usize = 8;

/// A run of DSM pages on one home node, `len` bytes long.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SharedRange {
    /// The home node.
    pub home: u32,
    /// Its first DSM page.
    pub first_page: u32,
    /// Length in bytes.
    pub len: usize,
}

impl SharedRange {
    /// Pages spanned.
    pub fn pages(&self) -> u32 {
        self.len.div_ceil(PAGE) as u32
    }

    fn page(&self, i: u32) -> GlobalPage {
        GlobalPage {
            home: self.home,
            page: self.first_page + i,
        }
    }
}

/// A synchronisation variable, by number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SyncVar(pub u32);

/// One node's release-consistent view of the DSM.
#[derive(Debug)]
pub struct Shared {
    node: Node,
    scopes: HashMap<SyncVar, Vec<SharedRange>>,
    epoch: u32,
}

impl Shared {
    /// A view for `node`, with no bindings.
    pub fn new(node: Node) -> Self {
        Self {
            node,
            scopes: HashMap::new(),
            epoch: 0,
        }
    }

    /// The node.
    pub fn node(&self) -> &Node {
        &self.node
    }

    /// Allocates `len` bytes (whole pages) on `home`. Allocation is a
    /// compare-and-swap on the home's allocation counter, so any node may
    /// allocate anywhere; a range can be handed to others as its three
    /// numbers (or computed alike by every node).
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchNode`], [`Error::OutOfDsm`].
    pub fn alloc(&self, home: u32, len: usize) -> Result<SharedRange> {
        let board = self.node.board();
        board.check_node(home)?;
        let total = board.config().dsm_pages;
        let pages = u32::try_from(len.div_ceil(PAGE)).unwrap_or(u32::MAX);
        let counter = board.u32_at(board.layout().node(home) + NODE_ALLOCATED)?;
        let mut used = counter.load(Ordering::Relaxed);
        loop {
            let free = total.saturating_sub(used);
            if pages > free {
                return Err(Error::OutOfDsm {
                    node: home,
                    wanted: pages,
                    free,
                });
            }
            match counter.compare_exchange(used, used + pages, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => {
                    return Ok(SharedRange {
                        home,
                        first_page: used,
                        len,
                    })
                }
                Err(now) => used = now,
            }
        }
    }

    /// Ties `range` to `var`: acquiring and releasing `var` then moves
    /// only the bound ranges (entry consistency).
    pub fn bind(&mut self, var: SyncVar, range: SharedRange) {
        self.scopes.entry(var).or_default().push(range);
    }

    /// Reads `buf.len()` bytes of `range` at `offset`, CACHE-ing pages not
    /// in this node's cache.
    ///
    /// # Errors
    ///
    /// [`Error::OutOfRange`]; CACHE's errors.
    pub fn read(&self, range: &SharedRange, offset: usize, buf: &mut [u8]) -> Result<()> {
        let mut done = 0;
        for (entry, in_page, n) in self.spans(range, offset, buf.len())? {
            self.node
                .cache_read(entry, in_page, &mut buf[done..done + n])?;
            done += n;
        }
        Ok(())
    }

    /// Writes `data` into `range` at `offset` (in this node's cache until
    /// the next release, barrier or flush).
    ///
    /// # Errors
    ///
    /// As [`Shared::read`].
    pub fn write(&self, range: &SharedRange, offset: usize, data: &[u8]) -> Result<()> {
        let mut done = 0;
        for (entry, in_page, n) in self.spans(range, offset, data.len())? {
            self.node
                .cache_write(entry, in_page, &data[done..done + n])?;
            done += n;
        }
        Ok(())
    }

    /// Reads the little-endian `u64` at `offset`.
    ///
    /// # Errors
    ///
    /// As [`Shared::read`].
    pub fn read_u64(&self, range: &SharedRange, offset: usize) -> Result<u64> {
        let mut b = [0u8; 8];
        self.read(range, offset, &mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    /// Writes `v` little-endian at `offset`.
    ///
    /// # Errors
    ///
    /// As [`Shared::write`].
    pub fn write_u64(&self, range: &SharedRange, offset: usize, v: u64) -> Result<()> {
        self.write(range, offset, &v.to_le_bytes())
    }

    /// The (cache entry, offset in page, length) pieces of an access.
    fn spans(
        &self,
        range: &SharedRange,
        offset: usize,
        len: usize,
    ) -> Result<Vec<(CacheEntry, usize, usize)>> {
        match offset.checked_add(len) {
            Some(end) if end <= range.len => {}
            _ => {
                return Err(Error::OutOfRange {
                    offset,
                    len,
                    limit: range.len,
                })
            }
        }
        let mut out = Vec::new();
        let mut at = offset;
        while at < offset + len {
            let page = (at / PAGE) as u32;
            let in_page = at % PAGE;
            let n = (PAGE - in_page).min(offset + len - at);
            out.push((self.node.cache(range.page(page))?, in_page, n));
            at += n;
        }
        Ok(out)
    }

    fn var_base(&self, var: SyncVar) -> Result<usize> {
        let vars = self.node.board().config().sync_vars;
        if var.0 >= vars {
            return Err(Error::NoSuchSyncVar { var: var.0, vars });
        }
        Ok(self.node.board().layout().sync_var(var.0))
    }

    /// Acquires `var`: waits until no other node owns it, takes it, and
    /// refreshes the pages of its scope from their homes.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchSyncVar`]; [`Error::Timeout`] naming the owner.
    pub fn acquire(&self, var: SyncVar) -> Result<()> {
        let base = self.var_base(var)?;
        let word = self.node.board().u32_at(base + V_LOCK)?;
        let me = self.node.id();
        wait::lock(word, me + 1, self.node.policy(), || {
            format!("synchronisation variable {} (node {me} acquiring)", var.0)
        })?
        .keep();
        if let Err(e) = self.write_back_scope(var) {
            wait::unlock(word);
            return Err(e);
        }
        Ok(())
    }

    /// Releases `var`: writes back the diffs of its scope, then frees it.
    ///
    /// # Errors
    ///
    /// [`Error::NotOwner`] if this node does not hold it; write-back errors
    /// (the variable stays held then, so the caller may retry).
    pub fn release(&self, var: SyncVar) -> Result<()> {
        let base = self.var_base(var)?;
        let board = self.node.board();
        let word = board.u32_at(base + V_LOCK)?;
        let me = self.node.id();
        let holder = wait::holder(word).map(|tag| tag - 1);
        if holder != Some(me) {
            return Err(Error::NotOwner {
                node: me,
                var: var.0,
                holder,
            });
        }
        self.write_back_scope(var)?;
        board
            .u32_at(base + V_LAST)?
            .store(me + 1, Ordering::Relaxed);
        board
            .u32_at(base + V_RELEASES)?
            .fetch_add(1, Ordering::Relaxed);
        wait::unlock(word);
        Ok(())
    }

    /// The node that last released `var`, if any did.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchSyncVar`].
    pub fn last_releaser(&self, var: SyncVar) -> Result<Option<u32>> {
        let base = self.var_base(var)?;
        let v = self
            .node
            .board()
            .u32_at(base + V_LAST)?
            .load(Ordering::Acquire);
        Ok(v.checked_sub(1))
    }

    /// Writes back every cached page (WB sends only the diffs) and drops
    /// them from the cache; returns the bytes changed.
    ///
    /// # Errors
    ///
    /// WB's errors.
    pub fn flush(&self) -> Result<usize> {
        let mut dirty = 0;
        for t in self.node.dsm_table()? {
            dirty += self.node.write_back(t.entry)?.dirty_bytes;
        }
        Ok(dirty)
    }

    fn write_back_scope(&self, var: SyncVar) -> Result<()> {
        let Some(ranges) = self.scopes.get(&var) else {
            return self.flush().map(drop);
        };
        for t in self.node.dsm_table()? {
            let in_scope = ranges.iter().any(|r| {
                t.page.home == r.home
                    && t.page.page >= r.first_page
                    && t.page.page < r.first_page + r.pages()
            });
            if in_scope {
                self.node.write_back(t.entry)?;
            }
        }
        Ok(())
    }

    /// Writes everything back, then waits until every node has reached
    /// the same barrier (AOTF-style flags); afterwards every node reads
    /// what any node wrote before it.
    ///
    /// # Errors
    ///
    /// WB's errors; [`Error::Timeout`] naming the nodes not arrived.
    pub fn barrier(&mut self) -> Result<()> {
        self.flush()?;
        self.epoch = self.epoch.wrapping_add(1);
        let epoch = self.epoch;
        let board = self.node.board();
        let nodes = board.config().nodes;
        let flag = |n: u32| board.u32_at(H_BARRIER_FLAGS + 4 * n as usize);
        flag(self.node.id())?.store(epoch, Ordering::Release);
        let door = Doorbell {
            bell: board.u32_at(H_BARRIER_BELL)?,
            sleepers: board.u32_at(H_BARRIER_SLEEPERS)?,
        };
        door.ring();
        let late = || -> Result<Vec<u32>> {
            let mut late = Vec::new();
            for n in 0..nodes {
                let f = flag(n)?.load(Ordering::Acquire);
                if (f.wrapping_sub(epoch) as i32) < 0 {
                    late.push(n);
                }
            }
            Ok(late)
        };
        wait::wait_for(
            self.node.policy(),
            door,
            || {
                format!(
                    "barrier {epoch}: nodes {:?} to arrive",
                    late().unwrap_or_default()
                )
            },
            || Ok(late()?.is_empty().then_some(())),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::board::Board;
    use crate::layout::BoardConfig;
    use crate::testutil::scratch_region;
    use crate::wait::WaitPolicy;
    use std::time::Duration;

    fn board(nodes: u32) -> Board {
        let cfg = BoardConfig {
            nodes,
            ..BoardConfig::default()
        };
        let region = scratch_region("rc", Board::required_len(&cfg).unwrap());
        Board::create(region, cfg).unwrap()
    }

    fn shared(b: &Board, n: u32) -> Shared {
        Shared::new(
            b.node(n, WaitPolicy::blocking(Duration::from_secs(20)))
                .unwrap(),
        )
    }

    #[test]
    fn acquire_sees_the_last_releasers_writes_and_not_before() {
        let b = board(2);
        let (a, z) = (shared(&b, 0), shared(&b, 1));
        let r = a.alloc(1, 2 * PAGE).unwrap();
        assert_eq!(r.first_page, 0);
        let lock = SyncVar(3);
        // A caches the range and reads zero.
        assert_eq!(a.read_u64(&r, PAGE + 8).unwrap(), 0);
        z.acquire(lock).unwrap();
        z.write_u64(&r, PAGE + 8, 5).unwrap();
        z.release(lock).unwrap();
        assert_eq!(a.last_releaser(lock).unwrap(), Some(1));
        // Without an acquire, A's cached copy is stale: that is the model.
        assert_eq!(a.read_u64(&r, PAGE + 8).unwrap(), 0);
        a.acquire(lock).unwrap();
        assert_eq!(a.read_u64(&r, PAGE + 8).unwrap(), 5);
        assert!(matches!(
            z.release(lock),
            Err(Error::NotOwner {
                node: 1,
                holder: Some(0),
                ..
            })
        ));
        a.release(lock).unwrap();
        assert!(matches!(
            a.acquire(SyncVar(16)),
            Err(Error::NoSuchSyncVar { .. })
        ));
        assert!(matches!(
            a.read_u64(&r, 2 * PAGE - 4),
            Err(Error::OutOfRange { .. })
        ));
    }

    #[test]
    fn a_bound_variable_moves_only_its_own_ranges() {
        let b = board(2);
        let (mut a, mut z) = (shared(&b, 0), shared(&b, 1));
        let x = a.alloc(0, 8).unwrap();
        let y = a.alloc(0, 8).unwrap();
        assert_eq!(y.first_page, 1);
        for s in [&mut a, &mut z] {
            s.bind(SyncVar(0), x);
            s.bind(SyncVar(1), y);
        }
        assert_eq!(a.read_u64(&x, 0).unwrap() + a.read_u64(&y, 0).unwrap(), 0);
        for (var, range, v) in [(0, x, 7), (1, y, 9)] {
            z.acquire(SyncVar(var)).unwrap();
            z.write_u64(&range, 0, v).unwrap();
            z.release(SyncVar(var)).unwrap();
        }
        a.acquire(SyncVar(0)).unwrap();
        assert_eq!(a.read_u64(&x, 0).unwrap(), 7);
        assert_eq!(a.read_u64(&y, 0).unwrap(), 0, "y is not in var 0's scope");
        a.release(SyncVar(0)).unwrap();
        let e = a.alloc(1, 64 * PAGE + 1).unwrap_err();
        assert!(
            matches!(
                e,
                Error::OutOfDsm {
                    node: 1,
                    wanted: 65,
                    free: 64
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn a_lock_protected_counter_counts_every_increment() {
        let nodes = 3u32;
        let rounds = 40u64;
        let b = board(nodes);
        let r = shared(&b, 0).alloc(1, PAGE).unwrap();
        std::thread::scope(|s| {
            for me in 0..nodes {
                let b = &b;
                s.spawn(move || {
                    let mut sh = shared(b, me);
                    for _ in 0..rounds {
                        sh.acquire(SyncVar(0)).unwrap();
                        let v = sh.read_u64(&r, 0).unwrap();
                        sh.write_u64(&r, 0, v + 1).unwrap();
                        // And this node's own word of the same page: only
                        // changed bytes go home, so nobody's word is undone.
                        let mine = sh.read_u64(&r, 64 + 8 * me as usize).unwrap();
                        sh.write_u64(&r, 64 + 8 * me as usize, mine + 1).unwrap();
                        sh.release(SyncVar(0)).unwrap();
                    }
                    sh.barrier().unwrap();
                    assert_eq!(sh.read_u64(&r, 0).unwrap(), rounds * u64::from(nodes));
                    for n in 0..nodes as usize {
                        assert_eq!(sh.read_u64(&r, 64 + 8 * n).unwrap(), rounds);
                    }
                    sh.barrier().unwrap();
                });
            }
        });
    }
}
