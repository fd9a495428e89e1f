//! `hyphenlink`: MPI over the emulated HyphenLink board (`o2g-hyphen`),
//! with AP1000 buffer receiving as the receive path.
//!
//! All processes map one shared region holding a board of `size` nodes
//! (world rank = node number) with one AP1000 receive ring per (receiver,
//! sender) pair in the receiver's board memory, which rank 0 lays out and
//! the others join through PMI (`setup.rs`). A message to rank `d` is
//! written by its sender, in frames, into the ring `d` keeps for it
//! (`framing.rs`). Every progress round drains this rank's rings into the
//! matcher and pushes the sends queued for full rings (`peer.rs`). A rank
//! with nothing to do spins, yields, then sleeps, and its peers wake it
//! with a PB when they give it work (`wait.rs`). A peer that left, exited
//! or stopped beating is dead and fails what depends on it
//! (`dead_peers.rs`, over the board's [`o2g_hyphen::liveness`]).
//!
//! Why rings rather than DSM pages: a message is written once and read
//! once, so DSM's CACHE / twin / diff / write-back machinery would only add
//! copies and a lock per 4 KiB page, while a ring in the receiver's memory
//! costs one copy in and one copy out, never contends (one writer per
//! ring, whose writer lock is therefore always free) and buffers eagerly on
//! the receiving side, which is what MPI's eager protocol wants.

mod dead_peers;
mod frame_clock;
mod framing;
mod peer;
mod setup;
mod wait;

use std::time::{Duration, Instant};

use o2g_core::proto::envelope::Envelope;
use o2g_hyphen::liveness::{Heartbeat, LivenessTable, PeerWatch};
use o2g_hyphen::wait::WaitPolicy;
use o2g_hyphen::{Node, MAX_NODES};

use super::matcher::Matcher;
use super::model_time::{InTransport, ModelClock};
use super::outbox::Sends;
use super::{ReceivesThroughMatcher, SendHalf, SendToken, Transport};
use crate::config::{Config, HyphenWait};
use crate::error::{Error, Result};
use crate::pmi::Pmi;
use dead_peers::HEARTBEAT_PERIOD;
use frame_clock::FrameClock;
use framing::Cursor;
use peer::{Out, Peer};
use setup::Setup;

fn unavailable(what: &str, e: impl std::fmt::Display) -> Error {
    Error::TransportUnavailable {
        name: "hyphenlink".into(),
        reason: format!("{what}: {e}"),
    }
}

/// The `hyphenlink` transport; see the module documentation.
pub(crate) struct HyphenLink {
    /// This node's heartbeat: dropped first, it marks the node `CLOSED`.
    _heartbeat: Heartbeat,
    me: u32,
    self_path: bool,
    max_message: u64,
    node: Node,
    /// The nodes' liveness lines, whose spare words are the `waiting` flags.
    table: LivenessTable,
    watch: PeerWatch,
    peers: Vec<Peer>,
    matcher: Matcher,
    sends: Sends,
    scratch: Vec<u8>,
    sleep: HyphenWait,
    polls: u32,
    /// `O2G_MODEL_TIME=1`: frames are timed, and `MPI_Wtime` is the
    /// node's model clock.
    frame_clock: Option<FrameClock>,
    model: Option<ModelClock>,
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
        let Setup {
            board,
            table,
            joined,
        } = setup::setup(config, pmi, &mut sleep)?;
        let policy = WaitPolicy::polling(Duration::from_secs(1));
        let hl = |e| unavailable("attaching rings", e);
        let mut peers = Vec::with_capacity(size as usize);
        for p in 0..size {
            let writer = board.ring_writer(p, me, policy).map_err(hl)?;
            let reader = board.ring_reader(me, p, policy).map_err(hl)?;
            peers.push(Peer::new(writer, reader));
        }
        let node = board.node(me, policy).map_err(hl)?;
        let heartbeat = Heartbeat::start(&table, me, HEARTBEAT_PERIOD)
            .map_err(|e| Error::io("starting the heartbeat thread", e))?;
        // Everyone is attached and ALIVE past this barrier.
        joined.everyone_attached(pmi)?;
        let watch = PeerWatch::new(&table, config.hyphen.dead_after);
        let (frame_clock, model) = if config.model_time {
            let clock = FrameClock::new(&node).ok_or_else(|| {
                Error::Config("O2G_MODEL_TIME=1, but the HyphenLink node is not modelled".into())
            })?;
            (Some(clock), Some(ModelClock::install(node.clone())))
        } else {
            (None, None)
        };
        Ok(Self {
            _heartbeat: heartbeat,
            me,
            self_path: config.self_path,
            max_message: config.max_message,
            node,
            table,
            watch,
            peers,
            matcher: Matcher::new(),
            sends: Sends::new(),
            scratch: Vec::new(),
            sleep: sleep.unwrap_or(HyphenWait::Block),
            polls: 0,
            frame_clock,
            model,
        })
    }

    /// Marks an entry into the transport for the model clock, if any.
    fn enter(&self) -> Option<InTransport> {
        self.model.as_ref().map(ModelClock::enter)
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
}

impl Transport for HyphenLink {
    fn progress(&mut self, timeout: Option<Duration>) -> Result<()> {
        let _in = self.enter();
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
        let _in = self.enter();
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
        let _in = self.enter();
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
