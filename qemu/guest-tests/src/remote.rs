//! The receive path over the harness's virtual network: node 0 receives
//! through the module, every other node sends from its own VM, so softirq
//! runs from virtio-net's receive path rather than loopback.
//!
//! Node 0 drives the senders with small commands written on the very
//! socket it has registered (sends are plain writes on a hooked socket):
//! a sender does only what it is told, so each phase starts when the
//! receiver is ready for it.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use libo2g::{Endpoint, EndpointConfig, Post, Selector};

use crate::harness::{
    endpoint, libo2g_error, next_completion, pattern, receive_from, slab_kib, Sender,
};
use crate::{env_number, CheckResult};

/// Port node 0 listens on.
const PORT: u16 = 7001;
/// Bound on waiting for the other guests (they may still be booting) and
/// on each command a sender waits for.
const WAIT: Duration = Duration::from_secs(100);
/// Expected-path sizes: from nothing to many skbs and socket buffers.
const SIZES: [usize; 7] = [0, 1, 1448, 1449, 65_537, 1 << 20, 16 << 20];
/// Size of each flood message.
const FLOOD_MSG: usize = 60_000;
/// Tag of the flood messages.
const FLOOD_TAG: u32 = 5;

/// A command from node 0 to a sender.
#[derive(Clone, Copy, Debug)]
enum Command {
    /// Send `pattern(seq, len)` with `tag`.
    One { tag: u32, seq: u64, len: u64 },
    /// Send `pattern(i, len)` with `tag` for i in 0..count.
    Flood { tag: u32, count: u64, len: u64 },
    /// Stop.
    Done,
}

impl Command {
    const BYTES: usize = 24;

    fn encode(self) -> [u8; Self::BYTES] {
        let (op, tag, a, b) = match self {
            Command::One { tag, seq, len } => (1u32, tag, seq, len),
            Command::Flood { tag, count, len } => (2, tag, count, len),
            Command::Done => (3, 0, 0, 0),
        };
        let mut out = [0u8; Self::BYTES];
        out[0..4].copy_from_slice(&op.to_le_bytes());
        out[4..8].copy_from_slice(&tag.to_le_bytes());
        out[8..16].copy_from_slice(&a.to_le_bytes());
        out[16..24].copy_from_slice(&b.to_le_bytes());
        out
    }

    fn decode(b: &[u8; Self::BYTES]) -> Result<Self, String> {
        let word = |r: std::ops::Range<usize>| {
            let mut w = [0u8; 8];
            w[..r.len()].copy_from_slice(&b[r]);
            u64::from_le_bytes(w)
        };
        let (tag, a, len) = (word(4..8) as u32, word(8..16), word(16..24));
        match word(0..4) {
            1 => Ok(Command::One { tag, seq: a, len }),
            2 => Ok(Command::Flood { tag, count: a, len }),
            3 => Ok(Command::Done),
            op => Err(format!("unknown command {op}")),
        }
    }
}

/// `recv-remote [FLOOD_BYTES]`: node 0 receives, the others send.
pub(crate) fn remote(args: &[String]) -> CheckResult {
    let node = env_number("O2G_NODE")?;
    let nodes = env_number("O2G_NODES")?;
    if nodes < 2 {
        return Err("recv-remote needs at least two nodes".into());
    }
    if node == 0 {
        let flood: u64 = args
            .first()
            .and_then(|a| a.parse().ok())
            .unwrap_or(32 << 20);
        receiver(nodes, flood)
    } else {
        sender(node)
    }
}

