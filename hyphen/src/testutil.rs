//! Helpers for the unit tests.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use o2g_nicmem::Region;

/// A fresh `/dev/shm` region of `len` zero bytes, unlinked at once so
/// nothing is left behind whatever the test does.
pub(crate) fn scratch_region(tag: &str, len: usize) -> Arc<Region> {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let name = format!(
        "o2g-hyphen-unit-{tag}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let region = Region::create_shm(&name, len).expect("create scratch region");
    Region::unlink_shm(&name).expect("unlink scratch region");
    Arc::new(region)
}
