// SPDX-License-Identifier: GPL-2.0

//! One endpoint per open file of `/dev/o2g`: one MPI process's view of the module.
//!
//! # Lock order
//!
//! 1. `Endpoint::inner` (mutex, process context only)
//! 2. the list of control connections (`EndpointRx::controls`, mutex)
//! 3. a control connection's tx mutex (`Conn::tx`)
//! 4. `lock_sock()` of a registered socket
//! 5. that socket's `sk_callback_lock` (write, BH off)
//! 6. the connection's reader lock (spinlock, BH off)
//! 7. the endpoint's rx lock (`EndpointRx`, spinlock, BH off), or its
//!    window lock (`window.rs`, spinlock, BH off): never both at once
//!
//! The `sk_data_ready` hook (softirq) takes 5 for reading, then 6 and 7;
//! the connection's work item takes 4, 5 (read), 6 and 7; the send work
//! takes 2, 3, then 4 inside `sendmsg` and 7 between sends. Ioctls take
//! 1 and 7, never both at once, except REGISTER and teardown (1, then
//! 2-7).
//!
//! # Memory
//!
//! INIT sizes everything the receive path uses (engine, tables, dump
//! area, ring); softirq never allocates. Pinned receive buffers are bounded
//! by INIT's pin budget.

use core::mem::size_of;

use kernel::{
    fs::File,
    miscdevice::{
        MiscDevice,
        MiscDeviceRegistration, //
    },
    mm::virt::VmaNew,
    new_mutex,
    prelude::*,
    sync::{Arc, Mutex},
    transmute::{AsBytes, FromBytes},
    uaccess::UserSlice,
};

use crate::abi;
use crate::conn::{Conn, Role};
use crate::data_path::{self, Capacities, DataPath, PostedRecv};
use crate::endpoint_rx::EndpointRx;
use crate::flow_steering::{self, STEER_MIN};
use crate::pinned::PinnedBuf;
use crate::proto::{
    envelope::{self, SourceSel},
    matching::{CancelError, MsgId, RecvId},
    receive::{is_request, OnPost},
};
use crate::shared::SharedArea;
use crate::sock::{errno, TcpSocket};
use crate::trace::{trace, Step};
use crate::window::{Window, WindowTable};

/// Marks ABI structs as plain data for the user-copy helpers.
macro_rules! plain_data {
    ($($t:ty),*) => {$(
        // SAFETY: `repr(C)`, integers only, explicit padding fields: every
        // byte pattern is valid and no byte is uninitialised.
        unsafe impl AsBytes for $t {}
        // SAFETY: As above.
        unsafe impl FromBytes for $t {}
    )*};
}
plain_data!(
    abi::VersionInfo,
    abi::EndpointStats,
    abi::SocketRegistration,
    abi::RankArg,
    abi::InitArgs,
    abi::PostArgs,
    abi::ProbeArgs,
    abi::IdArg,
    abi::PollArgs,
    abi::SocketStats,
    abi::StoredMessage,
    abi::EndpointList,
    abi::EndpointSummary,
    abi::OfferArgs,
    abi::RendezvousStats,
    abi::CreditArgs,
    abi::WindowArgs,
    abi::WindowStats,
    abi::WindowEpoch
);

/// The most sockets one endpoint may register: far above any MPI job's
/// connection count per process, low enough to bound kernel memory.
const MAX_SOCKETS: usize = abi::O2G_MAX_SOCKETS as usize;

/// State changed only from process context.
struct Inner {
    /// Sorted by rank and role, so that a POST finds its source's
    /// connection in O(log n) however many idle connections are
    /// registered.
    conns: KVec<Arc<Conn>>,
}

impl Inner {
    /// Where `rank`'s `role` connection is (`Ok`) or would go (`Err`).
    fn position(&self, rank: u32, role: Role) -> core::result::Result<usize, usize> {
        self.conns
            .binary_search_by_key(&(rank, role), |c| (c.rank(), c.role()))
    }
}

/// The per-file state of `/dev/o2g`.
#[pin_data(PinnedDrop)]
pub(crate) struct Endpoint {
    #[pin]
    inner: Mutex<Inner>,
    rx: Arc<EndpointRx>,
}

#[vtable]
impl MiscDevice for Endpoint {
    type Ptr = Pin<KBox<Self>>;

    /// Creates the endpoint.
    ///
    /// Context: process context (`open(2)`), may sleep; no locks held.
    fn open(_file: &File, _misc: &MiscDeviceRegistration<Self>) -> Result<Pin<KBox<Self>>> {
        let endpoint = KBox::try_pin_init(
            try_pin_init!(Endpoint {
                inner <- new_mutex!(Inner { conns: KVec::new() }),
                rx: EndpointRx::new()?,
            }),
            GFP_KERNEL_ACCOUNT,
        )?;
        endpoint.rx.zc_hub().attach(endpoint.rx.clone());
        // The process id (thread group), through the C helper: reading
        // `group_leader->pid` through the bindings gave garbage here.
        let pid = kernel::current!().tgid_nr_ns(None);
        // The box's address is stable from here until release removes it.
        crate::registry::add(&endpoint, pid as u32)?;
        Ok(endpoint)
    }