/// A sender: connect to node 0, say who we are, obey commands.
fn sender(node: u32) -> CheckResult {
    let prefix = std::env::var("O2G_PEER_PREFIX").map_err(|_| "O2G_PEER_PREFIX unset")?;
    let (mut sock, _) = crate::connect_node0(&prefix, PORT, WAIT)?;
    sock.set_read_timeout(Some(WAIT))
        .map_err(|e| e.to_string())?;
    sock.write_all(&node.to_le_bytes())
        .map_err(|e| format!("hello: {e}"))?;
    let mut commands = sock.try_clone().map_err(|e| e.to_string())?;
    let mut tx = Sender::from_rank(sock, node);
    let mut sent = 0u64;
    loop {
        let mut raw = [0u8; Command::BYTES];
        commands
            .read_exact(&mut raw)
            .map_err(|e| format!("node {node}: waiting for a command: {e}"))?;
        let io = |e: std::io::Error| format!("node {node}: send: {e}");
        match Command::decode(&raw)? {
            Command::One { tag, seq, len } => {
                tx.send(tag, &pattern(seq, len as usize)).map_err(io)?;
                sent += 1;
            }
            Command::Flood { tag, count, len } => {
                for i in 0..count {
                    tx.send(tag, &pattern(i, len as usize)).map_err(io)?;
                }
                sent += count;
            }
            Command::Done => break,
        }
    }
    println!("node {node}: sent {sent} messages to node 0");
    Ok(())
}

/// A connection to one sender: its rank and the socket commands go out on.
struct Peer {
    rank: u32,
    sock: TcpStream,
}

impl Peer {
    fn tell(&mut self, cmd: Command) -> CheckResult {
        self.sock
            .write_all(&cmd.encode())
            .map_err(|e| format!("command to node {}: {e}", self.rank))
    }

    fn sel(&self, tag: u32) -> Selector {
        Selector::new(Some(self.rank), Some(tag), 0)
    }
}

/// Node 0: accept every sender, register its socket, then run the
/// expected, unexpected and flood phases against each.
fn receiver(nodes: u32, flood: u64) -> CheckResult {
    let cfg = EndpointConfig {
        dump_bytes: 1 << 20,
        max_unexpected: 64,
        ..EndpointConfig::default()
    };
    let mut ep = endpoint(cfg)?;
    let mut peers = accept_senders(nodes)?;
    for p in &peers {
        ep.register_socket(&p.sock, p.rank)
            .map_err(libo2g_error("register"))?;
    }
    for p in &mut peers {
        expected(&mut ep, p)?;
        unexpected(&mut ep, p)?;
    }
    let slab_before = slab_kib();
    let count = flood.div_ceil(FLOOD_MSG as u64);
    let started = Instant::now();
    for p in &mut peers {
        p.tell(Command::Flood {
            tag: FLOOD_TAG,
            count,
            len: FLOOD_MSG as u64,
        })?;
    }
    // Take the senders' floods in turn, slowly now and then, so that the
    // 1 MiB dump area fills and TCP has to hold the rest.
    let mut max_dump = 0;
    let mut max_slab = 0;
    for i in 0..count {
        if i % 64 == 0 {
            std::thread::sleep(Duration::from_millis(50));
            max_dump = max_dump.max(ep.stats().map_err(libo2g_error("stats"))?.dump_used);
            max_slab = max_slab.max(slab_kib().saturating_sub(slab_before));
        }
        for p in &peers {
            let (data, status) = receive_from(&mut ep, p.sel(FLOOD_TAG), FLOOD_MSG)?;
            if status.is_err() || data != pattern(i, FLOOD_MSG) {
                return Err(format!(
                    "flood message {i} of {count} from node {} wrong ({status:?})",
                    p.rank
                ));
            }
        }
    }
    let secs = started.elapsed().as_secs_f64();
    // Before the senders are let go: one that closes its connection at
    // once counts as a failed socket.
    let s = ep.stats().map_err(libo2g_error("stats"))?;
    for p in &mut peers {
        p.tell(Command::Done)?;
    }
    if s.backpressure_events == 0 {
        return Err(format!("the flood was never held back: {s:?}"));
    }
    if max_dump > 1 << 20 || s.failed_sockets != 0 || s.protocol_errors != 0 {
        return Err(format!("flood: dump peak {max_dump}, {s:?}"));
    }
    println!(
        "remote: {} sender VM(s); flood {} MiB each in order at {:.1} MiB/s total; back-pressure {} times; dump peak {} KiB; slab growth peak {} KiB; data_ready {} deferred {}",
        peers.len(),
        flood >> 20,
        (flood * peers.len() as u64) as f64 / secs / (1 << 20) as f64,
        s.backpressure_events,
        max_dump >> 10,
        max_slab,
        s.data_ready_events,
        s.deferred_reads
    );
    Ok(())
}

