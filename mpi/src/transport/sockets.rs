//! The machinery both TCP transports share: one nonblocking connection per
//! peer, the o2g-core stream reassembler on each, send queues, and the
//! progress loop. What differs between `sockets-select` and
//! `sockets-epoll` is only how the loop learns which sockets are ready:
//! the [`Poller`] behind it.
//!
//! # Progress
//!
//! Each connection carries two hints, "may be readable" and "may be
//! writable". A hint is set by the poller and cleared only when a read or
//! write returns `WouldBlock`, so the same loop is right for level-triggered
//! `select` and for edge-triggered epoll: a socket is always drained until
//! the kernel says it is empty. Reading goes through one scratch buffer;
//! the reassembler turns the bytes into header/payload/end events that the
//! [`Matcher`] places.
//!
//! # Sending
//!
//! Framing and the queue of unsent bytes are `outbox.rs`'s. A blocking
//! send writes straight from the caller's buffer, polling (and so
//! receiving) whenever the socket is full. Sends to one peer leave in
//! order.
//!
//! # What a peer may say
//!
//! Each header's sender must be the rank the connection belongs to (the
//! rank its hello named, checked with the job secret in `bootstrap.rs`).
//! Anything else is a protocol error that fails that connection, like a
//! malformed header: the peer is marked dead with a reason naming both
//! ranks, so receives from it fail, and nothing it sent from then on is
//! delivered.
//!
//! # Unexpected-queue overflow and back-pressure
//!
//! When the matching engine's unexpected queue is full (16384 messages),
//! later messages of that connection wait, in order, in a per-connection
//! overflow list and enter the engine as soon as it has room, so nothing
//! is dropped and per-sender order holds. A message at the head of the
//! list still enters at once if a posted receive matches it; the rest
//! wait for the program to receive one of the unexpected messages.
//!
//! The list is bounded ([`OVERFLOW_MESSAGES`], [`OVERFLOW_BYTES`]): while
//! it is over either bound the transport stops reading that connection,
//! so TCP holds the sender back, and it reads on as soon as the list
//! drains. This cannot make a correct program wait where an unbounded
//! list would not: nothing behind the head of the list can match any
//! receive until the head has entered the engine, whether it was read or
//! still sits in the socket; the message being read when the bound is hit
//! may enter the engine half-received and continue there, so a large one
//! never blocks the list it is part of. A wait that nothing can end any
//! more (every live connection held back, nothing to send) fails with
//! [`Error::Deadlock`] instead of hanging.

use std::collections::VecDeque;
use std::io::{self, ErrorKind, Read};
use std::net::{Shutdown, TcpStream};
use std::os::fd::{AsFd, BorrowedFd};
use std::time::Duration;

use o2g_core::proto::envelope::Envelope;
use o2g_core::proto::stream::{Event, Reassembler};
use o2g_core::proto::wire::{Encoder, Kind, Limits};

use super::bootstrap::Link;
use super::matcher::{matcher_receive_methods, Matcher, Sink};
use super::outbox::{start_isend, Out, Sending, Sends};
use super::{SendToken, Transport};
use crate::config::Config;
use crate::error::{Error, Result};

/// Size of the read scratch buffer.
const SCRATCH: usize = 256 << 10;

/// Messages one connection's overflow list may hold before the transport
/// stops reading that connection. Checked before each read, so one read
/// ([`SCRATCH`] bytes, at most `SCRATCH / 32` headers) may go past it.
const OVERFLOW_MESSAGES: usize = 256;

/// Payload bytes one connection's overflow list may hold before the
/// transport stops reading that connection (also up to one read more).
const OVERFLOW_BYTES: usize = 1 << 20;

/// One connection's readiness, as a poller reports it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ready {
    pub(crate) rank: usize,
    pub(crate) readable: bool,
    pub(crate) writable: bool,
}

/// One connection a `select`-style poller must watch this round.
pub(crate) struct Interest<'a> {
    pub(crate) rank: usize,
    /// The socket to read from, if reading is wanted this round (not while
    /// the connection is held back).
    pub(crate) read: Option<BorrowedFd<'a>>,
    /// The socket to write to, if writing is wanted this round.
    pub(crate) write: Option<BorrowedFd<'a>>,
}

/// How a socket transport waits for readiness.
pub(crate) trait Poller {
    /// Whether [`Poller::wait`] needs the interest list rebuilt every
    /// round (`select`) or keeps its own registrations (epoll).
    const NEEDS_INTEREST: bool;

