// SPDX-License-Identifier: GPL-2.0

//! An endpoint's data path, set up at INIT ([`DataPath`]): the receive
//! state machine (o2g-core's `Receiver`, over the matching engine and the
//! dump area's store), the posted buffers ([`RecvBuffers`]), the offered
//! rendezvous sends and the send work's queue, the eager credit and the
//! completion producer.
//!
//! The machine makes every receive decision and keeps every receive
//! counter; this file holds what only the kernel has: pinned buffers by
//! handle, the shared ring, the release ring and the stalled connections.
//!
//! Everything here runs under the endpoint's rx lock (BH off) and never
//! sleeps or allocates: all storage is sized at INIT. Pinned buffers that
//! finish in softirq are parked in `retired` until a process context
//! unpins them (see `endpoint_rx.rs`), because unpinning may sleep.

use kernel::{alloc::KVVec, prelude::*};

use crate::abi;
use crate::credit::CreditBook;
use crate::endpoint_rx::Counters;
use crate::offer::Offers;
use crate::pinned::PinnedBuf;
use crate::proto::{
    credit::{Credit, Window},
    dump::{DumpAlloc, Record},
    envelope::{Envelope, Rank, Selector, SourceSel, TagSel},
    matching::{Bucket, Engine, MsgId, MsgInfo, Slot},
    receive::{is_request, Clear, Inbound, Receiver, Region, Store, Waiting},
    sender_rings::{self, SenderRing, SenderRings},
};
use crate::shared::SharedArea;
use crate::tx::{Outgoing, TxQueue};

/// A receive the process posted: its pinned buffer and its cookie.
pub(crate) struct PostedRecv {
    pub(crate) buf: PinnedBuf,
    pub(crate) user_data: u64,
}

/// A stored message to copy into a receive posted while it streamed in,
/// too large to copy in the protocol handler (softirq or BH off): the
/// reclaim work copies it in process context.
pub(crate) struct DeferredCopy {
    pub(crate) recv: PostedRecv,
    /// Where the payload is in the dump area.
    pub(crate) region: Region,
    pub(crate) env: Envelope,
    pub(crate) len: u64,
}

/// Capacities fixed at INIT, checked against the ABI limits.
pub(crate) struct Capacities {
    pub(crate) max_posted: u32,
    pub(crate) max_unexpected: u32,
    pub(crate) dump_bytes: u64,
    pub(crate) max_message: u64,
    pub(crate) pin_budget: u64,
    /// `abi::O2G_INIT_NOTICES` was asked for.
    pub(crate) notices: bool,
    /// `abi::O2G_INIT_CREDIT` was asked for.
    pub(crate) credit: Option<CreditCaps>,
}

/// The eager-credit part of INIT.
#[derive(Clone, Copy)]
pub(crate) struct CreditCaps {
    /// Bytes of the dump area per sending rank (`sender_rings`).
    pub(crate) region: u64,
    pub(crate) ranks: u32,
    /// What each peer may leave stored: `window_msgs` messages, of at most
    /// the eager limit, and the bytes its ring has room for.
    pub(crate) window: Window,
}

impl CreditCaps {
    /// Checks INIT's credit fields against the dump area: each rank's
    /// ring must grant at least one message of the eager limit, and the
    /// rings together hold at most `max_unexpected` messages (each stored
    /// one takes an unexpected-queue entry, so more could never fill).
    /// Errors: `EINVAL`.
    fn new(a: &abi::InitArgs) -> Result<Self> {
        if a.eager_limit == 0
            || a.eager_limit > a.max_message
            || a.window_msgs == 0
            || !(1..=abi::O2G_MAX_SOCKETS).contains(&a.ranks)
            || u64::from(a.window_msgs) * u64::from(a.ranks) > u64::from(a.max_unexpected)
        {
            return Err(EINVAL);
        }
        let region = sender_rings::region_for(a.dump_bytes, a.ranks);
        let window =
            sender_rings::window_for(region, a.window_msgs, a.eager_limit).ok_or(EINVAL)?;
        Ok(Self {
            region,
            ranks: a.ranks,
            window,
        })
    }

