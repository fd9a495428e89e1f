//! Where everything of the emulated board lives in the shared region.
//!
//! ```text
//! 0            global header (one page)
//!              0 magic u64 "O2GHYPHN" | 8 version u32 | 12 ready u32
//!              16 nodes | 20 page size | 24 DSM pages per node | 28 cache pages
//!              32 twin pages | 36 FIFO depth | 40 sync variables
//!              44 ring capacity | 48 ring max payload   (all u32)
//!              56 total length u64
//!              64 logical -> physical node table, u32 x 64
//!              320 barrier flags, u32 x 64 (one word per node, AOTF-style)
//!              576 barrier doorbell u32 | 580 barrier sleepers u32
//! PAGE         synchronisation variables, 16 bytes each:
//!              lock word u32 (holder node + 1) | last releaser u32 (node + 1)
//!              | releases u32 | pad
//! then, per node n (each area page-aligned, `node_stride` apart):
//!   +0         command registers (PCR): lock u32 | command u32 | status u32
//!              | issued u32 | 16 arguments u64 x 4 | 48 results u64 x 2
//!   +64        home lock u32 | 68 DSM pages allocated u32
//!   +128       PB/EXT FIFO (see fifo.rs), 32 + 255 x 8 bytes
//!   +2304      DSM table: one 32-byte entry per cache page:
//!              flags u32 | home node u32 | DSM page u32 | cache page u32
//!              | twin page u32 | pad
//!   page-aligned after the table:
//!              timing model (see clock.rs): host clock u64 | 8 board
//!              engine u64 | 16..64 reserved | 64 FIFO slot stamps,
//!              u64 x 255 (padded to 2048 bytes) | 2112 DSM page stamps,
//!              u64 per DSM home page
//!   page-aligned after the model:
//!              diff staging area (what a WB "sends" to the home)
//!              DSM home pages, cache pages, twin pages (4 KiB each)
//!              AP1000 rings, one per sender s = 0..nodes (if configured)
//! ```

use crate::error::{Error, Result};
use crate::ring::RingConfig;

/// Size of a DSM page (and of cache and twin pages).
pub const PAGE: usize = 4096;
/// Depth of a PB/EXT FIFO: 32-bit task ids, as on the board.
pub const FIFO_DEPTH: usize = 255;
/// Most nodes a board can have.
pub const MAX_NODES: u32 = 64;
/// Layout version; a board of another version is refused at attach.
/// Version 2 added the timing model's area per node.
pub const VERSION: u32 = 2;

pub(crate) const MAGIC: u64 = u64::from_le_bytes(*b"O2GHYPHN");
pub(crate) const READY: u32 = 0x5245_4459; // "READY"

pub(crate) const H_MAGIC: usize = 0;
pub(crate) const H_VERSION: usize = 8;
pub(crate) const H_READY: usize = 12;
pub(crate) const H_NODES: usize = 16;
pub(crate) const H_PAGE: usize = 20;
pub(crate) const H_DSM_PAGES: usize = 24;
pub(crate) const H_CACHE_PAGES: usize = 28;
pub(crate) const H_TWIN_PAGES: usize = 32;
pub(crate) const H_FIFO_DEPTH: usize = 36;
pub(crate) const H_SYNC_VARS: usize = 40;
pub(crate) const H_RING_CAPACITY: usize = 44;
pub(crate) const H_RING_MAX_PAYLOAD: usize = 48;
pub(crate) const H_TOTAL: usize = 56;
pub(crate) const H_LOGICAL: usize = 64;
pub(crate) const H_BARRIER_FLAGS: usize = 320;
pub(crate) const H_BARRIER_BELL: usize = 576;
pub(crate) const H_BARRIER_SLEEPERS: usize = 580;

/// Bytes of one synchronisation variable.
pub(crate) const SYNC_VAR_BYTES: usize = 16;