/// Accepts one connection from each of nodes 1..nodes; each names itself.
fn accept_senders(nodes: u32) -> Result<Vec<Peer>, String> {
    let listener = TcpListener::bind(("0.0.0.0", PORT)).map_err(|e| format!("bind: {e}"))?;
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    let deadline = Instant::now() + WAIT;
    let mut peers: Vec<Peer> = Vec::new();
    while peers.len() + 1 < nodes as usize {
        match listener.accept() {
            Ok((mut sock, from)) => {
                sock.set_nonblocking(false).map_err(|e| e.to_string())?;
                sock.set_read_timeout(Some(WAIT))
                    .map_err(|e| e.to_string())?;
                let mut hello = [0u8; 4];
                sock.read_exact(&mut hello)
                    .map_err(|e| format!("hello from {from}: {e}"))?;
                let rank = u32::from_le_bytes(hello);
                if rank == 0 || rank >= nodes || peers.iter().any(|p| p.rank == rank) {
                    return Err(format!("{from} claims to be node {rank}"));
                }
                peers.push(Peer { rank, sock });
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if Instant::now() > deadline {
                    let seen: Vec<u32> = peers.iter().map(|p| p.rank).collect();
                    return Err(format!("only nodes {seen:?} connected of {nodes}"));
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => return Err(format!("accept: {e}")),
        }
    }
    peers.sort_by_key(|p| p.rank);
    Ok(peers)
}

/// Receives posted first: each message lands in its buffer in the handler.
fn expected(ep: &mut Endpoint, p: &mut Peer) -> CheckResult {
    let before = ep.stats().map_err(libo2g_error("stats"))?.matched_msgs;
    for (i, &len) in SIZES.iter().enumerate() {
        let tag = 10 + i as u32;
        match ep
            .post(vec![0u8; len], p.sel(tag), u64::from(tag))
            .map_err(|x| format!("post: {}", x.error))?
        {
            Post::Queued(_) => {}
            Post::Unexpected { .. } => return Err(format!("{len} B: found before it was sent")),
            Post::Rescan(_) => {
                return Err("the module asked to rescan an endpoint without notices".into())
            }
        }
        p.tell(Command::One {
            tag,
            seq: u64::from(tag),
            len: len as u64,
        })?;
        let c = next_completion(ep)?;
        if c.status.is_err() || c.source != p.rank || c.tag != tag || c.written != len {
            return Err(format!(
                "node {}: {len} B: {:?} from {} tag {} written {}",
                p.rank, c.status, c.source, c.tag, c.written
            ));
        }
        if c.buf != pattern(u64::from(tag), len) {
            return Err(format!("node {}: {len} B: payload differs", p.rank));
        }
    }
    let matched = ep.stats().map_err(libo2g_error("stats"))?.matched_msgs - before;
    if matched != SIZES.len() as u64 {
        return Err(format!(
            "node {}: {matched} of {} matched directly",
            p.rank,
            SIZES.len()
        ));
    }
    Ok(())
}

/// Messages sent before their receive are stored, then found by the post.
fn unexpected(ep: &mut Endpoint, p: &mut Peer) -> CheckResult {
    for k in 0..3u32 {
        p.tell(Command::One {
            tag: 100 + k,
            seq: u64::from(100 + k),
            len: 5000,
        })?;
    }
    let deadline = Instant::now() + WAIT;
    while ep.stats().map_err(libo2g_error("stats"))?.unexpected < 3 {
        if Instant::now() > deadline {
            return Err(format!("node {}: 3 messages never stored", p.rank));
        }
        ep.poll(Some(Duration::from_millis(200)))
            .map_err(libo2g_error("poll"))?;
    }
    for k in [2u32, 0, 1] {
        let (data, status) = receive_from(ep, p.sel(100 + k), 5000)?;
        if status.is_err() || data != pattern(u64::from(100 + k), 5000) {
            return Err(format!("node {}: stored message {k}: {status:?}", p.rank));
        }
    }
    let s = ep.stats().map_err(libo2g_error("stats"))?;
    if s.unexpected != 0 || s.dump_used != 0 {
        return Err(format!("node {}: stored messages not freed: {s:?}", p.rank));
    }
    Ok(())
}
