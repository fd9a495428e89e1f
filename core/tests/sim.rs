//! Deterministic simulation, in the quinn style: endpoints exchange encoded
//! messages through in-memory pipes, and the test alone decides what is
//! sent, which pipe delivers how many bytes in what pieces, and when
//! receives are posted or cancelled. Each endpoint does what the kernel
//! module does on its receive path:
//!
//! - a reassembler per incoming connection, whose header events go to the
//!   matching engine, and whose payload pieces are copied straight to the
//!   matched receive's buffer or to the "dump area";
//! - when the unexpected queue is full, it stops reading that connection
//!   (the bytes stay in the pipe, as in a TCP socket) and retries later;
//! - a receive that matches a message still streaming into the dump area
//!   takes over the rest of the stream.
//!
//! Every engine decision is checked against the reference model, and at
//! the end every message sent must have been received exactly once, with
//! its payload intact. A failing seed replays exactly.

mod common;

use std::collections::HashMap;

use common::{ArriveOut, Model, Msg, PostOut, Rng};
use o2g_core::proto::envelope::{Envelope, Selector, SourceSel, TagSel};
use o2g_core::proto::matching::{
    Arrival, Bucket, CancelError, Engine, MsgId, Posted, QueueFull, RecvId, Slot,
};
use o2g_core::proto::stream::{Event, Reassembler};
use o2g_core::proto::wire::{Encoder, Header, Kind, Limits};

const MAX_PAYLOAD: u64 = 64;
const CONTEXTS: u32 = 2;
const TAGS: u32 = 3;

/// Where the current message's payload goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dest {
    Recv(u64),
    Dump(u64),
}

/// The receiving end of one connection.
struct Conn {
    rx: Reassembler,
    /// The message in progress: header, its key, and where its payload
    /// goes (`None`: the engine had no room yet, retry before reading on).
    current: Option<(Header, u64, Option<Dest>)>,
    /// Headers seen so far: the next message's index on this connection.
    count: u64,
}

/// A message's payload in the dump area.
struct Stored {
    data: Vec<u8>,
    complete: bool,
    id: MsgId,
}

/// Everything on one endpoint's receive side but its connections.
struct Receiver {
    engine: Engine<Vec<Slot>, Vec<Bucket>>,
    model: Model,
    dump: HashMap<u64, Stored>,
    /// Receives being filled, and the message they hold (to release).
    filling: HashMap<u64, (Vec<u8>, Option<MsgId>)>,
    /// Completed receives: handle -> (envelope, payload).
    done: HashMap<u64, (Envelope, Vec<u8>)>,
    /// Which message the model says each receive gets.
    matched: HashMap<u64, u64>,
    posted: Vec<(RecvId, u64)>,
    stats: Stats,
}

/// How often each path ran, to show the seeds reach them all.
#[derive(Clone, Copy, Debug, Default)]
struct Stats {
    matched_on_arrival: u64,
    from_dump: u64,
    taken_over_mid_stream: u64,
    back_pressure: u64,
}

impl Stats {
    fn add(&mut self, o: Stats) {
        self.matched_on_arrival += o.matched_on_arrival;
        self.from_dump += o.from_dump;
        self.taken_over_mid_stream += o.taken_over_mid_stream;
        self.back_pressure += o.back_pressure;
    }
}

struct Node {
    rank: u32,
    conns: Vec<Conn>,
    recv: Receiver,
}

/// A sent message's identity: (source, destination, index).
fn key(src: usize, dst: usize, index: u64) -> u64 {
    ((src as u64) << 48) | ((dst as u64) << 32) | index
}

impl Receiver {
    /// Hands a complete header to the engine. `None`: no room, retry later.
    fn place(&mut self, h: Header, key: u64) -> Option<Dest> {
        let msg = Msg {
            env: h.envelope,
            len: h.len,
            loc: key,
        };
        let len = h.len as usize;
        match (
            self.engine.arrive(h.envelope, h.len, key),
            self.model.arrive(msg),
        ) {
            (Ok(Arrival::Matched { handle }), ArriveOut::Matched(want)) => {
                assert_eq!(handle, want);
                self.matched.insert(handle, key);
                self.filling.insert(handle, (vec![0; len], None));
                self.stats.matched_on_arrival += 1;
                Some(Dest::Recv(handle))
            }
            (Ok(Arrival::Unexpected(id)), ArriveOut::Unexpected) => {
                let stored = Stored {
                    data: vec![0; len],
                    complete: false,
                    id,
                };
                self.dump.insert(key, stored);
                Some(Dest::Dump(key))
            }
            (Err(QueueFull), ArriveOut::Full) => {
                self.stats.back_pressure += 1;
                None
            }
            (got, want) => panic!("arrive {h:?}: engine {got:?}, model {want:?}"),
        }
    }