pub(crate) const PCR_LOCK: usize = 0;
pub(crate) const PCR_CMD: usize = 4;
pub(crate) const PCR_STATUS: usize = 8;
pub(crate) const PCR_ISSUED: usize = 12;
pub(crate) const PCR_ARGS: usize = 16;
pub(crate) const PCR_RESULTS: usize = 48;
pub(crate) const NODE_HOME_LOCK: usize = 64;
pub(crate) const NODE_ALLOCATED: usize = 68;
pub(crate) const NODE_FIFO: usize = 128;
pub(crate) const NODE_TABLE: usize = 2304;
/// Bytes of one DSM table entry.
pub(crate) const ENTRY_BYTES: usize = 32;
/// Offsets in a node's timing-model area.
pub(crate) const MODEL_HOST: usize = 0;
pub(crate) const MODEL_ENGINE: usize = 8;
pub(crate) const MODEL_FIFO_STAMPS: usize = 64;
pub(crate) const MODEL_PAGE_STAMPS: usize = MODEL_FIFO_STAMPS + 2048;

/// Most pages of any one kind per node (keeps every offset far from
/// overflow).
const MAX_PAGES: u32 = 1 << 20;

/// The shape of an emulated HyphenLink cluster; every node must attach
/// with the same one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BoardConfig {
    /// Nodes, 1 to [`MAX_NODES`].
    pub nodes: u32,
    /// DSM pages each node is home to.
    pub dsm_pages: u32,
    /// Cache pages per node (one DSM table entry each).
    pub cache_pages: u32,
    /// Twin pages per node.
    pub twin_pages: u32,
    /// Synchronisation variables (for acquire/release).
    pub sync_vars: u32,
    /// One AP1000 receive ring per (receiver, sender) pair, if any.
    pub ring: Option<RingConfig>,
}

impl Default for BoardConfig {
    /// Two nodes, 64 DSM pages each, 32 cache and twin pages, 16
    /// synchronisation variables, no rings.
    fn default() -> Self {
        Self {
            nodes: 2,
            dsm_pages: 64,
            cache_pages: 32,
            twin_pages: 32,
            sync_vars: 16,
            ring: None,
        }
    }
}

/// The offsets a [`BoardConfig`] gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    pub(crate) cfg: BoardConfig,
    sync_base: usize,
    node_base: usize,
    node_stride: usize,
    model: usize,
    staging: usize,
    homes: usize,
    caches: usize,
    twins: usize,
    rings: usize,
    ring_stride: usize,
    total: usize,
}

/// Largest encoded diff of one page.
pub(crate) const STAGING_BYTES: usize = crate::diff::max_encoded(PAGE);

impl Layout {
    pub(crate) fn new(cfg: BoardConfig) -> Result<Self> {
        if cfg.nodes == 0 || cfg.nodes > MAX_NODES {
            return Err(Error::BadConfig(format!(
                "{} nodes: 1 to {MAX_NODES} supported",
                cfg.nodes
            )));
        }
        for (what, n) in [
            ("DSM pages", cfg.dsm_pages),
            ("cache pages", cfg.cache_pages),
            ("twin pages", cfg.twin_pages),
            ("synchronisation variables", cfg.sync_vars),
        ] {
            if n > MAX_PAGES {
                return Err(Error::BadConfig(format!("{n} {what}: at most {MAX_PAGES}")));
            }
        }
        if let Some(ring) = cfg.ring {
            ring.validate()?;
        }
        let page = |n: usize| n.next_multiple_of(PAGE);
        let sync_base = PAGE;
        let node_base = sync_base + page(cfg.sync_vars as usize * SYNC_VAR_BYTES);
        let model = page(NODE_TABLE + cfg.cache_pages as usize * ENTRY_BYTES);
        let staging = model + page(MODEL_PAGE_STAMPS + 8 * cfg.dsm_pages as usize);
        let homes = staging + page(STAGING_BYTES);
        let caches = homes + cfg.dsm_pages as usize * PAGE;
        let twins = caches + cfg.cache_pages as usize * PAGE;
        let rings = twins + cfg.twin_pages as usize * PAGE;
        let ring_stride = cfg.ring.map_or(0, |r| r.footprint());
        let node_stride = page(rings + ring_stride * cfg.nodes as usize);
        let total = node_stride
            .checked_mul(cfg.nodes as usize)
            .and_then(|n| n.checked_add(node_base))
            .ok_or_else(|| Error::BadConfig("board larger than the address space".into()))?;
        Ok(Self {
            cfg,
            sync_base,
            node_base,
            node_stride,
            model,
            staging,
            homes,
            caches,
            twins,
            rings,
            ring_stride,
            total,
        })
    }

