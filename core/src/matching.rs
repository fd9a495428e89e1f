//! The MPI matching engine: posted receives against arriving messages.
//!
//! One [`Engine`] serves one MPI process. It keeps two queues, both in
//! storage the caller provides at construction:
//!
//! - the *posted receive queue*: receives waiting for a message, each with a
//!   [`Selector`] (source or `MPI_ANY_SOURCE`, tag or `MPI_ANY_TAG`, context
//!   id) and an opaque 64-bit user handle;
//! - the *unexpected message queue*: messages that arrived before any
//!   matching receive, each with its [`Envelope`], payload length and an
//!   opaque 64-bit location of its stored payload.
//!
//! # MPI rules implemented (MPI 4.1)
//!
//! - **Envelope and wildcards** (§3.2.3, §3.2.4): a message matches a
//!   receive when the context ids are equal, the source is equal or the
//!   receive says `MPI_ANY_SOURCE`, and the tag is equal or the receive
//!   says `MPI_ANY_TAG`. There is no wildcard context, so communicators are
//!   isolated from each other (§7.2.2). The synchronous-send bit of a
//!   context ([`SYNC_FLAG`]) is ignored: a standard receive takes an
//!   `MPI_Ssend` message; the engine hands the full envelope back so the
//!   caller can acknowledge it.
//! - **Non-overtaking** (§3.5, "Order"): among the unexpected messages that
//!   match a new receive, the one that arrived first is taken. A
//!   connection delivers one sender's messages in sending order, so a
//!   receive can never take a sender's later message while an earlier
//!   matching one waits. Symmetrically, among the posted receives that
//!   match an arriving message, the one posted first is taken.
//! - **Probe** (§3.8.1): [`Engine::probe`] finds the message the
//!   corresponding receive would take, without taking it. **Matched
//!   probe** (§3.8.2): [`Engine::claim`] then takes exactly that message out
//!   of matching (`MPI_Mprobe` = probe + claim under the caller's lock).
//! - **Cancel** (§3.8.4): [`Engine::cancel`] removes a posted receive that
//!   has not matched; one that already matched reports
//!   [`CancelError::TooLate`] and completes normally instead.
//! - **Resource limits** (§3.5, "Resource limitations"): both queues are
//!   bounded. A full queue is a distinct error ([`QueueFull`]) and changes
//!   nothing, so the caller can stop reading the stream (TCP flow control
//!   then holds the sender back) and retry later; no message is dropped.
//!
//! # Not supported here (the caller's business, or later work)
//!
//! - `MPI_PROC_NULL` receives (they complete at once without matching), and
//!   truncation: the caller compares a matched message's length with the
//!   receive buffer (`MPI_ERR_TRUNCATE`, §3.2.4).
//! - Send-side cancel, synchronous/ready modes and rendezvous (§3.4): the
//!   wire has room for them, the engine does not need to know.
//! - Inter-communicators: a context id is all the engine sees.
//! - Locking and thread safety: the engine takes `&mut self`; the caller
//!   holds its lock around every call, which is also what makes a racing
//!   post and arrival resolve exactly once.
//!
//! # Cost
//!
//! Exact receives and all unexpected messages are hashed by (source, tag,
//! context) into the caller's bucket array, each bucket holding an
//! index-linked FIFO list per queue. Wildcard receives sit on one FIFO list
//! that is scanned linearly, and unexpected messages are also threaded on
//! one arrival-order list that wildcard receives and probes scan linearly.
//! Every receive carries a global post sequence number, which decides
//! between the first matching exact receive and the first matching
//! wildcard receive; the wildcard scan stops as soon as it passes the exact
//! candidate. So an arrival, and a post with no wildcard, cost O(1)
//! amortised while buckets are about as many as entries (benchmarked in
//! `core/benches/matching.rs`), and wildcard operations cost O(number of
//! wildcard receives or unexpected messages).
//!
//! Receive ids and message ids carry a generation, so a stale id (a receive
//! already matched, a message already released) is recognised, until the
//! same slot has been reused 2^32 times.

use core::ops::DerefMut;

use super::envelope::{Envelope, Selector, SourceSel, TagSel, SYNC_FLAG};
use super::list::{at, Links, List, Node, Which, NIL};

