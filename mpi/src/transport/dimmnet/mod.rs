//! `dimmnet`: MPI over the emulated DIMMnet-1 NIC (crate `o2g-dimmnet`),
//! in shared memory between processes of one host or between QEMU guests
//! that share one ivshmem region.
//!
//! # Region setup
//!
//! Every rank is one node of one region (so at most
//! [`o2g_dimmnet::layout::MAX_NODES`] ranks). `O2G_DIMMNET_REGION` picks it:
//!
//! - `shm` (default): rank 0 creates `/dev/shm/o2g-dimmnet-<pid>-<nanos>`
//!   ([`Nic::create_shm`], zeroed by construction), publishes its name and
//!   the job's pgid through PMI; after a PMI barrier the others open it;
//!   after a second barrier (everyone attached) rank 0 unlinks the name.
//! - `ivshmem`: every rank maps BAR 2 of the guest's first ivshmem device
//!   ([`Region::open_ivshmem`]). Rank 0 zeroes it (an earlier job's flag
//!   words must not survive), formats it for this world and publishes the
//!   pgid; the others attach after the PMI barrier.
//!
//! The buffer geometry is the largest of a few candidates whose layout
//! fits (a `/dev/shm` file is sparse, so there the largest is taken:
//! 8 receive buffers of 32 KiB per peer, 256 KiB per grant).
//!
//! # Framing
//!
//! Between two ranks the NIC carries an ordered, reliable byte stream made
//! of DIMM_Send messages. An MPI message on it is the 32-byte o2g-core wire
//! header ([`o2g_core::proto::wire`]) then the payload, exactly as on a TCP
//! connection, so the receive side is o2g-core's stream [`Reassembler`]
//! feeding the shared [`Matcher`] (which does all MPI matching:
//! wildcards, non-overtaking, unexpected messages, probe, cancel). A message
//! normally travels as one DIMM_Send of header + payload (gathered, no
//! copy to join them); one longer than [`DIMM_MSG_MAX`] (the crate carries
//! at most 4 GiB per DIMM_Send) continues in further DIMM_Sends, which the
//! reassembler joins because it only sees bytes. The crate itself splits
//! each DIMM_Send into chunks of the granted receive buffers.
//!
//! # Sending without blocking
//!
//! The crate's resumable operations ([`DimmEndpoint::send_start`] /
//! [`DimmEndpoint::send_step`], [`DimmEndpoint::recv_start`] /
//! [`DimmEndpoint::recv_step`]) never wait. This transport keeps one receive
//! started ("preposted") from every live peer at all times, so a peer's
//! send always finds a grant (the receiver-first protocol) and its first
//! chunk goes at once. A send (blocking or queued by `isend`) that needs
//! more grants simply stays pending; every progress round steps all
//! pending sends and all receives, so a rank that waits to send keeps
//! receiving, copying what arrives into the matcher (the unexpected store
//! when nothing matches), which is what lets the peer grant again. Two
//! ranks flooding each other therefore cannot deadlock. `isend` sends what
//! the grants allow at once and copies the message only if it could not
//! finish.
//!
//! # Waiting
//!
//! `progress` polls NIC memory (plain loads of flag words in this node's
//! LLCM: no system call on the common receive path) and returns as soon
//! as a chunk moved. With nothing to do it backs off: [`SPINS`] rounds
//! with `spin_loop`, then [`YIELDS`] rounds with `yield_now`, then sleeps
//! starting at [`FIRST_SLEEP`] and doubling up to [`MAX_SLEEP`] (1 ms),
//! never past the caller's timeout. Any work resets the back-off. When the
//! ranks share one host (`shm`) and there are more of them than CPUs, the
//! spinning phase is skipped: a spinning rank would only hold the CPU its
//! peer needs to answer, so it yields at once.
//!
//! # Dead peers
//!
//! Every rank runs a heartbeat thread ([`Heartbeat`]) that stores a
//! growing count into each peer's LLCM every [`HEARTBEAT_PERIOD`]; a rank
//! that leaves cleanly (drops the transport) stores "left" instead. A rank
//! that was killed, or exited without finalizing, stops beating, and its
//! peers declare it dead after `O2G_DIMMNET_PEER_TIMEOUT` seconds (5 by
//! default) without a beat. Before a peer is declared dead, whatever it
//! already delivered is taken. A dead peer fails receives that depend on it
//! (through [`Transport::peer_failure`]), queued and new sends to it, and
//! the crate's protocol errors (`Corrupt`, `ForeignPeer`, a `Timeout` in a
//! bank switch) mark the peer dead with that reason. Liveness is checked
//! whenever a wait backs off, and every [`WATCH_EVERY`] rounds otherwise.
//!
//! Messages to oneself go straight into the matcher (the crate refuses
//! self-sends), also with `O2G_SELF=0`.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use o2g_core::proto::envelope::Envelope;
use o2g_core::proto::stream::{Event, Reassembler};
use o2g_core::proto::wire::{Encoder, Kind, Limits, HEADER_LEN};
use o2g_dimmnet::layout::{LLCM_USER, MAX_NODES};
use o2g_dimmnet::{
    Barrier, Config as NicConfig, DimmEndpoint, Heartbeat, Layout, Liveness, Nic, PeerWatch,
    RecvOp, SendOp, WaitPolicy,
};
use o2g_nicmem::Region;

