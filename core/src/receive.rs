//! The receive state machine: every decision a receiver makes about an
//! arriving message, in one place, for the kernel module and every
//! user-space transport.
//!
//! Like the rest of the core it does no I/O: callers hand it events and
//! carry out what it decides. Two types split the state by who may touch
//! it, so that the kernel can keep them under different locks:
//!
//! - [`Receiver`], one per process (the module's endpoint): the matching
//!   engine, the store for unexpected payloads, what is outstanding, and
//!   the counters. Events: [`Receiver::on_header`], [`Receiver::on_end`],
//!   [`Receiver::post`], [`Receiver::cancel`], [`Receiver::release`],
//!   [`Receiver::copied`], [`Receiver::fail`].
//! - [`Inbound`], one per connection that speaks the wire format: its
//!   stream reassembler, where the current message goes ([`Dest`]) and
//!   its counters. [`Inbound::next`] tells the reader what to do with the
//!   bytes it holds: read a header, copy payload to a [`Place`], or ask the
//!   receiver for a decision.
//!
//! Transports with their own framing (the emulated NICs) skip [`Inbound`]
//! and pass each message's envelope and length to the receiver directly,
//! holding the [`Dest`] it returns until the message ends.
//!
//! # The decisions
//!
//! ```text
//!            on_header                              on_end
//!  header ──────────────┬─ a posted receive ─ Direct ──────── Completed
//!                       ├─ room in the store ─ Stored ─┬───── Stored (now matchable)
//!                       │                              └───── CopyOut (a receive was
//!                       │                                     posted while it streamed)
//!                       └─ no room ─ Stall (retry on_header after a release)
//!
//!  post ──┬─ a stored message matches ─ FromStore (copy, then release)
//!         ├─ a stored request to send matches ─ Clear (send Cts)
//!         └─ none ─ Queued (matched by a later header)
//!
//!  on_rts ──┬─ a posted receive ─ Clear (send Cts; the receive waits)
//!           ├─ room ─ Stored (envelope only; a later post answers Clear)
//!           └─ no room ─ Stall
//!
//!  on_data (token) ── Data ─────────────────────────────── Completed
//! ```
//!
//! Rendezvous and credit are written down in `docs/protocol.md`: a pair of
//! processes has a *messages* connection (eager messages and requests to
//! send, which may stall) and a *control* connection (clear-to-send,
//! data and credit, which never stall); [`Inbound::messages`] and
//! [`Inbound::control`] read them.
//!
//! An unmatched message becomes visible to receives (and probes) only when
//! all of it is stored, so a receive never sees a half-written payload; a
//! receive posted while a matching message streams in is queued and takes
//! it at the end ([`OnEnd::CopyOut`]). Within a connection, messages are
//! decided in order, which with the engine's rules keeps MPI's
//! non-overtaking order (MPI 4.1 §3.5).
//!
//! # Invariants (checked by `tests/sim.rs`)
//!
//! - Every [`Dest`] handed out is consumed exactly once, by `on_end` or
//!   `fail`/`abort`; [`Dest`] is neither `Copy` nor `Clone`, so the type
//!   system keeps callers honest.
//! - `filling`, `streaming` and `copying` count the [`Dest::Direct`],
//!   [`Dest::Stored`] and [`OnEnd::CopyOut`] decisions not yet finished;
//!   nothing outside this file writes them.
//! - The unexpected queue always has a slot for every message streaming
//!   into the store, so `on_end` never finds it full.

use super::credit::{Credit, Grant, OverCredit, Window};
use super::dump::{DumpAlloc, Record, RegionId};
use super::envelope::{Envelope, Rank, Selector, SourceSel};
use super::matching::{
    Arrival, Bucket, CancelError, Engine, MsgId, MsgInfo, Posted, QueueFull, RecvId, Slot, StaleId,
};
use super::stream::{Event, Reassembler};
use super::wire::{Header, Kind, Limits, WireError, HEADER_LEN};
use core::ops::DerefMut;

/// Where unexpected payloads are kept; the machine only books room.
pub trait Store {
    /// Room for `len` payload bytes from `source`: a region id below
    /// 2^63, or `None` if there is no room now.
    fn book(&mut self, source: Rank, len: u64) -> Option<u64>;
    /// Where region `id`'s payload starts, for a contiguous area (0 for
    /// stores that keep each payload apart).
    fn locate(&self, id: u64) -> u64;
    /// Gives back the room of region `id`.
    fn give_back(&mut self, id: u64);
}

/// Room booked in a [`Store`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Region {
    /// Names the region to the store.
    pub id: u64,
    /// Where the payload starts in the store (for a contiguous area).
    pub at: u64,
}

impl<R: DerefMut<Target = [Record]>> Store for DumpAlloc<R> {
    fn book(&mut self, _source: Rank, len: u64) -> Option<u64> {
        self.alloc(len).map(|id| u64::from(id.to_raw()))
    }

    fn locate(&self, id: u64) -> u64 {
        // Ids come from `book`, so they fit.
        self.offset(RegionId::from_raw(id as u32)).unwrap_or(0)
    }

    fn give_back(&mut self, id: u64) {
        // Ids come from `book`, so they fit.
        self.free(RegionId::from_raw(id as u32));
    }
}

/// Where the current message's payload goes, from its header to its end.
/// Consumed by [`Receiver::on_end`], [`Receiver::fail`] or
/// [`Receiver::abort`]; deliberately neither `Copy` nor `Clone`.
#[derive(Debug, PartialEq, Eq)]
pub enum Dest {
    /// Straight into the posted receive with this handle.
    Direct {
        /// The handle given to [`Receiver::post`].
        handle: u64,
    },
    /// Into the store, as an unexpected message.
    Stored(Region),
    /// The data of a rendezvous, straight into the receive with this
    /// handle, which matched the request for a message of `size` bytes
    /// with `envelope`.
    Data {
        /// The handle given to [`Receiver::post`].
        handle: u64,
        /// The message's envelope (from its request to send).
        envelope: Envelope,
        /// The message's size (the data may be shorter: truncation).
        size: u64,
        /// Where this piece starts in the message (zero but for the
        /// pieces after a [`Kind::DataPart`]).
        at: u64,
    },
}

impl Dest {
    /// Where the payload bytes go.
    pub const fn place(&self) -> Place {
        match *self {
            Dest::Direct { handle } | Dest::Data { handle, .. } => Place::Recv { handle },
            Dest::Stored(region) => Place::Store { at: region.at },
        }
    }

    /// Where the current payload starts in its message.
    const fn base(&self) -> u64 {
        match *self {
            Dest::Data { at, .. } => at,
            Dest::Direct { .. } | Dest::Stored(_) => 0,
        }
    }
}