    /// Dispatches an ioctl. Unknown opcodes get `ENOTTY`; a bad argument
    /// pointer gets `EFAULT` from the user-copy helpers; non-zero reserved
    /// fields and flags get `EINVAL`; receive-path calls before INIT get
    /// `EBADFD`.
    ///
    /// Context: process context, may sleep; no locks held.
    fn ioctl(me: Pin<&Endpoint>, _file: &File, cmd: u32, arg: usize) -> Result<isize> {
        fn io<T: FromBytes + AsBytes>(
            arg: usize,
            f: impl FnOnce(&mut T) -> Result<isize>,
        ) -> Result<isize> {
            let user = UserSlice::new(UserPtr::from_addr(arg), size_of::<T>());
            let (mut reader, mut writer) = user.reader_writer();
            let mut val: T = reader.read()?;
            let r = f(&mut val)?;
            writer.write(&val)?;
            Ok(r)
        }
        fn input<T: FromBytes>(arg: usize) -> Result<T> {
            UserSlice::new(UserPtr::from_addr(arg), size_of::<T>())
                .reader()
                .read()
        }
        fn output<T: AsBytes>(arg: usize, val: &T) -> Result<isize> {
            UserSlice::new(UserPtr::from_addr(arg), size_of::<T>())
                .writer()
                .write(val)?;
            Ok(0)
        }
        match cmd {
            abi::O2G_IOC_VERSION => output(
                arg,
                &abi::VersionInfo {
                    major: abi::O2G_ABI_MAJOR,
                    minor: abi::O2G_ABI_MINOR,
                    reserved: 0,
                    features: abi::feature::NOTICES
                        | abi::feature::RENDEZVOUS
                        | abi::feature::CREDIT
                        | abi::feature::WINDOWS
                        | abi::feature::CONTROL_IN,
                },
            ),
            abi::O2G_IOC_REGISTER_SOCKET => me.register(input(arg)?).map(|()| 0),
            abi::O2G_IOC_UNREGISTER_SOCKET => {
                let a: abi::RankArg = input(arg)?;
                if a.reserved != 0 {
                    return Err(EINVAL);
                }
                me.unregister(a.rank).map(|()| 0)
            }
            abi::O2G_IOC_STATS => {
                // The owner's `pinned_bytes` counts only buffers in use.
                me.rx.unpin_retired();
                output(arg, &me.stats())
            }
            abi::O2G_IOC_INIT => io(arg, |a| me.init(a).map(|()| 0)),
            abi::O2G_IOC_POST => io(arg, |a| me.post(a).map(|()| 0)),
            abi::O2G_IOC_CANCEL => me.cancel(input::<abi::IdArg>(arg)?.id),
            abi::O2G_IOC_FREE => me.free(input::<abi::IdArg>(arg)?.id).map(|()| 0),
            abi::O2G_IOC_SYNC => me.sync().map(|()| 0),
            abi::O2G_IOC_POLL => io(arg, |a| me.poll(a).map(|()| 0)),
            abi::O2G_IOC_PROBE => io(arg, |a| me.probe(a).map(|()| 0)),
            abi::O2G_IOC_LIST_ENDPOINTS => io(arg, |a| crate::registry::list(a).map(|()| 0)),
            abi::O2G_IOC_SOCKET_STATS => io(arg, |a: &mut abi::SocketStats| {
                *a = me.find(a.rank).ok_or(ENOENT)?.stats();
                Ok(0)
            }),
            abi::O2G_IOC_OFFER => io(arg, |a| me.offer(a).map(|()| 0)),
            abi::O2G_IOC_RNDV_STATS => output(arg, &me.rndv_stats()?),
            abi::O2G_IOC_TAKE_CREDIT => io(arg, |a| me.take_credit(a).map(|()| 0)),
            abi::O2G_IOC_WIN_REGISTER => io(arg, |a| me.register_window(a).map(|()| 0)),
            abi::O2G_IOC_WIN_UNREGISTER => {
                let id = input::<abi::IdArg>(arg)?.id;
                me.unregister_window(u32::try_from(id).map_err(|_| ENOENT)?)
                    .map(|()| 0)
            }
            abi::O2G_IOC_WIN_STATS => io(arg, |a| me.window_stats(a).map(|()| 0)),
            abi::O2G_IOC_WIN_EPOCH => me.window_epoch(input(arg)?).map(|()| 0),
            _ => Err(ENOTTY),
        }
    }

