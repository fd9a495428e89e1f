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
//! Locks: the caller holds the socket (softirq spinlock or ownership), the
//! callback read lock and this reader's lock; the endpoint's rx lock is
//! taken inside, briefly, for each decision.

use core::ffi::{c_int, c_uint, c_void};

use kernel::{bindings, prelude::*};

use crate::abi::{self, socket_state};
use crate::conn::Conn;
use crate::proto::{
    dump::RegionId,
    envelope::Envelope,
    matching::Arrival,
    stream::{Event, Reassembler},
    wire::{Header, Limits, WireError, HEADER_LEN},
};
use crate::recv::{DeferredCopy, PostedRecv, RecvState};
use crate::rx::Counters;
use crate::sock::errno;

/// Where the current message's payload goes.
enum Dest {
    /// Between messages, or waiting for a decision.
    None,
    /// A receive posted earlier: straight into its pages.
    Direct { recv: PostedRecv },
    /// The dump area, at byte `at`, in region `region`.
    Dump { region: RegionId, at: usize },
}

/// Why a connection stops being read.
#[derive(Clone, Copy)]
pub(crate) enum Failure {
    /// The stream broke the wire rules.
    Protocol(WireError),
    /// The peer closed in the middle of a message.
    Truncated,
    /// The peer closed between messages.
    Closed,
    /// A header named another sender than the connection's rank: a peer
    /// trying to pass its messages off as another rank's.
    WrongSource(u32),
    /// The peer sent urgent data (`MSG_OOB`), which `tcp_read_sock` never
    /// reads past.
    Urgent,
}

impl Failure {
    /// Whether the peer broke the protocol (counted as a protocol error).
    fn is_protocol(self) -> bool {
        matches!(self, Self::Protocol(_) | Self::WrongSource(_) | Self::Urgent)
    }
}

/// The reader state of one connection, under its own BH-safe lock.
pub(crate) struct ConnRx {
    reasm: Reassembler,
    /// A header whose destination is not decided yet (stalled).
    pending: Option<Header>,
    dest: Dest,
    pub(crate) state: u32,
    pub(crate) rx_bytes: u64,
    pub(crate) messages: u64,
    pub(crate) protocol_errors: u64,
    pub(crate) backpressure_events: u64,
}

/// Copies `n` bytes from the current socket buffer, `at` bytes past the
/// actor's offset, to `dst`.
type Source<'a> = &'a dyn Fn(usize, *mut u8, usize) -> Result;

