//! [`Board`]: the emulated HyphenLink boards of a cluster, laid out in one
//! shared region, and [`Node`], one node's handle on it.
//!
//! One process (the launcher, or node 0) creates the board with
//! [`Board::create`]; every other process maps the same region and
//! [`Board::attach`]es, which waits (bounded) until the creator has
//! published the header and checks that the header matches the region and,
//! with [`Board::attach_expecting`], the caller's configuration, so
//! mismatched peers fail at once with [`Error::LayoutMismatch`].

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use o2g_nicmem::Region;

use crate::costs::Costs;
use crate::error::{Error, Result};
use crate::fifo;
use crate::layout::{self, BoardConfig, Layout, FIFO_DEPTH, MAX_NODES, PAGE};
use crate::ring::{RingConfig, RingReader, RingWriter};
use crate::wait::WaitPolicy;

/// The boards of every node, in one shared region. Cheap to clone; every
/// clone (and every process that attaches) sees the same memory.
#[derive(Clone, Debug)]
pub struct Board {
    region: Arc<Region>,
    layout: Layout,
}

/// One node's view of the board: its command registers, FIFO, DSM table
/// and caches, and the PB path to every other node.
///
/// A node is meant to be driven by one process; several threads may share
/// one `Node` (commands are serialised by the node's command-register
/// lock), but only one may run its EXT loop.
///
/// A node charges the timing model ([`Costs::HYPHENLINK`] unless
/// [`Node::with_costs`] or [`Node::unmodelled`] says otherwise; see
/// [`Node::now`]).
#[derive(Clone, Debug)]
pub struct Node {
    pub(crate) board: Board,
    pub(crate) id: u32,
    pub(crate) policy: WaitPolicy,
    pub(crate) costs: Option<Costs>,
}

impl Board {
    /// Bytes a region must have to hold a board of `cfg`.
    ///
    /// # Errors
    ///
    /// [`Error::BadConfig`].
    pub fn required_len(cfg: &BoardConfig) -> Result<usize> {
        Ok(Layout::new(*cfg)?.total())
    }

    /// Lays out a fresh board in `region` (zeroing it) and publishes it.
    /// The logical node table starts as the identity.
    ///
    /// # Errors
    ///
    /// [`Error::BadConfig`], or a region too small.
    pub fn create(region: Arc<Region>, cfg: BoardConfig) -> Result<Self> {
        let layout = Layout::new(cfg)?;
        region.check(0, layout.total())?;
        let r = &region;
        r.u32_at(layout::H_READY)?.store(0, Ordering::Release);
        r.fill(0, layout.total(), 0)?;
        let put = |off: usize, v: u32| -> Result<()> {
            r.u32_at(off)?.store(v, Ordering::Relaxed);
            Ok(())
        };
        put(layout::H_VERSION, layout::VERSION)?;
        put(layout::H_NODES, cfg.nodes)?;
        put(layout::H_PAGE, PAGE as u32)?;
        put(layout::H_DSM_PAGES, cfg.dsm_pages)?;
        put(layout::H_CACHE_PAGES, cfg.cache_pages)?;
        put(layout::H_TWIN_PAGES, cfg.twin_pages)?;
        put(layout::H_FIFO_DEPTH, FIFO_DEPTH as u32)?;
        put(layout::H_SYNC_VARS, cfg.sync_vars)?;
        let ring = cfg.ring.unwrap_or(RingConfig {
            capacity: 0,
            max_payload: 0,
        });
        put(layout::H_RING_CAPACITY, ring.capacity as u32)?;
        put(layout::H_RING_MAX_PAYLOAD, ring.max_payload as u32)?;
        r.u64_at(layout::H_TOTAL)?
            .store(layout.total() as u64, Ordering::Relaxed);
        for n in 0..cfg.nodes {
            put(layout::H_LOGICAL + 4 * n as usize, n)?;
            fifo::init(r, layout.fifo(n))?;
            if let Some(ring) = cfg.ring {
                for s in 0..cfg.nodes {
                    ring.init(r, layout.ring(n, s).expect("rings configured"))?;
                }
            }
        }
        r.u64_at(layout::H_MAGIC)?
            .store(layout::MAGIC, Ordering::Relaxed);
        r.u32_at(layout::H_READY)?
            .store(layout::READY, Ordering::Release);
        Ok(Self { region, layout })
    }