use super::matcher::{Matcher, Sink};
use super::model_time::{InTransport, ModelClock};
use super::outbox::Sends;
use super::{ReceivesThroughMatcher, SendHalf, SendToken, Transport};
use crate::config::{Config, DimmnetRegion};
use crate::error::{Error, Result};
use crate::pmi::Pmi;

/// Most stream bytes one DIMM_Send carries (the crate's limit is 4 GiB).
pub(crate) const DIMM_MSG_MAX: u64 = 1 << 31;
/// Busy-wait rounds before a wait starts yielding.
pub(crate) const SPINS: u32 = 1000;
/// `yield_now` rounds before a wait starts sleeping.
pub(crate) const YIELDS: u32 = 100;
/// First sleep of a wait; it doubles each round up to [`MAX_SLEEP`].
pub(crate) const FIRST_SLEEP: Duration = Duration::from_micros(10);
/// Longest sleep of a wait.
pub(crate) const MAX_SLEEP: Duration = Duration::from_millis(1);
/// How often a rank's heartbeat thread beats.
pub(crate) const HEARTBEAT_PERIOD: Duration = Duration::from_millis(20);
/// Liveness is checked at least every this many busy progress rounds.
pub(crate) const WATCH_EVERY: u32 = 1024;
/// Most chunks taken from one peer per progress round (fairness).
const RX_BURST: usize = 16;
/// LLCM offset of the heartbeat table (one u64 per node).
const HEARTBEAT_TABLE: usize = LLCM_USER;
/// PMI key of the job description rank 0 publishes.
const JOB_KEY: &str = "o2g-dimmnet-job";

/// Where the payload of the message being received goes.
enum Target {
    Matcher(Sink),
    Overflow,
}

/// A message (or what is left of it) waiting to go to one peer.
struct Out {
    token: u64,
    head: [u8; HEADER_LEN],
    body: Vec<u8>,
    /// Stream bytes (header and body) of completed DIMM_Sends.
    pos: u64,
    /// The DIMM_Send under way, covering the stream from `pos`.
    op: Option<SendOp>,
}

/// Everything about one peer.
struct Peer {
    tx: Encoder,
    out: VecDeque<Out>,
    /// The receive kept started from this peer.
    rx_op: Option<RecvOp>,
    rx: Reassembler,
    target: Option<Target>,
    /// Messages the matcher had no room for, in order (envelope, payload,
    /// complete).
    overflow: VecDeque<(Envelope, Vec<u8>, bool)>,
    dead: Option<String>,
}

/// The NIC side; absent in a world of one.
struct Net {
    ep: DimmEndpoint,
    /// The Fagus AOTF barrier, for `MPI_Barrier` over the whole world.
    barrier: Barrier,
    watch: PeerWatch,
    _heartbeat: Heartbeat,
}

/// The `dimmnet` transport; see the module documentation.
pub(crate) struct Dimmnet {
    me: u32,
    net: Option<Net>,
    peers: Vec<Peer>,
    matcher: Matcher,
    sends: Sends,
    /// Scratch for one received chunk.
    chunk: Vec<u8>,
    max_message: u64,
    dimm_msg_max: u64,
    rounds: u32,
    /// Spin rounds of a wait: [`SPINS`], or 0 when this host runs more
    /// ranks than it has CPUs (then a spinning rank only delays the peer it
    /// waits for).
    spins: u32,
    /// `O2G_MODEL_TIME=1`: `MPI_Wtime` is the model's clock, and every
    /// entry charges the computation before it.
    model: Option<ModelClock>,
}

fn nic_err(e: o2g_dimmnet::Error) -> Error {
    Error::TransportUnavailable {
        name: "dimmnet".into(),
        reason: e.to_string(),
    }
}

