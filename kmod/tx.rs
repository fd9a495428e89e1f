// SPDX-License-Identifier: GPL-2.0

//! What the module writes: clear-to-send, rendezvous data, eager credit
//! and the answers of its memory windows on control connections, from the
//! endpoint's send work in process context.
//!
//! Where a `Cts`, `Data` or `Credit` is decided (the reader in softirq, a
//! POST), it is queued under the rx lock as an [`Outgoing`] and the send
//! work is kicked. The work writes each message whole, without blocking: a
//! connection whose send buffer is full keeps its half-written message
//! (and the messages queued behind it for that rank) until its
//! `sk_write_space` kicks the work again, so one slow peer never holds
//! back the others. The module is the only writer of a control
//! connection, so its framing is never shared with the process.
//!
//! A `Cts` that cannot be sent (the connection is gone) ends the receive
//! waiting for its data with `-ECONNRESET`; an offer whose data cannot be
//! sent ends with the same status in its `SENT` record.
//!
//! An offer's data for another host goes without a copy (`zerocopy.rs`):
//! its `SENT` record then waits until TCP has freed the skbs holding the
//! pages, rather than until the last byte is queued.
//!
//! Locks: the work holds the endpoint's list of control connections
//! (mutex) for a pass, then a connection's tx mutex, then, briefly, the rx
//! lock; never the rx lock across a send.

use kernel::{alloc::KVVec, prelude::*, sync::Arc};

use crate::abi;
use crate::conn::Conn;
use crate::data_path::PostedRecv;
use crate::endpoint_rx::EndpointRx;
use crate::pinned::PinnedBuf;
use crate::proto::{
    envelope::Envelope,
    receive::{Dest, OnEnd},
    wire::{Encoder, Header, Kind, LockAnswer, HEADER_LEN},
};
use crate::sock::{errno, TcpSocket};
use crate::trace::{trace, Step};
use crate::window::{DueAnswer, Reply};
use crate::zerocopy::{self, ZcSend};

/// A message for a control connection.
#[derive(Clone, Copy)]
pub(crate) enum Outgoing {
    /// Clear to send `want` bytes of `rank`'s offer `offer`, for the
    /// receive waiting under `token`.
    Cts {
        rank: u32,
        token: u64,
        want: u64,
        offer: u32,
    },
    /// The data of offer `offer` to `rank`, which its receiver cleared.
    Data { rank: u32, offer: u32 },
    /// The credit owed to `rank` (`credit::CreditBook`), taken when
    /// written.
    Credit { rank: u32 },
}

impl Outgoing {
    /// Whether this is an offer's data (as opposed to a header-only
    /// clear-to-send or credit).
    fn is_data(&self) -> bool {
        matches!(self, Outgoing::Data { .. })
    }

    fn rank(&self) -> u32 {
        match *self {
            Outgoing::Cts { rank, .. }
            | Outgoing::Data { rank, .. }
            | Outgoing::Credit { rank } => rank,
        }
    }
}

/// Messages decided and not yet started, oldest first; sized at INIT
/// for every receive that may wait for data and every offer. At most
/// `max_cts` entries are clear-to-send, so a peer that makes the module
/// answer more requests than receives can wait (by forging data for
/// them) cannot take the room kept for offers' data.
pub(crate) struct TxQueue {
    items: KVVec<Option<Outgoing>>,
    head: usize,
    len: usize,
    cts: usize,
    max_cts: usize,
}

impl TxQueue {
    /// A queue of `n` messages, at most `max_cts` of them clear-to-send.
    ///
    /// Context: process context, may sleep.
    pub(crate) fn new(n: usize, max_cts: usize) -> Result<Self> {
        let mut items = KVVec::with_capacity(n, GFP_KERNEL_ACCOUNT)?;
        for _ in 0..n {
            items.push(None, GFP_KERNEL_ACCOUNT)?;
        }
        Ok(Self {
            items,
            head: 0,
            len: 0,
            cts: 0,
            max_cts,
        })
    }