    /// Starts watching world rank `rank`'s connection: `s` for reading,
    /// and for writing unless a separate `writer` is given.
    fn register(
        &mut self,
        rank: usize,
        s: &TcpStream,
        writer: Option<&TcpStream>,
    ) -> io::Result<()>;

    /// Stops watching it (the peer is gone).
    fn deregister(&mut self, rank: usize, s: &TcpStream, writer: Option<&TcpStream>);

    /// Waits at most `timeout` (forever for `None`) and appends the
    /// connections that may be ready to `ready`.
    fn wait(
        &mut self,
        interest: &[Interest<'_>],
        timeout: Option<Duration>,
        ready: &mut Vec<Ready>,
    ) -> io::Result<()>;
}

/// Where the payload of the message being read goes.
enum Target {
    Matcher(Sink),
    Overflow,
}

/// A message waiting in a connection's overflow list.
struct Held {
    envelope: Envelope,
    /// The length its header announced.
    len: u64,
    /// What arrived of its payload so far.
    data: Vec<u8>,
    /// Whether all of it arrived (only the last entry may be incomplete:
    /// it is the message being read).
    complete: bool,
}

struct Conn {
    stream: TcpStream,
    /// The end to write to when it is not `stream` (a connection to self).
    writer: Option<TcpStream>,
    rx: Reassembler,
    tx: Encoder,
    target: Option<Target>,
    overflow: VecDeque<Held>,
    /// Payload bytes held in `overflow`.
    overflow_bytes: usize,
    out: VecDeque<Out>,
    readable: bool,
    writable: bool,
    dead: Option<String>,
}

/// A TCP transport over poller `P`; see the module documentation.
pub(crate) struct Sockets<P: Poller> {
    me: u32,
    conns: Vec<Option<Conn>>,
    matcher: Matcher,
    poller: P,
    scratch: Vec<u8>,
    /// Whether some overflow list may be non-empty.
    overflowing: bool,
    sends: Sends,
    ready: Vec<Ready>,
    /// The other ends of the idle connections, kept open.
    _idle_far_ends: Vec<TcpStream>,
}

impl Conn {
    fn wstream(&mut self) -> &mut TcpStream {
        self.writer.as_mut().unwrap_or(&mut self.stream)
    }

    /// Whether the overflow list is over its bound, so that the socket is
    /// not read until the list drains.
    fn held_back(&self) -> bool {
        self.overflow.len() >= OVERFLOW_MESSAGES || self.overflow_bytes >= OVERFLOW_BYTES
    }
}

impl<P: Poller> Sockets<P> {
    /// Takes over the connections `bootstrap` made.
    pub(crate) fn new(
        me: u32,
        size: u32,
        streams: Vec<Option<Link>>,
        mut poller: P,
        config: &Config,
        idle_far_ends: Vec<TcpStream>,
    ) -> Result<Self> {
        // Entries past `size` are idle connections (O2G_IDLE_CONNECTIONS).
        debug_assert!(streams.len() >= size as usize);
        let limits = Limits {
            max_payload: config.max_message,
        };
        let mut conns = Vec::with_capacity(streams.len());
        for (rank, s) in streams.into_iter().enumerate() {
            conns.push(match s {
                None => None,
                Some((stream, writer)) => {
                    poller
                        .register(rank, &stream, writer.as_ref())
                        .map_err(|e| Error::io("registering a connection", e))?;
                    Some(Conn {
                        stream,
                        writer,
                        rx: Reassembler::new(limits),
                        tx: Encoder::new(),
                        target: None,
                        overflow: VecDeque::new(),
                        overflow_bytes: 0,
                        out: VecDeque::new(),
                        readable: true,
                        writable: true,
                        dead: None,
                    })
                }
            });
        }
        Ok(Self {
            me,
            conns,
            matcher: Matcher::new(),
            poller,
            scratch: vec![0; SCRATCH],
            overflowing: false,
            sends: Sends::new(),
            ready: Vec::new(),
            _idle_far_ends: idle_far_ends,
        })
    }

    fn conn(&mut self, dest: u32) -> Result<&mut Conn> {
        let size = self.conns.len() as i32;
        if let Some(Some(c)) = self.conns.get(dest as usize) {
            if let Some(reason) = &c.dead {
                return Err(Error::PeerGone {
                    rank: dest,
                    reason: reason.clone(),
                });
            }
        }
        match self.conns.get_mut(dest as usize) {
            Some(Some(c)) => Ok(c),
            _ => Err(Error::InvalidRank {
                rank: dest as i32,
                size,
            }),
        }
    }

