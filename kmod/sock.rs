// SPDX-License-Identifier: GPL-2.0

//! TCP sockets found through the caller's fd table, and guards for the socket
//! locks that only the C shim can reach.
//!
//! Every `unsafe` touching `struct socket` / `struct sock` for registration
//! lives here; `conn.rs` builds the hook from these safe pieces.

use core::ptr::NonNull;

use kernel::{bindings, prelude::*};

use crate::shim::{self, ReadyFn};

/// Socket errnos the kernel crate does not name in 7.2.
pub(crate) mod errno {
    use kernel::{bindings, error::Error};

    fn from(errno: u32) -> Error {
        // Errno constants are small positive integers; the kernel wants them negated.
        Error::from_errno(-(errno as i32))
    }

    /// A socket that is not TCP.
    pub(crate) fn eprototype() -> Error {
        from(bindings::EPROTOTYPE)
    }

    /// An endpoint used before INIT.
    pub(crate) fn ebadfd() -> Error {
        from(bindings::EBADFD)
    }

    /// A message longer than its receive buffer (a completion status).
    pub(crate) fn emsgsize() -> Error {
        from(bindings::EMSGSIZE)
    }

    /// The connection failed: protocol error or peer gone.
    pub(crate) fn econnreset() -> Error {
        from(bindings::ECONNRESET)
    }

    /// The socket was unregistered in the middle of a message.
    pub(crate) fn econnaborted() -> Error {
        from(bindings::ECONNABORTED)
    }

    /// The endpoint's pin budget would be exceeded.
    pub(crate) fn enobufs() -> Error {
        from(bindings::ENOBUFS)
    }

    /// An operation the object cannot do (a claiming probe of a request
    /// to send).
    pub(crate) fn eopnotsupp() -> Error {
        from(bindings::EOPNOTSUPP)
    }

    /// A TCP socket that is not connected.
    pub(crate) fn enotconn() -> Error {
        from(bindings::ENOTCONN)
    }
}

/// A TCP socket of the calling process, kept alive by a file reference.
///
/// # Invariants
///
/// `sock` came from `sockfd_lookup()`, so it is a valid `struct socket` whose
/// `file` holds one reference owned by this value (dropped in `drop`); its
/// `sk` is non-null and is an `AF_INET`/`AF_INET6` TCP socket.
pub(crate) struct TcpSocket {
    sock: NonNull<bindings::socket>,
}

// SAFETY: The file reference may be dropped on any thread, and `struct sock`
// is only touched under its own locks.
unsafe impl Send for TcpSocket {}
// SAFETY: Shared access only reads the immutable `sock->sk` pointer.
unsafe impl Sync for TcpSocket {}

impl TcpSocket {
    /// Looks `fd` up in the current task's fd table.
    ///
    /// Errors: `EBADF` (no such fd), `ENOTSOCK` (not a socket), `EPROTOTYPE`
    /// (a socket, but not TCP over IPv4/IPv6).
    ///
    /// Context: process context of the caller whose fd table is searched.
    pub(crate) fn lookup(fd: i32) -> Result<Self> {
        let mut err: i32 = 0;
        // SAFETY: `err` is a valid out-pointer; `sockfd_lookup` either returns
        // a socket with a file reference or NULL with `err` set.
        let raw = unsafe { bindings::sockfd_lookup(fd, &mut err) };
        let sock = NonNull::new(raw).ok_or_else(|| Error::from_errno(err))?;
        // SAFETY: `sock` is valid (just looked up); reading `sk` is a plain load.
        let sk = unsafe { (*sock.as_ptr()).sk };
        let this = TcpSocket { sock };
        // INVARIANT: checked right below; `this` drops the reference on error.
        // SAFETY: `sk` is either null (checked first) or the socket's live `struct sock`.
        if sk.is_null() || !unsafe { shim::o2g_sk_is_tcp(sk) } {
            return Err(errno::eprototype());
        }
        Ok(this)
    }

    /// The socket's `struct sock`, for identity comparisons and the shim.
    pub(crate) fn sk(&self) -> *mut bindings::sock {
        // SAFETY: By the type invariants `sock` is valid and `sk` non-null.
        unsafe { (*self.sock.as_ptr()).sk }
    }

    /// Queues `buf` without blocking; returns how many bytes were queued.
    /// `more` tells TCP that more follows at once (`MSG_MORE`). `EAGAIN`
    /// when the send buffer is full; `EPIPE` or another error when the
    /// connection is gone.
    ///
    /// Context: process context, may sleep (takes the socket lock).
    pub(crate) fn send_bytes(&self, buf: &[u8], more: bool) -> Result<usize> {
        // SAFETY: `sock` is valid (type invariants) and `buf` is readable
        // for its length during the call.
        let rc = unsafe { shim::o2g_send_bytes(self.sk(), buf.as_ptr().cast(), buf.len(), more) };
        sent(rc)
    }

