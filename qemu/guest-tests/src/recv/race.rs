//! Receives posted by two threads while a peer sends at full speed.

use std::time::{Duration, Instant};

use libo2g::{EndpointConfig, Post, Reaped};

use crate::harness::{endpoint, libo2g_error, sel, tcp_pair, Sender, PEER};
use crate::CheckResult;

/// Two threads post receives while a peer sends `n` messages at full
/// speed, alternating two tags: every message completes exactly once, and
/// each thread's receives see its tag's messages in sending order, whether
/// they matched in the handler or were stored first.
pub(crate) fn race(args: &[String]) -> CheckResult {
    use std::sync::{Arc, Mutex};
    let n: u64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let cfg = EndpointConfig {
        max_posted: 256,
        max_unexpected: 1024,
        dump_bytes: 1 << 20,
        ..EndpointConfig::default()
    };
    let ep = endpoint(cfg)?;
    let (ours, peer) = tcp_pair()?;
    ep.register_socket(&ours, PEER)
        .map_err(libo2g_error("register"))?;
    // results[tag][k]: payload the k-th receive for `tag` got.
    let per_tag = (n / 2) as usize;
    let shared = Arc::new(Mutex::new((ep, vec![vec![None::<u64>; per_tag]; 2])));
    let sender = std::thread::spawn(move || -> std::io::Result<()> {
        let mut tx = Sender::new(peer);
        for i in 0..n {
            tx.send((i % 2) as u32, &i.to_le_bytes())?;
        }
        Ok(())
    });
    let record = |results: &mut Vec<Vec<Option<u64>>>, user: u64, value: u64| -> CheckResult {
        let (tag, k) = ((user >> 32) as usize, (user & 0xffff_ffff) as usize);
        let slot = results
            .get_mut(tag)
            .and_then(|r| r.get_mut(k))
            .ok_or("bad user data")?;
        if slot.replace(value).is_some() {
            return Err(format!("receive {k} of tag {tag} completed twice"));
        }
        Ok(())
    };
    let posters: Vec<_> = (0..2u64)
        .map(|tag| {
            let shared = shared.clone();
            std::thread::spawn(move || -> CheckResult {
                let mut posted = 0usize;
                let deadline = Instant::now() + Duration::from_secs(600);
                loop {
                    let mut guard = shared.lock().map_err(|_| "poisoned")?;
                    let (ep, results) = &mut *guard;
                    // Reap whatever completed, for either thread.
                    while let Some(Reaped::Owned(c)) = ep.reap().map_err(libo2g_error("reap"))? {
                        let v = u64::from_le_bytes(c.buf[..8].try_into().map_err(|_| "short")?);
                        record(results, c.user_data, v)?;
                    }
                    let done = results[tag as usize].iter().filter(|r| r.is_some()).count();
                    if done == per_tag {
                        return Ok(());
                    }
                    if posted < per_tag && posted - done < 32 {
                        let user = (tag << 32) | posted as u64;
                        let s = sel(tag as u32);
                        match ep.post(vec![0u8; 8], s, user) {
                            Ok(Post::Queued(_)) => posted += 1,
                            Ok(Post::Unexpected { msg, mut buf }) => {
                                msg.copy_to(&mut buf);
                                msg.free().map_err(libo2g_error("free"))?;
                                record(
                                    results,
                                    user,
                                    u64::from_le_bytes(buf[..8].try_into().map_err(|_| "short")?),
                                )?;
                                posted += 1;
                            }
                            Ok(Post::Rescan(_)) => {
                                return Err(
                                    "the module asked to rescan an endpoint without notices".into(),
                                )
                            }
                            Err(p) if p.error.raw_os_error() == Some(libc::EAGAIN) => {}
                            Err(p) => return Err(format!("post: {}", p.error)),
                        }
                        continue;
                    }
                    drop(guard);
                    if Instant::now() > deadline {
                        return Err(format!("tag {tag}: {done} of {per_tag} after 600 s"));
                    }
                    std::thread::yield_now();
                }
            })
        })
        .collect();
    for p in posters {
        p.join().map_err(|_| "poster panicked")??;
    }
    sender
        .join()
        .map_err(|_| "sender panicked")?
        .map_err(|e| e.to_string())?;
    let guard = shared.lock().map_err(|_| "poisoned")?;
    for (tag, results) in guard.1.iter().enumerate() {
        for (k, got) in results.iter().enumerate() {
            let want = 2 * k as u64 + tag as u64;
            if *got != Some(want) {
                return Err(format!("tag {tag} receive {k}: got {got:?}, want {want}"));
            }
        }
    }
    let s = guard.0.stats().map_err(libo2g_error("stats"))?;
    println!(
        "race: {n} messages, exactly once and in order; {} matched in the handler, {} stored first",
        s.matched_msgs, s.unexpected_msgs
    );
    Ok(())
}