    /// Maps the ring and the dump area (see `abi::InitArgs`).
    ///
    /// Errors: `EBADFD` before INIT; `EINVAL` unless the mapping is shared,
    /// starts at offset 0 and is exactly `map_bytes` long.
    ///
    /// Context: process context, mmap lock held for writing.
    fn mmap(me: Pin<&Endpoint>, _file: &File, vma: &VmaNew) -> Result {
        me.rx.shared().ok_or_else(errno::ebadfd)?.map(vma)
    }
}

impl Endpoint {
    /// Attaches the caller's connected TCP socket `reg.fd` as the connection
    /// to `reg.rank`.
    ///
    /// With `O2G_REGISTER_CONTROL` it is the pair's control connection,
    /// with `O2G_REGISTER_CONTROL_IN` the one the peer's module writes; with
    /// `O2G_REGISTER_SELF`, the connection of this process to itself.
    ///
    /// Errors: `EINVAL` (unknown flags, `local_rank` without a control
    /// flag, a rank out of range, `O2G_REGISTER_CONTROL_IN` before that
    /// rank's control connection), `EBADF`, `ENOTSOCK`, `EPROTOTYPE` (not
    /// TCP), `ENOTCONN`, `EBUSY` (socket already claimed, here or
    /// elsewhere), `EEXIST` (that connection of the rank is registered
    /// already), `ENOSPC` (endpoint full), `EBADFD` (before INIT).
    fn register(&self, reg: abi::SocketRegistration) -> Result {
        let (role, is_self) = match reg.flags {
            0 if reg.local_rank == 0 => (Role::Messages, false),
            abi::O2G_REGISTER_CONTROL if reg.local_rank < abi::O2G_MAX_RANK => {
                (Role::Control, false)
            }
            abi::O2G_REGISTER_CONTROL_IN if reg.local_rank < abi::O2G_MAX_RANK => {
                (Role::ControlIn, false)
            }
            abi::O2G_REGISTER_SELF if reg.local_rank == reg.rank => (Role::Messages, true),
            _ => return Err(EINVAL),
        };
        if reg.rank >= abi::O2G_MAX_RANK {
            return Err(EINVAL);
        }
        let max_message = self.rx.with_recv(|_, st, _| Ok(st.book.caps.max_message))?;
        let sock = TcpSocket::lookup(reg.fd)?;
        let mut inner = self.inner.lock();
        if inner.conns.iter().any(|c| c.is_socket(&sock)) {
            return Err(EBUSY);
        }
        let Err(at) = inner.position(reg.rank, role) else {
            return Err(EEXIST);
        };
        if inner.conns.len() >= MAX_SOCKETS {
            return Err(ENOSPC);
        }
        // The other direction's control traffic needs this one's writer.
        let outgoing = match role {
            Role::ControlIn => {
                let out = inner
                    .position(reg.rank, Role::Control)
                    .map_err(|_| EINVAL)?;
                Some(inner.conns[out].clone())
            }
            _ => None,
        };
        inner.conns.reserve(1, GFP_KERNEL_ACCOUNT)?;
        let mut controls = self.rx.controls();
        // `inner` has no control connection to this rank, so neither has
        // this list: `Err` is where it goes.
        let control_at = controls
            .binary_search_by_key(&reg.rank, |c| c.rank())
            .unwrap_or_else(|i| i);
        if role == Role::Control {
            controls.reserve(1, GFP_KERNEL_ACCOUNT)?;
        }
        // Counted live before the hook can read (and fail) it; known as
        // this process's own before a request on it can arrive; a
        // messages connection takes its peer's window of the dump area.
        let window = self.rx.with_recv(|_, st, _| {
            if is_self && st.self_rank.is_some() {
                return Err(EEXIST);
            }
            let window = match (role, st.credit.as_ref()) {
                (Role::Messages, Some(book)) => {
                    book.check_rank(reg.rank)?;
                    Some(book.window())
                }
                _ => None,
            };
            if is_self {
                st.self_rank = Some(reg.rank);
            }
            st.rx.add_conn();
            Ok(window)
        })?;
        let conn = match Conn::hook(
            sock,
            reg.rank,
            role,
            reg.local_rank,
            self.rx.clone(),
            max_message,
            window,
            outgoing,
        ) {
            Ok(conn) => conn,
            Err(e) => {
                let _ = self.rx.with_recv(|_, st, _| {
                    st.rx.remove_conn(true);
                    if is_self {
                        st.self_rank = None;
                    }
                    Ok(())
                });
                return Err(e);
            }
        };
        // Capacity was reserved before hooking, so this cannot fail; if it
        // ever did, the socket must not stay hooked with nobody tracking it.
        if role == Role::Control
            && controls
                .insert_within_capacity(control_at, conn.clone())
                .is_err()
        {
            drop(controls);
            self.detach(&conn);
            return Err(ENOMEM);
        }
        drop(controls);
        // Credit owed to this rank waited for its control connection.
        if role == Role::Control
            && self
                .rx
                .with_recv(|_, st, _| Ok(st.requeue_credit(reg.rank)))
                == Ok(true)
        {
            self.rx.schedule_send();
        }
        if let Err(e) = inner.conns.insert_within_capacity(at, conn) {
            let (kernel::alloc::kvec::InsertError::IndexOutOfBounds(conn)
            | kernel::alloc::kvec::InsertError::OutOfCapacity(conn)) = e;
            self.detach(&conn);
            return Err(ENOMEM);
        }
        Ok(())
    }

