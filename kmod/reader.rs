// SPDX-License-Identifier: GPL-2.0

//! One connection's reader: TCP bytes to matched receives and stored
//! unexpected messages, inside the protocol handler.
//!
//! `tcp_read_sock()` hands the actor pieces of socket buffers. Header bytes
//! (at most 32 per message) are copied to the stack and fed to the pure
//! reassembler; payload bytes are copied once, with `skb_copy_bits()`,
//! straight into their destination: the pinned pages of a receive posted
//! before the header arrived, or a region of the dump area. There is no
//! staging copy.
//!
//! A header that matches no posted receive and finds no room (dump area or
//! unexpected queue full) *stalls* the connection: the actor stops
//! consuming, the bytes stay in TCP and flow control holds the sender back.
//! Before stalling, the reader applies the messages the process gave back
//! through the release ring; it then publishes the stall and looks at that
//! ring once more, so that a give-back racing with the stall is never missed
//! (the process, having given back, sees the stall and calls SYNC). A later
//! FREE, POST or SYNC kicks the connection's work item, which retries the
//! decision (a receive posted meanwhile takes the message directly, however
//! large) and reads on.
//!
//! Unmatched payloads become visible to receives only when complete: the
//! engine learns of them at the message end. A receive posted while one
//! streams in is queued and takes the message then, so a post and an arrival
//! racing for one message resolve exactly once, under the rx lock; the copy
//! from the dump area into that receive happens after the lock is dropped,
//! and for messages over 128 KiB in the endpoint's work item, in process
//! context, so that one softirq call never copies more than that.
//!
//! A messages connection also carries requests to send: one that matches
//! a posted receive queues its clear-to-send for the send work (`tx.rs`)
//! at once, here in the protocol handler; one that does not is stored as
//! an envelope and announced. A control connection carries what answers
//! them: a clear-to-send, checked against the endpoint's offers (the
//! offer's data is then queued for the send work), and rendezvous data,
//! copied straight into its receive's pinned pages like a matched eager
//! message. A peer that breaks these rules fails its connection.
//!
//! A messages connection also carries puts for the endpoint's memory
//! windows (`window.rs`): the window is looked up at the put's header and
//! each payload piece is copied straight into its pinned pages, like a
//! matched eager message's, with no decision of the machine and no
//! credit (a put is never stored). A refused put's bytes are dropped.
//! A window's lock requests are acted on at their header; the send work
//! writes their answers, which the origin's control connection places in
//! the receive posted for them like rendezvous data.
//!
//! On an endpoint with eager credit, a messages connection's peer may
//! leave at most a window of eager messages stored (the machine checks
//! each header against it and fails a peer that goes beyond); at each
//! decision the reader adds what that peer's ring of the dump area
//! reclaimed to its credit and queues what is due for the send work
//! (`credit.rs`).
//!
//! Every decision (where a header's payload goes, whether to stall, what a
//! message's end completes, what a failure fails) is made by o2g-core's
//! receive state machine: this connection's `Inbound` and the endpoint's
//! `Receiver`. This file only moves bytes where they say and keeps the
//! pinned buffers and the ring.
//!
//! Locks: the caller holds the socket (softirq spinlock or ownership), the
//! callback read lock and this reader's lock; the endpoint's rx lock is
//! taken inside, briefly, for each decision, and its window lock for each
//! piece of a put (never both).

use core::ffi::{c_int, c_uint, c_void};

use kernel::{bindings, prelude::*};

use crate::abi::socket_state;
use crate::conn::{Conn, Role};
use crate::data_path::{DataPath, DeferredCopy, PostedRecv};
use crate::flow_steering;
use crate::proto::{
    credit::Window,
    receive::{
        Control, Decision, Dest, Failed, Failure, Inbound, InboundStats, Next, OnEnd, Place,
    },
    wire::{Kind, Limits, HEADER_LEN},
};
use crate::sock::errno;
use crate::trace::{trace, Step};
use crate::tx::Outgoing;
use crate::window::Target;