/// The largest buffer geometry whose layout for `nodes` fits `max_len`
/// bytes (any size when `None`).
pub(crate) fn fit_config(nodes: u32, max_len: Option<usize>) -> Option<NicConfig> {
    const CANDIDATES: [(u16, usize); 6] = [
        (8, 32 << 10),
        (4, 32 << 10),
        (4, 16 << 10),
        (2, 16 << 10),
        (1, 16 << 10),
        (1, 4 << 10),
    ];
    CANDIDATES.iter().find_map(|&(bufs, size)| {
        let bank = (nodes as usize * bufs as usize * size).next_multiple_of(4096);
        let c = NicConfig {
            bank_size: bank,
            bufs_per_peer: bufs,
            buf_size: size,
            ..NicConfig::new(nodes)
        };
        let layout = Layout::new(c).ok()?;
        max_len
            .is_none_or(|m| layout.region_len() <= m)
            .then_some(c)
    })
}

/// The pieces of stream bytes `[from, from + len)` of a message whose
/// stream is `head` then `body`.
fn stream_parts<'a>(head: &'a [u8], body: &'a [u8], from: u64, len: u64) -> [&'a [u8]; 2] {
    let h = head.len() as u64;
    let end = from + len;
    let head_part = &head[from.min(h) as usize..end.min(h) as usize];
    let body_part = &body[from.saturating_sub(h) as usize..end.saturating_sub(h) as usize];
    [head_part, body_part]
}

/// Moves a message's stream on as far as the grants allow; whether all of
/// it is in `dest`'s NIC memory.
fn advance(
    ep: &mut DimmEndpoint,
    dest: u32,
    max: u64,
    op: &mut Option<SendOp>,
    pos: &mut u64,
    head: &[u8],
    body: &[u8],
) -> o2g_dimmnet::Result<bool> {
    let total = (head.len() + body.len()) as u64;
    loop {
        let o = match op {
            Some(o) => o,
            None => {
                if *pos == total {
                    return Ok(true);
                }
                let len = (total - *pos).min(max);
                op.insert(ep.send_start(dest, len as usize)?)
            }
        };
        let parts = stream_parts(head, body, *pos, o.len() as u64);
        if !ep.send_step(o, &parts)? {
            return Ok(false);
        }
        *pos += o.len() as u64;
        *op = None;
    }
}

/// Runs received stream bytes of peer `rank` through its reassembler into
/// the matcher.
fn feed(peer: &mut Peer, matcher: &mut Matcher, rank: u32, mut input: &[u8]) -> Result<(), String> {
    loop {
        let step = peer
            .rx
            .feed(input)
            .map_err(|e| format!("protocol error: {e}"))?;
        input = &input[step.consumed..];
        match step.event {
            None => return Ok(()),
            Some(Event::Header(h)) => {
                if h.envelope.source != rank {
                    return Err(format!(
                        "protocol error: a message claiming to come from rank {}",
                        h.envelope.source
                    ));
                }
                let target = if peer.overflow.is_empty() {
                    matcher.arrive(h.envelope, h.len).ok().map(Target::Matcher)
                } else {
                    None
                };
                peer.target = Some(target.unwrap_or_else(|| {
                    peer.overflow.push_back((h.envelope, Vec::new(), false));
                    Target::Overflow
                }));
            }
            Some(Event::Payload { data, .. }) => match &peer.target {
                Some(Target::Matcher(sink)) => matcher.payload(sink, data),
                Some(Target::Overflow) => {
                    if let Some(m) = peer.overflow.back_mut() {
                        m.1.extend_from_slice(data);
                    }
                }
                None => {}
            },
            Some(Event::End(_)) => match peer.target.take() {
                Some(Target::Matcher(sink)) => matcher.end(sink),
                Some(Target::Overflow) => {
                    if let Some(m) = peer.overflow.back_mut() {
                        m.2 = true;
                    }
                }
                None => {}
            },
        }
    }
}

/// The back-off of one wait; see the module documentation.
struct Backoff {
    spins: u32,
    round: u32,
    sleep: Duration,
}

impl Backoff {
    /// A wait that spins `spins` rounds first.
    fn new(spins: u32) -> Self {
        Self {
            spins,
            round: 0,
            sleep: FIRST_SLEEP,
        }
    }

    /// Whether the wait has left the spinning phase (time to look at the
    /// clock and the peers).
    fn idle(&self) -> bool {
        self.round >= self.spins
    }

    /// Waits a little, never past `deadline`.
    fn snooze(&mut self, deadline: Option<Instant>) {
        self.round = self.round.saturating_add(1);
        if self.round <= self.spins {
            std::hint::spin_loop();
        } else if self.round <= self.spins + YIELDS {
            std::thread::yield_now();
        } else {
            let left = deadline.map_or(self.sleep, |d| {
                d.saturating_duration_since(Instant::now()).min(self.sleep)
            });
            std::thread::sleep(left);
            self.sleep = (self.sleep * 2).min(MAX_SLEEP);
        }
    }
}