/// Rendezvous data that arrives in pieces ([`Kind::DataPart`]): the
/// receive it fills and how much of it the pieces so far filled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Piecewise {
    token: u64,
    handle: u64,
    envelope: Envelope,
    size: u64,
    filled: u64,
}

/// What an unexpected message's engine location names: room in the store
/// (an eager payload), or an offer the sender holds (a rendezvous request,
/// with no payload here).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Held {
    Region(u64),
    Offer(u32),
}

/// Marks a location as an offer; store region ids stay below it.
const OFFER_BIT: u64 = 1 << 63;

impl Held {
    const fn from_location(location: u64) -> Self {
        if location & OFFER_BIT != 0 {
            Held::Offer(location as u32)
        } else {
            Held::Region(location)
        }
    }

    const fn to_location(self) -> u64 {
        match self {
            Held::Region(id) => id,
            Held::Offer(offer) => OFFER_BIT | offer as u64,
        }
    }
}

/// Whether a stored message is a request to send (its payload waits at
/// the sender) rather than an eager payload held in the store.
pub const fn is_request(info: &MsgInfo) -> bool {
    matches!(Held::from_location(info.location), Held::Offer(_))
}

/// A receive matched to a request to send: send a clear-to-send to `rank`
/// naming `token` and `offer`, asking for `min(size, capacity)` bytes.
/// The data then arrives as a [`Dest::Data`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Clear {
    /// The receive's handle.
    pub handle: u64,
    /// The sender.
    pub rank: Rank,
    /// Names the receive in the sender's data message.
    pub token: u64,
    /// The sender's offer.
    pub offer: u32,
    /// The message's envelope.
    pub envelope: Envelope,
    /// The message's size.
    pub size: u64,
}

/// One receive waiting for rendezvous data; make storage with
/// [`Waiting::EMPTY`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Waiting {
    generation: u32,
    clear: Option<Clear>,
    /// The next free entry, while this one is free ([`NO_ENTRY`] ends).
    next_free: u32,
}

/// Ends the free list of [`Waiting`] entries.
const NO_ENTRY: u32 = u32::MAX;

impl Waiting {
    /// An unused entry.
    pub const EMPTY: Self = Self {
        generation: 0,
        clear: None,
        next_free: NO_ENTRY,
    };
}

impl Default for Waiting {
    fn default() -> Self {
        Self::EMPTY
    }
}

/// What [`Receiver::on_rts`] decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OnRts {
    /// A posted receive matched: send the clear-to-send.
    Clear(Clear),
    /// Stored as an unexpected message (envelope and size only); a later
    /// [`Receiver::post`] that matches it answers [`OnPost::Clear`].
    Stored {
        /// The stored request.
        msg: MsgId,
    },
}

/// Where payload bytes are to be copied.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Place {
    /// Into the buffer of the receive with this handle (bytes past its
    /// capacity are dropped: the receive is truncated).
    Recv {
        /// The receive's handle.
        handle: u64,
    },
    /// Into the store, `at` bytes from its start plus the payload offset.
    Store {
        /// Where the message's payload starts.
        at: u64,
    },
    /// Into the memory window registered under `context`, `at` bytes
    /// from its start plus the payload offset (a [`Kind::Put`]); the
    /// reader checks the window and the range, and drops what it refuses.
    Window {
        /// The window's context id.
        context: u32,
        /// Where the put starts in the window.
        at: u64,
    },
}

/// No room for the message now: stop reading the connection, and call
/// [`Receiver::on_header`] again once something was released.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Stall;

/// What [`Receiver::on_end`] decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OnEnd {
    /// The receive `handle` has its message: `len` bytes were sent.
    Completed {
        /// The receive's handle.
        handle: u64,
        /// The message's envelope (with its synchronous-send bit).
        envelope: Envelope,
        /// Length the sender sent.
        len: u64,
    },
    /// The message is stored and now visible to receives and probes.
    Stored {
        /// The stored message.
        msg: MsgId,
        /// Its envelope.
        envelope: Envelope,
        /// Its length.
        len: u64,
    },
    /// A receive posted while the message streamed in takes it: copy `len`
    /// bytes from `region` into receive `handle`, then call
    /// [`Receiver::copied`] with `region`.
    CopyOut {
        /// The receive's handle.
        handle: u64,
        /// The message's envelope.
        envelope: Envelope,
        /// Length the sender sent.
        len: u64,
        /// Where the payload is stored.
        region: Region,
    },
}

/// What [`Receiver::post`] decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OnPost {
    /// A stored message matched: copy it out of `region`, then give it
    /// back with [`Receiver::release`].
    FromStore {
        /// The message, now claimed.
        msg: MsgId,
        /// Its envelope, length and location.
        info: MsgInfo,
        /// Where its payload is stored.
        region: Region,
    },
    /// A stored request to send matched: send the clear-to-send; the
    /// receive waits for its data.
    Clear(Clear),
    /// Nothing matched; the receive waits for a header.
    Queued(RecvId),
}

/// A receive that will never get its message, from [`Receiver::fail`] or
/// [`Receiver::abort`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Failed {
    /// The receive's handle.
    pub handle: u64,
    /// The envelope of the message it was receiving, or one naming only
    /// the failed source when it had not matched.
    pub envelope: Envelope,
    /// Length of the message it was receiving, else 0.
    pub len: u64,
}

/// Why a connection stopped being read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Failure {
    /// The stream broke the wire rules.
    Protocol(WireError),
    /// A header named another sender than the connection's rank: a peer
    /// passing its messages off as another rank's.
    WrongSource(Rank),
    /// The peer sent urgent data, which a stream reader never reads past.
    Urgent,
    /// The peer closed in the middle of a message.
    Truncated,
    /// The peer closed between messages.
    Closed,
    /// An eager message went past the peer's credit.
    OverCredit(OverCredit),
    /// A message kind this connection does not carry (see
    /// [`Inbound::messages`] and [`Inbound::control`]).
    Unsupported(Kind),
    /// Rendezvous data named no receive waiting for data from this peer.
    UnknownToken(u64),
    /// Rendezvous data longer than the message it belongs to.
    DataTooLong {
        /// Bytes the data message carries.
        len: u64,
        /// The message's size.
        size: u64,
    },
    /// A clear-to-send named no offer this end made to the peer.
    UnknownOffer(u32),
    /// An answer to a window request found no receive posted for it
    /// (the answer's tag): the origin asks before it posts.
    Unanswered(u32),
    /// A window request naming a window the receiver does not have (or
    /// from a rank the window does not serve): its answer could never
    /// come.
    NoWindow(u32),
    /// A window request before the answer to its origin's previous one
    /// on that window (the module allows one at a time: it keeps no
    /// queue of answers a peer could grow).
    Overlapping,
    /// A clear-to-send asked for more bytes than its offer holds.
    WantTooLong {
        /// Bytes asked for.
        want: u64,
        /// The offer's length.
        size: u64,
    },
}