    /// Messages the rings hold at most, all senders together.
    pub(crate) fn records(&self) -> u32 {
        // At most `max_unexpected` (`new`), which fits.
        self.window.msgs.saturating_mul(self.ranks)
    }
}

impl Capacities {
    /// Checks INIT's input. Errors: `EINVAL`.
    pub(crate) fn from_args(a: &abi::InitArgs) -> Result<Self> {
        let queue_ok = |n: u32| (1..=abi::O2G_MAX_QUEUE).contains(&n);
        if !queue_ok(a.max_posted)
            || !queue_ok(a.max_unexpected)
            || a.dump_bytes == 0
            || a.dump_bytes > abi::O2G_MAX_DUMP
            || a.dump_bytes % abi::O2G_PAGE != 0
            || a.max_message > abi::O2G_MAX_MESSAGE
            || a.pin_budget > abi::O2G_MAX_PIN_BUDGET
            || a.flags & !(abi::O2G_INIT_NOTICES | abi::O2G_INIT_CREDIT) != 0
            || a.reserved != 0
        {
            return Err(EINVAL);
        }
        let credit = if a.flags & abi::O2G_INIT_CREDIT != 0 {
            Some(CreditCaps::new(a)?)
        } else {
            None
        };
        Ok(Self {
            max_posted: a.max_posted,
            max_unexpected: a.max_unexpected,
            dump_bytes: a.dump_bytes,
            max_message: a.max_message,
            pin_budget: a.pin_budget,
            notices: a.flags & abi::O2G_INIT_NOTICES != 0,
            credit,
        })
    }

    /// Ring records: enough for every receive that can be outstanding,
    /// as many offers and, with notices, one announcement per stored
    /// message besides.
    pub(crate) fn ring_entries(&self) -> u32 {
        let announced = if self.notices { self.max_unexpected } else { 0 };
        (2 * self.max_posted + announced).next_power_of_two()
    }
}

/// The receive state machine over kernel storage.
pub(crate) type Machine = Receiver<KVVec<Slot>, KVVec<Bucket>, DumpStore, KVVec<Waiting>>;

/// How the dump area stores unexpected payloads: in one ring per sender
/// that credit sizes (`abi::O2G_INIT_CREDIT`), or, without credit, in
/// one circular range where a message of any length may go.
pub(crate) enum DumpStore {
    Ring(DumpAlloc<KVVec<Record>>),
    Rings(SenderRings<KVVec<SenderRing<KVVec<Record>>>>),
}

impl DumpStore {
    /// Bytes of the area taken now, reclaimable or not.
    pub(crate) fn used(&self) -> u64 {
        match self {
            Self::Ring(r) => r.used(),
            Self::Rings(s) => s.used(),
        }
    }

    /// What left the store from `rank` since the last call (nothing
    /// without credit).
    fn take_returned(&mut self, rank: Rank) -> Credit {
        match self {
            Self::Ring(_) => Credit::default(),
            Self::Rings(s) => s.take_returned(rank),
        }
    }
}

impl Store for DumpStore {
    fn book(&mut self, source: Rank, len: u64) -> Option<u64> {
        match self {
            Self::Ring(r) => r.book(source, len),
            Self::Rings(s) => s.book(source, len),
        }
    }

    fn locate(&self, id: u64) -> u64 {
        match self {
            Self::Ring(r) => r.locate(id),
            Self::Rings(s) => s.locate(id),
        }
    }

    fn give_back(&mut self, id: u64) {
        match self {
            Self::Ring(r) => r.give_back(id),
            Self::Rings(s) => s.give_back(id),
        }
    }
}

/// An endpoint's data path; see the module docs.
pub(crate) struct DataPath {
    pub(crate) rx: Machine,
    pub(crate) book: RecvBuffers,
    /// Rendezvous sends the process offered (as many as `max_posted`).
    pub(crate) offers: Offers,
    /// Clear-to-send and data messages for the send work.
    pub(crate) tx: TxQueue,
    /// The rank of this process, once its connection to itself is
    /// registered (`abi::O2G_REGISTER_SELF`).
    pub(crate) self_rank: Option<u32>,
    /// Eager credit, if INIT asked for it.
    pub(crate) credit: Option<CreditBook>,
}