impl Dimmnet {
    /// Sets up or joins the region (see the module documentation) and
    /// starts receiving from every peer.
    pub(crate) fn open(config: &Config, pmi: &mut Pmi) -> Result<Self> {
        let (me, size) = (pmi.rank(), pmi.size());
        if size > MAX_NODES {
            return Err(Error::Config(format!(
                "O2G_TRANSPORT=dimmnet serves at most {MAX_NODES} processes (one NIC node each), this world has {size}"
            )));
        }
        if size == 1 {
            if config.dimmnet.model_time {
                return Err(Error::Config(
                    "O2G_MODEL_TIME=1 needs a DIMMnet node, and a world of one has none".into(),
                ));
            }
            return Self::new(me, size, None, config);
        }
        let (region, pgid) = match config.dimmnet.region {
            DimmnetRegion::Shm => Self::join_shm(me, size, pmi)?,
            DimmnetRegion::Ivshmem => Self::join_ivshmem(me, size, pmi)?,
        };
        let net = Self::net(region, me, pgid, config)?;
        let mut t = Self::new(me, size, Some(net), config)?;
        if config.dimmnet.model_time {
            if let Some(net) = &t.net {
                t.model = Some(ModelClock::install(net.ep.nic().clone()));
            }
        }
        if config.dimmnet.region == DimmnetRegion::Shm {
            let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
            if size as usize > cpus {
                t.spins = 0;
            }
        }
        // Everyone attached (and granted its peers): the name can go.
        pmi.barrier()?;
        if me == 0 && config.dimmnet.region == DimmnetRegion::Shm {
            let name = job_field(&pmi.get(JOB_KEY)?, 0)?;
            let _ = Region::unlink_shm(&name);
        }
        Ok(t)
    }

    fn join_shm(me: u32, size: u32, pmi: &mut Pmi) -> Result<(Arc<Region>, u16)> {
        if me == 0 {
            let (name, pgid) = fresh_job();
            let cfg = fit_config(size, None)
                .ok_or_else(|| Error::Config(format!("no DIMMnet layout for {size} nodes")))?;
            let region = Nic::create_shm(&name, cfg).map_err(nic_err)?;
            pmi.put(JOB_KEY, &format!("{name}:{pgid}"))?;
            pmi.barrier()?;
            Ok((region, pgid))
        } else {
            pmi.barrier()?;
            let job = pmi.get(JOB_KEY)?;
            let (name, pgid) = (job_field(&job, 0)?, job_pgid(&job)?);
            let region = Region::open_shm(&name).map_err(|e| nic_err(e.into()))?;
            Ok((Arc::new(region), pgid))
        }
    }

    fn join_ivshmem(me: u32, size: u32, pmi: &mut Pmi) -> Result<(Arc<Region>, u16)> {
        let region = Region::open_ivshmem(0).map_err(|e| nic_err(e.into()))?;
        if me == 0 {
            let (_, pgid) = fresh_job();
            let cfg = fit_config(size, Some(region.len())).ok_or_else(|| {
                Error::Config(format!(
                    "the ivshmem region of {} bytes cannot hold {size} DIMMnet nodes",
                    region.len()
                ))
            })?;
            region
                .fill(0, region.len(), 0)
                .map_err(|e| nic_err(e.into()))?;
            Nic::format(&region, cfg).map_err(nic_err)?;
            pmi.put(JOB_KEY, &format!("ivshmem:{pgid}"))?;
            pmi.barrier()?;
            Ok((Arc::new(region), pgid))
        } else {
            pmi.barrier()?;
            let pgid = job_pgid(&pmi.get(JOB_KEY)?)?;
            Ok((Arc::new(region), pgid))
        }
    }

    fn net(region: Arc<Region>, me: u32, pgid: u16, config: &Config) -> Result<Net> {
        // The crate's own waits (a bank switch, a busy window) end at the
        // peer timeout too.
        let wait =
            WaitPolicy::with_deadline(config.dimmnet.peer_timeout.max(Duration::from_secs(1)));
        let nic = Nic::attach(region, me).map_err(nic_err)?.with_wait(wait);
        let ep = DimmEndpoint::new(nic.clone(), pgid).map_err(nic_err)?;
        let barrier = Barrier::new(nic.clone()).map_err(nic_err)?;
        let heartbeat = Heartbeat::start(nic.clone(), HEARTBEAT_TABLE, HEARTBEAT_PERIOD, pgid)
            .map_err(nic_err)?;
        let watch = PeerWatch::new(nic, HEARTBEAT_TABLE, config.dimmnet.peer_timeout, pgid)
            .map_err(nic_err)?;
        Ok(Net {
            ep,
            barrier,
            watch,
            _heartbeat: heartbeat,
        })
    }

