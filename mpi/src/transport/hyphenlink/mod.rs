//! `hyphenlink`: MPI over the emulated HyphenLink board (`o2g-hyphen`),
//! with AP1000 buffer receiving as the receive path.
//!
//! # Design
//!
//! All processes map one shared region holding a [`Board`] of `size`
//! nodes (world rank = node number), configured with one AP1000 receive
//! ring per (receiver, sender) pair in the receiver's board memory, plus a
//! small control block of this transport after the board.
//!
//! - **Framing.** A message to rank `d` is written by its sender into the
//!   ring `d` keeps for it, which has exactly one writer. The MPI envelope
//!   travels in the ring message header: `src` = the sender's world rank,
//!   `tag` = the tag, `user` = context id (low 32 bits) and a frame kind
//!   (high 32 bits). A message that fits the ring's largest payload is one
//!   `WHOLE` frame; a longer one is a `FIRST` frame (8-byte little-endian
//!   total length, then data) followed by `CONT` frames. A sender writes
//!   the frames of one message back to back (sends to one destination are
//!   queued in order), so the receiver only tracks "the message in
//!   progress" per ring. Chunks feed the matcher's streaming API
//!   (`arrive` / `payload` / `end`) straight from the ring
//!   ([`o2g_hyphen::ring::Message::payload`] is in place), so a 1 GiB
//!   message never needs a second staging buffer on the wire side.
//! - **Receiving.** Every progress round drains each ring with
//!   `try_recvs`, hands the payload to the matcher and marks the frame
//!   USED, which returns its space to the writer. That path is loads,
//!   stores and copies on the shared mapping: no system call. When the
//!   matcher's unexpected queue is full, frames are copied to a
//!   per-sender overflow list (kept in order) instead, as the socket
//!   transports do.
//! - **Sending.** Frames go in with `RingWriter::try_send`; a full ring
//!   never blocks the writer. A blocking `send` keeps receiving (draining
//!   its own rings) while it waits for room, so two ranks flooding each
//!   other cannot deadlock; an `isend` writes what fits and copies only
//!   the rest into a per-destination queue that progress pushes later.
//! - **Notification and waiting.** A rank with nothing to do polls its
//!   rings spinning for 20 µs, then yielding the CPU between polls until
//!   200 µs, then sleeps. Before sleeping it sets its `waiting` word in the
//!   control block and re-checks everything; a sender that publishes a frame, and
//!   a receiver that frees ring space, PB a task id into the FIFO of a peer
//!   whose `waiting` word is set (the Dekker pattern with `SeqCst` fences
//!   on both sides makes a missed wake-up impossible; PBs are hints, a full
//!   FIFO already means "wake up"). The sleep is `O2G_HYPHEN_WAIT`:
//!   `block` (default for `shm`) is the interrupt EXT, a futex sleep on the
//!   node's FIFO doorbell; `sleep` (default for `ivshmem`, where futexes do
//!   not cross guests) sleeps 20 µs, doubling to 1 ms. Each sleep lasts at
//!   most 50 ms, after which liveness is re-checked.
//! - **Dead peers.** Each node has a state word (`ALIVE`, `CLOSED` when its
//!   transport is dropped, `EXITED` from an `atexit` hook, so a process
//!   that calls `exit` without finalizing is seen at once) and a heartbeat
//!   counter a helper thread bumps every 100 ms. A peer whose state is not
//!   `ALIVE`, or whose heartbeat stood still for `O2G_HYPHEN_DEAD_AFTER`
//!   seconds (default 10; a killed or frozen process), is dead: its ring
//!   is drained one last time (what it wrote before dying is delivered),
//!   then receives from it fail, sends to it fail, queued sends fail.
//! - **Region setup** (`O2G_HYPHEN_REGION`). `shm` (default): rank 0
//!   creates `/dev/shm/o2g-hl-<pid>-<nanos>`, lays the board out and
//!   publishes the name through PMI; after a barrier the others map it and
//!   attach; after a second barrier rank 0 unlinks it. `ivshmem`: everyone
//!   maps the BAR of the guest's first ivshmem-plain device, rank 0 formats
//!   it (the ring size is halved until the board fits the BAR), barrier,
//!   the others attach; an absolute path instead of `ivshmem` does the
//!   same with a pre-sized file (how the host tests that path). Ring
//!   capacity: `O2G_HYPHEN_RING_BYTES`, else `O2G_RCVBUF` (the ring is the
//!   receive buffer), else 64 MiB / size² clamped to 16 KiB..1 MiB; the
//!   largest frame is a quarter of it.
//!
//! Why rings rather than DSM pages: a message is written once and read
//! once, so DSM's CACHE / twin / diff / write-back machinery would only add
//! copies and a lock per 4 KiB page, while a ring in the receiver's memory
//! costs one copy in and one copy out, never contends (one writer per
//! ring, whose writer lock is therefore always free) and buffers eagerly on the receiving side, which is what MPI's eager
//! protocol wants.

use std::collections::VecDeque;
use std::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::{Duration, Instant};

use o2g_core::proto::envelope::Envelope;
use o2g_hyphen::ring::{self, Filter, MsgInfo, RingConfig, RingReader, RingWriter};
use o2g_hyphen::wait::WaitPolicy;
use o2g_hyphen::{Board, BoardConfig, Node, Overflow, MAX_NODES, PAGE};
use o2g_nicmem::Region;