/// Everything but the machine, so that its callbacks can complete
/// receives while it is borrowed.
pub(crate) struct RecvBuffers {
    /// Posted receives by engine handle (the index).
    table: KVVec<Option<PostedRecv>>,
    /// Free indices of `table`.
    free: KVVec<u32>,
    /// Finished buffers waiting to be unpinned in process context.
    retired: KVVec<PinnedBuf>,
    /// Copies left to the reclaim work; each holds an `active` receive,
    /// so there are never more than `max_posted`.
    deferred: KVVec<DeferredCopy>,
    /// Buffer bytes pinned (including retired ones not yet unpinned).
    pub(crate) pinned: u64,
    pub(crate) caps: Capacities,
    /// An unexpected message was stored since the last POLL.
    pub(crate) unexpected_event: bool,
    /// Announcements stopped because the ring had no room (for good).
    notices_stopped: bool,
    /// The ring's producer index just after the latest announcement.
    last_notice: u32,
    /// The module's copy of the release ring's consumer index.
    release_cons: u32,
    /// Ranks of the connections waiting for room, so that resuming them
    /// does not visit every registered connection.
    stalled: KVVec<u32>,
}

impl DataPath {
    /// Allocates all storage for `caps`.
    ///
    /// Context: process context, may sleep.
    pub(crate) fn new(caps: Capacities, seed: u64) -> Result<KBox<Self>> {
        let posted = caps.max_posted as usize;
        let unexpected = caps.max_unexpected as usize;
        let engine = Engine::new(
            filled(posted, Slot::EMPTY)?,
            filled(unexpected, Slot::EMPTY)?,
            filled(posted.max(unexpected).next_power_of_two(), Bucket::EMPTY)?,
            seed,
        )
        .map_err(|_| EINVAL)?;
        let (dump, credit) = match caps.credit {
            Some(cc) => {
                let mut rings = KVVec::with_capacity(cc.ranks as usize, GFP_KERNEL_ACCOUNT)?;
                for _ in 0..cc.ranks {
                    let records = filled(cc.window.msgs as usize, Record::EMPTY)?;
                    rings.push(SenderRing::new(records, cc.region), GFP_KERNEL_ACCOUNT)?;
                }
                let store = SenderRings::new(rings, cc.region);
                let book = CreditBook::new(cc.window, cc.ranks)?;
                (DumpStore::Rings(store), Some(book))
            }
            // One record per unexpected message, stored or streaming.
            None => {
                let ring = DumpAlloc::new(filled(unexpected, Record::EMPTY)?, caps.dump_bytes, 64);
                (DumpStore::Ring(ring), None)
            }
        };
        // As many receives may wait for rendezvous data as may be posted.
        let waiting = filled(posted, Waiting::EMPTY)?;
        let rx = Receiver::new(engine, dump, waiting, caps.max_posted);
        let mut table = KVVec::with_capacity(posted, GFP_KERNEL_ACCOUNT)?;
        let mut free = KVVec::with_capacity(posted, GFP_KERNEL_ACCOUNT)?;
        for i in (0..caps.max_posted).rev() {
            table.push(None, GFP_KERNEL_ACCOUNT)?;
            free.push(i, GFP_KERNEL_ACCOUNT)?;
        }
        let offers = Offers::new(caps.max_posted)?;
        // One clear-to-send per receive that may wait for data, one data
        // message per offer, and one credit message per peer.
        let ranks = caps.credit.map_or(0, |cc| cc.ranks as usize);
        let tx = TxQueue::new(2 * posted + ranks, posted)?;
        let book = RecvBuffers {
            table,
            free,
            // Finished receives and ended offers.
            retired: KVVec::with_capacity(2 * posted, GFP_KERNEL_ACCOUNT)?,
            deferred: KVVec::with_capacity(posted, GFP_KERNEL_ACCOUNT)?,
            pinned: 0,
            caps,
            unexpected_event: false,
            notices_stopped: false,
            last_notice: 0,
            release_cons: 0,
            stalled: KVVec::with_capacity(abi::O2G_MAX_SOCKETS as usize, GFP_KERNEL_ACCOUNT)?,
        };
        Ok(KBox::new(
            Self {
                rx,
                book,
                offers,
                tx,
                self_rank: None,
                credit,
            },
            GFP_KERNEL_ACCOUNT,
        )?)
    }