/// One entry of the caller-provided storage for either queue.
///
/// Its contents are private; make storage with [`Slot::EMPTY`] (or
/// `Default`). One 64-byte cache line each on 64-bit machines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    state: SlotState,
    generation: u32,
    envelope: Envelope,
    any_source: bool,
    any_tag: bool,
    /// The user handle (posted) or the payload location (unexpected).
    value: u64,
    /// Payload length (unexpected only).
    len: u64,
    /// Post sequence number (posted only).
    seq: u64,
    /// Hash chain, wildcard list or free list.
    chain: Links,
    /// Arrival-order list (unexpected only).
    order: Links,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SlotState {
    Free,
    /// A posted receive waiting for a message.
    Posted,
    /// An unexpected message waiting for a receive.
    Queued,
    /// An unexpected message taken by a receive or a matched probe, kept
    /// until the caller releases it.
    Claimed,
}

impl Slot {
    /// An unused slot.
    pub const EMPTY: Slot = Slot {
        state: SlotState::Free,
        generation: 0,
        envelope: Envelope {
            source: 0,
            tag: 0,
            context: 0,
        },
        any_source: false,
        any_tag: false,
        value: 0,
        len: 0,
        seq: 0,
        chain: Links::NONE,
        order: Links::NONE,
    };

    const fn selector(&self) -> Selector {
        Selector {
            source: if self.any_source {
                SourceSel::Any
            } else {
                SourceSel::Rank(self.envelope.source)
            },
            tag: if self.any_tag {
                TagSel::Any
            } else {
                TagSel::Tag(self.envelope.tag)
            },
            context: self.envelope.context,
        }
    }

    const fn info(&self) -> MsgInfo {
        MsgInfo {
            envelope: self.envelope,
            len: self.len,
            location: self.value,
        }
    }
}

impl Default for Slot {
    fn default() -> Self {
        Self::EMPTY
    }
}

impl Node for Slot {
    fn links(&self, which: Which) -> Links {
        match which {
            Which::Chain => self.chain,
            Which::Order => self.order,
        }
    }

    fn links_mut(&mut self, which: Which) -> &mut Links {
        match which {
            Which::Chain => &mut self.chain,
            Which::Order => &mut self.order,
        }
    }
}

/// One hash bucket of the caller-provided bucket array.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bucket {
    posted: List,
    unexpected: List,
}

impl Bucket {
    /// An empty bucket.
    pub const EMPTY: Bucket = Bucket {
        posted: List::EMPTY,
        unexpected: List::EMPTY,
    };
}

impl Default for Bucket {
    fn default() -> Self {
        Self::EMPTY
    }
}

/// Names a posted receive, for [`Engine::cancel`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RecvId {
    index: u32,
    generation: u32,
}

/// Names an unexpected message, from its arrival until its release.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MsgId {
    index: u32,
    generation: u32,
}

macro_rules! raw_id {
    ($t:ty) => {
        impl $t {
            /// The id as one number, to hand across an ABI.
            pub fn to_raw(self) -> u64 {
                u64::from(self.generation).rotate_left(32) | u64::from(self.index)
            }

            /// The id [`Self::to_raw`] made. Any number is accepted; the
            /// engine refuses ids that name nothing.
            pub const fn from_raw(raw: u64) -> Self {
                Self {
                    index: raw as u32,
                    generation: raw.rotate_left(32) as u32,
                }
            }
        }
    };
}
raw_id!(RecvId);
raw_id!(MsgId);

/// An unexpected message as the engine records it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MsgInfo {
    /// Source, tag and context.
    pub envelope: Envelope,
    /// Payload length in bytes.
    pub len: u64,
    /// Where the caller stored (or will store) the payload.
    pub location: u64,
}

/// What [`Engine::post`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Posted {
    /// The receive took this unexpected message, which is now claimed:
    /// out of matching, kept until [`Engine::release`].
    Matched(MsgId, MsgInfo),
    /// No message matched; the receive is queued.
    Queued(RecvId),
}

/// What [`Engine::arrive`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// The message matched the posted receive with this user handle, which
    /// is no longer queued.
    Matched {
        /// The handle given to [`Engine::post`].
        handle: u64,
    },
    /// No receive matched; the message is queued as unexpected.
    Unexpected(MsgId),
}