    /// Detaches the connections to `rank` (its control connections too);
    /// their sockets work as plain sockets again. Errors:
    /// `ENOENT` if no such rank is registered.
    fn unregister(&self, rank: u32) -> Result {
        let mut gone = KVec::new();
        {
            let mut inner = self.inner.lock();
            for role in [Role::ControlIn, Role::Control, Role::Messages] {
                if let Ok(idx) = inner.position(rank, role) {
                    gone.push(inner.conns.remove(idx)?, GFP_KERNEL)?;
                }
            }
        }
        if gone.is_empty() {
            return Err(ENOENT);
        }
        for conn in gone.iter() {
            self.detach(conn);
        }
        Ok(())
    }

    /// Unhooks `conn` and stops counting it live. Leaving by choice, unlike
    /// failing, leaves receives from any source posted; leaving a control
    /// connection fails it (see [`Conn::unhook`]), so that offers to its
    /// rank and receives waiting for its data end.
    ///
    /// Context: process context, may sleep (see [`Conn::unhook`]).
    fn detach(&self, conn: &Arc<Conn>) {
        if conn.role() == Role::Control {
            let mut controls = self.rx.controls();
            if let Some(i) = controls.iter().position(|c| Arc::ptr_eq(c, conn)) {
                let _ = controls.remove(i);
            }
            // The send work holds the list during a pass: none is using
            // this connection now, and none will.
            conn.tx().lock().abandon(&self.rx);
        }
        conn.unhook();
        let _ = self.rx.with_recv(|_, st, _| {
            st.rx.remove_conn(conn.leave_live());
            if conn.role() == Role::Messages {
                if st.self_rank == Some(conn.rank()) {
                    st.self_rank = None;
                }
            }
            Ok(())
        });
    }

    /// This endpoint's counters.
    pub(crate) fn stats(&self) -> abi::EndpointStats {
        use core::sync::atomic::Ordering::Relaxed;
        // At most `MAX_SOCKETS`, which fits.
        let sockets = self.inner.lock().conns.len() as u32;
        self.rx.with(|st| {
            let c = &st.counters;
            let mut s = abi::EndpointStats {
                sockets,
                data_ready_events: self.rx.data_ready_events.load(Relaxed),
                deferred_reads: self.rx.deferred_reads.load(Relaxed),
                notices: c.notices,
                deferred_copies: c.deferred_copies,
                ..Default::default()
            };
            if let Some(r) = st.recv.as_ref() {
                let m = r.rx.stats();
                s.failed_sockets = m.failed_conns;
                s.matched_msgs = m.matched_msgs;
                s.matched_bytes = m.matched_bytes;
                s.unexpected_msgs = m.unexpected_msgs;
                s.unexpected_bytes = m.unexpected_bytes;
                s.backpressure_events = m.backpressure_events;
                s.protocol_errors = m.protocol_errors;
                s.released_msgs = m.released_msgs;
                s.bad_releases = m.bad_releases;
                // Queue lengths are at most `O2G_MAX_QUEUE`.
                s.posted = r.rx.posted_len() as u32;
                s.unexpected = r.rx.unexpected_len() as u32;
                s.dump_used = r.rx.store().used();
                s.pinned_bytes = r.book.pinned;
            }
            s
        })
    }

    /// This endpoint's rendezvous counters. `EBADFD` before INIT.
    fn rndv_stats(&self) -> Result<abi::RendezvousStats> {
        self.rx.with_recv(|_, st, c| {
            let m = st.rx.stats();
            Ok(abi::RendezvousStats {
                requests_matched: m.rts_matched,
                requests_stored: m.rts_stored,
                data_msgs: m.data_msgs,
                data_bytes: m.data_bytes,
                cts_sent: c.cts_sent,
                offers: c.offers,
                offers_sent: c.offers_sent,
                offer_bytes_sent: c.offer_bytes_sent,
                window_bytes: st.credit.as_ref().map_or(0, |b| b.window().bytes),
                held_peak: c.held_peak,
                credits_sent: c.credits_sent,
                credits_received: c.credits_received,
            })
        })
    }

