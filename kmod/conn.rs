// SPDX-License-Identifier: GPL-2.0

//! One registered socket: o2g's hooks on its `sk_data_ready` and
//! `sk_state_change`.
//!
//! Installing and removing the hook follows net/rds/tcp.c and net/kcm: both
//! happen under `lock_sock()` and `write_lock_bh(&sk->sk_callback_lock)`, and a
//! socket whose `sk_user_data` is already taken (another o2g endpoint, KCM,
//! sockmap, RDS, sunrpc, ...) or that carries an upper-layer protocol (kTLS,
//! MPTCP, ...) is refused with `EBUSY`.
//!
//! # Why no other socket ever runs these hooks
//!
//! A TCP socket copies its callbacks and `sk_user_data` into every child it
//! accepts (`sk_clone_lock`), and children only come from a socket in
//! LISTEN. A registered socket is established, but its owner can
//! disconnect it (`connect(AF_UNSPEC)`) and call `listen()`; a child would
//! then run o2g's hooks with a `Conn` it holds no reference on, and after
//! `rmmod` jump into unloaded code. Three things close this, and together
//! they are complete, because every way to a child or to a second owner of
//! the callbacks passes one of them:
//! - While hooked, the socket carries o2g's upper-layer-protocol marker
//!   (`o2g_shim.c`), which has no clone operation: `inet_csk_listen_start`
//!   refuses `listen()` with `EINVAL`, so the socket cannot reach LISTEN
//!   and has no children; `setsockopt(TCP_ULP, "tls")` fails with `EEXIST`,
//!   so kTLS never saves o2g's callbacks as its own; sockmap refuses
//!   sockets with a ULP. The marker goes with the hook, under the same
//!   socket ownership.
//! - `sk_user_data` is tagged `SK_USER_DATA_NOCOPY`, so even a clone would
//!   start with none.
//! - The hooks act only on the socket they were installed on (the one the
//!   `Conn` names) and never call themselves: a socket whose user data is
//!   not its own `Conn` gets the original callbacks, or nothing.
//!
//! The hook holds one reference on its [`Conn`] through `sk_user_data`; the
//! endpoint holds another. Removal swaps the original callback back under the
//! write lock, so no reader can reach the `Conn` afterwards, and does it while
//! owning the socket, so no CPU is still running [`data_ready`] for it when
//! `release_sock()` returns (see [`Conn::unhook`]).
//!
//! The hook consumes the stream itself (see `reader.rs`) and does not call
//! the original callback: the bytes are o2g's, not the process's `read()`'s.
//! `sk_state_change` is hooked too, because a reset (RST) calls only it and
//! `sk_error_report`, never `sk_data_ready`: without it a receive posted
//! for a peer that reset would wait forever. It calls the original first
//! and then lets the work item see the shutdown.
//!
//! When the socket is owned, TCP queues what arrives on the backlog and the
//! owner's `release_sock()` runs it, calling the hook in the owner's process
//! context (a process's `sendmsg` on the same socket, or the module's own
//! work): the hook reads there, as the owner, rather than paying a work
//! item's wake-up on the way (two ranks that send to each other at once
//! meet this on every exchange). Only a call seen outside process context
//! with the socket owned, which TCP does not make, is deferred to the
//! connection's work item, as strparser and kTLS defer.

use core::sync::atomic::{AtomicBool, Ordering};

use kernel::{
    bindings, impl_has_work, new_mutex, new_work,
    prelude::*,
    sync::{Arc, ArcBorrow, Mutex, SetOnce},
    workqueue::{Work, WorkItem},
};

use crate::abi;
use crate::bh_lock::{new_spinlock_bh, SpinLockBh};
use crate::endpoint_rx::EndpointRx;
use crate::flow_steering::Steering;
use crate::proto::credit::Window;
use crate::reader::ConnReader;
use crate::shim::{self, ReadyFn};
use crate::sock::{self, Callbacks, TcpSocket};
use crate::tx::ConnTx;
use crate::work_queue;

/// Which of a pair's connections this is (see `abi::O2G_REGISTER_CONTROL`
/// and `abi::O2G_REGISTER_CONTROL_IN`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Role {
    /// The process writes `Eager` and `Rts` messages; the module reads.
    Messages,
    /// The modules write and read clear-to-send, data and credit; with a
    /// `ControlIn` beside it, this module writes it and the peer's reads.
    Control,
    /// The peer's module writes its clear-to-send, data and credit; this
    /// module only reads it.
    ControlIn,
}

