//! Deterministic simulation, in the quinn style: endpoints exchange encoded
//! messages through in-memory pipes, and the test alone decides what is
//! sent, which pipe delivers how many bytes in what pieces, and when
//! receives are posted or cancelled.
//!
//! Each endpoint runs the real receive state machine (`proto::receive`),
//! the one the kernel module runs, over a real dump area: a byte array
//! with the module's allocator. The test only does what the module's
//! reader does with the machine's answers: copy header bytes in, copy
//! payload pieces to the place it names, stop reading a stalled connection
//! (the bytes stay in the pipe, as in a TCP socket) and retry it after a
//! release, and copy stored payloads out.
//!
//! Every decision is checked against the reference model of MPI matching,
//! and at the end every message sent must have been received exactly
//! once, with its payload intact up to the receive's capacity. A failing
//! seed replays exactly.

mod common;

use std::collections::HashMap;

use common::{ArriveOut, Model, Msg, PostOut, Rng};
use o2g_core::proto::dump::{DumpAlloc, Record};
use o2g_core::proto::envelope::{Envelope, Selector, SourceSel, TagSel};
use o2g_core::proto::matching::{Bucket, CancelError, Engine, QueueFull, RecvId, Slot};
use o2g_core::proto::receive::{Inbound, Next, OnEnd, OnPost, Place, Receiver, Region};
use o2g_core::proto::wire::{Encoder, Kind, Limits};

const MAX_PAYLOAD: u64 = 64;
const DUMP_BYTES: u64 = 160;
const CONTEXTS: u32 = 2;
const TAGS: u32 = 3;

type Machine = Receiver<Vec<Slot>, Vec<Bucket>, DumpAlloc<Vec<Record>>>;

/// A posted receive's buffer, and what it got.
struct Buffer {
    data: Vec<u8>,
    /// Which message the model says it gets, once matched.
    key: Option<u64>,
    /// The message's envelope and sent length, once complete.
    done: Option<(Envelope, u64)>,
}

/// How often each path ran, to show the seeds reach them all.
#[derive(Clone, Copy, Debug, Default)]
struct Paths {
    direct: u64,
    from_store: u64,
    copy_out: u64,
    stall_queue: u64,
    stall_store: u64,
    truncated: u64,
}

impl Paths {
    fn add(&mut self, o: Paths) {
        self.direct += o.direct;
        self.from_store += o.from_store;
        self.copy_out += o.copy_out;
        self.stall_queue += o.stall_queue;
        self.stall_store += o.stall_store;
        self.truncated += o.truncated;
    }
}

struct Node {
    rank: u32,
    cap_unexpected: usize,
    conns: Vec<Inbound>,
    /// The key of the message each connection is receiving, by count.
    counts: Vec<u64>,
    rx: Machine,
    dump: Vec<u8>,
    model: Model,
    /// Messages streaming into the dump area (the model's view).
    streaming: usize,
    /// Receives being filled straight from a connection.
    filling: u64,
    buffers: HashMap<u64, Buffer>,
    /// Stored message id -> its key, for the model.
    stored_keys: HashMap<u64, u64>,
    posted: Vec<(RecvId, u64)>,
    paths: Paths,
}

/// A sent message's identity: (source, destination, index).
fn key(src: usize, dst: usize, index: u64) -> u64 {
    ((src as u64) << 48) | ((dst as u64) << 32) | index
}

impl Node {
    fn new(rank: u32, ranks: usize, cap_posted: usize, cap_unexpected: usize) -> Self {
        let limits = Limits {
            max_payload: MAX_PAYLOAD,
        };
        let engine = Engine::new(
            vec![Slot::EMPTY; cap_posted],
            vec![Slot::EMPTY; cap_unexpected],
            vec![Bucket::EMPTY; 4],
            u64::from(rank),
        )
        .unwrap();
        let store = DumpAlloc::new(vec![Record::EMPTY; cap_unexpected], DUMP_BYTES, 8);
        let mut rx = Receiver::new(engine, store, cap_posted as u32);
        let conns = (0..ranks)
            .map(|r| {
                rx.add_conn();
                Inbound::new(r as u32, limits)
            })
            .collect();
        Node {
            rank,
            cap_unexpected,
            conns,
            counts: vec![0; ranks],
            rx,
            dump: vec![0; DUMP_BYTES as usize],
            model: Model::new(cap_posted, cap_unexpected),
            streaming: 0,
            filling: 0,
            buffers: HashMap::new(),
            stored_keys: HashMap::new(),
            posted: Vec::new(),
            paths: Paths::default(),
        }
    }