    /// The transport of rank `me` of `size` over `net`; preposts a
    /// receive from every peer.
    fn new(me: u32, size: u32, net: Option<Net>, config: &Config) -> Result<Self> {
        let limits = Limits {
            max_payload: config.max_message,
        };
        let peers = (0..size)
            .map(|_| Peer {
                tx: Encoder::new(),
                out: VecDeque::new(),
                rx_op: None,
                rx: Reassembler::new(limits),
                target: None,
                overflow: VecDeque::new(),
                dead: None,
            })
            .collect();
        let mut t = Self {
            me,
            net,
            peers,
            matcher: Matcher::new(),
            sends: Sends::new(),
            chunk: Vec::new(),
            max_message: config.max_message,
            dimm_msg_max: DIMM_MSG_MAX,
            rounds: 0,
            spins: SPINS,
            model: None,
        };
        if let Some(net) = t.net.as_mut() {
            for p in (0..size).filter(|&p| p != me) {
                let op = net.ep.recv_start(p).map_err(nic_err)?;
                t.peers[p as usize].rx_op = Some(op);
            }
        }
        Ok(t)
    }

    /// Fails unless `dest` is a live peer (or this rank).
    fn check_dest(&self, dest: u32) -> Result<()> {
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

    fn check_len(&self, len: usize) -> Result<()> {
        if len as u64 > self.max_message {
            return Err(Error::InvalidArgument(format!(
                "a message of {len} bytes exceeds O2G_MAX_MESSAGE={}",
                self.max_message
            )));
        }
        Ok(())
    }

    /// Marks `rank` dead and fails everything that waited on it.
    fn kill(&mut self, rank: u32, reason: String) {
        let Some(p) = self.peers.get_mut(rank as usize) else {
            return;
        };
        if p.dead.is_some() || rank == self.me {
            return;
        }
        if let Some(Target::Matcher(sink)) = p.target.take() {
            self.matcher.fail(sink, rank, &reason);
        }
        // A message still arriving into the overflow list never ends.
        if p.overflow.back().is_some_and(|m| !m.2) {
            p.overflow.pop_back();
        }
        for out in p.out.drain(..) {
            self.sends.fail(out.token, &reason);
        }
        p.rx_op = None;
        p.dead = Some(reason);
    }

    /// Takes what peer `p` has delivered, up to [`RX_BURST`] chunks;
    /// whether anything came.
    fn receive_from(&mut self, p: u32) -> bool {
        let Some(net) = self.net.as_mut() else {
            return false;
        };
        let peer = &mut self.peers[p as usize];
        let mut worked = false;
        for _ in 0..RX_BURST {
            if peer.dead.is_some() {
                break;
            }
            let op = match peer.rx_op.as_mut() {
                Some(op) => op,
                None => match net.ep.recv_start(p) {
                    Ok(op) => peer.rx_op.insert(op),
                    Err(e) => {
                        self.kill(p, format!("DIMMnet: {e}"));
                        return true;
                    }
                },
            };
            match net.ep.recv_step(op, &mut self.chunk) {
                Ok(false) => break,
                Ok(true) => {
                    worked = true;
                    if op.is_done() {
                        peer.rx_op = None;
                    }
                    if let Err(reason) = feed(peer, &mut self.matcher, p, &self.chunk) {
                        self.kill(p, reason);
                        return true;
                    }
                }
                Err(e) => {
                    self.kill(p, format!("DIMMnet: {e}"));
                    return true;
                }
            }
        }
        worked
    }

    /// Moves the queued sends to `p` on; whether any completed.
    fn send_to(&mut self, p: u32) -> bool {
        let Some(net) = self.net.as_mut() else {
            return false;
        };
        let max = self.dimm_msg_max;
        let mut worked = false;
        loop {
            let peer = &mut self.peers[p as usize];
            let Some(o) = peer.out.front_mut() else {
                return worked;
            };
            match advance(&mut net.ep, p, max, &mut o.op, &mut o.pos, &o.head, &o.body) {
                Ok(false) => return worked,
                Ok(true) => {
                    let token = o.token;
                    peer.out.pop_front();
                    self.sends.finish(token);
                    worked = true;
                }
                Err(e) => {
                    self.kill(p, format!("DIMMnet: {e}"));
                    return true;
                }
            }
        }
    }

    /// Moves overflowed messages into the matcher while it has room.
    fn drain_overflow(&mut self) {
        for p in &mut self.peers {
            while let Some((env, data, true)) = p.overflow.front() {
                if self.matcher.deliver(*env, data).is_err() {
                    return;
                }
                p.overflow.pop_front();
            }
        }
    }

    /// One round over every live peer; whether anything moved.
    fn pump(&mut self) -> bool {
        let mut worked = false;
        for p in 0..self.peers.len() as u32 {
            if p == self.me || self.peers[p as usize].dead.is_some() {
                continue;
            }
            worked |= self.receive_from(p);
            worked |= self.send_to(p);
        }
        self.drain_overflow();
        worked
    }

    /// Declares dead the peers whose heartbeat stopped or who left, after
    /// taking what they delivered; whether any was.
    fn watch(&mut self) -> bool {
        let now = Instant::now();
        let mut changed = false;
        for p in 0..self.peers.len() as u32 {
            if p == self.me || self.peers[p as usize].dead.is_some() {
                continue;
            }
            let Some(net) = self.net.as_mut() else {
                return false;
            };
            let reason = match net.watch.status(p, now) {
                Ok(Liveness::Alive) => continue,
                Ok(Liveness::Left) => "left MPI (its transport was closed)".to_owned(),
                Ok(Liveness::Silent(d)) => format!(
                    "no heartbeat for {:.1} s (the process died or exited without finalizing)",
                    d.as_secs_f64()
                ),
                Err(e) => format!("DIMMnet: {e}"),
            };
            // What it delivered before it went is still good.
            while self.receive_from(p) {}
            self.drain_overflow();
            self.kill(p, reason);
            changed = true;
        }
        changed
    }

    fn live_peers(&self) -> usize {
        (0..self.peers.len() as u32)
            .filter(|&p| p != self.me && self.peers[p as usize].dead.is_none())
            .count()
    }

    /// One step of a wait: a pump, and when nothing moved, a liveness check
    /// (when idle or every [`WATCH_EVERY`] rounds) and a snooze. Whether
    /// anything happened.
    fn wait_step(&mut self, backoff: &mut Backoff, deadline: Option<Instant>) -> bool {
        if self.pump() {
            *backoff = Backoff::new(self.spins);
            self.rounds = self.rounds.wrapping_add(1);
            if self.rounds % WATCH_EVERY == 0 {
                self.watch();
            }
            return true;
        }
        self.rounds = self.rounds.wrapping_add(1);
        if (backoff.idle() || self.rounds % WATCH_EVERY == 0) && self.watch() {
            return true;
        }
        backoff.snooze(deadline);
        false
    }
}

/// A fresh job: a `/dev/shm` name and a nonzero pgid.
fn fresh_job() -> (String, u16) {
    let pid = std::process::id();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mixed = (nanos as u64) ^ u64::from(pid).rotate_left(17);
    let pgid = ((mixed ^ (mixed >> 16) ^ (mixed >> 32) ^ (mixed >> 48)) as u16).max(1);
    (format!("o2g-dimmnet-{pid}-{nanos}"), pgid)
}

fn job_field(job: &str, i: usize) -> Result<String> {
    job.split(':')
        .nth(i)
        .map(str::to_owned)
        .ok_or_else(|| Error::Pmi(format!("bad {JOB_KEY} value {job:?}")))
}

fn job_pgid(job: &str) -> Result<u16> {
    job_field(job, 1)?
        .parse()
        .map_err(|_| Error::Pmi(format!("bad {JOB_KEY} value {job:?}")))
}

impl Dimmnet {
    /// Marks an entry into the transport for the model clock, if any.
    fn enter(&self) -> Option<InTransport> {
        self.model.as_ref().map(ModelClock::enter)
    }
}

impl Transport for Dimmnet {
    fn progress(&mut self, timeout: Option<Duration>) -> Result<()> {
        let _in = self.enter();
        if self.live_peers() == 0 {
            self.drain_overflow();
            return match timeout {
                None => Err(Error::Deadlock(
                    "waiting for a message, but no live peer is left that could send it".into(),
                )),
                Some(_) => Ok(()),
            };
        }
        if timeout == Some(Duration::ZERO) {
            self.pump();
            self.rounds = self.rounds.wrapping_add(1);
            if self.rounds % WATCH_EVERY == 0 {
                self.watch();
            }
            return Ok(());
        }
        let mut backoff = Backoff::new(self.spins);
        let mut deadline = None;
        loop {
            if self.wait_step(&mut backoff, deadline) {
                return Ok(());
            }
            if let (Some(t), true) = (timeout, backoff.idle()) {
                // The clock is read only once spinning found nothing.
                let d = *deadline.get_or_insert_with(|| Instant::now() + t);
                if Instant::now() >= d {
                    return Ok(());
                }
            }
        }
    }