    /// Attaches to a board another process created, waiting up to
    /// `timeout` for it to be published, and takes its configuration from
    /// the header.
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`] (never published), [`Error::LayoutMismatch`]
    /// (another version, or a header that does not fit the region).
    pub fn attach(region: Arc<Region>, timeout: Duration) -> Result<Self> {
        let ready = region.u32_at(layout::H_READY)?;
        let start = Instant::now();
        while ready.load(Ordering::Acquire) != layout::READY {
            if start.elapsed() >= timeout {
                return Err(Error::Timeout {
                    what: format!("a board to be published in {}", region.path().display()),
                    after: start.elapsed(),
                });
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let get = |off: usize| -> Result<u32> { Ok(region.u32_at(off)?.load(Ordering::Relaxed)) };
        let magic = region.u64_at(layout::H_MAGIC)?.load(Ordering::Relaxed);
        mismatch("magic", magic, layout::MAGIC)?;
        mismatch(
            "version",
            get(layout::H_VERSION)?.into(),
            layout::VERSION.into(),
        )?;
        mismatch("page size", get(layout::H_PAGE)?.into(), PAGE as u64)?;
        mismatch(
            "FIFO depth",
            get(layout::H_FIFO_DEPTH)?.into(),
            FIFO_DEPTH as u64,
        )?;
        let capacity = get(layout::H_RING_CAPACITY)? as usize;
        let cfg = BoardConfig {
            nodes: get(layout::H_NODES)?,
            dsm_pages: get(layout::H_DSM_PAGES)?,
            cache_pages: get(layout::H_CACHE_PAGES)?,
            twin_pages: get(layout::H_TWIN_PAGES)?,
            sync_vars: get(layout::H_SYNC_VARS)?,
            ring: (capacity != 0).then_some(RingConfig {
                capacity,
                max_payload: get(layout::H_RING_MAX_PAYLOAD)? as usize,
            }),
        };
        let layout = Layout::new(cfg).map_err(|e| Error::Corrupt(format!("board header: {e}")))?;
        let total = region.u64_at(layout::H_TOTAL)?.load(Ordering::Relaxed);
        mismatch("total length", total, layout.total() as u64)?;
        if layout.total() > region.len() {
            return Err(Error::LayoutMismatch {
                field: "region length",
                found: region.len() as u64,
                expected: layout.total() as u64,
            });
        }
        Ok(Self { region, layout })
    }

    /// [`Board::attach`], then checks the board has exactly `cfg`.
    ///
    /// # Errors
    ///
    /// As [`Board::attach`]; [`Error::LayoutMismatch`] naming the first
    /// field that differs.
    pub fn attach_expecting(
        region: Arc<Region>,
        cfg: &BoardConfig,
        timeout: Duration,
    ) -> Result<Self> {
        let board = Self::attach(region, timeout)?;
        let have = board.layout.cfg;
        let ring = |c: &BoardConfig| c.ring.map_or((0, 0), |r| (r.capacity, r.max_payload));
        for (field, found, expected) in [
            ("nodes", have.nodes.into(), cfg.nodes.into()),
            ("DSM pages", have.dsm_pages.into(), cfg.dsm_pages.into()),
            (
                "cache pages",
                have.cache_pages.into(),
                cfg.cache_pages.into(),
            ),
            ("twin pages", have.twin_pages.into(), cfg.twin_pages.into()),
            (
                "sync variables",
                have.sync_vars.into(),
                cfg.sync_vars.into(),
            ),
            ("ring capacity", ring(&have).0 as u64, ring(cfg).0 as u64),
            ("ring max payload", ring(&have).1 as u64, ring(cfg).1 as u64),
        ] {
            mismatch(field, found, expected)?;
        }
        Ok(board)
    }

    /// The configuration.
    pub fn config(&self) -> &BoardConfig {
        &self.layout.cfg
    }

    /// The shared region.
    pub fn region(&self) -> &Arc<Region> {
        &self.region
    }

    pub(crate) fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Checks a node number.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchNode`].
    pub fn check_node(&self, node: u32) -> Result<()> {
        if node < self.layout.cfg.nodes {
            Ok(())
        } else {
            Err(Error::NoSuchNode {
                node,
                nodes: self.layout.cfg.nodes,
            })
        }
    }

    pub(crate) fn u32_at(&self, off: usize) -> Result<&AtomicU32> {
        Ok(self.region.u32_at(off)?)
    }

    pub(crate) fn u64_at(&self, off: usize) -> Result<&AtomicU64> {
        Ok(self.region.u64_at(off)?)
    }

    /// Points logical node `logical` at physical node `physical` (the PB
    /// translation table, shared by all nodes).
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchNode`] for either number.
    pub fn set_logical(&self, logical: u32, physical: u32) -> Result<()> {
        self.check_node(logical)?;
        self.check_node(physical)?;
        self.u32_at(layout::H_LOGICAL + 4 * logical as usize)?
            .store(physical, Ordering::Release);
        Ok(())
    }

    /// The physical node logical node `logical` stands for, validated.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchNode`]; [`Error::Corrupt`] if the table holds a node
    /// outside the board.
    pub fn physical(&self, logical: u32) -> Result<u32> {
        self.check_node(logical)?;
        let p = self
            .u32_at(layout::H_LOGICAL + 4 * logical as usize)?
            .load(Ordering::Acquire);
        if p >= self.layout.cfg.nodes {
            return Err(Error::Corrupt(format!(
                "logical node {logical} maps to node {p}, outside the board"
            )));
        }
        Ok(p)
    }

    /// The logical number of physical node `physical` (the first one that
    /// maps to it).
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchNode`] if no logical node maps to it.
    pub fn logical_of(&self, physical: u32) -> Result<u32> {
        self.check_node(physical)?;
        for l in 0..self.layout.cfg.nodes {
            if self.physical(l)? == physical {
                return Ok(l);
            }
        }
        Err(Error::NoSuchNode {
            node: physical,
            nodes: self.layout.cfg.nodes,
        })
    }

    /// A handle acting as node `id`, waiting as `policy` says, charging
    /// the timing model with [`Costs::HYPHENLINK`].
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchNode`].
    pub fn node(&self, id: u32, policy: WaitPolicy) -> Result<Node> {
        self.check_node(id)?;
        debug_assert!(id < MAX_NODES);
        Ok(Node {
            board: self.clone(),
            id,
            policy,
            costs: Some(Costs::HYPHENLINK),
        })
    }

    /// Writer of the ring in `receiver`'s memory reserved for `sender`.
    ///
    /// # Errors
    ///
    /// [`Error::BadConfig`] if the board has no rings; [`Error::NoSuchNode`].
    pub fn ring_writer(
        &self,
        receiver: u32,
        sender: u32,
        policy: WaitPolicy,
    ) -> Result<RingWriter> {
        let base = self.ring_base(receiver, sender)?;
        RingWriter::attach(Arc::clone(&self.region), base, sender, policy)
    }

    /// Reader of the ring in `receiver`'s memory reserved for `sender`.
    ///
    /// # Errors
    ///
    /// As [`Board::ring_writer`].
    pub fn ring_reader(
        &self,
        receiver: u32,
        sender: u32,
        policy: WaitPolicy,
    ) -> Result<RingReader> {
        let base = self.ring_base(receiver, sender)?;
        RingReader::attach(Arc::clone(&self.region), base, policy)
    }

    fn ring_base(&self, receiver: u32, sender: u32) -> Result<usize> {
        self.check_node(receiver)?;
        self.check_node(sender)?;
        self.layout
            .ring(receiver, sender)
            .ok_or_else(|| Error::BadConfig("the board has no AP1000 rings".into()))
    }
}

