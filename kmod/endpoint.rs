// SPDX-License-Identifier: GPL-2.0

//! One endpoint per open file of `/dev/o2g`: one MPI process's view of the module.
//!
//! # Lock order
//!
//! 1. `Endpoint::inner` (mutex, process context only)
//! 2. `lock_sock()` of a registered socket
//! 3. that socket's `sk_callback_lock` (write, BH off)
//! 4. the endpoint's rx lock (`Rx`, spinlock, BH off)
//!
//! The `sk_data_ready` hook (softirq) takes 3 for reading, then 4.

use core::mem::size_of;

use kernel::{
    fs::File,
    miscdevice::{
        MiscDevice,
        MiscDeviceRegistration, //
    },
    new_mutex,
    prelude::*,
    sync::{Arc, Mutex},
    transmute::{AsBytes, FromBytes},
    uaccess::UserSlice,
};

use crate::abi;
use crate::conn::Conn;
use crate::rx::Rx;
use crate::sock::TcpSocket;

// SAFETY: `repr(C)` with explicit padding fields: no uninitialised bytes.
unsafe impl AsBytes for abi::VersionInfo {}
// SAFETY: As above.
unsafe impl AsBytes for abi::EndpointStats {}
// SAFETY: Integers only: every byte pattern is a valid value.
unsafe impl FromBytes for abi::SocketRegistration {}
// SAFETY: As above.
unsafe impl FromBytes for abi::RankArg {}

/// The most sockets one endpoint may register: far above any MPI job's
/// connection count per process, low enough to bound kernel memory.
const MAX_SOCKETS: usize = abi::O2G_MAX_SOCKETS as usize;

/// State changed only from process context.
struct Inner {
    conns: KVec<Arc<Conn>>,
}

/// The per-file state of `/dev/o2g`.
#[pin_data(PinnedDrop)]
pub(crate) struct Endpoint {
    #[pin]
    inner: Mutex<Inner>,
    rx: Arc<Rx>,
}

#[vtable]
impl MiscDevice for Endpoint {
    type Ptr = Pin<KBox<Self>>;

    /// Creates the endpoint.
    ///
    /// Context: process context (`open(2)`), may sleep; no locks held.
    fn open(_file: &File, _misc: &MiscDeviceRegistration<Self>) -> Result<Pin<KBox<Self>>> {
        KBox::try_pin_init(
            try_pin_init!(Endpoint {
                inner <- new_mutex!(Inner { conns: KVec::new() }),
                rx: Rx::new()?,
            }),
            GFP_KERNEL,
        )
    }

    /// Dispatches an ioctl. Unknown opcodes get `ENOTTY`; a bad argument
    /// pointer gets `EFAULT` from the user-copy helpers; non-zero reserved
    /// fields get `EINVAL`.
    ///
    /// Context: process context, may sleep; no locks held.
    fn ioctl(me: Pin<&Endpoint>, _file: &File, cmd: u32, arg: usize) -> Result<isize> {
        let user = |len| UserSlice::new(UserPtr::from_addr(arg), len);
        match cmd {
            abi::O2G_IOC_VERSION => {
                let info = abi::VersionInfo {
                    major: abi::O2G_ABI_MAJOR,
                    minor: abi::O2G_ABI_MINOR,
                    reserved: 0,
                    features: 0,
                };
                user(size_of::<abi::VersionInfo>()).writer().write(&info)?;
            }
            abi::O2G_IOC_REGISTER_SOCKET => {
                let reg: abi::SocketRegistration =
                    user(size_of::<abi::SocketRegistration>()).reader().read()?;
                me.register(reg)?;
            }
            abi::O2G_IOC_UNREGISTER_SOCKET => {
                let arg: abi::RankArg = user(size_of::<abi::RankArg>()).reader().read()?;
                if arg.reserved != 0 {
                    return Err(EINVAL);
                }
                me.unregister(arg.rank)?;
            }
            abi::O2G_IOC_STATS => {
                let stats = me.stats();
                user(size_of::<abi::EndpointStats>()).writer().write(&stats)?;
            }
            _ => return Err(ENOTTY),
        }
        Ok(0)
    }
}

impl Endpoint {
    /// Attaches the caller's connected TCP socket `reg.fd` as the connection
    /// to `reg.rank`.
    ///
    /// Errors: `EINVAL` (flags/reserved set, rank out of range), `EBADF`,
    /// `ENOTSOCK`, `EPROTOTYPE` (not TCP), `ENOTCONN`, `EBUSY` (socket already
    /// claimed, here or elsewhere), `EEXIST` (rank already registered),
    /// `ENOSPC` (endpoint full).
    fn register(&self, reg: abi::SocketRegistration) -> Result {
        if reg.flags != 0 || reg.reserved != 0 || reg.rank >= abi::O2G_MAX_RANK {
            return Err(EINVAL);
        }
        let sock = TcpSocket::lookup(reg.fd)?;
        let mut inner = self.inner.lock();
        if inner.conns.iter().any(|c| c.is_socket(&sock)) {
            return Err(EBUSY);
        }
        if inner.conns.iter().any(|c| c.rank() == reg.rank) {
            return Err(EEXIST);
        }
        if inner.conns.len() >= MAX_SOCKETS {
            return Err(ENOSPC);
        }
        inner.conns.reserve(1, GFP_KERNEL)?;
        let conn = Conn::hook(sock, reg.rank, self.rx.clone())?;
        // Capacity was reserved before hooking, so this cannot fail; if it
        // ever did, the socket must not stay hooked with nobody tracking it.
        if let Err(kernel::alloc::kvec::PushError(conn)) = inner.conns.push_within_capacity(conn) {
            conn.unhook();
            return Err(ENOMEM);
        }
        Ok(())
    }

    /// Detaches the connection to `rank`; its socket works as a plain socket
    /// again. Errors: `ENOENT` if no such rank is registered.
    fn unregister(&self, rank: u32) -> Result {
        let conn = {
            let mut inner = self.inner.lock();
            let idx = inner.conns.iter().position(|c| c.rank() == rank).ok_or(ENOENT)?;
            inner.conns.remove(idx)?
        };
        conn.unhook();
        Ok(())
    }

    fn stats(&self) -> abi::EndpointStats {
        // At most `MAX_SOCKETS`, which fits.
        let sockets = self.inner.lock().conns.len() as u32;
        abi::EndpointStats {
            sockets,
            reserved: 0,
            data_ready_events: self.rx.with(|rx| rx.data_ready_events),
        }
    }
}

#[pinned_drop]
impl PinnedDrop for Endpoint {
    /// Unhooks every socket when the file is released (close or exit).
    ///
    /// Context: process context (last `fput`), may sleep.
    fn drop(self: Pin<&mut Self>) {
        let conns = core::mem::take(&mut self.inner.lock().conns);
        for conn in conns.iter() {
            conn.unhook();
        }
    }
}
