// SPDX-License-Identifier: GPL-2.0

//! Receive Flow Steering for large receives.
//!
//! RFS (`Documentation/networking/scaling.rst`) runs a flow's receive
//! processing on the CPU that last read its socket, which TCP's `recvmsg`
//! records. The module's processes never call `recvmsg`, so RFS cannot know
//! them. On loopback the module's reader then runs in the sender's own
//! `sendmsg`, on the sender's CPU, right after the sender's copy, while the
//! receiver's CPU waits: a one-way stream moves at half the speed of one
//! whose receiver copies on its own CPU.
//!
//! So a process that posts a receive of at least [`STEER_MIN`] bytes from
//! one rank records its CPU for both of that rank's connections. A smaller
//! message on the messages connection, or anything but rendezvous data on
//! the control connection, ends the steering again: moving a message's
//! processing to another CPU costs an interrupt there, and for small
//! messages, or when both ranks send at once and both CPUs are busy, that
//! costs more than it gains (measured in `docs/results.md`, "Receive Flow
//! Steering").
//!
//! Two other writers of RFS's table would undo that, and the module puts
//! their entries back: TCP's `sendmsg`, when the send work writes a control
//! connection from its own CPU ([`Steering::restore`]), and the process's
//! reads of its handshake before it registers a socket (deleted at
//! registration, `Conn::hook`).
//!
//! RFS is off unless the administrator enables it; then none of this does
//! anything.

use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use kernel::cpu::CpuId;

use crate::conn::Role;
use crate::proto::wire::Kind;
use crate::shim;
use crate::sock::TcpSocket;

/// The smallest posted receive whose connections are steered to the
/// receiving process's CPU.
pub(crate) const STEER_MIN: u64 = 256 << 10;

/// Whether the administrator enabled RFS.
///
/// Context: any.
pub(crate) fn rfs_enabled() -> bool {
    // SAFETY: reads a static key; no preconditions.
    unsafe { shim::o2g_rfs_enabled() }
}

/// Whether a message of `kind` and `len` bytes arriving on a `role`
/// connection ends that connection's steering.
pub(crate) fn ends_steering(role: Role, kind: Kind, len: u64) -> bool {
    match role {
        Role::Messages => matches!(kind, Kind::Eager | Kind::Rts) && len < STEER_MIN,
        Role::Control | Role::ControlIn => !matches!(kind, Kind::Data | Kind::DataPart),
    }
}

/// Whether one connection's flow is steered to its process's CPU, and
/// to which.
pub(crate) struct Steering {
    steered: AtomicBool,
    cpu: AtomicU32,
}

impl Steering {
    pub(crate) const fn new() -> Self {
        Self {
            steered: AtomicBool::new(false),
            cpu: AtomicU32::new(0),
        }
    }

    /// Steers `sock`'s receive processing to the calling CPU.
    ///
    /// Context: process context (POST); any locks.
    pub(crate) fn steer_here(&self, sock: &TcpSocket) {
        // Recorded first: a reader ending the steering in between leaves
        // the flag set and the flow steered or not, a hint either way.
        let cpu = CpuId::current().as_u32();
        sock.record_flow_on(cpu);
        self.cpu.store(cpu, Ordering::Relaxed);
        self.steered.store(true, Ordering::Relaxed);
    }

    /// Puts back what the module's own send on `sock` changed: TCP's
    /// `sendmsg` records the sending CPU for the socket, as it would for a
    /// process that reads what it writes. The module's send work writes a
    /// control connection from a CPU of its own, which is nobody's reader:
    /// left recorded, the peer's credit and clear-to-send would be
    /// processed there, each behind an interrupt.
    ///
    /// Context: process context (the send work).
    pub(crate) fn restore(&self, sock: &TcpSocket) {
        if !rfs_enabled() {
            return;
        }
        if self.steered.load(Ordering::Relaxed) {
            sock.record_flow_on(self.cpu.load(Ordering::Relaxed));
        } else {
            sock.forget_flow();
        }
    }

    /// Ends the steering of `sock`, if any.
    ///
    /// Context: any (the reader, in softirq or process context).
    pub(crate) fn end(&self, sock: &TcpSocket) {
        if self.steered.load(Ordering::Relaxed) && self.steered.swap(false, Ordering::Relaxed) {
            sock.forget_flow();
        }
    }
}