    /// Whether a message to `dest` stays inside this process.
    fn is_local(&self, dest: u32) -> bool {
        dest == self.me && matches!(self.conns.get(dest as usize), Some(None))
    }

    /// Marks a peer dead and fails everything that waited on it.
    fn kill(&mut self, rank: usize, reason: String) {
        let Some(Some(c)) = self.conns.get_mut(rank) else {
            return;
        };
        if c.dead.is_some() {
            return;
        }
        self.poller.deregister(rank, &c.stream, c.writer.as_ref());
        let _ = c.stream.shutdown(Shutdown::Both);
        if let Some(w) = &c.writer {
            let _ = w.shutdown(Shutdown::Both);
        }
        match c.target.take() {
            Some(Target::Matcher(sink)) => self.matcher.fail(sink, rank as u32, &reason),
            // The message being read will never be whole; the complete
            // ones before it are still delivered.
            Some(Target::Overflow) => {
                if let Some(h) = c.overflow.pop_back() {
                    c.overflow_bytes -= h.data.len();
                }
            }
            None => {}
        }
        for out in c.out.drain(..) {
            self.sends.fail(out.token, &reason);
        }
        c.dead = Some(reason);
    }

    /// Writes queued messages until the socket is full.
    fn flush_conn(&mut self, rank: usize) {
        loop {
            let Some(Some(c)) = self.conns.get_mut(rank) else {
                return;
            };
            let Some(o) = c.out.front_mut() else {
                return;
            };
            let w = c.writer.as_mut().unwrap_or(&mut c.stream);
            match o.write(w) {
                Ok(false) => {
                    c.writable = false;
                    return;
                }
                Ok(true) => {
                    let token = o.token;
                    c.out.pop_front();
                    self.sends.finish(token);
                }
                Err(e) => return self.kill(rank, format!("write failed: {e}")),
            }
        }
    }

    /// Reads until the socket is empty, placing every message.
    fn read_conn(&mut self, rank: usize) {
        loop {
            let Some(Some(c)) = self.conns.get_mut(rank) else {
                return;
            };
            if c.dead.is_some() || c.held_back() {
                return;
            }
            let n = match c.stream.read(&mut self.scratch) {
                Ok(0) => {
                    let why = if c.rx.at_boundary() {
                        "closed the connection"
                    } else {
                        "closed the connection in the middle of a message"
                    };
                    return self.kill(rank, why.into());
                }
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    c.readable = false;
                    return;
                }
                Err(e) => return self.kill(rank, format!("read failed: {e}")),
            };
            if let Err(reason) = self.feed(rank, n) {
                return self.kill(rank, reason);
            }
        }
    }

    /// Runs `scratch[..n]` of connection `rank` through its reassembler.
    fn feed(&mut self, rank: usize, n: usize) -> Result<(), String> {
        let Some(Some(c)) = self.conns.get_mut(rank) else {
            return Ok(());
        };
        let mut input = &self.scratch[..n];
        loop {
            let step =
                c.rx.feed(input)
                    .map_err(|e| format!("protocol error: {e}"))?;
            input = &input[step.consumed..];
            match step.event {
                None => return Ok(()),
                Some(Event::Header(h)) => {
                    // A peer speaks only for itself: a message claiming
                    // another sender could match receives meant for that
                    // one.
                    if h.envelope.source as usize != rank {
                        return Err(format!(
                            "protocol error: the connection from world rank {rank} carried a \
                             message whose header names world rank {} as its sender \
                             (this is rank {})",
                            h.envelope.source, self.me
                        ));
                    }
                    // Rendezvous and credit are not spoken here yet: a
                    // header of another kind has no meaning for us.
                    if h.kind != Kind::Eager {
                        return Err(format!(
                            "protocol error: world rank {rank} sent a {:?} message, which \
                             this transport does not take (eager messages only)",
                            h.kind
                        ));
                    }
                    let target = if c.overflow.is_empty() {
                        self.matcher
                            .arrive(h.envelope, h.len)
                            .ok()
                            .map(Target::Matcher)
                    } else {
                        None
                    };
                    c.target = Some(target.unwrap_or_else(|| {
                        self.overflowing = true;
                        c.overflow.push_back(Held {
                            envelope: h.envelope,
                            len: h.len,
                            data: Vec::new(),
                            complete: false,
                        });
                        Target::Overflow
                    }));
                }
                Some(Event::Payload { data, .. }) => match &c.target {
                    Some(Target::Matcher(sink)) => self.matcher.payload(sink, data),
                    Some(Target::Overflow) => {
                        if let Some(m) = c.overflow.back_mut() {
                            m.data.extend_from_slice(data);
                            c.overflow_bytes += data.len();
                        }
                    }
                    None => {}
                },
                Some(Event::End(_)) => match c.target.take() {
                    Some(Target::Matcher(sink)) => self.matcher.end(sink),
                    Some(Target::Overflow) => {
                        if let Some(m) = c.overflow.back_mut() {
                            m.complete = true;
                        }
                    }
                    None => {}
                },
            }
        }
    }

