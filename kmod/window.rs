// SPDX-License-Identifier: GPL-2.0

//! Memory windows: user memory the protocol handler writes one-sided puts
//! into, and whose lock it keeps, with no help from the process (MPI's
//! passive target).
//!
//! WIN_REGISTER pins the window's pages writable in the owner's process
//! context, as POST pins a receive buffer, and files them under the
//! context id that puts name. The reader of a messages connection looks
//! the window up when a put's header arrives ([`WindowTable::target`]),
//! then copies each piece of the payload straight from the socket buffer
//! into the pinned pages ([`WindowTable::copy_in`]). It holds no
//! reference between pieces: each piece finds the window again by id,
//! under the table's lock, so WIN_UNREGISTER can take the pages out at
//! any moment (a put cut short there places no more bytes) and unpin
//! them after dropping the lock, in process context.
//!
//! A put is checked once, at its header: the window must exist, its
//! origin must hold the window's lock, the range must lie inside it, and
//! `reference` must be zero (reserved for active-target epochs). A
//! refused put's bytes are read and dropped, and counted (for the window,
//! and for the origin's next answer); the connection goes on, since a put
//! racing a window's release is a program's error, not a broken stream.
//!
//! A lock request (`Lock`: lock, unlock, flush) is handled at its header
//! too, on the window's lock (`proto::window_lock`), and leaves an answer
//! due to its origin (at once, or for a lock that waits, once granted);
//! the send work takes due answers ([`WindowTable::take_answer`]) and
//! writes them on the origin's control connection. Each origin may have
//! one unanswered request per window, so the due answers need no queue
//! (a flag per origin) and a peer cannot make the module hold more; a
//! second request before the answer fails the connection. Since a
//! connection is read in order, an unlock or flush is handled after
//! every put its origin sent before it: its answer says they are in the
//! window.
//!
//! A get (`Get`) is a request too: from a lock holder, for a range inside
//! the window, its answer carries the window's bytes, which the send
//! work writes straight from the pinned pages (holding a reference to
//! them, so an unregister meanwhile cannot unpin them under it; the last
//! reference is always dropped in process context). A refused get's
//! answer carries no bytes.
//!
//! Locks: the table's lock is a BH-safe spinlock taken by readers (after
//! their own reader lock) and by the window ioctls, and never held
//! together with the endpoint's rx lock.

use kernel::{alloc::KVVec, prelude::*, sync::Arc};

use crate::abi;
use crate::pinned::PinnedBuf;
use crate::proto::{
    envelope::Envelope,
    receive::Failure,
    window_lock::{LockKind, Locked, Origin, WindowLock},
    wire::{lock_op, LockAnswer},
};

/// What one origin has asked of a window and not had answered.
#[derive(Clone, Copy, Default)]
struct Asker {
    /// A request waits for its answer (due or not yet).
    asked: bool,
    /// The tag its answer goes under.
    tag: u32,
    /// The answer's status, once due.
    due: Option<u32>,
    /// Puts refused since the last answer.
    refused: u32,
    /// A get's answer is due, not a lock request's: the offset and
    /// length of the bytes to send back (`None`: refused, no bytes).
    get: Option<Option<(usize, usize)>>,
    /// A lock asked for after more fences than the window's process has
    /// completed: taken once it has (`WindowTable::set_epoch`).
    deferred: Option<(LockKind, u64)>,
}

/// One registered window.
pub(crate) struct Window {
    id: u32,
    context: u32,
    /// Shared with the send work while it sends a get's bytes.
    buf: Arc<PinnedBuf>,
    lock: WindowLock<KVVec<Origin>, KVVec<u32>>,
    askers: KVVec<Asker>,
    /// Askers with an answer due.
    due: u32,
    /// Fences the window's process has completed.
    epoch: u64,
    stats: abi::WindowStats,
}