    /// Joins what left the store from `rank` with the credit its messages
    /// connection (`inbound`) accounts, and queues what is due to the
    /// peer: for the send work, or, to this process itself, straight into
    /// what it was granted. Returns whether the send work must run.
    ///
    /// Context: any; rx lock held, and the connection's reader lock.
    pub(crate) fn settle_credit(
        &mut self,
        inbound: &mut Inbound,
        rank: u32,
        c: &mut Counters,
    ) -> bool {
        let Some(book) = self.credit.as_mut() else {
            return false;
        };
        c.held_peak = c.held_peak.max(inbound.held_eager_bytes());
        inbound.give_back_all(self.rx.store_mut().take_returned(rank));
        let mut send = false;
        while let Some(due) = inbound.credit_due() {
            if self.self_rank == Some(rank) {
                book.grant(rank, due);
                c.credits_sent += 1;
            } else if book.owe(rank, due) {
                // One entry per peer is kept (see `DataPath::new`); were
                // it ever full, the credit waits for the next control
                // connection's registration rather than being lost.
                match self.tx.push(Outgoing::Credit { rank }) {
                    Ok(()) => send = true,
                    Err(_) => book.unqueue(rank),
                }
            }
        }
        send
    }

    /// A control connection to `rank` arrived: queues the credit that
    /// waited for it. Returns whether the send work must run.
    ///
    /// Context: any; rx lock held.
    pub(crate) fn requeue_credit(&mut self, rank: u32) -> bool {
        let Some(book) = self.credit.as_mut() else {
            return false;
        };
        book.requeue(rank) && self.tx.push(Outgoing::Credit { rank }).is_ok()
    }

    /// Admits a new post of `buf_len` bytes, reserving its slot and pin
    /// budget until [`DataPath::settle`]. Errors: `ENOSPC` (posted queue
    /// full), `EAGAIN` (the ring could overflow: reap completions first),
    /// `ENOBUFS` (pin budget).
    ///
    /// The check and the reservation happen under one hold of the rx lock:
    /// posts racing on other threads see each other's reservations.
    pub(crate) fn admit(&mut self, shared: &SharedArea, buf_len: u64) -> Result {
        // Retired buffers still hold their table-sized retired slots.
        let retired = self.book.retired.len() as u64;
        if self.rx.outstanding() + retired >= u64::from(self.book.caps.max_posted) {
            return Err(ENOSPC);
        }
        if !self.ring_has_room(shared) {
            return Err(EAGAIN);
        }
        if self.book.pinned.saturating_add(buf_len) > self.book.caps.pin_budget {
            return Err(crate::sock::errno::enobufs());
        }
        self.rx.admit(retired).map_err(|_| ENOSPC)?;
        self.book.pinned += buf_len;
        Ok(())
    }

    /// Ends an admitted post's reservation: its receive is now posted (and
    /// counted as such) or dropped. The pin budget stays reserved; a
    /// dropped post returns it separately once unpinned.
    pub(crate) fn settle(&mut self) {
        self.rx.settle();
    }

    /// Gives back the stored messages the process queued in the release
    /// ring; returns how many were freed.
    ///
    /// Context: any; rx lock held.
    pub(crate) fn apply_releases(&mut self, shared: &SharedArea) -> u32 {
        let mut freed = 0;
        let Self { rx, book, .. } = self;
        book.release_cons = shared.releases(book.release_cons, |id| {
            // The machine counts bad ids.
            if rx.release(MsgId::from_raw(id)).is_ok() {
                freed += 1;
            }
        });
        freed
    }