    /// Messages queued.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Queues `o`; gives it back when full (which sizing rules out for
    /// a peer that follows the protocol).
    pub(crate) fn push(&mut self, o: Outgoing) -> core::result::Result<(), Outgoing> {
        let cap = self.items.len();
        let is_cts = matches!(o, Outgoing::Cts { .. });
        if self.len == cap || (is_cts && self.cts >= self.max_cts) {
            return Err(o);
        }
        let at = self.slot(self.len);
        self.items[at] = Some(o);
        self.len += 1;
        self.cts += usize::from(is_cts);
        Ok(())
    }

    /// The slot of the message `i` places behind the oldest. Not `%`: its
    /// panic for a zero divisor (`panic_const_rem_by_zero`, which a queue
    /// holding a message never meets) is one objtool does not know cannot
    /// return, and every caller into which `push` was inlined drew a
    /// "falls through to next function" warning.
    fn slot(&self, i: usize) -> usize {
        (self.head + i).checked_rem(self.items.len()).unwrap_or(0)
    }

    /// Whether a clear-to-send or credit for `rank` waits: an offer's
    /// data to `rank` then lets it go between two pieces.
    fn header_only_for(&self, rank: u32) -> bool {
        (0..self.len).any(|i| {
            self.items[self.slot(i)]
                .as_ref()
                .is_some_and(|o| !o.is_data() && o.rank() == rank)
        })
    }

    /// Takes the oldest message for which `pick` holds; the others keep
    /// their order.
    fn pop_first(&mut self, pick: impl Fn(&Outgoing) -> bool) -> Option<Outgoing> {
        let at = (0..self.len).find(|&i| self.items[self.slot(i)].as_ref().is_some_and(&pick))?;
        let picked = self.slot(at);
        let o = self.items[picked].take();
        // Close the gap: the older messages move up by one.
        for i in (0..at).rev() {
            let from = self.slot(i);
            let older = self.items[from].take();
            let to = self.slot(i + 1);
            self.items[to] = older;
        }
        self.head = self.slot(1);
        self.len -= 1;
        if matches!(o, Some(Outgoing::Cts { .. })) {
            self.cts -= 1;
        }
        o
    }
}

/// The sending side of one control connection; only the send work and
/// teardown touch it.
pub(crate) struct ConnTx {
    /// This process's rank: the source of every header written.
    local_rank: u32,
    encoder: Encoder,
    partial: Option<Partial>,
    /// An offer's data stopped between two pieces so that a clear-to-send
    /// or credit could go first; it goes on before any other data.
    suspended: Option<Partial>,
    /// `partial` waits for room, or `suspended` waits, and the connection
    /// is counted in [`EndpointRx::blocked`].
    counted: bool,
    /// A send failed: nothing more goes out on this connection.
    broken: bool,
}

/// A message being written.
struct Partial {
    header: [u8; HEADER_LEN],
    header_sent: usize,
    what: Part,
}

enum Part {
    /// A `Cts` for the receive waiting under this token.
    Cts(u64),
    /// A window's answer: its payload (a lock answer's bytes, or a get's
    /// from the window's pages), and how much of it went out.
    Answer { payload: AnswerPayload, sent: usize },
    /// Eager credit.
    Credit,
    /// An offer's data, in pieces of at most [`PIECE`] bytes, each behind
    /// a header of its own (`Kind::DataPart`, the last `Kind::Data`);
    /// `zc` when sent without a copy (`zerocopy.rs`).
    Data {
        offer: u32,
        /// The receive's token, which every piece's header names.
        token: u64,
        buf: PinnedBuf,
        want: usize,
        sent: usize,
        /// Where the piece being written ends.
        piece_end: usize,
        zc: Option<ZcSend>,
    },
}

/// The most payload one piece of an offer's data carries. A clear-to-send
/// or credit for the same peer waits behind at most one piece: when both
/// ranks send large messages at once, a clear-to-send that waited behind
/// a whole message held the other rank's data back until this rank's was
/// written, and the two transfers took turns instead of running together.
const PIECE: usize = 1 << 20;

/// The header of the piece of an offer's data that starts with `left`
/// bytes still to send, and that piece's length.
fn piece_header(
    encoder: &mut Encoder,
    local_rank: u32,
    token: u64,
    offer: u32,
    left: usize,
) -> ([u8; HEADER_LEN], usize) {
    let (kind, len) = if left > PIECE {
        (Kind::DataPart, PIECE)
    } else {
        (Kind::Data, left)
    };
    let header = encoder.encode_ref(
        kind,
        Header::token_envelope(local_rank, token),
        len as u64,
        offer,
    );
    (header, len)
}