    /// Reads at most `budget` bytes from the pipe of connection `src`,
    /// offering at most `piece` bytes per step, as a `tcp_read_sock` actor
    /// would; returns how many bytes it consumed.
    fn read(&mut self, src: usize, pipe: &[u8], budget: usize, piece: usize) -> usize {
        let input = &pipe[..budget.min(pipe.len())];
        let mut pos = 0;
        loop {
            let avail = (input.len() - pos).min(piece);
            match self.conns[src].next(avail) {
                Next::Header { max } => {
                    let used = self.conns[src]
                        .feed_header(&input[pos..pos + max])
                        .expect("well-formed stream");
                    pos += used;
                }
                Next::Payload { to, offset, len } => {
                    let data = &input[pos..pos + len];
                    pos += len;
                    self.payload(to, offset, data);
                }
                Next::Decide => {
                    if !self.decide(src) {
                        break;
                    }
                }
                Next::End => self.end(src),
                Next::Stalled => {
                    // A release since the stall may have made room.
                    if !self.decide(src) {
                        break;
                    }
                }
                Next::NeedInput => break,
                Next::Failed => panic!("connection {src} failed"),
            }
        }
        self.check_lengths();
        pos
    }

    /// Decides connection `src`'s pending header, checking the model.
    fn decide(&mut self, src: usize) -> bool {
        let (h, _) = self.conns[src].current().unwrap();
        let want = self.model.match_posted(&h.envelope);
        let queue_full = self.model.unexpected_len() + self.streaming >= self.cap_unexpected;
        let k = key(src, self.rank as usize, self.counts[src]);
        let decided = self.conns[src].decide(&mut self.rx);
        match (want, decided) {
            (Some(handle), true) => {
                let buf = self.buffers.get_mut(&handle).unwrap();
                buf.key = Some(k);
                self.filling += 1;
                self.paths.direct += 1;
            }
            (None, true) => {
                assert!(!queue_full, "stored with the unexpected queue full");
                self.streaming += 1;
            }
            (None, false) if queue_full => self.paths.stall_queue += 1,
            (None, false) => {
                // The dump area had no contiguous room: a stored region
                // must exist to free.
                assert!(self.model.unexpected_len() + self.streaming > 0);
                self.paths.stall_store += 1;
            }
            (Some(handle), false) => panic!("receive {handle} matched, yet the header stalled"),
        }
        if decided {
            self.counts[src] += 1;
        }
        decided
    }

    fn payload(&mut self, to: Place, offset: u64, data: &[u8]) {
        let at = offset as usize;
        match to {
            Place::Recv { handle } => {
                let buf = &mut self.buffers.get_mut(&handle).unwrap().data;
                // Past the buffer's end the bytes are dropped (truncation).
                let end = (at + data.len()).min(buf.len());
                if at < end {
                    buf[at..end].copy_from_slice(&data[..end - at]);
                }
            }
            Place::Store { at: base } => {
                let start = base as usize + at;
                self.dump[start..start + data.len()].copy_from_slice(data);
            }
        }
    }

    /// Ends connection `src`'s current message.
    fn end(&mut self, src: usize) {
        let k = key(src, self.rank as usize, self.counts[src] - 1);
        match self.conns[src].finish(&mut self.rx).unwrap() {
            OnEnd::Completed {
                handle,
                envelope,
                len,
            } => {
                self.filling -= 1;
                self.complete(handle, envelope, len);
            }
            OnEnd::Stored { msg, envelope, len } => {
                self.streaming -= 1;
                let m = Msg {
                    env: envelope,
                    len,
                    loc: k,
                };
                assert_eq!(self.model.arrive(m), ArriveOut::Unexpected);
                self.stored_keys.insert(msg.to_raw(), k);
            }
            OnEnd::CopyOut {
                handle,
                envelope,
                len,
                region,
            } => {
                self.streaming -= 1;
                let m = Msg {
                    env: envelope,
                    len,
                    loc: k,
                };
                assert_eq!(self.model.arrive(m), ArriveOut::Matched(handle));
                self.buffers.get_mut(&handle).unwrap().key = Some(k);
                self.copy_out(handle, region, len);
                // The copy is owed until done: its receive is outstanding.
                let owed = self.model.posted_len() as u64 + self.filling + 1;
                assert_eq!(self.rx.outstanding(), owed);
                self.rx.copied(region);
                self.complete(handle, envelope, len);
                self.paths.copy_out += 1;
            }
        }
    }

    fn copy_out(&mut self, handle: u64, region: Region, len: u64) {
        let at = region.at as usize;
        let buf = &mut self.buffers.get_mut(&handle).unwrap().data;
        let n = (len as usize).min(buf.len());
        buf[..n].copy_from_slice(&self.dump[at..at + n]);
    }

    fn complete(&mut self, handle: u64, envelope: Envelope, len: u64) {
        let buf = self.buffers.get_mut(&handle).unwrap();
        assert!(buf.done.is_none(), "receive {handle} completed twice");
        if len as usize > buf.data.len() {
            self.paths.truncated += 1;
        }
        buf.done = Some((envelope, len));
    }