    fn peer_failure(&self, rank: u32) -> Option<String> {
        self.peers.get(rank as usize).and_then(|p| p.dead.clone())
    }

    fn enter_world_barrier(&mut self) -> Result<bool> {
        let _in = self.enter();
        let Some(net) = &mut self.net else {
            return Ok(false);
        };
        net.barrier.enter().map_err(nic_err)?;
        Ok(true)
    }

    fn test_world_barrier(&mut self) -> Result<bool> {
        let _in = self.enter();
        match &mut self.net {
            Some(net) => net.barrier.test().map_err(nic_err),
            None => Ok(true),
        }
    }
}

impl SendHalf for Dimmnet {
    fn send(&mut self, dest: u32, env: Envelope, data: &[u8]) -> Result<()> {
        let _in = self.enter();
        self.check_dest(dest)?;
        self.check_len(data.len())?;
        if dest == self.me {
            return self.matcher.deliver_local(env, data);
        }
        // Earlier isends to `dest` leave first.
        while !self.peers[dest as usize].out.is_empty() {
            self.progress(None)?;
            self.check_dest(dest)?;
        }
        let head = self.peers[dest as usize]
            .tx
            .encode(Kind::Eager, env, data.len() as u64);
        let (mut op, mut pos) = (None, 0);
        let max = self.dimm_msg_max;
        let mut backoff = Backoff::new(self.spins);
        loop {
            let Some(net) = self.net.as_mut() else {
                unreachable!("a world of one has no peer {dest}");
            };
            match advance(&mut net.ep, dest, max, &mut op, &mut pos, &head, data) {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(e) => self.kill(dest, format!("DIMMnet: {e}")),
            }
            self.check_dest(dest)?;
            self.wait_step(&mut backoff, None);
        }
    }

