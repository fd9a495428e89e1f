// SPDX-License-Identifier: GPL-2.0-only OR MIT

//! The `/dev/o2g` ioctl ABI: opcodes and argument structs, defined once.
//!
//! This file is compiled twice, verbatim: into the kernel module (through a
//! `#[path]` module in `kmod/o2g_main.rs`) and into `libo2g` (as `libo2g::abi`).
//! It therefore uses `core` only and must stay clean under the kernel's Rust
//! lints. Every argument struct is `#[repr(C)]`, has explicit padding fields
//! (which callers must zero and the module checks), and has its size asserted
//! at compile time, so the layout cannot drift between the two sides or
//! between 32- and 64-bit user space.
//!
//! The opcodes follow the kernel's `_IOC` encoding (`include/uapi/asm-generic/ioctl.h`):
//! `dir << 30 | size << 16 | type << 8 | nr`. The module checks them against
//! `kernel::ioctl::_IOR` at build time and libo2g checks them against nix's
//! encoder in a host test.

/// The ioctl "type" byte of o2g (free in `Documentation/userspace-api/ioctl/ioctl-number.rst`).
pub const O2G_IOC_TYPE: u32 = 0xBB;

/// Major ABI version: bumped on any incompatible change.
pub const O2G_ABI_MAJOR: u16 = 0;
/// Minor ABI version: bumped when opcodes or fields are added compatibly.
pub const O2G_ABI_MINOR: u16 = 1;

/// `_IOC_NONE`: the ioctl moves no data.
pub const IOC_NONE: u32 = 0;
/// `_IOC_WRITE`: user space writes the argument, the kernel reads it.
pub const IOC_WRITE: u32 = 1;
/// `_IOC_READ`: the kernel writes the argument, user space reads it.
pub const IOC_READ: u32 = 2;

/// Encodes an ioctl number exactly as the kernel's `_IOC(dir, type, nr, size)`.
pub const fn ioc(dir: u32, nr: u32, size: usize) -> u32 {
    // The size field is 14 bits wide; a larger argument struct is a bug here.
    assert!(size < (1 << 14));
    (dir << 30) | ((size as u32) << 16) | (O2G_IOC_TYPE << 8) | nr
}

/// Argument of [`O2G_IOC_VERSION`]: which ABI the loaded module speaks.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VersionInfo {
    /// Must equal [`O2G_ABI_MAJOR`] for user space to proceed.
    pub major: u16,
    /// The module's [`O2G_ABI_MINOR`]; user space may rely on features up to it.
    pub minor: u16,
    /// Explicit padding; always zero.
    pub reserved: u32,
    /// Feature bits, reserved for later ABI versions; zero today.
    pub features: u64,
}

const _: () = assert!(core::mem::size_of::<VersionInfo>() == 16);
const _: () = assert!(core::mem::align_of::<VersionInfo>() == 8);

/// Reads the module's ABI version into a [`VersionInfo`].
pub const O2G_IOC_VERSION: u32 = ioc(IOC_READ, 0x00, core::mem::size_of::<VersionInfo>());

/// Ranks are `0..O2G_MAX_RANK`; larger values are refused with `EINVAL`.
pub const O2G_MAX_RANK: u32 = 1 << 24;
/// Sockets one endpoint may register; more are refused with `ENOSPC`.
pub const O2G_MAX_SOCKETS: u32 = 16384;

/// Argument of [`O2G_IOC_REGISTER_SOCKET`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SocketRegistration {
    /// A connected TCP socket in the caller's fd table.
    pub fd: i32,
    /// The peer rank this socket leads to, below [`O2G_MAX_RANK`].
    pub rank: u32,
    /// No flags are defined yet; must be zero.
    pub flags: u32,
    /// Explicit padding; must be zero.
    pub reserved: u32,
}

const _: () = assert!(core::mem::size_of::<SocketRegistration>() == 16);

/// Argument naming one peer rank.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RankArg {
    /// The peer rank.
    pub rank: u32,
    /// Explicit padding; must be zero.
    pub reserved: u32,
}

const _: () = assert!(core::mem::size_of::<RankArg>() == 8);

/// Argument of [`O2G_IOC_STATS`]: the endpoint's counters.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EndpointStats {
    /// Sockets currently registered.
    pub sockets: u32,
    /// Explicit padding; always zero.
    pub reserved: u32,
    /// Times a registered socket signalled readable data, since the
    /// endpoint was opened.
    pub data_ready_events: u64,
}

const _: () = assert!(core::mem::size_of::<EndpointStats>() == 16);

/// Attaches a connected TCP socket to a peer rank ([`SocketRegistration`]).
pub const O2G_IOC_REGISTER_SOCKET: u32 =
    ioc(IOC_WRITE, 0x01, core::mem::size_of::<SocketRegistration>());
/// Detaches the socket of a peer rank ([`RankArg`]).
pub const O2G_IOC_UNREGISTER_SOCKET: u32 = ioc(IOC_WRITE, 0x02, core::mem::size_of::<RankArg>());
/// Reads the endpoint's counters ([`EndpointStats`]).
pub const O2G_IOC_STATS: u32 = ioc(IOC_READ, 0x03, core::mem::size_of::<EndpointStats>());