/// What an answer carries.
enum AnswerPayload {
    /// A refused get's answer: nothing.
    Empty,
    Lock([u8; LockAnswer::LEN]),
    /// `len` bytes of the window's pages from `at`.
    Get {
        pages: Arc<PinnedBuf>,
        at: usize,
        len: usize,
    },
}

impl AnswerPayload {
    fn of(reply: &Reply) -> Self {
        match reply {
            Reply::Lock(a) => Self::Lock(a.encode()),
            Reply::Get(Some((pages, at, len))) => Self::Get {
                pages: pages.clone(),
                at: *at,
                len: *len,
            },
            Reply::Get(None) => Self::Empty,
        }
    }

    fn len(&self) -> usize {
        match self {
            Self::Empty => 0,
            Self::Lock(b) => b.len(),
            Self::Get { len, .. } => *len,
        }
    }

    /// Copies the payload into `recv` (an answer to this process itself).
    ///
    /// Context: process context, no spinlock held (yields between pages).
    fn copy_into(&self, recv: &PinnedBuf) -> Result<usize> {
        match self {
            Self::Empty => Ok(0),
            Self::Lock(b) => recv.copy_in(0, b.len(), |dst, done, chunk| {
                // SAFETY: `dst` is mapped for `chunk` bytes by the page
                // walker, and `done + chunk` is within `b`.
                unsafe { core::ptr::copy_nonoverlapping(b.as_ptr().add(done), dst, chunk) };
                Ok(())
            }),
            Self::Get { pages, at, len } => copy_pages(pages, *at, recv, *len),
        }
    }
}

enum Progress {
    Done,
    /// The send buffer is full: `sk_write_space` resumes.
    Blocked,
    /// An offer's data stopped between two pieces for a header-only
    /// message waiting for the same peer.
    Yield,
    Broken,
}

impl ConnTx {
    /// The sending side of a fresh control connection of `local_rank`.
    pub(crate) fn new(local_rank: u32) -> Self {
        Self {
            local_rank,
            encoder: Encoder::new(),
            partial: None,
            suspended: None,
            counted: false,
            broken: false,
        }
    }

    /// Whether an offer's data is written or suspended here: no other
    /// data may start until it ends.
    fn data_in_progress(&self) -> bool {
        self.suspended.is_some()
            || matches!(&self.partial, Some(p) if matches!(p.what, Part::Data { .. }))
    }

    /// Counts this connection in (`true`) or out of the endpoint's
    /// blocked connections.
    fn set_blocked(&mut self, rx: &EndpointRx, blocked: bool) {
        if blocked != self.counted {
            self.counted = blocked;
            rx.count_blocked(blocked);
        }
    }

    /// Writes what it can of the partial message. Between two pieces of
    /// an offer's data it stops if `header_only_waits()` says a message
    /// without payload waits for the same peer.
    ///
    /// Context: process context, may sleep.
    fn pump(&mut self, sock: &TcpSocket, header_only_waits: impl Fn() -> bool) -> Progress {
        let Self {
            partial,
            encoder,
            local_rank,
            ..
        } = self;
        let Some(p) = partial.as_mut() else {
            return Progress::Done;
        };
        let step = |r: Result<usize>| match r {
            Ok(0) => Err(Progress::Broken),
            Ok(n) => Ok(n),
            Err(e) if e == EAGAIN => Err(Progress::Blocked),
            Err(_) => Err(Progress::Broken),
        };
        loop {
            while p.header_sent < HEADER_LEN {
                // `MSG_MORE` only when a payload follows: an empty data
                // message's header would otherwise wait in TCP for the cork
                // timer (200 ms) before leaving.
                let more = matches!(p.what, Part::Data { want, .. } if want > 0)
                    || matches!(&p.what, Part::Answer { payload, .. } if payload.len() > 0);
                match step(sock.send_bytes(&p.header[p.header_sent..], more)) {
                    Ok(n) => p.header_sent += n,
                    Err(progress) => return progress,
                }
            }
            if let Part::Answer { payload, sent } = &mut p.what {
                while *sent < payload.len() {
                    let r = match payload {
                        AnswerPayload::Empty => break,
                        AnswerPayload::Lock(b) => sock.send_bytes(&b[*sent..], false),
                        AnswerPayload::Get { pages, at, len } => {
                            pages.send_on(sock, *at + *sent, *len - *sent, None)
                        }
                    };
                    match step(r) {
                        Ok(n) => *sent += n,
                        Err(progress) => return progress,
                    }
                }
            }
            let Part::Data {
                offer,
                token,
                buf,
                want,
                sent,
                piece_end,
                zc,
            } = &mut p.what
            else {
                return Progress::Done;
            };
            while *sent < *piece_end {
                match step(buf.send_on(sock, *sent, *piece_end - *sent, zc.as_ref())) {
                    Ok(n) => *sent += n,
                    Err(progress) => return progress,
                }
            }
            if *sent >= *want {
                return Progress::Done;
            }
            // A piece ended and more follow.
            if header_only_waits() {
                return Progress::Yield;
            }
            let (header, len) = piece_header(encoder, *local_rank, *token, *offer, *want - *sent);
            p.header = header;
            p.header_sent = 0;
            *piece_end = *sent + len;
        }
    }

