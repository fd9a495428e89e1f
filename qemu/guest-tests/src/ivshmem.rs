//! `ivshmem`: every node of a cluster run maps the shared ivshmem BAR (the
//! emulated NICs' memory), sees the others' stores, and its atomic
//! read-modify-writes stay atomic against the other VMs'.
//!
//! Node i stores a stamp into word i, then waits, bounded, until every
//! node's word holds its stamp. Then every node adds 1 to one shared counter
//! as often as it can for a few seconds, publishes how many times it did,
//! and checks that the counter holds the sum. The emulated DIMMnet-1 and
//! HyphenLink count on this: a lost update is a corrupt NIC word. Under
//! TCG it holds only if QEMU translates for parallel vCPUs (`vm.sh`).
//! The file is removed by the harness after the run, so nothing is cleared.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use o2g_nicmem::Region;

use crate::CheckResult;

/// The stamp node `i` leaves in its word.
fn stamp(i: usize) -> u64 {
    0x6f32_6976_0000_0000 | i as u64
}

/// Where the shared counter and then each node's published count live,
/// clear of the stamps. Earlier cluster tests used this memory, so node 0
/// zeroes both before it stamps.
const COUNTER: usize = 4096;
const COUNTS: usize = COUNTER + 64;
/// Marks a published count (a count of 0 is a count too).
const DONE: u64 = 1 << 63;
/// How long every node hammers the counter; long enough to overlap the
/// others however their starts are skewed.
const HAMMER: Duration = Duration::from_secs(3);

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
    let word = |offset: usize| r.u64_at(offset).map_err(|e| e.to_string());
    let counter = word(COUNTER)?;
    if node == 0 {
        counter.store(0, Ordering::Relaxed);
        for i in 0..nodes {
            word(COUNTS + 8 * i)?.store(0, Ordering::Relaxed);
        }
    }
    word(8 * node)?.store(stamp(node), Ordering::Release);
    let deadline = Instant::now() + Duration::from_secs(120);
    let wait_for = |w: &AtomicU64, done: &dyn Fn(u64) -> bool, what: &str| {
        while !done(w.load(Ordering::Acquire)) {
            if Instant::now() > deadline {
                return Err(what.to_string());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(())
    };
    for i in 0..nodes {
        let what = format!("node {i}'s store never became visible here");
        wait_for(word(8 * i)?, &|v| v == stamp(i), &what)?;
    }
    // Out-of-range accesses are refused, not performed.
    if r.u64_at(r.len()).is_ok() || r.write(r.len() - 1, &[0, 0]).is_ok() {
        return Err("an access past the BAR was allowed".into());
    }
    println!("saw the stamps of all {nodes} nodes");

    let mut mine = 0u64;
    let until = Instant::now() + HAMMER;
    while Instant::now() < until {
        for _ in 0..1000 {
            counter.fetch_add(1, Ordering::Relaxed);
        }
        mine += 1000;
    }
    word(COUNTS + 8 * node)?.store(DONE | mine, Ordering::Release);
    let mut sum = 0;
    for i in 0..nodes {
        let w = word(COUNTS + 8 * i)?;
        let what = format!("node {i} never published its count");
        wait_for(w, &|v| v & DONE != 0, &what)?;
        sum += w.load(Ordering::Acquire) & !DONE;
    }
    let total = counter.load(Ordering::Acquire);
    println!("{nodes} nodes added {sum} times to one word ({mine} here); it holds {total}");
    if total != sum {
        return Err(format!(
            "atomic adds from different VMs were lost: {sum} made, the word holds {total}"
        ));
    }
    Ok(())
}
