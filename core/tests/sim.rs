//! Deterministic simulation, in the quinn style: endpoints exchange encoded
//! messages through in-memory pipes, and the test alone decides what is
//! sent, which pipe delivers how many bytes in what pieces, and when
//! receives are posted or cancelled.
//!
//! Each endpoint runs the real receive state machine (`proto::receive`),
//! the one the kernel module runs, over a real dump area: a byte array
//! with the module's store, one ring per sender. The test only does what a reader does with
//! the machine's answers: copy header bytes in, copy payload pieces to the
//! place it names, stop reading a stalled connection (the bytes stay in
//! the pipe, as in a TCP socket) and retry it after a release, copy stored
//! payloads out, send a clear-to-send when a request to send matched, the
//! data when a clear-to-send arrives, and credit when the machine says it
//! is due. Senders follow the protocol: eager up to [`THRESHOLD`] bytes
//! while their credit lasts, a request to send otherwise.
//!
//! Every decision is checked against the reference model of MPI matching,
//! and at the end every message sent must have been received exactly
//! once, with its payload intact up to the receive's capacity. A failing
//! seed replays exactly.

mod common;

use std::collections::HashMap;

use common::{ArriveOut, Model, Msg, PostOut};
use o2g_core::proto::credit::{Allowance, Credit, Window};
use o2g_core::proto::dump::Record;
use o2g_core::proto::envelope::{Envelope, Selector, SourceSel, TagSel};
use o2g_core::proto::matching::{Bucket, CancelError, Engine, QueueFull, RecvId, Slot};
use o2g_core::proto::receive::{
    Control, Decision, Dest, Inbound, Next, OnEnd, OnPost, Place, Receiver, Region, Waiting,
};
use o2g_core::proto::sender_rings::{SenderRing, SenderRings};
use o2g_core::proto::wire::{Encoder, Header, Kind, Limits};
use rand_core::{Rng as _, SeedableRng};
use rand_xorshift::XorShiftRng;

const MAX_PAYLOAD: u64 = 64;
const CONTEXTS: u32 = 2;
const TAGS: u32 = 3;
/// Longer messages go by rendezvous.
const THRESHOLD: u64 = 40;
/// Each sender's ring of the dump area: at 64-byte alignment it holds two
/// eager messages of at most [`THRESHOLD`] bytes.
const REGION: u64 = 128;
/// The eager credit each endpoint grants each peer: one window is more
/// than its ring holds, so a full ring still happens (the module grants
/// no more than it has; the simulation tries a receiver that breaks that
/// rule, which must stall, never corrupt).
const WINDOW: Window = Window {
    bytes: 100,
    msgs: 3,
    largest: THRESHOLD,
};
/// Entries for receives waiting for rendezvous data.
const WAITING: usize = 5;

type Machine =
    Receiver<Vec<Slot>, Vec<Bucket>, SenderRings<Vec<SenderRing<Vec<Record>>>>, Vec<Waiting>>;

/// A message for another endpoint's connection, besides the data
/// messages `World::send` writes.
#[derive(Clone, Copy, Debug)]
enum Frame {
    Cts {
        token: u64,
        want: u64,
        offer: u32,
    },
    Credit(Credit),
    Data {
        token: u64,
        want: u64,
        offer: u32,
        key: u64,
    },
}

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
    stall_waiting: u64,
    truncated: u64,
    /// A request to send found its receive posted (also one posted while
    /// the request was in flight).
    rts_matched: u64,
    /// A receive posted after its request to send arrived.
    rts_late_post: u64,
    /// A cancel that came after a clear-to-send, and failed.
    cancel_after_clear: u64,
    credit_frames: u64,
    post_waiting_full: u64,
}

impl Paths {
    fn add(&mut self, o: Paths) {
        self.direct += o.direct;
        self.from_store += o.from_store;
        self.copy_out += o.copy_out;
        self.stall_queue += o.stall_queue;
        self.stall_store += o.stall_store;
        self.stall_waiting += o.stall_waiting;
        self.truncated += o.truncated;
        self.rts_matched += o.rts_matched;
        self.rts_late_post += o.rts_late_post;
        self.cancel_after_clear += o.cancel_after_clear;
        self.credit_frames += o.credit_frames;
        self.post_waiting_full += o.post_waiting_full;
    }
}