impl Role {
    /// Whether the connection carries the modules' control traffic.
    pub(crate) fn is_control(self) -> bool {
        matches!(self, Role::Control | Role::ControlIn)
    }
}

/// A TCP socket attached to an endpoint as the connection to one peer rank.
#[pin_data]
pub(crate) struct Conn {
    rank: u32,
    role: Role,
    sock: TcpSocket,
    /// The callbacks found when the hook was installed; set once, under
    /// the callback lock, before the hook is published.
    saved: SetOnce<Callbacks>,
    /// The owning endpoint's receive side.
    rx: Arc<EndpointRx>,
    /// The reader; lock order: after `sk_callback_lock`, before `rx`'s lock.
    #[pin]
    reader: SpinLockBh<ConnReader>,
    /// Set under `rx`'s lock when the connection fails, so that a POST for
    /// this rank racing with the failure sees it.
    failed: AtomicBool,
    /// Counted in the endpoint's live connections; cleared, under the rx
    /// lock, when the connection fails or is unregistered.
    live: AtomicBool,
    /// Reads in process context: deferred reads and resumption after a stall.
    #[pin]
    work: Work<Conn>,
    /// What the module writes on a control connection (the send work
    /// only). Lock order: after the endpoint's control list, before the
    /// rx lock.
    #[pin]
    tx: Mutex<ConnTx>,
    /// Whether the socket's receive processing is steered to the
    /// process's CPU (`flow_steering.rs`).
    steering: Steering,
    /// Of a `ControlIn`, the `Control` connection this module writes to the
    /// same rank. Failing either direction fails both: a clear-to-send
    /// must not go out for data that can no longer arrive.
    outgoing: Option<Arc<Conn>>,
}

impl_has_work! {
    impl HasWork<Conn> for Conn { self.work }
}

impl Conn {
    /// Hooks `sock` as the `role` connection to `rank`, accepting
    /// messages of up to `max_message` bytes, and reads what is already
    /// queued on it. `local_rank` is this process's rank, the source of
    /// what the module writes on a control connection. A messages
    /// connection of an endpoint with credit grants its peer `window`. A
    /// `ControlIn` names its rank's `Control` connection in `outgoing`.
    ///
    /// Errors: `ENOTCONN` (not established), `EBUSY` (already claimed),
    /// `ENOMEM`.
    ///
    /// Context: process context, may sleep. Takes `lock_sock`, then
    /// `sk_callback_lock` for writing.
    pub(crate) fn hook(
        sock: TcpSocket,
        rank: u32,
        role: Role,
        local_rank: u32,
        rx: Arc<EndpointRx>,
        max_message: u64,
        window: Option<Window>,
        outgoing: Option<Arc<Conn>>,
    ) -> Result<Arc<Conn>> {
        let reader = ConnReader::new(rank, role, max_message, window);
        let conn = Arc::pin_init(
            pin_init!(Conn {
                rank,
                role,
                sock,
                saved: SetOnce::new(),
                rx,
                reader <- new_spinlock_bh!(reader, c"o2g_conn_reader"),
                failed: AtomicBool::new(false),
                live: AtomicBool::new(true),
                steering: Steering::new(),
                work <- new_work!("o2g_conn_read"),
                tx <- new_mutex!(ConnTx::new(local_rank), "o2g_conn_tx"),
                outgoing,
            }),
            GFP_KERNEL_ACCOUNT,
        )?;
        conn.install()?;
        // The process's own reads before registering (its handshake) told
        // RFS that it reads this socket; from here on the module does.
        conn.sock.forget_flow();
        // Bytes that arrived before the hook are read now, not lost.
        conn.kick();
        Ok(conn)
    }

    /// The locked part of [`Conn::hook`].
    fn install(self: &Arc<Self>) -> Result {
        let owner = self.sock.lock();
        if !owner.is_established() {
            return Err(sock::errno::enotconn());
        }
        let callbacks = owner.callbacks();
        if !callbacks.user_data().is_null() || callbacks.has_ulp() {
            return Err(EBUSY);
        }
        self.saved.populate(callbacks.current());
        let hook_ref = Arc::into_raw(self.clone());
        let ours = Callbacks {
            data_ready: Some(data_ready),
            state_change: Some(state_change),
            write_space: Some(write_space),
        };
        // SAFETY: `hook_ref` keeps the `Conn` alive until `unhook` takes it
        // back under this same lock, and both hooks expect a `Conn`.
        unsafe { callbacks.replace(hook_ref.cast_mut().cast(), ours) };
        drop(callbacks);
        // Still owning the socket: no `listen()` or `TCP_ULP` can run
        // between the hook and the marker.
        owner.attach_ulp();
        Ok(())
    }