    /// Queues `len` bytes of the page array `pages`, from byte `offset` of
    /// its first page on, without blocking (at most 64 pages per call, with
    /// `MSG_MORE` while more of `len` follows: pass everything still to
    /// send); returns how many bytes were queued. TCP copies them, or, with
    /// `zc`, references the pages themselves until `zc` completes. Errors
    /// as [`TcpSocket::send_bytes`].
    ///
    /// Context: process context, may sleep (takes the socket lock).
    ///
    /// # Safety
    ///
    /// The pages covering bytes `offset..offset + len` of the array must
    /// stay allocated during the call.
    pub(crate) unsafe fn send_pages(
        &self,
        pages: *mut *mut core::ffi::c_void,
        offset: usize,
        len: usize,
        zc: Option<&crate::zerocopy::ZcSend>,
    ) -> Result<usize> {
        let zc = zc.map_or(core::ptr::null_mut(), |z| z.ubuf());
        // SAFETY: `sock` is valid (type invariants); the pages stay
        // allocated (caller); `zc` is null or a live `ubuf_info` with a
        // reference held by the `ZcSend` borrowed for the call.
        let rc = unsafe { shim::o2g_send_pages(self.sk(), pages, offset, len, zc) };
        sent(rc)
    }

    /// Whether the socket's route leaves through a loopback device (a
    /// connection within this host).
    ///
    /// Context: any.
    pub(crate) fn via_loopback(&self) -> bool {
        // SAFETY: `sock` is valid (type invariants); the helper takes a
        // reference on the socket's cached route and drops it.
        unsafe { shim::o2g_sk_via_loopback(self.sk()) }
    }

    /// Asks Receive Flow Steering, when the administrator enabled it, to
    /// process what arrives on this socket on `cpu`: as TCP's `recvmsg`
    /// does for the CPU of a process that reads its socket itself.
    ///
    /// Context: any; a hint, so a stale CPU (after preemption) is harmless.
    pub(crate) fn record_flow_on(&self, cpu: u32) {
        // SAFETY: `sock` is valid (type invariants); the helper reads the
        // socket's state and receive hash, ignores a CPU beyond
        // `nr_cpu_ids`, and writes RFS's global table under RCU.
        unsafe { shim::o2g_sk_record_flow_on(self.sk(), cpu) }
    }

    /// Undoes [`TcpSocket::record_flow_on`]: RFS no longer steers this
    /// socket's receive processing anywhere.
    ///
    /// Context: any.
    pub(crate) fn forget_flow(&self) {
        // SAFETY: `sock` is valid (type invariants); the helper reads the
        // socket's receive hash and writes RFS's global table under RCU.
        unsafe { shim::o2g_sk_forget_flow(self.sk()) }
    }

    /// Takes the socket owner lock (`lock_sock`). May sleep.
    pub(crate) fn lock(&self) -> SockGuard<'_> {
        // SAFETY: `sk` is a valid socket (type invariants).
        unsafe { shim::o2g_lock_sock(self.sk()) };
        SockGuard { sock: self }
    }
}

/// A send helper's answer: bytes queued, or the error.
fn sent(rc: core::ffi::c_int) -> Result<usize> {
    if rc < 0 {
        Err(Error::from_errno(rc))
    } else {
        Ok(rc as usize)
    }
}

impl Drop for TcpSocket {
    fn drop(&mut self) {
        // SAFETY: By the type invariants we own one reference on `file`.
        unsafe { bindings::fput((*self.sock.as_ptr()).file) };
    }
}

/// `lock_sock()` held: the softirq receive path queues to the backlog instead
/// of running the protocol, and `release_sock()` (on drop) processes it.
pub(crate) struct SockGuard<'a> {
    sock: &'a TcpSocket,
}

impl SockGuard<'_> {
    /// Whether the connection is established.
    pub(crate) fn is_established(&self) -> bool {
        // SAFETY: `sk` is valid and its state may be read under the owner lock.
        unsafe { shim::o2g_sk_is_established(self.sock.sk()) }
    }

    /// Attaches o2g's upper-layer-protocol marker (see `o2g_shim.c`): from
    /// now on `listen()` fails with `EINVAL`, another ULP with `EEXIST`, and
    /// sockmap refuses the socket. The caller checked that no ULP is
    /// attached.
    pub(crate) fn attach_ulp(&self) {
        // SAFETY: `sk` is valid and owned (this guard), as the field needs.
        unsafe { shim::o2g_sk_attach_ulp(self.sock.sk()) };
    }

    /// Detaches o2g's marker, if it is the socket's ULP.
    pub(crate) fn detach_ulp(&self) {
        // SAFETY: `sk` is valid and owned (this guard).
        unsafe { shim::o2g_sk_detach_ulp(self.sock.sk()) };
    }

    /// Takes `sk_callback_lock` for writing, with bottom halves off.
    pub(crate) fn callbacks(&self) -> CallbackGuard<'_> {
        // SAFETY: `sk` is valid.
        unsafe { shim::o2g_sk_callback_write_lock(self.sock.sk()) };
        CallbackGuard {
            sk: self.sock.sk(),
            _owner: core::marker::PhantomData,
        }
    }
}

