//! In-guest checks of announcements (`EndpointConfig::notices`): stored
//! messages announced in the ring, taken with no system call and given back
//! through the release ring; the post that must rescan; a flood held back
//! by a small dump area and resumed only by giving messages back; and the
//! module giving up announcing when the process stops reading the ring.

use std::time::{Duration, Instant};

use libo2g::{Announced, Endpoint, EndpointConfig, Post, Reaped};

use crate::harness::{
    endpoint, libo2g_error, next_completion, pattern, sel, slab_kib, tcp_pair, wait_for_stall,
    wait_for_stats, Flood, Sender, PEER,
};
use crate::CheckResult;

fn config() -> EndpointConfig {
    EndpointConfig {
        notices: true,
        ..EndpointConfig::default()
    }
}

/// Waits (bounded) for the next announcement, without ever calling into
/// the module: only reading the ring. Completions are an error here.
fn next_announced(ep: &mut Endpoint, limit: Duration) -> Result<Announced, String> {
    let deadline = Instant::now() + limit;
    loop {
        match ep.reap().map_err(libo2g_error("reap"))? {
            Some(Reaped::Stored(a)) => return Ok(a),
            Some(other) => return Err(format!("expected an announcement, got {other:?}")),
            None => {}
        }
        if Instant::now() > deadline {
            let s = ep.stats().map_err(libo2g_error("stats"))?;
            return Err(format!("no announcement within {limit:?}: {s:?}"));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Announced messages are the process's: a probe no longer sees them, a
/// post made without reading them is refused (rescan), and a message that
/// arrives for a posted receive is written into it, not announced.
pub(crate) fn paths() -> CheckResult {
    let mut ep = endpoint(config())?;
    let (ours, peer) = tcp_pair()?;
    ep.register_socket(&ours, PEER)
        .map_err(libo2g_error("register"))?;
    let mut tx = Sender::new(peer);
    tx.send(1, &pattern(1, 3000)).map_err(|e| e.to_string())?;
    // Wait until it is stored, without reading the ring.
    let deadline = Instant::now() + Duration::from_secs(30);
    while ep.stats().map_err(libo2g_error("stats"))?.notices == 0 {
        if Instant::now() > deadline {
            return Err("message never announced".into());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    if ep.probe(sel(1)).map_err(libo2g_error("probe"))?.is_some() {
        return Err("a probe found a message already announced".into());
    }
    match ep.post(vec![0u8; 3000], sel(1), 1) {
        Ok(Post::Rescan(_)) => {}
        other => return Err(format!("post with an unread announcement: {other:?}")),
    }
    let a = next_announced(&mut ep, Duration::from_secs(5))?;
    let env = a.envelope();
    if (env.source, env.tag, a.len()) != (PEER, 1, 3000) {
        return Err(format!("announced envelope {env:?}, {} bytes", a.len()));
    }
    if ep.announced_data(&a) != pattern(1, 3000) {
        return Err("announced payload differs".into());
    }
    ep.give_back(a).map_err(libo2g_error("give back"))?;
    // Now a post goes through; its message is written straight into it.
    match ep.post(vec![0u8; 500], sel(2), 2) {
        Ok(Post::Queued(_)) => {}
        other => return Err(format!("post for a message not yet sent: {other:?}")),
    }
    tx.send(2, &pattern(2, 500)).map_err(|e| e.to_string())?;
    let c = next_completion(&mut ep)?;
    if c.status.is_err() || c.buf != pattern(2, 500) {
        return Err(format!("direct receive: {:?}", c.status));
    }
    // The module applies a give-back at its next call: the space is free.
    let s = ep.stats().map_err(libo2g_error("stats"))?;
    if (s.notices, s.released_msgs, s.bad_releases, s.unexpected) != (1, 1, 0, 0) {
        return Err(format!("counters after one give-back: {s:?}"));
    }
    println!("notices: announced, rescanned, given back, direct receive: {s:?}");
    Ok(())
}

/// A sender floods `total` bytes at a receiver whose dump area holds about
/// 17 messages and which reads only the ring: the connection stalls again
/// and again, and only giving messages back (which calls the module when a
/// connection is stalled) resumes it. Everything arrives, in order.
pub(crate) fn flood(args: &[String]) -> CheckResult {
    let (mut ep, flood) = Flood::start(args, true)?;
    let (count, msg, slab_before, sender) =
        (flood.count, flood.msg, flood.slab_before, flood.sender);
    let mut max_slab = 0;
    let mut stalls = 0;
    for i in 0..count {
        if i % 512 == 0 && count - i > 64 {
            // Read nothing until the connection stalls, so that only giving
            // messages back can resume it.
            stalls = wait_for_stall(&ep, stalls)
                .map_err(|e| format!("message {i}: {e}"))?
                .backpressure_events;
            max_slab = max_slab.max(slab_kib().saturating_sub(slab_before));
        }
        let a = next_announced(&mut ep, Duration::from_secs(60))
            .map_err(|err| format!("message {i} of {count}: {err}"))?;
        let env = a.envelope();
        if env.tag != 5 || ep.announced_data(&a) != pattern(i, msg) {
            return Err(format!("message {i} of {count} wrong: {env:?}"));
        }
        ep.give_back(a).map_err(libo2g_error("give back"))?;
    }
    sender
        .join()
        .map_err(|_| "sender panicked")?
        .map_err(|e| e.to_string())?;
    ep.sync().map_err(libo2g_error("sync"))?;
    let s = ep.stats().map_err(libo2g_error("stats"))?;
    if s.backpressure_events == 0 {
        return Err(format!("the sender was never held back: {s:?}"));
    }
    if s.notices != count || s.released_msgs != count || s.bad_releases != 0 {
        return Err(format!("{count} messages, but counters say {s:?}"));
    }
    if s.unexpected != 0 || s.dump_used != 0 {
        return Err(format!("space still taken after every give-back: {s:?}"));
    }
    println!(
        "notices flood: {count} messages, {} MiB, in order, no POST/FREE; back-pressure {} times; slab growth peak {max_slab} KiB",
        (count * msg as u64) >> 20,
        s.backpressure_events,
    );
    Ok(())
}

/// A process that leaves completions unread fills the ring; the module then
/// stops announcing (and says so) instead of overwriting records, and later
/// messages are found by posts as without notices.
pub(crate) fn ring_full() -> CheckResult {
    let cfg = EndpointConfig {
        max_posted: 8,
        max_unexpected: 8,
        ..config()
    };
    let mut ep = endpoint(cfg)?;
    let entries = ep.layout().ring_entries;
    let (ours, peer) = tcp_pair()?;
    ep.register_socket(&ours, PEER)
        .map_err(libo2g_error("register"))?;
    let mut tx = Sender::new(peer);
    let within = Duration::from_secs(30);
    // All but one record taken by completions nobody reads.
    let unread = entries - 1;
    for i in 0..unread {
        match ep.post(vec![0u8; 8], sel(100 + i), u64::from(i)) {
            Ok(Post::Queued(_)) => {}
            other => return Err(format!("post {i}: {other:?}")),
        }
        tx.send(100 + i, &pattern(u64::from(i), 8))
            .map_err(|e| e.to_string())?;
        // Complete and unpinned, so the next post is admitted.
        wait_for_stats(&ep, "a receive did not finish", within, |s| {
            s.matched_msgs == u64::from(i) + 1 && s.pinned_bytes == 0
        })?;
    }
    for i in 0..2u32 {
        tx.send(300 + i, &pattern(u64::from(i), 16))
            .map_err(|e| e.to_string())?;
    }
    let s = wait_for_stats(&ep, "two unexpected messages not stored", within, |s| {
        s.unexpected == 2
    })?;
    if !ep.notices_stopped() || s.notices != 1 {
        return Err(format!(
            "ring of {entries} with {unread} unread: want one announcement, then a stop; stopped {}, {s:?}",
            ep.notices_stopped()
        ));
    }
    // Reading the ring gives every completion and the one announcement.
    let mut completions = 0;
    while let Some(r) = ep.reap().map_err(libo2g_error("reap"))? {
        match r {
            Reaped::Owned(_) | Reaped::Raw(_) => completions += 1,
            Reaped::Stored(a) => {
                if a.envelope().tag != 300 {
                    return Err(format!("announced {:?}", a.envelope()));
                }
                ep.give_back(a).map_err(libo2g_error("give back"))?;
            }
            other => return Err(format!("unexpected record {other:?}")),
        }
    }
    if completions != unread {
        return Err(format!(
            "{completions} completions reaped, {unread} expected"
        ));
    }
    // The second message was not announced: a post finds it.
    match ep.post(vec![0u8; 16], sel(301), 0) {
        Ok(Post::Unexpected { msg, mut buf }) => {
            msg.copy_to(&mut buf);
            msg.free().map_err(libo2g_error("free"))?;
            if buf != pattern(1, 16) {
                return Err("unannounced message payload differs".into());
            }
        }
        other => return Err(format!("post for the unannounced message: {other:?}")),
    }
    println!("notices stop when the ring is full: ring {entries}, {s:?}");
    Ok(())
}