struct Node {
    rank: u32,
    cap_unexpected: usize,
    /// Each peer's messages (eager, requests to send).
    conns: Vec<Inbound>,
    /// Each peer's control messages (clear-to-send, data, credit).
    controls: Vec<Inbound>,
    /// The key of the message each connection is receiving, by count.
    counts: Vec<u64>,
    rx: Machine,
    dump: Vec<u8>,
    model: Model,
    /// Messages streaming into the dump area (the model's view).
    streaming: usize,
    /// Receives being filled straight from a connection.
    filling: u64,
    /// Receives waiting for rendezvous data.
    awaiting: std::collections::HashSet<u64>,
    /// Stored eager messages by key: their sender and length.
    stored_eager: HashMap<u64, (usize, u64)>,
    /// Credit for eager messages to each peer.
    allowance: Vec<Allowance>,
    /// Offers waiting for a clear-to-send: offer -> (peer, message key).
    offers: HashMap<u32, (usize, u64)>,
    next_offer: u32,
    /// Frames to send: (peer, frame).
    out: Vec<(usize, Frame)>,
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
        let rings = (0..ranks)
            .map(|_| SenderRing::new(vec![Record::EMPTY; WINDOW.msgs as usize], REGION))
            .collect();
        let store = SenderRings::new(rings, REGION);
        let waiting = vec![Waiting::EMPTY; WAITING];
        let mut rx = Receiver::new(engine, store, waiting, cap_posted as u32);
        let conns = (0..ranks)
            .map(|r| {
                rx.add_conn();
                Inbound::messages(r as u32, limits, WINDOW)
            })
            .collect();
        let controls = (0..ranks)
            .map(|r| Inbound::control(r as u32, limits))
            .collect();
        let mut node = Node {
            rank,
            cap_unexpected,
            conns,
            controls,
            counts: vec![0; ranks],
            rx,
            dump: vec![0; ranks * REGION as usize],
            model: Model::new(cap_posted, cap_unexpected),
            streaming: 0,
            filling: 0,
            buffers: HashMap::new(),
            stored_keys: HashMap::new(),
            posted: Vec::new(),
            paths: Paths::default(),
            awaiting: Default::default(),
            stored_eager: HashMap::new(),
            allowance: vec![Allowance::new(); ranks],
            offers: HashMap::new(),
            next_offer: 0,
            out: Vec::new(),
        };
        // The first credit: a whole window to each peer.
        node.send_credit();
        node
    }

    /// Queues every credit the connections say is due.
    fn send_credit(&mut self) {
        for (peer, conn) in self.conns.iter_mut().enumerate() {
            if peer == self.rank as usize {
                continue;
            }
            while let Some(c) = conn.credit_due() {
                self.out.push((peer, Frame::Credit(c)));
                self.paths.credit_frames += 1;
            }
        }
    }

    /// A clear-to-send for `handle`'s receive, asking for what fits.
    fn send_cts(&mut self, handle: u64, clear: o2g_core::proto::receive::Clear) {
        let capacity = self.buffers[&handle].data.len() as u64;
        self.awaiting.insert(handle);
        self.out.push((
            clear.rank as usize,
            Frame::Cts {
                token: clear.token,
                want: clear.size.min(capacity),
                offer: clear.offer,
            },
        ));
    }

    /// Acts on a message for this endpoint's sending side from `peer`.
    fn control(&mut self, peer: usize, c: Control) {
        match c {
            Control::Credit(credit) => self.allowance[peer].add(credit),
            Control::Cts { token, want, offer } => {
                let (to, key) = self
                    .offers
                    .remove(&offer)
                    .expect("a clear-to-send for an offer");
                assert_eq!(to, peer, "offer {offer} was made to {to}");
                self.out.push((
                    peer,
                    Frame::Data {
                        token,
                        want,
                        offer,
                        key,
                    },
                ));
            }
        }
    }

    /// Every stored eager byte is covered by its sender's credit, which
    /// never exceeds the window.
    fn check_credit(&self) {
        let mut held = vec![0u64; self.conns.len()];
        for (src, len) in self.stored_eager.values() {
            held[*src] += len;
        }
        for (src, conn) in self.conns.iter().enumerate() {
            let counted = conn.held_eager_bytes();
            assert!(
                counted <= WINDOW.bytes,
                "{counted} eager bytes held from {src}"
            );
            assert!(
                held[src] <= counted,
                "{} stored from {src}, {counted} counted",
                held[src]
            );
        }
    }

    /// Peer `src`'s messages connection, or its control connection.
    fn inbound(&mut self, src: usize, control: bool) -> &mut Inbound {
        if control {
            &mut self.controls[src]
        } else {
            &mut self.conns[src]
        }
    }

    /// Reads at most `budget` bytes from the pipe of peer `src`'s
    /// messages or control connection, offering at most `piece` bytes per
    /// step, as a `tcp_read_sock` actor would; returns how many bytes it
    /// consumed.
    fn read(
        &mut self,
        src: usize,
        control: bool,
        pipe: &[u8],
        budget: usize,
        piece: usize,
    ) -> usize {
        if !control {
            // As the module's reader does: what left the store since this
            // connection was last read is its peer's credit again.
            let returned = self.rx.store_mut().take_returned(src as u32);
            self.conns[src].give_back_all(returned);
        }
        let input = &pipe[..budget.min(pipe.len())];
        let mut pos = 0;
        loop {
            let avail = (input.len() - pos).min(piece);
            match self.inbound(src, control).next(avail) {
                Next::Header { max } => {
                    let used = self
                        .inbound(src, control)
                        .feed_header(&input[pos..pos + max])
                        .expect("well-formed stream");
                    pos += used;
                }
                Next::Payload { to, offset, len } => {
                    let data = &input[pos..pos + len];
                    pos += len;
                    self.payload(to, offset, data);
                }
                Next::Decide if control => self.decide_data(src),
                Next::End if control => self.end_data(src),
                Next::Decide | Next::Stalled => {
                    // After a stall: a release since may have made room.
                    if !self.decide(src) {
                        break;
                    }
                }
                Next::End => self.end(src),
                Next::Control(c) => self.control(src, c),
                Next::NeedInput => break,
                Next::Failed => panic!("connection {src} failed"),
            }
        }
        self.send_credit();
        self.check_lengths();
        pos
    }

    /// Rendezvous data from `src`: it goes to the receive that waits.
    fn decide_data(&mut self, src: usize) {
        let decided = self.controls[src].decide(&mut self.rx);
        assert_eq!(decided, Ok(Decision::Go), "data for a waiting receive");
        let Some(Dest::Data { handle, .. }) = self.controls[src].dest() else {
            panic!("data went elsewhere");
        };
        assert!(
            self.awaiting.remove(handle),
            "receive {handle} was not waiting"
        );
        self.filling += 1;
    }

    /// The end of a control message from `src` (data completes its
    /// receive).
    fn end_data(&mut self, src: usize) {
        if let Some(ended) = self.controls[src].finish(&mut self.rx) {
            let OnEnd::Completed {
                handle,
                envelope,
                len,
            } = ended
            else {
                panic!("data ended as {ended:?}");
            };
            self.filling -= 1;
            self.complete(handle, envelope, len);
        }
    }

    /// Decides connection `src`'s pending header, checking the model.
    fn decide(&mut self, src: usize) -> bool {
        let (h, _) = self.conns[src].current().unwrap();
        let waiting_full = h.kind == Kind::Rts && self.awaiting.len() >= WAITING;
        let queue_full = self.model.unexpected_len() + self.streaming >= self.cap_unexpected;
        let want = if waiting_full {
            None
        } else {
            self.model.match_posted(&h.envelope)
        };
        let k = key(src, self.rank as usize, self.counts[src]);
        let decided = self.conns[src].decide(&mut self.rx).expect("no failure");
        match (want, decided) {
            (Some(handle), Decision::Go) if h.kind == Kind::Eager => {
                let buf = self.buffers.get_mut(&handle).unwrap();
                buf.key = Some(k);
                self.filling += 1;
                self.paths.direct += 1;
            }
            (None, Decision::Go) if h.kind == Kind::Eager => {
                assert!(!queue_full, "stored with the unexpected queue full");
                self.streaming += 1;
                self.stored_eager.insert(k, (src, h.len));
            }
            (Some(handle), Decision::Clear(clear)) => {
                assert_eq!((clear.handle, clear.size), (handle, h.len));
                self.buffers.get_mut(&handle).unwrap().key = Some(k);
                self.send_cts(handle, clear);
                self.paths.rts_matched += 1;
            }
            (None, Decision::Stored { msg }) => {
                assert!(!queue_full, "stored with the unexpected queue full");
                let m = Msg {
                    env: h.envelope,
                    len: h.len,
                    loc: k,
                };
                assert_eq!(self.model.arrive(m), ArriveOut::Unexpected);
                self.stored_keys.insert(msg.to_raw(), k);
            }
            (None, Decision::Wait) if waiting_full => self.paths.stall_waiting += 1,
            (None, Decision::Wait) if queue_full => self.paths.stall_queue += 1,
            (None, Decision::Wait) => {
                // The dump area had no contiguous room: a stored region
                // must exist to free.
                assert_eq!(h.kind, Kind::Eager);
                assert!(self.model.unexpected_len() + self.streaming > 0);
                self.paths.stall_store += 1;
            }
            (want, got) => panic!("{:?} header: model {want:?}, machine {got:?}", h.kind),
        }
        let go = !matches!(decided, Decision::Wait);
        if go {
            self.counts[src] += 1;
        }
        go
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
            Place::Window { .. } => panic!("no connection here carries puts"),
        }
    }

    /// Ends connection `src`'s current message.
    fn end(&mut self, src: usize) {
        let k = key(src, self.rank as usize, self.counts[src].wrapping_sub(1));
        let (h, _) = self.conns[src].current().unwrap();
        let Some(ended) = self.conns[src].finish(&mut self.rx) else {
            assert!(
                !h.kind.carries_payload(),
                "{:?} ended with no decision",
                h.kind
            );
            return;
        };
        match ended {
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
                let owed = self.owed() + 1;
                assert_eq!(self.rx.outstanding(), owed);
                self.rx.copied(region);
                self.stored_eager.remove(&k);
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
        let got = self.rx.post(sel, handle);
        let takes_request = self
            .model
            .probe(sel)
            .is_some_and(|m| !self.stored_eager.contains_key(&m.loc));
        if self.awaiting.len() >= WAITING && takes_request {
            // No entry is free to wait for the request's data.
            assert_eq!(got, Err(QueueFull));
            self.buffers.remove(&handle);
            self.paths.post_waiting_full += 1;
            return;
        }
        match (got, self.model.post(sel, handle)) {
            (Ok(OnPost::FromStore { msg, info, region }), PostOut::Matched(k)) => {
                assert_eq!(self.stored_keys.remove(&msg.to_raw()), Some(k));
                self.buffers.get_mut(&handle).unwrap().key = Some(k);
                self.copy_out(handle, region, info.len);
                assert_eq!(self.rx.release(msg).map(|i| i.len), Ok(info.len));
                assert!(self.model.release(k).is_some());
                self.stored_eager.remove(&k).expect("an eager message");
                self.complete(handle, info.envelope, info.len);
                self.paths.from_store += 1;
            }
            (Ok(OnPost::Clear(clear)), PostOut::Matched(k)) => {
                self.stored_keys.retain(|_, v| *v != k);
                assert!(self.model.release(k).is_some());
                self.buffers.get_mut(&handle).unwrap().key = Some(k);
                self.send_cts(handle, clear);
                self.paths.rts_late_post += 1;
            }
            (Ok(OnPost::Queued(id)), PostOut::Queued) => self.posted.push((id, handle)),
            (Err(QueueFull), PostOut::Full) => {
                self.buffers.remove(&handle);
            }
            (got, want) => panic!("post {sel:?}: machine {got:?}, model {want:?}"),
        }
        self.send_credit();
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
        if self.awaiting.contains(&handle) {
            self.paths.cancel_after_clear += 1;
        }
        assert_eq!(self.rx.cancel(id), want);
        if want.is_ok() {
            self.buffers.remove(&handle);
        }
        self.check_lengths();
    }

    /// Receives the model says will complete: posted, being filled, or
    /// waiting for rendezvous data.
    fn owed(&self) -> u64 {
        self.model.posted_len() as u64 + self.filling + self.awaiting.len() as u64
    }

    fn check_lengths(&self) {
        assert_eq!(self.rx.posted_len(), self.model.posted_len());
        assert_eq!(self.rx.unexpected_len(), self.model.unexpected_len());
        assert_eq!(self.rx.awaiting_data() as usize, self.awaiting.len());
        assert!(self.rx.store().used() <= self.dump.len() as u64);
        assert!(self.rx.store().records_used() <= self.conns.len() * WINDOW.msgs as usize);
        assert_eq!(self.rx.outstanding(), self.owed());
        self.check_credit();
    }
}