    /// Bytes the board needs.
    pub(crate) fn total(&self) -> usize {
        self.total
    }

    pub(crate) fn sync_var(&self, var: u32) -> usize {
        self.sync_base + var as usize * SYNC_VAR_BYTES
    }

    /// Start of node `n`'s area (`n` already validated).
    pub(crate) fn node(&self, n: u32) -> usize {
        self.node_base + n as usize * self.node_stride
    }

    pub(crate) fn pcr(&self, n: u32) -> usize {
        self.node(n)
    }

    pub(crate) fn fifo(&self, n: u32) -> usize {
        self.node(n) + NODE_FIFO
    }

    pub(crate) fn entry(&self, n: u32, e: u32) -> usize {
        self.node(n) + NODE_TABLE + e as usize * ENTRY_BYTES
    }

    /// Start of node `n`'s timing-model area.
    pub(crate) fn model(&self, n: u32) -> usize {
        self.node(n) + self.model
    }

    /// The arrival stamp of slot `slot` of node `n`'s FIFO.
    pub(crate) fn fifo_stamp(&self, n: u32, slot: usize) -> usize {
        self.model(n) + MODEL_FIFO_STAMPS + 8 * slot
    }

    /// The stamp of node `n`'s DSM home page `p`: when its last WB was
    /// applied.
    pub(crate) fn page_stamp(&self, n: u32, p: u32) -> usize {
        self.model(n) + MODEL_PAGE_STAMPS + 8 * p as usize
    }

    pub(crate) fn staging(&self, n: u32) -> usize {
        self.node(n) + self.staging
    }

    pub(crate) fn home_page(&self, n: u32, p: u32) -> usize {
        self.node(n) + self.homes + p as usize * PAGE
    }

    pub(crate) fn cache_page(&self, n: u32, c: u32) -> usize {
        self.node(n) + self.caches + c as usize * PAGE
    }

    pub(crate) fn twin_page(&self, n: u32, t: u32) -> usize {
        self.node(n) + self.twins + t as usize * PAGE
    }

    /// The ring in `receiver`'s memory that `sender` writes.
    pub(crate) fn ring(&self, receiver: u32, sender: u32) -> Option<usize> {
        self.cfg.ring?;
        Some(self.node(receiver) + self.rings + sender as usize * self.ring_stride)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn areas_are_page_aligned_and_disjoint() {
        let cfg = BoardConfig {
            nodes: 3,
            ring: Some(RingConfig {
                capacity: 8192,
                max_payload: 1000,
            }),
            ..BoardConfig::default()
        };
        let l = Layout::new(cfg).unwrap();
        for n in 0..3 {
            assert_eq!(l.node(n) % PAGE, 0);
            assert!(l.entry(n, cfg.cache_pages - 1) + ENTRY_BYTES <= l.model(n));
            assert_eq!(l.model(n) % 8, 0);
            assert!(l.fifo_stamp(n, FIFO_DEPTH - 1) + 8 <= l.page_stamp(n, 0));
            assert!(l.page_stamp(n, cfg.dsm_pages - 1) + 8 <= l.staging(n));
            assert!(l.staging(n) + STAGING_BYTES <= l.home_page(n, 0));
            assert_eq!(l.home_page(n, cfg.dsm_pages), l.cache_page(n, 0));
            assert_eq!(l.cache_page(n, cfg.cache_pages), l.twin_page(n, 0));
            assert_eq!(l.twin_page(n, cfg.twin_pages), l.ring(n, 0).unwrap());
            assert!(l.ring(n, 2).unwrap() + cfg.ring.unwrap().footprint() <= l.node(n + 1));
        }
        assert_eq!(l.node(3), l.total());
        assert!(Layout::new(BoardConfig { nodes: 0, ..cfg }).is_err());
        assert!(Layout::new(BoardConfig { nodes: 65, ..cfg }).is_err());
    }
}