    /// Moves overflowed messages into the engine while it has room (or a
    /// posted receive takes them); the message still being read goes in
    /// with what arrived of it and continues there.
    fn drain_overflow(&mut self) {
        if !self.overflowing {
            return;
        }
        let mut left = false;
        for c in self.conns.iter_mut().flatten() {
            while let Some(h) = c.overflow.front() {
                if h.complete {
                    if self.matcher.deliver(h.envelope, &h.data).is_err() {
                        break;
                    }
                } else {
                    // Only the last entry is incomplete, and it is being
                    // read (`kill` drops it otherwise).
                    let Ok(sink) = self.matcher.arrive(h.envelope, h.len) else {
                        break;
                    };
                    self.matcher.payload(&sink, &h.data);
                    c.target = Some(Target::Matcher(sink));
                }
                if let Some(h) = c.overflow.pop_front() {
                    c.overflow_bytes -= h.data.len();
                }
            }
            left |= !c.overflow.is_empty();
        }
        self.overflowing = left;
    }

    /// Does all work the hints say is possible; whether any was.
    fn pump(&mut self) -> bool {
        let mut worked = false;
        for rank in 0..self.conns.len() {
            let Some(Some(c)) = self.conns.get(rank) else {
                continue;
            };
            if c.dead.is_some() {
                continue;
            }
            let read = c.readable && !c.held_back();
            let write = c.writable && !c.out.is_empty();
            if read {
                self.read_conn(rank);
            }
            if write {
                self.flush_conn(rank);
            }
            worked |= read || write;
        }
        worked
    }

    /// Waits for readiness (with write interest on `also_write` even if
    /// its queue is empty), then does the work.
    fn poll(&mut self, timeout: Option<Duration>, also_write: Option<usize>) -> Result<()> {
        self.drain_overflow();
        let wants = |rank: usize, c: &Conn| {
            let w = !c.out.is_empty() || also_write == Some(rank);
            (!c.held_back(), w)
        };
        let (mut alive, mut active, mut ready_now) = (0, 0, false);
        for (rank, c) in self.conns.iter().enumerate() {
            if let Some(c) = c.as_ref().filter(|c| c.dead.is_none()) {
                alive += 1;
                let (r, w) = wants(rank, c);
                active += usize::from(r || w);
                // A connection let go by the drain above may have bytes
                // waiting that no new readiness event will announce.
                ready_now |= r && c.readable;
            }
        }
        if timeout.is_none() && alive == 0 {
            return Err(Error::Deadlock(
                "waiting for a message, but no live peer is left that could send it".into(),
            ));
        }
        if timeout.is_none() && active == 0 {
            return Err(Error::Deadlock(format!(
                "waiting for a message, but every live connection is held back: the \
                 unexpected-message queue is full ({} messages) and no posted receive \
                 matches the next message of any peer, so nothing more can arrive until \
                 the program receives messages that are already here",
                super::matcher::QUEUE_CAPACITY
            )));
        }
        let timeout = if ready_now {
            Some(Duration::ZERO)
        } else {
            timeout
        };
        let mut ready = std::mem::take(&mut self.ready);
        ready.clear();
        let mut interest = Vec::new();
        if P::NEEDS_INTEREST {
            for (rank, c) in self.conns.iter().enumerate() {
                if let Some(c) = c.as_ref().filter(|c| c.dead.is_none()) {
                    let (r, w) = wants(rank, c);
                    if r || w {
                        interest.push(Interest {
                            rank,
                            read: r.then(|| c.stream.as_fd()),
                            write: w.then(|| c.writer.as_ref().unwrap_or(&c.stream).as_fd()),
                        });
                    }
                }
            }
        }
        let res = self.poller.wait(&interest, timeout, &mut ready);
        drop(interest);
        res.map_err(|e| Error::io("waiting for sockets", e))?;
        for r in &ready {
            if let Some(Some(c)) = self.conns.get_mut(r.rank) {
                c.readable |= r.readable;
                c.writable |= r.writable;
            }
        }
        self.ready = ready;
        self.pump();
        Ok(())
    }
}