    /// Ends whatever is half-written, for teardown: its receive or offer
    /// ends with an error.
    ///
    /// Context: process context, may sleep (unpins).
    pub(crate) fn abandon(&mut self, rx: &Arc<EndpointRx>) {
        self.broken = true;
        self.set_blocked(rx, false);
        if let Some(p) = self.partial.take() {
            end_part(rx, p.what, false);
        }
        if let Some(p) = self.suspended.take() {
            end_part(rx, p.what, false);
        }
    }
}

/// One pass of the send work: resumes half-written messages, then starts
/// every queued message whose connection is free.
///
/// Context: process context (the endpoint's send work), may sleep; the
/// caller holds the list of control connections, sorted by rank.
pub(crate) fn send_pass(rx: &Arc<EndpointRx>, controls: &[Arc<Conn>]) {
    visit_waiting(rx, controls, |conn, tx| {
        if tx.partial.is_some() {
            advance(rx, conn, tx);
        }
    });
    // Clear-to-send and credit start before any data: the peer's data
    // waits for them, and each is one header.
    start_queued(rx, controls, false);
    // Data stopped between two pieces for them goes on before new data.
    visit_waiting(rx, controls, |conn, tx| {
        if tx.partial.is_none() {
            if let Some(p) = tx.suspended.take() {
                tx.partial = Some(p);
                advance(rx, conn, tx);
            }
        }
    });
    let self_rank = start_queued(rx, controls, true);
    send_answers(rx, controls, self_rank);
}

/// Calls `go` on every control connection that has not failed, ending
/// what a failed one holds; only while some connection waits (for room,
/// or between two pieces), so that an endpoint with many idle connections
/// does not visit them all for every message.
///
/// Context: as [`send_pass`].
fn visit_waiting(
    rx: &Arc<EndpointRx>,
    controls: &[Arc<Conn>],
    mut go: impl FnMut(&Conn, &mut ConnTx),
) {
    if !rx.any_blocked() {
        return;
    }
    for conn in controls {
        let mut tx = conn.tx().lock();
        if conn.has_failed() {
            tx.abandon(rx);
        } else {
            go(conn, &mut tx);
        }
    }
}