    /// Takes the eager credit a peer granted; see `abi::O2G_IOC_TAKE_CREDIT`.
    fn take_credit(&self, a: &mut abi::CreditArgs) -> Result {
        let rank = a.rank;
        let credit = self.rx.with_recv(|_, st, _| {
            st.credit
                .as_mut()
                .ok_or_else(errno::eopnotsupp)?
                .take_granted(rank)
        })?;
        a.msgs = credit.msgs;
        a.bytes = credit.bytes;
        Ok(())
    }

    /// Steers the receive processing of `rank`'s connections to the
    /// caller's CPU (see `flow_steering.rs`).
    ///
    /// Context: process context; takes `inner`.
    fn steer_to_caller(&self, rank: u32) {
        let inner = self.inner.lock();
        for role in [Role::Messages, Role::Control, Role::ControlIn] {
            if let Ok(i) = inner.position(rank, role) {
                inner.conns[i].steer_here();
            }
        }
    }

    /// The messages connection to `rank`, if registered.
    fn find(&self, rank: u32) -> Option<Arc<Conn>> {
        let inner = self.inner.lock();
        inner
            .position(rank, Role::Messages)
            .ok()
            .map(|i| inner.conns[i].clone())
    }

    /// Offers a rendezvous send's buffer, or replaces the buffer of an
    /// offer not cleared yet; see `abi::O2G_IOC_OFFER`.
    fn offer(&self, a: &mut abi::OfferArgs) -> Result {
        let replace = match a.flags {
            0 => false,
            abi::O2G_OFFER_REPLACE => true,
            _ => return Err(EINVAL),
        };
        if a.reserved != 0 || a.len > abi::O2G_MAX_MESSAGE || a.rank >= abi::O2G_MAX_RANK {
            return Err(EINVAL);
        }
        if replace {
            return self.replace_offer(a);
        }
        // A rendezvous to oneself needs only the connection to oneself.
        let is_self = self
            .rx
            .with_recv(|_, st, _| Ok(st.self_rank == Some(a.rank)))?;
        let live = {
            let inner = self.inner.lock();
            let role = if is_self {
                Role::Messages
            } else {
                Role::Control
            };
            // A failed `ControlIn` fails its `Control` too (`Conn::mark_failed`).
            inner
                .position(a.rank, role)
                .ok()
                .is_some_and(|i| !inner.conns[i].has_failed())
        };
        if !live {
            return Err(errno::enotconn());
        }
        let len = a.len;
        self.rx
            .with_recv(|shared, st, _| st.admit_offer(shared, len))?;
        let buf = match PinnedBuf::pin_read_only(a.buf, len) {
            Ok(buf) => buf,
            Err(e) => {
                self.unreserve(len);
                return Err(e);
            }
        };
        let (rank, user_data) = (a.rank, a.user_data);
        let inserted = self.rx.with_recv(|_, st, c| {
            let inserted = st.offers.insert(rank, user_data, buf);
            c.offers += u64::from(inserted.is_ok());
            Ok(inserted)
        })?;
        match inserted {
            Ok(id) => {
                trace(Step::Offer, rank, len, id.into());
                a.offer = id;
                Ok(())
            }
            // Another OFFER took the last entry since the admission.
            Err(buf) => {
                drop(buf);
                self.unreserve(len);
                Err(ENOSPC)
            }
        }
    }

    /// The replacing half of [`Endpoint::offer`]. The new buffer has the
    /// old one's length, so the pin budget does not change.
    fn replace_offer(&self, a: &abi::OfferArgs) -> Result {
        let buf = PinnedBuf::pin_read_only(a.buf, a.len)?;
        let (rank, id) = (a.rank, a.offer);
        let swapped = self
            .rx
            .with_recv(|_, st, _| Ok(st.offers.replace(rank, id, buf)))?;
        match swapped {
            // Unpinned here, in process context.
            Ok(old) => {
                drop(old);
                Ok(())
            }
            Err((new, e)) => {
                drop(new);
                Err(e)
            }
        }
    }

    /// Pins a memory window and files it for puts; see
    /// `abi::O2G_IOC_WIN_REGISTER`.
    fn register_window(&self, a: &mut abi::WindowArgs) -> Result {
        if a.flags != 0
            || a.ranks == 0
            || a.ranks > abi::O2G_MAX_SOCKETS
            || a.len == 0
            || a.len > abi::O2G_MAX_WINDOW
            || a.context & envelope::SYNC_FLAG != 0
        {
            return Err(EINVAL);
        }
        let len = a.len;
        // The pin budget, as for an offer (`EBADFD` before INIT).
        self.rx.with_recv(|_, st, _| {
            if st.book.pinned.saturating_add(len) > st.book.caps.pin_budget {
                return Err(errno::enobufs());
            }
            st.book.pinned += len;
            Ok(())
        })?;
        let buf = match PinnedBuf::pin(a.base, len) {
            Ok(buf) => buf,
            Err(e) => {
                self.unreserve(len);
                return Err(e);
            }
        };
        let window = match Window::new(a.context, buf, a.ranks) {
            Ok(w) => w,
            Err(e) => {
                self.unreserve(len);
                return Err(e);
            }
        };
        match self.rx.with_windows(|t| t.insert(window)) {
            Ok(id) => {
                a.id = id;
                Ok(())
            }
            Err((window, e)) => {
                // Unpinned here, in process context.
                drop(window);
                self.unreserve(len);
                Err(e)
            }
        }
    }

