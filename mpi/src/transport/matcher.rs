//! The receive side shared by the user-space transports: o2g-core's
//! receive state machine plus the bytes it leaves to its caller.
//!
//! The machine (`proto::receive::Receiver`, the one the kernel module
//! runs) decides *where* each message goes: a posted receive, the
//! unexpected store, or nowhere yet (the transport stops reading that
//! connection); and the matching rules of MPI 4.1 (§3.5 ordering, §3.2.4
//! wildcards, §3.8 probe and cancel) with it. This file owns the bytes:
//! the buffer each matched receive fills, and the payload of each stored
//! message. A message arrives in three steps, as the stream reassembler
//! reports it: [`Matcher::arrive`] with the header, [`Matcher::payload`]
//! for each piece in order, [`Matcher::end`]. As in the module, a stored
//! message becomes visible to receives and probes at its end; a receive
//! posted while it arrives takes it then.
//!
//! Received bytes land in a vector owned here and reach the caller's
//! buffer when the request completes. That costs one copy, and buys
//! soundness: a `Request` that is leaked (`mem::forget`) can never make the
//! transport write into memory that is no longer the caller's.
//!
//! A header's length is the sender's word, not a fact: a vector starts
//! with at most [`FIRST_RESERVE`] bytes and grows as payload arrives (at
//! most doubling), so a peer that announces 4 GiB and sends nothing costs
//! 64 KiB, not 4 GiB.

use foldhash::{HashMap, HashMapExt};

use o2g_core::proto::envelope::{Envelope, Rank, Selector};
use o2g_core::proto::matching::{Bucket, CancelError, Engine, RecvId, Slot};
use o2g_core::proto::receive::{
    Clear, Dest, Failure, Inbound, OnEnd, OnPost, Receiver, Store, Waiting,
};

use super::pool;
use crate::error::{Error, Result};

/// Capacity of each engine queue (posted receives, unexpected messages).
pub(crate) const QUEUE_CAPACITY: usize = 1 << 14;

/// The most bytes reserved for a payload before any of it arrived: a
/// message up to this long gets its whole length at once, a longer one
/// grows as its bytes come.
pub(crate) const FIRST_RESERVE: usize = 64 << 10;

/// The most bytes reserved at once for a message matched to a posted
/// receive: enough for most messages, little next to a 4 GiB announcement
/// that never sends its bytes.
pub(crate) const POSTED_RESERVE: usize = 1 << 20;

/// An empty vector for a payload announced as `len` bytes of which at
/// most `keep` are kept.
fn first_buffer(len: u64, keep: usize) -> Vec<u8> {
    let len = usize::try_from(len).unwrap_or(usize::MAX);
    pool::take(len.min(keep).min(FIRST_RESERVE))
}

/// Appends `bytes` to `data` up to `keep` bytes in all, growing the
/// reservation with what arrived: never past `keep`, and to at most twice
/// the bytes held (or [`FIRST_RESERVE`]).
fn append_bounded(data: &mut Vec<u8>, bytes: &[u8], keep: usize) {
    let take = keep.saturating_sub(data.len()).min(bytes.len());
    let want = data.len() + take;
    if want > data.capacity() {
        let target = want
            .max(data.len().saturating_mul(2))
            .max(FIRST_RESERVE)
            .min(keep);
        // From the pool, whose pages are already mapped; the old buffer
        // goes back to it.
        let mut bigger = pool::take(target);
        bigger.extend_from_slice(data);
        pool::give(std::mem::replace(data, bigger));
    }
    data.extend_from_slice(&bytes[..take]);
}

/// The caller's memory a receive in place writes.
#[derive(Clone, Copy, Debug)]
struct Dst(*mut u8);

// SAFETY: The memory is the poster's to lend (`post_in_place`'s contract)
// and only the matcher's owner writes it, through `&mut Matcher`, on
// whichever thread owns the matcher; moving it moves no access.
unsafe impl Send for Dst {}

impl Dst {
    const NONE: Self = Self(std::ptr::null_mut());