fn mismatch(field: &'static str, found: u64, expected: u64) -> Result<()> {
    if found == expected {
        Ok(())
    } else {
        Err(Error::LayoutMismatch {
            field,
            found,
            expected,
        })
    }
}

impl Node {
    /// This node's number.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The board.
    pub fn board(&self) -> &Board {
        &self.board
    }

    /// How this node waits.
    pub fn policy(&self) -> &WaitPolicy {
        &self.policy
    }

    /// The same node with another wait policy.
    pub fn with_policy(&self, policy: WaitPolicy) -> Node {
        Node {
            policy,
            ..self.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::scratch_region;

    #[test]
    fn attach_reads_the_creators_configuration_and_refuses_mismatches() {
        let cfg = BoardConfig {
            nodes: 3,
            ring: Some(RingConfig {
                capacity: 4096,
                max_payload: 512,
            }),
            ..BoardConfig::default()
        };
        let region = scratch_region("board", Board::required_len(&cfg).unwrap());
        Board::create(Arc::clone(&region), cfg).unwrap();
        let b = Board::attach_expecting(Arc::clone(&region), &cfg, Duration::from_secs(1)).unwrap();
        assert_eq!(*b.config(), cfg);
        let other = BoardConfig {
            dsm_pages: 65,
            ..cfg
        };
        let e = Board::attach_expecting(Arc::clone(&region), &other, Duration::from_secs(1))
            .unwrap_err();
        assert!(
            matches!(
                e,
                Error::LayoutMismatch {
                    field: "DSM pages",
                    found: 64,
                    expected: 65
                }
            ),
            "{e}"
        );
        region
            .u32_at(layout::H_VERSION)
            .unwrap()
            .store(9, Ordering::Relaxed);
        let e = Board::attach(Arc::clone(&region), Duration::from_secs(1)).unwrap_err();
        assert!(
            matches!(
                e,
                Error::LayoutMismatch {
                    field: "version",
                    ..
                }
            ),
            "{e}"
        );
        assert!(b.node(3, WaitPolicy::default()).is_err());
    }

    #[test]
    fn attach_to_an_unpublished_board_times_out() {
        let region = scratch_region("board-empty", 8192);
        let e = Board::attach(region, Duration::from_millis(10)).unwrap_err();
        assert!(matches!(e, Error::Timeout { .. }), "{e}");
    }

    #[test]
    fn the_logical_table_is_validated() {
        let cfg = BoardConfig::default();
        let region = scratch_region("board-logical", Board::required_len(&cfg).unwrap());
        let b = Board::create(Arc::clone(&region), cfg).unwrap();
        b.set_logical(0, 1).unwrap();
        b.set_logical(1, 0).unwrap();
        assert_eq!(b.physical(0).unwrap(), 1);
        assert_eq!(b.logical_of(0).unwrap(), 1);
        assert!(b.set_logical(2, 0).is_err());
        region
            .u32_at(layout::H_LOGICAL)
            .unwrap()
            .store(77, Ordering::Relaxed);
        assert!(matches!(b.physical(0), Err(Error::Corrupt(_))));
    }
}