/// The queue that would have to grow is full; nothing changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct QueueFull;

/// The id names no current entry (released, or never made).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StaleId;

/// Why [`Engine::cancel`] did not cancel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CancelError {
    /// The receive is no longer posted: it matched a message (or was
    /// cancelled already). MPI then completes it normally (§3.8.4).
    TooLate,
    /// The id is out of range for this engine.
    InvalidId,
}

/// Why [`Engine::new`] refused its storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConfigError {
    /// At least one bucket is needed.
    NoBuckets,
}

/// The matching engine over caller-provided storage.
///
/// `S` holds slots (one storage for posted receives, one for unexpected
/// messages) and `B` hash buckets; anything that derefs to a mutable slice
/// works: `&mut [Slot]`, `Vec<Slot>`, the kernel's `KVec<Slot>`. The number
/// of slots is each queue's capacity. About as many buckets as the larger
/// queue keeps exact matching O(1); only the largest power of two not above
/// `buckets.len()` of them is used.
pub struct Engine<S, B> {
    posted: S,
    unexpected: S,
    buckets: B,
    mask: usize,
    seed: u64,
    /// Posted receives with a wildcard, in posting order.
    wild: List,
    /// Queued unexpected messages, in arrival order.
    arrivals: List,
    free_posted: u32,
    free_unexpected: u32,
    posted_len: usize,
    unexpected_len: usize,
    next_seq: u64,
}