    /// Unregisters and unpins a window; see `abi::O2G_IOC_WIN_UNREGISTER`.
    fn unregister_window(&self, id: u32) -> Result {
        let window = self.rx.with_windows(|t| t.remove(id))?;
        let len = window.len() as u64;
        // Unpinned here, in process context, after the lock.
        drop(window);
        self.unreserve(len);
        Ok(())
    }

    /// Records the fences a window's process completed; see
    /// `abi::O2G_IOC_WIN_EPOCH`.
    fn window_epoch(&self, a: abi::WindowEpoch) -> Result {
        if a.reserved != 0 {
            return Err(EINVAL);
        }
        if self.rx.with_windows(|t| t.set_epoch(a.id, a.epoch))? {
            self.rx.schedule_send();
        }
        Ok(())
    }

    /// A window's counters; see `abi::O2G_IOC_WIN_STATS`.
    fn window_stats(&self, a: &mut abi::WindowStats) -> Result {
        if a.reserved != 0 {
            return Err(EINVAL);
        }
        let id = a.id;
        *a = self.rx.with_windows(|t| t.stats(id))?;
        Ok(())
    }

    /// Sets the capacities and allocates the receive path, once.
    ///
    /// Errors: `EINVAL` (out of range), `EBUSY` (already done), `ENOMEM`.
    fn init(&self, a: &mut abi::InitArgs) -> Result {
        let caps = Capacities::from_args(a)?;
        if self.rx.shared().is_some() {
            return Err(EBUSY);
        }
        let entries = caps.ring_entries();
        let shared = SharedArea::new(entries, caps.dump_bytes as usize)?;
        let seed = core::ptr::from_ref(self) as u64;
        let eager_slots = caps.credit.map_or(0, |cc| cc.records());
        let recv = DataPath::new(caps, seed)?;
        let windows = WindowTable::entries()?;
        let (ring_entries, ring_offset, dump_offset, map_bytes) = shared.layout();
        self.rx.install(shared, recv)?;
        self.rx.with_windows(|t| t.install(windows));
        a.ring_entries = ring_entries;
        a.ring_offset = ring_offset;
        a.dump_offset = dump_offset;
        a.map_bytes = map_bytes;
        a.eager_slots = eager_slots;
        Ok(())
    }

