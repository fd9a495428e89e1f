//! Joining the job's HyphenLink board (`O2G_HYPHEN_REGION`).
//!
//! All processes map one shared region holding a [`Board`] of `size`
//! nodes (world rank = node number), configured with one AP1000 receive
//! ring per (receiver, sender) pair in the receiver's board memory, plus
//! the nodes' [`LivenessTable`] on the first page after the board. The
//! ranks meet in it as every emulated NIC's do (`emulated_region.rs`):
//!
//! - `shm` (default): rank 0 creates `/dev/shm/o2g-hl-<pid>-<nanos>`, lays
//!   the board out and publishes the name through PMI; after a barrier the
//!   others map it and attach; after a second barrier rank 0 unlinks it.
//! - `ivshmem`: everyone maps the BAR of the guest's first ivshmem-plain
//!   device, rank 0 formats it (the ring size is halved until the board
//!   fits the BAR), barrier, the others attach; an absolute path instead
//!   of `ivshmem` does the same with a pre-sized file (how the host tests
//!   that path).
//!
//! Ring capacity: `O2G_HYPHEN_RING_BYTES`, else `O2G_RCVBUF` (the ring is
//! the receive buffer), else 64 MiB / size² clamped to 16 KiB..1 MiB; the
//! largest frame is a quarter of it.

use std::sync::Arc;
use std::time::Duration;

use o2g_hyphen::liveness::{self, LivenessTable};
use o2g_hyphen::ring::{self, RingConfig};
use o2g_hyphen::{Board, BoardConfig, PAGE};
use o2g_nicmem::Region;

use super::unavailable;
use crate::config::{Config, HyphenRegion, HyphenWait};
use crate::error::{Error, Result};
use crate::pmi::Pmi;
use crate::transport::emulated_region::{self, Joined, Making, Meeting, Place};

const RING_BUDGET: usize = 64 << 20;
const RING_MAX: usize = 1 << 20;
const RING_DEFAULT_MIN: usize = 16 << 10;
pub(super) const RING_MIN: usize = 4 << 10;

/// PMI key of the `/dev/shm` name rank 0 publishes.
const REGION_KEY: &str = "o2g-hl-region";

/// The ring geometry for `capacity` bytes (a multiple of 64): frames of up
/// to a quarter of the ring.
fn ring_config(capacity: usize) -> RingConfig {
    RingConfig {
        capacity,
        max_payload: capacity / 4 - ring::HEADER_BYTES,
    }
}

pub(super) fn board_config(nodes: u32, capacity: usize) -> BoardConfig {
    BoardConfig {
        nodes,
        dsm_pages: 0,
        cache_pages: 0,
        twin_pages: 0,
        sync_vars: 0,
        ring: Some(ring_config(capacity)),
    }
}

/// Where the liveness table starts, and the bytes board plus table need.
pub(super) fn footprint(cfg: &BoardConfig) -> Result<(usize, usize)> {
    let board = Board::required_len(cfg).map_err(|e| Error::Config(format!("hyphenlink: {e}")))?;
    let table = board.next_multiple_of(PAGE);
    Ok((table, table + liveness::table_len(cfg.nodes)))
}

/// The ring capacity the environment asks for, or the default for `nodes`.
fn ring_capacity(config: &Config, nodes: u32) -> Result<usize> {
    let asked = config.hyphen.ring_bytes.or(config.rcvbuf);
    let n2 = (nodes as usize) * (nodes as usize);
    let cap = match asked {
        Some(c) => c / 64 * 64,
        None => {
            let share = RING_BUDGET / n2;
            let pow = if share == 0 { 0 } else { 1 << share.ilog2() };
            pow.clamp(RING_DEFAULT_MIN, RING_MAX)
        }
    };
    if !(RING_MIN..=1 << 30).contains(&cap) {
        return Err(Error::Config(format!(
            "hyphenlink ring of {cap} bytes: {RING_MIN} bytes to 1 GiB supported"
        )));
    }
    Ok(cap)
}

/// The board and liveness table every rank shares, and what is left of
/// the meeting ([`Joined::everyone_attached`]).
pub(super) struct Setup {
    pub(super) board: Board,
    pub(super) table: LivenessTable,
    pub(super) joined: Joined,
}