use super::matcher::{Matcher, Sink};
use super::outbox::Sends;
use super::{ReceivesThroughMatcher, SendHalf, SendToken, Transport};
use crate::config::{Config, HyphenRegion, HyphenWait};
use crate::error::{Error, Result};
use crate::pmi::Pmi;

/// Frame kinds, in the high half of the ring header's user word.
const KIND_WHOLE: u32 = 1;
const KIND_FIRST: u32 = 2;
const KIND_CONT: u32 = 3;
/// Bytes of the total-length prefix of a `FIRST` frame.
const LEN_PREFIX: usize = 8;

/// Task ids this transport PBs: kind "HL", the sender's rank as argument.
const TASK_WAKE: u32 = 0x484c_0000;

/// Control block after the board: a header, then one line per node.
const CTL_MAGIC: u64 = u64::from_le_bytes(*b"O2GHLCTL");
const CTL_NODES: usize = 8;
const CTL_LINE: usize = 64;
const N_STATE: usize = 0;
const N_WAITING: usize = 4;
const N_BEAT: usize = 8;

const ALIVE: u32 = 1;
const CLOSED: u32 = 2;
const EXITED: u32 = 3;

const HEARTBEAT: Duration = Duration::from_millis(100);
/// An idle rank spins this long, then yields until `YIELD_UNTIL`, then
/// sleeps.
const SPIN_FOR: Duration = Duration::from_micros(20);
const YIELD_UNTIL: Duration = Duration::from_micros(200);
/// Longest single sleep; liveness is re-checked after it.
const SLICE: Duration = Duration::from_millis(50);
const SLEEP_MIN: Duration = Duration::from_micros(20);
const SLEEP_MAX: Duration = Duration::from_millis(1);
/// Progress rounds between heartbeat checks while busy.
const BEAT_CHECK_EVERY: u32 = 64;

const RING_BUDGET: usize = 64 << 20;
const RING_MAX: usize = 1 << 20;
const RING_DEFAULT_MIN: usize = 16 << 10;
const RING_MIN: usize = 4 << 10;

fn unavailable(what: &str, e: impl std::fmt::Display) -> Error {
    Error::TransportUnavailable {
        name: "hyphenlink".into(),
        reason: format!("{what}: {e}"),
    }
}

/// The ring geometry for `capacity` bytes (a multiple of 64): frames of up
/// to a quarter of the ring.
fn ring_config(capacity: usize) -> RingConfig {
    RingConfig {
        capacity,
        max_payload: capacity / 4 - ring::HEADER_BYTES,
    }
}

fn board_config(nodes: u32, capacity: usize) -> BoardConfig {
    BoardConfig {
        nodes,
        dsm_pages: 0,
        cache_pages: 0,
        twin_pages: 0,
        sync_vars: 0,
        ring: Some(ring_config(capacity)),
    }
}

/// Where the control block starts, and the bytes board plus block need.
fn footprint(cfg: &BoardConfig) -> Result<(usize, usize)> {
    let board = Board::required_len(cfg).map_err(|e| Error::Config(format!("hyphenlink: {e}")))?;
    let ctl = board.next_multiple_of(PAGE);
    Ok((ctl, ctl + CTL_LINE * (1 + cfg.nodes as usize)))
}

/// The ring capacity the environment asks for, or the default for `nodes`.
fn ring_capacity(config: &Config, nodes: u32) -> Result<usize> {
    let asked = config.hyphen.ring_bytes.or(config.rcvbuf);
    let n2 = (nodes as usize) * (nodes as usize);
    let cap = match asked {
        Some(c) => c / 64 * 64,
        None => {
            let share = RING_BUDGET / n2;
            let pow = if share == 0 { 0 } else { 1 << share.ilog2() };
            pow.clamp(RING_DEFAULT_MIN, RING_MAX)
        }
    };
    if !(RING_MIN..=1 << 30).contains(&cap) {
        return Err(Error::Config(format!(
            "hyphenlink ring of {cap} bytes: {RING_MIN} bytes to 1 GiB supported"
        )));
    }
    Ok(cap)
}

/// The region and board every rank shares, and what rank 0 must unlink.
struct Setup {
    board: Board,
    ctl: usize,
    unlink: Option<String>,
}

