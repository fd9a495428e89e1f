//! In-guest checks of the receive path: messages matched and written in the
//! protocol handler, unexpected messages (also one whose receive is posted
//! while it is being stored), back-pressure, peer misbehaviour and teardown
//! with traffic in flight.

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use libo2g::{Completed, Device, Endpoint, EndpointConfig, Post, Reaped, RecvError, Selector};
use o2g_core::proto::envelope::Envelope;
use o2g_core::proto::wire::{Encoder, Kind};

use crate::CheckResult;

/// The rank our peer has in every check.
const PEER: u32 = 1;

pub(crate) fn e(what: &str) -> impl Fn(libo2g::Error) -> String + '_ {
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

pub(crate) fn endpoint(cfg: EndpointConfig) -> Result<Endpoint, String> {
    Device::open()
        .map_err(e("open"))?
        .init(cfg)
        .map_err(e("init"))
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
    enc: Encoder,
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
    Selector {
        source: Some(PEER),
        tag: Some(tag),
        context: 0,
    }
}

/// Waits (bounded) for the next completion.
pub(crate) fn next_completion(ep: &mut Endpoint) -> Result<Completed, String> {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        match ep.reap().map_err(e("reap"))? {
            Some(Reaped::Owned(c)) => return Ok(c),
            Some(Reaped::Raw(_)) => return Err("unexpected raw completion".into()),
            Some(Reaped::Stored(m)) => return Err(format!("unexpected announcement {m:?}")),
            Some(other) => return Err(format!("unexpected record {other:?}")),
            None => {}
        }
        if Instant::now() > deadline {
            // What the module thinks, for whoever reads the failure.
            let ep_stats = ep.stats().map_err(e("stats"))?;
            let sock = ep.socket_stats(PEER).map_err(e("socket stats"));
            return Err(format!(
                "no completion within 120 s; endpoint {ep_stats:?}; rank {PEER} {sock:?}"
            ));
        }
        ep.poll(Some(Duration::from_millis(500)))
            .map_err(e("poll"))?;
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
    let tag = sel.tag.unwrap_or(u32::MAX);
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
            msg.free().map_err(e("free"))?;
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

/// Expected receives of 0 B to 64 MiB land in the posted buffers; messages
/// sent before their receive are stored, found by the later post, copied
/// out and freed; a short buffer reports truncation.
pub(crate) fn paths() -> CheckResult {
    let mut ep = endpoint(EndpointConfig::default())?;
    let (ours, peer) = tcp_pair()?;
    ep.register_socket(&ours, PEER).map_err(e("register"))?;
    let mut tx = Sender::new(peer);

    let sizes = [0usize, 1, 31, 4096, 65_537, 1 << 20, 9 << 20, 64 << 20];
    for (i, &len) in sizes.iter().enumerate() {
        let tag = i as u32;
        let h = ep
            .post(vec![0u8; len], sel(tag), u64::from(tag))
            .map_err(|p| p.error.to_string())?;
        if !matches!(h, Post::Queued(_)) {
            return Err(format!("{len} B: posted first but found a stored message"));
        }
        drop(h);
        let data = pattern(i as u64, len);
        let t = std::thread::spawn({
            let mut s = tx.sock.try_clone().map_err(|e| e.to_string())?;
            let mut enc = tx.enc;
            tx.enc.encode(Kind::Eager, Envelope::default(), 0); // keep sequence numbers in step
            move || -> std::io::Result<()> {
                let env = Envelope {
                    source: PEER,
                    tag,
                    context: 0,
                };
                s.write_all(&enc.encode(Kind::Eager, env, data.len() as u64))?;
                s.write_all(&data)
            }
        });
        let c = next_completion(&mut ep)?;
        t.join()
            .map_err(|_| "sender panicked")?
            .map_err(|e| e.to_string())?;
        if c.status.is_err() || c.len != len as u64 || c.written != len || c.tag != tag {
            return Err(format!(
                "{len} B: bad completion {:?} len {} written {}",
                c.status, c.len, c.written
            ));
        }
        if c.buf != pattern(i as u64, len) {
            return Err(format!("{len} B: payload differs"));
        }
    }
    let s = ep.stats().map_err(e("stats"))?;
    if s.matched_msgs != sizes.len() as u64 || s.unexpected_msgs != 0 {
        return Err(format!("expected path not taken: {s:?}"));
    }
    println!(
        "expected: {} sizes up to 64 MiB matched directly",
        sizes.len()
    );

    // Unexpected: send first, then post.
    for k in 0..3u64 {
        tx.send(100 + k as u32, &pattern(100 + k, 5000))
            .map_err(|e| e.to_string())?;
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while ep.stats().map_err(e("stats"))?.unexpected < 3 {
        if Instant::now() > deadline {
            return Err("3 unexpected messages never stored".into());
        }
        ep.poll(Some(Duration::from_millis(200)))
            .map_err(e("poll"))?;
    }
    for k in [2u64, 0, 1] {
        let (data, status) = receive(&mut ep, 100 + k as u32, 5000)?;
        if status.is_err() || data != pattern(100 + k, 5000) {
            return Err(format!("unexpected message {k} wrong: {status:?}"));
        }
    }
    let s = ep.stats().map_err(e("stats"))?;
    if s.unexpected != 0 || s.dump_used != 0 || s.unexpected_msgs != 3 {
        return Err(format!("stored messages not freed: {s:?}"));
    }
    // Truncation, on both paths.
    tx.send(200, &pattern(200, 100))
        .map_err(|e| e.to_string())?;
    std::thread::sleep(Duration::from_millis(300));
    let (data, status) = receive(&mut ep, 200, 10)?;
    if status != Err(RecvError::Truncated) || data != pattern(200, 100)[..10] {
        return Err(format!("stored truncation: {status:?}"));
    }
    let h = ep
        .post(vec![0u8; 10], sel(201), 201)
        .map_err(|p| p.error.to_string())?;
    drop(h);
    tx.send(201, &pattern(201, 100))
        .map_err(|e| e.to_string())?;
    let c = next_completion(&mut ep)?;
    if c.status != Err(RecvError::Truncated) || c.len != 100 || c.buf[..] != pattern(201, 100)[..10]
    {
        return Err(format!("direct truncation: {:?} len {}", c.status, c.len));
    }
    println!("unexpected: 3 stored, taken out of order, freed; truncation reported");
    posted_while_storing(&mut ep, &mut tx)
}

/// A receive posted while its message streams into the dump area: the
/// module finishes storing it, then copies it into the receive (outside
/// its lock, and for a message this large in a work item rather than the
/// protocol handler) and completes that, without announcing the message.
fn posted_while_storing(ep: &mut Endpoint, tx: &mut Sender) -> CheckResult {
    let (tag, len) = (300u32, 4usize << 20);
    let data = pattern(300, len);
    let before = ep.stats().map_err(e("stats"))?;
    let env = Envelope {
        source: PEER,
        tag,
        context: 0,
    };
    let header = tx.enc.encode(Kind::Eager, env, len as u64);
    tx.sock.write_all(&header).map_err(|e| e.to_string())?;
    tx.sock
        .write_all(&data[..len / 2])
        .map_err(|e| e.to_string())?;
    // The header was read and the message given a dump region.
    let deadline = Instant::now() + Duration::from_secs(30);
    while ep.stats().map_err(e("stats"))?.dump_used == 0 {
        if Instant::now() > deadline {
            return Err("half a message sent, but no dump region taken".into());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let h = ep
        .post(vec![0u8; len], sel(tag), u64::from(tag))
        .map_err(|p| p.error.to_string())?;
    if !matches!(h, Post::Queued(_)) {
        return Err("a message still arriving was offered as stored".into());
    }
    drop(h);
    tx.sock
        .write_all(&data[len / 2..])
        .map_err(|e| e.to_string())?;
    let c = next_completion(ep)?;
    if c.status.is_err() || c.len != len as u64 || c.written != len || c.tag != tag {
        return Err(format!(
            "posted while storing: bad completion {:?} len {} written {}",
            c.status, c.len, c.written
        ));
    }
    if c.buf != data {
        return Err("posted while storing: payload differs".into());
    }
    let after = ep.stats().map_err(e("stats"))?;
    if after.matched_msgs != before.matched_msgs
        || after.unexpected_msgs != before.unexpected_msgs + 1
        || after.dump_used != 0
    {
        return Err(format!(
            "posted while storing: not the stored path, or not freed: {after:?}"
        ));
    }
    // 4 MiB is too much to copy with bottom halves off: the module's work
    // item copies it, in process context.
    if after.deferred_copies != before.deferred_copies + 1 {
        return Err(format!(
            "posted while storing: 4 MiB copied in the protocol handler, not deferred: {after:?}"
        ));
    }
    println!("posted while storing: 4 MiB stored, then copied into the receive by a work item");
    Ok(())
}

/// A malformed header, an oversize length and a close mid-message each
/// fail only their own connection, with the pending receive completing
/// with an error; a healthy connection carries on.
pub(crate) fn misbehaviour() -> CheckResult {
    let cfg = EndpointConfig {
        max_message: 1 << 20,
        ..EndpointConfig::default()
    };
    let mut ep = endpoint(cfg)?;
    let mut peers = Vec::new();
    let mut keep = Vec::new();
    for rank in 1..=4u32 {
        let (ours, peer) = tcp_pair()?;
        ep.register_socket(&ours, rank).map_err(e("register"))?;
        keep.push(ours);
        peers.push(peer);
    }
    let post = |ep: &mut Endpoint, rank: u32| {
        let s = Selector {
            source: Some(rank),
            tag: Some(7),
            context: 0,
        };
        ep.post(vec![0u8; 64], s, u64::from(rank))
            .map(|_| ())
            .map_err(|p| p.error.to_string())
    };
    for rank in 1..=4 {
        post(&mut ep, rank)?;
    }
    // 1: garbage instead of a header.
    peers[0]
        .write_all(&[0xffu8; 64])
        .map_err(|e| e.to_string())?;
    // 2: a header announcing more than max_message.
    let mut enc = Encoder::new();
    let env = |source| Envelope {
        source,
        tag: 7,
        context: 0,
    };
    peers[1]
        .write_all(&enc.encode(Kind::Eager, env(2), 1 << 30))
        .map_err(|e| e.to_string())?;
    // 3: half a message, then close.
    let mut enc3 = Encoder::new();
    peers[2]
        .write_all(&enc3.encode(Kind::Eager, env(3), 64))
        .map_err(|e| e.to_string())?;
    peers[2].write_all(&[1u8; 20]).map_err(|e| e.to_string())?;
    peers[2]
        .shutdown(std::net::Shutdown::Both)
        .map_err(|e| e.to_string())?;
    let mut failed = Vec::new();
    for _ in 0..3 {
        let c = next_completion(&mut ep)?;
        if c.status != Err(RecvError::ConnectionFailed) {
            return Err(format!(
                "rank {}: status {:?}, want ConnectionFailed",
                c.user_data, c.status
            ));
        }
        failed.push(c.user_data);
    }
    failed.sort_unstable();
    if failed != [1, 2, 3] {
        return Err(format!("failed ranks {failed:?}"));
    }
    // 4 still works.
    let mut enc4 = Encoder::new();
    peers[3]
        .write_all(&enc4.encode(Kind::Eager, env(4), 5))
        .map_err(|e| e.to_string())?;
    peers[3].write_all(b"alive").map_err(|e| e.to_string())?;
    let c = next_completion(&mut ep)?;
    if c.user_data != 4 || c.status.is_err() || &c.buf[..c.written] != b"alive" {
        return Err(format!("healthy connection broken: {:?}", c.status));
    }
    let s = ep.stats().map_err(e("stats"))?;
    if s.protocol_errors != 2 || s.failed_sockets != 3 {
        return Err(format!("counters: {s:?}"));
    }
    for rank in 1..=3 {
        let st = ep.socket_stats(rank).map_err(e("socket stats"))?;
        if st.state != libo2g::abi::socket_state::FAILED {
            return Err(format!("rank {rank} state {}", st.state));
        }
    }
    // A post for a failed rank is refused at once.
    match post(&mut ep, 1) {
        Err(msg) if msg.contains("reset") || msg.contains("ECONNRESET") || msg.contains("104") => {}
        other => return Err(format!("post to a failed rank: {other:?}")),
    }
    println!("garbage, oversize and truncated peers failed alone; {s:?}");
    Ok(())
}

/// A peer that closes between messages and a peer that resets the
/// connection (an RST, which never calls `sk_data_ready`) both fail their
/// connection: the receives posted for them complete with an error.
pub(crate) fn peer_gone() -> CheckResult {
    let mut ep = endpoint(EndpointConfig::default())?;
    let (closing_ours, closing) = tcp_pair()?;
    let (resetting_ours, resetting) = tcp_pair()?;
    ep.register_socket(&closing_ours, 1)
        .map_err(e("register"))?;
    ep.register_socket(&resetting_ours, 2)
        .map_err(e("register"))?;
    // One whole message first: the close comes at a message boundary.
    let mut tx = Sender::from_rank(closing, 1);
    tx.send(3, b"last words").map_err(|e| e.to_string())?;
    let (data, status) = receive(&mut ep, 3, 64)?;
    if status.is_err() || data != b"last words" {
        return Err(format!("message before the close: {status:?}"));
    }
    for rank in [1u32, 2] {
        let s = Selector {
            source: Some(rank),
            tag: Some(4),
            context: 0,
        };
        ep.post(vec![0u8; 64], s, u64::from(rank))
            .map_err(|p| p.error.to_string())?;
    }
    drop(tx);
    let off = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: `resetting` is an open socket and `off` a valid linger value
    // that outlives the call.
    let r = unsafe {
        libc::setsockopt(
            std::os::fd::AsRawFd::as_raw_fd(&resetting),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&raw const off).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    if r != 0 {
        return Err(format!("SO_LINGER: {}", std::io::Error::last_os_error()));
    }
    drop(resetting); // closes with an RST
    let mut failed = Vec::new();
    for _ in 0..2 {
        let c = next_completion(&mut ep)?;
        if c.status != Err(RecvError::ConnectionFailed) {
            return Err(format!("rank {}: {:?}", c.user_data, c.status));
        }
        failed.push(c.user_data);
    }
    failed.sort_unstable();
    if failed != [1, 2] {
        return Err(format!("completed ranks {failed:?}"));
    }
    let s = ep.stats().map_err(e("stats"))?;
    if s.failed_sockets != 2 || s.protocol_errors != 0 {
        return Err(format!("counters: {s:?}"));
    }
    println!("clean close and reset both failed their receives");
    Ok(())
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
        ep.register_socket(&ours, PEER).map_err(e("register"))?;
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

/// A sender floods `total` bytes of unexpected messages at a receiver
/// with a 1 MiB dump area that drains slowly: TCP holds the rest, every
/// byte arrives in order, the dump area never overflows.
pub(crate) fn flood(args: &[String]) -> CheckResult {
    let (mut ep, flood) = Flood::start(args, false)?;
    let (count, msg, slab_before, sender) =
        (flood.count, flood.msg, flood.slab_before, flood.sender);
    let mut max_dump = 0;
    let mut max_slab = 0;
    for i in 0..count {
        if i % 256 == 0 {
            // Drain slowly now and then, so the sender must wait.
            std::thread::sleep(Duration::from_millis(50));
            let s = ep.stats().map_err(e("stats"))?;
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
    let s = ep.stats().map_err(e("stats"))?;
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

/// Unregister and close with receives posted and data streaming; the
/// socket keeps working as a plain socket after unregister.
pub(crate) fn teardown() -> CheckResult {
    let mut ep = endpoint(EndpointConfig::default())?;
    let (ours, peer) = tcp_pair()?;
    ep.register_socket(&ours, PEER).map_err(e("register"))?;
    for tag in 0..4 {
        let _ = ep
            .post(vec![0u8; 8 << 20], sel(tag), u64::from(tag))
            .map_err(|p| p.error.to_string())?;
    }
    let streaming = std::thread::spawn(move || {
        let mut tx = Sender::new(peer);
        for tag in 0..4 {
            if tx.send(tag, &pattern(u64::from(tag), 8 << 20)).is_err() {
                break;
            }
        }
        tx
    });
    std::thread::sleep(Duration::from_millis(300));
    ep.unregister_socket(PEER)
        .map_err(e("unregister mid-stream"))?;
    // Unregister is synchronous: when it returns, the socket is gone from
    // the endpoint, whatever completed or aborted.
    let s = ep.stats().map_err(e("stats"))?;
    if s.sockets != 0 {
        return Err(format!("socket still registered after unregister: {s:?}"));
    }
    drop(ours);
    let tx = streaming.join().map_err(|_| "sender panicked")?;
    drop(tx);
    println!("unregistered mid-stream: {s:?}");

    // Close the device with receives posted and data in flight.
    let mut ep = endpoint(EndpointConfig::default())?;
    let (ours, peer) = tcp_pair()?;
    ep.register_socket(&ours, PEER).map_err(e("register"))?;
    let _ = ep
        .post(vec![0u8; 16 << 20], sel(1), 1)
        .map_err(|p| p.error.to_string())?;
    let t = std::thread::spawn(move || {
        let mut tx = Sender::new(peer);
        let _ = tx.send(1, &pattern(1, 16 << 20));
    });
    std::thread::sleep(Duration::from_millis(200));
    drop(ep);
    drop(ours);
    t.join().map_err(|_| "sender panicked")?;
    println!("closed the device with a 16 MiB receive in flight");
    Ok(())
}

/// A child process with receives posted and data streaming into them is
/// killed with SIGKILL; the parent checks the endpoint went away.
pub(crate) fn sigkill() -> CheckResult {
    let (ours, peer) = tcp_pair()?;
    // SAFETY: The child only uses async-signal-unsafe code in its own copy
    // of the address space and never returns into the parent's stack frames.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err("fork failed".into());
    }
    if pid == 0 {
        drop(peer);
        let code = (|| -> Result<(), String> {
            let mut ep = endpoint(EndpointConfig::default())?;
            ep.register_socket(&ours, PEER).map_err(e("register"))?;
            for tag in 0..8 {
                let _ = ep
                    .post(vec![0u8; 4 << 20], sel(tag), u64::from(tag))
                    .map_err(|p| p.error.to_string())?;
            }
            std::thread::sleep(Duration::from_secs(60));
            Ok(())
        })();
        // SAFETY: Leaving the child without running the parent's destructors.
        unsafe { libc::_exit(i32::from(code.is_err())) };
    }
    drop(ours);
    let writer = std::thread::spawn(move || {
        let mut tx = Sender::new(peer);
        for tag in 0..8 {
            if tx.send(tag, &pattern(u64::from(tag), 4 << 20)).is_err() {
                break;
            }
        }
    });
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: Signalling the child we forked.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let mut status = 0;
    // SAFETY: Reaping our own child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    writer.join().map_err(|_| "writer panicked")?;
    let listing = Device::open()
        .map_err(e("open"))?
        .list_endpoints()
        .map_err(e("list"))?;
    if listing.endpoints.iter().any(|s| s.pid == pid as u32) {
        return Err(format!("killed process {pid} still has an endpoint"));
    }
    println!("SIGKILL with receives posted and streaming: endpoint gone");
    Ok(())
}

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
    ep.register_socket(&ours, PEER).map_err(e("register"))?;
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
                    while let Some(Reaped::Owned(c)) = ep.reap().map_err(e("reap"))? {
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
                                msg.free().map_err(e("free"))?;
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
    let s = guard.0.stats().map_err(e("stats"))?;
    println!(
        "race: {n} messages, exactly once and in order; {} matched in the handler, {} stored first",
        s.matched_msgs, s.unexpected_msgs
    );
    Ok(())
}
