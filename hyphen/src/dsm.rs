//! DSM on the board: home pages, cache pages, twins, the DSM table, and
//! the CACHE and WB primitives.
//!
//! Every DSM page (4 KiB) has a *home* node, in whose board memory the
//! page lives; a [`GlobalPage`] names it as (home, page). A node works on a
//! page in its own *cache* memory:
//!
//! - **CACHE** (home, page): if the DSM table already has the page, return
//!   its entry. Otherwise take a free table entry (its cache page) and a
//!   free twin page, copy the page from its home (a local copy, or on the
//!   real board a remote read over the link) into the cache page, copy it
//!   again into the twin, and record (node, DSM page, cache page, twin
//!   page, flags) in the table.
//! - The host then reads and writes the cache page freely
//!   ([`Node::cache_read`], [`Node::cache_write`]).
//! - **WB** (entry): diff the cache page against its twin
//!   (see diff.rs), put the encoded diff in this node's staging area (what
//!   the board would send), and have the home apply it: the home reads the
//!   diff, validates it and writes only the changed bytes into the home
//!   page. Then the twin and the table entry are freed.
//!
//! Because only changed bytes travel, two nodes that wrote disjoint bytes
//! of the same page and both write back leave both writes at home: the
//! multiple-writer property, without any page ownership.
//!
//! # DSM table entry (32 bytes, one per cache page)
//!
//! ```text
//! 0 flags u32 (1 VALID, 2 TWIN) | 4 home node | 8 DSM page | 12 cache page
//! 16 twin page | 20..32 reserved
//! ```
//!
//! The table is written only by its node's commands (under the node's
//! command lock); entries are validated when read all the same.
//!
//! # Locks
//!
//! Lock order: the issuing node's command lock (pcr.rs), then the home
//! node's *home lock*. The home lock makes applying a diff atomic with
//! respect to a CACHE copying the same home's pages: a CACHE sees a page
//! before or after a WB, never half of it.

use std::sync::atomic::Ordering;

use crate::board::Node;
use crate::costs::Ps;
use crate::diff::{self, DiffStats};
use crate::error::{Error, Result};
use crate::layout::{NODE_HOME_LOCK, PAGE, STAGING_BYTES};
use crate::pcr::{CMD_CACHE, CMD_DISCARD, CMD_WB};
use crate::wait::{self, LockGuard};

const F_VALID: u32 = 1;
const F_TWIN: u32 = 2;

const E_FLAGS: usize = 0;
const E_HOME: usize = 4;
const E_PAGE: usize = 8;
const E_CACHE: usize = 12;
const E_TWIN: usize = 16;

/// A DSM page: its home node and its number there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GlobalPage {
    /// The node whose board memory holds the page.
    pub home: u32,
    /// The page's number among its home's DSM pages.
    pub page: u32,
}

/// A live entry of a node's DSM table (and so one of its cache pages).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CacheEntry(pub u32);

/// One DSM table entry, as the board holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableEntry {
    /// The entry (= its cache page).
    pub entry: CacheEntry,
    /// The DSM page cached there.
    pub page: GlobalPage,
    /// The cache page.
    pub cache_page: u32,
    /// The twin page, if a twin is kept.
    pub twin_page: Option<u32>,
}

impl Node {
    /// CACHE: brings `page` into this node's cache (with a twin) and
    /// returns its entry; an already cached page returns its entry.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchNode`], [`Error::NoSuchPage`], [`Error::CacheFull`],
    /// [`Error::TwinFull`], [`Error::Timeout`] on a lock.
    pub fn cache(&self, page: GlobalPage) -> Result<CacheEntry> {
        let r = self.command(CMD_CACHE, [page.home.into(), page.page.into(), 0, 0])?;
        Ok(CacheEntry(r[0] as u32))
    }

