//! Where everything lives in the shared region: the global header, and per
//! node the LLCM, the status page, the send windows and the two SO-DIMM
//! banks. All offsets in the crate are computed here.
//!
//! ```text
//! region:   [ header 4 KiB | node 0 | node 1 | ... | node N-1 ]
//! node:     [ LLCM 128 KiB | status 4 KiB | windows 4 KiB | model 4 KiB |
//!             stamps 128 KiB | bank 0 | bank 1 ]
//! LLCM:     0x00000 SYNC_ENTRY words, a u32 per node, 8 bytes apart (the
//!                   model stamps 8-byte words: no two nodes share one)
//!           0x00100 byte flags (one per peer: "look at my flag area")
//!           0x00200 flag areas, 64 B per peer
//!           0x00a00 all-to-all barrier words (u32, one 8-byte word per node
//!                   for even epochs, then one per node for odd ones)
//!           0x00c00 SYNC_PERMIT word (u32)
//!           0x01000 BOTF landing slots, 512 B per peer
//!           0x05000 free for applications (76 KiB)
//!           0x18000 PUSH staging used by DIMM_Send (32 KiB)
//! status:   +0 bank-select word, +64 ACK words (16 x u64),
//!           +256 header seeds (HTLB, one u64 per destination)
//! windows:  two BOTF send windows of 512 B (48 B header + 464 B payload)
//! model:    the timing model's clocks (see the `vclock` module): +0 host,
//!           +8 send engine, +16 core PU, +24 network bank's last arrival,
//!           +32 BOTF windows' free times (2 x u64), +48 staging free time,
//!           +64 ACK arrival times (16 x u64), +256 receive engine per
//!           source (one u64 per node)
//! stamps:   the arrival time of the last remote write, per LLCM word of 8 B
//! bank:     [ DIMM_Send receive buffers: N x bufs_per_peer x buf_size | free ]
//! ```

use std::sync::atomic::Ordering;

use o2g_nicmem::Region;

use crate::error::{Error, Result};

/// "O2GDIMM1" as a little-endian u64.
pub const MAGIC: u64 = u64::from_le_bytes(*b"O2GDIMM1");
/// Layout version; bumped on any change of the map above.
pub const VERSION: u32 = 3;
/// Size of the LLCM of each node.
pub const LLCM_SIZE: usize = 128 * 1024;
/// Most nodes one region can hold (bounded by the LLCM per-peer areas).
pub const MAX_NODES: u32 = 32;
/// Size of one BOTF packet (window or landing slot).
pub const BOTF_PACKET: usize = 512;
/// Header bytes at the start of a BOTF send window.
pub const BOTF_HEADER: usize = 48;
/// Most payload bytes one BOTF packet carries.
pub const BOTF_MAX_PAYLOAD: usize = BOTF_PACKET - BOTF_HEADER;
/// Number of ACK words per node.
pub const ACK_WORDS: usize = 16;

const PAGE: usize = 4096;
const HEADER_LEN: usize = PAGE;

/// LLCM offset of node 0's SYNC_ENTRY words (a u32 per node, 8 bytes apart).
pub const LLCM_SYNC_ENTRY: usize = 0x0;
/// LLCM offset of every node's SYNC_PERMIT word (u32).
pub const LLCM_SYNC_PERMIT: usize = 0xc00;
/// LLCM offset of the byte flags, one byte per peer.
pub const LLCM_BYTE_FLAGS: usize = 0x100;
/// LLCM offset of the flag areas.
pub const LLCM_FLAG_AREAS: usize = 0x200;
/// Size of one flag area.
pub const FLAG_AREA: usize = 64;
/// LLCM offset of the all-to-all barrier's words: per node a u32 in an
/// 8-byte word of its own (the model stamps 8-byte words) for even epochs,
/// then the same for odd ones.
pub const LLCM_ALL_ARRIVED: usize = 0xa00;
/// LLCM offset of the BOTF landing slots.
pub const LLCM_BOTF_SLOTS: usize = 0x1000;
/// First LLCM byte free for applications.
pub const LLCM_USER: usize = 0x5000;
/// LLCM offset of the PUSH staging area.
pub const LLCM_STAGING: usize = 0x18000;
/// Size of the PUSH staging area (the largest PUSH DIMM_Send issues).
pub const STAGING_SIZE: usize = LLCM_SIZE - LLCM_STAGING;