impl Failure {
    /// Whether the peer broke the protocol (counted as a protocol error).
    pub const fn is_protocol(self) -> bool {
        !matches!(self, Self::Truncated | Self::Closed)
    }
}

/// The receiver's counters, kept from creation on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Messages placed straight into a receive posted before them.
    pub matched_msgs: u64,
    /// Their payload bytes.
    pub matched_bytes: u64,
    /// Rendezvous requests that found their receive posted.
    pub rts_matched: u64,
    /// Rendezvous requests stored until a receive matched them.
    pub rts_stored: u64,
    /// Rendezvous data messages placed, and their bytes.
    pub data_msgs: u64,
    /// Bytes of those.
    pub data_bytes: u64,
    /// Messages stored because no receive waited for them.
    pub unexpected_msgs: u64,
    /// Their payload bytes.
    pub unexpected_bytes: u64,
    /// Headers that found no room and stalled their connection.
    pub backpressure_events: u64,
    /// Stored messages given back.
    pub released_msgs: u64,
    /// Give-backs that named no stored message.
    pub bad_releases: u64,
    /// Connections failed (peer gone or protocol broken).
    pub failed_conns: u32,
    /// Of those, the ones whose peer broke the protocol.
    pub protocol_errors: u64,
}

/// One process's receive side; see the module documentation.
pub struct Receiver<S, B, St, W> {
    engine: Engine<S, B>,
    store: St,
    /// Receives matched to a request to send, waiting for its data.
    waiting: W,
    /// Entries of `waiting` in use.
    awaiting: u32,
    /// The first free entry of `waiting`, or [`NO_ENTRY`].
    free_waiting: u32,
    max_outstanding: u32,
    /// Receives a connection is writing into ([`Dest::Direct`]).
    filling: u32,
    /// Unexpected messages being written into the store ([`Dest::Stored`]).
    streaming: u32,
    /// [`OnEnd::CopyOut`] copies not yet [`Receiver::copied`].
    copying: u32,
    /// Posts admitted but not posted yet ([`Receiver::admit`]).
    admitted: u32,
    /// Connections that have not failed or left.
    live_conns: u32,
    /// The last live connection failed: a receive from any source has no
    /// peer left that could match it (until a connection is added).
    peers_lost: bool,
    stats: Stats,
}

