//! Back-pressure: a flood of unexpected messages into a small dump area.

use crate::harness::{libo2g_error, pattern, receive, slab_kib, wait_for_stall, Flood};
use crate::CheckResult;

/// A sender floods `total` bytes of unexpected messages at a receiver
/// with a 1 MiB dump area that drains slowly: TCP holds the rest, every
/// byte arrives in order, the dump area never overflows.
pub(crate) fn flood(args: &[String]) -> CheckResult {
    let (mut ep, flood) = Flood::start(args, false)?;
    let (count, msg, slab_before, sender) =
        (flood.count, flood.msg, flood.slab_before, flood.sender);
    let mut max_dump = 0;
    let mut max_slab = 0;
    let mut stalls = 0;
    for i in 0..count {
        if i % 256 == 0 && count - i > 64 {
            // Drain nothing now and then until the dump area is full and
            // the connection stalls, so that the sender must wait.
            let s = wait_for_stall(&ep, stalls).map_err(|e| format!("message {i}: {e}"))?;
            stalls = s.backpressure_events;
            max_dump = max_dump.max(s.dump_used);
            max_slab = max_slab.max(slab_kib().saturating_sub(slab_before));
        }
        let (data, status) = receive(&mut ep, 5, msg)?;
        if status.is_err() || data != pattern(i, msg) {
            return Err(format!("message {i} of {count} wrong ({status:?})"));
        }
    }
    sender
        .join()
        .map_err(|_| "sender panicked")?
        .map_err(|e| e.to_string())?;
    let s = ep.stats().map_err(libo2g_error("stats"))?;
    if s.backpressure_events == 0 {
        return Err(format!("the sender was never held back: {s:?}"));
    }
    if max_dump > 1 << 20 {
        return Err(format!("dump area overflowed: {max_dump}"));
    }
    println!(
        "flood: {count} messages, {} MiB, in order; back-pressure {} times; dump peak {} KiB; slab growth peak {} KiB",
        (count * msg as u64) >> 20,
        s.backpressure_events,
        max_dump >> 10,
        max_slab
    );
    Ok(())
}