const STATUS: usize = LLCM_SIZE;
const STATUS_BANK: usize = 0;
const STATUS_WINDOWS: usize = 8;
const STATUS_ACK: usize = 64;
const STATUS_SEEDS: usize = 256;
const WINDOWS: usize = STATUS + PAGE;
const MODEL: usize = WINDOWS + PAGE;
const MODEL_ACK: usize = 64;
const MODEL_RX: usize = 256;
const STAMPS: usize = MODEL + PAGE;
const BANKS: usize = STAMPS + LLCM_SIZE;

// The fixed map must fit: per-peer areas within their ranges.
const _: () = assert!(LLCM_SYNC_ENTRY + 8 * MAX_NODES as usize <= LLCM_BYTE_FLAGS);
const _: () = assert!(LLCM_ALL_ARRIVED + 16 * MAX_NODES as usize <= LLCM_SYNC_PERMIT);
const _: () = assert!(LLCM_SYNC_PERMIT + 8 <= LLCM_BOTF_SLOTS);
const _: () = assert!(LLCM_BYTE_FLAGS + MAX_NODES as usize <= LLCM_FLAG_AREAS);
const _: () = assert!(LLCM_FLAG_AREAS + FLAG_AREA * MAX_NODES as usize <= LLCM_ALL_ARRIVED);
const _: () = assert!(LLCM_BOTF_SLOTS + BOTF_PACKET * MAX_NODES as usize <= LLCM_USER);
const _: () = assert!(STATUS_SEEDS + 8 * MAX_NODES as usize <= PAGE);
const _: () = assert!(STATUS_ACK + 8 * ACK_WORDS <= STATUS_SEEDS);
const _: () = assert!(MODEL_ACK + 8 * ACK_WORDS <= MODEL_RX);
const _: () = assert!(MODEL_RX + 8 * MAX_NODES as usize <= PAGE);

/// The parameters every node of one region must agree on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Number of nodes (1..=[`MAX_NODES`]).
    pub nodes: u32,
    /// Size of each of the two SO-DIMM banks (a multiple of 4 KiB).
    pub bank_size: usize,
    /// DIMM_Send receive buffers each node keeps per peer.
    pub bufs_per_peer: u16,
    /// Size of one receive buffer (a multiple of 64, at most
    /// [`STAGING_SIZE`]).
    pub buf_size: usize,
}

impl Config {
    /// `nodes` nodes with the defaults: 1 MiB banks, 4 buffers of 16 KiB per
    /// peer.
    pub fn new(nodes: u32) -> Self {
        Self {
            nodes,
            bank_size: 1 << 20,
            bufs_per_peer: 4,
            buf_size: 16 * 1024,
        }
    }

    fn check(&self) -> Result<()> {
        let bad = |m: String| Err(Error::BadArgument(m));
        if self.nodes == 0 || self.nodes > MAX_NODES {
            return bad(format!("{} nodes (1..={MAX_NODES})", self.nodes));
        }
        if self.bank_size == 0 || self.bank_size % PAGE != 0 {
            return bad(format!("bank size {} (a multiple of 4096)", self.bank_size));
        }
        if self.bufs_per_peer == 0 || self.bufs_per_peer > MAX_USED_BUFS {
            return bad(format!("{} buffers per peer", self.bufs_per_peer));
        }
        if self.buf_size == 0 || self.buf_size % 64 != 0 || self.buf_size > STAGING_SIZE {
            return bad(format!("buffer size {}", self.buf_size));
        }
        let need = self.recv_area();
        if need.is_none_or(|n| n > self.bank_size) {
            return bad(format!(
                "receive buffers ({} nodes x {} x {} B) exceed the {} B bank",
                self.nodes, self.bufs_per_peer, self.buf_size, self.bank_size
            ));
        }
        Ok(())
    }

    fn recv_area(&self) -> Option<usize> {
        (self.nodes as usize)
            .checked_mul(self.bufs_per_peer as usize)?
            .checked_mul(self.buf_size)
    }
}

/// Most buffers one DIMM_Send chunk may use (12 bits in the done word).
pub const MAX_USED_BUFS: u16 = 0xfff;

/// A checked [`Config`] with the offsets it implies.
///
/// # Invariants
///
/// `config` passed `Config::check`, so every offset method below returns
/// an in-region offset for in-range arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    config: Config,
    node_stride: usize,
}