    /// Restores the original callbacks, drops the hook's reference, waits
    /// for the work item, and completes the receive it was filling with
    /// `-ECONNABORTED`; a control connection fails (`-ECONNRESET` for
    /// what waited on it).
    ///
    /// After this returns no CPU is running a hook or the work for
    /// this socket: the softirq receive path runs the protocol under the
    /// socket spinlock, which `lock_sock()` waits for, backlog processing
    /// happens under ownership, which we hold, and the work is flushed. The
    /// socket works as a plain socket again (a message cut in the middle
    /// leaves its remaining bytes to the process's own reads).
    ///
    /// Taking `&Arc<Self>` means the caller holds a reference of its own, so
    /// dropping the hook's reference here never frees `self` while the
    /// socket lock guard still borrows it.
    ///
    /// Context: process context, may sleep. Takes `lock_sock`, then
    /// `sk_callback_lock` for writing; then the reader and rx locks.
    pub(crate) fn unhook(self: &Arc<Self>) {
        {
            let owner = self.sock.lock();
            let callbacks = owner.callbacks();
            let ours = Arc::as_ptr(self).cast_mut().cast::<core::ffi::c_void>();
            if callbacks.user_data() == ours {
                let saved = self.saved.copy().unwrap_or_default();
                // SAFETY: Putting back the callbacks found at install time,
                // with no user data, is the state the socket had before `hook`.
                unsafe { callbacks.replace(core::ptr::null_mut(), saved) };
                drop(callbacks);
                owner.detach_ulp();
                // SAFETY: `hook` leaked exactly this reference into
                // `sk_user_data`, and the swap above made it unreachable.
                drop(unsafe { Arc::from_raw(Arc::as_ptr(self)) });
            }
        }
        // SAFETY: `work` is initialised and lives as long as `self`.
        unsafe { bindings::flush_work(Work::raw_get(&self.work)) };
        // A plain socket again: RFS learns its reader from `recvmsg`.
        self.end_steering();
        let mut reader = self.reader.lock();
        if self.role.is_control() {
            // Nothing more comes or goes on it: offers to its rank and
            // receives waiting for its data end now.
            reader.fail(self, crate::proto::receive::Failure::Closed);
        }
        reader.abort(self);
    }

    /// The peer rank this connection leads to.
    pub(crate) fn rank(&self) -> u32 {
        self.rank
    }

    /// Which of the pair's connections this is.
    pub(crate) fn role(&self) -> Role {
        self.role
    }

    /// The socket, for the send work.
    pub(crate) fn sock(&self) -> &TcpSocket {
        &self.sock
    }

    /// The sending side (control connections).
    pub(crate) fn tx(&self) -> &Mutex<ConnTx> {
        &self.tx
    }

    /// Whether this connection is `sock` (same `struct sock`).
    pub(crate) fn is_socket(&self, sock: &TcpSocket) -> bool {
        self.sock.sk() == sock.sk()
    }

    /// The endpoint's receive side.
    pub(crate) fn rx(&self) -> &EndpointRx {
        &self.rx
    }

    /// Queues the endpoint's reclaim work.
    pub(crate) fn schedule_reclaim(&self) {
        self.rx.schedule_reclaim();
    }

    /// Queues the endpoint's unpin work, to run later.
    pub(crate) fn schedule_unpin(&self) {
        self.rx.schedule_unpin();
    }

    /// Queues the endpoint's send work.
    pub(crate) fn schedule_send(&self) {
        self.rx.schedule_send();
    }

    /// Records the failure, and of a `ControlIn` its outgoing twin's;
    /// called under the rx lock.
    pub(crate) fn mark_failed(&self) {
        self.failed.store(true, Ordering::Relaxed);
        if let Some(out) = &self.outgoing {
            out.failed.store(true, Ordering::Relaxed);
        }
    }

    /// Stops counting this connection as live; returns whether it was
    /// (true exactly once). Called under the rx lock.
    pub(crate) fn leave_live(&self) -> bool {
        self.live.swap(false, Ordering::Relaxed)
    }

    /// Steers the socket's receive processing to the calling CPU (a large
    /// receive from this rank was posted).
    ///
    /// Context: process context; any locks.
    pub(crate) fn steer_here(&self) {
        self.steering.steer_here(&self.sock);
    }

