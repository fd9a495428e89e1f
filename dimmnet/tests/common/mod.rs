//! Shared helpers of the integration tests.
#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use o2g_dimmnet::{Config, DimmEndpoint, Nic, WaitPolicy};
use o2g_nicmem::Region;

static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// A `/dev/shm` name unique to this process and call.
pub(crate) fn unique(tag: &str) -> String {
    format!(
        "o2g-dimmnet-it-{tag}-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// A formatted, already unlinked region and one handle per node.
pub(crate) fn fabric(config: Config) -> (Arc<Region>, Vec<Nic>) {
    let name = unique("fabric");
    let r = Nic::create_shm(&name, config).unwrap();
    Region::unlink_shm(&name).unwrap();
    let nics = (0..config.nodes)
        .map(|n| Nic::attach(Arc::clone(&r), n).unwrap())
        .collect();
    (r, nics)
}

/// One endpoint per node, pgid 7.
pub(crate) fn endpoints(config: Config) -> (Arc<Region>, Vec<DimmEndpoint>) {
    let (r, nics) = fabric(config);
    let eps = nics
        .into_iter()
        .map(|n| DimmEndpoint::new(n, 7).unwrap())
        .collect();
    (r, eps)
}

/// Small buffers, so that messages of a few KiB take the split path.
pub(crate) fn small(nodes: u32) -> Config {
    Config {
        bufs_per_peer: 2,
        buf_size: 1024,
        ..Config::new(nodes)
    }
}

/// A short-deadline policy for tests that expect a timeout.
pub(crate) fn short() -> WaitPolicy {
    WaitPolicy::with_deadline(Duration::from_millis(200))
}

/// Deterministic test bytes for message `k` of `len` bytes.
pub(crate) fn pattern(k: usize, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i.wrapping_mul(31) ^ k.wrapping_mul(97)) as u8)
        .collect()
}