    fn payload(&mut self, dest: Dest, offset: u64, data: &[u8]) {
        let buf = match dest {
            Dest::Recv(handle) => &mut self.filling.get_mut(&handle).unwrap().0,
            Dest::Dump(loc) => &mut self.dump.get_mut(&loc).unwrap().data,
        };
        let at = offset as usize;
        buf[at..at + data.len()].copy_from_slice(data);
    }

    fn end(&mut self, dest: Dest, env: Envelope, key: u64) {
        match dest {
            Dest::Recv(handle) => {
                let (data, claimed) = self.filling.remove(&handle).unwrap();
                if let Some(id) = claimed {
                    self.release(id, key);
                }
                self.done.insert(handle, (env, data));
            }
            Dest::Dump(loc) => self.dump.get_mut(&loc).unwrap().complete = true,
        }
    }

    fn release(&mut self, id: MsgId, key: u64) {
        assert_eq!(self.engine.release(id).map(|i| i.location), Ok(key));
        assert!(self.model.release(key).is_some());
    }

    fn check_lengths(&self) {
        assert_eq!(self.engine.posted_len(), self.model.posted_len());
        assert_eq!(self.engine.unexpected_len(), self.model.unexpected_len());
    }
}

impl Node {
    fn new(rank: u32, ranks: usize, cap_posted: usize, cap_unexpected: usize) -> Self {
        let limits = Limits {
            max_payload: MAX_PAYLOAD,
        };
        let conns = (0..ranks)
            .map(|_| Conn {
                rx: Reassembler::new(limits),
                current: None,
                count: 0,
            })
            .collect();
        let engine = Engine::new(
            vec![Slot::EMPTY; cap_posted],
            vec![Slot::EMPTY; cap_unexpected],
            vec![Bucket::EMPTY; 4],
            u64::from(rank),
        )
        .unwrap();
        Node {
            rank,
            conns,
            recv: Receiver {
                engine,
                model: Model::new(cap_posted, cap_unexpected),
                dump: HashMap::new(),
                filling: HashMap::new(),
                done: HashMap::new(),
                matched: HashMap::new(),
                posted: Vec::new(),
                stats: Stats::default(),
            },
        }
    }

    /// Reads at most `budget` bytes from the pipe of connection `src`,
    /// offering the reassembler at most `piece` bytes per call, as a
    /// `tcp_read_sock` actor would; returns how many bytes it consumed.
    fn read(&mut self, src: usize, pipe: &[u8], budget: usize, piece: usize) -> usize {
        let me = self.rank as usize;
        let conn = &mut self.conns[src];
        let recv = &mut self.recv;
        if let Some((h, key, None)) = conn.current {
            match recv.place(h, key) {
                Some(dest) => conn.current = Some((h, key, Some(dest))),
                None => return 0,
            }
        }
        let mut input = &pipe[..budget.min(pipe.len())];
        let mut used = 0;
        loop {
            let step = conn.rx.feed(&input[..input.len().min(piece)]).unwrap();
            used += step.consumed;
            input = &input[step.consumed..];
            match step.event {
                Some(Event::Header(h)) => {
                    assert_eq!(h.envelope.source as usize, src, "header names its sender");
                    let k = key(src, me, conn.count);
                    conn.count += 1;
                    let dest = recv.place(h, k);
                    conn.current = Some((h, k, dest));
                    if dest.is_none() {
                        break; // Back-pressure: leave the rest in the socket.
                    }
                }
                Some(Event::Payload { offset, data }) => {
                    let (_, _, dest) = conn.current.unwrap();
                    recv.payload(dest.unwrap(), offset, data);
                }
                Some(Event::End(h)) => {
                    let (_, k, dest) = conn.current.take().unwrap();
                    recv.end(dest.unwrap(), h.envelope, k);
                }
                None if input.is_empty() => break,
                None => {}
            }
        }
        recv.check_lengths();
        used
    }

