//! One endpoint with a thousand registered sockets, most of them idle.

use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use libo2g::{Endpoint, EndpointConfig, Selector};

use crate::harness::{endpoint, libo2g_error, next_completion, pattern, Sender};
use crate::CheckResult;

/// Messages timed per round of the per-message cost figure.
const TIMED: u32 = 2000;

/// Registers `sockets` loopback connections (ranks 1..=sockets) on one
/// endpoint; a message from every one of them arrives at a receive posted
/// for that rank, then wildcard receives take messages from a scattered
/// tenth of them. Prints the cost of one message with one and with all
/// sockets registered (a figure, not a pass condition).
pub(crate) fn scale(args: &[String]) -> CheckResult {
    let sockets: u32 = args.first().and_then(|a| a.parse().ok()).unwrap_or(1000);
    raise_fd_limit(u64::from(sockets) * 2 + 64)?;
    let cfg = EndpointConfig {
        max_posted: sockets.max(1024),
        ..EndpointConfig::default()
    };
    let mut ep = endpoint(cfg)?;
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("bind: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let mut ours = Vec::new();
    let mut peers = Vec::new();
    for rank in 1..=sockets {
        let ours_sock = TcpStream::connect(addr).map_err(|e| format!("connect {rank}: {e}"))?;
        let (peer, _) = listener
            .accept()
            .map_err(|e| format!("accept {rank}: {e}"))?;
        ours.push(ours_sock);
        peers.push(Sender::from_rank(peer, rank));
    }

    ep.register_socket(&ours[0], 1)
        .map_err(libo2g_error("register 1"))?;
    let alone = per_message(&mut ep, &mut peers[0])?;
    for (i, sock) in ours.iter().enumerate().skip(1) {
        ep.register_socket(sock, i as u32 + 1)
            .map_err(libo2g_error("register"))?;
    }
    let s = ep.stats().map_err(libo2g_error("stats"))?;
    if s.sockets != sockets {
        return Err(format!("{} sockets registered, want {sockets}", s.sockets));
    }
    let crowded = per_message(&mut ep, &mut peers[0])?;

    // Every socket delivers one message to the receive posted for its rank.
    for rank in 1..=sockets {
        let sel = Selector::new(Some(rank), Some(1), 0);
        ep.post(vec![0u8; 100], sel, u64::from(rank))
            .map_err(|p| format!("post for {rank}: {}", p.error))?;
    }
    for (i, peer) in peers.iter_mut().enumerate() {
        peer.send(1, &pattern(i as u64 + 1, 100))
            .map_err(|e| format!("send from {}: {e}", i + 1))?;
    }
    let mut seen = vec![false; sockets as usize + 1];
    for _ in 0..sockets {
        let c = next_completion(&mut ep)?;
        let rank = c.user_data as u32;
        if c.status.is_err() || c.source != rank || c.buf != pattern(u64::from(rank), 100) {
            return Err(format!("rank {rank}: {:?} from {}", c.status, c.source));
        }
        if std::mem::replace(&mut seen[rank as usize], true) {
            return Err(format!("rank {rank} completed twice"));
        }
    }

    // Wildcard receives find messages from a scattered few of the sockets.
    let busy: Vec<u32> = (1..=sockets).step_by(10).collect();
    for &rank in &busy {
        peers[rank as usize - 1]
            .send(2, &pattern(u64::from(rank) + 5000, 64))
            .map_err(|e| format!("send from {rank}: {e}"))?;
    }
    let mut got = Vec::new();
    for _ in &busy {
        let sel = Selector::new(None, Some(2), 0);
        let stored = match ep
            .post(vec![0u8; 64], sel, 0)
            .map_err(|p| format!("wildcard post: {}", p.error))?
        {
            libo2g::Post::Queued(_) => None,
            libo2g::Post::Rescan(_) => {
                return Err("the module asked to rescan an endpoint without notices".into())
            }
            libo2g::Post::Unexpected { msg, mut buf } => {
                let source = msg.envelope().source;
                msg.copy_to(&mut buf);
                msg.free().map_err(libo2g_error("free"))?;
                Some((source, buf))
            }
        };
        let data = match stored {
            Some(d) => d,
            None => {
                let c = next_completion(&mut ep)?;
                c.status.map_err(|s| format!("wildcard: {s:?}"))?;
                (c.source, c.buf)
            }
        };
        if data.1 != pattern(u64::from(data.0) + 5000, 64) {
            return Err(format!("wildcard message from {} differs", data.0));
        }
        got.push(data.0);
    }
    got.sort_unstable();
    if got != busy {
        return Err(format!("wildcard sources {got:?}, want {busy:?}"));
    }
    let st = ep
        .socket_stats(sockets)
        .map_err(libo2g_error("socket stats"))?;
    if st.messages != 1 || st.state != libo2g::abi::socket_state::ACTIVE {
        return Err(format!("last socket: {st:?}"));
    }
    println!(
        "scale: {sockets} sockets on one endpoint; per message {:.1} us with 1 registered, {:.1} us with {sockets} (ratio {:.2})",
        micros(alone),
        micros(crowded),
        crowded.as_secs_f64() / alone.as_secs_f64()
    );
    Ok(())
}

/// Mean time for one post + 64-byte message + completion on rank 1.
fn per_message(ep: &mut Endpoint, peer: &mut Sender) -> Result<Duration, String> {
    let sel = Selector::new(Some(1), Some(9), 0);
    let payload = [7u8; 64];
    let start = Instant::now();
    for _ in 0..TIMED {
        ep.post(vec![0u8; 64], sel, 9)
            .map_err(|p| format!("timed post: {}", p.error))?;
        peer.send(9, &payload).map_err(|e| e.to_string())?;
        let c = next_completion(ep)?;
        if c.status.is_err() || c.buf != payload {
            return Err(format!("timed message: {:?}", c.status));
        }
    }
    Ok(start.elapsed() / TIMED)
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Lets this process hold `want` file descriptors.
fn raise_fd_limit(want: u64) -> CheckResult {
    let lim = libc::rlimit {
        rlim_cur: want,
        rlim_max: want,
    };
    // SAFETY: `lim` is a valid rlimit that outlives the call.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) } != 0 {
        return Err(format!(
            "setrlimit NOFILE {want}: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}