    fn is_null(self) -> bool {
        self.0.is_null()
    }
}

/// Names a posted receive until its outcome is taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct RecvToken {
    index: u32,
    generation: u32,
}

impl RecvToken {
    pub(crate) fn to_handle(self) -> u64 {
        u64::from(self.generation) << 32 | u64::from(self.index)
    }

    pub(crate) fn from_handle(h: u64) -> Self {
        Self {
            index: h as u32,
            generation: (h >> 32) as u32,
        }
    }
}

/// How a receive ended.
#[derive(Debug)]
pub(crate) enum RecvOutcome {
    /// A message matched. `len` is what the sender sent; `data` holds at
    /// most the posted capacity of it.
    Done {
        /// Envelope of the message.
        envelope: Envelope,
        /// Length the sender sent.
        len: u64,
        /// The payload, truncated to the receive's capacity.
        data: Vec<u8>,
    },
    /// A message matched a receive posted with
    /// [`Transport::post_recv_in_place`](super::Transport::post_recv_in_place):
    /// its first `written` bytes are in the caller's memory.
    InPlace {
        /// Envelope of the message.
        envelope: Envelope,
        /// Length the sender sent.
        len: u64,
        /// Bytes written, at most the receive's capacity.
        written: usize,
    },
    /// The receive was cancelled before it matched.
    Cancelled,
    /// The sender died while the message was arriving.
    Failed {
        /// World rank of the sender.
        rank: u32,
        /// What happened.
        reason: String,
    },
}

/// Where the bytes of an arriving message go, from its header to its end;
/// consumed by [`Matcher::end`] or [`Matcher::fail`].
#[derive(Debug)]
pub(crate) struct Sink {
    dest: Dest,
    envelope: Envelope,
    len: u64,
}

/// No room for the message now (the unexpected queue is full): stop
/// reading its connection and retry later.
#[derive(Debug)]
pub(crate) struct Full;

/// The machine's store in user space: region ids only, since each stored
/// payload is a vector of its own ([`Matcher::stored`]).
#[derive(Default)]
pub(crate) struct Vectors {
    next: u64,
}

impl Store for Vectors {
    fn book(&mut self, _source: Rank, _len: u64) -> Option<u64> {
        self.next = self.next.wrapping_add(1);
        Some(self.next)
    }

    fn locate(&self, _id: u64) -> u64 {
        0
    }

    fn give_back(&mut self, _id: u64) {}
}

/// Eager messages from one sender taken out of the store.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Returned {
    pub(crate) bytes: u64,
    pub(crate) msgs: u32,
}

/// The receive state machine as user space instantiates it.
pub(crate) type Machine = Receiver<Vec<Slot>, Vec<Bucket>, Vectors, Vec<Waiting>>;

#[derive(Debug)]
enum State {
    Free,
    /// Waiting for a message.
    Posted(RecvId),
    /// Matched to a request to send; waiting for its data.
    Awaiting,
    /// Matched; the message is arriving into `data`, or for a receive
    /// in place into its destination, of which `written` bytes are done.
    Filling {
        envelope: Envelope,
        len: u64,
        data: Vec<u8>,
        written: usize,
    },
    Done(RecvOutcome),
}

#[derive(Debug)]
struct Entry {
    generation: u32,
    capacity: usize,
    /// Where the payload goes for a receive posted in place
    /// ([`Matcher::post_in_place`]); null: into a vector of the matcher's.
    dst: Dst,
    /// Nobody will take the outcome: free the entry when it completes.
    released: bool,
    state: State,
}

/// Posted receives and unexpected messages of one process.
pub(crate) struct Matcher {
    rx: Machine,
    entries: Vec<Entry>,
    free: Vec<u32>,
    /// Payloads of stored messages, complete or arriving, by region id.
    stored: HashMap<u64, Vec<u8>>,
    /// Envelopes of synchronous-mode messages that matched a receive and
    /// still need their acknowledgement sent.
    sync_matched: Vec<Envelope>,
    /// Receives that took a stored request to send: their clear-to-send
    /// is owed to the sender.
    clears: Vec<Clear>,
    /// Eager bytes taken out of the store, by sender, whose credit is due
    /// back to it (one entry per sender, so it stays small where nobody
    /// takes it: transports without credit).
    returned: HashMap<u32, Returned>,
}

