//! Node liveness: which of the processes that share a board are still
//! there.
//!
//! The board has no link-level failure detection in this emulation, and a
//! node whose process dies leaves its words as they were, so waiting for
//! it costs a full [`crate::wait::WaitPolicy`] deadline. A program that
//! must notice a dead peer promptly (the MPI transport `hyphenlink`) keeps
//! a [`LivenessTable`] in the region, beside the board, and uses two
//! halves:
//!
//! - [`Heartbeat`]: this node's. Starting it marks the node `ALIVE` and
//!   starts a thread that bumps the node's beat counter every `period`.
//!   Dropping it (a clean exit) marks the node `CLOSED`; a process that
//!   calls `exit(3)` with it still running is marked `EXITED` by an
//!   `atexit` hook (`exit_hook.rs`). Either way peers learn at once that
//!   the node is gone. A process that is killed, or frozen, simply stops
//!   beating.
//! - [`PeerWatch`]: reads the other nodes' lines (loads only, no system
//!   call) and reports [`Liveness::Closed`], [`Liveness::Exited`], or
//!   [`Liveness::Silent`] when a node's beat stood still for longer than
//!   the watch's limit.
//!
//! The beat runs on its own thread, so a node that computes for a long
//! time outside any call into the board still counts as alive.
//!
//! # Layout
//!
//! ```text
//! +0             header line: magic u64 "O2GHLCTL" | 8 nodes u32
//! +64 * (1 + n)  node n's line: state u32 (0 until its heartbeat starts,
//!                then ALIVE, CLOSED or EXITED) | 4 a u32 the table leaves
//!                to its user (LivenessTable::spare) | 8 beat u64
//! ```
//!
//! Lines are 64 bytes apart, so no two nodes write one cache line.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use o2g_nicmem::Region;

use crate::error::{Error, Result};
use crate::exit_hook;

/// The header's magic number: the table was laid out by its creator.
const MAGIC: u64 = u64::from_le_bytes(*b"O2GHLCTL");
/// Offset of the header's node count.
const H_NODES: usize = 8;
/// Bytes of a line.
const LINE: usize = 64;
/// Offsets in a node's line.
const N_STATE: usize = 0;
const N_SPARE: usize = 4;
const N_BEAT: usize = 8;

/// Node states.
const ALIVE: u32 = 1;
const CLOSED: u32 = 2;
const EXITED: u32 = 3;

/// Bytes of a table for `nodes` nodes.
pub fn table_len(nodes: u32) -> usize {
    LINE * (1 + nodes as usize)
}

/// A liveness table in a shared region; see the module documentation.
///
/// # Invariants
///
/// `off..off + table_len(nodes)` of `region` was bounds-checked, and `off`
/// is 8-aligned.
#[derive(Clone, Debug)]
pub struct LivenessTable {
    region: Arc<Region>,
    off: usize,
    nodes: u32,
}

impl LivenessTable {
    /// Lays out a fresh table for `nodes` nodes at `off` of `region` (its
    /// creator does this once, before any node opens it): zeroes it, then
    /// writes the header, the magic last.
    ///
    /// # Errors
    ///
    /// [`Error::Mem`] when the table leaves the region or `off` is not
    /// 8-aligned.
    pub fn format(region: Arc<Region>, off: usize, nodes: u32) -> Result<Self> {
        let len = table_len(nodes);
        region.fill(off, len, 0)?;
        region
            .u32_at(off + H_NODES)?
            .store(nodes, Ordering::Relaxed);
        region.u64_at(off)?.store(MAGIC, Ordering::Release);
        // INVARIANT: `fill` checked the range, `u64_at` the alignment.
        Ok(Self { region, off, nodes })
    }

    /// Opens the table of `nodes` nodes its creator laid out at `off` of
    /// `region`.
    ///
    /// # Errors
    ///
    /// [`Error::Mem`] when the table leaves the region or `off` is not
    /// 8-aligned; [`Error::LayoutMismatch`] when no table was laid out
    /// there (not yet, or another layout).
    pub fn open(region: Arc<Region>, off: usize, nodes: u32) -> Result<Self> {
        region.check(off, table_len(nodes))?;
        let magic = region.u64_at(off)?.load(Ordering::Acquire);
        if magic != MAGIC {
            return Err(Error::LayoutMismatch {
                field: "liveness table magic",
                found: magic,
                expected: MAGIC,
            });
        }
        // INVARIANT: `check` checked the range, `u64_at` the alignment.
        Ok(Self { region, off, nodes })
    }

