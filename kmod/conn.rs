// SPDX-License-Identifier: GPL-2.0

//! One registered socket: o2g's hook on its `sk_data_ready`.
//!
//! Installing and removing the hook follows net/rds/tcp.c and net/kcm: both
//! happen under `lock_sock()` and `write_lock_bh(&sk->sk_callback_lock)`, and a
//! socket whose `sk_user_data` is already taken (another o2g endpoint, KCM,
//! sockmap, RDS, sunrpc, ...) or that carries an upper-layer protocol (kTLS,
//! MPTCP, ...) is refused with `EBUSY`.
//!
//! The hook holds one reference on its [`Conn`] through `sk_user_data`; the
//! endpoint holds another. Removal swaps the original callback back under the
//! write lock, so no reader can reach the `Conn` afterwards, and does it while
//! owning the socket, so no CPU is still running [`data_ready`] for it when
//! `release_sock()` returns (see [`Conn::unhook`]).
//!
//! For now the hook counts events and passes every one on to the original
//! callback: the data stays in the socket for a normal `read()`. The receive
//! path (reassembly and matching in the protocol handler) replaces the pass-
//! through next.

use kernel::{
    bindings,
    prelude::*,
    sync::{Arc, SetOnce},
};

use crate::rx::Rx;
use crate::shim::ReadyFn;
use crate::sock::{self, TcpSocket};

/// A TCP socket attached to an endpoint as the connection to one peer rank.
pub(crate) struct Conn {
    rank: u32,
    sock: TcpSocket,
    /// The `sk_data_ready` found when the hook was installed; set once, under
    /// the callback lock, before the hook is published.
    saved_ready: SetOnce<Option<ReadyFn>>,
    /// The owning endpoint's receive side.
    rx: Arc<Rx>,
}

impl Conn {
    /// Hooks `sock` as the connection to `rank`.
    ///
    /// Errors: `ENOTCONN` (not established), `EBUSY` (already claimed),
    /// `ENOMEM`.
    ///
    /// Context: process context, may sleep. Takes `lock_sock`, then
    /// `sk_callback_lock` for writing.
    pub(crate) fn hook(sock: TcpSocket, rank: u32, rx: Arc<Rx>) -> Result<Arc<Conn>> {
        let conn = Arc::new(
            Conn {
                rank,
                sock,
                saved_ready: SetOnce::new(),
                rx,
            },
            GFP_KERNEL,
        )?;
        conn.install()?;
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
        self.saved_ready.populate(callbacks.data_ready());
        let hook_ref = Arc::into_raw(self.clone());
        // SAFETY: `hook_ref` keeps the `Conn` alive until `unhook` takes it
        // back under this same lock, and `data_ready` expects a `Conn`.
        unsafe { callbacks.replace(hook_ref.cast_mut().cast(), Some(data_ready)) };
        Ok(())
    }

    /// Restores the original callback and drops the hook's reference.
    ///
    /// After this returns no CPU is running [`data_ready`] for this socket:
    /// the softirq receive path runs the protocol under the socket spinlock,
    /// which `lock_sock()` waits for, and backlog processing happens under
    /// ownership, which we hold. The socket works as a plain socket again.
    ///
    /// Taking `&Arc<Self>` means the caller holds a reference of its own, so
    /// dropping the hook's reference here never frees `self` while the
    /// socket lock guard still borrows it.
    ///
    /// Context: process context, may sleep. Takes `lock_sock`, then
    /// `sk_callback_lock` for writing.
    pub(crate) fn unhook(self: &Arc<Self>) {
        let owner = self.sock.lock();
        let callbacks = owner.callbacks();
        let ours = Arc::as_ptr(self).cast_mut().cast::<core::ffi::c_void>();
        if callbacks.user_data() != ours {
            return;
        }
        let saved = self.saved_ready.copy().flatten();
        // SAFETY: Putting back the callback found at install time, with no
        // user data, is the state the socket had before `hook`.
        unsafe { callbacks.replace(core::ptr::null_mut(), saved) };
        drop(callbacks);
        // SAFETY: `hook` leaked exactly this reference into `sk_user_data`,
        // and the swap above made it unreachable to readers.
        drop(unsafe { Arc::from_raw(Arc::as_ptr(self)) });
        drop(owner);
    }

    /// The peer rank this connection leads to.
    pub(crate) fn rank(&self) -> u32 {
        self.rank
    }

    /// Whether this connection is `sock` (same `struct sock`).
    pub(crate) fn is_socket(&self, sock: &TcpSocket) -> bool {
        self.sock.sk() == sock.sk()
    }
}

/// o2g's `sk_data_ready`.
///
/// Context: softirq (TCP receive, socket spinlock held) or process context
/// (backlog processing in `release_sock()`, socket owned, BH enabled). Must
/// not sleep. Takes `sk_callback_lock` for reading, then the endpoint's rx
/// lock.
///
/// # Safety
///
/// Called by the network stack with a valid `sk` whose callbacks were set by
/// [`Conn::hook`].
unsafe extern "C" fn data_ready(sk: *mut bindings::sock) {
    let pick_next = |data: *mut core::ffi::c_void, current| {
        let conn = data.cast::<Conn>().cast_const();
        if conn.is_null() {
            // Unhooked since the stack loaded our pointer: `current` is the
            // restored original.
            return current;
        }
        // SAFETY: Non-null `sk_user_data` is the hook's `Conn` reference,
        // valid while the callback read lock is held.
        let conn = unsafe { &*conn };
        conn.rx.with(|rx| rx.data_ready_events += 1);
        conn.saved_ready.copy().flatten()
    };
    // SAFETY: The stack passes a valid socket for the duration of the call.
    let next = unsafe { sock::with_callbacks_read(sk, pick_next) };
    if let Some(next) = next {
        // SAFETY: `next` is the socket's original `sk_data_ready`, called as
        // the stack would have called it.
        unsafe { next(sk) };
    }
}