impl<S, B, St, W> Receiver<S, B, St, W>
where
    S: DerefMut<Target = [Slot]>,
    B: DerefMut<Target = [Bucket]>,
    St: Store,
    W: DerefMut<Target = [Waiting]>,
{
    /// A receiver over `engine` and `store`, admitting at most
    /// `max_outstanding` receives at once (posted, being filled, waiting
    /// for rendezvous data or being copied into); `waiting` holds the
    /// receives waiting for rendezvous data (as many as may be posted).
    pub fn new(engine: Engine<S, B>, store: St, mut waiting: W, max_outstanding: u32) -> Self {
        waiting.fill(Waiting::EMPTY);
        // Chain every entry into the free list, first entry first.
        let count = u32::try_from(waiting.len()).unwrap_or(NO_ENTRY);
        let mut next = NO_ENTRY;
        for (index, entry) in waiting.iter_mut().enumerate().rev() {
            if (index as u64) < u64::from(count) {
                entry.next_free = next;
                next = index as u32;
            }
        }
        Self {
            engine,
            store,
            waiting,
            awaiting: 0,
            free_waiting: next,
            max_outstanding,
            filling: 0,
            streaming: 0,
            copying: 0,
            admitted: 0,
            live_conns: 0,
            peers_lost: false,
            stats: Stats::default(),
        }
    }

    /// The counters.
    pub const fn stats(&self) -> Stats {
        self.stats
    }

    /// The store, to read where regions are.
    pub const fn store(&self) -> &St {
        &self.store
    }

    /// The store, for its own accounting (what a slot store counts as
    /// returned); booking and giving back room stay the machine's.
    pub fn store_mut(&mut self) -> &mut St {
        &mut self.store
    }

    /// Posted receives waiting for a message.
    pub const fn posted_len(&self) -> usize {
        self.engine.posted_len()
    }

    /// Unexpected messages stored (visible, or taken and not released).
    pub const fn unexpected_len(&self) -> usize {
        self.engine.unexpected_len()
    }

    /// Receives waiting for rendezvous data.
    pub const fn awaiting_data(&self) -> u32 {
        self.awaiting
    }

    /// Receives that will still complete: posted, being filled, waiting
    /// for rendezvous data, being copied into, or admitted and about to be
    /// posted.
    pub fn outstanding(&self) -> u64 {
        (self.engine.posted_len() as u64)
            .saturating_add(u64::from(self.filling))
            .saturating_add(u64::from(self.awaiting))
            .saturating_add(u64::from(self.copying))
            .saturating_add(u64::from(self.admitted))
    }

    /// Reserves room for a receive that will be posted after work done
    /// without the caller's lock (the module pins its buffer); end the
    /// reservation with [`Receiver::settle`]. `also_held` counts finished
    /// receives whose resources the caller has not let go of yet.
    ///
    /// # Errors
    ///
    /// [`QueueFull`] when `max_outstanding` receives are outstanding.
    pub fn admit(&mut self, also_held: u64) -> Result<(), QueueFull> {
        let held = self.outstanding().saturating_add(also_held);
        if held >= u64::from(self.max_outstanding) {
            return Err(QueueFull);
        }
        self.admitted = self.admitted.saturating_add(1);
        Ok(())
    }

    /// Ends an [`Receiver::admit`] reservation.
    pub fn settle(&mut self) {
        self.admitted = self.admitted.saturating_sub(1);
    }

    /// A header arrived on a connection: picks where its payload goes.
    ///
    /// # Errors
    ///
    /// [`Stall`] when no receive matches and the store or the unexpected
    /// queue has no room; nothing changed, retry after a release.
    pub fn on_header(&mut self, envelope: Envelope, len: u64) -> Result<Dest, Stall> {
        if let Some(handle) = self.engine.match_posted(envelope) {
            self.filling = self.filling.saturating_add(1);
            self.stats.matched_msgs = self.stats.matched_msgs.saturating_add(1);
            self.stats.matched_bytes = self.stats.matched_bytes.saturating_add(len);
            return Ok(Dest::Direct { handle });
        }
        if self.unexpected_full() {
            return Err(Stall);
        }
        let id = self.store.book(envelope.source, len).ok_or(Stall)?;
        let region = self.region(id);
        self.streaming = self.streaming.saturating_add(1);
        Ok(Dest::Stored(region))
    }

    /// Whether the unexpected queue has no slot left for one more message
    /// (stored ones and those streaming into the store each hold one).
    fn unexpected_full(&self) -> bool {
        let stored = self
            .engine
            .unexpected_len()
            .saturating_add(self.streaming as usize);
        stored >= self.engine.unexpected_capacity()
    }

    /// Counts a header that stalled its connection (once per stall).
    fn stalled(&mut self) {
        self.stats.backpressure_events = self.stats.backpressure_events.saturating_add(1);
    }

    /// The message that went to `dest` is complete.
    pub fn on_end(&mut self, dest: Dest, envelope: Envelope, len: u64) -> OnEnd {
        match dest {
            Dest::Data {
                handle,
                envelope,
                size,
                ..
            } => {
                self.filling = self.filling.saturating_sub(1);
                OnEnd::Completed {
                    handle,
                    envelope,
                    len: size,
                }
            }
            Dest::Direct { handle } => {
                self.filling = self.filling.saturating_sub(1);
                OnEnd::Completed {
                    handle,
                    envelope,
                    len,
                }
            }
            Dest::Stored(region) => {
                self.streaming = self.streaming.saturating_sub(1);
                self.stats.unexpected_msgs = self.stats.unexpected_msgs.saturating_add(1);
                self.stats.unexpected_bytes = self.stats.unexpected_bytes.saturating_add(len);
                match self.engine.arrive(envelope, len, region.id) {
                    Ok(Arrival::Unexpected(msg)) => OnEnd::Stored { msg, envelope, len },
                    Ok(Arrival::Matched { handle }) => {
                        self.copying = self.copying.saturating_add(1);
                        OnEnd::CopyOut {
                            handle,
                            envelope,
                            len,
                            region,
                        }
                    }
                    // `on_header` kept a slot for it: cannot happen. The
                    // message is lost rather than the store leaked.
                    Err(QueueFull) => {
                        self.store.give_back(region.id);
                        OnEnd::Stored {
                            msg: MsgId::from_raw(u64::MAX),
                            envelope,
                            len,
                        }
                    }
                }
            }
        }
    }

    /// The copy of an [`OnEnd::CopyOut`] is done: frees its region.
    pub fn copied(&mut self, region: Region) {
        self.copying = self.copying.saturating_sub(1);
        self.store.give_back(region.id);
    }

    /// Posts a receive with user handle `handle`.
    ///
    /// # Errors
    ///
    /// [`QueueFull`] if nothing matched and the posted queue is full.
    /// [`QueueFull`] too if it would match a stored request to send and
    /// no entry is free to wait for the data (a caller that sizes
    /// `waiting` as its posted queue never sees that).
    pub fn post(&mut self, sel: Selector, handle: u64) -> Result<OnPost, QueueFull> {
        if self.free_waiting == NO_ENTRY
            && self.engine.probe(sel).is_some_and(|(_, i)| is_request(&i))
        {
            return Err(QueueFull);
        }
        Ok(match self.engine.post(sel, handle)? {
            Posted::Queued(id) => OnPost::Queued(id),
            Posted::Matched(msg, info) => match Held::from_location(info.location) {
                Held::Region(id) => OnPost::FromStore {
                    msg,
                    info,
                    region: self.region(id),
                },
                Held::Offer(offer) => {
                    // A request holds nothing here: it leaves the engine
                    // as the receive starts waiting for its data.
                    let _ = self.engine.release_claimed(msg);
                    let clear = self
                        .wait_for_data(handle, info.envelope, info.len, offer)
                        .ok_or(QueueFull)?;
                    OnPost::Clear(clear)
                }
            },
        })
    }

    /// A request to send arrived: a message of `size` bytes with
    /// `envelope` waits at the sender under `offer`.
    ///
    /// # Errors
    ///
    /// [`Stall`] when no entry is free to wait for its data or to store
    /// it; nothing changed, retry after a release.
    pub fn on_rts(&mut self, envelope: Envelope, size: u64, offer: u32) -> Result<OnRts, Stall> {
        // Whether it matches now or later, a receive will wait for its
        // data: without a free entry, reading stops until one is free.
        if self.free_waiting == NO_ENTRY {
            return Err(Stall);
        }
        if let Some(handle) = self.engine.match_posted(envelope) {
            self.stats.rts_matched = self.stats.rts_matched.saturating_add(1);
            return self
                .wait_for_data(handle, envelope, size, offer)
                .map(OnRts::Clear)
                .ok_or(Stall);
        }
        if self.unexpected_full() {
            return Err(Stall);
        }
        match self
            .engine
            .arrive(envelope, size, Held::Offer(offer).to_location())
        {
            Ok(Arrival::Unexpected(msg)) => {
                self.stats.rts_stored = self.stats.rts_stored.saturating_add(1);
                Ok(OnRts::Stored { msg })
            }
            // Nothing matched just above, and there is a slot.
            Ok(Arrival::Matched { .. }) | Err(QueueFull) => Err(Stall),
        }
    }

    /// Records receive `handle` as waiting for the data of `offer`.
    fn wait_for_data(
        &mut self,
        handle: u64,
        envelope: Envelope,
        size: u64,
        offer: u32,
    ) -> Option<Clear> {
        let index = self.free_waiting;
        let entry = self.waiting.get_mut(index as usize)?;
        self.free_waiting = entry.next_free;
        let token = u64::from(entry.generation).rotate_left(32) | u64::from(index);
        let clear = Clear {
            handle,
            rank: envelope.source,
            token,
            offer,
            envelope,
            size,
        };
        entry.clear = Some(clear);
        self.awaiting = self.awaiting.saturating_add(1);
        Some(clear)
    }

    /// Ends the wait named by `token`, if it is one.
    fn take_waiting(&mut self, token: u64) -> Option<Clear> {
        let index = token as u32;
        let generation = token.rotate_left(32) as u32;
        let entry = self
            .waiting
            .get_mut(index as usize)
            .filter(|w| w.generation == generation)?;
        let clear = entry.clear.take()?;
        entry.generation = entry.generation.wrapping_add(1);
        entry.next_free = self.free_waiting;
        self.free_waiting = index;
        self.awaiting = self.awaiting.saturating_sub(1);
        Some(clear)
    }

    /// An answer to a window request arrived: it goes to the receive the
    /// origin posted for it before asking, or the connection fails.
    ///
    /// # Errors
    ///
    /// [`Failure::Unanswered`] when no posted receive matches.
    pub fn on_answer(&mut self, envelope: Envelope, len: u64) -> Result<Dest, Failure> {
        let handle = self
            .engine
            .match_posted(envelope)
            .ok_or(Failure::Unanswered(envelope.tag))?;
        self.filling = self.filling.saturating_add(1);
        self.stats.matched_msgs = self.stats.matched_msgs.saturating_add(1);
        self.stats.matched_bytes = self.stats.matched_bytes.saturating_add(len);
        Ok(Dest::Direct { handle })
    }

    /// Rendezvous data of `len` bytes arrived from `rank` for the receive
    /// waiting under `token`: where it goes.
    ///
    /// # Errors
    ///
    /// The [`Failure`] of a peer that broke the protocol: no receive waits
    /// under `token` for data from `rank`, or the data is longer than the
    /// message. Nothing changed.
    pub fn on_data(&mut self, rank: Rank, token: u64, len: u64) -> Result<Dest, Failure> {
        let entry = self
            .waiting
            .get(token as u32 as usize)
            .filter(|w| w.generation == token.rotate_left(32) as u32)
            .and_then(|w| w.clear)
            .filter(|c| c.rank == rank)
            .ok_or(Failure::UnknownToken(token))?;
        if len > entry.size {
            return Err(Failure::DataTooLong {
                len,
                size: entry.size,
            });
        }
        let clear = self
            .take_waiting(token)
            .ok_or(Failure::UnknownToken(token))?;
        self.filling = self.filling.saturating_add(1);
        self.stats.data_msgs = self.stats.data_msgs.saturating_add(1);
        self.stats.data_bytes = self.stats.data_bytes.saturating_add(len);
        Ok(Dest::Data {
            handle: clear.handle,
            envelope: clear.envelope,
            size: clear.size,
            at: 0,
        })
    }

    /// The clear-to-send of `token` cannot be sent (its peer is gone):
    /// the receive will not get its data.
    pub fn abandon(&mut self, token: u64) -> Option<Failed> {
        self.take_waiting(token).map(|c| Failed {
            handle: c.handle,
            envelope: c.envelope,
            len: c.size,
        })
    }

    /// Cancels a posted receive; returns its handle.
    ///
    /// # Errors
    ///
    /// As [`Engine::cancel`]: too late once it matched.
    pub fn cancel(&mut self, id: RecvId) -> Result<u64, CancelError> {
        self.engine.cancel(id)
    }

    /// The stored message a receive with `sel` would take now.
    pub fn probe(&self, sel: Selector) -> Option<(MsgId, MsgInfo)> {
        self.engine.probe(sel)
    }

    /// Takes a stored message out of matching (matched probe, or handed to
    /// the process to match itself); it stays stored until released.
    ///
    /// # Errors
    ///
    /// [`StaleId`] if `msg` names no visible stored message.
    /// Only eager messages can be claimed: a request to send is taken by
    /// a post, which answers the sender.
    pub fn claim(&mut self, msg: MsgId) -> Result<(MsgInfo, Region), StaleId> {
        let info = self.engine.message(msg).ok_or(StaleId)?;
        let Held::Region(id) = Held::from_location(info.location) else {
            return Err(StaleId);
        };
        let info = self.engine.claim(msg)?;
        Ok((info, self.region(id)))
    }

    /// Region `id` of the store, with where it starts.
    pub fn region(&self, id: u64) -> Region {
        Region {
            id,
            at: self.store.locate(id),
        }
    }

    /// Gives back a stored message (visible or claimed) and its room;
    /// a bad id is counted and ignored.
    ///
    /// # Errors
    ///
    /// [`StaleId`] if `msg` names no stored message.
    pub fn release(&mut self, msg: MsgId) -> Result<MsgInfo, StaleId> {
        self.give_back(msg, false)
    }

    /// As [`Receiver::release`], but only for a message a post or claim
    /// took, so that a caller cannot drop a message no receive has seen.
    ///
    /// # Errors
    ///
    /// [`StaleId`] if `msg` names no claimed message.
    pub fn release_claimed(&mut self, msg: MsgId) -> Result<MsgInfo, StaleId> {
        self.give_back(msg, true)
    }

    fn give_back(&mut self, msg: MsgId, claimed_only: bool) -> Result<MsgInfo, StaleId> {
        // A request to send is not released: only a post takes it.
        let is_request = self.engine.message(msg).is_some_and(|i| is_request(&i));
        let freed = if is_request {
            Err(StaleId)
        } else if claimed_only {
            self.engine.release_claimed(msg)
        } else {
            self.engine.release(msg)
        };
        match freed {
            Ok(info) => {
                self.store.give_back(info.location);
                self.stats.released_msgs = self.stats.released_msgs.saturating_add(1);
                Ok(info)
            }
            Err(e) => {
                self.stats.bad_releases = self.stats.bad_releases.saturating_add(1);
                Err(e)
            }
        }
    }

    /// A connection was added; it counts as live until it fails or leaves.
    pub fn add_conn(&mut self) {
        self.live_conns = self.live_conns.saturating_add(1);
        self.peers_lost = false;
    }

    /// A connection left by choice (unregistered), if `was_live`. Unlike
    /// failing, leaving keeps receives from any source posted.
    pub fn remove_conn(&mut self, was_live: bool) {
        if was_live {
            self.live_conns = self.live_conns.saturating_sub(1);
        }
    }

    /// Whether a receive for `sel` can never match a new arrival: its
    /// source's connection failed (`source_failed`), or it takes any
    /// source and every connection has failed.
    pub const fn unreachable(&self, sel: Selector, source_failed: bool) -> bool {
        match sel.source {
            SourceSel::Rank(_) => source_failed,
            SourceSel::Any => self.peers_lost && self.live_conns == 0,
        }
    }

    /// The connection `conn` failed for `why`: hands every receive that
    /// can no longer complete to `failed` (the one it was filling, those
    /// posted for its rank if `conn` carries matchable messages, those
    /// waiting for rendezvous data if it carries that, and, if it was the
    /// last live connection (`was_live` tells whether it counted), those
    /// from any source), and frees a half-stored message. So a receive
    /// outlives the failure of the peer's other connection: a peer that
    /// closes both once done may close either first, and what it sent on
    /// the other is still to be read.
    pub fn fail(
        &mut self,
        conn: &mut Inbound,
        why: Failure,
        was_live: bool,
        mut failed: impl FnMut(Failed),
    ) {
        self.stats.failed_conns = self.stats.failed_conns.saturating_add(1);
        if why.is_protocol() {
            self.stats.protocol_errors = self.stats.protocol_errors.saturating_add(1);
            conn.stats.protocol_errors = conn.stats.protocol_errors.saturating_add(1);
        }
        self.abort(conn, &mut failed);
        conn.failure = Some(why);
        let rank = conn.rank;
        let env = Envelope {
            source: rank,
            ..Envelope::default()
        };
        // What a connection fails is what could only come on it: receives
        // posted for its rank wait for a message on the connection that
        // carries messages, receives waiting for rendezvous data for the
        // one that carries data. A peer closes both, in either order.
        if !matches!(conn.role, Role::Control) {
            self.engine.cancel_from(rank, |handle| {
                failed(Failed {
                    handle,
                    envelope: env,
                    len: 0,
                });
            });
        }
        let data_here = matches!(conn.role, Role::Control | Role::Combined(_));
        for index in 0..self.waiting.len() {
            if !data_here {
                break;
            }
            let token = match self.waiting.get(index) {
                Some(Waiting {
                    generation,
                    clear: Some(c),
                    ..
                }) if c.rank == rank => u64::from(*generation).rotate_left(32) | index as u64,
                _ => continue,
            };
            if let Some(f) = self.abandon(token) {
                failed(f);
            }
        }
        if was_live {
            self.live_conns = self.live_conns.saturating_sub(1);
            if self.live_conns == 0 {
                self.peers_lost = true;
                self.engine.cancel_any_source(|handle| {
                    failed(Failed {
                        handle,
                        envelope: Envelope::default(),
                        len: 0,
                    });
                });
            }
        }
    }

    /// Stops `conn` in the middle of whatever it was receiving (it is
    /// being removed, or failed): the receive it was filling goes to
    /// `failed`, a half-stored message is freed. Receives posted for its
    /// rank stay.
    pub fn abort(&mut self, conn: &mut Inbound, mut failed: impl FnMut(Failed)) {
        let current = conn.reasm.current().map(|(h, _)| h);
        // A receive filled piece by piece, between pieces: nothing else
        // names it any more.
        if let (Some(p), None) = (conn.piecewise.take(), &conn.dest) {
            self.filling = self.filling.saturating_sub(1);
            failed(Failed {
                handle: p.handle,
                envelope: p.envelope,
                len: p.size,
            });
        }
        if let Some(dest) = conn.dest.take() {
            let (envelope, len) = match (&dest, current) {
                (Dest::Data { envelope, size, .. }, _) => (*envelope, *size),
                (_, Some(h)) => (h.envelope, h.len),
                (_, None) => (Envelope::default(), 0),
            };
            self.drop_dest(dest, |handle| {
                failed(Failed {
                    handle,
                    envelope,
                    len,
                })
            });
        }
        conn.undecided = None;
        if conn.failure.is_none() {
            conn.failure = Some(Failure::Closed);
        }
    }

    /// Undoes a [`Dest`] whose message will not end: a direct receive goes
    /// to `failed`, a half-stored region is freed.
    pub fn drop_dest(&mut self, dest: Dest, failed: impl FnOnce(u64)) {
        match dest {
            Dest::Direct { handle } | Dest::Data { handle, .. } => {
                self.filling = self.filling.saturating_sub(1);
                failed(handle);
            }
            Dest::Stored(region) => {
                self.streaming = self.streaming.saturating_sub(1);
                self.store.give_back(region.id);
            }
        }
    }
}