    /// Posts a receive: takes a stored unexpected message at once, or pins
    /// the buffer and queues the receive.
    ///
    /// Errors: `EINVAL`, `EFAULT` (buffer not writable), `ENOSPC` (posted
    /// queue full), `EAGAIN` (ring could overflow), `ENOBUFS` (pin budget),
    /// `ECONNRESET` (the connection to that source failed, or for any
    /// source every connection failed), `EBADFD`.
    fn post(&self, a: &mut abi::PostArgs) -> Result {
        if a.flags != 0 || a.buf_len > abi::O2G_MAX_MESSAGE {
            return Err(EINVAL);
        }
        let sel = data_path::selector(a.source, a.tag, a.context)?;
        if let SourceSel::Rank(r) = sel.source {
            if a.buf_len >= STEER_MIN && flow_steering::rfs_enabled() {
                self.steer_to_caller(r);
            }
        }
        // Finished receives give their pins back before this one is
        // admitted against the budget and the table.
        self.rx.unpin_retired();
        let conn = match sel.source {
            SourceSel::Rank(r) => self.find(r),
            SourceSel::Any => None,
        };
        let failed = || conn.as_ref().is_some_and(|c| c.has_failed());
        let len = a.buf_len;
        let ring_seen = a.ring_seen;
        let mut released = 0;
        // Cheap path first: a stored message needs no pinning.
        let early = self.rx.with_recv(|shared, st, _| {
            // Messages the process already took must not match again.
            released = st.apply_releases(shared);
            if st.announced_since(ring_seen) {
                return Ok(Some(PostResult::Rescan));
            }
            // A stored request to send needs the buffer pinned first.
            if let Some((id, info)) = st.rx.probe(sel).filter(|(_, i)| !is_request(i)) {
                let (info, region) = st
                    .rx
                    .claim(id)
                    .map_err(|_| EINVAL)
                    .map(|(_, r)| (info, r))?;
                return Ok(Some(PostResult::Stored(
                    st.stored(shared, id, info, region),
                )));
            }
            if st.rx.unreachable(sel, failed()) {
                return Err(errno::econnreset());
            }
            st.admit(shared, len)?;
            Ok(None)
        });
        if released > 0 {
            self.kick_stalled();
        }
        let early = early?;
        a.recv_id = 0;
        a.msg = abi::StoredMessage::default();
        if let Some(result) = early {
            a.set_result(result);
            return Ok(());
        }
        let buf = match PinnedBuf::pin(a.buf, len) {
            Ok(buf) => buf,
            Err(e) => {
                let _ = self.rx.with_recv(|_, st, _| {
                    st.settle();
                    Ok(())
                });
                self.unreserve(len);
                return Err(e);
            }
        };
        let recv = PostedRecv {
            buf,
            user_data: a.user_data,
        };
        let mut send = false;
        let (result, unused) = self.rx.with_recv(|shared, st, _| {
            // Whatever happens below, the reservation ends in this section.
            st.settle();
            // Announced while the buffer was being pinned: the process must
            // match it first.
            if st.announced_since(ring_seen) {
                return Ok((Ok(PostResult::Rescan), Some(recv)));
            }
            // A message stored before the connection failed is still
            // delivered; only a receive that could wait forever is refused.
            if st.rx.unreachable(sel, failed()) && st.rx.probe(sel).is_none() {
                return Ok((Err(errno::econnreset()), Some(recv)));
            }
            let handle = match st.book.insert(recv) {
                Ok(h) => h,
                Err(recv) => return Ok((Err(ENOSPC), Some(recv))),
            };
            Ok(match st.rx.post(sel, handle) {
                Ok(OnPost::Queued(id)) => (Ok(PostResult::Queued(id)), None),
                Ok(OnPost::FromStore { msg, info, region }) => (
                    Ok(PostResult::Stored(st.stored(shared, msg, info, region))),
                    st.book.take(handle),
                ),
                // The receive waits for the data its clear-to-send asks
                // for; if that cannot be queued, it completed already.
                Ok(OnPost::Clear(clear)) => {
                    send = st.clear_to_send(shared, clear);
                    (Ok(PostResult::Cleared), None)
                }
                Err(_) => (Err(ENOSPC), st.book.take(handle)),
            })
        })?;
        if let Some(recv) = unused {
            drop(recv);
            self.unreserve(len);
        }
        if send {
            self.rx.schedule_send();
        }
        let result = result?;
        let queued = matches!(result, PostResult::Queued(_));
        a.set_result(result);
        if queued {
            // A stalled connection may hold this receive's message.
            self.kick_stalled();
        }
        Ok(())
    }

    /// Returns `len` bytes to the pin budget after unpinning.
    fn unreserve(&self, len: u64) {
        let _ = self.rx.with_recv(|_, st, _| {
            st.book.pinned = st.book.pinned.saturating_sub(len);
            Ok(())
        });
    }

    /// Cancels a queued receive: 1 if cancelled (its buffer is released
    /// now), 0 if it already matched. `EINVAL` for an id out of range.
    fn cancel(&self, id: u64) -> Result<isize> {
        let recv = self
            .rx
            .with_recv(|_, st, _| match st.rx.cancel(RecvId::from_raw(id)) {
                Ok(handle) => Ok(st.book.take(handle)),
                Err(CancelError::TooLate) => Ok(None),
                Err(CancelError::InvalidId) => Err(EINVAL),
            })?;
        Ok(match recv {
            Some(recv) => {
                let len = recv.buf.len() as u64;
                drop(recv);
                self.unreserve(len);
                1
            }
            None => 0,
        })
    }

    /// Frees a stored message a post or claiming probe took. `ENOENT` if
    /// the id names no such message.
    fn free(&self, id: u64) -> Result {
        let freed = self.rx.with_recv(|shared, st, _| {
            st.apply_releases(shared);
            st.rx
                .release_claimed(MsgId::from_raw(id))
                .map_err(|_| ENOENT)?;
            Ok(())
        });
        self.kick_stalled();
        freed
    }

    /// Applies the release ring and resumes stalled connections.
    fn sync(&self) -> Result {
        self.rx
            .with_recv(|shared, st, _| Ok(st.apply_releases(shared)))?;
        self.kick_stalled();
        Ok(())
    }