struct World {
    nodes: Vec<Node>,
    /// pipes[src][dst]: bytes sent by src, not yet read by dst, on the
    /// messages connection.
    pipes: Vec<Vec<Vec<u8>>>,
    encoders: Vec<Vec<Encoder>>,
    /// The same for the control connection.
    cpipes: Vec<Vec<Vec<u8>>>,
    cencoders: Vec<Vec<Encoder>>,
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
            cpipes: vec![vec![Vec::new(); ranks]; ranks],
            cencoders: vec![vec![Encoder::new(); ranks]; ranks],
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
        let k = key(src, dst, self.sent_count[src][dst]);
        self.sent_count[src][dst] += 1;
        let len = payload.len() as u64;
        let node = &mut self.nodes[src];
        let header = if len <= THRESHOLD && node.allowance[dst].spend(len) {
            let h = self.encoders[src][dst].encode(Kind::Eager, env, len);
            self.pipes[src][dst].extend_from_slice(&h);
            self.pipes[src][dst].extend_from_slice(&payload);
            None
        } else {
            let offer = node.next_offer;
            node.next_offer += 1;
            node.offers.insert(offer, (dst, k));
            Some(self.encoders[src][dst].encode_ref(Kind::Rts, env, len, offer))
        };
        if let Some(h) = header {
            self.pipes[src][dst].extend_from_slice(&h);
        }
        self.sent.insert(k, (env, payload));
    }

    /// Writes the frames every endpoint queued.
    fn flush(&mut self) {
        for src in 0..self.nodes.len() {
            for (dst, frame) in std::mem::take(&mut self.nodes[src].out) {
                let me = src as u32;
                let enc = &mut self.cencoders[src][dst];
                let pipe = &mut self.cpipes[src][dst];
                match frame {
                    Frame::Credit(c) => {
                        pipe.extend(enc.encode_ref(
                            Kind::Credit,
                            Envelope {
                                source: me,
                                ..Envelope::default()
                            },
                            c.bytes,
                            c.msgs,
                        ));
                    }
                    Frame::Cts { token, want, offer } => {
                        let env = Header::token_envelope(me, token);
                        pipe.extend(enc.encode_ref(Kind::Cts, env, want, offer));
                    }
                    Frame::Data {
                        token,
                        want,
                        offer,
                        key,
                    } => {
                        let env = Header::token_envelope(me, token);
                        pipe.extend(enc.encode_ref(Kind::Data, env, want, offer));
                        pipe.extend_from_slice(&self.sent[&key].1[..want as usize]);
                    }
                }
            }
        }
    }

    fn deliver(&mut self, src: usize, dst: usize, control: bool, budget: usize, piece: usize) {
        let pipes = if control {
            &mut self.cpipes
        } else {
            &mut self.pipes
        };
        let pipe = std::mem::take(&mut pipes[src][dst]);
        let used = self.nodes[dst].read(src, control, &pipe, budget, piece);
        let rest = pipe[used..].to_vec();
        if control {
            self.cpipes[src][dst] = rest;
        } else {
            self.pipes[src][dst] = rest;
        }
        self.flush();
    }

    fn post(&mut self, node: usize, sel: Selector, capacity: usize) {
        let handle = self.next_handle;
        self.next_handle += 1;
        self.nodes[node].post(sel, handle, capacity);
        self.flush();
    }

    /// Delivers everything, posting catch-all receives for what is left
    /// unexpected, until no bytes and no unexpected messages remain.
    fn drain(&mut self) {
        let ranks = self.nodes.len();
        for _round in 0..10_000 {
            for (src, dst) in (0..ranks).flat_map(|s| (0..ranks).map(move |d| (s, d))) {
                self.deliver(src, dst, false, usize::MAX, usize::MAX);
                self.deliver(src, dst, true, usize::MAX, usize::MAX);
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
            let idle = self
                .pipes
                .iter()
                .chain(&self.cpipes)
                .flatten()
                .all(Vec::is_empty)
                && self.nodes.iter().all(|n| {
                    n.rx.unexpected_len() == 0
                        && n.conns.iter().all(Inbound::at_boundary)
                        && n.awaiting.is_empty()
                        && n.offers.is_empty()
                });
            if idle {
                return;
            }
        }
        for (i, n) in self.nodes.iter().enumerate() {
            eprintln!(
                "node {i}: posted {} unexpected {} awaiting {:?} offers {:?} stalled {:?} pipes {:?}",
                n.rx.posted_len(),
                n.rx.unexpected_len(),
                n.awaiting,
                n.offers,
                n.conns.iter().map(Inbound::is_stalled).collect::<Vec<_>>(),
                self.pipes[i].iter().map(Vec::len).collect::<Vec<_>>()
            );
        }
        panic!("the simulation did not drain");
    }

    fn check_everything_received_once(&mut self) {
        let mut received = 0;
        for node in &mut self.nodes {
            assert!(node
                .conns
                .iter()
                .chain(&node.controls)
                .all(Inbound::at_boundary));
            assert_eq!(node.rx.store().records_used(), 0, "dump area leaked");
            // What the last releases returned, as the next read would take.
            for (src, conn) in node.conns.iter_mut().enumerate() {
                conn.give_back_all(node.rx.store_mut().take_returned(src as u32));
            }
            assert!(node.conns.iter().all(|c| c.held_eager_bytes() == 0));
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

/// The simulation's random choices, from a seeded xorshift generator
/// (`rand_xorshift`), so that a failing simulation seed replays exactly.
#[derive(Clone, Debug)]
struct Rng(XorShiftRng);

impl Rng {
    fn new(seed: u64) -> Self {
        Self(XorShiftRng::seed_from_u64(seed))
    }

    fn next(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in `0..n` (`n > 0`).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
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
    w.flush();
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
                w.deliver(src, dst, rng.chance(40), budget, piece);
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
    assert!(paths.stall_waiting > 0, "{paths:?}");
    assert!(paths.truncated > 0, "{paths:?}");
    assert!(paths.rts_matched > 0, "{paths:?}");
    assert!(paths.rts_late_post > 0, "{paths:?}");
    assert!(paths.cancel_after_clear > 0, "{paths:?}");
    assert!(paths.credit_frames > 0, "{paths:?}");
    assert!(paths.post_waiting_full > 0, "{paths:?}");
}

#[test]
fn two_endpoints() {
    run_seeds(0..300, 2, 400);
}

#[test]
fn three_endpoints_with_any_source() {
    run_seeds(1000..1200, 3, 600);
}