impl Drop for SockGuard<'_> {
    fn drop(&mut self) {
        // SAFETY: This guard took the lock in `TcpSocket::lock`.
        unsafe { shim::o2g_release_sock(self.sock.sk()) };
    }
}

/// `sk_callback_lock` held for writing (BH off): the socket's callbacks and
/// `sk_user_data` may be read and replaced. Must not sleep while held.
pub(crate) struct CallbackGuard<'a> {
    sk: *mut bindings::sock,
    _owner: core::marker::PhantomData<&'a SockGuard<'a>>,
}

impl CallbackGuard<'_> {
    /// `sk_user_data`: non-null when some subsystem (o2g, KCM, sockmap, RDS,
    /// sunrpc, ...) has claimed the socket.
    pub(crate) fn user_data(&self) -> *mut core::ffi::c_void {
        // SAFETY: `sk` is valid and the callback lock is held.
        unsafe { shim::o2g_sk_user_data(self.sk) }
    }

    /// Whether an upper-layer protocol (kTLS, MPTCP, ...) is attached.
    pub(crate) fn has_ulp(&self) -> bool {
        // SAFETY: `sk` is valid; ULPs attach under the owner lock we hold.
        unsafe { shim::o2g_sk_has_ulp(self.sk) }
    }

    /// The current `sk_data_ready`, `sk_state_change` and `sk_write_space`.
    pub(crate) fn current(&self) -> Callbacks {
        // SAFETY: `sk` is valid and the callback lock is held.
        unsafe { Callbacks::read(self.sk) }
    }

    /// Replaces `sk_user_data` and the callbacks together.
    ///
    /// # Safety
    ///
    /// `data` must stay valid until it is replaced again under this lock, and
    /// the callbacks must accept it as their `sk_user_data` (or be the ones
    /// that were there before `data` was installed, with `data` null).
    pub(crate) unsafe fn replace(&self, data: *mut core::ffi::c_void, cbs: Callbacks) {
        // SAFETY: `sk` is valid, the lock is held, and the caller vouches for
        // the set.
        unsafe {
            shim::o2g_sk_set_user_data(self.sk, data);
            shim::o2g_sk_set_data_ready(self.sk, cbs.data_ready);
            shim::o2g_sk_set_state_change(self.sk, cbs.state_change);
            shim::o2g_sk_set_write_space(self.sk, cbs.write_space);
        }
    }
}

impl Drop for CallbackGuard<'_> {
    fn drop(&mut self) {
        // SAFETY: This guard took the write lock in `SockGuard::callbacks`.
        unsafe { shim::o2g_sk_callback_write_unlock(self.sk) };
    }
}

/// The socket callbacks o2g replaces while a socket is registered.
#[derive(Clone, Copy, Default)]
pub(crate) struct Callbacks {
    /// `sk_data_ready`: bytes arrived.
    pub(crate) data_ready: Option<ReadyFn>,
    /// `sk_state_change`: FIN, RST or a local shutdown changed the state.
    pub(crate) state_change: Option<ReadyFn>,
    /// `sk_write_space`: room in the send buffer again.
    pub(crate) write_space: Option<ReadyFn>,
}

impl Callbacks {
    /// # Safety
    ///
    /// `sk` is valid and its callback lock is held.
    unsafe fn read(sk: *const bindings::sock) -> Self {
        // SAFETY: Forwarded from the caller.
        unsafe {
            Self {
                data_ready: shim::o2g_sk_data_ready(sk),
                state_change: shim::o2g_sk_state_change(sk),
                write_space: shim::o2g_sk_write_space(sk),
            }
        }
    }
}

/// Runs `f` with `sk_callback_lock` held for reading (BH off) and the
/// socket's current `sk_user_data` and callbacks.
///
/// # Safety
///
/// `sk` must be a valid socket for the duration of the call.
pub(crate) unsafe fn with_callbacks_read<R>(
    sk: *mut bindings::sock,
    f: impl FnOnce(*mut core::ffi::c_void, Callbacks) -> R,
) -> R {
    // SAFETY: `sk` is valid (caller).
    unsafe { shim::o2g_sk_callback_read_lock(sk) };
    // SAFETY: As above, with the read lock held.
    let (data, cbs) = unsafe { (shim::o2g_sk_user_data(sk), Callbacks::read(sk)) };
    let r = f(data, cbs);
    // SAFETY: Taken above.
    unsafe { shim::o2g_sk_callback_read_unlock(sk) };
    r
}
