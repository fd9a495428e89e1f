//! The send half every TCP-based transport shares: writing a header and
//! payload to a nonblocking socket, each connection's [`Outbox`] of what
//! the socket did not take yet, and the bookkeeping of `isend` tokens.
//!
//! A message is the 32-byte o2g-core header then the payload, written with
//! one `writev` where possible. An `isend` writes what the socket takes at
//! once and copies only the rest into an [`Out`]; a send whose caller
//! lends its memory until completion (the C ABI's `MPI_Isend`) keeps a
//! pointer to the rest instead ([`Payload::Lent`]), copied only if the
//! caller lets go of the request early. Rendezvous data to another host
//! may go without a copy into the kernel ([`ZeroCopy`]): its send then
//! completes only once the kernel has let go of its bytes.

use std::collections::VecDeque;
use std::io::{self, ErrorKind, IoSlice, Write};
use std::net::TcpStream;

use foldhash::{HashMap, HashMapExt};

use o2g_core::proto::wire::{Encoder, HEADER_LEN};

use super::zerocopy::ZeroCopy;
use super::{pool, SendToken};
use crate::error::{Error, Result};

/// Writes as much of `header` then `data` as the socket takes; returns
/// the bytes written of each.
pub(crate) fn write_parts(
    s: &mut TcpStream,
    header: &[u8],
    data: &[u8],
) -> io::Result<(usize, usize)> {
    let (mut h, mut d) = (0, 0);
    while h < header.len() || d < data.len() {
        let bufs = [IoSlice::new(&header[h..]), IoSlice::new(&data[d..])];
        match s.write_vectored(&bufs) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(mut n) => {
                let take = n.min(header.len() - h);
                h += take;
                n -= take;
                d += n;
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(e) => return Err(e),
        }
    }
    Ok((h, d))
}

/// A blocking send under way: how much of its header and of the caller's
/// data has been written so far.
pub(crate) struct Sending {
    header: [u8; HEADER_LEN],
    done: (usize, usize),
}

impl Sending {
    pub(crate) fn new(header: [u8; HEADER_LEN]) -> Self {
        Self {
            header,
            done: (0, 0),
        }
    }

    /// Writes as much of the rest as the socket takes; whether all of the
    /// header and of `data` is out.
    pub(crate) fn write(&mut self, s: &mut TcpStream, data: &[u8]) -> io::Result<bool> {
        let (h, d) = self.done;
        let (dh, dd) = write_parts(s, &self.header[h..], &data[d..])?;
        self.done = (h + dh, d + dd);
        Ok(self.done == (HEADER_LEN, data.len()))
    }
}

/// The payload bytes of a queued message.
pub(crate) enum Payload {
    /// This end's own copy.
    Owned(Vec<u8>),
    /// The caller's memory, valid and unchanged until the send's token
    /// completes or is released (the contract of
    /// [`SendHalf::isend_lent`](super::SendHalf::isend_lent)); never empty.
    Lent { ptr: *const u8, len: usize },
}

impl Payload {
    /// The caller's `len` bytes at `ptr`, kept by reference.
    ///
    /// # Safety
    ///
    /// `ptr..ptr + len` stays valid and unchanged until [`Payload::own`]
    /// is called or the payload dropped.
    pub(crate) unsafe fn lent(ptr: *const u8, len: usize) -> Self {
        if len == 0 {
            Self::Owned(Vec::new())
        } else {
            Self::Lent { ptr, len }
        }
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            Self::Owned(v) => v,
            // SAFETY: `lent`'s contract keeps the memory valid and unchanged
            // while the payload refers to it; `len > 0`, so `ptr` is a real
            // allocation's.
            Self::Lent { ptr, len } => unsafe { std::slice::from_raw_parts(*ptr, *len) },
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.bytes().len()
    }

    /// Keeps only the first `len` bytes.
    pub(crate) fn truncate(&mut self, len: usize) {
        match self {
            Self::Owned(v) => v.truncate(len),
            Self::Lent { len: l, .. } => *l = (*l).min(len.max(1)),
        }
        if len == 0 {
            *self = Self::Owned(Vec::new());
        }
    }

    /// Replaces lent memory with a copy: the lender may reuse it now.
    pub(crate) fn own(&mut self) {
        if let Self::Lent { .. } = self {
            *self = Self::Owned(pool::copy_of(self.bytes()));
        }
    }

