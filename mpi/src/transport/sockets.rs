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
//! # Unexpected-queue overflow
//!
//! When the matching engine's unexpected queue is full, later messages of
//! that connection wait, whole and in order, in a per-connection overflow
//! list and enter the engine as soon as it has room, so nothing is dropped
//! and per-sender order holds.

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
    /// The socket to read from.
    pub(crate) fd: BorrowedFd<'a>,
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
#[derive(Clone, Copy)]
enum Target {
    Matcher(Sink),
    Overflow,
}

struct Conn {
    stream: TcpStream,
    /// The end to write to when it is not `stream` (a connection to self).
    writer: Option<TcpStream>,
    rx: Reassembler,
    tx: Encoder,
    target: Option<Target>,
    overflow: VecDeque<(Envelope, Vec<u8>, bool)>,
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
    sends: Sends,
    ready: Vec<Ready>,
    /// The other ends of the idle connections, kept open.
    _idle_far_ends: Vec<TcpStream>,
}

impl Conn {
    fn wstream(&mut self) -> &mut TcpStream {
        self.writer.as_mut().unwrap_or(&mut self.stream)
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
        if let Some(Target::Matcher(sink)) = c.target.take() {
            self.matcher.fail(sink, rank as u32, &reason);
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
            if c.dead.is_some() {
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
                    let target = if c.overflow.is_empty() {
                        self.matcher
                            .arrive(h.envelope, h.len)
                            .ok()
                            .map(Target::Matcher)
                    } else {
                        None
                    };
                    c.target = Some(target.unwrap_or_else(|| {
                        c.overflow.push_back((h.envelope, Vec::new(), false));
                        Target::Overflow
                    }));
                }
                Some(Event::Payload { data, .. }) => match c.target {
                    Some(Target::Matcher(sink)) => self.matcher.payload(sink, data),
                    Some(Target::Overflow) => {
                        if let Some(m) = c.overflow.back_mut() {
                            m.1.extend_from_slice(data);
                        }
                    }
                    None => {}
                },
                Some(Event::End(_)) => match c.target.take() {
                    Some(Target::Matcher(sink)) => self.matcher.end(sink),
                    Some(Target::Overflow) => {
                        if let Some(m) = c.overflow.back_mut() {
                            m.2 = true;
                        }
                    }
                    None => {}
                },
            }
        }
    }

    /// Moves overflowed messages into the engine while it has room.
    fn drain_overflow(&mut self) {
        for c in self.conns.iter_mut().flatten() {
            while let Some((env, data, true)) = c.overflow.front() {
                if self.matcher.deliver(*env, data).is_err() {
                    return;
                }
                c.overflow.pop_front();
            }
        }
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
            let (read, write) = (c.readable, c.writable && !c.out.is_empty());
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
        let live = self
            .conns
            .iter()
            .flatten()
            .filter(|c| c.dead.is_none())
            .count();
        if live == 0 && timeout.is_none() {
            return Err(Error::Deadlock(
                "waiting for a message, but no live peer is left that could send it".into(),
            ));
        }
        let mut ready = std::mem::take(&mut self.ready);
        ready.clear();
        let mut interest = Vec::new();
        if P::NEEDS_INTEREST {
            for (rank, c) in self.conns.iter().enumerate() {
                if let Some(c) = c.as_ref().filter(|c| c.dead.is_none()) {
                    let w = !c.out.is_empty() || also_write == Some(rank);
                    interest.push(Interest {
                        rank,
                        fd: c.stream.as_fd(),
                        write: w.then(|| c.writer.as_ref().unwrap_or(&c.stream).as_fd()),
                    });
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
        self.drain_overflow();
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