    /// Announces stored message `id` in the ring and hands it to the
    /// process (claims it), if the process asked for notices and the ring
    /// has room for it on top of every receive that may still complete;
    /// otherwise stops announcing for good (see `abi::O2G_INIT_NOTICES`),
    /// since a gap would break arrival order.
    ///
    /// Context: any; rx lock held.
    pub(crate) fn announce(&mut self, shared: &SharedArea, c: &mut Counters, id: MsgId) {
        if !self.may_announce(shared) {
            return;
        }
        let Ok((info, region)) = self.rx.claim(id) else {
            return;
        };
        let msg = self.stored(shared, id, info, region);
        shared.push(&abi::Completion {
            kind: abi::record_kind::STORED,
            msg_id: msg.id,
            offset: msg.offset,
            len: msg.len,
            source: msg.source,
            tag: msg.tag,
            context: msg.context,
            ..Default::default()
        });
        self.book.last_notice = shared.ring_prod();
        c.notices += 1;
    }

    /// Whether an announcement may go in the ring now; stops announcing
    /// for good (and says so in the control page) when the ring has no
    /// room for it.
    fn may_announce(&mut self, shared: &SharedArea) -> bool {
        if !self.book.caps.notices || self.book.notices_stopped {
            return false;
        }
        if !self.ring_has_room(shared) {
            self.book.notices_stopped = true;
            shared.set_word(abi::O2G_NOTICES_STOPPED, 1);
            return false;
        }
        true
    }

    /// Announces a stored request to send (a message of `size` bytes
    /// with `envelope`) in the ring, under the same rules as
    /// [`DataPath::announce`]; it is not handed to the process, since
    /// only a POST can answer its sender.
    ///
    /// Context: any; rx lock held.
    pub(crate) fn announce_request(
        &mut self,
        shared: &SharedArea,
        c: &mut Counters,
        envelope: Envelope,
        size: u64,
    ) {
        if !self.may_announce(shared) {
            return;
        }
        shared.push(&abi::Completion {
            kind: abi::record_kind::REQUEST,
            len: size,
            source: envelope.source,
            tag: envelope.tag,
            context: envelope.context,
            ..Default::default()
        });
        self.book.last_notice = shared.ring_prod();
        c.notices += 1;
    }

    /// A receive matched a request to send: queues the clear-to-send for
    /// the send work, asking for what the receive can hold. Returns
    /// whether it was queued; if not (the queue is full, which only a
    /// peer forging data tokens can cause), the receive ends with
    /// `-ECONNRESET`.
    ///
    /// Context: any; rx lock held.
    pub(crate) fn clear_to_send(&mut self, shared: &SharedArea, clear: Clear) -> bool {
        let capacity = self.book.capacity(clear.handle).unwrap_or(0);
        let cts = Outgoing::Cts {
            rank: clear.rank,
            token: clear.token,
            want: clear.size.min(capacity),
            offer: clear.offer,
        };
        if self.tx.push(cts).is_ok() {
            return true;
        }
        if let Some(f) = self.rx.abandon(clear.token) {
            if let Some(recv) = self.book.take(f.handle) {
                let status = crate::sock::errno::econnreset().to_errno();
                self.book.complete(shared, recv, f.envelope, f.len, status);
            }
        }
        false
    }

    /// The control connection to `rank` failed: every offer to it ends
    /// with `status`; their buffers go to the reclaim work.
    ///
    /// Context: any; rx lock held.
    pub(crate) fn fail_offers(&mut self, shared: &SharedArea, rank: u32, status: i32) {
        let Self { offers, book, .. } = self;
        offers.fail_rank(rank, |ended| {
            crate::tx::publish_sent(shared, ended.user_data, 0, status);
            if let Some(buf) = ended.buf {
                book.retire(buf);
            }
        });
    }

    /// Admits an offer of `len` bytes: the ring keeps a record for it and
    /// the pin budget its bytes (returned when its buffer is unpinned).
    /// Errors: `ENOSPC` (table full), `EAGAIN` (ring), `ENOBUFS` (budget).
    pub(crate) fn admit_offer(&mut self, shared: &SharedArea, len: u64) -> Result {
        if self.offers.live() >= u64::from(self.book.caps.max_posted) {
            return Err(ENOSPC);
        }
        if !self.ring_has_room(shared) {
            return Err(EAGAIN);
        }
        if self.book.pinned.saturating_add(len) > self.book.caps.pin_budget {
            return Err(crate::sock::errno::enobufs());
        }
        self.book.pinned += len;
        Ok(())
    }