/// Starts every queued message of one kind (`data`: offers' data, or else
/// clear-to-send and credit) whose connection is free; returns this
/// process's own rank, if it has a connection to itself.
///
/// Context: as [`send_pass`].
fn start_queued(rx: &Arc<EndpointRx>, controls: &[Arc<Conn>], data: bool) -> Option<u32> {
    let (n, self_rank) = rx
        .with_recv(|_, st, _| Ok((st.tx.len(), st.self_rank)))
        .unwrap_or((0, None));
    for _ in 0..n {
        let Ok(Some(item)) = rx.with_recv(|_, st, _| Ok(st.tx.pop_first(|o| o.is_data() == data)))
        else {
            break;
        };
        if let Outgoing::Cts {
            rank,
            token,
            want,
            offer,
        } = item
        {
            if Some(rank) == self_rank {
                local_transfer(rx, rank, token, want, offer);
                continue;
            }
        }
        let conn = controls
            .binary_search_by_key(&item.rank(), |c| c.rank())
            .ok()
            .map(|i| &controls[i]);
        let Some(conn) = conn else {
            // No control connection to that rank (any more).
            drop_item(rx, item);
            continue;
        };
        let mut tx = conn.tx().lock();
        if tx.broken || conn.has_failed() {
            drop_item(rx, item);
            continue;
        }
        if tx.partial.is_some() || (data && tx.data_in_progress()) {
            // Behind a half-written message, or new data behind data
            // between two pieces: next pass.
            let _ = rx.with_recv(|_, st, _| Ok(st.tx.push(item)));
            continue;
        }
        let local = tx.local_rank;
        let partial = match item {
            Outgoing::Cts {
                token, want, offer, ..
            } => Partial {
                header: tx.encoder.encode_ref(
                    Kind::Cts,
                    Header::token_envelope(local, token),
                    want,
                    offer,
                ),
                header_sent: 0,
                what: Part::Cts(token),
            },
            Outgoing::Credit { rank } => {
                let credit = rx
                    .with_recv(|_, st, _| Ok(st.credit.as_mut().map(|b| b.take_owed(rank))))
                    .ok()
                    .flatten()
                    .unwrap_or_default();
                if credit.msgs == 0 && credit.bytes == 0 {
                    continue;
                }
                Partial {
                    header: tx.encoder.encode_ref(
                        Kind::Credit,
                        Header::token_envelope(local, 0),
                        credit.bytes,
                        credit.msgs,
                    ),
                    header_sent: 0,
                    what: Part::Credit,
                }
            }
            Outgoing::Data { offer, .. } => {
                let Ok(Some(c)) = rx.with_recv(|_, st, _| Ok(st.offers.start(offer))) else {
                    // Ended meanwhile (its connection failed).
                    continue;
                };
                let want = (c.want as usize).min(c.buf.len());
                let zc = if want > 0 && zerocopy::wanted(conn.sock(), want) {
                    ZcSend::new(rx.zc_hub(), conn.rank(), offer)
                } else {
                    None
                };
                trace(Step::DataStart, conn.rank(), want as u64, offer.into());
                let (header, len) = piece_header(&mut tx.encoder, local, c.token, offer, want);
                Partial {
                    header,
                    header_sent: 0,
                    what: Part::Data {
                        offer,
                        token: c.token,
                        buf: c.buf,
                        want,
                        sent: 0,
                        piece_end: len,
                        zc,
                    },
                }
            }
        };
        tx.partial = Some(partial);
        advance(rx, conn, &mut tx);
    }
    self_rank
}

/// Writes the answers its windows owe, each on its origin's control
/// connection when that connection is free (a busy one keeps its answer
/// due for a later pass, which its `sk_write_space` kicks); an answer to
/// this process itself is placed in its receive at once.
///
/// Context: process context (the send work), may sleep; takes the window
/// lock and the rx lock briefly, never together and never across a send.
fn send_answers(rx: &Arc<EndpointRx>, controls: &[Arc<Conn>], self_rank: Option<u32>) {
    let find = |rank: u32| {
        controls
            .binary_search_by_key(&rank, |c| c.rank())
            .ok()
            .map(|i| &controls[i])
    };
    // Origins whose connection is busy this pass (bounded: past it, the
    // rest waits for the next pass).
    let mut busy = [u32::MAX; 32];
    let mut n_busy = 0;
    loop {
        let skipped = &busy[..n_busy];
        let Some(due) = rx.with_windows(|t| t.take_answer(|r| skipped.contains(&r))) else {
            return;
        };
        if Some(due.rank) == self_rank {
            local_answer(rx, &due);
            continue;
        }
        // No control connection to that rank (any more), or a broken one:
        // the origin is gone, and waits no more.
        let Some(conn) = find(due.rank) else {
            continue;
        };
        let mut tx = conn.tx().lock();
        if tx.broken || conn.has_failed() {
            continue;
        }
        if tx.partial.is_some() {
            // Behind a half-written message: a later pass.
            drop(tx);
            rx.with_windows(|t| t.restore(&due));
            if n_busy == busy.len() {
                return;
            }
            busy[n_busy] = due.rank;
            n_busy += 1;
            continue;
        }
        let envelope = Envelope {
            source: tx.local_rank,
            ..due.envelope
        };
        let payload = AnswerPayload::of(&due.reply);
        let header = tx
            .encoder
            .encode(Kind::Answer, envelope, payload.len() as u64);
        tx.partial = Some(Partial {
            header,
            header_sent: 0,
            what: Part::Answer { payload, sent: 0 },
        });
        drop(due);
        advance(rx, conn, &mut tx);
    }
}