/// Per-connection counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InboundStats {
    /// Bytes consumed from the stream.
    pub bytes: u64,
    /// Messages completed.
    pub messages: u64,
    /// Times a header found no room.
    pub stalls: u64,
    /// Protocol violations (at most one: the connection then fails).
    pub protocol_errors: u64,
}

/// What the reader of a connection does next; see [`Inbound::next`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Next {
    /// Copy at most `max` input bytes and pass them to
    /// [`Inbound::feed_header`].
    Header {
        /// At most this many bytes.
        max: usize,
    },
    /// Copy the next `len` input bytes to `to`, at `offset` within the
    /// message's payload; they are already counted as consumed.
    Payload {
        /// The destination.
        to: Place,
        /// Offset within the payload.
        offset: u64,
        /// Number of bytes.
        len: usize,
    },
    /// A header waits for [`Inbound::decide`].
    Decide,
    /// The message is complete: call [`Inbound::finish`].
    End,
    /// The connection waits for room; stop reading until a release.
    Stalled,
    /// The connection failed; read nothing more.
    Failed,
    /// Every input byte offered was used: read more.
    NeedInput,
    /// A message for this end's sending side arrived (a clear-to-send or
    /// credit): act on it, then go on.
    Control(Control),
}

/// A message for the sending side of a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Control {
    /// Clear to send: send `want` bytes of `offer` as data for the
    /// receive the peer calls `token`.
    Cts {
        /// The peer's name for its receive.
        token: u64,
        /// Bytes to send (at most the offer's length).
        want: u64,
        /// The offer.
        offer: u32,
    },
    /// Eager credit returned.
    Credit(Credit),
}