    /// Records that the connection to `rank` waits for room, and tells the
    /// process (`abi::O2G_STALLED`).
    ///
    /// Context: any; rx lock held.
    pub(crate) fn stall(&mut self, shared: &SharedArea, rank: u32) {
        // One entry per registered connection at most: capacity suffices.
        let _ = self.book.stalled.push_within_capacity(rank);
        self.publish_stalled(shared);
    }

    /// Undoes [`DataPath::stall`] for `rank`.
    ///
    /// Context: any; rx lock held.
    pub(crate) fn unstall(&mut self, shared: &SharedArea, rank: u32) {
        if let Some(i) = self.book.stalled.iter().position(|&r| r == rank) {
            let last = self.book.stalled.len() - 1;
            self.book.stalled.swap(i, last);
            self.book.stalled.pop();
        }
        self.publish_stalled(shared);
    }

    /// Tells the process how many connections wait for room.
    fn publish_stalled(&self, shared: &SharedArea) {
        // At most `O2G_MAX_SOCKETS` entries, which fits.
        shared.set_word(abi::O2G_STALLED, self.book.stalled.len() as u32);
    }

    /// Copies up to `out.len()` stalled ranks into `out`; returns how many
    /// there are in all.
    pub(crate) fn stalled_ranks(&self, out: &mut [u32]) -> usize {
        for (o, r) in out.iter_mut().zip(self.book.stalled.iter()) {
            *o = *r;
        }
        self.book.stalled.len()
    }

    /// Whether something was announced that a process which has read the
    /// ring up to index `seen` has not seen.
    pub(crate) fn announced_since(&self, seen: u32) -> bool {
        self.book.caps.notices && (self.book.last_notice.wrapping_sub(seen) as i32) > 0
    }

    /// Whether the ring has a record to spare beyond the unread ones and
    /// one for every receive that may still complete (posted or being
    /// filled): a new post or announcement may take it without overflow.
    fn ring_has_room(&self, shared: &SharedArea) -> bool {
        let owed = u64::from(shared.ring_pending()) + self.rx.outstanding() + self.offers.live();
        owed < u64::from(self.book.caps.ring_entries())
    }

    /// Stored unexpected message `id` as the ABI describes it; a request
    /// to send has no id or payload of its own here.
    pub(crate) fn stored(
        &self,
        shared: &SharedArea,
        id: MsgId,
        info: MsgInfo,
        region: Region,
    ) -> abi::StoredMessage {
        let request = is_request(&info);
        abi::StoredMessage {
            id: if request { 0 } else { id.to_raw() },
            offset: if request {
                0
            } else {
                shared.dump_offset() + region.at
            },
            len: info.len,
            source: info.envelope.source,
            tag: info.envelope.tag,
            context: info.envelope.context,
            flags: if request { abi::O2G_STORED_REQUEST } else { 0 },
        }
    }
}

impl RecvBuffers {
    /// Stores a pinned receive under a free handle; `None` if the table is
    /// full (admission makes that impossible).
    pub(crate) fn insert(&mut self, recv: PostedRecv) -> core::result::Result<u64, PostedRecv> {
        let Some(i) = self.free.pop() else {
            return Err(recv);
        };
        self.table[i as usize] = Some(recv);
        Ok(u64::from(i))
    }

    /// Takes the receive the machine handed out as `handle` out of the
    /// table, freeing the handle.
    pub(crate) fn take(&mut self, handle: u64) -> Option<PostedRecv> {
        let recv = self.lend(handle)?;
        self.free_handle(handle);
        Some(recv)
    }

    /// Takes the receive out of the table but keeps `handle` in use, for a
    /// receive being filled: the handle is still the machine's name for
    /// it, so no new post may get it until [`RecvBuffers::free_handle`].
    pub(crate) fn lend(&mut self, handle: u64) -> Option<PostedRecv> {
        let i = u32::try_from(handle).ok()?;
        self.table.get_mut(i as usize)?.take()
    }