impl Window {
    /// A window over `buf` for `context`, locked by ranks below `ranks`.
    ///
    /// Context: process context, may sleep (allocates).
    pub(crate) fn new(context: u32, buf: PinnedBuf, ranks: u32) -> Result<Self> {
        let n = ranks as usize;
        let mut origins = KVVec::with_capacity(n, GFP_KERNEL_ACCOUNT)?;
        let mut queue = KVVec::with_capacity(n, GFP_KERNEL_ACCOUNT)?;
        let mut askers = KVVec::with_capacity(n, GFP_KERNEL_ACCOUNT)?;
        for _ in 0..n {
            origins.push(Origin::EMPTY, GFP_KERNEL_ACCOUNT)?;
            queue.push(0, GFP_KERNEL_ACCOUNT)?;
            askers.push(Asker::default(), GFP_KERNEL_ACCOUNT)?;
        }
        Ok(Self {
            id: 0,
            context,
            buf: Arc::new(buf, GFP_KERNEL_ACCOUNT)?,
            lock: WindowLock::new(origins, queue),
            askers,
            due: 0,
            epoch: 0,
            stats: abi::WindowStats::default(),
        })
    }

    /// The window's length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.buf.len()
    }

    /// Makes `rank`'s answer due with `status`.
    fn answer(&mut self, rank: u32, status: u32) {
        make_due(&mut self.askers, &mut self.due, rank, status);
    }
}

/// What `rank`'s lock request of `kind` gets now: an answer's status, or
/// `None` while it waits for the lock (answered when granted).
fn lock_status(
    lock: &mut WindowLock<KVVec<Origin>, KVVec<u32>>,
    rank: u32,
    kind: LockKind,
) -> Option<u32> {
    match lock.lock(rank, kind) {
        Ok(Locked::Granted) => Some(0),
        Ok(Locked::Queued) => None,
        Err(_) => Some(LockAnswer::REFUSED),
    }
}

/// Makes `rank`'s answer due with `status`, counting it in `due`.
fn make_due(askers: &mut [Asker], due: &mut u32, rank: u32, status: u32) {
    if let Some(a) = askers.get_mut(rank as usize) {
        if a.due.is_none() {
            *due = due.saturating_add(1);
        }
        a.due = Some(status);
    }
}

/// Where a put goes, decided at its header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// Into window `id`, from byte `at`.
    Place { id: u32, at: u64 },
    /// Refused by window `id` for its origin `rank` (no lock, range or
    /// reserved field): dropped.
    Refuse { id: u32, rank: u32 },
    /// No window has the put's context: dropped.
    Unknown,
}

/// An answer the send work writes: `reply` under `envelope`, on
/// `rank`'s control connection (the envelope's source is filled in by
/// the writer: this end's rank).
pub(crate) struct DueAnswer {
    pub(crate) rank: u32,
    pub(crate) envelope: Envelope,
    pub(crate) reply: Reply,
    /// The window.
    pub(crate) window: u32,
}

/// What an answer carries.
pub(crate) enum Reply {
    /// A lock request's answer.
    Lock(LockAnswer),
    /// A get's: the window's pages, and the offset and length of the
    /// bytes to send (`None`: refused, no bytes).
    Get(Option<(Arc<PinnedBuf>, usize, usize)>),
}

/// The endpoint's windows, under their own lock (see the module docs).
pub(crate) struct WindowTable {
    /// [`abi::O2G_MAX_WINDOWS`] entries once INIT sized it; empty before.
    slots: KVVec<Option<Window>>,
    /// The id the next registration gets.
    next_id: u32,
    /// Puts naming no registered window.
    unknown_msgs: u64,
}

impl WindowTable {
    /// An empty table; INIT gives it its entries.
    pub(crate) const fn new() -> Self {
        Self {
            slots: KVVec::new(),
            next_id: 1,
            unknown_msgs: 0,
        }
    }

    /// The entries INIT installs with [`WindowTable::install`], allocated
    /// outside the lock.
    ///
    /// Context: process context, may sleep.
    pub(crate) fn entries() -> Result<KVVec<Option<Window>>> {
        let n = abi::O2G_MAX_WINDOWS as usize;
        let mut v = KVVec::with_capacity(n, GFP_KERNEL_ACCOUNT)?;
        for _ in 0..n {
            v.push(None, GFP_KERNEL_ACCOUNT)?;
        }
        Ok(v)
    }

    /// Installs INIT's entries (once: INIT runs once per endpoint).
    pub(crate) fn install(&mut self, slots: KVVec<Option<Window>>) {
        if self.slots.is_empty() {
            self.slots = slots;
        }
    }

    fn find(&self, id: u32) -> Option<&Window> {
        self.slots.iter().flatten().find(|w| w.id == id)
    }