impl Matcher {
    /// An empty matcher.
    pub(crate) fn new() -> Self {
        let slots = || vec![Slot::EMPTY; QUEUE_CAPACITY];
        let engine = Engine::new(
            slots(),
            slots(),
            vec![Bucket::EMPTY; QUEUE_CAPACITY],
            0x6f32,
        )
        .unwrap_or_else(|_| unreachable!("bucket storage is not empty"));
        Self {
            rx: Receiver::new(
                engine,
                Vectors::default(),
                vec![Waiting::EMPTY; QUEUE_CAPACITY],
                u32::MAX,
            ),
            entries: Vec::new(),
            free: Vec::new(),
            stored: HashMap::new(),
            sync_matched: Vec::new(),
            clears: Vec::new(),
            returned: HashMap::new(),
        }
    }

    /// The state machine, for a connection's [`Inbound`] to decide and end
    /// messages with.
    pub(crate) fn machine(&mut self) -> &mut Machine {
        &mut self.rx
    }

    fn entry(&mut self, t: RecvToken) -> Option<&mut Entry> {
        self.entries
            .get_mut(t.index as usize)
            .filter(|e| e.generation == t.generation && !matches!(e.state, State::Free))
    }

    /// Returns a receive's entry to the free list; its token goes stale.
    fn free_entry(&mut self, t: RecvToken) {
        if let Some(e) = self.entry(t) {
            e.state = State::Free;
            e.generation = e.generation.wrapping_add(1);
            e.released = false;
            self.free.push(t.index);
        }
    }

    /// Sets a receive's outcome, or frees it if nobody waits for it.
    fn complete(&mut self, t: RecvToken, outcome: RecvOutcome) {
        let Some(e) = self.entry(t) else { return };
        if e.released {
            self.free_entry(t);
        } else {
            e.state = State::Done(outcome);
        }
    }