    fn post(&mut self, sel: Selector, handle: u64) {
        let recv = &mut self.recv;
        match (recv.engine.post(sel, handle), recv.model.post(sel, handle)) {
            (Ok(Posted::Matched(id, info)), PostOut::Matched(key)) => {
                assert_eq!(info.location, key);
                recv.matched.insert(handle, key);
                let stored = recv.dump.remove(&key).unwrap();
                assert_eq!(stored.id, id);
                if stored.complete {
                    recv.stats.from_dump += 1;
                    recv.release(id, key);
                    recv.done.insert(handle, (info.envelope, stored.data));
                } else {
                    // Still streaming: the receive takes over the rest.
                    recv.stats.taken_over_mid_stream += 1;
                    recv.filling.insert(handle, (stored.data, Some(id)));
                    let conn = self
                        .conns
                        .iter_mut()
                        .find(|c| matches!(c.current, Some((_, k, _)) if k == key))
                        .unwrap();
                    if let Some((_, _, dest)) = &mut conn.current {
                        *dest = Some(Dest::Recv(handle));
                    }
                }
            }
            (Ok(Posted::Queued(id)), PostOut::Queued) => recv.posted.push((id, handle)),
            (Err(QueueFull), PostOut::Full) => {}
            (got, want) => panic!("post {sel:?}: engine {got:?}, model {want:?}"),
        }
        recv.check_lengths();
    }

    fn cancel(&mut self, pick: usize) {
        let recv = &mut self.recv;
        if recv.posted.is_empty() {
            return;
        }
        let (id, handle) = recv.posted.swap_remove(pick % recv.posted.len());
        let want = if recv.model.cancel(handle) {
            Ok(handle)
        } else {
            Err(CancelError::TooLate)
        };
        assert_eq!(recv.engine.cancel(id), want);
        recv.check_lengths();
    }
}

struct World {
    nodes: Vec<Node>,
    /// pipes[src][dst]: bytes sent by src, not yet read by dst.
    pipes: Vec<Vec<Vec<u8>>>,
    encoders: Vec<Vec<Encoder>>,
    sent: HashMap<u64, (Envelope, Vec<u8>)>,
    sent_count: Vec<Vec<u64>>,
    next_handle: u64,
}

impl World {
    fn new(ranks: usize, cap_posted: usize, cap_unexpected: usize) -> Self {
        World {
            nodes: (0..ranks)
                .map(|r| Node::new(r as u32, ranks, cap_posted, cap_unexpected))
                .collect(),
            pipes: vec![vec![Vec::new(); ranks]; ranks],
            encoders: vec![vec![Encoder::new(); ranks]; ranks],
            sent: HashMap::new(),
            sent_count: vec![vec![0; ranks]; ranks],
            next_handle: 1,
        }
    }

    fn send(&mut self, src: usize, dst: usize, tag: u32, context: u32, payload: Vec<u8>) {
        let env = Envelope {
            source: src as u32,
            tag,
            context,
        };
        let header = self.encoders[src][dst].encode(Kind::Eager, env, payload.len() as u64);
        self.pipes[src][dst].extend_from_slice(&header);
        self.pipes[src][dst].extend_from_slice(&payload);
        let k = key(src, dst, self.sent_count[src][dst]);
        self.sent_count[src][dst] += 1;
        self.sent.insert(k, (env, payload));
    }

    fn deliver(&mut self, src: usize, dst: usize, budget: usize, piece: usize) {
        let pipe = std::mem::take(&mut self.pipes[src][dst]);
        let used = self.nodes[dst].read(src, &pipe, budget, piece);
        self.pipes[src][dst] = pipe[used..].to_vec();
    }

    fn post(&mut self, node: usize, sel: Selector) {
        let handle = self.next_handle;
        self.next_handle += 1;
        self.nodes[node].post(sel, handle);
    }

