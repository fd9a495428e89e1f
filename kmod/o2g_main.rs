// SPDX-License-Identifier: GPL-2.0

//! o2g: MPI receive processing inside the TCP protocol handler.
//!
//! This is the crate root of `o2g.ko`. Loading the module creates the misc
//! device `/dev/o2g`; each open file is one endpoint (one MPI process). The
//! ioctl ABI lives in `uapi/abi.rs`, shared verbatim with user space.
//!
//! # Who may do what
//!
//! The misc core creates `/dev/o2g` owned by root with mode 0600; a site
//! that wants unprivileged MPI jobs grants access to a group with a udev
//! rule (for example `KERNEL=="o2g", GROUP="mpi", MODE="0660"`). Any caller
//! who can open the device may, without privileges:
//! - make endpoints, at most 16 per process (`EMFILE` beyond);
//! - register TCP sockets from its own fd table (never another process's);
//! - post receives into its own memory: pinned pages count against its
//!   `RLIMIT_MEMLOCK` (`ENOMEM` beyond; `CAP_IPC_LOCK` lifts it) and the
//!   endpoint's pin budget (`ENOBUFS`); so do memory windows, which the
//!   peers on its registered connections may then write (puts) inside
//!   the window's bounds, and nowhere else;
//! - list endpoints: its own (same effective uid) only; `CAP_SYS_ADMIN`
//!   sees every endpoint.
//!
//! The endpoint's kernel memory (matching tables, shared ring and dump area,
//! up to 1 GiB) is charged to the caller's memory cgroup: over its limit,
//! INIT fails with `ENOMEM` rather than waking the cgroup's OOM killer.
//!
//! # Loading and unloading
//!
//! `insmod o2g.ko zerocopy=0` makes the module copy rendezvous data for
//! other hosts as it does on loopback (`zerocopy.rs`); the default sends it
//! from the pinned pages. `rmmod` fails with `EBUSY` while an endpoint is
//! open, and while TCP still holds pages of a zero-copy send (until they
//! are acknowledged, or dropped with their socket).
//!
//! A user-space check, with `libo2g`:
//!
//! ```ignore
//! let dev = libo2g::Device::open()?;          // fails clearly if the module is absent
//! let v = dev.version()?;
//! assert_eq!(v.major, libo2g::abi::O2G_ABI_MAJOR);
//! ```

/// The ioctl ABI, shared verbatim with user space: `uapi/abi.rs`.
#[path = "../uapi/abi.rs"]
pub mod abi;
mod bh_lock;
mod conn;
mod credit;
mod data_path;
mod endpoint;
mod endpoint_rx;
mod flow_steering;
mod misc_registration;
mod offer;
mod pinned;
/// The pure core (wire format, stream reassembly, MPI matching), shared
/// verbatim with user space: `core/src/proto.rs`.
#[path = "../core/src/proto.rs"]
pub mod proto;
mod reader;
mod registry;
mod shared;
mod shim;
mod sock;
mod trace;
mod tx;
mod window;
mod work_queue;
mod zerocopy;

use kernel::{
    ioctl::{
        _IO,
        _IOR,
        _IOW,
        _IOWR, //
    },
    miscdevice::MiscDeviceOptions,
    prelude::*,
};

use endpoint::Endpoint;
use misc_registration::OwnedMiscRegistration;

// The shared ABI file encodes opcodes itself; check it against the kernel's.
const _: () = {
    use abi::*;
    assert!(O2G_IOC_VERSION == _IOR::<VersionInfo>(O2G_IOC_TYPE, 0x00));
    assert!(O2G_IOC_REGISTER_SOCKET == _IOW::<SocketRegistration>(O2G_IOC_TYPE, 0x01));
    assert!(O2G_IOC_UNREGISTER_SOCKET == _IOW::<RankArg>(O2G_IOC_TYPE, 0x02));
    assert!(O2G_IOC_STATS == _IOR::<EndpointStats>(O2G_IOC_TYPE, 0x03));
    assert!(O2G_IOC_INIT == _IOWR::<InitArgs>(O2G_IOC_TYPE, 0x04));
    assert!(O2G_IOC_POST == _IOWR::<PostArgs>(O2G_IOC_TYPE, 0x05));
    assert!(O2G_IOC_CANCEL == _IOW::<IdArg>(O2G_IOC_TYPE, 0x06));
    assert!(O2G_IOC_FREE == _IOW::<IdArg>(O2G_IOC_TYPE, 0x07));
    assert!(O2G_IOC_POLL == _IOWR::<PollArgs>(O2G_IOC_TYPE, 0x08));
    assert!(O2G_IOC_PROBE == _IOWR::<ProbeArgs>(O2G_IOC_TYPE, 0x09));
    assert!(O2G_IOC_SOCKET_STATS == _IOWR::<SocketStats>(O2G_IOC_TYPE, 0x0a));
    assert!(O2G_IOC_LIST_ENDPOINTS == _IOWR::<EndpointList>(O2G_IOC_TYPE, 0x0b));
    assert!(O2G_IOC_SYNC == _IO(O2G_IOC_TYPE, 0x0c));
    assert!(O2G_IOC_OFFER == _IOWR::<OfferArgs>(O2G_IOC_TYPE, 0x0d));
    assert!(O2G_IOC_RNDV_STATS == _IOR::<RendezvousStats>(O2G_IOC_TYPE, 0x0e));
    assert!(O2G_IOC_TAKE_CREDIT == _IOWR::<CreditArgs>(O2G_IOC_TYPE, 0x0f));
    assert!(O2G_IOC_WIN_REGISTER == _IOWR::<WindowArgs>(O2G_IOC_TYPE, 0x10));
    assert!(O2G_IOC_WIN_UNREGISTER == _IOW::<IdArg>(O2G_IOC_TYPE, 0x11));
    assert!(O2G_IOC_WIN_STATS == _IOWR::<WindowStats>(O2G_IOC_TYPE, 0x12));
    assert!(O2G_IOC_WIN_EPOCH == _IOW::<WindowEpoch>(O2G_IOC_TYPE, 0x13));
};

module! {
    type: O2gModule,
    name: "o2g",
    authors: ["The o2g developers"],
    description: "MPI receive processing in the TCP protocol handler",
    license: "GPL",
    params: {
        zerocopy_min: usize {
            default: 1 << 20,
            description: "Smallest rendezvous message, in bytes, sent to other hosts without a copy (MSG_ZEROCOPY); 0 copies every one",
        },
    },
}

#[pin_data]
struct O2gModule {
    #[pin]
    _misc: OwnedMiscRegistration<Endpoint>,
    /// Declared after `_misc`, so it drops after the device is gone.
    _registry: registry::Cleanup,
}

impl kernel::InPlaceModule for O2gModule {
    /// Context: process context (`init_module(2)`), may sleep.
    fn init(module: &'static ThisModule) -> impl PinInit<Self, Error> {
        pr_info!(
            "loading: ABI {}.{}, struct sock {} bytes\n",
            abi::O2G_ABI_MAJOR,
            abi::O2G_ABI_MINOR,
            shim::sizeof_sock()
        );
        // SAFETY: Called once, here, before the device is registered.
        unsafe { registry::init() };
        try_pin_init!(Self {
            _misc <- OwnedMiscRegistration::register(MiscDeviceOptions { name: c"o2g" }, module),
            _registry: registry::Cleanup,
        })
    }
}