    fn find_mut(&mut self, id: u32) -> Option<&mut Window> {
        self.slots.iter_mut().flatten().find(|w| w.id == id)
    }

    /// Files `window`; returns its id, or gives it back with the error:
    /// `EEXIST` (its context has a window), `ENOSPC` (every entry in use,
    /// or before INIT).
    pub(crate) fn insert(
        &mut self,
        mut window: Window,
    ) -> core::result::Result<u32, (Window, Error)> {
        let context = window.context;
        if self.slots.iter().flatten().any(|w| w.context == context) {
            return Err((window, EEXIST));
        }
        // Ids are unique among live windows: skip one still in use after
        // the counter wrapped (at most 64 are).
        let mut id = self.next_id;
        while id == 0 || self.find(id).is_some() {
            id = id.wrapping_add(1);
        }
        let Some(slot) = self.slots.iter_mut().find(|s| s.is_none()) else {
            return Err((window, ENOSPC));
        };
        window.id = id;
        window.stats.id = id;
        *slot = Some(window);
        self.next_id = id.wrapping_add(1);
        Ok(id)
    }

    /// Takes window `id` out; the caller drops it (unpins it, frees its
    /// lock state) in process context, after dropping the lock. `ENOENT`
    /// if there is no such window.
    pub(crate) fn remove(&mut self, id: u32) -> Result<Window> {
        let slot = self
            .slots
            .iter_mut()
            .find(|s| s.as_ref().is_some_and(|w| w.id == id))
            .ok_or(ENOENT)?;
        slot.take().ok_or(ENOENT)
    }

    /// Takes every window out (the endpoint is closing).
    pub(crate) fn take_all(&mut self) -> KVVec<Option<Window>> {
        core::mem::take(&mut self.slots)
    }

    /// Window `id`'s counters, with the endpoint's count of puts for no
    /// window. `ENOENT` if there is no such window.
    pub(crate) fn stats(&self, id: u32) -> Result<abi::WindowStats> {
        let w = self.find(id).ok_or(ENOENT)?;
        Ok(abi::WindowStats {
            unknown_msgs: self.unknown_msgs,
            ..w.stats
        })
    }

    /// Where `rank`'s put of `len` bytes for `context` at byte `at` goes,
    /// with `reference` as its header carried it.
    ///
    /// Context: a connection's reader (softirq, or process context with
    /// the socket held); must not sleep.
    pub(crate) fn target(
        &self,
        rank: u32,
        context: u32,
        at: u64,
        len: u64,
        reference: u32,
    ) -> Target {
        let Some(w) = self.slots.iter().flatten().find(|w| w.context == context) else {
            return Target::Unknown;
        };
        let fits = at
            .checked_add(len)
            .is_some_and(|end| end <= w.buf.len() as u64);
        if fits && reference == 0 && w.lock.held(rank).is_some() {
            Target::Place { id: w.id, at }
        } else {
            Target::Refuse { id: w.id, rank }
        }
    }

    /// `rank`'s request `op` for window `context`, answered under `tag`,
    /// made after `epoch` fences: takes (once the window's process has
    /// completed as many fences), releases or flushes its lock and makes
    /// answers due. Returns
    /// whether any answer is due now (kick the send work).
    ///
    /// # Errors
    ///
    /// The [`Failure`] to fail the connection with: no such window (or a
    /// rank it does not serve), or a request before the previous answer.
    ///
    /// Context: as [`WindowTable::target`].
    pub(crate) fn request(
        &mut self,
        rank: u32,
        context: u32,
        op: u32,
        tag: u32,
        epoch: u64,
    ) -> core::result::Result<bool, Failure> {
        let w = self.ask(rank, context, tag)?;
        w.stats.requests = w.stats.requests.saturating_add(1);
        let kind = match op {
            lock_op::SHARED => Some(LockKind::Shared),
            lock_op::EXCLUSIVE => Some(LockKind::Exclusive),
            _ => None,
        };
        let status = match (op, kind) {
            (_, Some(kind)) if epoch > w.epoch => {
                if let Some(a) = w.askers.get_mut(rank as usize) {
                    a.deferred = Some((kind, epoch));
                }
                None
            }
            (_, Some(kind)) => lock_status(&mut w.lock, rank, kind),
            (lock_op::UNLOCK, None) => {
                // Origins waiting behind it get their answers now.
                let Window {
                    lock, askers, due, ..
                } = w;
                let r = lock.unlock(rank, |g, _| make_due(askers, due, g, 0));
                Some(if r.is_ok() { 0 } else { LockAnswer::REFUSED })
            }
            (lock_op::FLUSH, None) if w.lock.held(rank).is_some() => Some(0),
            _ => Some(LockAnswer::REFUSED),
        };
        if let Some(status) = status {
            w.answer(rank, status);
        }
        Ok(w.due > 0)
    }