    fn isend(&mut self, dest: u32, env: Envelope, data: &[u8]) -> Result<SendToken> {
        let _in = self.enter();
        if dest == self.me {
            self.send(dest, env, data)?;
            return Ok(SendToken(0));
        }
        self.check_dest(dest)?;
        self.check_len(data.len())?;
        let head = self.peers[dest as usize]
            .tx
            .encode(Kind::Eager, env, data.len() as u64);
        let (mut op, mut pos) = (None, 0);
        if self.peers[dest as usize].out.is_empty() {
            let Some(net) = self.net.as_mut() else {
                unreachable!("a world of one has no peer {dest}");
            };
            let max = self.dimm_msg_max;
            match advance(&mut net.ep, dest, max, &mut op, &mut pos, &head, data) {
                Ok(true) => return Ok(SendToken(0)),
                Ok(false) => {}
                Err(e) => {
                    self.kill(dest, format!("DIMMnet: {e}"));
                    return self.check_dest(dest).map(|()| SendToken(0));
                }
            }
        }
        let token = self.sends.start();
        self.peers[dest as usize].out.push_back(Out {
            token,
            head,
            body: data.to_vec(),
            pos,
            op,
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

impl ReceivesThroughMatcher for Dimmnet {
    fn matcher(&mut self) -> &mut Matcher {
        &mut self.matcher
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::matcher::RecvOutcome;
    use crate::transport::ReceiveHalf;
    use o2g_core::proto::envelope::{Selector, SourceSel, TagSel};

    #[test]
    fn stream_parts_cover_header_then_body() {
        let head = [1u8, 2, 3];
        let body = [4u8, 5, 6, 7];
        let all: Vec<u8> = head.iter().chain(&body).copied().collect();
        for from in 0..=7u64 {
            for len in 0..=7 - from {
                let [a, b] = stream_parts(&head, &body, from, len);
                let got: Vec<u8> = a.iter().chain(b).copied().collect();
                assert_eq!(got, &all[from as usize..(from + len) as usize]);
            }
        }
    }

    #[test]
    fn geometry_fits_the_region() {
        let big = fit_config(16, None).unwrap();
        assert_eq!((big.bufs_per_peer, big.buf_size), (8, 32 << 10));
        // 64 MiB (the QEMU harness's default) for 32 nodes: a smaller one.
        let c = fit_config(32, Some(64 << 20)).unwrap();
        assert!(Layout::new(c).unwrap().region_len() <= 64 << 20);
        assert!(c.bufs_per_peer < 8);
        assert!(fit_config(32, Some(1 << 20)).is_none());
    }

    fn config() -> Config {
        let mut c = Config::from_env().unwrap();
        c.max_message = 4 << 30;
        c.dimmnet.peer_timeout = Duration::from_secs(30);
        c
    }

    /// `n` transports over one fresh region, as ranks of one job (built
    /// in the thread that uses them).
    fn world(n: u32) -> (String, u16) {
        let (name, pgid) = fresh_job();
        let name = format!("{name}-unit");
        let cfg = fit_config(n, None).unwrap();
        drop(Nic::create_shm(&name, cfg).unwrap());
        (name, pgid)
    }

    fn rank(name: &str, pgid: u16, me: u32, n: u32, small_dimm: bool) -> Dimmnet {
        let region = Arc::new(Region::open_shm(name).unwrap());
        let net = Dimmnet::net(region, me, pgid, &config()).unwrap();
        let mut t = Dimmnet::new(me, n, Some(net), &config()).unwrap();
        if small_dimm {
            // Exercise messages that span several DIMM_Sends.
            t.dimm_msg_max = 1000;
        }
        t
    }

    fn env(source: u32, tag: u32) -> Envelope {
        Envelope {
            source,
            tag,
            context: 0,
        }
    }

    fn pattern(seed: u32, len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| (i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed) as u8)
            .collect()
    }

    fn recv(t: &mut Dimmnet, source: SourceSel, tag: u32, cap: usize) -> (Envelope, Vec<u8>) {
        let sel = Selector {
            source,
            tag: TagSel::Tag(tag),
            context: 0,
        };
        let tok = t.post_recv(sel, cap).unwrap();
        loop {
            match t.test_recv(tok) {
                Some(RecvOutcome::Done { envelope, data, .. }) => return (envelope, data),
                Some(other) => panic!("{other:?}"),
                None => t.progress(None).unwrap(),
            }
        }
    }

    /// Both ranks send each other large messages with blocking sends
    /// before either receives, then isends that are only received after
    /// their senders finished: neither side may get stuck.
    #[test]
    fn flooding_each_other_does_not_deadlock() {
        for small_dimm in [false, true] {
            let (name, pgid) = world(2);
            let sizes = [0usize, 1, 464, 465, 70_000, 1 << 20];
            let threads: Vec<_> = (0..2u32)
                .map(|me| {
                    let name = name.clone();
                    std::thread::spawn(move || {
                        let mut t = rank(&name, pgid, me, 2, small_dimm);
                        let peer = 1 - me;
                        for (k, &len) in sizes.iter().enumerate() {
                            t.send(peer, env(me, k as u32), &pattern(me + k as u32, len))
                                .unwrap();
                        }
                        let mut tokens = Vec::new();
                        for k in 0..8u32 {
                            let data = pattern(me * 100 + k, 400_000);
                            tokens.push(t.isend(peer, env(me, 100 + k), &data).unwrap());
                        }
                        // Receive in reverse tag order: all but the last
                        // arrive unexpected.
                        for (k, &len) in sizes.iter().enumerate().rev() {
                            let (e, data) = recv(&mut t, SourceSel::Rank(peer), k as u32, len);
                            assert_eq!(e.source, peer);
                            assert_eq!(data, pattern(peer + k as u32, len));
                        }
                        for k in (0..8u32).rev() {
                            let (_, data) = recv(&mut t, SourceSel::Any, 100 + k, 400_000);
                            assert_eq!(data, pattern(peer * 100 + k, 400_000));
                        }
                        for tok in tokens {
                            while !t.test_send(tok).unwrap() {
                                t.progress(Some(Duration::from_millis(1))).unwrap();
                            }
                        }
                        t.flush(Duration::from_secs(30)).unwrap();
                        t
                    })
                })
                .collect();
            let ts: Vec<Dimmnet> = threads.into_iter().map(|h| h.join().unwrap()).collect();
            drop(ts);
            Region::unlink_shm(&name).unwrap();
        }
    }

    #[test]
    fn a_peer_that_leaves_fails_receives_and_sends() {
        let (name, pgid) = world(3);
        let mut a = rank(&name, pgid, 0, 3, false);
        let mut b = rank(&name, pgid, 1, 3, false);
        let c = rank(&name, pgid, 2, 3, false);
        Region::unlink_shm(&name).unwrap();
        // What b sent before it left is still received.
        b.send(0, env(1, 7), b"last words").unwrap();
        drop(b);
        let sel = Selector {
            source: SourceSel::Rank(1),
            tag: TagSel::Tag(8),
            context: 0,
        };
        let tok = a.post_recv(sel, 8).unwrap();
        while a.peer_failure(1).is_none() {
            a.progress(Some(Duration::from_millis(10))).unwrap();
        }
        assert!(a.peer_failure(1).unwrap().contains("left"));
        assert!(a.test_recv(tok).is_none());
        let (_, data) = recv(&mut a, SourceSel::Rank(1), 7, 64);
        assert_eq!(data, b"last words");
        assert!(matches!(
            a.send(1, env(0, 0), b"x"),
            Err(Error::PeerGone { rank: 1, .. })
        ));
        assert!(a.peer_failure(2).is_none());
        // Self messages go through the matcher.
        a.send(0, env(0, 3), b"me").unwrap();
        assert_eq!(recv(&mut a, SourceSel::Rank(0), 3, 8).1, b"me");
        drop(c);
    }
}