impl ConnRx {
    /// A reader for a fresh connection accepting messages up to
    /// `max_message` bytes.
    pub(crate) fn new(max_message: u64) -> Self {
        Self {
            reasm: Reassembler::new(Limits {
                max_payload: max_message,
            }),
            pending: None,
            dest: Dest::None,
            state: socket_state::ACTIVE,
            rx_bytes: 0,
            messages: 0,
            protocol_errors: 0,
            backpressure_events: 0,
        }
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
        self.consume(conn, none, 0);
        if self.state == socket_state::STALLED {
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
        // SAFETY: `sk` is valid and may be read (caller).
        if unsafe { crate::shim::o2g_tcp_urgent_pending(sk) } {
            // Everything before the urgent mark was read above.
            self.fail(conn, Failure::Urgent);
            return;
        }
        // SAFETY: `sk` is valid (caller).
        if !stopped_short && unsafe { crate::shim::o2g_sk_rcv_shutdown(sk) } {
            let idle = self.reasm.at_boundary() && self.pending.is_none();
            self.fail(conn, if idle { Failure::Closed } else { Failure::Truncated });
        }
    }

    /// Consumes up to `len` bytes from `src`; returns how many. Fewer means
    /// the connection stalled (or the source failed, which fails it).
    fn consume(&mut self, conn: &Conn, src: Source<'_>, len: usize) -> usize {
        let mut pos = 0;
        loop {
            if self.state == socket_state::FAILED {
                return len;
            }
            if self.state == socket_state::STALLED && !self.decide(conn) {
                return pos;
            }
            if self.reasm.current().is_some_and(|(h, off)| off >= h.len) {
                self.finish(conn);
                continue;
            }
            if pos >= len {
                return pos;
            }
            if let Some((off, n)) = self.reasm.take_payload(len - pos) {
                if self.copy(conn, src, pos, off, n).is_err() {
                    self.fail(conn, Failure::Truncated);
                    return len;
                }
                pos += n;
                self.rx_bytes += n as u64;
                continue;
            }
            let mut buf = [0u8; HEADER_LEN];
            let k = (len - pos).min(HEADER_LEN);
            if src(pos, buf.as_mut_ptr(), k).is_err() {
                self.fail(conn, Failure::Truncated);
                return len;
            }
            match self.reasm.feed(&buf[..k]) {
                Err(e) => {
                    self.fail(conn, Failure::Protocol(e));
                    return len;
                }
                Ok(step) => {
                    pos += step.consumed;
                    self.rx_bytes += step.consumed as u64;
                    if let Some(Event::Header(h)) = step.event {
                        if h.envelope.source != conn.rank() {
                            self.fail(conn, Failure::WrongSource(h.envelope.source));
                            return len;
                        }
                        self.pending = Some(h);
                        if !self.decide(conn) {
                            return pos;
                        }
                    }
                }
            }
        }
    }

    /// Picks the pending header's destination: a posted receive, else room
    /// in the dump area. Returns false (and stalls) when there is neither.
    fn decide(&mut self, conn: &Conn) -> bool {
        let Some(h) = self.pending else {
            return true;
        };
        let was_stalled = self.state == socket_state::STALLED;
        let dest = conn.rx().with_recv(|shared, st, c| {
            let mut dest = destination(st, c, &h);
            if dest.is_none() && st.apply_releases(shared, c) > 0 {
                dest = destination(st, c, &h);
            }
            if dest.is_none() && !was_stalled {
                st.stall(shared, conn.rank());
                // Pairs with the process's full fence between queueing a
                // release and reading `O2G_STALLED`: either it sees the new
                // count (and calls SYNC) or this sees its release.
                kernel::sync::barrier::smp_mb();
                if st.apply_releases(shared, c) > 0 {
                    dest = destination(st, c, &h);
                }
                if dest.is_some() {
                    st.unstall(shared, conn.rank());
                } else {
                    c.backpressure_events += 1;
                }
            } else if dest.is_some() && was_stalled {
                st.unstall(shared, conn.rank());
            }
            Ok(dest)
        });
        match dest {
            Ok(Some(dest)) => {
                self.dest = dest;
                self.pending = None;
                self.state = socket_state::ACTIVE;
                true
            }
            _ => {
                if !was_stalled {
                    self.backpressure_events += 1;
                }
                self.state = socket_state::STALLED;
                false
            }
        }
    }

    /// Copies payload bytes `off..off + n` of the current message from
    /// `src` (at `pos`) to their destination.
    fn copy(&self, conn: &Conn, src: Source<'_>, pos: usize, off: u64, n: usize) -> Result {
        let off = usize::try_from(off).map_err(|_| EINVAL)?;
        let fill = |dst: *mut u8, done: usize, chunk: usize| src(pos + done, dst, chunk);
        match &self.dest {
            // Past the buffer's end the bytes are dropped: truncation.
            Dest::Direct { recv } => recv.buf.copy_in(off, n, fill).map(|_| ()),
            Dest::Dump { at, .. } => conn.rx().shared().ok_or(EINVAL)?.dump_in(at + off, n, fill),
            Dest::None => Ok(()),
        }
    }

    /// The current message is complete: completes its receive, or makes it
    /// visible as unexpected (or hands it to a receive posted meanwhile).
    fn finish(&mut self, conn: &Conn) {
        let Ok(step) = self.reasm.feed(&[]) else {
            return;
        };
        let Some(Event::End(h)) = step.event else {
            return;
        };
        self.messages += 1;
        let env = h.envelope;
        let dest = core::mem::replace(&mut self.dest, Dest::None);
        // A receive posted while its message streamed into the dump area
        // gets the message copied after the lock is dropped: a large copy
        // must not hold the rx lock, with bottom halves off, for its whole
        // length. Until it completes it counts as active (its completion
        // record is owed), as a receive being filled directly does.
        let mut copy_out = None;
        // Only a finished receive has pages to unpin: a stored message
        // must not cost a work item.
        let retired = conn.rx().with_recv(|shared, st, c| {
            Ok(match dest {
                Dest::Direct { recv } => {
                    st.book.active -= 1;
                    let status = if h.len > recv.buf.len() as u64 {
                        errno::emsgsize().to_errno()
                    } else {
                        0
                    };
                    st.book.complete(shared, recv, env, h.len, status);
                    true
                }
                Dest::Dump { region, at } => {
                    st.book.streaming -= 1;
                    c.unexpected_msgs += 1;
                    c.unexpected_bytes += h.len;
                    match st.engine.arrive(env, h.len, u64::from(region.to_raw())) {
                        Ok(Arrival::Unexpected(id)) => {
                            st.book.unexpected_event = true;
                            st.announce(shared, c, id);
                            false
                        }
                        Ok(Arrival::Matched { handle }) => {
                            if let Some(recv) = st.book.take(handle) {
                                st.book.active += 1;
                                copy_out = Some((recv, region, at));
                            }
                            false
                        }
                        // Reserved in `decide`; cannot happen.
                        Err(_) => {
                            st.book.dump.free(region);
                            false
                        }
                    }
                }
                Dest::None => false,
            })
        });
        let mut retired = retired.unwrap_or(true);
        // Beyond a bound, the copy goes to the reclaim work: the reader
        // runs in softirq or with bottom halves off.
        let copy_out = copy_out.and_then(|(recv, region, at)| {
            if h.len <= COPY_IN_READER_MAX {
                return Some((recv, region, at));
            }
            let d = DeferredCopy { recv, region, at, env, len: h.len };
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
            match refused {
                // Cannot happen (see `Book::deferred`); copy here then.
                Some(d) => Some((d.recv, d.region, d.at)),
                None => {
                    retired = true;
                    None
                }
            }
        });
        if let Some((recv, region, at)) = copy_out {
            // The shared area and the receive state are installed once and
            // never removed, and `with_recv` above found them: neither the
            // lookup nor the call below can fail, so `recv` (whose pages may
            // only be unpinned in process context) is never dropped here.
            match conn.rx().shared() {
                Some(shared) => {
                    let status = copy_stored(shared, &recv, at, h.len, false);
                    let _ = conn.rx().with_recv(|shared, st, _| {
                        st.book.active -= 1;
                        st.book.dump.free(region);
                        st.book.complete(shared, recv, env, h.len, status);
                        Ok(())
                    });
                    retired = true;
                }
                // Unreachable (see above); leaking the pins beats sleeping
                // in atomic context.
                None => core::mem::forget(recv),
            }
        }
        conn.rx().notify();
        if retired {
            conn.schedule_reclaim();
        }
    }

    /// Stops reading this connection for good: completes what it was
    /// filling and every receive posted for its rank with `-ECONNRESET`,
    /// and, if it was the last live connection, every receive posted for
    /// any source too.
    pub(crate) fn fail(&mut self, conn: &Conn, why: Failure) {
        if self.state == socket_state::FAILED {
            return;
        }
        let was_stalled = self.state == socket_state::STALLED;
        self.state = socket_state::FAILED;
        let protocol = why.is_protocol();
        if protocol {
            self.protocol_errors += 1;
        }
        let status = errno::econnreset().to_errno();
        let dest = core::mem::replace(&mut self.dest, Dest::None);
        let current = self.reasm.current().map(|(h, _)| h);
        let rank = conn.rank();
        let _ = conn.rx().with_recv(|shared, st, c| {
            if was_stalled {
                st.unstall(shared, rank);
            }
            c.failed_sockets += 1;
            if protocol {
                c.protocol_errors += 1;
            }
            release(shared, st, dest, current, status);
            conn.mark_failed();
            let crate::recv::RecvState { engine, book } = st;
            let env = Envelope {
                source: rank,
                tag: 0,
                context: 0,
            };
            engine.cancel_from(rank, |handle| {
                if let Some(recv) = book.take(handle) {
                    book.complete(shared, recv, env, 0, status);
                }
            });
            if conn.leave_live() {
                book.live_conns -= 1;
                if book.live_conns == 0 {
                    // No peer is left that could match a receive from any
                    // source: complete them rather than let them wait.
                    book.peers_lost = true;
                    let env = Envelope {
                        source: abi::O2G_ANY_SOURCE,
                        tag: 0,
                        context: 0,
                    };
                    engine.cancel_any_source(|handle| {
                        if let Some(recv) = book.take(handle) {
                            book.complete(shared, recv, env, 0, status);
                        }
                    });
                }
            }
            Ok(())
        });
        conn.rx().notify();
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
            }
        }
    }

    /// The socket is being unregistered: completes the receive being
    /// filled with `-ECONNABORTED` and frees a half-stored message.
    ///
    /// Context: process context, after the hook is removed.
    pub(crate) fn abort(&mut self, conn: &Conn) {
        let dest = core::mem::replace(&mut self.dest, Dest::None);
        let current = self.reasm.current().map(|(h, _)| h);
        let stalled = self.state == socket_state::STALLED;
        let _ = conn.rx().with_recv(|shared, st, _| {
            if stalled {
                st.unstall(shared, conn.rank());
            }
            release(shared, st, dest, current, errno::econnaborted().to_errno());
            Ok(())
        });
        self.state = socket_state::FAILED;
        conn.rx().notify();
        conn.schedule_reclaim();
    }
}