/// The reader state of one connection, under its own BH-safe lock.
pub(crate) struct ConnReader {
    inbound: Inbound,
    /// A messages connection whose peer has eager credit: the reader
    /// gives credit back (see `credit.rs`).
    credited: bool,
    /// The receive being filled straight from the socket, with its handle
    /// (still the machine's name for it; see `RecvBuffers::lend`).
    filling: Option<(u64, PostedRecv)>,
    /// The receive that rendezvous data fills piece by piece, between two
    /// pieces (`Kind::DataPart`), with its handle: lent out of the table
    /// until its last piece ends.
    pieces: Option<(u64, PostedRecv)>,
    /// The put being read: where it goes, and its length.
    placing: Option<(Target, u64)>,
    /// Whether a decision or a message end of the current `read` gave
    /// back credit already (each takes the rx lock and does).
    settled: bool,
    /// A message its sender may have sent without a copy ended in this
    /// `read`: acknowledge at once (`zerocopy::ack_at_once`).
    ack_now: bool,
}

/// Copies `n` bytes from the current socket buffer, `at` bytes past the
/// actor's offset, to `dst`.
type Source<'a> = &'a dyn Fn(usize, *mut u8, usize) -> Result;

impl ConnReader {
    /// A reader for a fresh `role` connection from `rank` accepting
    /// messages up to `max_message` bytes. A messages connection takes
    /// requests to send, and eager messages within `window` of credit,
    /// or, on an endpoint without credit (`window` is `None`), eager
    /// messages of any length that stall it when they find no room.
    pub(crate) fn new(rank: u32, role: Role, max_message: u64, window: Option<Window>) -> Self {
        let limits = Limits {
            max_payload: max_message,
        };
        let (inbound, credited) = match (role, window) {
            (Role::Messages, Some(w)) => (Inbound::messages(rank, limits, w).with_windows(), true),
            (Role::Messages, None) => (Inbound::uncredited(rank, limits).with_windows(), false),
            (Role::Control | Role::ControlIn, _) => (Inbound::control(rank, limits), false),
        };
        Self {
            inbound,
            credited,
            filling: None,
            pieces: None,
            placing: None,
            settled: false,
            ack_now: false,
        }
    }

    /// The state `O2G_IOC_LIST` reports.
    pub(crate) fn state(&self) -> u32 {
        if self.inbound.failure().is_some() {
            socket_state::FAILED
        } else if self.inbound.is_stalled() {
            socket_state::STALLED
        } else {
            socket_state::ACTIVE
        }
    }

    /// This connection's counters.
    pub(crate) fn stats(&self) -> InboundStats {
        self.inbound.stats()
    }

    /// Reads what the socket holds, then notices a peer that closed.
    ///
    /// # Safety
    ///
    /// `sk` is `conn`'s socket and the caller may read it: softirq with the
    /// socket spinlock held and no owner, or process context owning it.
    pub(crate) unsafe fn read(&mut self, conn: &Conn, sk: *mut bindings::sock) {
        // Retry a stalled decision and finish an empty message first: the
        // actor only runs when bytes are queued.
        let none: Source<'_> = &|_, _, _| Err(EINVAL);
        self.settled = false;
        self.consume(conn, none, 0);
        if self.inbound.is_stalled() {
            self.settle_credit(conn);
            return;
        }
        let mut ctx = ReadCtx {
            conn,
            rx: self,
            stopped_short: false,
        };
        let mut desc = bindings::read_descriptor_t {
            written: 0,
            count: 1,
            arg: bindings::read_descriptor_t__bindgen_ty_1 {
                data: (&raw mut ctx).cast::<c_void>(),
            },
            error: 0,
        };
        // SAFETY: The caller may read `sk`; `desc.arg` points at `ctx`,
        // which outlives the call, and `actor` expects exactly that.
        unsafe { crate::shim::tcp_read_sock(sk, &mut desc, Some(actor)) };
        let stopped_short = ctx.stopped_short;
        if core::mem::take(&mut self.ack_now) && !conn.sock().via_loopback() {
            // SAFETY: `sk` is valid and its owner lock or spinlock is held
            // (caller), as sending an acknowledgement requires.
            unsafe { crate::shim::o2g_tcp_ack_now(sk) };
        }
        // SAFETY: `sk` is valid and may be read (caller).
        if unsafe { crate::shim::o2g_tcp_urgent_pending(sk) } {
            // Everything before the urgent mark was read above.
            self.fail(conn, Failure::Urgent);
            return;
        }
        // SAFETY: `sk` is valid (caller).
        if !stopped_short && unsafe { crate::shim::o2g_sk_rcv_shutdown(sk) } {
            let idle = self.inbound.at_boundary();
            self.fail(
                conn,
                if idle {
                    Failure::Closed
                } else {
                    Failure::Truncated
                },
            );
        }
        self.settle_credit(conn);
    }