impl<P: Poller> Transport for Sockets<P> {
    fn send(&mut self, dest: u32, env: Envelope, data: &[u8]) -> Result<()> {
        if self.is_local(dest) {
            return self
                .matcher
                .deliver(env, data)
                .map_err(|_| Error::ResourceExhausted("unexpected-message queue"));
        }
        // Earlier isends to `dest` leave first.
        while !self.conn(dest)?.out.is_empty() {
            self.progress(None)?;
        }
        let c = self.conn(dest)?;
        let mut sending = Sending::new(c.tx.encode(Kind::Eager, env, data.len() as u64));
        loop {
            let c = self.conn(dest)?;
            match sending.write(c.wstream(), data) {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(e) => {
                    self.kill(dest as usize, format!("write failed: {e}"));
                    return self.conn(dest).map(drop);
                }
            }
            let c = self.conn(dest)?;
            c.writable = false;
            self.poll(None, Some(dest as usize))?;
        }
    }

    fn isend(&mut self, dest: u32, env: Envelope, data: &[u8]) -> Result<SendToken> {
        if self.is_local(dest) {
            self.send(dest, env, data)?;
            return Ok(SendToken(0));
        }
        self.conn(dest)?;
        let Some(Some(c)) = self.conns.get_mut(dest as usize) else {
            unreachable!("conn() just found rank {dest}'s connection");
        };
        let header = c.tx.encode(Kind::Eager, env, data.len() as u64);
        let w = c.writer.as_mut().unwrap_or(&mut c.stream);
        match start_isend(w, &mut c.out, &mut self.sends, header, data) {
            Ok(token) => {
                if token.0 != 0 {
                    c.writable = false;
                }
                Ok(token)
            }
            Err(e) => {
                self.kill(dest as usize, format!("write failed: {e}"));
                self.conn(dest).map(|_| SendToken(0))
            }
        }
    }

    fn test_send(&mut self, token: SendToken) -> Result<bool> {
        self.sends.test(token)
    }

    fn release_send(&mut self, token: SendToken) {
        self.sends.release(token);
    }

    matcher_receive_methods!();

    fn progress(&mut self, timeout: Option<Duration>) -> Result<()> {
        self.drain_overflow();
        let worked = self.pump();
        let timeout = if worked {
            Some(Duration::ZERO)
        } else {
            timeout
        };
        self.poll(timeout, None)?;
        self.drain_overflow();
        Ok(())
    }

    fn peer_failure(&self, rank: u32) -> Option<String> {
        match self.conns.get(rank as usize) {
            Some(Some(c)) => c.dead.clone(),
            _ => None,
        }
    }

    fn has_queued_sends(&self) -> bool {
        self.conns
            .iter()
            .flatten()
            .any(|c| c.dead.is_none() && !c.out.is_empty())
    }
}

#[cfg(test)]
mod tests {
    //! One transport, world rank 0, driven against raw sockets that play
    //! its peers, so a test decides every byte a peer sends.

    use std::io::Write;
    use std::net::TcpListener;
    use std::time::Instant;

    use o2g_core::proto::envelope::{Selector, SourceSel, TagSel};

    use super::super::bootstrap;
    use super::super::epoll::Epoll;
    use super::super::matcher::{FIRST_RESERVE, QUEUE_CAPACITY};
    use super::super::poll::Poll;
    use super::super::select::Select;
    use super::super::RecvOutcome;
    use super::*;

    /// Every wait in these tests ends after this long.
    const PATIENCE: Duration = Duration::from_secs(20);