    /// Gives an owned buffer back to the pool.
    fn recycle(self) {
        if let Self::Owned(v) = self {
            pool::give(v);
        }
    }
}

/// A message, or what is left of it, waiting to be written.
pub(crate) struct Out {
    sending: Sending,
    /// The payload bytes the socket had not taken when it was queued.
    data: Payload,
    /// The `isend` it belongs to.
    token: u64,
    /// Whether its payload goes without a copy where the connection can.
    zero_copy: bool,
    /// The zero-copy sends of lent memory made for it: the kernel reads
    /// the lender's memory until every send before this count completed.
    lent_until: Option<u64>,
}

impl Out {
    /// A whole message whose payload this end already owns (rendezvous
    /// data, or a message without payload): queued without a copy.
    pub(crate) fn whole(header: [u8; HEADER_LEN], data: Payload, token: u64) -> Self {
        Self {
            sending: Sending::new(header),
            data,
            token,
            zero_copy: false,
            lent_until: None,
        }
    }

    /// This message with its payload sent without a copy where the
    /// connection can.
    pub(crate) fn without_copy(self) -> Self {
        Self {
            zero_copy: true,
            ..self
        }
    }

    /// What is left of a message after the first `header_done` bytes of
    /// `header` were written: them, then `data` (the rest of the payload,
    /// copied or lent).
    fn rest(header: [u8; HEADER_LEN], header_done: usize, data: Payload, token: u64) -> Self {
        Self {
            sending: Sending {
                header,
                done: (header_done, 0),
            },
            data,
            token,
            zero_copy: false,
            lent_until: None,
        }
    }

    /// Writes as much as the socket takes; whether the message is out.
    pub(crate) fn write(&mut self, s: &mut TcpStream) -> io::Result<bool> {
        self.sending.write(s, self.data.bytes())
    }