    /// WB: sends the diff of `entry` against its twin home, where it is
    /// applied, and frees the entry and its twin.
    ///
    /// # Errors
    ///
    /// [`Error::NotCached`], [`Error::Timeout`] on a lock,
    /// [`Error::Corrupt`].
    pub fn write_back(&self, entry: CacheEntry) -> Result<DiffStats> {
        let r = self.command(CMD_WB, [entry.0.into(), 0, 0, 0])?;
        Ok(DiffStats {
            dirty_bytes: r[0] as usize,
            encoded_bytes: (r[1] as u32) as usize,
            runs: (r[1] >> 32) as usize,
        })
    }

    /// Drops `entry` without writing it back (its changes are lost).
    ///
    /// # Errors
    ///
    /// [`Error::NotCached`].
    pub fn discard(&self, entry: CacheEntry) -> Result<()> {
        self.command(CMD_DISCARD, [entry.0.into(), 0, 0, 0])
            .map(drop)
    }

    /// The entry caching `page`, if any.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupt`] table entries.
    pub fn lookup(&self, page: GlobalPage) -> Result<Option<CacheEntry>> {
        Ok(self
            .dsm_table()?
            .into_iter()
            .find(|e| e.page == page)
            .map(|e| e.entry))
    }

    /// The live entries of this node's DSM table.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupt`] table entries.
    pub fn dsm_table(&self) -> Result<Vec<TableEntry>> {
        let mut out = Vec::new();
        for e in 0..self.board.config().cache_pages {
            if let Some(t) = read_entry(self, e)? {
                out.push(t);
            }
        }
        Ok(out)
    }

    /// Copies bytes of the cached page `entry` at `offset` into `buf`.
    ///
    /// # Errors
    ///
    /// [`Error::NotCached`], [`Error::OutOfRange`].
    pub fn cache_read(&self, entry: CacheEntry, offset: usize, buf: &mut [u8]) -> Result<()> {
        let at = self.cache_span(entry, offset, buf.len())?;
        Ok(self.board.region().read(at, buf)?)
    }

    /// Writes `data` into the cached page `entry` at `offset`.
    ///
    /// # Errors
    ///
    /// [`Error::NotCached`], [`Error::OutOfRange`].
    pub fn cache_write(&self, entry: CacheEntry, offset: usize, data: &[u8]) -> Result<()> {
        let at = self.cache_span(entry, offset, data.len())?;
        Ok(self.board.region().write(at, data)?)
    }

    fn cache_span(&self, entry: CacheEntry, offset: usize, len: usize) -> Result<usize> {
        in_page(offset, len)?;
        let t = read_entry(self, entry.0)?.ok_or(Error::NotCached {
            node: self.id,
            entry: entry.0,
        })?;
        Ok(self.board.layout().cache_page(self.id, t.cache_page) + offset)
    }

    /// Reads a home page directly (no cache, no twin): the home node's own
    /// access to its DSM memory, or a remote read.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchNode`], [`Error::NoSuchPage`], [`Error::OutOfRange`].
    pub fn home_read(&self, page: GlobalPage, offset: usize, buf: &mut [u8]) -> Result<()> {
        check_page(self, page)?;
        in_page(offset, buf.len())?;
        let at = self.board.layout().home_page(page.home, page.page) + offset;
        Ok(self.board.region().read(at, buf)?)
    }