fn setup(config: &Config, pmi: &mut Pmi, sleep: &mut Option<HyphenWait>) -> Result<Setup> {
    let (rank, size) = (pmi.rank(), pmi.size());
    // A shared file every rank maps (the BAR of an ivshmem device, or a
    // pre-sized file standing in for one), formatted by rank 0.
    let shared = match &config.hyphen.region {
        HyphenRegion::Shm => None,
        HyphenRegion::Ivshmem => Some(None),
        HyphenRegion::File(path) => Some(Some(path.clone())),
    };
    sleep.get_or_insert(if shared.is_some() {
        HyphenWait::Timed
    } else {
        HyphenWait::Block
    });
    let mut cap = ring_capacity(config, size)?;
    let attach = |region: Region| -> Result<Board> {
        let board = Board::attach(Arc::new(region), Duration::from_secs(10))
            .map_err(|e| unavailable("attaching to the board", e))?;
        if board.config().nodes != size {
            return Err(Error::Config(format!(
                "the HyphenLink board has {} nodes, the world {size} processes",
                board.config().nodes
            )));
        }
        Ok(board)
    };
    let (board, unlink) = if let Some(path) = shared {
        let region = match &path {
            None => Region::open_ivshmem(0),
            Some(p) => Region::open_path(p),
        }
        .map_err(|e| unavailable("mapping the shared region", e))?;
        if rank == 0 {
            while footprint(&board_config(size, cap))?.1 > region.len() {
                cap /= 2;
                if cap < RING_MIN {
                    return Err(Error::Config(format!(
                        "a shared region of {} bytes cannot hold a HyphenLink board of {size} \
                         nodes",
                        region.len()
                    )));
                }
            }
            let board = format_board(Arc::new(region), size, cap)?;
            pmi.barrier()?;
            (board, None)
        } else {
            pmi.barrier()?;
            (attach(region)?, None)
        }
    } else if rank == 0 {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let name = format!("o2g-hl-{}-{nanos}", std::process::id());
        let len = footprint(&board_config(size, cap))?.1;
        let region =
            Region::create_shm(&name, len).map_err(|e| unavailable("creating the region", e))?;
        let made = format_board(Arc::new(region), size, cap)
            .and_then(|b| pmi.put("o2g-hl-region", &name).map(|()| b))
            .and_then(|b| pmi.barrier().map(|()| b));
        match made {
            Ok(b) => (b, Some(name)),
            Err(e) => {
                let _ = Region::unlink_shm(&name);
                return Err(e);
            }
        }
    } else {
        pmi.barrier()?;
        let name = pmi.get("o2g-hl-region")?;
        let region = Region::open_shm(&name).map_err(|e| unavailable("mapping the region", e))?;
        (attach(region)?, None)
    };
    let (ctl, len) = footprint(board.config())?;
    board
        .region()
        .check(ctl, len - ctl)
        .map_err(|e| unavailable("control block", e))?;
    let magic = board
        .region()
        .u64_at(ctl)
        .map_err(|e| unavailable("control block", e))?;
    if magic.load(Ordering::Acquire) != CTL_MAGIC {
        return Err(unavailable(
            "control block",
            "not initialised by rank 0 (another board layout?)",
        ));
    }
    Ok(Setup { board, ctl, unlink })
}

/// Rank 0: lays out a fresh board and control block in `region`.
fn format_board(region: Arc<Region>, size: u32, cap: usize) -> Result<Board> {
    let cfg = board_config(size, cap);
    let (ctl, len) = footprint(&cfg)?;
    let board = Board::create(Arc::clone(&region), cfg)
        .map_err(|e| unavailable("laying out the board", e))?;
    let init = || -> o2g_nicmem::Result<()> {
        region.fill(ctl, len - ctl, 0)?;
        region
            .u32_at(ctl + CTL_NODES)?
            .store(size, Ordering::Relaxed);
        region.u64_at(ctl)?.store(CTL_MAGIC, Ordering::Release);
        Ok(())
    };
    init().map_err(|e| unavailable("control block", e))?;
    Ok(board)
}

/// The `atexit` hook's target: the state word of this process's node.
static EXIT_HOOK: Mutex<Option<(Arc<Region>, usize)>> = Mutex::new(None);

/// Marks this node `EXITED` when the process calls `exit` without having
/// closed the transport.
extern "C" fn mark_exited() {
    let hook = EXIT_HOOK.try_lock().ok().and_then(|mut h| h.take());
    if let Some((region, off)) = hook {
        if let Ok(w) = region.u32_at(off) {
            w.store(EXITED, Ordering::SeqCst);
        }
    }
}

fn arm_exit_hook(region: Arc<Region>, off: usize) {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| {
        // SAFETY: atexit only records the function pointer; `mark_exited`
        // is a plain `extern "C" fn` without arguments that touches only
        // the static above (never blocking: `try_lock`) and a mapping the
        // static keeps alive through its `Arc`.
        unsafe { libc::atexit(mark_exited) };
    });
    if let Ok(mut h) = EXIT_HOOK.lock() {
        *h = Some((region, off));
    }
}

fn disarm_exit_hook(region: &Arc<Region>) {
    if let Ok(mut h) = EXIT_HOOK.lock() {
        if h.as_ref().is_some_and(|(r, _)| Arc::ptr_eq(r, region)) {
            *h = None;
        }
    }
}

/// Where the bytes of the message arriving from a peer go.
enum Rx {
    Matcher { sink: Sink, left: usize },
    Overflow { left: usize },
}

/// A message the matcher had no room for, kept in arrival order.
struct Held {
    env: Envelope,
    data: Vec<u8>,
    complete: bool,
}

/// How far a message has been written into a ring.
struct Cursor {
    env: Envelope,
    total: usize,
    /// Payload bytes written so far.
    done: usize,
    /// Whether its first frame is in.
    started: bool,
}

impl Cursor {
    fn new(env: Envelope, total: usize) -> Self {
        Self {
            env,
            total,
            done: 0,
            started: false,
        }
    }
}

/// A queued send: its cursor, and the payload from byte `skip` on.
struct Out {
    cur: Cursor,
    data: Vec<u8>,
    skip: usize,
    token: u64,
}

struct Peer {
    /// Into the peer's ring for this rank.
    writer: RingWriter,
    /// This rank's ring for the peer.
    reader: RingReader,
    out: VecDeque<Out>,
    rx: Option<Rx>,
    overflow: VecDeque<Held>,
    dead: Option<String>,
    beat: u64,
    beat_at: Instant,
}