    fn config(vars: &[(&str, &str)]) -> Config {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Config::from_lookup(|name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
            .expect("test configuration")
    }

    /// A loopback connection, both ends tuned (nonblocking): the
    /// transport's end and the peer's.
    fn pair(config: &Config) -> (TcpStream, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        let peer = TcpStream::connect(l.local_addr().expect("addr")).expect("connect");
        let (near, _) = l.accept().expect("accept");
        bootstrap::tune(&near, config).expect("tune");
        bootstrap::tune(&peer, config).expect("tune");
        (near, peer)
    }

    /// World rank 0 of `size` waiting with `poller`, and the far ends of
    /// its connections to ranks 1.. (index 0 is rank 1).
    fn rank0<P: Poller>(size: u32, poller: P, config: &Config) -> (Sockets<P>, Vec<TcpStream>) {
        let mut links = vec![None];
        let mut peers = Vec::new();
        for _ in 1..size {
            let (near, far) = pair(config);
            links.push(Some((near, None)));
            peers.push(far);
        }
        let t = Sockets::new(0, size, links, poller, config, Vec::new()).expect("transport");
        (t, peers)
    }

    fn env(source: u32, tag: u32) -> Envelope {
        Envelope {
            source,
            tag,
            context: 0,
        }
    }

    fn from(source: u32, tag: u32) -> Selector {
        Selector {
            source: SourceSel::Rank(source),
            tag: TagSel::Tag(tag),
            context: 0,
        }
    }

    /// A whole message on the wire.
    fn message(enc: &mut Encoder, e: Envelope, payload: &[u8]) -> Vec<u8> {
        let mut m = enc.encode(Kind::Eager, e, payload.len() as u64).to_vec();
        m.extend_from_slice(payload);
        m
    }

    /// Writes what a nonblocking socket takes of `bytes[*at..]`.
    fn push(s: &mut TcpStream, bytes: &[u8], at: &mut usize) {
        while *at < bytes.len() {
            match s.write(&bytes[*at..]) {
                Ok(n) => *at += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => panic!("peer write: {e}"),
            }
        }
    }

    /// Progresses `t` until `done`, failing the test after [`PATIENCE`].
    fn progress_until<P: Poller>(
        t: &mut Sockets<P>,
        what: &str,
        mut done: impl FnMut(&mut Sockets<P>) -> bool,
    ) {
        let end = Instant::now() + PATIENCE;
        while !done(t) {
            assert!(Instant::now() < end, "gave up waiting for {what}");
            t.progress(Some(Duration::from_millis(10)))
                .expect("progress");
        }
    }

    /// Messages held in the per-connection overflow lists.
    fn overflowed<P: Poller>(t: &Sockets<P>) -> usize {
        t.conns.iter().flatten().map(|c| c.overflow.len()).sum()
    }

    /// A peer floods rank 0 with far more unexpected messages than its
    /// engine holds: what rank 0 keeps stays bounded and the peer is held
    /// back by TCP; then rank 0 receives them all, in order.
    fn flood_is_bounded<P: Poller>(poller: P) {
        const EXTRA: usize = 40_000;
        let total = QUEUE_CAPACITY + EXTRA;
        // Buffers well above loopback's MSS (64 KiB), so that TCP keeps
        // moving, yet small beside the flood.
        let cfg = config(&[("O2G_SNDBUF", "131072"), ("O2G_RCVBUF", "131072")]);
        let (mut t, mut peers) = rank0(2, poller, &cfg);
        let mut enc = Encoder::new();
        let mut flood = Vec::new();
        for i in 0..total {
            flood.extend(message(
                &mut enc,
                env(1, i as u32),
                &(i as u64).to_le_bytes(),
            ));
        }
        // Write while rank 0 makes progress, until the peer is held back
        // (nothing more goes out for half a second) or everything went out.
        let mut at = 0;
        let (mut last, mut since) = (usize::MAX, Instant::now());
        let end = Instant::now() + PATIENCE;
        while at < flood.len() && since.elapsed() < Duration::from_millis(500) {
            assert!(Instant::now() < end, "the flood neither ended nor stalled");
            push(&mut peers[0], &flood, &mut at);
            t.progress(Some(Duration::from_millis(2)))
                .expect("progress");
            if at != last {
                (last, since) = (at, Instant::now());
            }
        }
        let held = overflowed(&t);
        let bound = OVERFLOW_MESSAGES + SCRATCH / o2g_core::proto::wire::HEADER_LEN;
        assert_eq!(t.matcher.unexpected_count(), QUEUE_CAPACITY);
        assert!(held <= bound, "{held} messages overflowed (bound {bound})");
        assert!(at < flood.len(), "the peer was never held back");
        // Receiving lets the rest in; nothing is lost or reordered.
        for i in 0..total {
            let r = t.post_recv(from(1, i as u32), 8).expect("post");
            let mut got = None;
            progress_until(&mut t, &format!("message {i}"), |t| {
                push(&mut peers[0], &flood, &mut at);
                got = t.test_recv(r);
                got.is_some()
            });
            match got {
                Some(RecvOutcome::Done { data, .. }) => {
                    assert_eq!(data, (i as u64).to_le_bytes(), "message {i}")
                }
                other => panic!("message {i}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_flood_of_unexpected_messages_is_bounded_epoll() {
        flood_is_bounded(Epoll::new().expect("epoll"));
    }

    #[test]
    fn a_flood_of_unexpected_messages_is_bounded_select() {
        flood_is_bounded(Select::new());
    }

    #[test]
    fn a_flood_of_unexpected_messages_is_bounded_poll() {
        flood_is_bounded(Poll::new());
    }

    /// Writes `bytes` from `peer` while `t` progresses, until `done`.
    fn feed_until<P: Poller>(
        t: &mut Sockets<P>,
        peer: &mut TcpStream,
        bytes: &[u8],
        at: &mut usize,
        what: &str,
        mut done: impl FnMut(&Sockets<P>) -> bool,
    ) {
        progress_until(t, what, |t| {
            push(peer, bytes, at);
            done(t)
        });
    }

    /// Rank 1's messages with tags `0..QUEUE_CAPACITY` and 8-byte
    /// payloads, then `more`: the first fill rank 0's unexpected queue.
    fn filler(more: &[(u32, Vec<u8>)]) -> Vec<u8> {
        let mut enc = Encoder::new();
        let mut bytes = Vec::new();
        for i in 0..QUEUE_CAPACITY {
            bytes.extend(message(&mut enc, env(1, i as u32), &[1; 8]));
        }
        for (tag, payload) in more {
            bytes.extend(message(&mut enc, env(1, *tag), payload));
        }
        bytes
    }

    /// The message being read when the overflow bound is reached is larger
    /// than the bound: once the program receives, it enters the engine
    /// half-received and arrives whole, and the connection reads on.
    #[test]
    fn a_message_larger_than_the_bound_is_not_stuck_behind_it() {
        let big: Vec<u8> = (0..4 * OVERFLOW_BYTES).map(|i| i as u8).collect();
        let tail = [7u8; 3];
        let bytes = filler(&[(1 << 20, big.clone()), (1 << 21, tail.to_vec())]);
        let cfg = config(&[("O2G_SNDBUF", "131072"), ("O2G_RCVBUF", "131072")]);
        let (mut t, mut peers) = rank0(2, Poll::new(), &cfg);
        let mut at = 0;
        feed_until(&mut t, &mut peers[0], &bytes, &mut at, "the bound", |t| {
            t.conns[1].as_ref().is_some_and(Conn::held_back)
        });
        assert!(at < bytes.len(), "the peer was not held back");
        // One receive frees a slot: the big message moves into the engine.
        let r = t.post_recv(from(1, 0), 8).expect("post");
        assert!(t.test_recv(r).is_some());
        let r = t.post_recv(from(1, 1 << 20), big.len()).expect("post");
        let mut got = None;
        progress_until(&mut t, "the big message", |t| {
            push(&mut peers[0], &bytes, &mut at);
            got = t.test_recv(r);
            got.is_some()
        });
        assert!(
            matches!(&got, Some(RecvOutcome::Done { data, .. }) if *data == big),
            "the big message arrived wrong"
        );
        let r = t.post_recv(from(1, 1 << 21), 3).expect("post");
        let mut got = None;
        progress_until(&mut t, "the last message", |t| {
            push(&mut peers[0], &bytes, &mut at);
            got = t.test_recv(r);
            got.is_some()
        });
        assert!(matches!(&got, Some(RecvOutcome::Done { data, .. }) if data[..] == tail));
    }

    /// A receive that only a message behind a full unexpected queue could
    /// satisfy, with every connection held back, fails with a deadlock
    /// error instead of hanging; receiving the queued messages ends it.
    #[test]
    fn a_wait_nothing_can_end_fails_instead_of_hanging() {
        let extra: Vec<(u32, Vec<u8>)> = (0..2 * OVERFLOW_MESSAGES)
            .map(|i| ((1 << 20) + i as u32, vec![2; 8]))
            .collect();
        let bytes = filler(&extra);
        let cfg = config(&[]);
        let (mut t, mut peers) = rank0(2, Epoll::new().expect("epoll"), &cfg);
        let mut at = 0;
        feed_until(&mut t, &mut peers[0], &bytes, &mut at, "the bound", |t| {
            t.conns[1].as_ref().is_some_and(Conn::held_back)
        });
        let last = (1 << 20) + 2 * OVERFLOW_MESSAGES as u32 - 1;
        let r = t.post_recv(from(1, last), 8).expect("post");
        match t.progress(None) {
            Err(Error::Deadlock(why)) => assert!(why.contains("unexpected-message queue is full")),
            other => panic!("progress returned {other:?}"),
        }
        for i in 0..QUEUE_CAPACITY {
            let q = t.post_recv(from(1, i as u32), 8).expect("post");
            assert!(t.test_recv(q).is_some(), "message {i} was not here");
        }
        progress_until(&mut t, "the last message", |t| {
            push(&mut peers[0], &bytes, &mut at);
            matches!(t.test_recv(r), Some(RecvOutcome::Done { .. }))
        });
    }

    /// Rank 1's connection carries a header that names rank 2 as the
    /// sender: it is not delivered as rank 2's message; rank 1's connection
    /// fails with an error naming both ranks (so receives from rank 1 fail);
    /// what rank 1 sent before stays, and rank 2 is not disturbed.
    #[test]
    fn a_header_naming_another_sender_fails_that_connection() {
        let (mut t, mut peers) = rank0(3, Epoll::new().expect("epoll"), &config(&[]));
        let from2 = t.post_recv(from(2, 9), 8).expect("post");
        let mut enc = Encoder::new();
        peers[0]
            .write_all(&message(&mut enc, env(1, 8), b"fine"))
            .expect("write");
        peers[0]
            .write_all(&message(&mut enc, env(2, 9), b"forged"))
            .expect("write");
        let mut forged = None;
        progress_until(&mut t, "the forged message's fate", |t| {
            forged = t.test_recv(from2);
            forged.is_some() || t.peer_failure(1).is_some()
        });
        assert!(forged.is_none(), "delivered as rank 2's: {forged:?}");
        let why = t.peer_failure(1).expect("rank 1 failed");
        assert!(
            why.contains("rank 1") && why.contains("rank 2"),
            "the error names both ranks: {why}"
        );
        assert!(t.iprobe(from(1, 8)).is_some(), "rank 1's earlier message");
        peers[1]
            .write_all(&message(&mut Encoder::new(), env(2, 9), b"real"))
            .expect("write");
        let mut got = None;
        progress_until(&mut t, "rank 2's message", |t| {
            got = t.test_recv(from2);
            got.is_some()
        });
        assert!(
            matches!(&got, Some(RecvOutcome::Done { data, .. }) if data == b"real"),
            "{got:?}"
        );
        assert!(t.peer_failure(2).is_none());
    }

    /// A peer announces a 4 GiB message and sends nothing more: rank 0
    /// sees the envelope but reserves almost nothing, unexpected or into a
    /// posted 4 GiB receive.
    #[test]
    fn a_4_gib_announcement_reserves_little() {
        let cfg = config(&[]);
        let (mut t, mut peers) = rank0(3, Epoll::new().expect("epoll"), &cfg);
        let mut enc = Encoder::new();
        let header = enc.encode(Kind::Eager, env(1, 1), 4 << 30);
        peers[0].write_all(&header).expect("write");
        progress_until(&mut t, "the announcement", |t| {
            t.matcher.reserved_bytes() >= FIRST_RESERVE
        });
        // Stored messages become visible only once whole.
        assert!(t.iprobe(from(1, 1)).is_none());
        let r = t.post_recv(from(2, 2), 4 << 30).expect("post");
        let mut enc = Encoder::new();
        let header = enc.encode(Kind::Eager, env(2, 2), 4 << 30);
        peers[1].write_all(&header).expect("write");
        peers[1].write_all(&[5; 1000]).expect("write");
        progress_until(&mut t, "the second announcement", |t| {
            t.matcher.reserved_bytes() >= 2 * FIRST_RESERVE
        });
        let reserved = t.matcher.reserved_bytes();
        assert!(reserved <= 1 << 20, "{reserved} bytes reserved");
        assert!(t.test_recv(r).is_none());
    }
}