    /// Gives back the credit of what the process took from the store
    /// since the last decision (which would otherwise wait for this
    /// connection's next message), and sends the first window; unless a
    /// decision of this read did so already.
    fn settle_credit(&mut self, conn: &Conn) {
        if !self.credited || self.settled {
            return;
        }
        let inbound = &mut self.inbound;
        let send = conn
            .rx()
            .with_recv(|_, st, c| Ok(st.settle_credit(inbound, conn.rank(), c)));
        if send == Ok(true) {
            conn.schedule_send();
        }
    }

    /// Consumes up to `len` bytes from `src`; returns how many. Fewer means
    /// the connection stalled (or the source failed, which fails it).
    fn consume(&mut self, conn: &Conn, src: Source<'_>, len: usize) -> usize {
        let mut pos = 0;
        loop {
            match self.inbound.next(len - pos) {
                // Bytes after a failure are dropped.
                Next::Failed => return len,
                Next::NeedInput => return pos,
                Next::Decide | Next::Stalled => match self.decide(conn) {
                    Decided::Go => {}
                    Decided::Wait => return pos,
                    Decided::Fail(why) => {
                        self.fail(conn, why);
                        return len;
                    }
                },
                Next::End => self.finish(conn),
                Next::Control(c) => {
                    if let Err(why) = self.control(conn, c) {
                        self.fail(conn, why);
                        return len;
                    }
                }
                Next::Payload { to, offset, len: n } => {
                    if self.copy(conn, src, pos, to, offset, n).is_err() {
                        self.fail(conn, Failure::Truncated);
                        return len;
                    }
                    pos += n;
                }
                Next::Header { max } => {
                    let mut buf = [0u8; HEADER_LEN];
                    let k = max.min(HEADER_LEN);
                    if src(pos, buf.as_mut_ptr(), k).is_err() {
                        self.fail(conn, Failure::Truncated);
                        return len;
                    }
                    match self.inbound.feed_header(&buf[..k]) {
                        Ok(used) => {
                            pos += used;
                            // Header-only frames (clear-to-send, credit) are
                            // current here too, with no payload left.
                            if let Some((h, 0)) = self.inbound.current() {
                                if flow_steering::ends_steering(conn.role(), h.kind, h.len) {
                                    conn.end_steering();
                                }
                            }
                            if let Err(why) = self.at_window_header(conn) {
                                self.fail(conn, why);
                                return len;
                            }
                        }
                        Err(why) => {
                            self.fail(conn, why);
                            return len;
                        }
                    }
                }
            }
        }
    }