/// Writes frames of `cur` into `w` until the message is all in (`true`)
/// or the ring is full (`false`). `rest` is the payload from `cur.done` on.
fn push(
    w: &RingWriter,
    cur: &mut Cursor,
    rest: &[u8],
    scratch: &mut Vec<u8>,
) -> o2g_hyphen::Result<bool> {
    let max = w.max_payload();
    let start = cur.done;
    loop {
        let rest = &rest[cur.done - start..];
        if cur.started && rest.is_empty() {
            return Ok(true);
        }
        let (kind, n) = if cur.started {
            (KIND_CONT, rest.len().min(max))
        } else if cur.total <= max {
            (KIND_WHOLE, cur.total)
        } else {
            (KIND_FIRST, max - LEN_PREFIX)
        };
        let env = ring::RingEnvelope {
            src: cur.env.source,
            tag: cur.env.tag,
            user: u64::from(kind) << 32 | u64::from(cur.env.context),
        };
        let sent = if kind == KIND_FIRST {
            scratch.clear();
            scratch.extend_from_slice(&(cur.total as u64).to_le_bytes());
            scratch.extend_from_slice(&rest[..n]);
            w.try_send(&env, scratch)
        } else {
            w.try_send(&env, &rest[..n])
        };
        match sent {
            Ok(()) => {
                cur.started = true;
                cur.done += n;
            }
            Err(o2g_hyphen::Error::RingFull { .. }) => return Ok(false),
            Err(e) => return Err(e),
        }
    }
}

/// Starts a message of `total` bytes from a peer: into the matcher, or
/// behind the peer's overflowed messages.
fn start(
    matcher: &mut Matcher,
    rx: &mut Option<Rx>,
    overflow: &mut VecDeque<Held>,
    env: Envelope,
    total: usize,
    max_message: u64,
) -> Result<(), String> {
    if total as u64 > max_message {
        return Err(format!(
            "a message of {total} bytes exceeds O2G_MAX_MESSAGE ({max_message})"
        ));
    }
    let sink = if overflow.is_empty() {
        matcher.arrive(env, total as u64).ok()
    } else {
        None
    };
    *rx = Some(match sink {
        Some(sink) => Rx::Matcher { sink, left: total },
        None => {
            overflow.push_back(Held {
                env,
                data: Vec::with_capacity(total.min(1 << 20)),
                complete: false,
            });
            Rx::Overflow { left: total }
        }
    });
    Ok(())
}

/// Places one received frame from rank `from`.
fn accept(
    matcher: &mut Matcher,
    rx: &mut Option<Rx>,
    overflow: &mut VecDeque<Held>,
    from: u32,
    info: &MsgInfo,
    bytes: &[u8],
    max_message: u64,
) -> Result<(), String> {
    let e = info.envelope;
    if e.src != from {
        return Err(format!(
            "a frame in rank {from}'s ring names source {}",
            e.src
        ));
    }
    let kind = (e.user >> 32) as u32;
    let env = Envelope {
        source: e.src,
        tag: e.tag,
        context: e.user as u32,
    };
    let data = match (kind, rx.is_some()) {
        (KIND_WHOLE, false) => {
            start(matcher, rx, overflow, env, bytes.len(), max_message)?;
            bytes
        }
        (KIND_FIRST, false) => {
            let Some((len, data)) = bytes.split_first_chunk::<LEN_PREFIX>() else {
                return Err("a FIRST frame without its length".into());
            };
            let total = usize::try_from(u64::from_le_bytes(*len)).unwrap_or(usize::MAX);
            if total <= data.len() {
                return Err(format!(
                    "a FIRST frame of {} bytes announces only {total}",
                    data.len()
                ));
            }
            start(matcher, rx, overflow, env, total, max_message)?;
            data
        }
        (KIND_CONT, true) => bytes,
        (k, busy) => {
            return Err(format!(
                "frame kind {k} unexpected (a message in progress: {busy})"
            ))
        }
    };
    let left = match rx {
        Some(Rx::Matcher { left, .. } | Rx::Overflow { left }) => left,
        None => unreachable!("a message is in progress here"),
    };
    if data.len() > *left {
        return Err(format!(
            "{} bytes arrived for a message with {} left",
            data.len(),
            *left
        ));
    }
    *left -= data.len();
    let finished = *left == 0;
    match rx {
        Some(Rx::Matcher { sink, .. }) => {
            matcher.payload(sink, data);
            if finished {
                if let Some(Rx::Matcher { sink, .. }) = rx.take() {
                    matcher.end(sink);
                }
            }
        }
        Some(Rx::Overflow { .. }) => {
            if let Some(h) = overflow.back_mut() {
                h.data.extend_from_slice(data);
                h.complete = finished;
            }
        }
        None => {}
    }
    if finished {
        *rx = None;
    }
    Ok(())
}

/// The `hyphenlink` transport; see the module documentation.
pub(crate) struct HyphenLink {
    me: u32,
    self_path: bool,
    max_message: u64,
    node: Node,
    region: Arc<Region>,
    ctl: usize,
    peers: Vec<Peer>,
    matcher: Matcher,
    sends: Sends,
    scratch: Vec<u8>,
    sleep: HyphenWait,
    dead_after: Duration,
    polls: u32,
    stop: Arc<AtomicBool>,
}