    /// `rank`'s get of `len` bytes at byte `at` of window `context`,
    /// answered under `tag`: due at once, with the bytes if `rank` holds
    /// the lock and the range is inside the window, else with none.
    /// Returns true (kick the send work).
    ///
    /// # Errors
    ///
    /// As for [`WindowTable::request`].
    ///
    /// Context: as [`WindowTable::target`].
    pub(crate) fn get(
        &mut self,
        rank: u32,
        context: u32,
        at: u64,
        len: u64,
        tag: u32,
    ) -> core::result::Result<bool, Failure> {
        let w = self.ask(rank, context, tag)?;
        let fits = at
            .checked_add(len)
            .is_some_and(|end| end <= w.buf.len() as u64);
        let granted = fits && w.lock.held(rank).is_some();
        if let Some(asker) = w.askers.get_mut(rank as usize) {
            // Within the window, so both fit.
            asker.get = Some(granted.then_some((at as usize, len as usize)));
        }
        w.stats.gets = w.stats.gets.saturating_add(1);
        if granted {
            w.stats.get_bytes = w.stats.get_bytes.saturating_add(len);
        }
        let status = if granted { 0 } else { LockAnswer::REFUSED };
        w.answer(rank, status);
        Ok(true)
    }

    /// Window `id`'s process has completed `epoch` fences: the locks
    /// asked for after as many are taken now. Returns whether answers are
    /// due (kick the send work). `ENOENT` if there is no such window.
    ///
    /// Context: process context (an ioctl); takes nothing else.
    pub(crate) fn set_epoch(&mut self, id: u32, epoch: u64) -> Result<bool> {
        let w = self.find_mut(id).ok_or(ENOENT)?;
        w.epoch = w.epoch.max(epoch);
        for rank in 0..w.askers.len() {
            let Some(a) = w.askers.get_mut(rank) else {
                break;
            };
            let Some((kind, _)) = a.deferred.filter(|&(_, e)| e <= w.epoch) else {
                continue;
            };
            a.deferred = None;
            // At most `O2G_MAX_SOCKETS` ranks: fits.
            if let Some(status) = lock_status(&mut w.lock, rank as u32, kind) {
                w.answer(rank as u32, status);
            }
        }
        Ok(w.due > 0)
    }

    /// `rank` asks window `context` something answered under `tag`: the
    /// window, with the request recorded.
    fn ask(
        &mut self,
        rank: u32,
        context: u32,
        tag: u32,
    ) -> core::result::Result<&mut Window, Failure> {
        let w = self
            .slots
            .iter_mut()
            .flatten()
            .find(|w| w.context == context)
            .filter(|w| (rank as usize) < w.askers.len())
            .ok_or(Failure::NoWindow(context))?;
        let asker = w
            .askers
            .get_mut(rank as usize)
            .ok_or(Failure::NoWindow(context))?;
        if asker.asked {
            return Err(Failure::Overlapping);
        }
        asker.asked = true;
        asker.tag = tag;
        Ok(w)
    }

    /// `rank`'s connection is gone: it loses every lock it held or waited
    /// for and every answer due to it. Returns whether answers became due
    /// to others (kick the send work).
    ///
    /// Context: as [`WindowTable::target`].
    pub(crate) fn forget(&mut self, rank: u32) -> bool {
        let mut any = false;
        for w in self.slots.iter_mut().flatten() {
            let Window {
                lock, askers, due, ..
            } = w;
            if let Some(a) = askers.get_mut(rank as usize) {
                if a.due.is_some() {
                    *due = due.saturating_sub(1);
                }
                *a = Asker::default();
            }
            lock.forget(rank, |g, _| make_due(askers, due, g, 0));
            any |= *due > 0;
        }
        any
    }