impl Layout {
    /// Checks `config` and computes the map.
    ///
    /// # Errors
    ///
    /// [`Error::BadArgument`] if the configuration is out of range.
    pub fn new(config: Config) -> Result<Self> {
        config.check()?;
        // INVARIANT: checked just above.
        Ok(Self {
            config,
            node_stride: BANKS + 2 * config.bank_size,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Number of nodes.
    pub fn nodes(&self) -> u32 {
        self.config.nodes
    }

    /// Bytes the region must have.
    pub fn region_len(&self) -> usize {
        HEADER_LEN + self.node_stride * self.config.nodes as usize
    }

    fn node_base(&self, node: u32) -> usize {
        HEADER_LEN + self.node_stride * node as usize
    }

    /// Region offset of byte `off` of `node`'s LLCM.
    pub fn llcm(&self, node: u32, off: usize) -> usize {
        self.node_base(node) + off
    }

    /// Region offset of `node`'s bank-select word.
    pub(crate) fn bank_word(&self, node: u32) -> usize {
        self.node_base(node) + STATUS + STATUS_BANK
    }

    /// Region offset of `node`'s ACK word `slot`.
    pub(crate) fn ack_word(&self, node: u32, slot: usize) -> usize {
        self.node_base(node) + STATUS + STATUS_ACK + 8 * slot
    }

    /// Region offset of `node`'s header seed for destination `dest`.
    pub(crate) fn seed_word(&self, node: u32, dest: u32) -> usize {
        self.node_base(node) + STATUS + STATUS_SEEDS + 8 * dest as usize
    }

    /// Region offset of the busy word (u32) of `node`'s BOTF window `w`.
    pub(crate) fn window_busy(&self, node: u32, w: usize) -> usize {
        self.node_base(node) + STATUS + STATUS_WINDOWS + 4 * w
    }

    /// Region offset of `node`'s BOTF send window `w` (0 or 1).
    pub(crate) fn window(&self, node: u32, w: usize) -> usize {
        self.node_base(node) + WINDOWS + BOTF_PACKET * w
    }

    /// Region offset of `node`'s timing-model word at `off` of its model
    /// page (the `vclock` module names them).
    pub(crate) fn model_word(&self, node: u32, off: usize) -> usize {
        self.node_base(node) + MODEL + off
    }

    /// Region offset of the arrival time of `node`'s ACK word `slot`.
    pub(crate) fn ack_stamp(&self, node: u32, slot: usize) -> usize {
        self.model_word(node, MODEL_ACK + 8 * slot)
    }

    /// Region offset of `node`'s receive-engine time for packets from
    /// `src`.
    pub(crate) fn rx_busy(&self, node: u32, src: u32) -> usize {
        self.model_word(node, MODEL_RX + 8 * src as usize)
    }

    /// Region offset of the arrival stamp of the 8-byte LLCM word of
    /// `node` that holds byte `off`.
    pub(crate) fn stamp(&self, node: u32, off: usize) -> usize {
        self.node_base(node) + STAMPS + (off & !7)
    }

    /// Region offset of byte `off` of physical bank `bank` of `node`.
    pub(crate) fn bank(&self, node: u32, bank: u32, off: usize) -> usize {
        self.node_base(node) + BANKS + self.config.bank_size * bank as usize + off
    }

    /// Bank offset of the first DIMM_Send receive buffer `node` keeps for
    /// messages from `peer`.
    pub fn recv_buffers(&self, peer: u32) -> usize {
        peer as usize * self.config.bufs_per_peer as usize * self.config.buf_size
    }

    /// First SO-DIMM byte (in either bank) free for applications.
    pub fn dimm_user(&self) -> usize {
        self.recv_buffers(self.config.nodes)
    }

    /// LLCM offset of the flag area a node keeps about `peer`.
    pub fn flag_area(peer: u32) -> usize {
        LLCM_FLAG_AREAS + FLAG_AREA * peer as usize
    }

    /// LLCM offset of the BOTF landing slot a node keeps for `peer`.
    pub fn botf_slot(peer: u32) -> usize {
        LLCM_BOTF_SLOTS + BOTF_PACKET * peer as usize
    }

    /// Writes the header into a fresh (zeroed) region. Call once, from the
    /// node that created the region, before any node attaches.
    ///
    /// # Errors
    ///
    /// The region is too small.
    pub fn format(&self, region: &Region) -> Result<()> {
        if region.len() < self.region_len() {
            return Err(Error::Incompatible(format!(
                "region holds {} bytes, the layout needs {}",
                region.len(),
                self.region_len()
            )));
        }
        let c = &self.config;
        region.u32_at(8)?.store(VERSION, REL);
        region.u32_at(12)?.store(c.nodes, REL);
        region.u32_at(16)?.store(LLCM_SIZE as u32, REL);
        region.u32_at(20)?.store(MAX_NODES, REL);
        region.u64_at(24)?.store(c.bank_size as u64, REL);
        region.u32_at(32)?.store(u32::from(c.bufs_per_peer), REL);
        region.u32_at(36)?.store(c.buf_size as u32, REL);
        region.u64_at(48)?.store(self.region_len() as u64, REL);
        // The magic goes last: a node that sees it sees the rest.
        region.u64_at(0)?.store(MAGIC, REL);
        Ok(())
    }

    /// Reads and checks the header a creator wrote.
    ///
    /// # Errors
    ///
    /// [`Error::Incompatible`] if the region is not formatted, has another
    /// version, or its fields do not describe a layout that fits it.
    pub fn read(region: &Region) -> Result<Self> {
        fn bad<T>(m: String) -> Result<T> {
            Err(Error::Incompatible(m))
        }
        if region.len() < HEADER_LEN {
            return bad(format!("region of {} bytes has no header", region.len()));
        }
        let magic = region.u64_at(0)?.load(ACQ);
        if magic != MAGIC {
            return bad(format!("magic {magic:#x}: not formatted (yet?)"));
        }
        let version = region.u32_at(8)?.load(ACQ);
        if version != VERSION {
            return bad(format!(
                "layout version {version}, this build has {VERSION}"
            ));
        }
        let llcm = region.u32_at(16)?.load(ACQ);
        let max_nodes = region.u32_at(20)?.load(ACQ);
        if llcm as usize != LLCM_SIZE || max_nodes != MAX_NODES {
            return bad(format!(
                "LLCM {llcm} B / {max_nodes} nodes max, this build has {LLCM_SIZE} / {MAX_NODES}"
            ));
        }
        let bufs = region.u32_at(32)?.load(ACQ);
        let config = Config {
            nodes: region.u32_at(12)?.load(ACQ),
            bank_size: to_usize(region.u64_at(24)?.load(ACQ))?,
            bufs_per_peer: u16::try_from(bufs)
                .or_else(|_| bad(format!("{bufs} buffers per peer")))?,
            buf_size: region.u32_at(36)?.load(ACQ) as usize,
        };
        let layout = Self::new(config).or_else(|e| bad(format!("header: {e}")))?;
        let recorded = region.u64_at(48)?.load(ACQ);
        if recorded != layout.region_len() as u64 || region.len() < layout.region_len() {
            return bad(format!(
                "layout needs {} bytes; header says {recorded}, region has {}",
                layout.region_len(),
                region.len()
            ));
        }
        Ok(layout)
    }
}

fn to_usize(v: u64) -> Result<usize> {
    usize::try_from(v).map_err(|_| Error::Incompatible(format!("size {v}")))
}

const REL: Ordering = Ordering::Release;
const ACQ: Ordering = Ordering::Acquire;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::shm;

    #[test]
    fn header_round_trips_and_checks() {
        let layout = Layout::new(Config::new(3)).unwrap();
        let r = shm(layout.region_len());
        assert!(matches!(Layout::read(&r), Err(Error::Incompatible(_))));
        layout.format(&r).unwrap();
        assert_eq!(Layout::read(&r).unwrap(), layout);
        // A peer built with another version refuses the region.
        r.u32_at(8).unwrap().store(VERSION + 1, REL);
        let e = Layout::read(&r).unwrap_err();
        assert!(e.to_string().contains("version"), "{e}");
        r.u32_at(8).unwrap().store(VERSION, REL);
        // A header that claims more nodes than the region holds is refused.
        r.u32_at(12).unwrap().store(4, REL);
        assert!(matches!(Layout::read(&r), Err(Error::Incompatible(_))));
    }

    #[test]
    fn bad_configs_are_refused() {
        for c in [
            Config::new(0),
            Config::new(MAX_NODES + 1),
            Config {
                bank_size: 1000,
                ..Config::new(2)
            },
            Config {
                buf_size: 100,
                ..Config::new(2)
            },
            Config {
                bufs_per_peer: 1000,
                ..Config::new(8)
            },
        ] {
            assert!(
                matches!(Layout::new(c), Err(Error::BadArgument(_))),
                "{c:?}"
            );
        }
    }

    #[test]
    fn nodes_do_not_overlap() {
        let l = Layout::new(Config::new(2)).unwrap();
        assert!(l.bank(0, 1, l.config().bank_size) <= l.llcm(1, 0));
        assert_eq!(l.bank(1, 1, l.config().bank_size), l.region_len());
        assert!(l.dimm_user() <= l.config().bank_size);
    }
}