impl HyphenLink {
    /// Sets up (or joins) the job's board and starts the heartbeat.
    pub(crate) fn open(config: &Config, pmi: &mut Pmi) -> Result<Self> {
        let (me, size) = (pmi.rank(), pmi.size());
        if size > MAX_NODES {
            return Err(Error::Config(format!(
                "O2G_TRANSPORT=hyphenlink: a HyphenLink board has at most {MAX_NODES} nodes, \
                 the world has {size} processes"
            )));
        }
        let mut sleep = config.hyphen.wait;
        let dead_after = config.hyphen.dead_after;
        let Setup { board, ctl, unlink } = setup(config, pmi, &mut sleep)?;
        let region = Arc::clone(board.region());
        let policy = WaitPolicy::polling(Duration::from_secs(1));
        let hl = |e| unavailable("attaching rings", e);
        let now = Instant::now();
        let mut peers = Vec::with_capacity(size as usize);
        for p in 0..size {
            peers.push(Peer {
                writer: board.ring_writer(p, me, policy).map_err(hl)?,
                reader: board.ring_reader(me, p, policy).map_err(hl)?,
                out: VecDeque::new(),
                rx: None,
                overflow: VecDeque::new(),
                dead: None,
                beat: 0,
                beat_at: now,
            });
        }
        let node = board.node(me, policy).map_err(hl)?;
        let line = ctl + CTL_LINE * (1 + me as usize);
        word32(&region, line + N_STATE).store(ALIVE, Ordering::SeqCst);
        arm_exit_hook(Arc::clone(&region), line + N_STATE);
        let stop = Arc::new(AtomicBool::new(false));
        {
            let (region, stop) = (Arc::clone(&region), Arc::clone(&stop));
            std::thread::Builder::new()
                .name("o2g-hl-heartbeat".into())
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        word64(&region, line + N_BEAT).fetch_add(1, Ordering::Relaxed);
                        std::thread::sleep(HEARTBEAT);
                    }
                })
                .map_err(|e| Error::io("starting the heartbeat thread", e))?;
        }
        let mut t = Self {
            me,
            self_path: config.self_path,
            max_message: config.max_message,
            node,
            region,
            ctl,
            peers,
            matcher: Matcher::new(),
            sends: Sends::new(),
            scratch: Vec::new(),
            sleep: sleep.unwrap_or(HyphenWait::Block),
            dead_after,
            polls: 0,
            stop,
        };
        // Everyone is attached and ALIVE past this barrier.
        let joined = pmi.barrier();
        if let Some(name) = unlink {
            let _ = Region::unlink_shm(&name);
        }
        joined?;
        let now = Instant::now();
        for p in 0..size as usize {
            t.peers[p].beat = t.beat(p).load(Ordering::Relaxed);
            t.peers[p].beat_at = now;
        }
        Ok(t)
    }

    fn line(&self, rank: usize) -> usize {
        self.ctl + CTL_LINE * (1 + rank)
    }

    fn state(&self, rank: usize) -> &AtomicU32 {
        word32(&self.region, self.line(rank) + N_STATE)
    }

    fn waiting(&self, rank: usize) -> &AtomicU32 {
        word32(&self.region, self.line(rank) + N_WAITING)
    }

    fn beat(&self, rank: usize) -> &AtomicU64 {
        word64(&self.region, self.line(rank) + N_BEAT)
    }

    /// Whether a message to `dest` stays inside this process.
    fn is_local(&self, dest: u32) -> bool {
        dest == self.me && self.self_path
    }

    /// `dest` exists and is alive.
    fn live(&self, dest: u32) -> Result<()> {
        match self.peers.get(dest as usize) {
            None => Err(Error::InvalidRank {
                rank: dest as i32,
                size: self.peers.len() as i32,
            }),
            Some(Peer {
                dead: Some(reason), ..
            }) => Err(Error::PeerGone {
                rank: dest,
                reason: reason.clone(),
            }),
            Some(_) => Ok(()),
        }
    }

    /// Wakes `rank` if it sleeps: after publishing a frame in its ring, or
    /// freeing room in the ring it writes to us.
    fn notify(&self, rank: usize) {
        fence(Ordering::SeqCst);
        if self.waiting(rank).load(Ordering::SeqCst) != 0 {
            // A full FIFO already wakes it; an id is only a hint.
            let _ = self
                .node
                .pb(rank as u32, TASK_WAKE | self.me, Overflow::Error);
        }
    }

    /// Marks a peer dead and fails everything that waited on it.
    fn kill(&mut self, rank: usize, reason: String) {
        let Some(peer) = self.peers.get_mut(rank) else {
            return;
        };
        if peer.dead.is_some() {
            return;
        }
        match peer.rx.take() {
            Some(Rx::Matcher { sink, .. }) => self.matcher.fail(sink, rank as u32, &reason),
            Some(Rx::Overflow { .. }) => {
                peer.overflow.pop_back();
            }
            None => {}
        }
        for out in peer.out.drain(..) {
            self.sends.fail(out.token, &reason);
        }
        peer.dead = Some(reason);
    }

    /// Takes every frame in `rank`'s ring; whether there was any.
    fn drain(&mut self, rank: usize) -> bool {
        let mut got = false;
        let failure = loop {
            let Peer {
                reader,
                rx,
                overflow,
                dead: None,
                ..
            } = &mut self.peers[rank]
            else {
                return got;
            };
            let m = match reader.try_recvs(Filter::ANY) {
                Ok(Some(m)) => m,
                Ok(None) => break None,
                Err(e) => break Some(format!("its ring is corrupt: {e}")),
            };
            got = true;
            let placed = accept(
                &mut self.matcher,
                rx,
                overflow,
                rank as u32,
                m.info(),
                m.payload(),
                self.max_message,
            );
            let freed = m.done();
            if let Err(why) = placed {
                break Some(format!("protocol error: {why}"));
            }
            if let Err(e) = freed {
                break Some(format!("its ring is corrupt: {e}"));
            }
        };
        if got {
            self.notify(rank);
        }
        if let Some(why) = failure {
            self.kill(rank, why);
        }
        got
    }

    /// Moves overflowed messages into the matcher while it has room.
    fn drain_overflow(&mut self) -> bool {
        let mut moved = false;
        for peer in &mut self.peers {
            while let Some(Held {
                env,
                data,
                complete: true,
            }) = peer.overflow.front()
            {
                if self.matcher.deliver(*env, data).is_err() {
                    return moved;
                }
                peer.overflow.pop_front();
                moved = true;
            }
        }
        moved
    }

    /// Writes what fits of `cur` (whose payload is `data`) to `dest`.
    /// `Ok((done, moved))`; an error when the ring failed (the peer is then
    /// dead).
    fn push_to(&mut self, dest: usize, cur: &mut Cursor, data: &[u8]) -> Result<(bool, bool)> {
        let before = (cur.started, cur.done);
        let r = push(
            &self.peers[dest].writer,
            cur,
            &data[cur.done..],
            &mut self.scratch,
        );
        let moved = (cur.started, cur.done) != before;
        if moved {
            self.notify(dest);
        }
        match r {
            Ok(done) => Ok((done, moved)),
            Err(e) => {
                self.kill(dest, format!("writing its ring failed: {e}"));
                self.live(dest as u32).map(|()| (false, moved))
            }
        }
    }

    /// Pushes queued sends to `rank`; whether any frame went in.
    fn pump(&mut self, rank: usize) -> bool {
        let mut moved = false;
        let failure = loop {
            let peer = &mut self.peers[rank];
            if peer.dead.is_some() {
                break None;
            }
            let Some(o) = peer.out.front_mut() else {
                break None;
            };
            let before = (o.cur.started, o.cur.done);
            let rest = &o.data[o.cur.done - o.skip..];
            let r = push(&peer.writer, &mut o.cur, rest, &mut self.scratch);
            moved |= (o.cur.started, o.cur.done) != before;
            match r {
                Ok(true) => {
                    let token = o.token;
                    peer.out.pop_front();
                    self.sends.finish(token);
                }
                Ok(false) => break None,
                Err(e) => break Some(format!("writing its ring failed: {e}")),
            }
        };
        if moved {
            self.notify(rank);
        }
        if let Some(why) = failure {
            self.kill(rank, why);
        }
        moved
    }

    /// Finds peers that left or stopped beating; whether any did.
    fn check_peers(&mut self, force: bool) -> bool {
        self.polls = self.polls.wrapping_add(1);
        let now = (force || self.polls % BEAT_CHECK_EVERY == 0).then(Instant::now);
        let mut found = false;
        for rank in 0..self.peers.len() {
            if rank == self.me as usize || self.peers[rank].dead.is_some() {
                continue;
            }
            let mut why = match self.state(rank).load(Ordering::Acquire) {
                CLOSED => Some("it left MPI (its HyphenLink endpoint is closed)".to_owned()),
                EXITED => Some("it exited without finalizing".to_owned()),
                _ => None,
            };
            if let (None, Some(now)) = (&why, now) {
                let beat = self.beat(rank).load(Ordering::Relaxed);
                let dead_after = self.dead_after;
                let p = &mut self.peers[rank];
                if beat != p.beat {
                    p.beat = beat;
                    p.beat_at = now;
                } else {
                    let quiet = now.duration_since(p.beat_at);
                    if quiet > dead_after {
                        why = Some(format!("no heartbeat for {quiet:.1?} (killed or frozen)"));
                    }
                }
            }
            if let Some(why) = why {
                // Deliver what it wrote before it went.
                self.drain(rank);
                self.kill(rank, why);
                found = true;
            }
        }
        found
    }

    /// One round of all work that needs no waiting; whether any was done.
    fn poll_once(&mut self, force_beat: bool) -> bool {
        let mut worked = self.drain_overflow();
        for rank in 0..self.peers.len() {
            worked |= self.drain(rank);
        }
        for rank in 0..self.peers.len() {
            if !self.peers[rank].out.is_empty() {
                worked |= self.pump(rank);
            }
        }
        worked |= self.check_peers(force_beat);
        worked | self.drain_overflow()
    }

    /// Whether any peer is left that could still send to this process.
    fn anyone_left(&self) -> bool {
        self.peers
            .iter()
            .enumerate()
            .any(|(r, p)| p.dead.is_none() && (r != self.me as usize || !self.self_path))
    }

    /// Calls `attempt` (which does a round of work) until it reports
    /// progress, spinning, then yielding, then sleeping; `false` once
    /// `deadline` passes first.
    fn wait_for(
        &mut self,
        deadline: Option<Instant>,
        mut attempt: impl FnMut(&mut Self, bool) -> Result<bool>,
    ) -> Result<bool> {
        let began = Instant::now();
        let mut naps = 0u32;
        loop {
            let idle = began.elapsed();
            let sleeping = idle >= YIELD_UNTIL;
            if idle < SPIN_FOR {
                std::hint::spin_loop();
            } else if !sleeping {
                std::thread::yield_now();
            } else {
                // Announce the sleep, then re-check: whoever makes progress
                // possible after this sees the flag and PBs us.
                self.waiting(self.me as usize).store(1, Ordering::SeqCst);
                fence(Ordering::SeqCst);
                while let Ok(Some(_)) = self.node.try_ext() {}
                let ready = attempt(self, true);
                if !matches!(ready, Ok(false)) {
                    self.waiting(self.me as usize).store(0, Ordering::SeqCst);
                    return ready;
                }
                let left = deadline
                    .map_or(SLICE, |d| d.saturating_duration_since(Instant::now()))
                    .min(SLICE);
                match self.sleep {
                    HyphenWait::Block => {
                        let _ = self.node.with_policy(WaitPolicy::blocking(left)).ext();
                    }
                    HyphenWait::Timed => {
                        let nap = SLEEP_MIN * (1 << naps.min(6));
                        std::thread::sleep(nap.min(SLEEP_MAX).min(left));
                        naps += 1;
                    }
                }
                self.waiting(self.me as usize).store(0, Ordering::SeqCst);
            }
            if attempt(self, sleeping)? {
                return Ok(true);
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(false);
            }
        }
    }
}