    /// The buffer length of the posted receive `handle`.
    pub(crate) fn capacity(&self, handle: u64) -> Option<u64> {
        let i = u32::try_from(handle).ok()?;
        let recv = self.table.get(i as usize)?.as_ref()?;
        Some(recv.buf.len() as u64)
    }

    /// Frees a handle whose receive was lent out.
    pub(crate) fn free_handle(&mut self, handle: u64) {
        if let Ok(i) = u32::try_from(handle) {
            // Capacity is the table size and each index is free at most once.
            let _ = self.free.push_within_capacity(i);
        }
    }

    /// Publishes the completion of `recv` and parks its buffer for the
    /// reclaim work.
    ///
    /// Context: any; rx lock held.
    pub(crate) fn complete(
        &mut self,
        shared: &SharedArea,
        recv: PostedRecv,
        env: Envelope,
        len: u64,
        status: i32,
    ) {
        publish(shared, recv.user_data, env, len, status);
        self.retire(recv.buf);
    }

    /// Leaves the copy `d` to the reclaim work; gives it back if the list
    /// is full (it cannot be: see `deferred`).
    pub(crate) fn defer(&mut self, d: DeferredCopy) -> core::result::Result<(), DeferredCopy> {
        self.deferred.push_within_capacity(d).map_err(|e| e.0)
    }

    /// One copy left to the reclaim work.
    pub(crate) fn pop_deferred(&mut self) -> Option<DeferredCopy> {
        self.deferred.pop()
    }

    /// Parks `buf` for unpinning in process context.
    pub(crate) fn retire(&mut self, buf: PinnedBuf) {
        if let Err(e) = self.retired.push_within_capacity(buf) {
            // Admission keeps posted + active + retired within capacity, so
            // this is a bug; leaking the pins beats sleeping in softirq.
            pr_err!("retired list full; leaking a pinned buffer\n");
            core::mem::forget(e.0);
        }
    }

    /// One buffer to unpin, taken out of the bookkeeping.
    pub(crate) fn pop_retired(&mut self) -> Option<PinnedBuf> {
        self.retired.pop()
    }

    /// Every pinned buffer still held (posted, retired or waiting for its
    /// copy), for teardown: the caller drops them outside the lock, in
    /// process context.
    pub(crate) fn take_all(&mut self) -> TakenBuffers {
        self.free.clear();
        (
            core::mem::take(&mut self.table),
            core::mem::take(&mut self.retired),
            core::mem::take(&mut self.deferred),
        )
    }
}

/// What [`RecvBuffers::take_all`] hands over.
pub(crate) type TakenBuffers = (
    KVVec<Option<PostedRecv>>,
    KVVec<PinnedBuf>,
    KVVec<DeferredCopy>,
);

/// Publishes a completion record for the receive `user_data`.
///
/// Context: any; rx lock held (one producer).
pub(crate) fn publish(shared: &SharedArea, user_data: u64, env: Envelope, len: u64, status: i32) {
    shared.push(&abi::Completion {
        kind: abi::record_kind::COMPLETED,
        user_data,
        len,
        source: env.source,
        tag: env.tag,
        context: env.context,
        status,
        ..Default::default()
    });
}

/// The selector of a POST or PROBE, with the ABI's wildcards.
pub(crate) fn selector(source: u32, tag: u32, context: u32) -> Result<Selector> {
    let source = match source {
        abi::O2G_ANY_SOURCE => SourceSel::Any,
        r if r < abi::O2G_MAX_RANK => SourceSel::Rank(r),
        _ => return Err(EINVAL),
    };
    let tag = match tag {
        abi::O2G_ANY_TAG => TagSel::Any,
        t => TagSel::Tag(t),
    };
    Ok(Selector {
        source,
        tag,
        context,
    })
}

/// A vector of `n` copies of `value`, allocated with vmalloc fallback.
fn filled<T: Copy>(n: usize, value: T) -> Result<KVVec<T>> {
    let mut v = KVVec::with_capacity(n, GFP_KERNEL_ACCOUNT)?;
    for _ in 0..n {
        v.push(value, GFP_KERNEL_ACCOUNT)?;
    }
    Ok(v)
}
