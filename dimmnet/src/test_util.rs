//! Helpers for the unit tests: fresh regions with unique names.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use o2g_nicmem::Region;

use crate::layout::Config;
use crate::nic::Nic;

static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// A unique `/dev/shm` name for this process and call.
pub(crate) fn unique(tag: &str) -> String {
    format!(
        "o2g-dimmnet-unit-{tag}-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// A zeroed region of `len` bytes whose name is already unlinked.
pub(crate) fn shm(len: usize) -> Region {
    let name = unique("raw");
    let r = Region::create_shm(&name, len).unwrap();
    Region::unlink_shm(&name).unwrap();
    r
}

/// A formatted region of `nodes` nodes (default config) and one seeded
/// handle per node.
pub(crate) fn fabric(nodes: u32) -> (Arc<Region>, Vec<Nic>) {
    fabric_with(Config::new(nodes))
}

/// As [`fabric`] with a given configuration.
pub(crate) fn fabric_with(config: Config) -> (Arc<Region>, Vec<Nic>) {
    let name = unique("fabric");
    let r = Nic::create_shm(&name, config).unwrap();
    Region::unlink_shm(&name).unwrap();
    let nics: Vec<Nic> = (0..config.nodes)
        .map(|n| Nic::attach(Arc::clone(&r), n).unwrap())
        .collect();
    for n in &nics {
        n.seed_all().unwrap();
    }
    (r, nics)
}