fn word32(region: &Region, off: usize) -> &AtomicU32 {
    region
        .u32_at(off)
        .expect("the control block was bounds-checked at open")
}

fn word64(region: &Region, off: usize) -> &AtomicU64 {
    region
        .u64_at(off)
        .expect("the control block was bounds-checked at open")
}

impl Transport for HyphenLink {
    fn progress(&mut self, timeout: Option<Duration>) -> Result<()> {
        if self.poll_once(false) {
            return Ok(());
        }
        let deadline = match timeout {
            Some(t) if t.is_zero() => return Ok(()),
            Some(t) => Some(Instant::now() + t),
            None => None,
        };
        if deadline.is_none() && !self.anyone_left() {
            return Err(Error::Deadlock(
                "waiting for a message, but no live peer is left that could send it".into(),
            ));
        }
        self.wait_for(deadline, |t, force| Ok(t.poll_once(force)))
            .map(drop)
    }

    fn peer_failure(&self, rank: u32) -> Option<String> {
        self.peers.get(rank as usize)?.dead.clone()
    }
}

impl SendHalf for HyphenLink {
    fn send(&mut self, dest: u32, env: Envelope, data: &[u8]) -> Result<()> {
        if self.is_local(dest) {
            return self.matcher.deliver_local(env, data);
        }
        self.live(dest)?;
        let d = dest as usize;
        // Earlier isends to `dest` go first.
        while !self.peers[d].out.is_empty() {
            self.progress(None)?;
            self.live(dest)?;
        }
        let mut cur = Cursor::new(env, data.len());
        loop {
            if self.push_to(d, &mut cur, data)?.0 {
                return Ok(());
            }
            // Wait for room, receiving meanwhile.
            self.wait_for(None, |t, force| {
                t.poll_once(force);
                t.live(dest)?;
                let (done, moved) = t.push_to(d, &mut cur, data)?;
                Ok(done || moved)
            })?;
            if cur.started && cur.done == cur.total {
                return Ok(());
            }
        }
    }