    /// A window message's header just arrived: finds where a put's
    /// payload goes, or acts on a lock request (whose answer the send
    /// work writes). A bad request fails the connection.
    fn at_window_header(&mut self, conn: &Conn) -> core::result::Result<(), Failure> {
        if self.placing.is_some() {
            return Ok(());
        }
        let Some((h, 0)) = self.inbound.current() else {
            return Ok(());
        };
        let rank = conn.rank();
        match h.kind {
            Kind::Put => {
                let target = conn.rx().with_windows(|t| {
                    t.target(
                        rank,
                        h.envelope.context,
                        h.window_offset(),
                        h.len,
                        h.reference,
                    )
                });
                self.placing = Some((target, h.len));
            }
            Kind::Lock | Kind::Get => {
                let (context, tag) = (h.envelope.context, h.reference);
                let due = conn.rx().with_windows(|t| match h.kind {
                    Kind::Get => t.get(rank, context, h.window_offset(), h.len, tag),
                    _ => t.request(rank, context, h.envelope.tag, tag, h.len),
                })?;
                if due {
                    conn.schedule_send();
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Asks the machine where the pending header's payload goes, or
    /// what a request to send or rendezvous data means.
    ///
    /// Before stalling, the reader applies the messages the process gave
    /// back through the release ring; it then publishes the stall and looks
    /// at that ring once more, so that a give-back racing with the stall is
    /// never missed (the process, having given back, sees the stall and
    /// calls SYNC). A request that matched a posted receive queues its
    /// clear-to-send for the send work; one that did not is announced.
    fn decide(&mut self, conn: &Conn) -> Decided {
        let was_stalled = self.inbound.is_stalled();
        let rank = conn.rank();
        let current = self.inbound.current().map(|(h, _)| h);
        let Self {
            inbound,
            filling,
            pieces,
            credited,
            settled,
            ..
        } = self;
        let waits = |d: &core::result::Result<Decision, Failure>| matches!(d, Ok(Decision::Wait));
        let mut send = false;
        let decided = conn.rx().with_recv(|shared, st, c| {
            let mut d = inbound.decide(&mut st.rx);
            if *credited {
                send |= st.settle_credit(inbound, rank, c);
                *settled = true;
            }
            if waits(&d) && st.apply_releases(shared) > 0 {
                d = inbound.decide(&mut st.rx);
            }
            if waits(&d) && !was_stalled {
                st.stall(shared, rank);
                if st.apply_releases(shared) > 0 {
                    d = inbound.decide(&mut st.rx);
                }
                if !waits(&d) {
                    st.unstall(shared, rank);
                }
            } else if !waits(&d) && was_stalled {
                st.unstall(shared, rank);
            }
            match d {
                Ok(Decision::Clear(clear)) => {
                    if let Some(h) = current {
                        trace(Step::RtsMatched, rank, h.len, h.reference.into());
                    }
                    send |= st.clear_to_send(shared, clear)
                }
                Ok(Decision::Stored { .. }) => {
                    if let Some(h) = current {
                        trace(Step::RtsStored, rank, h.len, h.reference.into());
                        st.announce_request(shared, c, h.envelope, h.len);
                    }
                }
                _ => {}
            }
            if let Some(Dest::Direct { handle } | Dest::Data { handle, .. }) = inbound.dest() {
                let handle = *handle;
                *filling = if pieces.as_ref().is_some_and(|(h, _)| *h == handle) {
                    pieces.take()
                } else {
                    st.book.lend(handle).map(|recv| (handle, recv))
                };
            }
            Ok(d)
        });
        if send {
            conn.schedule_send();
        }
        match decided {
            Ok(Ok(Decision::Wait)) => Decided::Wait,
            Ok(Ok(_)) => Decided::Go,
            Ok(Err(why)) => Decided::Fail(why),
            // Not initialised: cannot happen for a registered connection.
            Err(_) => Decided::Wait,
        }
    }

    /// A clear-to-send or credit for this end's sending side arrived on
    /// a control connection: a `Cts` queues its offer's data for the send
    /// work; credit waits for the process to take it (an endpoint
    /// without credit only counts it).
    fn control(&mut self, conn: &Conn, c: Control) -> core::result::Result<(), Failure> {
        let rank = conn.rank();
        let (token, want, offer) = match c {
            Control::Cts { token, want, offer } => {
                trace(Step::CtsReceived, rank, want, offer.into());
                (token, want, offer)
            }
            Control::Credit(credit) => {
                let _ = conn.rx().with_recv(|_, st, c| {
                    c.credits_received += 1;
                    if let Some(book) = st.credit.as_mut() {
                        book.grant(rank, credit);
                    }
                    Ok(())
                });
                return Ok(());
            }
        };
        conn.rx()
            .with_recv(|_, st, _| {
                Ok(st.offers.clear(rank, offer, token, want).map(|()| {
                    // Room for every offer is kept (see `TxQueue`).
                    let _ = st.tx.push(Outgoing::Data { rank, offer });
                }))
            })
            .unwrap_or(Ok(()))?;
        conn.schedule_send();
        Ok(())
    }

    /// Copies payload bytes `off..off + n` of the current message from
    /// `src` (at `pos`) to `to`.
    fn copy(
        &self,
        conn: &Conn,
        src: Source<'_>,
        pos: usize,
        to: Place,
        off: u64,
        n: usize,
    ) -> Result {
        let off = usize::try_from(off).map_err(|_| EINVAL)?;
        let fill = |dst: *mut u8, done: usize, chunk: usize| src(pos + done, dst, chunk);
        match to {
            // Past the buffer's end the bytes are dropped: truncation.
            Place::Recv { .. } => match &self.filling {
                Some((_, recv)) => recv.buf.copy_in(off, n, fill).map(|_| ()),
                None => Ok(()),
            },
            Place::Store { at } => {
                let at = usize::try_from(at).map_err(|_| EINVAL)?;
                conn.rx().shared().ok_or(EINVAL)?.dump_in(at + off, n, fill)
            }
            // A refused put's bytes are dropped.
            Place::Window { .. } => match self.placing {
                Some((Target::Place { id, at }, _)) => {
                    // `target` checked that the whole put fits.
                    let at = usize::try_from(at).map_err(|_| EINVAL)?;
                    conn.rx().with_windows(|t| t.copy_in(id, at + off, n, fill))
                }
                _ => Ok(()),
            },
        }
    }

    /// The current message is complete: completes its receive, or makes it
    /// visible as unexpected (or hands it to a receive posted meanwhile).
    fn finish(&mut self, conn: &Conn) {
        if let Some((target, len)) = self.placing.take() {
            conn.rx().with_windows(|t| t.count(target, len));
        }
        let filling = self.filling.take();
        // A piece of rendezvous data that more pieces follow: its receive
        // waits for them, lent out.
        let part = matches!(self.inbound.current(), Some((h, _)) if h.kind == Kind::DataPart);
        let pieces = &mut self.pieces;
        // A receive posted while its message streamed into the dump area
        // gets the message copied after the lock is dropped: a large copy
        // must not hold the rx lock, with bottom halves off, for its whole
        // length. Until then the machine counts it as owed.
        let mut copy_out = None;
        // Only a finished receive has pages to unpin: a stored message
        // must not cost a work item.
        let inbound = &mut self.inbound;
        let credited = self.credited;
        self.settled |= credited;
        let mut send = false;
        let ack_now = &mut self.ack_now;
        let retired = conn.rx().with_recv(|shared, st, c| {
            let end = inbound.finish(&mut st.rx);
            if credited {
                send = st.settle_credit(inbound, conn.rank(), c);
            }
            let Some(end) = end else {
                // A request to send ends here (it has no payload); a
                // receive being filled cannot, but between two pieces.
                let Some((handle, recv)) = filling else {
                    return Ok(false);
                };
                if part && inbound.failure().is_none() {
                    *pieces = Some((handle, recv));
                    return Ok(false);
                }
                st.book.free_handle(handle);
                st.book
                    .complete(shared, recv, Default::default(), 0, EINVAL.to_errno());
                return Ok(true);
            };
            Ok(match end {
                OnEnd::Completed {
                    handle,
                    envelope,
                    len,
                } => {
                    st.book.free_handle(handle);
                    match filling {
                        Some((_, recv)) => {
                            trace(Step::RecvEnd, conn.rank(), len, handle);
                            *ack_now |= crate::zerocopy::ack_at_once(len);
                            let status = if len > recv.buf.len() as u64 {
                                errno::emsgsize().to_errno()
                            } else {
                                0
                            };
                            st.book.complete(shared, recv, envelope, len, status);
                            true
                        }
                        None => false,
                    }
                }
                OnEnd::Stored { msg, .. } => {
                    st.book.unexpected_event = true;
                    st.announce(shared, c, msg);
                    false
                }
                OnEnd::CopyOut {
                    handle,
                    envelope,
                    len,
                    region,
                } => {
                    match st.book.take(handle) {
                        Some(recv) => {
                            copy_out = Some(DeferredCopy {
                                recv,
                                region,
                                env: envelope,
                                len,
                            })
                        }
                        None => st.rx.copied(region),
                    }
                    false
                }
            })
        });
        let mut retired = retired.unwrap_or(true);
        let mut deferred = false;
        // Beyond a bound, the copy goes to the reclaim work: the reader
        // runs in softirq or with bottom halves off.
        let copy_out = copy_out.and_then(|d| {
            if d.len <= COPY_IN_READER_MAX {
                return Some(d);
            }
            let refused = conn
                .rx()
                .with_recv(|_, st, c| {
                    let refused = st.book.defer(d).err();
                    if refused.is_none() {
                        c.deferred_copies += 1;
                    }
                    Ok(refused)
                })
                .ok()
                .flatten();
            // `None`: deferred. A refusal cannot happen (see
            // `RecvBuffers::deferred`); the copy is then done here.
            if refused.is_none() {
                deferred = true;
            }
            refused
        });
        if let Some(d) = copy_out {
            // The shared area and the receive state are installed once and
            // never removed, and `with_recv` above found them: neither the
            // lookup nor the call below can fail, so `d.recv` (whose pages
            // may only be unpinned in process context) is never dropped
            // here.
            match conn.rx().shared() {
                Some(shared) => {
                    let status = copy_stored(shared, &d.recv, d.region.at as usize, d.len, false);
                    let _ = conn.rx().with_recv(|shared, st, _| {
                        st.rx.copied(d.region);
                        st.book.complete(shared, d.recv, d.env, d.len, status);
                        Ok(())
                    });
                    retired = true;
                }
                // Unreachable (see above); leaking the pins beats sleeping
                // in atomic context.
                None => core::mem::forget(d),
            }
        }
        conn.rx().notify();
        // A deferred copy is a receive still to finish; a finished one's
        // buffer can wait for its process (`EndpointRx::unpin_retired`).
        if deferred {
            conn.schedule_reclaim();
        } else if retired {
            conn.schedule_unpin();
        }
        if send {
            conn.schedule_send();
        }
    }

    /// A messages connection ends: its origin loses the window locks it
    /// held or waited for, which may grant others theirs.
    fn forget_locks(&self, conn: &Conn) {
        if conn.role() == Role::Messages && conn.rx().with_windows(|t| t.forget(conn.rank())) {
            conn.schedule_send();
        }
    }

    /// Stops reading this connection for good: the machine fails what it
    /// was filling and every receive posted for its rank (and, if it was
    /// the last live connection, every receive for any source), which are
    /// completed with `-ECONNRESET`.
    pub(crate) fn fail(&mut self, conn: &Conn, why: Failure) {
        if self.inbound.failure().is_some() {
            return;
        }
        let was_stalled = self.inbound.is_stalled();
        let rank = conn.rank();
        let status = errno::econnreset().to_errno();
        self.placing = None;
        self.forget_locks(conn);
        let Self {
            inbound,
            filling,
            pieces,
            ..
        } = self;
        let _ = conn.rx().with_recv(|shared, st, _| {
            if was_stalled {
                st.unstall(shared, rank);
            }
            conn.mark_failed();
            let was_live = conn.leave_live();
            // Offers go out on the control connection, or, to oneself,
            // through the connection to oneself.
            if conn.role().is_control() || st.self_rank == Some(rank) {
                st.fail_offers(shared, rank, status);
            }
            let DataPath { rx, book, .. } = st;
            rx.fail(inbound, why, was_live, |f| {
                complete_failed(shared, book, [&mut *filling, &mut *pieces], f, status)
            });
            Ok(())
        });
        conn.rx().notify();
        if conn.role().is_control() {
            // A message the send work left half-written on this connection
            // waits for `sk_write_space`, which a dead connection never
            // calls: the work's next pass ends it, and its offer or receive
            // with it.
            conn.schedule_send();
        }
        conn.schedule_reclaim();
        // SAFETY: `net_ratelimit` only touches its own state.
        if !matches!(why, Failure::Closed) && unsafe { bindings::net_ratelimit() != 0 } {
            match why {
                Failure::Protocol(e) => pr_warn!("rank {rank}: {e:?}; connection failed\n"),
                Failure::WrongSource(claimed) => pr_warn!(
                    "rank {rank}: message claims to come from rank {claimed}; connection failed\n"
                ),
                Failure::Urgent => {
                    pr_warn!("rank {rank}: urgent (MSG_OOB) data; connection failed\n")
                }
                Failure::Truncated | Failure::Closed => {
                    pr_warn!("rank {rank}: peer closed mid-message; connection failed\n")
                }
                other => pr_warn!("rank {rank}: {other:?}; connection failed\n"),
            }
        }
    }

    /// The socket is being unregistered: completes the receive being
    /// filled with `-ECONNABORTED` and frees a half-stored message.
    ///
    /// Context: process context, after the hook is removed.
    pub(crate) fn abort(&mut self, conn: &Conn) {
        let stalled = self.inbound.is_stalled();
        let status = errno::econnaborted().to_errno();
        self.placing = None;
        self.forget_locks(conn);
        let Self {
            inbound,
            filling,
            pieces,
            ..
        } = self;
        let _ = conn.rx().with_recv(|shared, st, _| {
            if stalled {
                st.unstall(shared, conn.rank());
            }
            let DataPath { rx, book, .. } = st;
            rx.abort(inbound, |f| {
                complete_failed(shared, book, [&mut *filling, &mut *pieces], f, status)
            });
            Ok(())
        });
        conn.rx().notify();
        conn.schedule_reclaim();
    }
}

/// Completes a receive the machine failed with `status`: one the reader
/// holds (`lent`: the one being filled, the one filled piece by piece) or
/// one still in the table.
///
/// Context: any; rx lock held.
fn complete_failed(
    shared: &crate::shared::SharedArea,
    book: &mut crate::data_path::RecvBuffers,
    lent: [&mut Option<(u64, PostedRecv)>; 2],
    f: Failed,
    status: i32,
) {
    let held = lent
        .into_iter()
        .find(|l| l.as_ref().is_some_and(|(h, _)| *h == f.handle));
    let recv = match held {
        Some(slot) => {
            book.free_handle(f.handle);
            slot.take().map(|(_, recv)| recv)
        }
        None => book.take(f.handle),
    };
    if let Some(recv) = recv {
        book.complete(shared, recv, f.envelope, f.len, status);
    }
}

/// The largest stored message the reader copies into a receive itself
/// (32 pages); larger ones go to the reclaim work.
const COPY_IN_READER_MAX: u64 = 128 * 1024;

/// Copies a stored message into a receive posted while it streamed in;
/// returns the completion status. With `resched`, yields the CPU between
/// pages.
///
/// Context: the connection's reader (softirq, or process context with the
/// socket held; `resched` false, must not sleep), or the reclaim work
/// (process context, may sleep), without the rx lock.
pub(crate) fn copy_stored(
    shared: &crate::shared::SharedArea,
    recv: &PostedRecv,
    at: usize,
    len: u64,
    resched: bool,
) -> i32 {
    let n = (len as usize).min(recv.buf.len());
    let copied = recv.buf.copy_in(0, n, |dst, done, chunk| {
        shared.dump_out(at + done, chunk, |src, d2, c2| {
            // SAFETY: `src` and `dst` are mapped for these lengths by the
            // page walkers, and distinct memory: a dump page is module
            // memory mapped `VM_IO`, which no pinned receive page can be.
            unsafe { core::ptr::copy_nonoverlapping(src, dst.add(d2), c2) };
            Ok(())
        })?;
        if resched {
            // SAFETY: Called from process context without locks (caller).
            unsafe { crate::shim::o2g_cond_resched() };
        }
        Ok(())
    });
    match copied {
        Err(e) => e.to_errno(),
        Ok(_) if len > recv.buf.len() as u64 => errno::emsgsize().to_errno(),
        Ok(_) => 0,
    }
}

/// What the actor reaches through `read_descriptor_t::arg`.
struct ReadCtx<'a> {
    conn: &'a Conn,
    rx: &'a mut ConnReader,
    stopped_short: bool,
}

/// `tcp_read_sock()`'s actor.
///
/// Context: as [`ConnReader::read`]: softirq or process context with the socket
/// held; must not sleep.
///
/// # Safety
///
/// Called by `tcp_read_sock` with the descriptor set up in
/// [`ConnReader::read`] and a valid `skb` holding `len` bytes from `offset`.
unsafe extern "C" fn actor(
    desc: *mut bindings::read_descriptor_t,
    skb: *mut bindings::sk_buff,
    offset: c_uint,
    len: usize,
) -> c_int {
    // SAFETY: `desc.arg.data` is the `ReadCtx` that `read` passed, alive
    // and not otherwise borrowed during the call.
    let ctx = unsafe { &mut *(*desc).arg.data.cast::<ReadCtx<'_>>() };
    // After a partly used skb, tcp_read_sock calls the actor again on the
    // rest of it, and checks `count` only once a whole skb is eaten. If
    // that second call consumed, a release that raced in would end the
    // stall here, and reading would still stop after this skb: bytes left
    // in TCP, the connection active, and no kick to come (a release kicks
    // only stalled connections). So a read that stopped short stays
    // stopped: the stall stays published for the next release to kick.
    if ctx.stopped_short {
        return 0;
    }
    let len = len.min(c_int::MAX as usize);
    let src = |at: usize, dst: *mut u8, n: usize| -> Result {
        let from = (offset as usize).checked_add(at).ok_or(EINVAL)?;
        // SAFETY: `skb` is valid for the call and `dst` is writable for `n`
        // bytes (the destination walkers map exactly that much).
        let rc = unsafe { bindings::skb_copy_bits(skb, from as c_int, dst.cast(), n as c_int) };
        if rc < 0 {
            Err(Error::from_errno(rc))
        } else {
            Ok(())
        }
    };
    let used = ctx.rx.consume(ctx.conn, &src, len);
    if used < len {
        ctx.stopped_short = true;
        // SAFETY: As above; `count == 0` makes tcp_read_sock stop.
        unsafe { (*desc).count = 0 };
    }
    used as c_int
}

/// What reading does after a decision.
enum Decided {
    Go,
    /// Stalled: stop until a release.
    Wait,
    /// The peer broke the protocol.
    Fail(Failure),
}
