//! `ivshmem`: every node of a cluster run maps the shared ivshmem BAR (the
//! emulated NICs' memory) and sees the others' stores.
//!
//! Node i stores a stamp into word i, then waits, bounded, until every
//! node's word holds its stamp; then it clears nothing (the file is
//! removed by the harness after the run).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use o2g_nicmem::Region;

use crate::CheckResult;

/// The stamp node `i` leaves in its word.
fn stamp(i: usize) -> u64 {
    0x6f32_6976_0000_0000 | i as u64
}

pub(crate) fn ivshmem() -> CheckResult {
    let env = |k: &str| -> Result<usize, String> {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("{k} is not set"))
    };
    let (node, nodes) = (env("O2G_NODE")?, env("O2G_NODES")?);
    let r = Region::open_ivshmem(0).map_err(|e| e.to_string())?;
    println!("{}: {} bytes", r.path().display(), r.len());
    r.u64_at(node * 8)
        .map_err(|e| e.to_string())?
        .store(stamp(node), Ordering::Release);
    let deadline = Instant::now() + Duration::from_secs(120);
    for i in 0..nodes {
        let w = r.u64_at(i * 8).map_err(|e| e.to_string())?;
        while w.load(Ordering::Acquire) != stamp(i) {
            if Instant::now() > deadline {
                return Err(format!("node {i}'s store never became visible here"));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    // Out-of-range accesses are refused, not performed.
    if r.u64_at(r.len()).is_ok() || r.write(r.len() - 1, &[0, 0]).is_ok() {
        return Err("an access past the BAR was allowed".into());
    }
    println!("saw the stamps of all {nodes} nodes");
    Ok(())
}