    fn isend(&mut self, dest: u32, env: Envelope, data: &[u8]) -> Result<SendToken> {
        if self.is_local(dest) {
            self.send(dest, env, data)?;
            return Ok(SendToken(0));
        }
        self.live(dest)?;
        let d = dest as usize;
        let mut cur = Cursor::new(env, data.len());
        if self.peers[d].out.is_empty() && self.push_to(d, &mut cur, data)?.0 {
            return Ok(SendToken(0));
        }
        let token = self.sends.start();
        let skip = cur.done;
        self.peers[d].out.push_back(Out {
            cur,
            data: data[skip..].to_vec(),
            skip,
            token,
        });
        Ok(SendToken(token))
    }

    fn sends(&mut self) -> &mut Sends {
        &mut self.sends
    }

    fn has_queued_sends(&self) -> bool {
        self.peers
            .iter()
            .any(|p| p.dead.is_none() && !p.out.is_empty())
    }
}

impl ReceivesThroughMatcher for HyphenLink {
    fn matcher(&mut self) -> &mut Matcher {
        &mut self.matcher
    }
}

impl Drop for HyphenLink {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        disarm_exit_hook(&self.region);
        self.state(self.me as usize).store(CLOSED, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::matcher::RecvOutcome;
    use o2g_core::proto::envelope::{Selector, SourceSel, TagSel};

    fn board(capacity: usize) -> Board {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let cfg = board_config(2, capacity);
        let name = format!(
            "o2g-hl-test-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let region = Region::create_shm(&name, footprint(&cfg).unwrap().1).unwrap();
        Region::unlink_shm(&name).unwrap();
        Board::create(Arc::new(region), cfg).unwrap()
    }

    /// Places every frame waiting in `r` into `m`.
    fn drain(r: &RingReader, m: &mut Matcher, rx: &mut Option<Rx>, ov: &mut VecDeque<Held>) {
        while let Some(msg) = r.try_recvs(Filter::ANY).unwrap() {
            accept(m, rx, ov, 0, msg.info(), msg.payload(), u64::MAX).unwrap();
            msg.done().unwrap();
        }
    }

    #[test]
    fn chunked_messages_survive_a_full_ring_and_arrive_whole_and_in_order() {
        let b = board(RING_MIN);
        let p = WaitPolicy::polling(Duration::from_secs(1));
        let w = b.ring_writer(1, 0, p).unwrap();
        let r = b.ring_reader(1, 0, p).unwrap();
        let mut m = Matcher::new();
        let (mut rx, mut ov, mut scratch) = (None, VecDeque::new(), Vec::new());
        let sizes = [0usize, 5, w.max_payload(), w.max_payload() + 1, 100_000];
        let msgs: Vec<Vec<u8>> = sizes
            .iter()
            .map(|&n| (0..n).map(|i| (i * 7 + n) as u8).collect())
            .collect();
        let sel = Selector {
            source: SourceSel::Any,
            tag: TagSel::Any,
            context: 4,
        };
        let tokens: Vec<_> = msgs
            .iter()
            .map(|_| m.post(sel, usize::MAX).unwrap())
            .collect();
        let mut fulls = 0;
        for (tag, data) in msgs.iter().enumerate() {
            let env = Envelope {
                source: 0,
                tag: tag as u32,
                context: 4,
            };
            let mut cur = Cursor::new(env, data.len());
            loop {
                let done = cur.done;
                if push(&w, &mut cur, &data[done..], &mut scratch).unwrap() {
                    break;
                }
                fulls += 1;
                drain(&r, &mut m, &mut rx, &mut ov);
            }
        }
        drain(&r, &mut m, &mut rx, &mut ov);
        assert!(fulls > 0, "the big message must have filled the ring");
        assert!(rx.is_none() && ov.is_empty());
        for (tag, (t, data)) in tokens.into_iter().zip(&msgs).enumerate() {
            match m.test(t) {
                Some(RecvOutcome::Done {
                    envelope,
                    len,
                    data: got,
                }) => {
                    assert_eq!(envelope.tag, tag as u32);
                    assert_eq!(len, data.len() as u64);
                    assert!(got == *data, "message {tag} content");
                }
                other => panic!("message {tag}: {other:?}"),
            }
        }
    }

    #[test]
    fn frames_out_of_protocol_are_refused() {
        let b = board(RING_MIN);
        let p = WaitPolicy::polling(Duration::from_secs(1));
        let w = b.ring_writer(1, 0, p).unwrap();
        let r = b.ring_reader(1, 0, p).unwrap();
        let mut m = Matcher::new();
        let (mut rx, mut ov) = (None, VecDeque::new());
        let mut frame = |src: u32, kind: u32, body: &[u8]| {
            let e = ring::RingEnvelope {
                src,
                tag: 1,
                user: u64::from(kind) << 32,
            };
            w.try_send(&e, body).unwrap();
            let msg = r.try_recvs(Filter::ANY).unwrap().unwrap();
            accept(&mut m, &mut rx, &mut ov, 0, msg.info(), msg.payload(), 16)
        };
        assert!(frame(0, KIND_CONT, b"x").is_err(), "CONT with nothing open");
        assert!(frame(3, KIND_WHOLE, b"x").is_err(), "wrong source");
        assert!(
            frame(0, KIND_WHOLE, &[0; 17]).is_err(),
            "over O2G_MAX_MESSAGE"
        );
        let mut first = 9u64.to_le_bytes().to_vec();
        first.extend_from_slice(b"abcd");
        frame(0, KIND_FIRST, &first).unwrap();
        assert!(
            frame(0, KIND_WHOLE, b"x").is_err(),
            "WHOLE inside a message"
        );
        assert!(
            frame(0, KIND_CONT, b"123456").is_err(),
            "more than announced"
        );
        frame(0, KIND_CONT, b"12345").unwrap();
        assert!(rx.is_none());
        assert_eq!(
            m.probe(Selector::exact(Envelope {
                source: 0,
                tag: 1,
                context: 0
            })),
            Some((
                Envelope {
                    source: 0,
                    tag: 1,
                    context: 0
                },
                9
            ))
        );
    }

    #[test]
    fn default_rings_shrink_with_the_world_and_explicit_sizes_are_checked() {
        let config = Config::from_lookup(|_| None).unwrap();
        assert_eq!(ring_capacity(&config, 2).unwrap(), RING_MAX);
        assert_eq!(ring_capacity(&config, 16).unwrap(), 256 << 10);
        assert_eq!(ring_capacity(&config, 64).unwrap(), RING_DEFAULT_MIN);
        let small = Config {
            rcvbuf: Some(16_400),
            ..config.clone()
        };
        assert_eq!(ring_capacity(&small, 3).unwrap(), 16_384);
        let mut asked = small.clone();
        asked.hyphen.ring_bytes = Some(64 << 10);
        assert_eq!(
            ring_capacity(&asked, 3).unwrap(),
            64 << 10,
            "its own variable first"
        );
        let tiny = Config {
            rcvbuf: Some(1000),
            ..config
        };
        assert!(matches!(ring_capacity(&tiny, 3), Err(Error::Config(_))));
        // Every default fits the frame geometry the board checks.
        for n in [1, 2, 7, 16, 64] {
            let cap = (RING_BUDGET / (n * n)).clamp(RING_DEFAULT_MIN, RING_MAX);
            ring_config(cap).validate().unwrap();
        }
    }
}