    /// Delivers everything, posting catch-all receives for what is left
    /// unexpected, until no bytes and no unexpected messages remain.
    fn drain(&mut self) {
        let ranks = self.nodes.len();
        for _round in 0..10_000 {
            for (src, dst) in (0..ranks).flat_map(|s| (0..ranks).map(move |d| (s, d))) {
                self.deliver(src, dst, usize::MAX, usize::MAX);
            }
            for node in 0..ranks {
                for context in 0..CONTEXTS {
                    let any = Selector {
                        source: SourceSel::Any,
                        tag: TagSel::Any,
                        context,
                    };
                    let recv = &self.nodes[node].recv;
                    let probed = recv.engine.probe(any).map(|(_, i)| i.location);
                    assert_eq!(probed, recv.model.probe(any).map(|m| m.loc));
                    if probed.is_some() {
                        self.post(node, any);
                    }
                }
            }
            let idle = self.pipes.iter().flatten().all(Vec::is_empty)
                && self
                    .nodes
                    .iter()
                    .all(|n| n.recv.engine.unexpected_len() == 0);
            if idle {
                return;
            }
        }
        panic!("the simulation did not drain");
    }

    fn check_everything_received_once(&mut self) {
        let mut received = 0;
        for node in &mut self.nodes {
            assert!(node.conns.iter().all(|c| c.rx.at_boundary()));
            for (handle, (env, data)) in &node.recv.done {
                let key = node.recv.matched[handle];
                let (sent_env, sent_data) = &self.sent[&key];
                assert_eq!(env, sent_env);
                assert_eq!(data, sent_data, "payload of message {key:#x}");
                received += 1;
            }
            // Leftover receives cancel cleanly.
            for i in (0..node.recv.posted.len()).rev() {
                node.cancel(i);
            }
            assert_eq!(node.recv.engine.posted_len(), 0);
        }
        assert_eq!(received, self.sent.len());
    }
}

fn selector(rng: &mut Rng, me: usize, ranks: usize) -> Selector {
    let source = if rng.chance(30) {
        SourceSel::Any
    } else {
        SourceSel::Rank(((me as u64 + 1 + rng.below(ranks as u64 - 1)) % ranks as u64) as u32)
    };
    let tag = if rng.chance(30) {
        TagSel::Any
    } else {
        TagSel::Tag(rng.below(u64::from(TAGS)) as u32)
    };
    Selector {
        source,
        tag,
        context: rng.below(u64::from(CONTEXTS)) as u32,
    }
}

fn run(seed: u64, ranks: usize, steps: usize) -> Stats {
    let mut rng = Rng::new(seed);
    let mut w = World::new(ranks, 4, 3);
    for _ in 0..steps {
        let src = rng.below(ranks as u64) as usize;
        let dst = (src + 1 + rng.below(ranks as u64 - 1) as usize) % ranks;
        match rng.below(100) {
            0..=29 => {
                let len = rng.below(MAX_PAYLOAD + 1) as usize;
                let payload = (0..len).map(|_| rng.next() as u8).collect();
                let tag = rng.below(u64::from(TAGS)) as u32;
                let context = rng.below(u64::from(CONTEXTS)) as u32;
                w.send(src, dst, tag, context, payload);
            }
            30..=69 => {
                let budget = 1 + rng.below(120) as usize;
                let piece = 1 + rng.below(48) as usize;
                w.deliver(src, dst, budget, piece);
            }
            70..=94 => {
                let sel = selector(&mut rng, dst, ranks);
                w.post(dst, sel);
            }
            _ => w.nodes[dst].cancel(rng.next() as usize),
        }
    }
    w.drain();
    w.check_everything_received_once();
    let mut stats = Stats::default();
    for n in &w.nodes {
        stats.add(n.recv.stats);
    }
    stats
}

fn run_seeds(seeds: std::ops::Range<u64>, ranks: usize, steps: usize) {
    let mut stats = Stats::default();
    for seed in seeds {
        stats.add(run(seed, ranks, steps));
    }
    // The seeds must reach every receive path, or the test proves little.
    assert!(stats.matched_on_arrival > 0, "{stats:?}");
    assert!(stats.from_dump > 0, "{stats:?}");
    assert!(stats.taken_over_mid_stream > 0, "{stats:?}");
    assert!(stats.back_pressure > 0, "{stats:?}");
}

#[test]
fn two_endpoints() {
    run_seeds(0..300, 2, 400);
}

#[test]
fn three_endpoints_with_any_source() {
    run_seeds(1000..1200, 3, 600);
}