/// An answer from this process's window to itself: placed in the receive
/// it posted for it, as its control connection would have.
///
/// Context: process context (the send work), may sleep; takes the rx
/// lock briefly, never across the copy.
fn local_answer(rx: &Arc<EndpointRx>, due: &DueAnswer) {
    let payload = AnswerPayload::of(&due.reply);
    let n = payload.len();
    let envelope = Envelope {
        source: due.rank,
        ..due.envelope
    };
    let lent = rx
        .with_recv(|_, st, _| {
            // No receive posted: the process asked before posting, and
            // only it waits for this answer.
            let Ok(dest) = st.rx.on_answer(envelope, n as u64) else {
                return Ok(None);
            };
            let handle = match &dest {
                Dest::Direct { handle } | Dest::Data { handle, .. } => *handle,
                Dest::Stored(_) => u64::MAX,
            };
            match st.book.lend(handle) {
                Some(recv) => Ok(Some((dest, handle, recv))),
                None => {
                    st.rx.drop_dest(dest, |_| {});
                    Ok(None)
                }
            }
        })
        .ok()
        .flatten();
    let Some((dest, handle, recv)) = lent else {
        return;
    };
    let copied = payload.copy_into(&recv.buf);
    finish_local(rx, dest, handle, recv, envelope, n as u64, copied.map(drop));
}

/// Copies `n` bytes of `from` at `at` into the start of `into`, yielding
/// between pages; how many were copied.
///
/// Context: process context, no spinlock held, may sleep.
fn copy_pages(from: &PinnedBuf, at: usize, into: &PinnedBuf, n: usize) -> Result<usize> {
    into.copy_in(0, n, |dst, done, chunk| {
        from.read(at + done, chunk, |src, d2, c2| {
            // SAFETY: `src` and `dst` are mapped for these lengths by the
            // page walkers. They may be the same memory (a process may
            // send a buffer to a receive into itself, or get from its own
            // window), so `copy`.
            unsafe { core::ptr::copy(src, dst.add(d2), c2) };
            Ok(())
        })?;
        // SAFETY: Process context, no spinlock held (caller).
        unsafe { crate::shim::o2g_cond_resched() };
        Ok(())
    })
}

/// Ends a receive this process filled itself (`local_transfer`,
/// `local_answer`) with `len` bytes of a message with `envelope`, and
/// what the copy returned; unpins it if it did not complete.
///
/// Context: process context (the send work); takes the rx lock briefly.
fn finish_local(
    rx: &Arc<EndpointRx>,
    dest: Dest,
    handle: u64,
    recv: PostedRecv,
    envelope: Envelope,
    len: u64,
    copied: Result,
) {
    let left = rx.with_recv(|shared, st, _| {
        // A direct receive's end is always `Completed`; anything else
        // leaves the receive to be dropped (unpinned) below, outside the
        // lock.
        let OnEnd::Completed { envelope, len, .. } = st.rx.on_end(dest, envelope, len) else {
            return Ok(Some(recv));
        };
        let status = match copied {
            Err(e) => e.to_errno(),
            Ok(()) if len > recv.buf.len() as u64 => errno::emsgsize().to_errno(),
            Ok(()) => 0,
        };
        st.book.free_handle(handle);
        st.book.complete(shared, recv, envelope, len, status);
        Ok(None)
    });
    drop(left);
    rx.notify();
    rx.schedule_reclaim();
}