    /// How many nodes the table has.
    pub fn nodes(&self) -> u32 {
        self.nodes
    }

    /// The word of node `node`'s line that the table leaves to its user,
    /// zero after [`LivenessTable::format`] (the `hyphenlink` transport
    /// keeps its "waiting" flag there).
    ///
    /// # Panics
    ///
    /// If `node` is not a node of the table.
    pub fn spare(&self, node: u32) -> &AtomicU32 {
        self.word32(node, N_SPARE)
    }

    /// Where node `node`'s line starts in the region.
    fn line(&self, node: u32) -> usize {
        assert!(
            node < self.nodes,
            "node {node} of a {}-node liveness table",
            self.nodes
        );
        self.off + LINE * (1 + node as usize)
    }

    fn word32(&self, node: u32, field: usize) -> &AtomicU32 {
        self.region
            .u32_at(self.line(node) + field)
            .expect("the table was bounds-checked when it was opened")
    }

    fn state(&self, node: u32) -> &AtomicU32 {
        self.word32(node, N_STATE)
    }

    fn beat(&self, node: u32) -> &AtomicU64 {
        self.region
            .u64_at(self.line(node) + N_BEAT)
            .expect("the table was bounds-checked when it was opened")
    }
}

/// This node's heartbeat; see the module documentation.
#[derive(Debug)]
pub struct Heartbeat {
    table: LivenessTable,
    node: u32,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Heartbeat {
    /// Marks `node` alive in `table`, arms the exit hook that marks it
    /// exited, and starts beating every `period`.
    ///
    /// # Errors
    ///
    /// The thread could not be started (the node is then marked alive,
    /// and exited when the process exits).
    ///
    /// # Panics
    ///
    /// If `node` is not a node of the table.
    pub fn start(table: &LivenessTable, node: u32, period: Duration) -> std::io::Result<Self> {
        let state = table.line(node) + N_STATE;
        table.state(node).store(ALIVE, Ordering::SeqCst);
        exit_hook::arm(Arc::clone(&table.region), state, EXITED);
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (table, stop) = (table.clone(), Arc::clone(&stop));
            std::thread::Builder::new()
                .name("hyphen-heartbeat".into())
                .spawn(move || {
                    while !stop.load(Ordering::Acquire) {
                        table.beat(node).fetch_add(1, Ordering::Relaxed);
                        std::thread::park_timeout(period);
                    }
                })?
        };
        Ok(Self {
            table: table.clone(),
            node,
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
        let state = self.table.line(self.node) + N_STATE;
        exit_hook::disarm(&self.table.region, state);
        self.table.state(self.node).store(CLOSED, Ordering::SeqCst);
    }
}

/// What a [`PeerWatch`] knows about one node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Liveness {
    /// Neither gone nor silent.
    Alive,
    /// It dropped its heartbeat (left cleanly).
    Closed,
    /// Its process exited with the heartbeat still running.
    Exited,
    /// Its beat has not moved for this long (more than the limit).
    Silent(Duration),
}

/// Watches the other nodes' lines of a table.
#[derive(Debug)]
pub struct PeerWatch {
    table: LivenessTable,
    dead_after: Duration,
    /// Per node: the last beat seen and when it was first seen.
    last: Vec<(u64, Instant)>,
}

impl PeerWatch {
    /// A watch over `table` that calls a node silent once its beat stood
    /// still for longer than `dead_after`. Every node's beat counts as
    /// seen now.
    pub fn new(table: &LivenessTable, dead_after: Duration) -> Self {
        let now = Instant::now();
        let last = (0..table.nodes)
            .map(|n| (table.beat(n).load(Ordering::Relaxed), now))
            .collect();
        Self {
            table: table.clone(),
            dead_after,
            last,
        }
    }

