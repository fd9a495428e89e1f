//! The machinery both TCP transports share: one nonblocking connection per
//! peer, read through o2g-core's receive state machine, send queues, and
//! the progress loop. What differs between `sockets-select`,
//! `sockets-poll` and `sockets-epoll` is only how the loop learns which
//! sockets are ready: the [`Poller`] behind it.
//!
//! # Progress
//!
//! Each connection carries two hints, "may be readable" and "may be
//! writable". A hint is set by the poller and cleared only when the kernel
//! said the socket is empty or full: a read or write returned `WouldBlock`,
//! or a read returned less than it asked for (unless the poller reported a
//! hang-up, which no later edge would repeat). So the same loop is right
//! for level-triggered `select` and for edge-triggered epoll: a socket is
//! always drained until the kernel says it is empty, and the writable hint
//! is never cleared while the socket has room, which epoll would not report
//! again. Reading goes through one scratch buffer,
//! except a large payload bound for a receive in place, which is read
//! straight into it (after a clear-to-send, the next header is read alone
//! so that all of the data's payload can be); each connection's
//! [`Inbound`] (the reader the kernel module and the simulation run too)
//! says what every byte is, and the [`Matcher`] keeps the payloads where
//! the machine puts them.
//!
//! # The protocol (`docs/protocol.md`)
//!
//! A message up to `O2G_RNDV_THRESHOLD` bytes goes eagerly (header and
//! payload) while the sender has eager credit at the receiver; a longer
//! one, or any one when the credit is spent, goes as a request to send.
//! The receiver answers a request once a receive matches it with a
//! clear-to-send, and the payload follows as rendezvous data, straight
//! into that receive; so a large message that arrives before its receive
//! costs the receiver 32 bytes, not its size. The receiver gives eager
//! credit back as the program takes stored messages. Both directions of a
//! pair share one connection here, since this process writes and reads
//! every byte of it; answers are written between messages, never inside
//! one.
//!
//! # Sending
//!
//! Framing and the queue of unsent bytes are `outbox.rs`'s. A blocking
//! eager send writes straight from the caller's buffer, polling (and so
//! receiving) whenever the socket is full. A blocking rendezvous send
//! waits up to [`RNDV_WAIT`] for its clear-to-send and then writes the
//! data from the caller's buffer; if the receiver has not matched by then
//! it copies the data and returns, so two ranks that send to each other
//! before receiving do not wait for each other. Sends to one peer leave in
//! order. Rendezvous data of `O2G_ZEROCOPY_MIN` bytes or more to a peer on
//! another host goes with `MSG_ZEROCOPY` (`zerocopy.rs`): TCP reads it from
//! the sender's pages, so its send completes, and a blocking one returns,
//! only once the kernel let go of them; releasing an `isend` whose lent
//! memory the kernel still reads waits for that too.
//!
//! # What a peer may say
//!
//! Each header's sender must be the rank the connection belongs to (the
//! rank its hello named, checked with the job secret in `bootstrap.rs`);
//! eager messages must stay within the credit given; rendezvous data and
//! clear-to-send messages must name a receive or an offer that waits for
//! them. Anything else is a protocol error that fails that connection,
//! like a malformed header: the peer is marked dead with a reason naming
//! both ranks, so receives from it fail, and nothing it sent from then on
//! is delivered.
//!
//! # Back-pressure
//!
//! A header for which the machine has no room (16384 unexpected messages
//! stored, or as many receives waiting for rendezvous data) stalls its
//! connection: the transport stops reading it, so TCP holds the sender
//! back, and decides again when the program has received something. With
//! eager credit a correct program stalls only when it leaves that many
//! requests to send unreceived. A wait that nothing can end any more
//! (every live connection stalled, nothing to send) fails with
//! [`Error::Deadlock`] instead of hanging.

use std::io::{self, ErrorKind, Read};
use std::net::{Shutdown, TcpStream};
use std::os::fd::{AsFd, BorrowedFd};
use std::time::{Duration, Instant};

use foldhash::{HashMap, HashMapExt};

use o2g_core::proto::credit::{Allowance, Credit, Window};
use o2g_core::proto::envelope::Envelope;
use o2g_core::proto::receive::{Clear, Control, Decision, Failure, Inbound, Next};
use o2g_core::proto::wire::{Header, Kind, Limits, HEADER_LEN};

use super::bootstrap::{on_this_host, socket_error_in_words, Link};
use super::matcher::Matcher;
use super::outbox::{Out, Outbox, Payload, Sending, Sends};
use super::spin;
use super::zerocopy::ZeroCopy;
use super::{pool, ReceivesThroughMatcher, SendHalf, SendToken, Transport};
use crate::config::Config;
use crate::error::{Error, Result};

/// The least payload left for which a receive in place is read from the
/// socket straight into its memory: below it one read into the scratch
/// buffer, which may take the next headers too, costs fewer system calls.
const DIRECT_READ_MIN: u64 = 16 << 10;

/// Size of the read scratch buffer.
const SCRATCH: usize = 256 << 10;

/// Longest a blocking rendezvous send waits for its clear-to-send before
/// it copies the data and returns (see the module documentation).
const RNDV_WAIT: Duration = Duration::from_millis(20);

/// Longest a wait for zero-copy completions sleeps before it looks at the
/// error queue again.
const ZERO_COPY_POLL: Duration = Duration::from_millis(5);

/// One connection's readiness, as a poller reports it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ready {
    pub(crate) rank: usize,
    pub(crate) readable: bool,
    pub(crate) writable: bool,
    /// The peer closed its side or the socket has an error (an
    /// edge-triggered poller's hang-up): what is left to read ends in that,
    /// and no further edge will say so.
    pub(crate) ending: bool,
}

/// One connection a `select`-style poller must watch this round.
pub(crate) struct Interest<'a> {
    pub(crate) rank: usize,
    /// The socket to read from, if reading is wanted this round (not while
    /// the connection is stalled).
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

/// How a message leaves.
enum Route {
    /// Header and payload now (its credit is spent).
    Eager,
    /// A request to send now, the data once cleared.
    Rendezvous,
    /// A short message without eager credit: a request to send now, the
    /// data (from a copy) once cleared, so that it never waits at the
    /// sender for credit that only the receiver's progress returns.
    Request,
}

/// A rendezvous send waiting for its clear-to-send.
enum Offer {
    /// An `isend`'s data (a copy, or memory its caller lent), and its
    /// token.
    Owned { data: Payload, token: u64 },
    /// A blocking send whose caller's buffer of `len` bytes is still
    /// borrowed; the clear-to-send's receive token and length once it came.
    Borrowed {
        len: u64,
        cleared: Option<(u64, u64)>,
    },
}

struct Conn {
    stream: TcpStream,
    /// The end to write to when it is not `stream` (a connection to self).
    writer: Option<TcpStream>,
    inbound: Inbound,
    /// Bytes read from the socket that the machine has not taken yet: the
    /// connection stalled in the middle of them.
    unread: Vec<u8>,
    /// Eager credit this end has at the peer.
    allowance: Allowance,
    /// Rendezvous sends to the peer that wait for its clear-to-send.
    offers: HashMap<u32, Offer>,
    /// Clear-to-sends this end sent whose data has not begun to arrive:
    /// while there are some, a read at a message boundary takes one header
    /// alone, so a rendezvous payload bound for a receive in place is read
    /// into place from its first byte rather than partly through the
    /// scratch buffer (up to 256 KiB copied once more).
    data_due: u32,
    next_offer: u32,
    outbox: Outbox,
    /// A blocking send is writing a message straight from its caller's
    /// buffer: nothing else may be written until it is out.
    inline: bool,
    readable: bool,
    writable: bool,
    /// The poller said the socket is ending (see [`Ready::ending`]):
    /// reads go on until one returns nothing or the end.
    ending: bool,
    dead: Option<String>,
}

/// A TCP transport over poller `P`; see the module documentation.
pub(crate) struct Sockets<P: Poller> {
    me: u32,
    conns: Vec<Option<Conn>>,
    matcher: Matcher,
    poller: P,
    scratch: Vec<u8>,
    /// Whether some connection may be stalled.
    stalling: bool,
    /// Longest message sent eagerly.
    threshold: u64,
    /// Least rendezvous data sent without a copy, where the connection
    /// can (0: never).
    zerocopy_min: u64,
    sends: Sends,
    ready: Vec<Ready>,
    /// Whether idle waits ask the poller without waiting for a while
    /// before they sleep in it, and for how long ([`spin::Spinner`]).
    spin: spin::Spinner,
    /// The other ends of the idle connections, kept open.
    _idle_far_ends: Vec<TcpStream>,
    /// Payload bytes read straight into receives in place (for tests).
    #[cfg(test)]
    read_in_place_bytes: u64,
}

impl Conn {
    fn wstream(&mut self) -> &mut TcpStream {
        self.writer.as_mut().unwrap_or(&mut self.stream)
    }

    /// Whether the connection waits for room, so that the socket is not
    /// read until the program receives something.
    fn held_back(&self) -> bool {
        self.inbound.is_stalled()
    }

