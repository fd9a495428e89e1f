//! Joining the job's DIMMnet region and attaching this rank's node.
//!
//! Every rank is one node of one region (so at most
//! [`o2g_dimmnet::layout::MAX_NODES`] ranks). `O2G_DIMMNET_REGION` picks
//! it, and the ranks meet in it as every emulated NIC's do
//! (`emulated_region.rs`), with the job's pgid handed out by rank 0:
//!
//! - `shm` (default): rank 0 creates `/dev/shm/o2g-dimmnet-<pid>-<nanos>`
//!   ([`Nic::create_shm`], zeroed by construction), publishes its name and
//!   the job's pgid through PMI; after a PMI barrier the others open it;
//!   after a second barrier (everyone attached) rank 0 unlinks the name.
//! - `ivshmem`: every rank maps BAR 2 of the guest's first ivshmem device
//!   ([`Region::open_ivshmem`]). Rank 0 zeroes it (an earlier job's flag
//!   words must not survive), formats it for this world and publishes the
//!   pgid; the others attach after the PMI barrier.
//!
//! The buffer geometry is the largest of a few candidates whose layout
//! fits (a `/dev/shm` file is sparse, so there the largest is taken:
//! 8 receive buffers of 32 KiB per peer, 256 KiB per grant).

use std::sync::Arc;
use std::time::Duration;

use o2g_dimmnet::layout::LLCM_USER;
use o2g_dimmnet::{
    Barrier, Config as NicConfig, DimmEndpoint, Heartbeat, Layout, Nic, PeerWatch, WaitPolicy,
};
use o2g_nicmem::Region;

use super::dead_peers::HEARTBEAT_PERIOD;
use super::{nic_err, Net};
use crate::config::{Config, DimmnetRegion};
use crate::error::{Error, Result};
use crate::pmi::Pmi;
use crate::transport::emulated_region::{self, Joined, Making, Meeting, Place};

/// LLCM offset of the heartbeat table (one u64 per node).
const HEARTBEAT_TABLE: usize = LLCM_USER;
/// PMI key of the job description rank 0 publishes.
const JOB_KEY: &str = "o2g-dimmnet-job";
/// The first part of the job's `/dev/shm` name.
pub(super) const SHM_PREFIX: &str = "o2g-dimmnet";

/// The largest buffer geometry whose layout for `nodes` fits `max_len`
/// bytes (any size when `None`).
pub(super) fn fit_config(nodes: u32, max_len: Option<usize>) -> Option<NicConfig> {
    const CANDIDATES: [(u16, usize); 6] = [
        (8, 32 << 10),
        (4, 32 << 10),
        (4, 16 << 10),
        (2, 16 << 10),
        (1, 16 << 10),
        (1, 4 << 10),
    ];
    CANDIDATES.iter().find_map(|&(bufs, size)| {
        let bank = (nodes as usize * bufs as usize * size).next_multiple_of(4096);
        let c = NicConfig {
            bank_size: bank,
            bufs_per_peer: bufs,
            buf_size: size,
            ..NicConfig::new(nodes)
        };
        let layout = Layout::new(c).ok()?;
        max_len
            .is_none_or(|m| layout.region_len() <= m)
            .then_some(c)
    })
}

/// Joins the job's region as rank `pmi.rank()` of `size` (see the module
/// documentation): the region, the job's pgid, and what is left of the
/// meeting ([`Joined::everyone_attached`]).
pub(super) fn join(
    config: &Config,
    pmi: &mut Pmi,
    size: u32,
) -> Result<(Arc<Region>, u16, Joined)> {
    let meeting = Meeting {
        place: match config.dimmnet.region {
            DimmnetRegion::Shm => Place::Shm,
            DimmnetRegion::Ivshmem => Place::Ivshmem,
        },
        key: JOB_KEY,
        shm_prefix: SHM_PREFIX,
        job_id: true,
    };
    let make = |making: Making<'_>| match making {
        Making::Shm(name) => {
            let cfg = fit_config(size, None)
                .ok_or_else(|| Error::Config(format!("no DIMMnet layout for {size} nodes")))?;
            Nic::create_shm(name, cfg).map_err(nic_err)
        }
        Making::Mapped(region) => {
            let cfg = fit_config(size, Some(region.len())).ok_or_else(|| {
                Error::Config(format!(
                    "the ivshmem region of {} bytes cannot hold {size} DIMMnet nodes",
                    region.len()
                ))
            })?;
            region
                .fill(0, region.len(), 0)
                .map_err(|e| nic_err(e.into()))?;
            Nic::format(&region, cfg).map_err(nic_err)?;
            Ok(Arc::new(region))
        }
    };
    let (region, joined) = emulated_region::join(
        pmi,
        &meeting,
        |_, e| nic_err(e.into()),
        make,
        |region| Ok(Arc::new(region)),
    )?;
    let pgid = joined
        .job_id()
        .expect("a meeting with a job id hands one out");
    Ok((region, pgid, joined))
}

/// Attaches node `me` of `region` for process group `pgid`: its endpoint,
/// the world barrier, and its heartbeat and watch over the peers.
pub(super) fn attach(region: Arc<Region>, me: u32, pgid: u16, config: &Config) -> Result<Net> {
    // The crate's own waits (a bank switch, a busy window) end at the
    // peer timeout too.
    let wait = WaitPolicy::with_deadline(config.dimmnet.peer_timeout.max(Duration::from_secs(1)));
    let nic = Nic::attach(region, me).map_err(nic_err)?.with_wait(wait);
    let ep = DimmEndpoint::new(nic.clone(), pgid).map_err(nic_err)?;
    let barrier = Barrier::new(nic.clone()).map_err(nic_err)?;
    let heartbeat =
        Heartbeat::start(nic.clone(), HEARTBEAT_TABLE, HEARTBEAT_PERIOD, pgid).map_err(nic_err)?;
    let watch =
        PeerWatch::new(nic, HEARTBEAT_TABLE, config.dimmnet.peer_timeout, pgid).map_err(nic_err)?;
    Ok(Net {
        ep,
        barrier,
        watch,
        _heartbeat: heartbeat,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometry_fits_the_region() {
        let big = fit_config(16, None).unwrap();
        assert_eq!((big.bufs_per_peer, big.buf_size), (8, 32 << 10));
        // 64 MiB (the QEMU harness's default) for 32 nodes: a smaller one.
        let c = fit_config(32, Some(64 << 20)).unwrap();
        assert!(Layout::new(c).unwrap().region_len() <= 64 << 20);
        assert!(c.bufs_per_peer < 8);
        assert!(fit_config(32, Some(1 << 20)).is_none());
    }
}