/// Joins the job's board (see the module documentation); settles how an
/// idle rank sleeps when the environment did not say (`sleep`).
pub(super) fn setup(
    config: &Config,
    pmi: &mut Pmi,
    sleep: &mut Option<HyphenWait>,
) -> Result<Setup> {
    let size = pmi.size();
    // A shared file every rank maps (the BAR of an ivshmem device, or a
    // pre-sized file standing in for one) is formatted by rank 0.
    let place = match &config.hyphen.region {
        HyphenRegion::Shm => Place::Shm,
        HyphenRegion::Ivshmem => Place::Ivshmem,
        HyphenRegion::File(path) => Place::File(path),
    };
    sleep.get_or_insert(if matches!(place, Place::Shm) {
        HyphenWait::Block
    } else {
        HyphenWait::Timed
    });
    let cap = ring_capacity(config, size)?;
    let make = |making: Making<'_>| match making {
        Making::Shm(name) => {
            let len = footprint(&board_config(size, cap))?.1;
            let region =
                Region::create_shm(name, len).map_err(|e| unavailable("creating the region", e))?;
            format_board(Arc::new(region), size, cap)
        }
        Making::Mapped(region) => {
            let mut cap = cap;
            while footprint(&board_config(size, cap))?.1 > region.len() {
                cap /= 2;
                if cap < RING_MIN {
                    return Err(Error::Config(format!(
                        "a shared region of {} bytes cannot hold a HyphenLink board of {size} \
                         nodes",
                        region.len()
                    )));
                }
            }
            format_board(Arc::new(region), size, cap)
        }
    };
    let attach = |region: Region| -> Result<Board> {
        let board = Board::attach(Arc::new(region), Duration::from_secs(10))
            .map_err(|e| unavailable("attaching to the board", e))?;
        if board.config().nodes != size {
            return Err(Error::Config(format!(
                "the HyphenLink board has {} nodes, the world {size} processes",
                board.config().nodes
            )));
        }
        Ok(board)
    };
    let meeting = Meeting {
        place,
        key: REGION_KEY,
        shm_prefix: "o2g-hl",
        job_id: false,
    };
    let (board, joined) = emulated_region::join(pmi, &meeting, unavailable, make, attach)?;
    let (at, _) = footprint(board.config())?;
    let table = LivenessTable::open(Arc::clone(board.region()), at, board.config().nodes)
        .map_err(table_err)?;
    Ok(Setup {
        board,
        table,
        joined,
    })
}

/// Rank 0: lays out a fresh board and liveness table in `region`.
fn format_board(region: Arc<Region>, size: u32, cap: usize) -> Result<Board> {
    let cfg = board_config(size, cap);
    let (at, _) = footprint(&cfg)?;
    let board = Board::create(Arc::clone(&region), cfg)
        .map_err(|e| unavailable("laying out the board", e))?;
    LivenessTable::format(region, at, size).map_err(table_err)?;
    Ok(board)
}

/// The transport's error for a liveness table that cannot be laid out or
/// opened.
fn table_err(e: o2g_hyphen::Error) -> Error {
    match e {
        o2g_hyphen::Error::Mem(e) => unavailable("control block", e),
        o2g_hyphen::Error::LayoutMismatch { .. } => unavailable(
            "control block",
            "not initialised by rank 0 (another board layout?)",
        ),
        e => unavailable("control block", e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_rings_shrink_with_the_world_and_explicit_sizes_are_checked() {
        let config = Config::from_lookup(|_| None).unwrap();
        assert_eq!(ring_capacity(&config, 2).unwrap(), RING_MAX);
        assert_eq!(ring_capacity(&config, 16).unwrap(), 256 << 10);
        assert_eq!(ring_capacity(&config, 64).unwrap(), RING_DEFAULT_MIN);
        let small = Config {
            rcvbuf: Some(16_400),
            ..config.clone()
        };
        assert_eq!(ring_capacity(&small, 3).unwrap(), 16_384);
        let mut asked = small.clone();
        asked.hyphen.ring_bytes = Some(64 << 10);
        assert_eq!(
            ring_capacity(&asked, 3).unwrap(),
            64 << 10,
            "its own variable first"
        );
        let tiny = Config {
            rcvbuf: Some(1000),
            ..config
        };
        assert!(matches!(ring_capacity(&tiny, 3), Err(Error::Config(_))));
        // Every default fits the frame geometry the board checks.
        for n in [1, 2, 7, 16, 64] {
            let cap = (RING_BUDGET / (n * n)).clamp(RING_DEFAULT_MIN, RING_MAX);
            ring_config(cap).validate().unwrap();
        }
    }
}