    /// Looks for a stored message, optionally claiming it.
    fn probe(&self, a: &mut abi::ProbeArgs) -> Result {
        if a.flags & !abi::O2G_PROBE_CLAIM != 0 {
            return Err(EINVAL);
        }
        let sel = data_path::selector(a.source, a.tag, a.context)?;
        let claim = a.flags & abi::O2G_PROBE_CLAIM != 0;
        let found = self.rx.with_recv(|shared, st, _| {
            // Messages the process already took must not be found again.
            st.apply_releases(shared);
            let Some((id, info)) = st.rx.probe(sel) else {
                return Ok(None);
            };
            if claim && is_request(&info) {
                // Only a post can answer its sender.
                return Err(errno::eopnotsupp());
            }
            if claim {
                st.rx.claim(id).map_err(|_| EINVAL)?;
            }
            let region = st.rx.region(info.location);
            Ok(Some(st.stored(shared, id, info, region)))
        })?;
        a.reserved = 0;
        self.kick_stalled();
        match found {
            Some(msg) => {
                a.outcome = abi::outcome::UNEXPECTED;
                a.msg = msg;
            }
            None => {
                a.outcome = abi::outcome::NONE;
                a.msg = abi::StoredMessage::default();
            }
        }
        Ok(())
    }

    /// Waits for a completion or a stored message. `EINTR` on a signal.
    fn poll(&self, a: &mut abi::PollArgs) -> Result {
        if a.reserved != 0 {
            return Err(EINVAL);
        }
        let shared = self.rx.shared().ok_or_else(errno::ebadfd)?;
        // Going to sleep: a good time to unpin what finished.
        self.rx.unpin_retired();
        // A process waiting for a message may have released the room the
        // sender needs.
        self.sync()?;
        let timeout = u64::try_from(a.timeout_ns).ok().map(|ns| {
            let ms = ns.div_ceil(1_000_000).min(u64::from(u32::MAX));
            kernel::time::msecs_to_jiffies(ms as u32) as u64
        });
        a.events = self.rx.wait(timeout, |st| {
            let mut ev = 0;
            if shared.ring_pending() != 0 {
                ev |= abi::poll_events::COMPLETION;
            }
            if let Some(r) = st.recv.as_mut() {
                if core::mem::take(&mut r.book.unexpected_event) {
                    ev |= abi::poll_events::UNEXPECTED;
                }
            }
            ev
        })?;
        Ok(())
    }

    /// Lets stalled connections retry: room or a receive may be there now.
    fn kick_stalled(&self) {
        let mut ranks = [0u32; 32];
        let Ok(n) = self
            .rx
            .with_recv(|_, st, _| Ok(st.stalled_ranks(&mut ranks)))
        else {
            return;
        };
        if n == 0 {
            return;
        }
        let inner = self.inner.lock();
        if n <= ranks.len() {
            // The list is a snapshot: a connection stalling after it was
            // taken decided with this call's releases or receive in view.
            for &rank in &ranks[..n] {
                if let Ok(i) = inner.position(rank, Role::Messages) {
                    inner.conns[i].kick();
                }
            }
            return;
        }
        for conn in inner.conns.iter() {
            if conn.is_stalled() {
                conn.kick();
            }
        }
    }
}

/// What a POST ended with.
enum PostResult {
    Queued(RecvId),
    /// A stored request to send matched: its data will come.
    Cleared,
    /// A stored message matched.
    Stored(abi::StoredMessage),
    /// Announcements the process has not read came first.
    Rescan,
}

impl abi::PostArgs {
    /// Writes `result` into the output fields.
    fn set_result(&mut self, result: PostResult) {
        match result {
            PostResult::Queued(id) => {
                self.outcome = abi::outcome::QUEUED;
                self.recv_id = id.to_raw();
            }
            PostResult::Stored(msg) => {
                self.outcome = abi::outcome::UNEXPECTED;
                self.msg = msg;
            }
            PostResult::Cleared => self.outcome = abi::outcome::CLEARED,
            PostResult::Rescan => self.outcome = abi::outcome::RESCAN,
        }
    }
}

#[pinned_drop]
impl PinnedDrop for Endpoint {
    /// Unhooks every socket and unpins every buffer when the file is
    /// released (close or exit, SIGKILL included).
    ///
    /// Context: process context (last `fput`), may sleep.
    fn drop(self: Pin<&mut Self>) {
        crate::registry::remove(&self);
        // The send work stops using the control connections first.
        let controls = core::mem::take(&mut *self.rx.controls());
        self.rx.flush_send();
        for conn in controls.iter() {
            conn.tx().lock().abandon(&self.rx);
        }
        drop(controls);
        let conns = core::mem::take(&mut self.inner.lock().conns);
        for conn in conns.iter() {
            conn.unhook();
        }
        drop(conns);
        // Every hook is gone: unpin what is left, here in process context.
        let held = self.rx.with(|st| {
            st.recv
                .as_mut()
                .map(|r| (r.book.take_all(), r.offers.take_all()))
        });
        drop(held);
        // Unpinned here, after the lock.
        let windows = self.rx.with_windows(|t| t.take_all());
        drop(windows);
        self.rx.flush_send();
        self.rx.flush_reclaim();
        self.rx.flush_unpin();
        // Zero-copy sends still in flight end without the endpoint (their
        // offers went with the table above); this also breaks the hub's
        // cycle back to `rx`.
        drop(self.rx.zc_hub().detach());
    }
}
