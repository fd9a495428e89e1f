//! The harness every in-guest check of the module builds on: loopback
//! socket pairs, endpoints, a sender that frames messages like every o2g
//! sender, recognisable payloads, bounded waits for completions, receives
//! whichever path their message takes, and a flood of unexpected messages.

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use libo2g::{Completed, Device, Endpoint, EndpointConfig, Post, Reaped, RecvError, Selector};
use o2g_core::proto::envelope::Envelope;
use o2g_core::proto::wire::{Encoder, Kind};

/// The rank our peer has in every check.
pub(crate) const PEER: u32 = 1;

/// Turns a libo2g error into this check's failure: "WHAT: error".
pub(crate) fn libo2g_error(what: &str) -> impl Fn(libo2g::Error) -> String + '_ {
    move |err| format!("{what}: {err}")
}

/// A connected loopback pair: (ours, peer).
pub(crate) fn tcp_pair() -> Result<(TcpStream, TcpStream), String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("bind: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let ours = TcpStream::connect(addr).map_err(|e| format!("connect: {e}"))?;
    let (peer, _) = listener.accept().map_err(|e| format!("accept: {e}"))?;
    Ok((ours, peer))
}

/// Pins the calling thread to `cpu`.
pub(crate) fn pin_to_cpu(cpu: usize) -> Result<(), String> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(format!("CPU {cpu}: beyond CPU_SETSIZE"));
    }
    // SAFETY: `set` is a plain bit set that CPU_ZERO and CPU_SET
    // initialise (`cpu` is within it); sched_setaffinity only reads it for
    // the call.
    let pinned = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_ZERO(&mut set);
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if pinned != 0 {
        return Err(format!("CPU {cpu}: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

pub(crate) fn endpoint(cfg: EndpointConfig) -> Result<Endpoint, String> {
    Device::open()
        .map_err(libo2g_error("open"))?
        .init(cfg)
        .map_err(libo2g_error("init"))
}

/// Bytes `i` of message `seq`: recognisable and different per message.
pub(crate) fn pattern(seq: u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (seq.wrapping_mul(131).wrapping_add(i as u64 * 7) % 251) as u8)
        .collect()
}

/// The sending half: frames messages like every o2g sender.
pub(crate) struct Sender {
    pub(crate) sock: TcpStream,
    /// Frames with the sequence numbers this sender is at.
    pub(crate) enc: Encoder,
    source: u32,
}

impl Sender {
    pub(crate) fn new(sock: TcpStream) -> Self {
        Self::from_rank(sock, PEER)
    }

    /// A sender whose messages say they come from `source`.
    pub(crate) fn from_rank(sock: TcpStream, source: u32) -> Self {
        Self {
            sock,
            enc: Encoder::new(),
            source,
        }
    }

    pub(crate) fn send(&mut self, tag: u32, payload: &[u8]) -> std::io::Result<()> {
        let env = Envelope {
            source: self.source,
            tag,
            context: 0,
        };
        let header = self.enc.encode(Kind::Eager, env, payload.len() as u64);
        self.sock.write_all(&header)?;
        self.sock.write_all(payload)
    }
}

pub(crate) fn sel(tag: u32) -> Selector {
    Selector::new(Some(PEER), Some(tag), 0)
}

/// Waits (bounded) for the next completion.
pub(crate) fn next_completion(ep: &mut Endpoint) -> Result<Completed, String> {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        match ep.reap().map_err(libo2g_error("reap"))? {
            Some(Reaped::Owned(c)) => return Ok(c),
            Some(Reaped::Raw(_)) => return Err("unexpected raw completion".into()),
            Some(Reaped::Stored(m)) => return Err(format!("unexpected announcement {m:?}")),
            Some(other) => return Err(format!("unexpected record {other:?}")),
            None => {}
        }
        if Instant::now() > deadline {
            // What the module thinks, for whoever reads the failure.
            let ep_stats = ep.stats().map_err(libo2g_error("stats"))?;
            let sock = ep.socket_stats(PEER).map_err(libo2g_error("socket stats"));
            return Err(format!(
                "no completion within 120 s; endpoint {ep_stats:?}; rank {PEER} {sock:?}"
            ));
        }
        ep.poll(Some(Duration::from_millis(500)))
            .map_err(libo2g_error("poll"))?;
    }
}

/// Posts for `tag` from [`PEER`] and returns the message data, whichever
/// path it took.
pub(crate) fn receive(
    ep: &mut Endpoint,
    tag: u32,
    cap: usize,
) -> Result<(Vec<u8>, Result<(), RecvError>), String> {
    receive_from(ep, sel(tag), cap)
}

/// Posts a receive for `sel` (with its tag as user data) and returns the
/// message data, whichever path it took.
pub(crate) fn receive_from(
    ep: &mut Endpoint,
    sel: Selector,
    cap: usize,
) -> Result<(Vec<u8>, Result<(), RecvError>), String> {
    let tag = match sel.tag {
        libo2g::TagSel::Tag(t) => t,
        libo2g::TagSel::Any => u32::MAX,
    };
    let stored = match ep
        .post(vec![0u8; cap], sel, u64::from(tag))
        .map_err(|p| format!("post: {}", p.error))?
    {
        Post::Queued(_) => None,
        Post::Rescan(_) => {
            return Err("the module asked to rescan an endpoint without notices".into())
        }
        Post::Unexpected { msg, mut buf } => {
            let n = msg.copy_to(&mut buf);
            let truncated = msg.len() > buf.len();
            buf.truncate(n);
            msg.free().map_err(libo2g_error("free"))?;
            Some((
                buf,
                if truncated {
                    Err(RecvError::Truncated)
                } else {
                    Ok(())
                },
            ))
        }
    };
    if let Some(done) = stored {
        return Ok(done);
    }
    let c = next_completion(ep)?;
    if c.user_data != u64::from(tag) {
        return Err(format!(
            "completion for {} while waiting for {tag}",
            c.user_data
        ));
    }
    let mut buf = c.buf;
    buf.truncate(c.written);
    Ok((buf, c.status))
}

/// A flood in progress: a sender thread streams `count` messages of `msg`
/// bytes (tag 5, `pattern(i, msg)`) at an endpoint with a 1 MiB dump area
/// and 64 unexpected slots.
pub(crate) struct Flood {
    pub(crate) count: u64,
    pub(crate) msg: usize,
    pub(crate) slab_before: u64,
    pub(crate) sender: std::thread::JoinHandle<std::io::Result<()>>,
}

impl Flood {
    /// Starts a flood of `args[0]` bytes (default 64 MiB) at a new endpoint,
    /// with announcements if `notices`.
    pub(crate) fn start(args: &[String], notices: bool) -> Result<(Endpoint, Flood), String> {
        let total: u64 = args
            .first()
            .and_then(|a| a.parse().ok())
            .unwrap_or(64 << 20);
        let msg = 60_000usize;
        let count = total.div_ceil(msg as u64);
        let cfg = EndpointConfig {
            dump_bytes: 1 << 20,
            max_unexpected: 64,
            notices,
            ..EndpointConfig::default()
        };
        let ep = endpoint(cfg)?;
        let (ours, peer) = tcp_pair()?;
        ep.register_socket(&ours, PEER)
            .map_err(libo2g_error("register"))?;
        let slab_before = slab_kib();
        let sender = std::thread::spawn(move || -> std::io::Result<()> {
            let mut tx = Sender::new(peer);
            for i in 0..count {
                tx.send(5, &pattern(i, msg))?;
            }
            Ok(())
        });
        Ok((
            ep,
            Flood {
                count,
                msg,
                slab_before,
                sender,
            },
        ))
    }
}

/// Polls `ep`'s counters until they satisfy `ready`, at most `within`;
/// returns the counters that did. Errors name `what` and the last counters.
pub(crate) fn wait_for_stats(
    ep: &Endpoint,
    what: &str,
    within: Duration,
    ready: impl Fn(&libo2g::abi::EndpointStats) -> bool,
) -> Result<libo2g::abi::EndpointStats, String> {
    let deadline = Instant::now() + within;
    loop {
        let s = ep.stats().map_err(libo2g_error("stats"))?;
        if ready(&s) {
            return Ok(s);
        }
        if Instant::now() > deadline {
            return Err(format!("{what}: not within {} s; {s:?}", within.as_secs()));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Waits, reading nothing, until `ep`'s connections have stalled more than
/// `stalls` times in all (a flood's sender is then held back), at most
/// 30 s; returns the counters at that moment. A debug guest under TCG on a
/// busy host moves a few MB/s, so no fixed pause is sure to fill a dump
/// area.
pub(crate) fn wait_for_stall(
    ep: &Endpoint,
    stalls: u64,
) -> Result<libo2g::abi::EndpointStats, String> {
    wait_for_stats(
        ep,
        &format!("the connection never stalled ({stalls} stalls so far)"),
        Duration::from_secs(30),
        |s| s.backpressure_events > stalls,
    )
}

pub(crate) fn slab_kib() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("Slab:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}