    /// Completes receive `t` with a stored payload, truncated to its
    /// capacity.
    fn complete_from_store(&mut self, t: RecvToken, envelope: Envelope, len: u64, region: u64) {
        self.note_match(envelope);
        let r = self.returned.entry(envelope.source).or_default();
        r.bytes = r.bytes.saturating_add(len);
        r.msgs = r.msgs.saturating_add(1);
        let mut data = self.stored.remove(&region).unwrap_or_default();
        let (cap, dst) = self
            .entry(t)
            .map_or((0, Dst::NONE), |e| (e.capacity, e.dst));
        data.truncate(cap);
        if dst.is_null() {
            self.complete(
                t,
                RecvOutcome::Done {
                    envelope,
                    len,
                    data,
                },
            );
        } else {
            // SAFETY: `post_in_place`'s contract: `dst` holds `cap` writable
            // bytes nobody else touches until the outcome is taken; `data`
            // is at most `cap` long and is the matcher's own vector.
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst.0, data.len()) };
            let written = data.len();
            pool::give(data);
            self.complete(
                t,
                RecvOutcome::InPlace {
                    envelope,
                    len,
                    written,
                },
            );
        }
    }

    /// Posts a receive for at most `capacity` bytes (`MPI_Irecv`).
    pub(crate) fn post(&mut self, sel: Selector, capacity: usize) -> Result<RecvToken> {
        // SAFETY: A null destination is never written.
        unsafe { self.post_in_place(sel, std::ptr::null_mut(), capacity) }
    }

    /// Posts a receive whose payload goes straight into the `capacity`
    /// bytes at `dst` as it arrives, completing with
    /// [`RecvOutcome::InPlace`]; a null `dst` posts one that completes
    /// with the payload in a vector ([`RecvOutcome::Done`]).
    ///
    /// # Safety
    ///
    /// Unless `dst` is null or `capacity` 0, `dst..dst + capacity` is
    /// valid for writes and touched by nobody else until [`Matcher::test`]
    /// returned the outcome or [`Matcher::release`] returned (the
    /// transport contract's `post_recv_in_place`).
    pub(crate) unsafe fn post_in_place(
        &mut self,
        sel: Selector,
        dst: *mut u8,
        capacity: usize,
    ) -> Result<RecvToken> {
        let index = match self.free.pop() {
            Some(i) => i,
            None => {
                let i = u32::try_from(self.entries.len())
                    .map_err(|_| Error::ResourceExhausted("receive requests"))?;
                self.entries.push(Entry {
                    generation: 0,
                    capacity: 0,
                    dst: Dst::NONE,
                    released: false,
                    state: State::Free,
                });
                i
            }
        };
        let e = &mut self.entries[index as usize];
        let token = RecvToken {
            index,
            generation: e.generation,
        };
        e.capacity = capacity;
        e.dst = if capacity == 0 { Dst::NONE } else { Dst(dst) };
        e.state = State::Posted(RecvId::from_raw(0));
        match self.rx.post(sel, token.to_handle()) {
            Ok(OnPost::Queued(id)) => {
                self.entries[index as usize].state = State::Posted(id);
            }
            Ok(OnPost::FromStore { msg, info, region }) => {
                self.complete_from_store(token, info.envelope, info.len, region.id);
                let _ = self.rx.release(msg);
            }
            Ok(OnPost::Clear(clear)) => {
                self.entries[index as usize].state = State::Awaiting;
                self.clears.push(clear);
            }
            Err(_) => {
                self.free_entry(token);
                return Err(Error::ResourceExhausted("posted receive queue"));
            }
        }
        Ok(token)
    }

    /// Remembers a synchronous-mode message that just matched.
    fn note_match(&mut self, envelope: Envelope) {
        if envelope.is_sync() {
            self.sync_matched.push(envelope);
        }
    }

    /// Whether a clear-to-send or credit is due ([`Matcher::take_clears`],
    /// [`Matcher::take_returned`]): the cheap test the progress loop makes
    /// every round.
    pub(crate) fn owes(&self) -> bool {
        !self.clears.is_empty() || !self.returned.is_empty()
    }

    /// The clear-to-send messages owed since the last call, for receives
    /// posted after their request to send arrived.
    pub(crate) fn take_clears(&mut self) -> Vec<Clear> {
        std::mem::take(&mut self.clears)
    }

    /// The eager bytes taken out of the store since the last call, by
    /// sender: credit due back to each.
    pub(crate) fn take_returned(&mut self) -> Vec<(u32, Returned)> {
        self.returned.drain().collect()
    }

    /// Envelopes of the synchronous-mode messages matched since the last
    /// call, oldest first.
    pub(crate) fn take_sync_matches(&mut self) -> Vec<Envelope> {
        std::mem::take(&mut self.sync_matched)
    }

    /// Whether [`Matcher::take_sync_matches`] would give any.
    pub(crate) fn has_sync_matches(&self) -> bool {
        !self.sync_matched.is_empty()
    }

    /// The outcome of a completed receive (`MPI_Test`); frees the token.
    pub(crate) fn test(&mut self, t: RecvToken) -> Option<RecvOutcome> {
        let Some(e) = self.entry(t) else {
            return Some(RecvOutcome::Failed {
                rank: u32::MAX,
                reason: "stale receive token".into(),
            });
        };
        let State::Done(outcome) = &mut e.state else {
            return None;
        };
        let outcome = std::mem::replace(outcome, RecvOutcome::Cancelled);
        self.free_entry(t);
        Some(outcome)
    }

    /// Cancels a receive that has not matched (`MPI_Cancel`).
    pub(crate) fn cancel(&mut self, t: RecvToken) -> bool {
        let Some(e) = self.entry(t) else { return false };
        let State::Posted(id) = e.state else {
            return false;
        };
        match self.rx.cancel(id) {
            Ok(_) => {
                self.complete(t, RecvOutcome::Cancelled);
                true
            }
            Err(CancelError::TooLate | CancelError::InvalidId) => false,
        }
    }

    /// Forgets a receive: cancels it, or frees it once it completes.
    pub(crate) fn release(&mut self, t: RecvToken) {
        if self.cancel(t) || matches!(self.entry(t).map(|e| &e.state), Some(State::Done(_))) {
            self.free_entry(t);
        } else if let Some(e) = self.entry(t) {
            e.released = true;
            // The caller may reuse its memory once this returns: the rest
            // of the message is dropped.
            e.dst = Dst::NONE;
            e.capacity = 0;
        }
    }

    /// `MPI_Iprobe`: the message a receive with `sel` would take now.
    pub(crate) fn probe(&self, sel: Selector) -> Option<(Envelope, u64)> {
        self.rx
            .probe(sel)
            .map(|(_, info)| (info.envelope, info.len))
    }

    /// A header arrived: where do its `len` payload bytes go?
    pub(crate) fn arrive(&mut self, envelope: Envelope, len: u64) -> Result<Sink, Full> {
        let dest = self.rx.on_header(envelope, len).map_err(|_| Full)?;
        self.placed(&dest, envelope, len);
        Ok(Sink {
            dest,
            envelope,
            len,
        })
    }

    /// The machine placed a message of `len` bytes with `envelope`
    /// (for rendezvous data, the request's): makes room for its payload.
    pub(crate) fn placed(&mut self, dest: &Dest, envelope: Envelope, len: u64) {
        match *dest {
            Dest::Direct { handle } | Dest::Data { handle, .. } => {
                let (envelope, len) = match *dest {
                    Dest::Data { envelope, size, .. } => (envelope, size),
                    _ => (envelope, len),
                };
                self.note_match(envelope);
                if let Some(e) = self.entry(RecvToken::from_handle(handle)) {
                    // The receiver sized its own buffer, so up to
                    // POSTED_RESERVE of it is reserved at once (a stored
                    // message, which the peer sizes, starts smaller):
                    // most messages then need no reallocation.
                    let keep = usize::try_from(len)
                        .map_or(e.capacity, |l| l.min(e.capacity))
                        .min(POSTED_RESERVE);
                    let data = if e.dst.is_null() {
                        pool::take(keep)
                    } else {
                        Vec::new()
                    };
                    e.state = State::Filling {
                        envelope,
                        len,
                        written: 0,
                        data,
                    };
                }
            }
            Dest::Stored(region) => {
                self.stored.insert(region.id, first_buffer(len, usize::MAX));
            }
        }
    }

    /// The next payload bytes of the message going to `sink`.
    pub(crate) fn payload(&mut self, sink: &Sink, bytes: &[u8]) {
        self.append(&sink.dest, sink.len, bytes);
    }

    /// The next payload bytes of a message of `len` bytes going to `dest`.
    pub(crate) fn append(&mut self, dest: &Dest, len: u64, bytes: &[u8]) {
        match *dest {
            Dest::Direct { handle } | Dest::Data { handle, .. } => {
                let Some(e) = self.entry(RecvToken::from_handle(handle)) else {
                    return;
                };
                let (cap, dst) = (e.capacity, e.dst);
                if let State::Filling { data, written, .. } = &mut e.state {
                    if dst.is_null() {
                        append_bounded(data, bytes, cap);
                    } else {
                        let take = cap.saturating_sub(*written).min(bytes.len());
                        // SAFETY: `post_in_place`'s contract: `dst` holds
                        // `cap` writable bytes that are ours until the
                        // outcome is taken or the receive released (which
                        // nulls `dst`); `written + take <= cap`.
                        unsafe {
                            std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst.0.add(*written), take)
                        };
                        *written += take;
                    }
                }
            }
            Dest::Stored(region) => {
                if let Some(data) = self.stored.get_mut(&region.id) {
                    let keep = usize::try_from(len).unwrap_or(usize::MAX);
                    append_bounded(data, bytes, keep);
                }
            }
        }
    }

    /// For a message arriving into a receive posted in place: where its
    /// next payload bytes go and how many more fit, so that a transport
    /// can read them from its socket straight there (one copy, the
    /// kernel's) and report them with [`Matcher::wrote`]. `None` for
    /// anything else: those bytes go through [`Matcher::append`].
    pub(crate) fn next_place(&mut self, dest: &Dest) -> Option<(*mut u8, usize)> {
        let (Dest::Direct { handle } | Dest::Data { handle, .. }) = *dest else {
            return None;
        };
        let e = self.entry(RecvToken::from_handle(handle))?;
        let State::Filling { written, .. } = e.state else {
            return None;
        };
        if e.dst.is_null() || written >= e.capacity {
            return None;
        }
        // SAFETY: `written < capacity`, so the result is within the
        // `capacity` bytes `post_in_place`'s caller lent.
        Some((unsafe { e.dst.0.add(written) }, e.capacity - written))
    }

    /// `n` bytes went to where [`Matcher::next_place`] said.
    pub(crate) fn wrote(&mut self, dest: &Dest, n: usize) {
        let (Dest::Direct { handle } | Dest::Data { handle, .. }) = *dest else {
            return;
        };
        if let Some(Entry {
            state: State::Filling { written, .. },
            capacity,
            ..
        }) = self.entry(RecvToken::from_handle(handle))
        {
            *written = (*written + n).min(*capacity);
        }
    }

    /// The message going to `sink` is complete.
    pub(crate) fn end(&mut self, sink: Sink) {
        let end = self.rx.on_end(sink.dest, sink.envelope, sink.len);
        self.ended(end);
    }

    /// Carries out what the machine decided at a message's end.
    pub(crate) fn ended(&mut self, end: OnEnd) {
        match end {
            OnEnd::Completed { handle, .. } => {
                let t = RecvToken::from_handle(handle);
                let Some(e) = self.entry(t) else { return };
                let in_place = !e.dst.is_null();
                let State::Filling {
                    envelope,
                    len,
                    data,
                    written,
                } = &mut e.state
                else {
                    return;
                };
                let outcome = if in_place {
                    RecvOutcome::InPlace {
                        envelope: *envelope,
                        len: *len,
                        written: *written,
                    }
                } else {
                    RecvOutcome::Done {
                        envelope: *envelope,
                        len: *len,
                        data: std::mem::take(data),
                    }
                };
                self.complete(t, outcome);
            }
            OnEnd::Stored { .. } => {}
            OnEnd::CopyOut {
                handle,
                envelope,
                len,
                region,
            } => {
                // The copy is a move of the stored vector.
                self.complete_from_store(RecvToken::from_handle(handle), envelope, len, region.id);
                self.rx.copied(region);
            }
        }
    }

    /// The sender (world rank `rank`) died while its message was arriving.
    pub(crate) fn fail(&mut self, sink: Sink, rank: u32, reason: &str) {
        if let Dest::Stored(region) = &sink.dest {
            self.stored.remove(&region.id);
        }
        let mut failed = None;
        self.rx.drop_dest(sink.dest, |handle| failed = Some(handle));
        if let Some(handle) = failed {
            let outcome = RecvOutcome::Failed {
                rank,
                reason: reason.to_owned(),
            };
            self.complete(RecvToken::from_handle(handle), outcome);
        }
    }

    /// Bytes receive `handle` can take (0 for a stale handle).
    pub(crate) fn capacity(&mut self, handle: u64) -> u64 {
        self.entry(RecvToken::from_handle(handle))
            .map_or(0, |e| e.capacity as u64)
    }

    /// The clear-to-send of `token` cannot go to world rank `rank` (it is
    /// gone, for `reason`): the receive waiting for that data fails.
    pub(crate) fn abandon(&mut self, token: u64, rank: u32, reason: &str) {
        if let Some(f) = self.rx.abandon(token) {
            let outcome = RecvOutcome::Failed {
                rank,
                reason: reason.to_owned(),
            };
            self.complete(RecvToken::from_handle(f.handle), outcome);
        }
    }

    /// The connection `inbound` failed for `why` (`reason` in words):
    /// the receive it was filling, those posted for its rank and those
    /// waiting for its rendezvous data fail; a half-stored message is
    /// dropped. Complete stored messages stay receivable.
    pub(crate) fn fail_conn(&mut self, inbound: &mut Inbound, why: Failure, reason: &str) {
        if let Some(Dest::Stored(region)) = inbound.dest() {
            self.stored.remove(&region.id);
        }
        let rank = inbound.rank();
        let mut failed = Vec::new();
        self.rx.fail(inbound, why, false, |f| failed.push(f.handle));
        for handle in failed {
            let outcome = RecvOutcome::Failed {
                rank,
                reason: reason.to_owned(),
            };
            self.complete(RecvToken::from_handle(handle), outcome);
        }
    }

    /// Messages in the unexpected store, complete or still arriving.
    #[cfg(test)]
    pub(crate) fn unexpected_count(&self) -> usize {
        self.stored.len()
    }

    /// Bytes reserved for payloads, received or still to come.
    #[cfg(test)]
    pub(crate) fn reserved_bytes(&self) -> usize {
        let filling = self.entries.iter().map(|e| match &e.state {
            State::Filling { data, .. } => data.capacity(),
            _ => 0,
        });
        let stored = self.stored.values().map(Vec::capacity);
        filling.chain(stored).sum()
    }

    /// A whole message from this process to itself.
    pub(crate) fn deliver(&mut self, envelope: Envelope, data: &[u8]) -> Result<(), Full> {
        let sink = self.arrive(envelope, data.len() as u64)?;
        self.payload(&sink, data);
        self.end(sink);
        Ok(())
    }

    /// A send of this process to itself, for a transport's `send`: a full
    /// unexpected queue is the caller's error.
    pub(crate) fn deliver_local(&mut self, envelope: Envelope, data: &[u8]) -> Result<()> {
        self.deliver(envelope, data)
            .map_err(|_| Error::ResourceExhausted("unexpected-message queue"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use o2g_core::proto::envelope::{SourceSel, TagSel};

    const ENV: Envelope = Envelope {
        source: 1,
        tag: 5,
        context: 0,
    };

    fn any() -> Selector {
        Selector {
            source: SourceSel::Any,
            tag: TagSel::Any,
            context: 0,
        }
    }

    #[test]
    fn posted_then_arrived_and_truncated() {
        let mut m = Matcher::new();
        let t = m.post(any(), 2).unwrap();
        assert!(m.test(t).is_none());
        let sink = m.arrive(ENV, 3).unwrap();
        m.payload(&sink, b"ab");
        m.payload(&sink, b"c");
        m.end(sink);
        match m.test(t) {
            Some(RecvOutcome::Done {
                envelope,
                len,
                data,
            }) => {
                assert_eq!((envelope, len, &data[..]), (ENV, 3, &b"ab"[..]));
            }
            other => panic!("{other:?}"),
        }
    }

    fn in_place(outcome: Option<RecvOutcome>) -> (u64, usize) {
        match outcome {
            Some(RecvOutcome::InPlace { len, written, .. }) => (len, written),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn receives_in_place_write_the_callers_memory_and_stop_when_released() {
        let mut m = Matcher::new();
        let mut buf = [0u8; 4];
        // Posted first: the payload goes straight in, truncated.
        // SAFETY: `buf` outlives the receive and is untouched until its
        // outcome is taken.
        let t = unsafe { m.post_in_place(any(), buf.as_mut_ptr(), 3) }.unwrap();
        let sink = m.arrive(ENV, 5).unwrap();
        m.payload(&sink, b"ab");
        m.payload(&sink, b"cde");
        m.end(sink);
        assert_eq!(in_place(m.test(t)), (5, 3));
        assert_eq!(&buf, b"abc\0");
        // Stored first: copied in when the receive is posted.
        m.deliver(ENV, b"xy").unwrap();
        // SAFETY: As above.
        let t = unsafe { m.post_in_place(any(), buf.as_mut_ptr(), 4) }.unwrap();
        assert_eq!(in_place(m.test(t)), (2, 2));
        assert_eq!(&buf, b"xyc\0");
        // Released mid-message: the rest is dropped, the memory untouched.
        // SAFETY: As above; the release ends the matcher's use of `buf`.
        let t = unsafe { m.post_in_place(any(), buf.as_mut_ptr(), 4) }.unwrap();
        let sink = m.arrive(ENV, 4).unwrap();
        m.payload(&sink, b"1");
        m.release(t);
        m.payload(&sink, b"234");
        m.end(sink);
        assert_eq!(&buf, b"1yc\0");
    }

    #[test]
    fn a_receive_posted_mid_message_takes_it_at_its_end() {
        let mut m = Matcher::new();
        let sink = m.arrive(ENV, 2).unwrap();
        m.payload(&sink, b"x");
        // Half stored: not visible yet, so the receive queues.
        assert_eq!(m.probe(any()), None);
        let t = m.post(Selector::exact(ENV), 8).unwrap();
        assert!(m.test(t).is_none());
        m.payload(&sink, b"y");
        m.end(sink);
        assert!(matches!(m.test(t), Some(RecvOutcome::Done { data, .. }) if data == b"xy"));
        assert_eq!(m.probe(any()), None);
        assert_eq!(m.unexpected_count(), 0);
    }

    fn reserved(m: &Matcher) -> usize {
        m.reserved_bytes()
    }

    #[test]
    fn an_announced_length_reserves_only_what_arrives() {
        const ANNOUNCED: u64 = 4 << 30;
        const BOUND: usize = 1 << 20;
        let mut m = Matcher::new();
        // Unexpected: a header announcing 4 GiB, and nothing else yet.
        let stored = m.arrive(ENV, ANNOUNCED).unwrap();
        assert!(reserved(&m) <= BOUND, "reserved {} bytes", reserved(&m));
        // A posted receive of 4 GiB: its message announces 4 GiB too.
        let t = m
            .post(Selector::exact(Envelope { tag: 6, ..ENV }), 4 << 30)
            .unwrap();
        let _ = m.arrive(Envelope { tag: 6, ..ENV }, ANNOUNCED).unwrap();
        assert!(reserved(&m) <= 2 * BOUND, "reserved {} bytes", reserved(&m));
        // As bytes arrive the reservation follows them, at most doubling.
        let mut got = 0usize;
        for _ in 0..2000 {
            m.payload(&stored, &[7; 1000]);
            got += 1000;
            let r = reserved(&m);
            assert!(
                r <= 2 * BOUND + 2 * got,
                "{r} bytes reserved after {got} arrived"
            );
        }
        assert!(m.test(t).is_none());
    }

    #[test]
    fn a_short_message_fits_its_first_reservation() {
        let mut m = Matcher::new();
        let sink = m.arrive(ENV, 100).unwrap();
        m.payload(&sink, &[1; 60]);
        m.payload(&sink, &[2; 40]);
        m.end(sink);
        assert_eq!(reserved(&m), 100);
        let t = m.post(Selector::exact(ENV), 100).unwrap();
        match m.test(t) {
            Some(RecvOutcome::Done { data, len, .. }) => {
                assert_eq!(len, 100);
                assert_eq!(&data[..60], &[1; 60]);
                assert_eq!(&data[60..], &[2; 40]);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn cancel_and_release() {
        let mut m = Matcher::new();
        let t = m.post(any(), 1).unwrap();
        assert!(m.cancel(t));
        assert!(matches!(m.test(t), Some(RecvOutcome::Cancelled)));
        let t = m.post(any(), 1).unwrap();
        let sink = m.arrive(ENV, 1).unwrap();
        assert!(!m.cancel(t));
        m.release(t);
        m.payload(&sink, b"z");
        m.end(sink);
        // The released entry was freed and its slot is reused.
        let t2 = m.post(any(), 1).unwrap();
        assert_eq!(t2.index, t.index);
        assert_ne!(t2.generation, t.generation);
    }
}