/// A rendezvous of this process with itself: copies `want` bytes of the
/// offer into the receive waiting under `token`, as the data message would
/// have, and ends both.
///
/// Context: process context (the send work), may sleep; takes the rx lock
/// briefly, never across the copy.
fn local_transfer(rx: &Arc<EndpointRx>, rank: u32, token: u64, want: u64, offer: u32) {
    let started = rx
        .with_recv(|_, st, _| {
            // The offer and the request are this process's own; a request
            // naming no offer of its own only fails its own receive.
            if st.offers.clear(rank, offer, token, want).is_err() {
                return Ok(None);
            }
            let Some(c) = st.offers.start(offer) else {
                return Ok(None);
            };
            let Ok(dest) = st.rx.on_data(rank, token, want) else {
                return Ok(Some((c, None)));
            };
            let handle = match &dest {
                Dest::Data { handle, .. } | Dest::Direct { handle } => *handle,
                Dest::Stored(_) => u64::MAX,
            };
            match st.book.lend(handle) {
                Some(recv) => Ok(Some((c, Some((dest, handle, recv))))),
                // Cannot happen: the receive waited in the table.
                None => {
                    st.rx.drop_dest(dest, |_| {});
                    Ok(Some((c, None)))
                }
            }
        })
        .ok()
        .flatten();
    let Some((c, to)) = started else {
        fail_waiting(rx, token);
        return;
    };
    let Some((dest, handle, recv)) = to else {
        end_offer(rx, offer, Some(c.buf), 0, false);
        fail_waiting(rx, token);
        return;
    };
    let copied = copy_pages(&c.buf, 0, &recv.buf, want as usize);
    let sent = copied.as_ref().map_or(0, |n| *n as u64);
    finish_local(
        rx,
        dest,
        handle,
        recv,
        Envelope::default(),
        want,
        copied.map(drop),
    );
    end_offer(rx, offer, Some(c.buf), sent, true);
}

/// Writes what it can of `conn`'s partial message and ends it if done
/// or broken.
fn advance(rx: &Arc<EndpointRx>, conn: &Conn, tx: &mut ConnTx) {
    let rank = conn.rank();
    let progress = tx.pump(conn.sock(), || {
        rx.with_recv(|_, st, _| Ok(st.tx.header_only_for(rank)))
            .unwrap_or(false)
    });
    // `sendmsg` told RFS that this CPU reads the socket; it does not.
    conn.restore_steering();
    match progress {
        Progress::Blocked => tx.set_blocked(rx, true),
        Progress::Yield => {
            // Counted like a blocked connection, so that the next pass
            // visits it once the waiting header went; kicked, as this
            // pass may be past its headers already.
            tx.suspended = tx.partial.take();
            tx.set_blocked(rx, true);
            rx.schedule_send();
        }
        Progress::Done => {
            // Data suspended for this message keeps the connection counted.
            let suspended = tx.suspended.is_some();
            tx.set_blocked(rx, suspended);
            if let Some(p) = tx.partial.take() {
                match &p.what {
                    Part::Cts(token) => trace(Step::CtsSent, conn.rank(), 0, *token),
                    Part::Data { offer, sent, .. } => {
                        trace(Step::DataEnd, conn.rank(), *sent as u64, (*offer).into())
                    }
                    _ => {}
                }
                end_part(rx, p.what, true);
            }
        }
        Progress::Broken => tx.abandon(rx),
    }
}

/// A message that will not be written: its receive or offer ends with
/// an error.
fn drop_item(rx: &Arc<EndpointRx>, item: Outgoing) {
    match item {
        Outgoing::Cts { token, .. } => fail_waiting(rx, token),
        Outgoing::Data { offer, .. } => end_offer(rx, offer, None, 0, false),
        // Kept until a control connection to `rank` is registered
        // (`DataPath::requeue_credit`); a peer whose connection failed
        // needs none.
        Outgoing::Credit { rank } => rx.with(|st| {
            if let Some(b) = st.recv.as_mut().and_then(|r| r.credit.as_mut()) {
                b.unqueue(rank);
            }
        }),
    }
}

