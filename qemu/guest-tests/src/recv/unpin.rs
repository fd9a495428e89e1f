//! When a finished receive's pages are unpinned. The reader finishes a
//! receive in softirq, where unpinning may not sleep; the buffer waits for
//! its process's next POST, POLL or STATS, or for the module's unpin work
//! a few milliseconds later if the process makes none.

use std::time::{Duration, Instant};

use libo2g::{Endpoint, EndpointConfig, Post, Reaped};

use crate::harness::{endpoint, libo2g_error, pattern, sel, tcp_pair, Sender, PEER};
use crate::CheckResult;

/// Each receive's length, and the whole pin budget: a second receive is
/// admitted only once the first one's pages are given back.
const LEN: usize = 32 << 10;

/// Posts a receive for `tag`, sends its message and waits for the
/// completion by reading the ring only (no system call into the module).
fn receive_one(ep: &mut Endpoint, tx: &mut Sender, tag: u32) -> CheckResult {
    match ep.post(vec![0u8; LEN], sel(tag), u64::from(tag)) {
        Ok(Post::Queued(_)) => {}
        other => return Err(format!("post for tag {tag}: {other:?}")),
    }
    tx.send(tag, &pattern(u64::from(tag), LEN))
        .map_err(|e| format!("send: {e}"))?;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match ep.reap().map_err(libo2g_error("reap"))? {
            Some(Reaped::Owned(c)) => {
                if c.status.is_err() || c.data() != pattern(u64::from(tag), LEN) {
                    return Err(format!(
                        "tag {tag}: completed with {:?}, wrong data",
                        c.status
                    ));
                }
                return Ok(());
            }
            Some(other) => return Err(format!("tag {tag}: unexpected record {other:?}")),
            None if Instant::now() > deadline => {
                return Err(format!("tag {tag}: no completion within 60 s"))
            }
            None => std::hint::spin_loop(),
        }
    }
}

/// This process's endpoint as the listing shows it (LIST unpins nothing).
fn listed_pinned(ep: &Endpoint) -> Result<u64, String> {
    let me = std::process::id();
    let list = ep.list_endpoints().map_err(libo2g_error("list"))?;
    match list.endpoints.iter().find(|s| s.pid == me) {
        Some(s) => Ok(s.stats.pinned_bytes),
        None => Err(format!("pid {me} is not listed: {list:?}")),
    }
}

pub(crate) fn unpin() -> CheckResult {
    let cfg = EndpointConfig {
        max_posted: 1,
        pin_budget: LEN as u64,
        ..EndpointConfig::default()
    };
    let mut ep = endpoint(cfg)?;
    let (ours, peer) = tcp_pair()?;
    ep.register_socket(&ours, PEER)
        .map_err(libo2g_error("register"))?;
    let mut tx = Sender::new(peer);

    // POST: each receive right after the last one finished, with room for
    // one buffer in the table and the budget.
    for tag in 1..=20 {
        receive_one(&mut ep, &mut tx, tag)?;
    }
    println!("20 receives, each posted right after the last finished, with room for one");

    // Nothing: the unpin work gives the pages back.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let pinned = listed_pinned(&ep)?;
        if pinned == 0 {
            break;
        }
        if Instant::now() > deadline {
            return Err(format!(
                "{pinned} bytes still pinned 5 s after the receive finished, with no call"
            ));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    println!("a finished receive's pages went back with no call from its process");

    // STATS: the owner's counters show only buffers in use.
    receive_one(&mut ep, &mut tx, 30)?;
    let s = ep.stats().map_err(libo2g_error("stats"))?;
    if s.pinned_bytes != 0 {
        return Err(format!("right after a receive finished, STATS says {s:?}"));
    }
    println!("STATS right after a receive finished shows nothing pinned");

    // Closing while the unpin work waits for its timer: release runs it
    // at once. What goes wrong shows in dmesg, which the suite checks, and
    // at its rmmod.
    receive_one(&mut ep, &mut tx, 31)?;
    drop(ep);
    Ok(())
}