    /// What is known about `node`: whether it left or exited (its state
    /// word, one load), and, given the time `now`, whether its beat stood
    /// still too long. The caller rations the clock and the beat check
    /// by passing `None`.
    ///
    /// # Panics
    ///
    /// If `node` is not a node of the table.
    pub fn status(&mut self, node: u32, now: Option<Instant>) -> Liveness {
        match self.table.state(node).load(Ordering::Acquire) {
            CLOSED => return Liveness::Closed,
            EXITED => return Liveness::Exited,
            _ => {}
        }
        let Some(now) = now else {
            return Liveness::Alive;
        };
        let beat = self.table.beat(node).load(Ordering::Relaxed);
        let (seen, since) = &mut self.last[node as usize];
        if beat != *seen {
            *seen = beat;
            *since = now;
            return Liveness::Alive;
        }
        let quiet = now.saturating_duration_since(*since);
        if quiet > self.dead_after {
            Liveness::Silent(quiet)
        } else {
            Liveness::Alive
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::testutil::scratch_region;

    /// The exit hook is one per process: the tests that arm it take turns.
    static HOOK_USERS: Mutex<()> = Mutex::new(());

    fn table(nodes: u32) -> LivenessTable {
        let region = scratch_region("liveness", 4096 + table_len(nodes));
        LivenessTable::format(region, 4096, nodes).unwrap()
    }

    #[test]
    fn a_table_opens_only_where_it_was_laid_out() {
        let region = scratch_region("liveness-open", 8192);
        assert!(matches!(
            LivenessTable::open(Arc::clone(&region), 64, 3),
            Err(Error::LayoutMismatch { .. })
        ));
        let made = LivenessTable::format(Arc::clone(&region), 64, 3).unwrap();
        made.spare(2).store(7, Ordering::Relaxed);
        let opened = LivenessTable::open(Arc::clone(&region), 64, 3).unwrap();
        assert_eq!(opened.nodes(), 3);
        assert_eq!(opened.spare(2).load(Ordering::Relaxed), 7);
        assert_eq!(opened.spare(1).load(Ordering::Relaxed), 0);
        // Lines of their own: the spare word is not the state or the beat.
        assert_eq!(
            region
                .u32_at(64 + 64 * 3 + 4)
                .unwrap()
                .load(Ordering::Relaxed),
            7
        );
        assert!(matches!(
            LivenessTable::open(Arc::clone(&region), 8192 - 64, 3),
            Err(Error::Mem(_))
        ));
        assert!(LivenessTable::format(region, 8192 - 64, 3).is_err());
    }

    #[test]
    fn beating_closing_and_silence() {
        let _turn = HOOK_USERS.lock().unwrap_or_else(|e| e.into_inner());
        let t = table(3);
        let hb = Heartbeat::start(&t, 1, Duration::from_millis(1)).unwrap();
        let mut watch = PeerWatch::new(&t, Duration::from_secs(3600));
        // Node 1 beats; node 2 never does, but the limit is far.
        let t0 = Instant::now();
        let first = t.beat(1).load(Ordering::Relaxed);
        while t.beat(1).load(Ordering::Relaxed) == first {
            assert!(t0.elapsed() < Duration::from_secs(10), "no beat");
            std::thread::yield_now();
        }
        assert_eq!(watch.status(1, Some(Instant::now())), Liveness::Alive);
        assert_eq!(watch.status(2, Some(Instant::now())), Liveness::Alive);
        assert_eq!(watch.status(2, None), Liveness::Alive);
        // Far in the future, node 2 has been silent that long.
        let later = Instant::now() + Duration::from_secs(7200);
        assert!(matches!(
            watch.status(2, Some(later)),
            Liveness::Silent(d) if d >= Duration::from_secs(7200)
        ));
        drop(hb);
        assert_eq!(watch.status(1, None), Liveness::Closed);
        // Closed for good: the thread stopped, the beat stands still.
        let beat = t.beat(1).load(Ordering::Relaxed);
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(t.beat(1).load(Ordering::Relaxed), beat);
    }

    #[test]
    fn the_exit_hook_marks_a_running_heartbeat_exited() {
        let _turn = HOOK_USERS.lock().unwrap_or_else(|e| e.into_inner());
        let t = table(2);
        let mut watch = PeerWatch::new(&t, Duration::from_secs(3600));
        let hb = Heartbeat::start(&t, 0, Duration::from_secs(3600)).unwrap();
        assert_eq!(watch.status(0, None), Liveness::Alive);
        // What `exit(3)` would run.
        exit_hook::on_exit();
        assert_eq!(watch.status(0, None), Liveness::Exited);
        drop(hb);
        // A dropped heartbeat disarms its hook.
        let hb = Heartbeat::start(&t, 1, Duration::from_secs(3600)).unwrap();
        drop(hb);
        exit_hook::on_exit();
        assert_eq!(watch.status(1, None), Liveness::Closed);
    }
}