    /// Writes into one of this node's own home pages directly (to set up
    /// data others will CACHE).
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchPage`], [`Error::OutOfRange`].
    pub fn home_write(&self, page: u32, offset: usize, data: &[u8]) -> Result<()> {
        let page = GlobalPage {
            home: self.id,
            page,
        };
        check_page(self, page)?;
        in_page(offset, data.len())?;
        let at = self.board.layout().home_page(page.home, page.page) + offset;
        Ok(self.board.region().write(at, data)?)
    }
}

fn in_page(offset: usize, len: usize) -> Result<()> {
    match offset.checked_add(len) {
        Some(end) if end <= PAGE => Ok(()),
        _ => Err(Error::OutOfRange {
            offset,
            len,
            limit: PAGE,
        }),
    }
}

fn check_page(node: &Node, page: GlobalPage) -> Result<()> {
    node.board.check_node(page.home)?;
    let pages = node.board.config().dsm_pages;
    if page.page >= pages {
        return Err(Error::NoSuchPage {
            node: page.home,
            page: page.page,
            pages,
        });
    }
    Ok(())
}

/// Entry `e` of `node`'s table if it is live, validated.
fn read_entry(node: &Node, e: u32) -> Result<Option<TableEntry>> {
    let cfg = node.board.config();
    if e >= cfg.cache_pages {
        return Err(Error::NotCached {
            node: node.id,
            entry: e,
        });
    }
    let base = node.board.layout().entry(node.id, e);
    let word =
        |off: usize| -> Result<u32> { Ok(node.board.u32_at(base + off)?.load(Ordering::Relaxed)) };
    let flags = node.board.u32_at(base + E_FLAGS)?.load(Ordering::Acquire);
    if flags & F_VALID == 0 {
        return Ok(None);
    }
    let page = GlobalPage {
        home: word(E_HOME)?,
        page: word(E_PAGE)?,
    };
    let cache_page = word(E_CACHE)?;
    let twin = word(E_TWIN)?;
    let twin_ok = flags & F_TWIN == 0 || twin < cfg.twin_pages;
    if check_page(node, page).is_err() || cache_page != e || !twin_ok {
        return Err(Error::Corrupt(format!(
            "node {}: DSM table entry {e} names node {}, page {}, cache page {cache_page}, \
             twin page {twin}",
            node.id, page.home, page.page
        )));
    }
    Ok(Some(TableEntry {
        entry: CacheEntry(e),
        page,
        cache_page,
        twin_page: (flags & F_TWIN != 0).then_some(twin),
    }))
}

fn home_lock<'a>(node: &'a Node, home: u32) -> Result<LockGuard<'a>> {
    let word = node
        .board
        .u32_at(node.board.layout().node(home) + NODE_HOME_LOCK)?;
    wait::lock(word, node.id + 1, &node.policy, || {
        format!("node {home}'s home lock")
    })
}

/// The board's CACHE (runs under `node`'s command lock) of a command
/// issued at `issued`: the entry, and when the board was done.
pub(crate) fn board_cache(node: &Node, home: u32, page: u32, issued: Ps) -> Result<(u32, Ps)> {
    let wanted = GlobalPage { home, page };
    check_page(node, wanted)?;
    let cfg = *node.board.config();
    let mut free_entry = None;
    let mut twin_used = vec![false; cfg.twin_pages as usize];
    for e in 0..cfg.cache_pages {
        match read_entry(node, e)? {
            Some(t) if t.page == wanted => return Ok((e, node.command_decoded(issued)?)),
            Some(t) => {
                if let Some(tw) = t.twin_page {
                    twin_used[tw as usize] = true;
                }
            }
            None => {
                free_entry.get_or_insert(e);
            }
        }
    }
    let e = free_entry.ok_or(Error::CacheFull(node.id))?;
    let twin = twin_used
        .iter()
        .position(|used| !used)
        .ok_or(Error::TwinFull(node.id))? as u32;
    let l = node.board.layout();
    let r = node.board.region();
    let cache_at = l.cache_page(node.id, e);
    let stamp = node.page_stamp(wanted)?;
    let ready = {
        let _home = home_lock(node, home)?;
        r.copy_within(l.home_page(home, page), cache_at, PAGE)?;
        // When the copy just made was last written at home.
        stamp.load(Ordering::Acquire)
    };
    let done = node.cache_timing(home, issued, ready)?;
    r.copy_within(cache_at, l.twin_page(node.id, twin), PAGE)?;
    let base = l.entry(node.id, e);
    for (off, v) in [(E_HOME, home), (E_PAGE, page), (E_CACHE, e), (E_TWIN, twin)] {
        node.board.u32_at(base + off)?.store(v, Ordering::Relaxed);
    }
    node.board
        .u32_at(base + E_FLAGS)?
        .store(F_VALID | F_TWIN, Ordering::Release);
    Ok((e, done))
}

/// The board's WB (runs under `node`'s command lock) of a command issued
/// at `issued`: what the diff held, and when the board was done.
pub(crate) fn board_write_back(node: &Node, e: u32, issued: Ps) -> Result<(DiffStats, Ps)> {
    let t = read_entry(node, e)?.ok_or(Error::NotCached {
        node: node.id,
        entry: e,
    })?;
    let l = node.board.layout();
    let r = node.board.region();
    let mut page = vec![0u8; PAGE];
    r.read(l.cache_page(node.id, t.cache_page), &mut page)?;
    let mut twin = vec![0u8; PAGE];
    match t.twin_page {
        Some(tw) => r.read(l.twin_page(node.id, tw), &mut twin)?,
        // No twin: every byte counts as changed (a whole-page write back).
        None => twin.iter_mut().zip(&page).for_each(|(t, p)| *t = !*p),
    }
    let mut encoded = Vec::with_capacity(STAGING_BYTES);
    let stats = diff::encode(&page, &twin, &mut encoded);
    let timing = node.wb_timing(t.page.home, issued, &stats)?;
    // "Send": the diff goes out of this node's board memory...
    let staging = l.staging(node.id);
    r.write(staging, &encoded)?;
    // ...and the home board applies it.
    let applied = node.costs().is_some().then_some(timing.applied);
    apply_at_home(node, t.page, staging, encoded.len(), applied)?;
    node.board
        .u32_at(l.entry(node.id, e) + E_FLAGS)?
        .store(0, Ordering::Release);
    Ok((stats, timing.done))
}

/// The home's side of a WB: reads the diff at `staging`, validates it and
/// writes its runs into the home page, under the home lock, and records
/// in the page's stamp that the page changed at `applied` (modelled
/// handles only).
fn apply_at_home(
    node: &Node,
    page: GlobalPage,
    staging: usize,
    len: usize,
    applied: Option<Ps>,
) -> Result<()> {
    if len > STAGING_BYTES {
        return Err(Error::Corrupt(format!(
            "diff of {len} bytes exceeds {STAGING_BYTES}"
        )));
    }
    let r = node.board.region();
    let mut received = vec![0u8; len];
    r.read(staging, &mut received)?;
    let runs = diff::runs(&received, PAGE)?;
    let at = node.board.layout().home_page(page.home, page.page);
    let stamp = node.page_stamp(page)?;
    let _home = home_lock(node, page.home)?;
    for (off, bytes) in runs {
        r.write(at + off, bytes)?;
    }
    if let Some(t) = applied {
        stamp.fetch_max(t, Ordering::AcqRel);
    }
    Ok(())
}

/// The board's DISCARD.
pub(crate) fn board_discard(node: &Node, e: u32) -> Result<()> {
    read_entry(node, e)?.ok_or(Error::NotCached {
        node: node.id,
        entry: e,
    })?;
    let base = node.board.layout().entry(node.id, e);
    node.board
        .u32_at(base + E_FLAGS)?
        .store(0, Ordering::Release);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::board::Board;
    use crate::layout::BoardConfig;
    use crate::pcr::{STATUS_FAILED, STATUS_OK};
    use crate::testutil::scratch_region;
    use crate::wait::WaitPolicy;
    use std::sync::Barrier;
    use std::time::Duration;

    fn board(cfg: BoardConfig) -> Board {
        let region = scratch_region("dsm", Board::required_len(&cfg).unwrap());
        Board::create(region, cfg).unwrap()
    }

    fn policy() -> WaitPolicy {
        WaitPolicy::blocking(Duration::from_secs(20))
    }

    #[test]
    fn two_writers_of_disjoint_bytes_both_land_at_home() {
        let b = board(BoardConfig {
            nodes: 3,
            ..BoardConfig::default()
        });
        let page = GlobalPage { home: 0, page: 5 };
        let home = b.node(0, policy()).unwrap();
        home.home_write(5, 0, &[0xee; PAGE]).unwrap();
        let both_cached = Barrier::new(2);
        std::thread::scope(|s| {
            for me in 1..3u32 {
                let (b, both_cached) = (&b, &both_cached);
                s.spawn(move || {
                    let n = b.node(me, policy()).unwrap();
                    let e = n.cache(page).unwrap();
                    // Both hold a twin of the same old page before either
                    // writes back.
                    both_cached.wait();
                    // Node 1 writes the even bytes, node 2 the odd ones.
                    for i in (me as usize - 1..PAGE).step_by(2) {
                        n.cache_write(e, i, &[me as u8]).unwrap();
                    }
                    let stats = n.write_back(e).unwrap();
                    assert_eq!(stats.dirty_bytes, PAGE / 2);
                    assert_eq!(stats.runs, PAGE / 2);
                    assert!(n.lookup(page).unwrap().is_none());
                });
            }
        });
        let mut got = vec![0u8; PAGE];
        home.home_read(page, 0, &mut got).unwrap();
        for (i, &v) in got.iter().enumerate() {
            assert_eq!(v, 1 + (i % 2) as u8, "byte {i}");
        }
    }

    #[test]
    fn cache_fetches_from_home_and_write_back_sends_only_changes() {
        let b = board(BoardConfig {
            nodes: 2,
            cache_pages: 2,
            twin_pages: 1,
            ..BoardConfig::default()
        });
        let n0 = b.node(0, policy()).unwrap();
        let n1 = b.node(1, policy()).unwrap();
        n1.home_write(3, 100, b"remote home").unwrap();
        let p = GlobalPage { home: 1, page: 3 };
        let e = n0.cache(p).unwrap();
        assert_eq!(n0.cache(p).unwrap(), e, "a hit returns the same entry");
        let mut buf = [0u8; 11];
        n0.cache_read(e, 100, &mut buf).unwrap();
        assert_eq!(&buf, b"remote home");
        let t = n0.dsm_table().unwrap();
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].page, p);
        assert!(t[0].twin_page.is_some());
        // One twin page only: a second page cannot be cached.
        let q = GlobalPage { home: 0, page: 0 };
        assert!(matches!(n0.cache(q), Err(Error::TwinFull(0))));
        assert_eq!(n0.command_status().unwrap(), STATUS_FAILED);
        n0.cache_write(e, 107, b"HOME").unwrap();
        // Home changes its copy meanwhile, elsewhere in the page.
        n1.home_write(3, 0, b"untouched").unwrap();
        let s = n0.write_back(e).unwrap();
        assert_eq!(n0.command_status().unwrap(), STATUS_OK);
        assert_eq!((s.dirty_bytes, s.runs, s.encoded_bytes), (4, 1, 4 + 4 + 4));
        let mut home = [0u8; 120];
        n1.home_read(p, 0, &mut home).unwrap();
        assert_eq!(&home[..9], b"untouched");
        assert_eq!(&home[100..111], b"remote HOME");
        assert!(matches!(n0.write_back(e), Err(Error::NotCached { .. })));
        assert!(matches!(
            n0.cache_read(e, 0, &mut buf),
            Err(Error::NotCached { .. })
        ));
        // Twin freed: the other page can be cached now, then discarded.
        let e2 = n0.cache(q).unwrap();
        assert!(matches!(
            n0.cache_write(e2, PAGE - 1, b"xy"),
            Err(Error::OutOfRange { .. })
        ));
        n0.discard(e2).unwrap();
        assert!(n0.dsm_table().unwrap().is_empty());
        assert!(matches!(
            n0.cache(GlobalPage { home: 2, page: 0 }),
            Err(Error::NoSuchNode { .. })
        ));
        assert!(matches!(
            n0.cache(GlobalPage { home: 1, page: 64 }),
            Err(Error::NoSuchPage { .. })
        ));
    }

    #[test]
    fn a_corrupt_table_entry_is_refused() {
        let b = board(BoardConfig::default());
        let n = b.node(0, policy()).unwrap();
        let e = n.cache(GlobalPage { home: 1, page: 0 }).unwrap();
        let at = b.layout().entry(0, e.0) + E_PAGE;
        b.u32_at(at).unwrap().store(1 << 30, Ordering::Relaxed);
        assert!(matches!(n.write_back(e), Err(Error::Corrupt(_))));
        assert!(matches!(n.dsm_table(), Err(Error::Corrupt(_))));
    }
}