impl<S, B> Engine<S, B>
where
    S: DerefMut<Target = [Slot]>,
    B: DerefMut<Target = [Bucket]>,
{
    /// An empty engine over this storage; its previous contents are
    /// overwritten. `seed` perturbs the hash (any value works).
    ///
    /// # Errors
    ///
    /// [`ConfigError::NoBuckets`] if `buckets` is empty.
    pub fn new(
        mut posted: S,
        mut unexpected: S,
        mut buckets: B,
        seed: u64,
    ) -> Result<Self, ConfigError> {
        let Some(bits) = buckets.len().checked_ilog2() else {
            return Err(ConfigError::NoBuckets);
        };
        let mask = 1usize.checked_shl(bits).map_or(0, |n| n.wrapping_sub(1));
        buckets.fill(Bucket::EMPTY);
        let free_posted = init_free_list(&mut posted);
        let free_unexpected = init_free_list(&mut unexpected);
        Ok(Self {
            posted,
            unexpected,
            buckets,
            mask,
            seed,
            wild: List::EMPTY,
            arrivals: List::EMPTY,
            free_posted,
            free_unexpected,
            posted_len: 0,
            unexpected_len: 0,
            next_seq: 0,
        })
    }

    /// Posts a receive: takes the first-arrived matching unexpected
    /// message, or queues the receive behind all earlier ones.
    ///
    /// # Errors
    ///
    /// [`QueueFull`] if nothing matched and the posted queue is full.
    pub fn post(&mut self, sel: Selector, handle: u64) -> Result<Posted, QueueFull> {
        if let Some(index) = self.find_unexpected(&sel) {
            let id = self.claim_at(index);
            let info = self.unexpected.get(at(index)).map(Slot::info);
            if let (Some(id), Some(info)) = (id, info) {
                return Ok(Posted::Matched(id, info));
            }
        }
        let index = self.free_posted;
        let seq = self.next_seq;
        let Some(slot) = self.posted.get_mut(at(index)) else {
            return Err(QueueFull);
        };
        self.free_posted = slot.chain.next;
        let (source, any_source) = match sel.source {
            SourceSel::Rank(r) => (r, false),
            SourceSel::Any => (0, true),
        };
        let (tag, any_tag) = match sel.tag {
            TagSel::Tag(t) => (t, false),
            TagSel::Any => (0, true),
        };
        *slot = Slot {
            state: SlotState::Posted,
            generation: slot.generation,
            envelope: Envelope {
                source,
                tag,
                context: sel.context & !SYNC_FLAG,
            },
            any_source,
            any_tag,
            value: handle,
            seq,
            ..Slot::EMPTY
        };
        let id = RecvId {
            index,
            generation: slot.generation,
        };
        // Sequence numbers only order receives; 2^64 posts will not happen.
        self.next_seq = seq.wrapping_add(1);
        match sel.as_exact() {
            Some(env) => {
                let b = self.bucket_of(&env);
                if let Some(bucket) = self.buckets.get_mut(b) {
                    bucket
                        .posted
                        .push_back(&mut self.posted, index, Which::Chain);
                }
            }
            None => self.wild.push_back(&mut self.posted, index, Which::Chain),
        }
        self.posted_len = self.posted_len.saturating_add(1);
        Ok(Posted::Queued(id))
    }

    /// A message with this envelope arrived: hands it to the first-posted
    /// matching receive, or queues it as unexpected with its payload
    /// `location` (which [`Engine::set_location`] can change later, for a
    /// caller that finds room for the payload only afterwards).
    ///
    /// # Errors
    ///
    /// [`QueueFull`] if no receive matched and the unexpected queue is full.
    pub fn arrive(
        &mut self,
        envelope: Envelope,
        len: u64,
        location: u64,
    ) -> Result<Arrival, QueueFull> {
        if let Some(index) = self.find_posted(&envelope) {
            if let Some(handle) = self.remove_posted(index) {
                return Ok(Arrival::Matched { handle });
            }
        }
        let index = self.free_unexpected;
        let Some(slot) = self.unexpected.get_mut(at(index)) else {
            return Err(QueueFull);
        };
        self.free_unexpected = slot.chain.next;
        *slot = Slot {
            state: SlotState::Queued,
            generation: slot.generation,
            envelope,
            value: location,
            len,
            ..Slot::EMPTY
        };
        let id = MsgId {
            index,
            generation: slot.generation,
        };
        let b = self.bucket_of(&envelope);
        if let Some(bucket) = self.buckets.get_mut(b) {
            bucket
                .unexpected
                .push_back(&mut self.unexpected, index, Which::Chain);
        }
        self.arrivals
            .push_back(&mut self.unexpected, index, Which::Order);
        self.unexpected_len = self.unexpected_len.saturating_add(1);
        Ok(Arrival::Unexpected(id))
    }

    /// Hands a message with this envelope to the first-posted matching
    /// receive, if any, and returns that receive's handle; otherwise
    /// changes nothing.
    ///
    /// This is the first half of [`Engine::arrive`], for a caller that
    /// stores an unmatched payload before it makes the message visible to
    /// receives (the kernel module streams it into its dump area first and
    /// calls `arrive` when the payload is complete).
    pub fn match_posted(&mut self, envelope: Envelope) -> Option<u64> {
        let index = self.find_posted(&envelope)?;
        self.remove_posted(index)
    }

    /// Cancels a posted receive and returns its user handle.
    ///
    /// # Errors
    ///
    /// [`CancelError::TooLate`] if the receive already matched (or was
    /// cancelled); [`CancelError::InvalidId`] if the id is out of range.
    pub fn cancel(&mut self, id: RecvId) -> Result<u64, CancelError> {
        let slot = self
            .posted
            .get(at(id.index))
            .ok_or(CancelError::InvalidId)?;
        if slot.state != SlotState::Posted || slot.generation != id.generation {
            return Err(CancelError::TooLate);
        }
        self.remove_posted(id.index).ok_or(CancelError::TooLate)
    }

    /// The unexpected message a receive with this selector would take now
    /// (`MPI_Iprobe`), left in place.
    pub fn probe(&self, sel: Selector) -> Option<(MsgId, MsgInfo)> {
        let index = self.find_unexpected(&sel)?;
        let slot = self.unexpected.get(at(index))?;
        Some((
            MsgId {
                index,
                generation: slot.generation,
            },
            slot.info(),
        ))
    }

    /// Takes a queued unexpected message out of matching, as a matched
    /// probe does (§3.8.2); it stays stored until [`Engine::release`].
    ///
    /// # Errors
    ///
    /// [`StaleId`] if the id names no queued message.
    pub fn claim(&mut self, id: MsgId) -> Result<MsgInfo, StaleId> {
        let slot = self.unexpected_slot(id)?;
        if slot.state != SlotState::Queued {
            return Err(StaleId);
        }
        let info = slot.info();
        self.claim_at(id.index).ok_or(StaleId)?;
        Ok(info)
    }

    /// Frees an unexpected message, queued or claimed, once the caller is
    /// done with its payload; returns what was recorded.
    ///
    /// # Errors
    ///
    /// [`StaleId`] if the id names no current message.
    pub fn release(&mut self, id: MsgId) -> Result<MsgInfo, StaleId> {
        let slot = self.unexpected_slot(id)?;
        let info = slot.info();
        if slot.state == SlotState::Queued {
            self.claim_at(id.index).ok_or(StaleId)?;
        }
        let free = self.free_unexpected;
        let slot = self.unexpected.get_mut(at(id.index)).ok_or(StaleId)?;
        free_slot(slot, free);
        self.free_unexpected = id.index;
        self.unexpected_len = self.unexpected_len.saturating_sub(1);
        Ok(info)
    }

    /// Like [`Engine::release`], but only for a message a post or
    /// [`Engine::claim`] took: a queued message is left alone, so a caller
    /// cannot drop a message no receive has seen.
    ///
    /// # Errors
    ///
    /// [`StaleId`] if the id names no claimed message.
    pub fn release_claimed(&mut self, id: MsgId) -> Result<MsgInfo, StaleId> {
        if self.unexpected_slot(id)?.state != SlotState::Claimed {
            return Err(StaleId);
        }
        self.release(id)
    }

    /// Removes every posted receive that names `source` exactly (any tag,
    /// any context), in posting order per bucket, and passes each one's
    /// handle to `removed`: the connection to that source failed, so they
    /// can never match. `MPI_ANY_SOURCE` receives stay. Costs one pass over
    /// the posted storage.
    pub fn cancel_from(&mut self, source: super::envelope::Rank, removed: impl FnMut(u64)) {
        self.remove_posted_where(|s| !s.any_source && s.envelope.source == source, removed);
    }

    /// Removes every posted `MPI_ANY_SOURCE` receive and passes each one's
    /// handle to `removed`: no live connection is left that could match
    /// them. Receives naming a source stay. Costs one pass over the posted
    /// storage.
    pub fn cancel_any_source(&mut self, removed: impl FnMut(u64)) {
        self.remove_posted_where(|s| s.any_source, removed);
    }

    /// Removes every posted receive whose slot satisfies `which`, passing
    /// each one's handle to `removed`; one pass over the posted storage.
    fn remove_posted_where(&mut self, which: impl Fn(&Slot) -> bool, mut removed: impl FnMut(u64)) {
        let mut index = 0u32;
        while let Some(slot) = self.posted.get(at(index)) {
            if slot.state == SlotState::Posted && which(slot) {
                if let Some(handle) = self.remove_posted(index) {
                    removed(handle);
                }
            }
            let Some(next) = index.checked_add(1) else {
                break;
            };
            index = next;
        }
    }

    /// The record of a current unexpected message.
    pub fn message(&self, id: MsgId) -> Option<MsgInfo> {
        self.unexpected_slot(id).ok().map(Slot::info)
    }

    /// Changes where a current unexpected message's payload is stored.
    ///
    /// # Errors
    ///
    /// [`StaleId`] if the id names no current message.
    pub fn set_location(&mut self, id: MsgId, location: u64) -> Result<(), StaleId> {
        self.unexpected_slot(id)?;
        let slot = self.unexpected.get_mut(at(id.index)).ok_or(StaleId)?;
        slot.value = location;
        Ok(())
    }

    /// Number of posted receives.
    pub const fn posted_len(&self) -> usize {
        self.posted_len
    }

    /// Number of stored unexpected messages, queued or claimed.
    pub const fn unexpected_len(&self) -> usize {
        self.unexpected_len
    }

    /// Capacity of the posted queue.
    pub fn posted_capacity(&self) -> usize {
        capacity(&self.posted)
    }

    /// Capacity of the unexpected queue.
    pub fn unexpected_capacity(&self) -> usize {
        capacity(&self.unexpected)
    }

    fn bucket_of(&self, env: &Envelope) -> usize {
        let key = u64::from(env.source) | u64::from(env.tag).rotate_left(32);
        let h = mix(key ^ self.seed ^ mix(u64::from(env.matching_key().context)));
        (h as usize) & self.mask
    }

    fn unexpected_slot(&self, id: MsgId) -> Result<&Slot, StaleId> {
        match self.unexpected.get(at(id.index)) {
            Some(s) if s.generation == id.generation && s.state != SlotState::Free => Ok(s),
            _ => Err(StaleId),
        }
    }

    /// The first-posted receive matching `env`.
    fn find_posted(&self, env: &Envelope) -> Option<u32> {
        let posted = &*self.posted;
        let exact = self.buckets.get(self.bucket_of(env)).and_then(|b| {
            b.posted.find(posted, Which::Chain, |i, s| {
                Ok((s.envelope == env.matching_key()).then_some((i, s.seq)))
            })
        });
        // Wildcards win only if posted before the exact candidate.
        let wild = self.wild.find(posted, Which::Chain, |i, s| match exact {
            Some((_, seq)) if s.seq > seq => Err(()),
            _ => Ok(s.selector().matches(env).then_some(i)),
        });
        wild.or(exact.map(|(i, _)| i))
    }

    /// The first-arrived queued message matching `sel`.
    fn find_unexpected(&self, sel: &Selector) -> Option<u32> {
        let slots = &*self.unexpected;
        match sel.as_exact() {
            Some(env) => self.buckets.get(self.bucket_of(&env)).and_then(|b| {
                b.unexpected.find(slots, Which::Chain, |i, s| {
                    Ok((s.envelope.matching_key() == env.matching_key()).then_some(i))
                })
            }),
            None => self.arrivals.find(slots, Which::Order, |i, s| {
                Ok(sel.matches(&s.envelope).then_some(i))
            }),
        }
    }

    /// Unlinks and frees a posted receive; returns its handle.
    fn remove_posted(&mut self, index: u32) -> Option<u64> {
        let slot = self.posted.get(at(index))?;
        let (any, env, handle) = (slot.any_source || slot.any_tag, slot.envelope, slot.value);
        if any {
            self.wild.unlink(&mut self.posted, index, Which::Chain);
        } else {
            let b = self.bucket_of(&env);
            let bucket = self.buckets.get_mut(b)?;
            bucket.posted.unlink(&mut self.posted, index, Which::Chain);
        }
        let free = self.free_posted;
        free_slot(self.posted.get_mut(at(index))?, free);
        self.free_posted = index;
        self.posted_len = self.posted_len.saturating_sub(1);
        Some(handle)
    }

    /// Takes a queued message off both matching lists.
    fn claim_at(&mut self, index: u32) -> Option<MsgId> {
        let env = self.unexpected.get(at(index))?.envelope;
        let b = self.bucket_of(&env);
        let bucket = self.buckets.get_mut(b)?;
        bucket
            .unexpected
            .unlink(&mut self.unexpected, index, Which::Chain);
        self.arrivals
            .unlink(&mut self.unexpected, index, Which::Order);
        let slot = self.unexpected.get_mut(at(index))?;
        slot.state = SlotState::Claimed;
        Some(MsgId {
            index,
            generation: slot.generation,
        })
    }
}