/// What [`Inbound::decide`] decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Decision {
    /// Go on reading (the payload has its place, or there was nothing to
    /// decide).
    Go,
    /// No room: stop reading until a release.
    Wait,
    /// A request to send matched a posted receive: send the
    /// clear-to-send, and go on reading.
    Clear(Clear),
    /// A request to send was stored: it is visible to receives and probes.
    Stored {
        /// The stored request.
        msg: MsgId,
    },
}

/// Which message kinds a connection carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// Eager messages only, without credit (an end that speaks no
    /// rendezvous yet).
    EagerOnly,
    /// Matchable messages without credit: eager ones, which may stall
    /// when there is no room, and requests to send (an end whose store
    /// cannot honour credit yet: the module's dump area).
    Uncredited,
    /// Matchable messages: eager ones within the peer's credit, and
    /// requests to send. These may stall.
    Messages(Grant),
    /// What answers them and never stalls: clear-to-send, rendezvous data
    /// (whose receive is waiting) and credit.
    Control,
    /// Both families on one connection, for an end whose process writes
    /// and reads every byte itself (the user-space socket transports). A
    /// stall then holds back the answers behind it too, so such an end
    /// must report a wait that nothing can end instead of waiting.
    Combined(Grant),
}

/// The receiving end of one connection; see the module documentation.
pub struct Inbound {
    rank: Rank,
    reasm: Reassembler,
    /// Which kinds this connection carries.
    role: Role,
    /// A message for the sending side, not yet handed out.
    control: Option<Control>,
    /// A header not yet decided; `true` once it stalled.
    undecided: Option<bool>,
    dest: Option<Dest>,
    /// Rendezvous data that came in pieces so far, with more to come.
    piecewise: Option<Piecewise>,
    failure: Option<Failure>,
    /// Whether [`Kind::Put`] is carried (see [`Inbound::with_windows`]).
    windows: bool,
    stats: InboundStats,
}