    /// Takes one due answer, or `None`; `skip(rank)` says whether that
    /// origin is to be left for a later pass. The origin may ask again
    /// from here: it may read the answer as soon as it is written, before
    /// the writer is back (so an answer not written now goes back with
    /// [`WindowTable::restore`]).
    ///
    /// Context: any; the window lock held (the send work takes it alone).
    pub(crate) fn take_answer(&mut self, skip: impl Fn(u32) -> bool) -> Option<DueAnswer> {
        for w in self.slots.iter_mut().flatten() {
            if w.due == 0 {
                continue;
            }
            let context = w.context;
            let window = w.id;
            for (rank, a) in w.askers.iter_mut().enumerate() {
                // At most `O2G_MAX_SOCKETS` ranks: fits.
                let rank = rank as u32;
                let Some(status) = a.due.filter(|_| !skip(rank)) else {
                    continue;
                };
                let tag = a.tag;
                let reply = match a.get {
                    Some(range) => Reply::Get(range.map(|(at, len)| (w.buf.clone(), at, len))),
                    None => Reply::Lock(LockAnswer {
                        status,
                        refused_puts: core::mem::take(&mut a.refused),
                    }),
                };
                // Refused puts not reported yet stay for the next lock
                // answer.
                *a = Asker {
                    refused: a.refused,
                    ..Asker::default()
                };
                w.due = w.due.saturating_sub(1);
                w.stats.answers = w.stats.answers.saturating_add(1);
                return Some(DueAnswer {
                    rank,
                    envelope: Envelope {
                        source: 0,
                        tag,
                        context,
                    },
                    reply,
                    window,
                });
            }
        }
        None
    }

    /// An answer [`WindowTable::take_answer`] gave could not be written
    /// now: it is due again. (An origin that asked again meanwhile,
    /// without its answer, keeps its new request and loses the old
    /// answer: only it waits for either.)
    pub(crate) fn restore(&mut self, due: &DueAnswer) {
        let Some(w) = self.find_mut(due.window) else {
            return;
        };
        let Some(a) = w.askers.get_mut(due.rank as usize) else {
            return;
        };
        w.stats.answers = w.stats.answers.saturating_sub(1);
        if a.asked {
            return;
        }
        let (status, refused, get) = match &due.reply {
            Reply::Lock(l) => (l.status, l.refused_puts, None),
            Reply::Get(None) => (LockAnswer::REFUSED, 0, Some(None)),
            Reply::Get(Some((_, at, len))) => (0, 0, Some(Some((*at, *len)))),
        };
        *a = Asker {
            asked: true,
            tag: due.envelope.tag,
            due: None,
            refused: a.refused.saturating_add(refused),
            get,
            deferred: None,
        };
        w.answer(due.rank, status);
    }

    /// Copies `n` bytes with `fill` into window `id` at byte `at`, if it
    /// is still registered; bytes for a window gone meanwhile are dropped.
    ///
    /// Context: as [`WindowTable::target`].
    pub(crate) fn copy_in(
        &self,
        id: u32,
        at: usize,
        n: usize,
        fill: impl FnMut(*mut u8, usize, usize) -> Result,
    ) -> Result {
        match self.find(id) {
            Some(w) => w.buf.copy_in(at, n, fill).map(|_| ()),
            None => Ok(()),
        }
    }

    /// Counts a put of `len` bytes that ended, as `target` decided it.
    pub(crate) fn count(&mut self, target: Target, len: u64) {
        let (id, refused_by) = match target {
            Target::Place { id, .. } => (id, None),
            Target::Refuse { id, rank } => (id, Some(rank)),
            Target::Unknown => {
                self.unknown_msgs = self.unknown_msgs.saturating_add(1);
                return;
            }
        };
        // A window unregistered mid-put counts nothing.
        let Some(w) = self.find_mut(id) else {
            return;
        };
        let s = &mut w.stats;
        match refused_by {
            None => {
                s.placed_msgs = s.placed_msgs.saturating_add(1);
                s.placed_bytes = s.placed_bytes.saturating_add(len);
            }
            Some(rank) => {
                s.refused_msgs = s.refused_msgs.saturating_add(1);
                s.refused_bytes = s.refused_bytes.saturating_add(len);
                if let Some(a) = w.askers.get_mut(rank as usize) {
                    a.refused = a.refused.saturating_add(1);
                }
            }
        }
    }
}