/// Usable slots: `NIL` must never be a valid index.
fn capacity(slots: &[Slot]) -> usize {
    slots.len().min(at(NIL))
}

/// Resets every usable slot and chains them into a free list; returns its
/// head.
fn init_free_list(slots: &mut [Slot]) -> u32 {
    let cap = capacity(slots);
    let mut head = NIL;
    // Built back to front so that slot 0 is handed out first.
    for (index, slot) in slots.iter_mut().enumerate().take(cap).rev() {
        *slot = Slot::EMPTY;
        slot.chain.next = head;
        head = u32::try_from(index).unwrap_or(NIL);
    }
    head
}

/// Returns a slot to its free list (headed by `free_head`), invalidating
/// every id that named it.
fn free_slot(slot: &mut Slot, free_head: u32) {
    *slot = Slot {
        generation: slot.generation.wrapping_add(1),
        chain: Links {
            prev: NIL,
            next: free_head,
        },
        ..Slot::EMPTY
    };
}

/// The splitmix64 finaliser: spreads (source, tag, context) over buckets.
const fn mix(mut x: u64) -> u64 {
    x = (x ^ x.wrapping_shr(30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ x.wrapping_shr(27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ x.wrapping_shr(31)
}

#[cfg(test)]
#[path = "matching_tests.rs"]
mod tests;