impl Inbound {
    /// The receiving end of a fresh connection from `rank` that carries
    /// eager messages only, up to `limits.max_payload` bytes, and no
    /// credit.
    pub const fn new(rank: Rank, limits: Limits) -> Self {
        Self::with_role(rank, limits, Role::EagerOnly)
    }

    /// The receiving end of the connection that carries `rank`'s
    /// matchable messages (eager and requests to send); the peer gets
    /// `window` of eager credit.
    pub const fn messages(rank: Rank, limits: Limits, window: Window) -> Self {
        Self::with_role(rank, limits, Role::Messages(Grant::new(window)))
    }

    /// The receiving end of the connection that carries `rank`'s
    /// matchable messages, eager ones without credit: the peer may send
    /// any eager message, and one that finds no room stalls the
    /// connection until something is released.
    pub const fn uncredited(rank: Rank, limits: Limits) -> Self {
        Self::with_role(rank, limits, Role::Uncredited)
    }

    /// The receiving end of the connection that carries `rank`'s control
    /// messages (clear-to-send, rendezvous data, credit). It never stalls,
    /// so an answer never waits behind a message that waits for room.
    pub const fn control(rank: Rank, limits: Limits) -> Self {
        Self::with_role(rank, limits, Role::Control)
    }

    /// The receiving end of a connection that carries everything `rank`
    /// sends: matchable messages (within `window` of eager credit) and
    /// their answers. A stalled header holds back the answers behind it,
    /// so the caller must notice when nothing can end a stall.
    pub const fn combined(rank: Rank, limits: Limits, window: Window) -> Self {
        Self::with_role(rank, limits, Role::Combined(Grant::new(window)))
    }

    const fn with_role(rank: Rank, limits: Limits, role: Role) -> Self {
        Self {
            rank,
            reasm: Reassembler::new(limits),
            role,
            control: None,
            undecided: None,
            dest: None,
            piecewise: None,
            failure: None,
            windows: false,
            stats: InboundStats {
                bytes: 0,
                messages: 0,
                stalls: 0,
                protocol_errors: 0,
            },
        }
    }

    /// This messages connection also carries one-sided puts
    /// ([`Kind::Put`]) and requests ([`Kind::Lock`], [`Kind::Get`]) for the receiver's
    /// registered windows: they need no decision and no credit (they are
    /// never stored), a put's payload goes to [`Place::Window`], and the
    /// caller acts on a request at its header. Other roles refuse them;
    /// a control connection takes the answers ([`Kind::Answer`]).
    #[must_use]
    pub const fn with_windows(mut self) -> Self {
        self.windows = matches!(self.role, Role::Messages(_) | Role::Uncredited);
        self
    }

    /// The rank of the peer.
    pub const fn rank(&self) -> Rank {
        self.rank
    }

    /// The counters.
    pub const fn stats(&self) -> InboundStats {
        self.stats
    }

    /// Why the connection failed, if it did.
    pub const fn failure(&self) -> Option<Failure> {
        self.failure
    }

    /// Whether a header waits for room.
    pub const fn is_stalled(&self) -> bool {
        matches!(self.undecided, Some(true))
    }

    /// Whether the stream is between messages with nothing pending, so the
    /// peer may close here cleanly.
    pub const fn at_boundary(&self) -> bool {
        self.reasm.at_boundary() && self.undecided.is_none() && self.piecewise.is_none()
    }

    /// Eager bytes the peer sent that this end still holds (zero without
    /// credits).
    pub const fn held_eager_bytes(&self) -> u64 {
        match &self.role {
            Role::Messages(g) | Role::Combined(g) => g.held_bytes(),
            Role::EagerOnly | Role::Uncredited | Role::Control => 0,
        }
    }

    /// The peer's eager message of `len` bytes that was stored left the
    /// store (a receive took it, or it was released): its credit is due
    /// again.
    pub fn give_back(&mut self, len: u64) {
        self.give_back_all(Credit {
            bytes: len,
            msgs: 1,
        });
    }

    /// The peer's eager messages that `returned` counts left the store
    /// at once (see `sender_rings::SenderRings::take_returned`).
    pub fn give_back_all(&mut self, returned: Credit) {
        if let Role::Messages(g) | Role::Combined(g) = &mut self.role {
            g.give_back_all(returned);
        }
    }

    /// Credit to send to the peer now, if enough is due (the first call
    /// hands out the whole window).
    pub fn credit_due(&mut self) -> Option<Credit> {
        match &mut self.role {
            Role::Messages(g) | Role::Combined(g) => g.due(),
            Role::EagerOnly | Role::Uncredited | Role::Control => None,
        }
    }

    /// Where the current message goes, once decided.
    pub const fn dest(&self) -> Option<&Dest> {
        self.dest.as_ref()
    }

    /// The message in progress and how many of its payload bytes passed.
    pub const fn current(&self) -> Option<(Header, u64)> {
        self.reasm.current()
    }

    /// What to do with `avail` more input bytes (zero is fine: a decision
    /// or an end may be due without input). A [`Next::Payload`] answer
    /// consumes its bytes.
    pub fn next(&mut self, avail: usize) -> Next {
        if self.failure.is_some() {
            return Next::Failed;
        }
        if let Some(c) = self.control.take() {
            return Next::Control(c);
        }
        match self.undecided {
            Some(true) => return Next::Stalled,
            Some(false) => return Next::Decide,
            None => {}
        }
        if self
            .reasm
            .current()
            .is_some_and(|(h, off)| off >= h.payload_len())
        {
            return Next::End;
        }
        if avail == 0 {
            return Next::NeedInput;
        }
        if let Some((offset, len)) = self.reasm.take_payload(avail) {
            self.stats.bytes = self.stats.bytes.saturating_add(len as u64);
            let put = self.reasm.current().filter(|(h, _)| h.kind == Kind::Put);
            return match (&self.dest, put) {
                (Some(dest), _) => Next::Payload {
                    to: dest.place(),
                    offset: dest.base().saturating_add(offset),
                    len,
                },
                (None, Some((h, _))) => Next::Payload {
                    to: Place::Window {
                        context: h.envelope.context,
                        at: h.window_offset(),
                    },
                    offset,
                    len,
                },
                // A payload always has a destination once decided.
                (None, None) => Next::Failed,
            };
        }
        Next::Header {
            max: avail.min(HEADER_LEN),
        }
    }