/// Ends a written (`ok`) or abandoned message.
fn end_part(rx: &Arc<EndpointRx>, what: Part, ok: bool) {
    match what {
        // A written `Cts` needs nothing more: its data will come.
        Part::Cts(_) if ok => rx.with(|st| st.counters.cts_sent += 1),
        // Not written: the origin's connection broke, it waits no more.
        Part::Answer { .. } => {}
        Part::Cts(token) => fail_waiting(rx, token),
        Part::Credit if ok => rx.with(|st| st.counters.credits_sent += 1),
        // The connection broke: its peer is gone.
        Part::Credit => {}
        Part::Data {
            offer,
            buf,
            sent,
            zc: None,
            ..
        } => end_offer(rx, offer, Some(buf), sent as u64, ok),
        // Unpinned now; written in full, the offer ends when TCP is done
        // with the pages, unless its connection fails first.
        Part::Data {
            offer,
            buf,
            sent,
            zc: Some(zc),
            ..
        } => {
            unpin(rx, [Some(buf), None]);
            let acking = ok
                && matches!(
                    rx.with_recv(|_, st, _| Ok(st.offers.acking(offer))),
                    Ok(true)
                );
            if acking {
                zc.finish(sent as u64);
            } else {
                // Dropping `zc` without `finish`: its completion ends nothing.
                end_offer(rx, offer, None, sent as u64, false);
            }
        }
    }
}

/// The receive waiting under `token` will not get its data.
fn fail_waiting(rx: &Arc<EndpointRx>, token: u64) {
    let _ = rx.with_recv(|shared, st, _| {
        if let Some(f) = st.rx.abandon(token) {
            if let Some(recv) = st.book.take(f.handle) {
                st.book.complete(
                    shared,
                    recv,
                    f.envelope,
                    f.len,
                    errno::econnreset().to_errno(),
                );
            }
        }
        Ok(())
    });
    rx.notify();
    rx.schedule_reclaim();
}

/// Ends offer `offer` with its `SENT` record (`sent` bytes went out) and
/// unpins its buffer (`buf`, or the one still in the table).
///
/// Context: process context, may sleep.
fn end_offer(rx: &EndpointRx, offer: u32, buf: Option<PinnedBuf>, sent: u64, ok: bool) {
    let ended = rx
        .with_recv(|shared, st, c| {
            let Some((ended, failed)) = st.offers.finish(offer) else {
                return Ok(None);
            };
            let status = if ok && !failed {
                0
            } else {
                errno::econnreset().to_errno()
            };
            publish_sent(shared, ended.user_data, sent, status);
            if status == 0 {
                c.offers_sent += 1;
                c.offer_bytes_sent += sent;
            }
            Ok(Some(ended))
        })
        .ok()
        .flatten();
    unpin(rx, [buf, ended.and_then(|e| e.buf)]);
    rx.notify();
}

/// Unpins offer buffers and returns their bytes to the pin budget.
///
/// Context: process context, may sleep; takes the rx lock briefly.
fn unpin(rx: &EndpointRx, bufs: [Option<PinnedBuf>; 2]) {
    let mut unpinned = 0;
    for b in bufs.into_iter().flatten() {
        unpinned += b.len() as u64;
        drop(b);
    }
    let _ = rx.with_recv(|_, st, _| {
        st.book.pinned = st.book.pinned.saturating_sub(unpinned);
        Ok(())
    });
}

/// Ends offer `offer` to `rank`, all `sent` bytes of which went without a
/// copy, once TCP freed every skb holding its pages (`zerocopy.rs`), unless
/// its connection failed first and ended it. Its buffer was unpinned when
/// the last byte was queued.
///
/// Context: softirq or process context, must not sleep; takes the rx
/// lock.
pub(crate) fn end_acked_offer(rx: &EndpointRx, rank: u32, offer: u32, sent: u64) {
    let _ = rx.with_recv(|shared, st, c| {
        if let Some(ended) = st.offers.finish_acked(offer) {
            publish_sent(shared, ended.user_data, sent, 0);
            c.offers_sent += 1;
            c.offer_bytes_sent += sent;
            // The send work held the buffer: `ended.buf` is `None`.
            if let Some(b) = ended.buf {
                st.book.retire(b);
            }
        }
        Ok(())
    });
    trace(Step::DataAcked, rank, sent, offer.into());
    rx.notify();
}

/// Publishes an offer's `SENT` record.
///
/// Context: any; rx lock held (one producer).
pub(crate) fn publish_sent(
    shared: &crate::shared::SharedArea,
    user_data: u64,
    len: u64,
    status: i32,
) {
    shared.push(&abi::Completion {
        kind: abi::record_kind::SENT,
        user_data,
        len,
        status,
        ..Default::default()
    });
}