/// The destination of the message with header `h`: the first-posted
/// matching receive, else a dump region if the dump area and the
/// unexpected queue have room.
///
/// Context: any; rx lock held.
fn destination(st: &mut RecvState, c: &mut Counters, h: &Header) -> Option<Dest> {
    if let Some(handle) = st.engine.match_posted(h.envelope) {
        return st.book.take(handle).map(|recv| {
            st.book.active += 1;
            c.matched_msgs += 1;
            c.matched_bytes += h.len;
            Dest::Direct { recv }
        });
    }
    let stored = st.engine.unexpected_len() + st.book.streaming as usize;
    if stored >= st.engine.unexpected_capacity() {
        return None;
    }
    let region = st.book.dump.alloc(h.len)?;
    st.book.streaming += 1;
    let at = st.book.dump.offset(region).unwrap_or(0) as usize;
    Some(Dest::Dump { region, at })
}

/// Completes or frees whatever `dest` holds, with `status`.
fn release(
    shared: &crate::shared::SharedArea,
    st: &mut RecvState,
    dest: Dest,
    current: Option<Header>,
    status: i32,
) {
    match dest {
        Dest::Direct { recv } => {
            st.book.active -= 1;
            let (env, len) = current.map_or((Envelope::default(), 0), |h| (h.envelope, h.len));
            st.book.complete(shared, recv, env, len, status);
        }
        Dest::Dump { region, .. } => {
            st.book.streaming -= 1;
            st.book.dump.free(region);
        }
        Dest::None => {}
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
    rx: &'a mut ConnRx,
    stopped_short: bool,
}

/// `tcp_read_sock()`'s actor.
///
/// Context: as [`ConnRx::read`]: softirq or process context with the socket
/// held; must not sleep.
///
/// # Safety
///
/// Called by `tcp_read_sock` with the descriptor set up in
/// [`ConnRx::read`] and a valid `skb` holding `len` bytes from `offset`.
unsafe extern "C" fn actor(
    desc: *mut bindings::read_descriptor_t,
    skb: *mut bindings::sk_buff,
    offset: c_uint,
    len: usize,
) -> c_int {
    // SAFETY: `desc.arg.data` is the `ReadCtx` that `read` passed, alive
    // and not otherwise borrowed during the call.
    let ctx = unsafe { &mut *(*desc).arg.data.cast::<ReadCtx<'_>>() };
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