    /// Feeds header bytes (at most what [`Next::Header`] allowed); returns
    /// how many were used.
    ///
    /// # Errors
    ///
    /// The [`Failure`] to pass to [`Receiver::fail`]: a malformed header,
    /// or one naming another sender.
    pub fn feed_header(&mut self, bytes: &[u8]) -> Result<usize, Failure> {
        let step = self.reasm.feed(bytes).map_err(Failure::Protocol)?;
        self.stats.bytes = self.stats.bytes.saturating_add(step.consumed as u64);
        if let Some(Event::Header(h)) = step.event {
            if h.envelope.source != self.rank {
                return Err(Failure::WrongSource(h.envelope.source));
            }
            match (h.kind, &mut self.role) {
                (Kind::Eager, Role::EagerOnly | Role::Uncredited) => {
                    self.undecided = Some(false);
                }
                (Kind::Eager, Role::Messages(grant) | Role::Combined(grant)) => {
                    grant.spend(h.len).map_err(Failure::OverCredit)?;
                    self.undecided = Some(false);
                }
                (Kind::Rts, Role::Messages(_) | Role::Uncredited | Role::Combined(_))
                | (Kind::Data | Kind::DataPart, Role::Control | Role::Combined(_)) => {
                    self.undecided = Some(false);
                }
                (Kind::Cts, Role::Control | Role::Combined(_)) => {
                    self.control = Some(Control::Cts {
                        token: h.token(),
                        want: h.len,
                        offer: h.reference,
                    });
                }
                (Kind::Credit, Role::Control | Role::Combined(_)) => {
                    self.control = Some(Control::Credit(Credit {
                        bytes: h.len,
                        msgs: h.reference,
                    }));
                }
                // Nothing to decide: the payload goes to its window, the
                // request is the caller's.
                (Kind::Put | Kind::Lock | Kind::Get, _) if self.windows => {}
                (Kind::Answer, Role::Control) => self.undecided = Some(false),
                (kind, _) => return Err(Failure::Unsupported(kind)),
            }
        }
        Ok(step.consumed)
    }

    /// Where a piece of rendezvous data goes: the first piece takes the
    /// waiting receive from `rx`, the ones after a [`Kind::DataPart`]
    /// continue it, and must name the same token.
    fn on_piece<S, B, St, W>(
        &mut self,
        rx: &mut Receiver<S, B, St, W>,
        h: &Header,
    ) -> Result<Dest, Failure>
    where
        S: DerefMut<Target = [Slot]>,
        B: DerefMut<Target = [Bucket]>,
        St: Store,
        W: DerefMut<Target = [Waiting]>,
    {
        let token = h.token();
        let Some(p) = self.piecewise else {
            let dest = rx.on_data(self.rank, token, h.len)?;
            if let (
                Kind::DataPart,
                Dest::Data {
                    handle,
                    envelope,
                    size,
                    ..
                },
            ) = (h.kind, &dest)
            {
                self.piecewise = Some(Piecewise {
                    token,
                    handle: *handle,
                    envelope: *envelope,
                    size: *size,
                    filled: 0,
                });
            }
            return Ok(dest);
        };
        // Another offer's data while this one's pieces are not all here:
        // the sender broke the protocol.
        if p.token != token {
            return Err(Failure::UnknownToken(token));
        }
        let end = p.filled.saturating_add(h.len);
        if end > p.size {
            return Err(Failure::DataTooLong {
                len: end,
                size: p.size,
            });
        }
        rx.stats.data_bytes = rx.stats.data_bytes.saturating_add(h.len);
        Ok(Dest::Data {
            handle: p.handle,
            envelope: p.envelope,
            size: p.size,
            at: p.filled,
        })
    }

    /// Asks `rx` what to do with the pending header: where an eager
    /// message or rendezvous data goes, or whether a request to send
    /// matched.
    ///
    /// # Errors
    ///
    /// The [`Failure`] to pass to [`Receiver::fail`] when rendezvous data
    /// names no receive waiting for it.
    pub fn decide<S, B, St, W>(
        &mut self,
        rx: &mut Receiver<S, B, St, W>,
    ) -> Result<Decision, Failure>
    where
        S: DerefMut<Target = [Slot]>,
        B: DerefMut<Target = [Bucket]>,
        St: Store,
        W: DerefMut<Target = [Waiting]>,
    {
        let Some(was_stalled) = self.undecided else {
            return Ok(Decision::Go);
        };
        let Some((h, _)) = self.reasm.current() else {
            return Ok(Decision::Go);
        };
        let decided = match h.kind {
            Kind::Data | Kind::DataPart => self.on_piece(rx, &h).map(|dest| {
                self.dest = Some(dest);
                Ok(Decision::Go)
            })?,
            Kind::Answer => rx.on_answer(h.envelope, h.len).map(|dest| {
                self.dest = Some(dest);
                Ok(Decision::Go)
            })?,
            Kind::Rts => match rx.on_rts(h.envelope, h.len, h.reference) {
                Ok(OnRts::Clear(clear)) => Ok(Decision::Clear(clear)),
                Ok(OnRts::Stored { msg }) => Ok(Decision::Stored { msg }),
                Err(stall) => Err(stall),
            },
            _ => rx.on_header(h.envelope, h.len).map(|dest| {
                self.dest = Some(dest);
                Decision::Go
            }),
        };
        match decided {
            Ok(decision) => {
                self.undecided = None;
                Ok(decision)
            }
            Err(Stall) => {
                if !was_stalled {
                    rx.stalled();
                    self.stats.stalls = self.stats.stalls.saturating_add(1);
                }
                self.undecided = Some(true);
                Ok(Decision::Wait)
            }
        }
    }

    /// Ends the current message at `rx`; `None` if no message was complete.
    /// Messages without payload, and puts, end here too, with `None`.
    pub fn finish<S, B, St, W>(&mut self, rx: &mut Receiver<S, B, St, W>) -> Option<OnEnd>
    where
        S: DerefMut<Target = [Slot]>,
        B: DerefMut<Target = [Bucket]>,
        St: Store,
        W: DerefMut<Target = [Waiting]>,
    {
        let step = self.reasm.feed(&[]).ok()?;
        let Some(Event::End(h)) = step.event else {
            return None;
        };
        self.stats.messages = self.stats.messages.saturating_add(1);
        let dest = self.dest.take()?;
        if h.kind == Kind::DataPart {
            // More pieces follow: the receive is not complete yet.
            if let Some(p) = self.piecewise.as_mut() {
                p.filled = p.filled.saturating_add(h.len);
            }
            return None;
        }
        if h.kind == Kind::Data {
            self.piecewise = None;
        }
        if matches!(dest, Dest::Direct { .. }) {
            // Placed straight into a receive: nothing is held.
            self.give_back(h.len);
        }
        Some(rx.on_end(dest, h.envelope, h.len))
    }
}