    fn post(&mut self, sel: Selector, handle: u64, capacity: usize) {
        self.buffers.insert(
            handle,
            Buffer {
                data: vec![0; capacity],
                key: None,
                done: None,
            },
        );
        match (self.rx.post(sel, handle), self.model.post(sel, handle)) {
            (Ok(OnPost::FromStore { msg, info, region }), PostOut::Matched(k)) => {
                assert_eq!(self.stored_keys.remove(&msg.to_raw()), Some(k));
                self.buffers.get_mut(&handle).unwrap().key = Some(k);
                self.copy_out(handle, region, info.len);
                assert_eq!(self.rx.release(msg).map(|i| i.len), Ok(info.len));
                assert!(self.model.release(k).is_some());
                self.complete(handle, info.envelope, info.len);
                self.paths.from_store += 1;
            }
            (Ok(OnPost::Queued(id)), PostOut::Queued) => self.posted.push((id, handle)),
            (Err(QueueFull), PostOut::Full) => {
                self.buffers.remove(&handle);
            }
            (got, want) => panic!("post {sel:?}: machine {got:?}, model {want:?}"),
        }
        self.check_lengths();
    }

    fn cancel(&mut self, pick: usize) {
        if self.posted.is_empty() {
            return;
        }
        let (id, handle) = self.posted.swap_remove(pick % self.posted.len());
        let want = if self.model.cancel(handle) {
            Ok(handle)
        } else {
            Err(CancelError::TooLate)
        };
        assert_eq!(self.rx.cancel(id), want);
        if want.is_ok() {
            self.buffers.remove(&handle);
        }
        self.check_lengths();
    }

    fn check_lengths(&self) {
        assert_eq!(self.rx.posted_len(), self.model.posted_len());
        assert_eq!(self.rx.unexpected_len(), self.model.unexpected_len());
        assert!(self.rx.store().used() <= DUMP_BYTES);
        let owed = self.model.posted_len() as u64 + self.filling;
        assert_eq!(self.rx.outstanding(), owed);
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

    fn post(&mut self, node: usize, sel: Selector, capacity: usize) {
        let handle = self.next_handle;
        self.next_handle += 1;
        self.nodes[node].post(sel, handle, capacity);
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
                    let n = &self.nodes[node];
                    let probed = n.rx.probe(any).map(|(id, _)| n.stored_keys[&id.to_raw()]);
                    assert_eq!(probed, n.model.probe(any).map(|m| m.loc));
                    if probed.is_some() {
                        self.post(node, any, MAX_PAYLOAD as usize);
                    }
                }
            }
            let idle = self.pipes.iter().flatten().all(Vec::is_empty)
                && self.nodes.iter().all(|n| {
                    n.rx.unexpected_len() == 0 && n.conns.iter().all(Inbound::at_boundary)
                });
            if idle {
                return;
            }
        }
        panic!("the simulation did not drain");
    }

    fn check_everything_received_once(&mut self) {
        let mut received = 0;
        for node in &mut self.nodes {
            assert!(node.conns.iter().all(Inbound::at_boundary));
            assert_eq!(node.rx.store().used(), 0, "dump area bytes leaked");
            for (handle, buf) in &node.buffers {
                let Some((env, len)) = buf.done else {
                    continue;
                };
                let key = buf.key.expect("a completed receive has a message");
                let (sent_env, sent_data) = &self.sent[&key];
                assert_eq!(&env, sent_env, "receive {handle}");
                assert_eq!(len, sent_data.len() as u64, "receive {handle}");
                let n = sent_data.len().min(buf.data.len());
                assert_eq!(&buf.data[..n], &sent_data[..n], "payload of {key:#x}");
                received += 1;
            }
            // Leftover receives cancel cleanly.
            for i in (0..node.posted.len()).rev() {
                node.cancel(i);
            }
            assert_eq!(node.rx.posted_len(), 0);
            assert_eq!(node.rx.outstanding(), 0, "a receive is still owed");
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

fn run(seed: u64, ranks: usize, steps: usize) -> Paths {
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
                let capacity = if rng.chance(20) {
                    rng.below(MAX_PAYLOAD) as usize
                } else {
                    MAX_PAYLOAD as usize
                };
                w.post(dst, sel, capacity);
            }
            _ => w.nodes[dst].cancel(rng.next() as usize),
        }
    }
    w.drain();
    w.check_everything_received_once();
    let mut paths = Paths::default();
    for n in &w.nodes {
        paths.add(n.paths);
    }
    paths
}

fn run_seeds(seeds: std::ops::Range<u64>, ranks: usize, steps: usize) {
    let mut paths = Paths::default();
    for seed in seeds {
        paths.add(run(seed, ranks, steps));
    }
    // The seeds must reach every receive path, or the test proves little.
    assert!(paths.direct > 0, "{paths:?}");
    assert!(paths.from_store > 0, "{paths:?}");
    assert!(paths.copy_out > 0, "{paths:?}");
    assert!(paths.stall_queue > 0, "{paths:?}");
    assert!(paths.stall_store > 0, "{paths:?}");
    assert!(paths.truncated > 0, "{paths:?}");
}

#[test]
fn two_endpoints() {
    run_seeds(0..300, 2, 400);
}

#[test]
fn three_endpoints_with_any_source() {
    run_seeds(1000..1200, 3, 600);
}