    /// Queues a message whose bytes this end owns; `token` (0: none)
    /// completes when it is out.
    fn queue(&mut self, header: [u8; HEADER_LEN], data: Payload, token: u64) {
        self.outbox.push(Out::whole(header, data, token));
    }

    /// Queues a credit message returning `credit`, from world rank `me`.
    fn queue_credit(&mut self, me: u32, credit: Credit) {
        let env = Envelope {
            source: me,
            ..Envelope::default()
        };
        let header = self
            .outbox
            .tx
            .encode_ref(Kind::Credit, env, credit.bytes, credit.msgs);
        self.queue(header, Payload::Owned(Vec::new()), 0);
    }
}

/// What a connection's failure means, for the error a program sees.
fn describe(why: Failure, rank: usize, me: u32) -> String {
    match why {
        Failure::Protocol(e) => format!("protocol error: {e}"),
        Failure::WrongSource(named) => format!(
            "protocol error: the connection from world rank {rank} carried a message whose \
             header names world rank {named} as its sender (this is rank {me})"
        ),
        Failure::Urgent => "protocol error: urgent data".into(),
        Failure::Truncated => "closed the connection in the middle of a message".into(),
        Failure::Closed => "closed the connection".into(),
        Failure::OverCredit(o) => format!(
            "protocol error: world rank {rank} sent an eager message of {} bytes with {} \
             bytes and {} messages of eager credit left at rank {me}",
            o.len, o.bytes_left, o.msgs_left
        ),
        Failure::Unsupported(kind) => {
            format!("protocol error: world rank {rank} sent a {kind:?} message, which has no meaning here")
        }
        Failure::UnknownToken(t) => format!(
            "protocol error: world rank {rank} sent rendezvous data for receive token {t:#x}, \
             which no receive of rank {me} waits under"
        ),
        Failure::DataTooLong { len, size } => format!(
            "protocol error: world rank {rank} sent {len} bytes of rendezvous data for a \
             message of {size} bytes"
        ),
        Failure::WantTooLong { want, size } => format!(
            "protocol error: world rank {rank} asked for {want} bytes of a message of {size} \
             bytes"
        ),
        Failure::UnknownOffer(o) => format!(
            "protocol error: world rank {rank} sent a clear-to-send for offer {o}, which rank \
             {me} has not made to it (or already answered)"
        ),
        Failure::Unanswered(tag) => format!(
            "protocol error: world rank {rank} answered a window request (tag {tag}) that rank \
             {me} has no receive posted for"
        ),
        Failure::NoWindow(context) => format!(
            "protocol error: world rank {rank} sent a request for window {context}, which rank \
             {me} does not have"
        ),
        Failure::Overlapping => format!(
            "protocol error: world rank {rank} sent a window request before the answer to its \
             previous one"
        ),
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
        let window: Window = config.eager_credit;
        let mut conns = Vec::with_capacity(streams.len());
        for (rank, s) in streams.into_iter().enumerate() {
            conns.push(match s {
                None => None,
                Some((stream, writer)) => {
                    poller
                        .register(rank, &stream, writer.as_ref())
                        .map_err(|e| Error::io("registering a connection", e))?;
                    let mut outbox = Outbox::new();
                    // On this host the kernel would copy anyway.
                    let remote = writer.is_none() && !on_this_host(&stream);
                    if config.zerocopy_min > 0 && remote {
                        outbox.zero_copy = ZeroCopy::enable(&stream);
                    }
                    let mut c = Conn {
                        stream,
                        writer,
                        inbound: Inbound::combined(rank as u32, limits, window),
                        unread: Vec::new(),
                        allowance: Allowance::new(),
                        offers: HashMap::new(),
                        data_due: 0,
                        next_offer: 0,
                        outbox,
                        inline: false,
                        readable: true,
                        writable: true,
                        ending: false,
                        dead: None,
                    };
                    // The first thing each end says: the whole window.
                    if let Some(credit) = c.inbound.credit_due() {
                        c.queue_credit(me, credit);
                    }
                    Some(c)
                }
            });
        }
        let spin = spin::decide(
            config.spin,
            (conns.iter().enumerate().take(size as usize))
                .filter(|&(rank, _)| rank as u32 != me)
                .flat_map(|(_, c)| c.as_ref().map(|c| &c.stream)),
        );
        Ok(Self {
            me,
            conns,
            matcher: Matcher::new(),
            poller,
            scratch: vec![0; SCRATCH],
            stalling: false,
            threshold: config.rndv_threshold,
            zerocopy_min: config.zerocopy_min,
            sends: Sends::new(),
            ready: Vec::new(),
            spin,
            _idle_far_ends: idle_far_ends,
            #[cfg(test)]
            read_in_place_bytes: 0,
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

    /// Marks a peer dead for `why` (`reason` in words) and fails
    /// everything that waited on it.
    fn kill(&mut self, rank: usize, why: Failure, reason: String) {
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
        // The message being read will never be whole; complete stored
        // ones stay receivable.
        self.matcher.fail_conn(&mut c.inbound, why, &reason);
        c.unread = Vec::new();
        c.outbox.fail_all(&mut self.sends, &reason);
        for (_, offer) in c.offers.drain() {
            if let Offer::Owned { token, .. } = offer {
                self.sends.fail(token, &reason);
            }
        }
        c.dead = Some(reason);
    }

    /// Marks a peer dead because a `read` or `write` (`op`) on its
    /// connection failed with `e`.
    fn kill_on_io(&mut self, rank: usize, op: &str, e: &io::Error) {
        let reason = format!("{op} failed: {}", socket_error_in_words(e));
        self.kill(rank, Failure::Closed, reason);
    }

    /// Writes queued messages until the socket is full.
    fn flush_conn(&mut self, rank: usize) {
        let Some(Some(c)) = self.conns.get_mut(rank) else {
            return;
        };
        if c.inline || c.dead.is_some() {
            return;
        }
        let w = c.writer.as_mut().unwrap_or(&mut c.stream);
        match c.outbox.flush(w, &mut self.sends) {
            Ok(flushed) => c.writable &= flushed.drained,
            Err(e) => self.kill_on_io(rank, "write", &e),
        }
    }

    /// Reads the rest of a payload that goes to a receive in place
    /// straight from the socket into the receive's memory, skipping the
    /// scratch buffer and its copy. `None`: not such a payload (or too
    /// little of one to be worth a system call of its own); else what the
    /// read gave, and how many bytes it asked for.
    fn read_in_place(&mut self, rank: usize) -> Option<(std::io::Result<usize>, usize)> {
        let Some(Some(c)) = self.conns.get_mut(rank) else {
            return None;
        };
        let (header, off) = c.inbound.current()?;
        let left = header.payload_len().checked_sub(off)?;
        if left < DIRECT_READ_MIN || !c.unread.is_empty() {
            return None;
        }
        let dest = c.inbound.dest()?;
        let (ptr, room) = self.matcher.next_place(dest)?;
        let want = room.min(usize::try_from(left).unwrap_or(usize::MAX));
        // SAFETY: `next_place` points into memory lent by
        // `post_recv_in_place`'s caller, valid for writes of `room` bytes
        // and touched by nobody else until the receive completes or is
        // released, neither of which can happen during this read.
        let buf = unsafe { std::slice::from_raw_parts_mut(ptr, want) };
        let got = c.stream.read(buf);
        if let Ok(n @ 1..) = got {
            // The reader counts the bytes as payload (every header before
            // them was taken, so it expects just that); they are in place.
            if !matches!(c.inbound.next(n), Next::Payload { len, .. } if len == n) {
                return Some((
                    Err(std::io::Error::other(format!(
                        "internal error: {n} bytes read in place were not {left} bytes of \
                         payload"
                    ))),
                    want,
                ));
            }
            if let Some(dest) = c.inbound.dest() {
                self.matcher.wrote(dest, n);
            }
            #[cfg(test)]
            {
                self.read_in_place_bytes += n as u64;
            }
        }
        Some((got, want))
    }

    /// Reads until the socket is empty or the connection stalls, placing
    /// every message. A read that returns less than it asked for found
    /// the socket empty: the hint is cleared then, without a read that
    /// fails with `WouldBlock` (one system call fewer per message), unless
    /// the poller said the socket is ending. (An edge-triggered poller
    /// tells of bytes that arrive later with a new edge; a level-triggered
    /// one asks again every round.)
    fn read_conn(&mut self, rank: usize) {
        let mut scratch = std::mem::take(&mut self.scratch);
        loop {
            match self.conns.get(rank) {
                Some(Some(c)) if c.dead.is_none() && !c.held_back() => {}
                _ => break,
            }
            let (read, asked, direct) = match self.read_in_place(rank) {
                Some((got, asked)) => (got, asked, true),
                None => match self.conns.get_mut(rank) {
                    Some(Some(c)) => {
                        // Rendezvous data may come next: its header alone,
                        // so that its payload can go into place.
                        let header_only =
                            c.data_due > 0 && c.unread.is_empty() && c.inbound.at_boundary();
                        let room = if header_only { HEADER_LEN } else { SCRATCH };
                        (c.stream.read(&mut scratch[..room]), room, false)
                    }
                    _ => break,
                },
            };
            let Some(Some(c)) = self.conns.get_mut(rank) else {
                break;
            };
            let n = match read {
                Ok(0) => {
                    let why = if c.inbound.at_boundary() {
                        Failure::Closed
                    } else {
                        Failure::Truncated
                    };
                    self.kill(rank, why, describe(why, rank, self.me));
                    break;
                }
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    // Drained without an end or an error: what the poller
                    // reported was not one (zero-copy completions in the
                    // error queue also raise `EPOLLERR`).
                    c.readable = false;
                    c.ending = false;
                    break;
                }
                Err(e) => {
                    self.kill_on_io(rank, "read", &e);
                    break;
                }
            };
            if direct {
                // The bytes are in place; their message may have ended.
                self.take_input(rank, &[]);
            } else {
                self.take_input(rank, &scratch[..n]);
            }
            if n < asked {
                match self.conns.get_mut(rank) {
                    Some(Some(c)) if !c.ending => {
                        c.readable = false;
                        break;
                    }
                    _ => {}
                }
            }
        }
        self.scratch = scratch;
        self.settle_credit(rank);
    }

    /// Runs `input` from connection `rank` through its reader; keeps what
    /// a stall leaves, fails the connection on a protocol error.
    fn take_input(&mut self, rank: usize, input: &[u8]) {
        match self.run(rank, input) {
            Ok(used) if used < input.len() => {
                if let Some(Some(c)) = self.conns.get_mut(rank) {
                    c.unread.extend_from_slice(&input[used..]);
                    self.stalling = true;
                }
            }
            Ok(_) => {}
            Err(why) => self.kill(rank, why, describe(why, rank, self.me)),
        }
    }

    /// Feeds connection `rank`'s reader `input` until it is used up or the
    /// connection stalls; the bytes used.
    fn run(&mut self, rank: usize, input: &[u8]) -> std::result::Result<usize, Failure> {
        let mut at = 0;
        loop {
            let Some(Some(c)) = self.conns.get_mut(rank) else {
                return Ok(at);
            };
            match c.inbound.next(input.len() - at) {
                Next::Header { max } => {
                    at += c.inbound.feed_header(&input[at..at + max])?;
                }
                Next::Payload { len, .. } => {
                    let total = c.inbound.current().map_or(0, |(h, _)| h.len);
                    if let Some(dest) = c.inbound.dest() {
                        self.matcher.append(dest, total, &input[at..at + len]);
                    }
                    at += len;
                }
                Next::Decide => {
                    if !self.decide(rank)? {
                        return Ok(at);
                    }
                }
                Next::End => {
                    if let Some(end) = c.inbound.finish(self.matcher.machine()) {
                        self.matcher.ended(end);
                    }
                }
                Next::Control(Control::Cts { token, want, offer }) => {
                    self.on_cts(rank, token, want, offer)?;
                }
                Next::Control(Control::Credit(credit)) => c.allowance.add(credit),
                Next::Stalled | Next::NeedInput => return Ok(at),
                Next::Failed => return Err(c.inbound.failure().unwrap_or(Failure::Closed)),
            }
        }
    }

    /// Asks the machine about connection `rank`'s pending header and does
    /// what it says; whether reading goes on (`false`: stalled).
    fn decide(&mut self, rank: usize) -> std::result::Result<bool, Failure> {
        let Some(Some(c)) = self.conns.get_mut(rank) else {
            return Ok(false);
        };
        match c.inbound.decide(self.matcher.machine())? {
            Decision::Go => {
                if let Some((h, _)) = c.inbound.current() {
                    if h.kind == Kind::Data {
                        c.data_due = c.data_due.saturating_sub(1);
                    }
                    if let Some(dest) = c.inbound.dest() {
                        self.matcher.placed(dest, h.envelope, h.len);
                    }
                }
            }
            Decision::Wait => {
                self.stalling = true;
                return Ok(false);
            }
            Decision::Clear(clear) => self.send_cts(clear),
            Decision::Stored { .. } => {}
        }
        Ok(true)
    }

    /// Lets stalled connections go on where the machine now has room.
    fn resume_stalled(&mut self) {
        if !self.stalling {
            return;
        }
        let mut left = false;
        for rank in 0..self.conns.len() {
            let Some(Some(c)) = self.conns.get(rank) else {
                continue;
            };
            if c.dead.is_some() || !c.held_back() {
                continue;
            }
            match self.decide(rank) {
                Ok(true) => {
                    let Some(Some(c)) = self.conns.get_mut(rank) else {
                        continue;
                    };
                    let unread = std::mem::take(&mut c.unread);
                    self.take_input(rank, &unread);
                    self.settle_credit(rank);
                }
                Ok(false) => {}
                Err(why) => self.kill(rank, why, describe(why, rank, self.me)),
            }
            left |= self.conns[rank]
                .as_ref()
                .is_some_and(|c| c.dead.is_none() && c.held_back());
        }
        self.stalling = left;
    }

    /// Queues a credit message to `rank` if enough credit is due to it.
    fn settle_credit(&mut self, rank: usize) {
        let me = self.me;
        if let Some(Some(c)) = self.conns.get_mut(rank) {
            if c.dead.is_none() {
                if let Some(credit) = c.inbound.credit_due() {
                    c.queue_credit(me, credit);
                }
            }
        }
    }

    /// Sends what receives owe: clear-to-send messages for requests that
    /// posts took, and credit for stored messages the program received.
    fn settle_owed(&mut self) {
        if !self.matcher.owes() {
            return;
        }
        for clear in self.matcher.take_clears() {
            self.send_cts(clear);
        }
        for (rank, r) in self.matcher.take_returned() {
            if let Some(Some(c)) = self.conns.get_mut(rank as usize) {
                // One message at a time, as the grant counts them; the
                // bytes all at once.
                for i in 0..r.msgs {
                    c.inbound.give_back(if i == 0 { r.bytes } else { 0 });
                }
                self.settle_credit(rank as usize);
            }
        }
    }

    /// Answers a matched request to send: asks its sender for the bytes
    /// the receive can take.
    fn send_cts(&mut self, clear: Clear) {
        let me = self.me;
        let want = clear.size.min(self.matcher.capacity(clear.handle));
        match self.conns.get_mut(clear.rank as usize) {
            Some(Some(c)) if c.dead.is_none() => {
                let env = Header::token_envelope(me, clear.token);
                let header = c.outbox.tx.encode_ref(Kind::Cts, env, want, clear.offer);
                c.queue(header, Payload::Owned(Vec::new()), 0);
                c.data_due = c.data_due.saturating_add(1);
            }
            // The sender died after its request arrived.
            _ => {
                let reason = self
                    .peer_failure(clear.rank)
                    .unwrap_or_else(|| "the sender is gone".into());
                self.matcher.abandon(clear.token, clear.rank, &reason);
            }
        }
    }

    /// A clear-to-send from `rank` for `offer`: its data may go, `want`
    /// bytes of it, for the receive the peer calls `token`.
    fn on_cts(
        &mut self,
        rank: usize,
        token: u64,
        want: u64,
        offer: u32,
    ) -> std::result::Result<(), Failure> {
        let me = self.me;
        let Some(Some(c)) = self.conns.get_mut(rank) else {
            return Ok(());
        };
        match c.offers.remove(&offer) {
            None => Err(Failure::UnknownOffer(offer)),
            Some(Offer::Owned { mut data, token: t }) => {
                if want > data.len() as u64 {
                    let size = data.len() as u64;
                    return Err(Failure::WantTooLong { want, size });
                }
                data.truncate(want as usize);
                let env = Header::token_envelope(me, token);
                let header = c.outbox.tx.encode_ref(Kind::Data, env, want, offer);
                let out = Out::whole(header, data, t);
                let min = self.zerocopy_min;
                if min > 0 && want >= min && c.outbox.zero_copy_pays() {
                    c.outbox.push(out.without_copy());
                } else {
                    c.outbox.push(out);
                }
                Ok(())
            }
            Some(Offer::Borrowed { len, .. }) => {
                if want > len {
                    return Err(Failure::WantTooLong { want, size: len });
                }
                c.offers.insert(
                    offer,
                    Offer::Borrowed {
                        len,
                        cleared: Some((token, want)),
                    },
                );
                Ok(())
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
            if c.outbox.in_kernel() {
                worked |= self.settle_zero_copy(rank);
            }
            let Some(Some(c)) = self.conns.get(rank) else {
                continue;
            };
            let read = c.readable && !c.held_back();
            if read {
                self.read_conn(rank);
            }
            let Some(Some(c)) = self.conns.get(rank) else {
                continue;
            };
            let write = c.writable && !c.outbox.is_empty() && !c.inline;
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
        self.resume_stalled();
        self.settle_owed();
        let wants = |rank: usize, c: &Conn| {
            let w = (!c.outbox.is_empty() && !c.inline) || also_write == Some(rank);
            (!c.held_back(), w)
        };
        let (mut alive, mut active, mut ready_now) = (0, 0, false);
        let mut in_kernel = false;
        for (rank, c) in self.conns.iter().enumerate() {
            if let Some(c) = c.as_ref().filter(|c| c.dead.is_none()) {
                alive += 1;
                let (r, w) = wants(rank, c);
                // A zero-copy completion to come is work to come too.
                in_kernel |= c.outbox.in_kernel();
                active += usize::from(r || w || c.outbox.in_kernel());
                // A connection let go above may have bytes waiting that no
                // new readiness event will announce; one with a queue may
                // have room that nobody tried yet.
                ready_now |= (r && c.readable) || (w && c.writable && !c.outbox.is_empty());
            }
        }
        if timeout.is_none() && alive == 0 {
            return Err(Error::Deadlock(
                "waiting for a message, but no live peer is left that could send it".into(),
            ));
        }
        if timeout.is_none() && active == 0 {
            return Err(Error::Deadlock(format!(
                "waiting for a message, but every live connection is stalled: the \
                 unexpected-message queue is full ({} messages, or as many receives wait for \
                 rendezvous data) and no posted receive matches the next message of any \
                 peer, so nothing more can arrive until the program receives messages that \
                 are already here",
                super::matcher::QUEUE_CAPACITY
            )));
        }
        let timeout = if ready_now {
            Some(Duration::ZERO)
        } else if in_kernel {
            // Its error queue wakes the poller only if the socket is
            // watched for reading: not while its connection is stalled.
            Some(timeout.map_or(ZERO_COPY_POLL, |t| t.min(ZERO_COPY_POLL)))
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
        let mut res = Ok(false);
        let began = Instant::now();
        let spin = if timeout == Some(Duration::ZERO) {
            None
        } else {
            self.spin.begin()
        };
        if let Some(window) = spin {
            let limit = timeout.map_or(window, |t| t.min(window));
            res = spin::spin_until(limit, || {
                self.poller
                    .wait(&interest, Some(Duration::ZERO), &mut ready)
                    .map(|()| !ready.is_empty())
            });
            if let Ok(found) = res {
                self.spin.ended(found, limit);
            }
        }
        if matches!(res, Ok(false)) {
            res = self
                .poller
                .wait(&interest, timeout, &mut ready)
                .map(|()| true);
        }
        if timeout != Some(Duration::ZERO) && ready.iter().any(|r| r.readable || r.ending) {
            self.spin.waited(began.elapsed());
        }
        drop(interest);
        res.map_err(|e| Error::io("waiting for sockets", e))?;
        for r in &ready {
            if let Some(Some(c)) = self.conns.get_mut(r.rank) {
                c.readable |= r.readable;
                c.ending |= r.ending;
                c.writable |= r.writable;
            }
        }
        self.ready = ready;
        self.pump();
        self.settle_owed();
        Ok(())
    }

    /// Writes one message to `dest` straight from `data`, after everything
    /// queued before it, receiving while the socket is full.
    fn write_inline(&mut self, dest: u32, header: [u8; HEADER_LEN], data: &[u8]) -> Result<()> {
        while !self.conn(dest)?.outbox.is_empty() {
            self.progress(None)?;
        }
        self.conn(dest)?.inline = true;
        let written = self.write_inline_now(dest, header, data);
        if let Some(Some(c)) = self.conns.get_mut(dest as usize) {
            c.inline = false;
        }
        written
    }

    /// A blocking send's rendezvous data: as [`Sockets::write_inline`], or
    /// without a copy where it pays (`zerocopy.rs`): then queued as an
    /// `isend` of the caller's memory would be, and waited for until the
    /// kernel has let go of `data`.
    fn write_data_inline(
        &mut self,
        dest: u32,
        header: [u8; HEADER_LEN],
        data: &[u8],
    ) -> Result<()> {
        let min = self.zerocopy_min;
        let zero_copy =
            min > 0 && data.len() as u64 >= min && self.conn(dest)?.outbox.zero_copy_pays();
        if !zero_copy {
            return self.write_inline(dest, header, data);
        }
        let token = self.sends.start();
        // SAFETY: `data` is borrowed until this returns, and it returns
        // once the token completed, or failed with its connection. The
        // kernel pins the pages it reads, so even then nothing is freed
        // under it; a caller that reuses the buffer at once may change
        // bytes still to go out on a connection already reported broken.
        let lent = unsafe { Payload::lent(data.as_ptr(), data.len()) };
        let out = Out::whole(header, lent, token).without_copy();
        self.conn(dest)?.outbox.push(out);
        self.flush_conn(dest as usize);
        loop {
            match self.sends.test(SendToken(token)) {
                Ok(true) => return Ok(()),
                Ok(false) => self.progress(None)?,
                // The connection failed: its own error names the rank.
                Err(e) => return self.conn(dest).and(Err(e)),
            }
        }
    }

    /// Takes connection `rank`'s zero-copy completions, completing the
    /// `isend`s whose bytes the kernel let go of; whether one completed.
    fn settle_zero_copy(&mut self, rank: usize) -> bool {
        let Some(Some(c)) = self.conns.get_mut(rank) else {
            return false;
        };
        if c.dead.is_some() {
            return false;
        }
        match c.outbox.settle(&c.stream, &mut self.sends) {
            Ok(settled) => settled,
            Err(e) => {
                self.kill_on_io(rank, "taking zero-copy completions", &e);
                false
            }
        }
    }

    fn write_inline_now(&mut self, dest: u32, header: [u8; HEADER_LEN], data: &[u8]) -> Result<()> {
        let mut sending = Sending::new(header);
        loop {
            let c = self.conn(dest)?;
            match sending.write(c.wstream(), data) {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(e) => {
                    self.kill_on_io(dest as usize, "write", &e);
                    return self.conn(dest).map(drop);
                }
            }
            let c = self.conn(dest)?;
            c.writable = false;
            self.poll(None, Some(dest as usize))?;
        }
    }

    /// How a message of `len` bytes to `dest` leaves; an eager one's
    /// credit is spent. Without credit a short message goes as a request
    /// to send, as over two connections: a message held back at the
    /// sender until credit comes back would hang a receiver that waits
    /// for it before taking the earlier ones (conformance `late_tag`,
    /// many small messages). The receiver holds requests without payload
    /// room, and one that floods it with requests is bounded there
    /// (`a_flood_of_requests_to_send_is_bounded_*`).
    ///
    /// Credit the receiver sent back may still sit unread in the socket: a
    /// rank that only sends (the root of a stream of broadcasts) reads
    /// nothing otherwise, and every message past its credit would cost a
    /// round trip. So an empty allowance first takes in what has arrived,
    /// without waiting.
    fn route(&mut self, dest: u32, len: u64) -> Result<Route> {
        if len > self.threshold {
            return Ok(Route::Rendezvous);
        }
        if self.conn(dest)?.allowance.spend(len) {
            return Ok(Route::Eager);
        }
        self.progress(Some(Duration::ZERO))?;
        Ok(if self.conn(dest)?.allowance.spend(len) {
            Route::Eager
        } else {
            Route::Request
        })
    }

    /// Sends a request to send for a copy of `data` to `dest`; the send's
    /// token, which ends once the data went out.
    fn request_copy(&mut self, dest: u32, env: Envelope, data: &[u8]) -> Result<SendToken> {
        self.request(dest, env, Payload::Owned(pool::copy_of(data)))
    }

    /// Sends a request to send for `data` to `dest`; the send's token,
    /// which ends once the data went out.
    fn request(&mut self, dest: u32, env: Envelope, data: Payload) -> Result<SendToken> {
        let token = self.sends.start();
        let len = data.len() as u64;
        let owned = Offer::Owned { data, token };
        let (_, rts) = self.offer(dest, env, len, owned)?;
        self.conn(dest)?.queue(rts, Payload::Owned(Vec::new()), 0);
        self.flush_conn(dest as usize);
        Ok(SendToken(token))
    }

    /// Makes a new offer to `dest`; returns its id and the request to
    /// send naming it.
    fn offer(
        &mut self,
        dest: u32,
        env: Envelope,
        len: u64,
        offer: Offer,
    ) -> Result<(u32, [u8; HEADER_LEN])> {
        let c = self.conn(dest)?;
        let id = c.next_offer;
        c.next_offer = c.next_offer.wrapping_add(1);
        c.offers.insert(id, offer);
        Ok((id, c.outbox.tx.encode_ref(Kind::Rts, env, len, id)))
    }

    /// A blocking rendezvous send: the request, then the data from the
    /// caller's buffer once the receiver matched, or a copy if it did not
    /// within [`RNDV_WAIT`].
    fn send_rendezvous(&mut self, dest: u32, env: Envelope, data: &[u8]) -> Result<()> {
        let len = data.len() as u64;
        let (id, rts) = self.offer(dest, env, len, Offer::Borrowed { len, cleared: None })?;
        self.write_inline(dest, rts, &[])?;
        let until = Instant::now() + RNDV_WAIT;
        loop {
            let me = self.me;
            let c = self.conn(dest)?;
            match c.offers.get(&id) {
                Some(Offer::Borrowed {
                    cleared: Some((token, want)),
                    ..
                }) => {
                    let (token, want) = (*token, *want);
                    c.offers.remove(&id);
                    let env = Header::token_envelope(me, token);
                    let header = c.outbox.tx.encode_ref(Kind::Data, env, want, id);
                    return self.write_data_inline(dest, header, &data[..want as usize]);
                }
                Some(Offer::Borrowed { cleared: None, .. }) => {}
                _ => unreachable!("only this send answers offer {id}"),
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                // Not matched yet: the data goes when it is, from a copy.
                let token = self.sends.start();
                self.sends.release(SendToken(token));
                let c = self.conn(dest)?;
                c.offers.insert(
                    id,
                    Offer::Owned {
                        data: Payload::Owned(pool::copy_of(data)),
                        token,
                    },
                );
                return Ok(());
            }
            self.poll(Some(left), None)?;
        }
    }
    /// An `isend`: eagerly, writing what the socket takes and keeping the
    /// rest, or as a request to send. With `lend` the bytes kept are
    /// `data` itself, else a copy.
    ///
    /// # Safety
    ///
    /// With `lend`, `data` stays valid and unchanged until the returned
    /// token completes or [`SendHalf::release_send`] returned for it.
    unsafe fn start_isend(
        &mut self,
        dest: u32,
        env: Envelope,
        data: &[u8],
        lend: bool,
    ) -> Result<SendToken> {
        if self.is_local(dest) {
            self.send(dest, env, data)?;
            return Ok(SendToken(0));
        }
        let len = data.len() as u64;
        if let Route::Rendezvous | Route::Request = self.route(dest, len)? {
            if lend {
                // SAFETY: This function's contract.
                let lent = unsafe { Payload::lent(data.as_ptr(), data.len()) };
                return self.request(dest, env, lent);
            }
            return self.request_copy(dest, env, data);
        }
        let Some(Some(c)) = self.conns.get_mut(dest as usize) else {
            unreachable!("route() just found rank {dest}'s connection");
        };
        let header = c.outbox.tx.encode(Kind::Eager, env, len);
        let w = c.writer.as_mut().unwrap_or(&mut c.stream);
        let started = if lend {
            // SAFETY: This function's contract.
            unsafe { c.outbox.start_lent(w, &mut self.sends, header, data) }
        } else {
            c.outbox.start(w, &mut self.sends, header, data)
        };
        match started {
            Ok(token) => {
                // A kept rest means the outbox found the socket full.
                if token.0 != 0 {
                    c.writable = false;
                }
                Ok(token)
            }
            Err(e) => {
                self.kill_on_io(dest as usize, "write", &e);
                self.conn(dest).map(|_| SendToken(0))
            }
        }
    }
}

impl<P: Poller> Transport for Sockets<P> {
    fn progress(&mut self, timeout: Option<Duration>) -> Result<()> {
        self.resume_stalled();
        self.settle_owed();
        let worked = self.pump();
        let timeout = if worked {
            Some(Duration::ZERO)
        } else {
            timeout
        };
        self.poll(timeout, None)
    }

    fn peer_failure(&self, rank: u32) -> Option<String> {
        match self.conns.get(rank as usize) {
            Some(Some(c)) => c.dead.clone(),
            _ => None,
        }
    }
}

impl<P: Poller> SendHalf for Sockets<P> {
    fn send(&mut self, dest: u32, env: Envelope, data: &[u8]) -> Result<()> {
        if self.is_local(dest) {
            return self.matcher.deliver_local(env, data);
        }
        match self.route(dest, data.len() as u64)? {
            Route::Eager => {}
            Route::Rendezvous => return self.send_rendezvous(dest, env, data),
            Route::Request => {
                let token = self.request_copy(dest, env, data)?;
                self.sends.release(token);
                return Ok(());
            }
        }
        let c = self.conn(dest)?;
        let header = c.outbox.tx.encode(Kind::Eager, env, data.len() as u64);
        self.write_inline(dest, header, data)
    }

    fn isend(&mut self, dest: u32, env: Envelope, data: &[u8]) -> Result<SendToken> {
        // SAFETY: Not lent: every byte kept is copied.
        unsafe { self.start_isend(dest, env, data, false) }
    }

    unsafe fn isend_lent(
        &mut self,
        dest: u32,
        env: Envelope,
        data: *const u8,
        len: usize,
    ) -> Result<Option<SendToken>> {
        let data = if len == 0 {
            &[]
        } else {
            // SAFETY: The trait's contract: valid and unchanged until the
            // token completes or is released.
            unsafe { std::slice::from_raw_parts(data, len) }
        };
        // SAFETY: As above; `release_send` copies what is still lent.
        unsafe { self.start_isend(dest, env, data, true) }.map(Some)
    }

    fn release_send(&mut self, token: SendToken) {
        // The caller may reuse lent memory once this returns: copy what
        // has not gone out yet.
        for c in self.conns.iter_mut().flatten() {
            c.outbox.own(token.0);
            for offer in c.offers.values_mut() {
                if let Offer::Owned { data, token: t } = offer {
                    if *t == token.0 {
                        data.own();
                    }
                }
            }
        }
        // What went without a copy the kernel may still read: wait until it
        // let go (or the connection failed).
        let reads_lent = |t: &Self| {
            (t.conns.iter().flatten())
                .any(|c| c.dead.is_none() && c.outbox.kernel_reads_lent(token.0))
        };
        while reads_lent(self) {
            if self.progress(Some(ZERO_COPY_POLL)).is_err() {
                break;
            }
        }
        self.sends.release(token);
    }

    fn sends(&mut self) -> &mut Sends {
        &mut self.sends
    }

    fn has_queued_sends(&self) -> bool {
        self.conns.iter().flatten().any(|c| {
            c.dead.is_none()
                && !(c.outbox.is_empty() && c.offers.is_empty() && !c.outbox.in_kernel())
        })
    }
}

impl<P: Poller> ReceivesThroughMatcher for Sockets<P> {
    fn matcher(&mut self) -> &mut Matcher {
        &mut self.matcher
    }
}

#[cfg(test)]
mod tests {
    //! One transport, world rank 0, driven against raw sockets that play
    //! its peers, so a test decides every byte a peer sends.

    use std::io::Write;
    use std::net::TcpListener;

    use o2g_core::proto::envelope::{Selector, SourceSel, TagSel};
    use o2g_core::proto::stream::{Event, Reassembler};
    use o2g_core::proto::wire::Encoder;

    use super::super::bootstrap;
    use super::super::epoll::Epoll;
    use super::super::matcher::{FIRST_RESERVE, QUEUE_CAPACITY};
    use super::super::poll::Poll;
    use super::super::select::Select;
    use super::super::ReceiveHalf;
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

    /// A raw peer of rank 0: its socket, its encoder, and a reader of what
    /// rank 0 says to it.
    struct Peer {
        s: TcpStream,
        enc: Encoder,
        rx: Reassembler,
        /// Bytes of `pending` already written.
        at: usize,
        pending: Vec<u8>,
    }

    impl Peer {
        fn new(s: TcpStream) -> Self {
            Self {
                s,
                enc: Encoder::new(),
                rx: Reassembler::new(Limits {
                    max_payload: u64::MAX,
                }),
                at: 0,
                pending: Vec::new(),
            }
        }

        /// Queues bytes to write, in order.
        fn say(&mut self, bytes: &[u8]) {
            self.pending.extend_from_slice(bytes);
        }

        /// Writes what the nonblocking socket takes of what was said.
        fn push(&mut self) {
            while self.at < self.pending.len() {
                match self.s.write(&self.pending[self.at..]) {
                    Ok(n) => self.at += n,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(e) => panic!("peer write: {e}"),
                }
            }
        }

        /// Grants rank 0 credit for `msgs` more messages (1 KiB) and
        /// writes it.
        fn grant(&mut self, msgs: u32) {
            let grant = self.enc.encode_ref(Kind::Credit, env(1, 0), 1 << 10, msgs);
            self.say(&grant);
            self.push();
        }

        /// Whether everything said went out.
        fn all_out(&self) -> bool {
            self.at == self.pending.len()
        }

        /// The headers rank 0 sent that are here now (payloads skipped).
        fn heard(&mut self) -> Vec<Header> {
            let mut got = Vec::new();
            let mut buf = vec![0u8; 64 << 10];
            loop {
                let n = match self.s.read(&mut buf) {
                    Ok(0) => return got,
                    Ok(n) => n,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => return got,
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    Err(e) => panic!("peer read: {e}"),
                };
                let mut input = &buf[..n];
                loop {
                    let step = self.rx.feed(input).expect("rank 0 speaks the protocol");
                    input = &input[step.consumed..];
                    match step.event {
                        Some(Event::Header(h)) => got.push(h),
                        Some(_) => {}
                        None => break,
                    }
                }
            }
        }

        /// Answers every clear-to-send heard with its data: `payload`
        /// of the offer, cut to what was asked. Returns how many.
        fn answer(&mut self, me: u32, payload: impl Fn(u32) -> Vec<u8>) -> usize {
            let mut n = 0;
            for h in self.heard() {
                if h.kind == Kind::Cts {
                    let mut data = payload(h.reference);
                    data.truncate(h.len as usize);
                    let env = Header::token_envelope(me, h.token());
                    let header = self.enc.encode_ref(Kind::Data, env, h.len, h.reference);
                    self.say(&header);
                    self.say(&data);
                    n += 1;
                }
            }
            self.push();
            n
        }
    }

    /// World rank 0 of `size` waiting with `poller`, and its peers, ranks
    /// 1.. (index 0 is rank 1).
    fn rank0<P: Poller>(size: u32, poller: P, config: &Config) -> (Sockets<P>, Vec<Peer>) {
        let mut links = vec![None];
        let mut peers = Vec::new();
        for _ in 1..size {
            let (near, far) = pair(config);
            links.push(Some((near, None)));
            peers.push(Peer::new(far));
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

    /// A whole eager message on the wire.
    fn message(enc: &mut Encoder, e: Envelope, payload: &[u8]) -> Vec<u8> {
        let mut m = enc.encode(Kind::Eager, e, payload.len() as u64).to_vec();
        m.extend_from_slice(payload);
        m
    }

    /// A request to send `len` bytes under `offer`.
    fn rts(enc: &mut Encoder, e: Envelope, len: u64, offer: u32) -> [u8; HEADER_LEN] {
        enc.encode_ref(Kind::Rts, e, len, offer)
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
            t.progress(Some(Duration::from_millis(1)))
                .expect("progress");
        }
    }

    /// Receives from `peer` the message `sel` selects into `cap` bytes,
    /// answering clear-to-send messages with `payload(offer)`.
    fn receive<P: Poller>(
        t: &mut Sockets<P>,
        peer: &mut Peer,
        sel: Selector,
        cap: usize,
        payload: impl Fn(u32) -> Vec<u8>,
    ) -> RecvOutcome {
        let r = t.post_recv(sel, cap).expect("post");
        let mut got = None;
        progress_until(t, &format!("a message for {sel:?}"), |t| {
            peer.push();
            peer.answer(1, &payload);
            got = t.test_recv(r);
            got.is_some()
        });
        got.expect("outcome")
    }

    /// The payload of offer `i` in the floods: its number.
    fn numbered(i: u32) -> Vec<u8> {
        u64::from(i).to_le_bytes().to_vec()
    }

    /// A peer floods rank 0 with far more requests to send than its
    /// machine holds: rank 0 stalls that connection at the machine's
    /// bound and TCP holds the peer back. A receive whose data would come
    /// behind the flood cannot end (the stall holds back the answers on
    /// this one connection): the wait fails with a deadlock error instead
    /// of hanging, and the receives of the messages already here still
    /// take them.
    fn flood_is_bounded<P: Poller>(poller: P) {
        const EXTRA: usize = 20_000;
        let total = QUEUE_CAPACITY + EXTRA;
        // Buffers well above loopback's MSS (64 KiB), so that TCP keeps
        // moving, yet small beside the flood.
        let cfg = config(&[("O2G_SNDBUF", "131072"), ("O2G_RCVBUF", "131072")]);
        let (mut t, mut peers) = rank0(2, poller, &cfg);
        let peer = &mut peers[0];
        for i in 0..total {
            let h = rts(&mut peer.enc, env(1, i as u32), 8, i as u32);
            peer.say(&h);
        }
        // Write while rank 0 makes progress, until the peer is held back
        // (nothing more goes out for half a second) or everything went out.
        let (mut last, mut since) = (usize::MAX, Instant::now());
        let end = Instant::now() + PATIENCE;
        while !peer.all_out() && since.elapsed() < Duration::from_millis(500) {
            assert!(Instant::now() < end, "the flood neither ended nor stalled");
            peer.push();
            t.progress(Some(Duration::from_millis(2)))
                .expect("progress");
            if peer.at != last {
                (last, since) = (peer.at, Instant::now());
            }
        }
        assert_eq!(t.matcher.machine().unexpected_len(), QUEUE_CAPACITY);
        assert!(t.conns[1].as_ref().is_some_and(Conn::held_back));
        assert!(!peer.all_out(), "the peer was never held back");
        assert_eq!(t.matcher.reserved_bytes(), 0);
        let r = t.post_recv(from(1, 0), 8).expect("post");
        let end = Instant::now() + PATIENCE;
        let why = loop {
            assert!(Instant::now() < end, "the wait neither ended nor failed");
            peer.push();
            peer.answer(1, numbered);
            match t.progress(None) {
                Ok(()) => assert!(t.test_recv(r).is_none(), "its data came past the stall"),
                Err(Error::Deadlock(why)) => break why,
                Err(e) => panic!("{e}"),
            }
        };
        assert!(why.contains("every live connection is stalled"), "{why}");
    }

    #[test]
    fn a_flood_of_requests_to_send_is_bounded_epoll() {
        flood_is_bounded(Epoll::new().expect("epoll"));
    }

    #[test]
    fn a_flood_of_requests_to_send_is_bounded_select() {
        flood_is_bounded(Select::new());
    }

    #[test]
    fn a_flood_of_requests_to_send_is_bounded_poll() {
        flood_is_bounded(Poll::new());
    }

    /// Without eager credit at the receiver, small messages go as
    /// requests to send, in order with a large one after them: an
    /// `isend` stays pending until its data goes, a blocking send
    /// returns at once (its data copied). Once the receiver grants
    /// credit, a small message goes eager again.
    #[test]
    fn without_credit_small_messages_go_as_requests_in_order() {
        let (mut t, mut peers) = rank0(2, Poll::new(), &config(&[]));
        let a = t.isend(1, env(0, 1), b"first").expect("isend");
        t.send(1, env(0, 2), b"second").expect("send");
        let big = t.isend(1, env(0, 3), &vec![3u8; 1 << 20]).expect("isend");
        let peer = &mut peers[0];
        let mut heard = Vec::new();
        progress_until(&mut t, "the requests", |_| {
            heard.extend(peer.heard());
            heard.len() == 4
        });
        let order: Vec<(Kind, u32)> = heard.iter().map(|h| (h.kind, h.envelope.tag)).collect();
        assert_eq!(
            order,
            [
                (Kind::Credit, 0),
                (Kind::Rts, 1),
                (Kind::Rts, 2),
                (Kind::Rts, 3)
            ]
        );
        assert!(!t.test_send(a).expect("waits for its clear-to-send"));
        assert!(!t.test_send(big).expect("waits for its clear-to-send"));
        peer.grant(8);
        progress_until(&mut t, "the credit", |t| {
            t.conns[1]
                .as_ref()
                .is_some_and(|c| c.allowance.left().msgs == 8)
        });
        t.send(1, env(0, 4), b"fourth").expect("send");
        let mut heard = Vec::new();
        progress_until(&mut t, "the eager message", |_| {
            heard.extend(peer.heard());
            !heard.is_empty()
        });
        assert_eq!((heard[0].kind, heard[0].envelope.tag), (Kind::Eager, 4));
    }

    /// Credit that came back while rank 0 only sent is taken in when its
    /// allowance runs out: the next small message goes eager, not as a
    /// request to send.
    #[test]
    fn credit_waiting_in_the_socket_keeps_a_sender_eager() {
        let cfg = config(&[("O2G_EAGER_CREDIT_MSGS", "4")]);
        let (mut t, mut peers) = rank0(2, Epoll::new().expect("epoll"), &cfg);
        let peer = &mut peers[0];
        peer.grant(4);
        progress_until(&mut t, "the credit", |t| {
            t.conns[1]
                .as_ref()
                .is_some_and(|c| c.allowance.left().msgs == 4)
        });
        for tag in 0..4 {
            t.send(1, env(0, tag), b"within").expect("send");
        }
        let mut heard = Vec::new();
        let end = Instant::now() + PATIENCE;
        while heard
            .iter()
            .filter(|h: &&Header| h.kind == Kind::Eager)
            .count()
            < 4
        {
            assert!(Instant::now() < end, "the four eager messages did not come");
            heard.extend(peer.heard());
        }
        // The peer gives the credit back; rank 0 makes no progress call
        // before its next send.
        peer.grant(4);
        assert!(peer.all_out());
        std::thread::sleep(Duration::from_millis(20));
        t.send(1, env(0, 4), b"fifth").expect("send");
        let mut heard = Vec::new();
        while heard.is_empty() {
            assert!(Instant::now() < end, "the fifth message did not come");
            heard.extend(peer.heard());
        }
        assert_eq!((heard[0].kind, heard[0].envelope.tag), (Kind::Eager, 4));
    }

    /// A peer that sends more eager messages than its credit allows breaks
    /// the protocol: its connection fails with an error that says so, and
    /// the messages within the credit stay receivable.
    #[test]
    fn eager_messages_past_the_credit_fail_the_connection() {
        let cfg = config(&[("O2G_EAGER_CREDIT_MSGS", "4")]);
        let (mut t, mut peers) = rank0(2, Poll::new(), &cfg);
        let peer = &mut peers[0];
        for i in 0..5 {
            let m = message(&mut peer.enc, env(1, i), &[i as u8; 16]);
            peer.say(&m);
        }
        peer.push();
        progress_until(&mut t, "the connection's failure", |t| {
            t.peer_failure(1).is_some()
        });
        let why = t.peer_failure(1).expect("failed");
        assert!(
            why.contains("eager credit") && why.contains("rank 1"),
            "{why}"
        );
        for i in 0..4 {
            assert!(
                t.iprobe(from(1, i)).is_some(),
                "message {i} within the credit"
            );
        }
        assert!(t.iprobe(from(1, 4)).is_none());
    }

    /// Credit comes back as the program receives stored messages: a peer
    /// that keeps to its credit can send far more eager messages than the
    /// window, and gets the first credit before anything else.
    #[test]
    fn credit_returns_as_stored_messages_are_received() {
        let cfg = config(&[
            ("O2G_EAGER_CREDIT_MSGS", "4"),
            ("O2G_EAGER_CREDIT_BYTES", "64"),
        ]);
        let (mut t, mut peers) = rank0(2, Poll::new(), &cfg);
        let peer = &mut peers[0];
        let mut credit = Allowance::new();
        let mut sent = 0u32;
        progress_until(&mut t, "40 eager messages", |t| {
            for h in peer.heard() {
                assert_eq!(h.kind, Kind::Credit, "{h:?}");
                credit.add(Credit {
                    bytes: h.len,
                    msgs: h.reference,
                });
            }
            while sent < 40 && credit.spend(16) {
                let m = message(&mut peer.enc, env(1, sent), &[sent as u8; 16]);
                peer.say(&m);
                sent += 1;
            }
            peer.push();
            // Receive whatever arrived.
            for tag in 0..sent {
                if t.iprobe(from(1, tag)).is_some() {
                    let r = t.post_recv(from(1, tag), 16).expect("post");
                    match t.test_recv(r) {
                        Some(RecvOutcome::Done { data, .. }) => {
                            assert_eq!(data, [tag as u8; 16])
                        }
                        other => panic!("{other:?}"),
                    }
                }
            }
            sent == 40 && t.matcher.machine().unexpected_len() == 0
        });
        assert!(t.peer_failure(1).is_none());
    }

    /// A request to send that arrives before its receive costs rank 0 no
    /// payload room; the receive posted later gets the data straight, and
    /// a short receive asks for only what it can take and reports the
    /// full length.
    #[test]
    fn a_large_message_waits_at_its_sender_until_received() {
        const BIG: usize = 4 << 20;
        let (mut t, mut peers) = rank0(2, Epoll::new().expect("epoll"), &config(&[]));
        let peer = &mut peers[0];
        let big = |_: u32| (0..BIG).map(|i| (i * 7) as u8).collect::<Vec<u8>>();
        for tag in [1, 2] {
            let h = rts(&mut peer.enc, env(1, tag), BIG as u64, tag);
            peer.say(&h);
        }
        peer.push();
        progress_until(&mut t, "the requests", |t| t.iprobe(from(1, 2)).is_some());
        assert_eq!(t.iprobe(from(1, 1)), Some((env(1, 1), BIG as u64)));
        assert_eq!(t.matcher.reserved_bytes(), 0);
        match receive(&mut t, peer, from(1, 1), BIG, big) {
            RecvOutcome::Done { data, len, .. } => {
                assert_eq!(len, BIG as u64);
                assert!(data == big(1), "the data arrived wrong");
            }
            other => panic!("{other:?}"),
        }
        match receive(&mut t, peer, from(1, 2), 1000, big) {
            RecvOutcome::Done { data, len, .. } => {
                assert_eq!((len, data.len()), (BIG as u64, 1000));
                assert!(data[..] == big(2)[..1000]);
            }
            other => panic!("{other:?}"),
        }
        assert!(t.peer_failure(1).is_none());
    }

    /// An `isend` behind a message that waits in the queue (here credit)
    /// while the socket has room goes out: nothing had tried the socket,
    /// so an edge-triggered poller would never say it has room. Two ranks
    /// exchanging 1 MiB eager messages hung this way about once in ten
    /// runs.
    #[test]
    fn an_isend_behind_a_queued_message_goes_out() {
        let (mut t, mut peers) = rank0(2, Epoll::new().expect("epoll"), &config(&[]));
        fn conn(t: &mut Sockets<Epoll>) -> &mut Conn {
            t.conns[1].as_mut().expect("rank 1")
        }
        // Credits both ways, and the poller's edges are used up.
        let peer = &mut peers[0];
        let grant = peer.enc.encode_ref(Kind::Credit, env(1, 0), 1 << 20, 16);
        peer.say(&grant);
        peer.push();
        progress_until(&mut t, "the credits", |t| {
            conn(t).outbox.is_empty() && conn(t).allowance.left().bytes > 0
        });
        t.progress(Some(Duration::ZERO)).expect("progress");
        conn(&mut t).queue_credit(0, Credit { bytes: 0, msgs: 0 });
        let data = vec![7u8; 1000];
        let token = t.isend(1, env(0, 5), &data).expect("isend");
        let mut heard = Vec::new();
        progress_until(&mut t, "the isend to go out", |t| {
            heard.extend(peer.heard().into_iter().map(|h| (h.kind, h.len)));
            t.test_send(token).expect("send")
        });
        progress_until(&mut t, "rank 1 to hear it", |_| {
            heard.extend(peer.heard().into_iter().map(|h| (h.kind, h.len)));
            heard.len() >= 3
        });
        let eager = (Kind::Eager, data.len() as u64);
        assert_eq!(heard[1..], [(Kind::Credit, 0), eager]);
    }

    /// Rank 0's own rendezvous sends: an `isend` completes once its data
    /// went out after the clear-to-send; a blocking send whose receiver
    /// does not match in time returns and sends later, from a copy.
    #[test]
    fn rendezvous_sends_go_when_cleared() {
        const LEN: usize = 1 << 20;
        let (mut t, mut peers) = rank0(2, Epoll::new().expect("epoll"), &config(&[]));
        let data: Vec<u8> = (0..LEN).map(|i| (i % 253) as u8).collect();
        let token = t.isend(1, env(0, 3), &data).expect("isend");
        t.send(1, env(0, 4), &data).expect("send returns unmatched");
        let peer = &mut peers[0];
        let mut rts_seen = Vec::new();
        progress_until(&mut t, "both requests", |_| {
            rts_seen.extend(peer.heard().into_iter().filter(|h| h.kind == Kind::Rts));
            rts_seen.len() == 2
        });
        assert!(!t.test_send(token).expect("pending"));
        // The receiver matches both: clear-to-send for all of the first,
        // half of the second.
        for (h, want) in rts_seen.iter().zip([LEN, LEN / 2]) {
            assert_eq!((h.len, h.envelope.source), (LEN as u64, 0));
            let env = Header::token_envelope(1, 0x1000 + u64::from(h.envelope.tag));
            let cts = peer
                .enc
                .encode_ref(Kind::Cts, env, want as u64, h.reference);
            peer.say(&cts);
        }
        peer.push();
        let mut got: Vec<(Header, Vec<u8>)> = Vec::new();
        let mut buf = vec![0u8; 1 << 16];
        progress_until(&mut t, "both data messages", |_| {
            if let Ok(n) = peer.s.read(&mut buf) {
                let mut input = &buf[..n];
                while let Ok(step) = peer.rx.feed(input) {
                    input = &input[step.consumed..];
                    match step.event {
                        Some(Event::Header(h)) => got.push((h, Vec::new())),
                        Some(Event::Payload { data, .. }) => {
                            got.last_mut().expect("header").1.extend_from_slice(data)
                        }
                        Some(Event::End(_)) => {}
                        None => break,
                    }
                }
            }
            got.iter()
                .filter(|(h, d)| h.kind == Kind::Data && d.len() as u64 == h.len)
                .count()
                == 2
        });
        let datas: Vec<_> = got.iter().filter(|(h, _)| h.kind == Kind::Data).collect();
        assert_eq!(datas[0].0.token(), 0x1003);
        assert!(datas[0].1 == data);
        assert_eq!(datas[1].0.token(), 0x1004);
        assert!(datas[1].1[..] == data[..LEN / 2]);
        assert!(t.test_send(token).expect("done"));
        assert!(!t.has_queued_sends());
    }

    /// Rank 0 of 2 with zero-copy sends on to rank 1, whose raw end has
    /// already cleared offer 0 (the first) for `len` bytes: rank 0 reads
    /// that while it sends its request, and a blocking send never falls
    /// back to a copy. Loopback copies after all; `new` turns zero-copy on
    /// only for other hosts, so the tests do it by hand.
    fn zero_copy_rank0(len: usize) -> (Sockets<Epoll>, Peer) {
        let (mut t, mut peers) = rank0(2, Epoll::new().expect("epoll"), &config(&[]));
        let c = t.conns[1].as_mut().expect("rank 1");
        c.outbox.zero_copy = ZeroCopy::enable(&c.stream);
        assert!(c.outbox.zero_copy_pays(), "SO_ZEROCOPY");
        let mut peer = peers.remove(0);
        let env1 = Header::token_envelope(1, 0x77);
        let cts = peer.enc.encode_ref(Kind::Cts, env1, len as u64, 0);
        peer.s.set_nonblocking(false).expect("blocking");
        peer.s.write_all(&cts).expect("cts");
        (t, peer)
    }

    /// Reads what rank 0 sends until the end of its first rendezvous data;
    /// that data's header and payload, and the peer, whose socket stays
    /// open (a close would fail a send still waiting for completions).
    fn read_data(mut peer: Peer) -> std::thread::JoinHandle<(Header, Vec<u8>, Peer)> {
        std::thread::spawn(move || {
            let mut data = Vec::new();
            let mut buf = vec![0u8; 1 << 16];
            loop {
                let n = peer.s.read(&mut buf).expect("read");
                assert!(n > 0, "rank 0 closed before its data");
                let mut input = &buf[..n];
                while let Ok(step) = peer.rx.feed(input) {
                    input = &input[step.consumed..];
                    match step.event {
                        Some(Event::Payload { data: d, .. }) => data.extend_from_slice(d),
                        Some(Event::End(h)) if h.kind == Kind::Data => return (h, data, peer),
                        Some(_) => {}
                        None => break,
                    }
                }
            }
        })
    }

    /// The zero-copy sends on rank 0's connection to rank 1.
    fn zero_copy_of(t: &Sockets<Epoll>) -> &ZeroCopy {
        let c = t.conns[1].as_ref().expect("rank 1");
        c.outbox.zero_copy.as_ref().expect("zero-copy on")
    }

    /// A blocking send's rendezvous data goes without a copy, whole, and
    /// the send returns only once the kernel let go of it.
    #[test]
    fn a_blocking_rendezvous_send_goes_without_a_copy() {
        const LEN: usize = 2 << 20;
        let (mut t, peer) = zero_copy_rank0(LEN);
        let reader = read_data(peer);
        let data: Vec<u8> = (0..LEN).map(|i| (i % 251) as u8).collect();
        t.send(1, env(0, 5), &data).expect("send");
        let zc = zero_copy_of(&t);
        assert!(
            zc.made() > 0 && zc.idle(),
            "sent without a copy, and completed"
        );
        assert!(!zc.pays(), "loopback's completions say the kernel copied");
        let (h, got, _peer) = reader.join().expect("reader");
        assert_eq!((h.token(), h.len), (0x77, LEN as u64));
        assert!(got == data, "the data arrived changed");
    }

    /// An `isend` of lent memory whose data went partly without a copy:
    /// releasing it returns only once the kernel stopped reading that
    /// memory, so that the caller may then overwrite it.
    #[test]
    fn a_released_zero_copy_isend_leaves_the_lent_memory_alone() {
        const LEN: usize = 8 << 20;
        let (mut t, peer) = zero_copy_rank0(LEN);
        let reader = read_data(peer);
        let original: Vec<u8> = (0..LEN).map(|i| (i % 249) as u8).collect();
        let mut data = original.clone();
        // SAFETY: `data` is left alone until `release_send` returned.
        let token = unsafe { t.isend_lent(1, env(0, 6), data.as_ptr(), LEN) };
        let token = token.expect("isend").expect("lent");
        progress_until(&mut t, "a send without a copy", |t| {
            zero_copy_of(t).made() > 0
        });
        t.release_send(token);
        let c = t.conns[1].as_ref().expect("rank 1");
        assert!(!c.outbox.kernel_reads_lent(token.0));
        data.fill(0xff);
        progress_until(&mut t, "the rest", |t| !t.has_queued_sends());
        let (h, got, _peer) = reader.join().expect("reader");
        assert_eq!((h.token(), h.len), (0x77, LEN as u64));
        assert!(got == original, "the data arrived changed");
    }

    /// Rendezvous data for a receive in place is read into place from its
    /// first payload byte: after the clear-to-send the next read takes the
    /// data's header alone, though the socket already holds much of the
    /// payload behind it (none of it passes through the scratch buffer).
    #[test]
    fn rendezvous_data_goes_into_place_from_its_first_byte() {
        const LEN: usize = 1 << 20;
        let (mut t, mut peers) = rank0(2, Epoll::new().expect("epoll"), &config(&[]));
        let mut dst = vec![0u8; LEN];
        // SAFETY: `dst` outlives the receive, which completes (asserted)
        // before `dst` is read; nothing touches it meanwhile.
        let r = unsafe { t.post_recv_in_place(from(1, 5), dst.as_mut_ptr(), LEN) }
            .expect("post")
            .expect("sockets receive in place");
        let peer = &mut peers[0];
        let h = rts(&mut peer.enc, env(1, 5), LEN as u64, 7);
        peer.say(&h);
        peer.push();
        let mut cts = None;
        progress_until(&mut t, "the clear-to-send", |_| {
            cts = peer.heard().into_iter().find(|h| h.kind == Kind::Cts);
            cts.is_some()
        });
        let cts = cts.expect("cts");
        assert_eq!((cts.len, cts.reference), (LEN as u64, 7));
        let data = peer.enc.encode_ref(
            Kind::Data,
            Header::token_envelope(1, cts.token()),
            LEN as u64,
            7,
        );
        peer.say(&data);
        let payload: Vec<u8> = (0..LEN).map(|i| (i % 251) as u8).collect();
        peer.say(&payload);
        // The socket takes far more than a header before rank 0 reads.
        peer.push();
        assert!(peer.at > HEADER_LEN + SCRATCH / 4, "{} bytes out", peer.at);
        let mut got = None;
        progress_until(&mut t, "the data", |t| {
            peer.push();
            got = t.test_recv(r);
            got.is_some()
        });
        assert!(
            matches!(got, Some(RecvOutcome::InPlace { len, written, .. })
                if len == LEN as u64 && written == LEN),
            "{got:?}"
        );
        assert!(dst == payload);
        assert_eq!(t.read_in_place_bytes, LEN as u64);
    }

    /// Clear-to-send and data messages that name nothing this end made,
    /// or ask for too much, fail the connection with an error that says
    /// which rule the peer broke.
    #[test]
    fn rendezvous_answers_that_name_nothing_fail_the_connection() {
        type Says = fn(&mut Peer) -> Vec<u8>;
        let cases: [(&str, Says); 3] = [
            ("which no receive of rank 0 waits", |p| {
                p.enc
                    .encode_ref(Kind::Data, Header::token_envelope(1, 77), 0, 0)
                    .to_vec()
            }),
            ("clear-to-send for offer 9", |p| {
                p.enc
                    .encode_ref(Kind::Cts, Header::token_envelope(1, 77), 1, 9)
                    .to_vec()
            }),
            ("asked for 2097152 bytes of a message of 1048576", |p| {
                p.enc
                    .encode_ref(Kind::Cts, Header::token_envelope(1, 77), 2 << 20, 0)
                    .to_vec()
            }),
        ];
        for (expect, bytes) in cases {
            let (mut t, mut peers) = rank0(2, Poll::new(), &config(&[]));
            // Offer 0: a rendezvous isend from rank 0.
            let _ = t.isend(1, env(0, 1), &vec![1u8; 1 << 20]).expect("isend");
            let peer = &mut peers[0];
            let b = bytes(peer);
            peer.say(&b);
            peer.push();
            progress_until(&mut t, expect, |t| t.peer_failure(1).is_some());
            let why = t.peer_failure(1).expect("failed");
            assert!(
                why.contains(expect) && why.contains("protocol error"),
                "{why}"
            );
        }
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
            .s
            .write_all(&message(&mut enc, env(1, 8), b"fine"))
            .expect("write");
        peers[0]
            .s
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
            .s
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

    /// Announcements of 4 GiB: as an eager message it is past any credit
    /// and fails the connection before anything is reserved; as a request
    /// to send it reserves nothing, and the data that follows a 4 GiB
    /// receive's clear-to-send reserves only what arrived.
    #[test]
    fn a_4_gib_announcement_reserves_little() {
        let cfg = config(&[]);
        let (mut t, mut peers) = rank0(3, Epoll::new().expect("epoll"), &cfg);
        let header = peers[0].enc.encode(Kind::Eager, env(1, 1), 4 << 30);
        peers[0].s.write_all(&header).expect("write");
        progress_until(&mut t, "the eager announcement", |t| {
            t.peer_failure(1).is_some()
        });
        assert!(t.peer_failure(1).expect("failed").contains("eager credit"));
        assert_eq!(t.matcher.reserved_bytes(), 0);
        let peer = &mut peers[1];
        let h = rts(&mut peer.enc, env(2, 2), 4 << 30, 5);
        peer.say(&h);
        peer.push();
        progress_until(&mut t, "the request", |t| t.iprobe(from(2, 2)).is_some());
        assert_eq!(t.matcher.reserved_bytes(), 0);
        let r = t.post_recv(from(2, 2), 4 << 30).expect("post");
        let mut cts = None;
        progress_until(&mut t, "the clear-to-send", |_| {
            cts = peer.heard().into_iter().find(|h| h.kind == Kind::Cts);
            cts.is_some()
        });
        let cts = cts.expect("cts");
        assert_eq!((cts.len, cts.reference), (4 << 30, 5));
        let env = Header::token_envelope(2, cts.token());
        let data = peer.enc.encode_ref(Kind::Data, env, 4 << 30, 5);
        peer.s.write_all(&data).expect("write");
        peer.s.write_all(&[5; 1000]).expect("write");
        progress_until(&mut t, "the data's first bytes", |t| {
            t.matcher.reserved_bytes() >= 1000
        });
        let reserved = t.matcher.reserved_bytes();
        assert!(
            reserved <= FIRST_RESERVE.max(1 << 20),
            "{reserved} bytes reserved"
        );
        assert!(t.test_recv(r).is_none());
    }
}