    /// Puts back the steering that the module's own `sendmsg` on this
    /// socket overwrote: TCP records the sending CPU, the send work's.
    ///
    /// Context: process context (the send work).
    pub(crate) fn restore_steering(&self) {
        self.steering.restore(&self.sock);
    }

    /// Ends the steering of the socket's receive processing, if any.
    ///
    /// Context: any.
    pub(crate) fn end_steering(&self) {
        self.steering.end(&self.sock);
    }

    /// Whether the connection failed; stable under the rx lock.
    pub(crate) fn has_failed(&self) -> bool {
        self.failed.load(Ordering::Relaxed)
    }

    /// Whether the reader waits for room (a hint: it may change as soon as
    /// the reader lock is dropped).
    pub(crate) fn is_stalled(&self) -> bool {
        self.reader.lock().state() == abi::socket_state::STALLED
    }

    /// This connection's counters.
    pub(crate) fn stats(&self) -> abi::SocketStats {
        let (state, s) = {
            let r = self.reader.lock();
            (r.state(), r.stats())
        };
        abi::SocketStats {
            rank: self.rank,
            state,
            rx_bytes: s.bytes,
            messages: s.messages,
            protocol_errors: s.protocol_errors,
            backpressure_events: s.stalls,
        }
    }

    /// Queues a read in process context.
    ///
    /// Context: any.
    pub(crate) fn kick(self: &Arc<Self>) {
        // Already queued is fine: that run reads everything.
        let _ = work_queue::percpu().enqueue(self.clone());
    }

    /// Reads the socket.
    ///
    /// # Safety
    ///
    /// As [`ConnReader::read`]: the caller may read `sk`, which is this
    /// connection's socket, and holds the callback read lock with `self`
    /// as the socket's user data.
    unsafe fn read(&self, sk: *mut bindings::sock) {
        // SAFETY: Forwarded from the caller.
        unsafe { self.reader.lock().read(self, sk) };
    }
}

impl WorkItem for Conn {
    type Pointer = Arc<Conn>;

    /// Reads the socket as its owner.
    ///
    /// Context: process context (system workqueue), may sleep. Takes
    /// `lock_sock`, then `sk_callback_lock` for reading, the reader lock
    /// and the rx lock.
    fn run(this: Arc<Conn>) {
        let owner = this.sock.lock();
        let sk = this.sock.sk();
        let ours = Arc::as_ptr(&this).cast_mut().cast::<core::ffi::c_void>();
        // SAFETY: `sk` is valid while `this` holds its file reference.
        unsafe {
            sock::with_callbacks_read(sk, |data, _| {
                if data == ours {
                    // SAFETY: We own the socket and hold the read lock with
                    // `this` installed.
                    this.read(sk);
                }
            })
        };
        drop(owner);
    }
}

/// o2g's `sk_data_ready`.
///
/// Context: softirq (TCP receive, socket spinlock held) or process context
/// (backlog processing in `release_sock()`, socket owned, BH enabled). Must
/// not sleep. Takes `sk_callback_lock` for reading, then the reader lock
/// and the endpoint's rx lock.
///
/// # Safety
///
/// Called by the network stack with a valid `sk` whose callbacks were set by
/// [`Conn::hook`].
unsafe extern "C" fn data_ready(sk: *mut bindings::sock) {
    let handle = |data: *mut core::ffi::c_void, current: Callbacks| {
        let conn = data.cast::<Conn>().cast_const();
        if conn.is_null() {
            // Unhooked since the stack loaded our pointer: `current` is the
            // restored original. Never ourselves (see the module docs).
            return current.data_ready.filter(|&f| !is_ours(f, data_ready));
        }
        // SAFETY: Non-null `sk_user_data` is the hook's `Conn` reference,
        // valid while the callback read lock is held.
        let conn = unsafe { ArcBorrow::from_raw(conn) };
        if conn.sock.sk() != sk {
            // Not the socket the hook was installed on.
            return conn.saved.copy().unwrap_or_default().data_ready;
        }
        // SAFETY: `sk` is valid for the call.
        let owned = unsafe { shim::o2g_sock_owned_by_user(sk) };
        // SAFETY: `o2g_in_task` reads only the preempt count.
        let defer = owned && !unsafe { shim::o2g_in_task() };
        conn.rx.data_ready_events.fetch_add(1, Ordering::Relaxed);
        if owned {
            conn.rx.deferred_reads.fetch_add(1, Ordering::Relaxed);
        }
        if defer {
            Arc::<Conn>::from(conn).kick();
        } else {
            // SAFETY: Either softirq with the socket spinlock held and no
            // owner, or process context with the socket owned, which TCP
            // runs input in only for the owner (backlog processing in its
            // `release_sock()`): we are the owner, as the work item would
            // be. The callback read lock is held with `conn` installed.
            unsafe { conn.read(sk) };
        }
        None
    };
    // SAFETY: The stack passes a valid socket for the duration of the call.
    let next = unsafe { sock::with_callbacks_read(sk, handle) };
    if let Some(next) = next {
        // SAFETY: `next` is the socket's original `sk_data_ready`, called as
        // the stack would have called it.
        unsafe { next(sk) };
    }
}