    /// [`Out::write`] with the payload sent without a copy: the header by
    /// copy first (the kernel would read it after it moved), then the
    /// payload with `zc`.
    fn write_without_copy(&mut self, s: &mut TcpStream, zc: &mut ZeroCopy) -> io::Result<bool> {
        let data = self.data.bytes();
        let (h, d) = self.sending.done;
        if h < HEADER_LEN {
            let (dh, _) = write_parts(s, &self.sending.header[h..], &[])?;
            self.sending.done.0 += dh;
            if self.sending.done.0 < HEADER_LEN {
                return Ok(false);
            }
        }
        let mut d = d;
        while d < data.len() {
            // SAFETY: An owned payload lives in this message until its
            // sends completed (`Outbox::settle`); lent memory stays the
            // lender's until the token completes or its release waited for
            // `lent_until` (`Outbox::kernel_reads_lent`).
            match unsafe { zc.send(s, &data[d..]) } {
                Ok(0) => return Err(ErrorKind::WriteZero.into()),
                Ok(n) => {
                    d += n;
                    self.sending.done.1 = d;
                    if let Payload::Lent { .. } = self.data {
                        self.lent_until = Some(zc.made());
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(false),
                // Too many completions wait to be taken: take them, and
                // copy the rest of this message.
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                    zc.reap(s)?;
                    return self.sending.write(s, data);
                }
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }
}

/// A message written without a copy whose sends have not all completed:
/// the kernel still reads its payload.
struct InFlight {
    /// Complete once every zero-copy send before this count has.
    end: u64,
    data: Payload,
    token: u64,
    /// Whether the kernel reads lent memory.
    lent: bool,
}

/// One connection's send side: the encoder that numbers its messages,
/// and what the socket has not taken yet, oldest first. Messages leave in
/// the order they were started (MPI non-overtaking, §3.5).
pub(crate) struct Outbox {
    /// Encodes every header written on the connection.
    pub(crate) tx: Encoder,
    queue: VecDeque<Out>,
    /// Zero-copy sends, on a connection to another host.
    pub(crate) zero_copy: Option<ZeroCopy>,
    /// Messages written without a copy whose bytes the kernel still reads,
    /// oldest first.
    in_flight: VecDeque<InFlight>,
    /// Payload bytes copied out of callers' buffers so far: the rests kept
    /// by copy and lent memory taken back (a cost `O2G_STATS` reports).
    pub(crate) copied: u64,
}

/// What one [`Outbox::flush`] did.
pub(crate) struct Flushed {
    /// Whether a queued message went out whole.
    pub(crate) sent: bool,
    /// Whether the queue is empty now (else the socket is full).
    pub(crate) drained: bool,
}

impl Outbox {
    pub(crate) fn new() -> Self {
        Self {
            tx: Encoder::new(),
            queue: VecDeque::new(),
            zero_copy: None,
            in_flight: VecDeque::new(),
            copied: 0,
        }
    }

    /// Whether nothing waits to be written.
    pub(crate) fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Whether a zero-copy send has not completed yet: its completion will
    /// come in the socket's error queue.
    pub(crate) fn in_kernel(&self) -> bool {
        self.zero_copy.as_ref().is_some_and(|zc| !zc.idle())
    }

    /// Whether sends without a copy should be made now.
    pub(crate) fn zero_copy_pays(&self) -> bool {
        self.zero_copy.as_ref().is_some_and(ZeroCopy::pays)
    }

    /// Whether the kernel may still read memory lent for `token`.
    pub(crate) fn kernel_reads_lent(&self, token: u64) -> bool {
        let Some(zc) = self.zero_copy.as_ref() else {
            return false;
        };
        self.in_flight.iter().any(|f| f.token == token && f.lent)
            || (self.queue.iter())
                .filter(|o| o.token == token)
                .any(|o| o.lent_until.is_some_and(|end| !zc.done_before(end)))
    }

    /// Takes the zero-copy completions on `s` and completes the messages
    /// whose sends all did; whether one did.
    pub(crate) fn settle(&mut self, s: &TcpStream, sends: &mut Sends) -> io::Result<bool> {
        let Some(zc) = self.zero_copy.as_mut() else {
            return Ok(false);
        };
        zc.reap(s)?;
        let mut settled = false;
        while let Some(f) = self.in_flight.front() {
            if !zc.done_before(f.end) {
                break;
            }
            sends.finish(f.token);
            if let Some(f) = self.in_flight.pop_front() {
                f.data.recycle();
            }
            settled = true;
        }
        Ok(settled)
    }

    /// Queues a message whose bytes this end owns (see [`Out::whole`]).
    pub(crate) fn push(&mut self, out: Out) {
        self.queue.push_back(out);
    }

    /// Starts an `isend` on socket `s`: writes the messages still queued
    /// and then this one, as far as the socket takes them at once, and
    /// queues a copy of the rest under a new token of `sends`. Token 0: it
    /// all went out. Any other token means the socket was found full, so
    /// a caller that waits for room may wait for the socket to say so.
    /// (Queueing behind a queue that a writable socket would have taken
    /// left an edge-triggered poller with no edge to come: a lost wake-up.)
    pub(crate) fn start(
        &mut self,
        s: &mut TcpStream,
        sends: &mut Sends,
        header: [u8; HEADER_LEN],
        data: &[u8],
    ) -> io::Result<SendToken> {
        self.start_with(s, sends, header, data, |rest| {
            Payload::Owned(pool::copy_of(rest))
        })
    }

    /// [`Outbox::start`] keeping the rest by reference, not copied.
    ///
    /// # Safety
    ///
    /// `data` stays valid and unchanged until the token completes, or
    /// until [`Outbox::own`] returned for it.
    pub(crate) unsafe fn start_lent(
        &mut self,
        s: &mut TcpStream,
        sends: &mut Sends,
        header: [u8; HEADER_LEN],
        data: &[u8],
    ) -> io::Result<SendToken> {
        // SAFETY: This function's contract.
        self.start_with(s, sends, header, data, |rest| unsafe {
            Payload::lent(rest.as_ptr(), rest.len())
        })
    }

    fn start_with(
        &mut self,
        s: &mut TcpStream,
        sends: &mut Sends,
        header: [u8; HEADER_LEN],
        data: &[u8],
        keep: impl FnOnce(&[u8]) -> Payload,
    ) -> io::Result<SendToken> {
        let done = if self.flush(s, sends)?.drained {
            write_parts(s, &header, data)?
        } else {
            (0, 0)
        };
        if done == (HEADER_LEN, data.len()) {
            return Ok(SendToken(0));
        }
        let token = sends.start();
        let rest = keep(&data[done.1..]);
        if let Payload::Owned(v) = &rest {
            self.copied += v.len() as u64;
        }
        self.queue.push_back(Out::rest(header, done.0, rest, token));
        Ok(SendToken(token))
    }

    /// Copies the lent payload of `token`'s message, if it still waits:
    /// its caller may reuse the memory once this returns.
    pub(crate) fn own(&mut self, token: u64) {
        for o in self.queue.iter_mut().filter(|o| o.token == token) {
            if let Payload::Lent { len, .. } = o.data {
                self.copied += len as u64;
            }
            o.data.own();
        }
    }

    /// Writes queued messages to `s` until the socket is full or the queue
    /// empty, finishing each one's token in `sends`. On an error the
    /// message being written stays first in the queue.
    pub(crate) fn flush(&mut self, s: &mut TcpStream, sends: &mut Sends) -> io::Result<Flushed> {
        let mut sent = false;
        while let Some(o) = self.queue.front_mut() {
            let zc = self
                .zero_copy
                .as_mut()
                .filter(|zc| o.zero_copy && zc.pays());
            let out = match zc {
                Some(zc) => o.write_without_copy(s, zc)?,
                None => o.write(s)?,
            };
            if !out {
                return Ok(Flushed {
                    sent,
                    drained: false,
                });
            }
            let Some(o) = self.queue.pop_front() else {
                unreachable!("the message just written is first in the queue");
            };
            if o.zero_copy && self.in_kernel() {
                // Complete once the kernel let go of its bytes (`settle`).
                self.in_flight.push_back(InFlight {
                    end: self.zero_copy.as_ref().map_or(0, ZeroCopy::made),
                    lent: o.lent_until.is_some(),
                    data: o.data,
                    token: o.token,
                });
            } else {
                sends.finish(o.token);
                o.data.recycle();
            }
            sent = true;
        }
        Ok(Flushed {
            sent,
            drained: true,
        })
    }

    /// Empties the queue: none of it can go out now, for `reason`.
    pub(crate) fn fail_all(&mut self, sends: &mut Sends, reason: &str) {
        for out in self.queue.drain(..) {
            sends.fail(out.token, reason);
        }
        for f in self.in_flight.drain(..) {
            sends.fail(f.token, reason);
        }
    }
}

enum SendState {
    Pending { released: bool },
    Done,
    Failed(String),
}

/// The `isend`s that have not completed, or completed and were not asked
/// about yet. Token 0 names a send that completed at once.
pub(crate) struct Sends {
    states: HashMap<u64, SendState>,
    next: u64,
}

impl Sends {
    pub(crate) fn new() -> Self {
        Self {
            states: HashMap::new(),
            next: 1,
        }
    }

    /// A new pending send.
    pub(crate) fn start(&mut self) -> u64 {
        let t = self.next;
        self.next += 1;
        self.states
            .insert(t, SendState::Pending { released: false });
        t
    }

    /// The last byte of `token` went out.
    pub(crate) fn finish(&mut self, token: u64) {
        if let Some(SendState::Pending { released }) = self.states.get(&token) {
            if *released {
                self.states.remove(&token);
            } else {
                self.states.insert(token, SendState::Done);
            }
        }
    }

    /// `token` can never go out.
    pub(crate) fn fail(&mut self, token: u64, reason: &str) {
        if let Some(s) = self.states.get_mut(&token) {
            *s = SendState::Failed(reason.to_owned());
        }
    }

    /// Whether `token` completed; a completed token is forgotten.
    pub(crate) fn test(&mut self, token: SendToken) -> Result<bool> {
        if token.0 == 0 {
            return Ok(true);
        }
        match self.states.remove(&token.0) {
            Some(SendState::Done) | None => Ok(true),
            Some(SendState::Failed(reason)) => Err(Error::PeerGone {
                rank: u32::MAX,
                reason,
            }),
            Some(pending) => {
                self.states.insert(token.0, pending);
                Ok(false)
            }
        }
    }

    /// Nobody will ask about `token` any more.
    pub(crate) fn release(&mut self, token: SendToken) {
        match self.states.get_mut(&token.0) {
            Some(SendState::Pending { released }) => *released = true,
            _ => {
                self.states.remove(&token.0);
            }
        }
    }
}