/// o2g's `sk_state_change`: FIN, RST (`tcp_reset` calls only this and
/// `sk_error_report`) or a local shutdown. Queues the work item, which
/// reads what is left and, seeing the shutdown, fails the connection so
/// that receives posted for the peer complete; then calls the original.
///
/// Context: softirq (TCP receive, socket spinlock held) or process context
/// (the owner's `shutdown()`/`close()`, socket owned). Must not sleep.
/// Takes `sk_callback_lock` for reading.
///
/// # Safety
///
/// Called by the network stack with a valid `sk` whose callbacks were set by
/// [`Conn::hook`].
unsafe extern "C" fn state_change(sk: *mut bindings::sock) {
    let handle = |data: *mut core::ffi::c_void, current: Callbacks| {
        let conn = data.cast::<Conn>().cast_const();
        if conn.is_null() {
            // Unhooked meanwhile: `current` is the restored original.
            return current.state_change.filter(|&f| !is_ours(f, state_change));
        }
        // SAFETY: Non-null `sk_user_data` is the hook's `Conn` reference,
        // valid while the callback read lock is held.
        let conn = unsafe { ArcBorrow::from_raw(conn) };
        if conn.sock.sk() != sk {
            return conn.saved.copy().unwrap_or_default().state_change;
        }
        // SAFETY: `sk` is valid for the call.
        if unsafe { shim::o2g_sk_rcv_shutdown(sk) } {
            // Under the read lock the hook's reference is alive, so the
            // clone the workqueue may drop is never the last one.
            Arc::<Conn>::from(conn).kick();
        }
        conn.saved.copy().unwrap_or_default().state_change
    };
    // SAFETY: The stack passes a valid socket for the duration of the call.
    let next = unsafe { sock::with_callbacks_read(sk, handle) };
    if let Some(next) = next {
        // SAFETY: `next` is the socket's original `sk_state_change`, called
        // as the stack would have called it.
        unsafe { next(sk) };
    }
}

/// o2g's `sk_write_space`: room in the send buffer again. Calls the
/// original (which wakes the process's `poll`), then, on a control
/// connection, kicks the endpoint's send work, which resumes what waited
/// for room.
///
/// Context: softirq (ACK processing, socket spinlock held) or process
/// context (`release_sock()`, socket owned). Must not sleep. Takes
/// `sk_callback_lock` for reading.
///
/// # Safety
///
/// Called by the network stack with a valid `sk` whose callbacks were set by
/// [`Conn::hook`].
unsafe extern "C" fn write_space(sk: *mut bindings::sock) {
    let handle = |data: *mut core::ffi::c_void, current: Callbacks| {
        let conn = data.cast::<Conn>().cast_const();
        if conn.is_null() {
            return current.write_space.filter(|&f| !is_ours(f, write_space));
        }
        // SAFETY: Non-null `sk_user_data` is the hook's `Conn` reference,
        // valid while the callback read lock is held.
        let conn = unsafe { ArcBorrow::from_raw(conn) };
        if conn.sock.sk() == sk && conn.role == Role::Control {
            conn.rx.schedule_send();
        }
        conn.saved.copy().unwrap_or_default().write_space
    };
    // SAFETY: The stack passes a valid socket for the duration of the call.
    let next = unsafe { sock::with_callbacks_read(sk, handle) };
    if let Some(next) = next {
        // SAFETY: `next` is the socket's original `sk_write_space`, called
        // as the stack would have called it.
        unsafe { next(sk) };
    }
}

/// Whether callback `f` is o2g's own `hook`.
fn is_ours(f: ReadyFn, hook: ReadyFn) -> bool {
    core::ptr::fn_addr_eq(f, hook)
}
