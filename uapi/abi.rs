// SPDX-License-Identifier: GPL-2.0-only OR MIT

//! The `/dev/o2g` ioctl ABI: opcodes and argument structs, defined once.
//!
//! This file is compiled twice, verbatim, through a `#[path]` module on
//! each side: into the kernel module (`kmod/o2g_main.rs`) and into
//! `libo2g` (as `libo2g::abi`). It lives in `uapi/`, in neither tree, as
//! the kernel's own user-space ABI headers live in `include/uapi/`.
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
pub const O2G_ABI_MAJOR: u16 = 4;
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
    /// [`feature`] bits: what this module can do beyond the major version's
    /// baseline.
    pub features: u64,
}

const _: () = assert!(core::mem::size_of::<VersionInfo>() == 16);
const _: () = assert!(core::mem::align_of::<VersionInfo>() == 8);

/// Bits of [`VersionInfo::features`].
pub mod feature {
    /// INIT accepts [`super::O2G_INIT_NOTICES`]: stored messages are
    /// announced in the ring and given back through the release ring.
    pub const NOTICES: u64 = 1;
    /// Rendezvous: REGISTER takes [`super::O2G_REGISTER_CONTROL`], and
    /// [`super::O2G_IOC_OFFER`] and [`super::O2G_IOC_RNDV_STATS`] exist
    /// (ABI minor 1).
    pub const RENDEZVOUS: u64 = 2;
    /// Eager credit: INIT takes [`super::O2G_INIT_CREDIT`] and
    /// [`super::O2G_IOC_TAKE_CREDIT`] exists (ABI 3.0; since 4.0 the dump
    /// area is a ring per sender rather than slots of the eager limit).
    pub const CREDIT: u64 = 4;
    /// Memory windows: [`super::O2G_IOC_WIN_REGISTER`] and its siblings
    /// exist, and messages connections carry puts (ABI 3.1).
    pub const WINDOWS: u64 = 8;
    /// REGISTER takes [`super::O2G_REGISTER_CONTROL_IN`]: a pair's control
    /// traffic may have a connection per direction (ABI 4.1).
    pub const CONTROL_IN: u64 = 16;
}

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
    /// [`O2G_REGISTER_CONTROL`], [`O2G_REGISTER_CONTROL_IN`],
    /// [`O2G_REGISTER_SELF`] or zero.
    pub flags: u32,
    /// With [`O2G_REGISTER_CONTROL`] or [`O2G_REGISTER_CONTROL_IN`]: this
    /// process's own rank, the source of the headers the module writes;
    /// with [`O2G_REGISTER_SELF`], `rank` again; otherwise must be zero.
    pub local_rank: u32,
}

/// [`SocketRegistration::flags`]: the socket is the pair's control
/// connection, owned by the modules. Each rank may have one connection
/// registered without the flag (the *messages* connection: the process
/// writes `Eager` and `Rts` messages on it, the module reads them) and
/// one with it: the module alone writes it (clear-to-send and rendezvous
/// data, from a work item) and reads what the peer's module writes. The
/// process must not write a control socket; bytes it writes there break
/// the peer's framing, and the peer fails the connection.
pub const O2G_REGISTER_CONTROL: u32 = 1;

/// [`SocketRegistration::flags`]: the socket carries the peer's control
/// traffic only (feature [`feature::CONTROL_IN`]). Registered after the
/// rank's [`O2G_REGISTER_CONTROL`] socket (else `EINVAL`), it splits the
/// pair's control traffic by direction: this module writes the control
/// socket and never writes this one, and the peer's module does the
/// opposite. Why: on one host the receiving socket's work runs in the
/// sender's system call under that socket's lock, so two modules writing
/// both ends of one connection wait on each other. A failure of either
/// socket fails both directions (offers to the rank and receives waiting
/// for its data end with `ECONNRESET`). The process must not write it.
pub const O2G_REGISTER_CONTROL_IN: u32 = 4;

/// [`SocketRegistration::flags`]: the socket is the messages connection of
/// this process to itself (`rank == local_rank`; the process writes the
/// other end). A rendezvous to oneself needs no control connection: the
/// module's send work copies the offer's pages into the receive's when the
/// request matches. At most one per endpoint.
pub const O2G_REGISTER_SELF: u32 = 2;

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

/// Largest `max_posted` and `max_unexpected` an endpoint may ask for.
pub const O2G_MAX_QUEUE: u32 = 1 << 16;
/// Largest dump area, in bytes.
pub const O2G_MAX_DUMP: u64 = 1 << 30;
/// Largest message (`max_message`) and largest posted receive buffer.
pub const O2G_MAX_MESSAGE: u64 = 1 << 30;
/// Largest pinned-memory budget (`pin_budget`) one endpoint may ask for.
pub const O2G_MAX_PIN_BUDGET: u64 = 1 << 32;
/// The size of one page of the shared mapping; offsets and the dump area
/// size are multiples of it.
pub const O2G_PAGE: u64 = 4096;

/// Argument of [`O2G_IOC_INIT`]: the endpoint's capacities (in) and the
/// layout of its shared mapping (out).
///
/// The shared mapping (`mmap` of the device at offset 0, `map_bytes` long,
/// `PROT_READ | PROT_WRITE`, `MAP_SHARED`) holds, in order:
///
/// - one control page: the ring's producer index (a `u32` the module
///   stores with release ordering) at [`O2G_RING_PROD`] and its consumer
///   index (a `u32` the process stores with release ordering) at
///   [`O2G_RING_CONS`]; with [`O2G_INIT_NOTICES`], also the words at
///   [`O2G_NOTICES_STOPPED`] and [`O2G_STALLED`] and the release ring (see
///   [`O2G_RELEASE_RING`]);
/// - at `ring_offset`, `ring_entries` [`Completion`] records; record `i`
///   lives at index `i % ring_entries`;
/// - at `dump_offset`, the dump area: `dump_bytes` of unexpected payloads.
///
/// The module never trusts what the process writes there: it reads only the
/// ring's consumer index, the release ring's producer index and its ids,
/// and clamps or checks each.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InitArgs {
    /// In: most receives posted at once, `1..=O2G_MAX_QUEUE`.
    pub max_posted: u32,
    /// In: most unexpected messages stored at once, `1..=O2G_MAX_QUEUE`.
    pub max_unexpected: u32,
    /// In: dump area size, a multiple of [`O2G_PAGE`], `O2G_PAGE..=O2G_MAX_DUMP`.
    pub dump_bytes: u64,
    /// In: largest message accepted from a peer, `..=O2G_MAX_MESSAGE`; a
    /// header announcing more fails that connection.
    pub max_message: u64,
    /// In: most bytes of posted receive buffers pinned at once,
    /// `..=O2G_MAX_PIN_BUDGET`; a post beyond it gets `ENOBUFS`.
    pub pin_budget: u64,
    /// In: [`O2G_INIT_NOTICES`], [`O2G_INIT_CREDIT`], both or zero.
    pub flags: u32,
    /// Out: number of ring records, a power of two at least twice
    /// `max_posted` (receives and as many offers; `2 * max_posted +
    /// max_unexpected` with notices).
    pub ring_entries: u32,
    /// Out: offset of the first completion record in the mapping.
    pub ring_offset: u64,
    /// Out: offset of the dump area in the mapping.
    pub dump_offset: u64,
    /// Out: length to pass to `mmap`.
    pub map_bytes: u64,
    /// In, with [`O2G_INIT_CREDIT`]: the longest eager message accepted,
    /// at least 1 and at most `max_message`; each rank's ring of the dump
    /// area must have room for a window of at least one such message.
    pub eager_limit: u64,
    /// In, with [`O2G_INIT_CREDIT`]: eager messages each peer may leave
    /// stored (its window), at least 1; `window_msgs * ranks` at most
    /// `max_unexpected`.
    pub window_msgs: u32,
    /// In, with [`O2G_INIT_CREDIT`]: peers have ranks below this,
    /// `1..=O2G_MAX_SOCKETS`.
    pub ranks: u32,
    /// Out, with [`O2G_INIT_CREDIT`]: eager messages the dump area holds
    /// at most, all peers together (`window_msgs * ranks`).
    pub eager_slots: u32,
    /// Explicit padding; always zero.
    pub reserved: u32,
}

const _: () = assert!(core::mem::size_of::<InitArgs>() == 88);

/// Byte offset of the completion ring's producer index in the control page.
pub const O2G_RING_PROD: usize = 0;
/// Byte offset of the completion ring's consumer index in the control page
/// (its own cache line).
pub const O2G_RING_CONS: usize = 64;

/// [`InitArgs::flags`]: announce every unexpected message in the ring as
/// it is stored (a [`record_kind::STORED`] record) and take stored messages
/// back through the release ring, so that a process can receive a message
/// that arrived first with no system call at all.
///
/// An announced message belongs to the process from then on, as if a POST
/// had taken it: POST and PROBE no longer see it, and the process matches
/// announced messages against its receives itself, oldest first, before it
/// posts. Announcements appear in arrival order. So that a receive is never
/// queued in the module while an older matching message waits unread in
/// the ring, POST takes [`PostArgs::ring_seen`] and answers
/// [`outcome::RESCAN`] if anything was announced since.
///
/// If the ring ever lacks room for an announcement (the process stopped
/// reading it), the module stops announcing for good and sets
/// [`O2G_NOTICES_STOPPED`]; later messages stay in the module, reachable
/// through POST and PROBE as without notices, and are all younger than any
/// announced one.
pub const O2G_INIT_NOTICES: u32 = 1;

/// [`InitArgs::flags`]: grant eager credit (`docs/protocol.md`, Credits).
/// The dump area becomes one ring per rank below [`InitArgs::ranks`]
/// (`dump_bytes / ranks`, rounded down to 64 bytes; rank `r`'s at `r`
/// times that), and each peer's window is [`InitArgs::window_msgs`]
/// messages and the bytes its ring has room for: what a ring holds is
/// bounded by its peer's credit plus 64 bytes per message plus one
/// `eager_limit` skipped at the wrap (`core/src/sender_rings.rs`). Since
/// a ring reuses space in arrival order, credit comes back as it does:
/// so an eager message within its sender's credit always finds room.
/// The window's bytes are in the endpoint's statistics
/// (`EndpointStats::window_bytes`). The module sends each peer a whole window
/// as its first `Credit` on the control connection, gives credit back as
/// the process takes stored messages (or as they are placed straight in
/// receives), and fails a connection whose peer sends an eager message
/// beyond its credit or longer than `eager_limit`. Credit the peers send
/// this endpoint is kept for [`O2G_IOC_TAKE_CREDIT`]. Without this flag,
/// messages connections take eager messages of any length without
/// credit, into one circular dump area, and stall when it is full.
pub const O2G_INIT_CREDIT: u32 = 2;

/// Control-page `u32`: non-zero once the module stopped announcing stored
/// messages (see [`O2G_INIT_NOTICES`]).
pub const O2G_NOTICES_STOPPED: usize = 128;

/// Control-page `u32`: connections not being read for want of dump space
/// or unexpected-queue slots. A process that releases messages through
/// the release ring and then (after a full fence) finds this non-zero
/// calls [`O2G_IOC_SYNC`], which applies the releases and resumes them.
pub const O2G_STALLED: usize = 192;

/// Control-page `u32`: the release ring's producer index, stored by the
/// process with release ordering after the ids it covers.
pub const O2G_RELEASE_PROD: usize = 256;

/// Control-page `u32`: the release ring's consumer index, published by the
/// module (it keeps its own copy and never reads this one back).
pub const O2G_RELEASE_CONS: usize = 320;

/// Control-page offset of the release ring: [`O2G_RELEASE_ENTRIES`] `u64`
/// message ids; id `i` lives at index `i % O2G_RELEASE_ENTRIES`. Each
/// gives a stored message back, whether the process took it from an
/// announcement or a POST or claiming PROBE handed it over; the module
/// applies them in order at its next POST, PROBE, FREE, POLL or SYNC, and
/// before it stalls a connection. An id that names no stored message is
/// skipped and counted ([`EndpointStats::bad_releases`]). A process finding
/// the ring full calls [`O2G_IOC_SYNC`].
pub const O2G_RELEASE_RING: usize = 2048;

/// Slots of the release ring.
pub const O2G_RELEASE_ENTRIES: u32 = 256;

/// Kinds of ring records ([`Completion::kind`]).
pub mod record_kind {
    /// A posted receive finished.
    pub const COMPLETED: u32 = 0;
    /// An unexpected message was stored (with [`super::O2G_INIT_NOTICES`]).
    pub const STORED: u32 = 1;
    /// A request to send was stored (with [`super::O2G_INIT_NOTICES`]):
    /// `len` is the message's size; no payload is stored and the message
    /// is *not* handed to the process. A receive takes it only through
    /// [`super::O2G_IOC_POST`] (whose outcome is then
    /// [`super::outcome::CLEARED`]); post it with the exact envelope
    /// announced, and the module matches this request, since requests
    /// with one envelope are taken oldest first.
    pub const REQUEST: u32 = 2;
    /// An offer ([`super::O2G_IOC_OFFER`]) finished: `user_data` is the
    /// offer's, `len` the bytes the receiver asked for and were sent;
    /// `status` is zero or `-ECONNRESET` (the control connection to the
    /// offer's rank failed or was unregistered before all was sent).
    pub const SENT: u32 = 3;
}

/// `source` of a receive that accepts any source (`MPI_ANY_SOURCE`).
pub const O2G_ANY_SOURCE: u32 = u32::MAX;
/// `tag` of a receive that accepts any tag (`MPI_ANY_TAG`).
pub const O2G_ANY_TAG: u32 = u32::MAX;

/// What a post or probe found.
pub mod outcome {
    /// The receive is queued; its completion will appear in the ring.
    pub const QUEUED: u32 = 1;
    /// A stored unexpected message matched (and, for a post or a claiming
    /// probe, now belongs to the caller until [`super::O2G_IOC_FREE`]).
    pub const UNEXPECTED: u32 = 2;
    /// A probe found nothing.
    pub const NONE: u32 = 3;
    /// A post was not made: messages were announced in the ring since
    /// [`super::PostArgs::ring_seen`]. Read them, match them, and post
    /// again if none fits.
    pub const RESCAN: u32 = 4;
    /// A post matched a stored request to send: the module asked the
    /// sender for the data, which lands in the pinned buffer; the
    /// completion appears in the ring. A matched receive cannot be
    /// cancelled (`recv_id` is zero).
    pub const CLEARED: u32 = 5;
}

/// An unexpected message the module stored in the dump area.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StoredMessage {
    /// Names the message for [`O2G_IOC_FREE`].
    pub id: u64,
    /// Offset of its payload in the shared mapping.
    pub offset: u64,
    /// Payload length in bytes.
    pub len: u64,
    /// Sender's rank, as its header says.
    pub source: u32,
    /// The message tag.
    pub tag: u32,
    /// The communicator's context id.
    pub context: u32,
    /// [`O2G_STORED_REQUEST`] or zero.
    pub flags: u32,
}

const _: () = assert!(core::mem::size_of::<StoredMessage>() == 40);

/// [`StoredMessage::flags`]: a request to send, not a payload: `len` is
/// the message's size, `offset` and `id` are zero; a POST takes it (see
/// [`outcome::CLEARED`]); a claiming PROBE cannot (`EOPNOTSUPP`).
pub const O2G_STORED_REQUEST: u32 = 1;

/// Argument of [`O2G_IOC_POST`]: post a receive into a user buffer.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PostArgs {
    /// In: address of the receive buffer (any alignment).
    pub buf: u64,
    /// In: its length, `..=O2G_MAX_MESSAGE`.
    pub buf_len: u64,
    /// In: copied into the receive's [`Completion`].
    pub user_data: u64,
    /// In: accepted source rank, or [`O2G_ANY_SOURCE`].
    pub source: u32,
    /// In: accepted tag, or [`O2G_ANY_TAG`].
    pub tag: u32,
    /// In: the communicator's context id.
    pub context: u32,
    /// In: no flags are defined yet; must be zero.
    pub flags: u32,
    /// Out: an [`outcome`] (`QUEUED`, `UNEXPECTED` or, with notices,
    /// `RESCAN`).
    pub outcome: u32,
    /// In, with [`O2G_INIT_NOTICES`]: the ring index up to which the
    /// process has read (and matched) announcements; ignored otherwise.
    pub ring_seen: u32,
    /// Out: for `QUEUED`, the receive's id for [`O2G_IOC_CANCEL`].
    pub recv_id: u64,
    /// Out: for `UNEXPECTED`, the stored message the receive took; the
    /// caller copies it out of the mapping and frees it.
    pub msg: StoredMessage,
}

const _: () = assert!(core::mem::size_of::<PostArgs>() == 96);

/// Argument of [`O2G_IOC_PROBE`]: look for a stored unexpected message.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProbeArgs {
    /// In: accepted source rank, or [`O2G_ANY_SOURCE`].
    pub source: u32,
    /// In: accepted tag, or [`O2G_ANY_TAG`].
    pub tag: u32,
    /// In: the communicator's context id.
    pub context: u32,
    /// In: [`O2G_PROBE_CLAIM`] takes the message out of matching
    /// (`MPI_Mprobe`); other bits must be zero.
    pub flags: u32,
    /// Out: [`outcome::UNEXPECTED`] or [`outcome::NONE`].
    pub outcome: u32,
    /// Out: explicit padding; always zero.
    pub reserved: u32,
    /// Out: the message found.
    pub msg: StoredMessage,
}

const _: () = assert!(core::mem::size_of::<ProbeArgs>() == 64);

/// [`ProbeArgs::flags`]: claim the message found (matched probe).
pub const O2G_PROBE_CLAIM: u32 = 1;

/// Argument naming a receive ([`O2G_IOC_CANCEL`]) or a stored message
/// ([`O2G_IOC_FREE`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IdArg {
    /// The id the module handed out.
    pub id: u64,
}

const _: () = assert!(core::mem::size_of::<IdArg>() == 8);

/// Argument of [`O2G_IOC_POLL`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PollArgs {
    /// In: longest wait in nanoseconds; negative waits without limit, zero
    /// does not wait.
    pub timeout_ns: i64,
    /// Out: [`poll_events`] bits; zero after a timeout.
    pub events: u32,
    /// Explicit padding; must be zero.
    pub reserved: u32,
}

const _: () = assert!(core::mem::size_of::<PollArgs>() == 16);

/// Bits of [`PollArgs::events`].
pub mod poll_events {
    /// The completion ring holds records the process has not consumed.
    pub const COMPLETION: u32 = 1;
    /// An unexpected message was stored since the last poll.
    pub const UNEXPECTED: u32 = 2;
}

/// One record of the ring: a posted receive finished or, with
/// [`O2G_INIT_NOTICES`], an unexpected message was stored.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Completion {
    /// The receive's [`PostArgs::user_data`]; zero for a notice.
    pub user_data: u64,
    /// Length of the message as its header announced it; with status zero
    /// or `-EMSGSIZE`, `min(len, buf_len)` bytes were written; with a
    /// connection error the buffer contents are undefined.
    pub len: u64,
    /// The message's source rank.
    pub source: u32,
    /// The message's tag.
    pub tag: u32,
    /// The message's context id.
    pub context: u32,
    /// Zero, or a negative errno: `-EMSGSIZE` (truncated), `-ECONNRESET`
    /// (the connection failed: protocol error or peer gone; for a receive
    /// from any source, every registered connection failed), `-ECONNABORTED`
    /// (the socket was unregistered mid-message). Zero for a notice.
    pub status: i32,
    /// A [`record_kind`].
    pub kind: u32,
    /// Explicit padding; always zero.
    pub reserved: u32,
    /// [`record_kind::STORED`]: the message's id, for the release ring or
    /// [`O2G_IOC_FREE`].
    pub msg_id: u64,
    /// [`record_kind::STORED`]: its payload's offset in the mapping.
    pub offset: u64,
    /// Explicit padding; always zero.
    pub reserved2: u64,
}

const _: () = assert!(core::mem::size_of::<Completion>() == 64);

/// Argument of [`O2G_IOC_STATS`]: the endpoint's counters.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EndpointStats {
    /// Sockets currently registered.
    pub sockets: u32,
    /// Of those, connections failed by a protocol error or a close.
    pub failed_sockets: u32,
    /// Times a registered socket signalled readable data.
    pub data_ready_events: u64,
    /// Times the handler found the socket owned by a thread: the read
    /// waited for the owner's `release_sock()`, which ran it as the owner
    /// (or, outside process context, a work item ran it).
    pub deferred_reads: u64,
    /// Messages written straight into a posted receive, and their bytes.
    pub matched_msgs: u64,
    /// Payload bytes of `matched_msgs`.
    pub matched_bytes: u64,
    /// Messages stored in the dump area, and their bytes.
    pub unexpected_msgs: u64,
    /// Payload bytes of `unexpected_msgs`.
    pub unexpected_bytes: u64,
    /// Times a connection stopped being read because the dump area or the
    /// unexpected queue was full.
    pub backpressure_events: u64,
    /// Connections failed by a malformed stream, over the endpoint's life.
    pub protocol_errors: u64,
    /// Receives posted now.
    pub posted: u32,
    /// Unexpected messages stored now (queued or taken, not yet freed).
    pub unexpected: u32,
    /// Dump area bytes in use now.
    pub dump_used: u64,
    /// Receive buffer bytes pinned now.
    pub pinned_bytes: u64,
    /// Stored messages announced in the ring ([`O2G_INIT_NOTICES`]).
    pub notices: u64,
    /// Stored messages given back through the release ring.
    pub released_msgs: u64,
    /// Release-ring ids that named no stored message (skipped).
    pub bad_releases: u64,
    /// Stored messages too large to copy in the protocol handler that the
    /// module copied into their receive from a work item instead.
    pub deferred_copies: u64,
}

const _: () = assert!(core::mem::size_of::<EndpointStats>() == 128);

/// State of one connection, in [`SocketStats::state`].
pub mod socket_state {
    /// Being read.
    pub const ACTIVE: u32 = 1;
    /// Not read for now: no room for the next unexpected message.
    pub const STALLED: u32 = 2;
    /// Failed: protocol error or peer closed; no longer read.
    pub const FAILED: u32 = 3;
}

/// Argument of [`O2G_IOC_SOCKET_STATS`]: one connection's counters.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SocketStats {
    /// In: the peer rank.
    pub rank: u32,
    /// Out: a [`socket_state`].
    pub state: u32,
    /// Out: payload and header bytes read from the socket.
    pub rx_bytes: u64,
    /// Out: complete messages received.
    pub messages: u64,
    /// Out: protocol errors (0 or 1: the first one fails the connection).
    pub protocol_errors: u64,
    /// Out: times this connection was stalled by back-pressure.
    pub backpressure_events: u64,
}

const _: () = assert!(core::mem::size_of::<SocketStats>() == 40);

/// Attaches a connected TCP socket to a peer rank ([`SocketRegistration`]).
/// Needs [`O2G_IOC_INIT`] first.
pub const O2G_IOC_REGISTER_SOCKET: u32 =
    ioc(IOC_WRITE, 0x01, core::mem::size_of::<SocketRegistration>());
/// Detaches the socket of a peer rank ([`RankArg`]).
pub const O2G_IOC_UNREGISTER_SOCKET: u32 = ioc(IOC_WRITE, 0x02, core::mem::size_of::<RankArg>());
/// Reads the endpoint's counters ([`EndpointStats`]).
pub const O2G_IOC_STATS: u32 = ioc(IOC_READ, 0x03, core::mem::size_of::<EndpointStats>());
/// Sets the endpoint's capacities, once ([`InitArgs`]): `EBUSY` the second
/// time, `EINVAL` out of range. Every other receive-path call, REGISTER
/// included, gets `EBADFD` before it. Everything is freed and unpinned when
/// the open file is released (last close, or process exit).
pub const O2G_IOC_INIT: u32 = ioc(IOC_READ | IOC_WRITE, 0x04, core::mem::size_of::<InitArgs>());
/// Posts a receive ([`PostArgs`]).
///
/// With outcome `UNEXPECTED` or `RESCAN` the module kept no reference to the
/// buffer.
/// Errors: `EINVAL` (bad selector, flags, or `buf_len`), `EFAULT` (buffer
/// not writable, or inside an o2g mapping), `ENOSPC` (posted queue full), `EAGAIN` (unconsumed ring
/// records plus receives in flight would exceed `ring_entries`: consume
/// completions first, so the ring never overflows), `ENOBUFS` (pin budget),
/// `ECONNRESET` (the connection to that exact source failed; for any
/// source, every registered connection failed), `EBADFD` (before INIT). Receive ids carry a 32-bit generation: a stale id is
/// recognised until its slot is reused 2^32 times.
pub const O2G_IOC_POST: u32 = ioc(IOC_READ | IOC_WRITE, 0x05, core::mem::size_of::<PostArgs>());
/// Cancels a queued receive ([`IdArg`] with the receive id). Returns 1 if it
/// was cancelled (no completion will appear), 0 if it already matched (its
/// completion will appear, or has).
pub const O2G_IOC_CANCEL: u32 = ioc(IOC_WRITE, 0x06, core::mem::size_of::<IdArg>());
/// Frees a stored unexpected message taken by a post or claiming probe
/// ([`IdArg`] with the message id); its dump space is reused. `ENOENT` if
/// the id names no taken message (a queued one cannot be freed).
pub const O2G_IOC_FREE: u32 = ioc(IOC_WRITE, 0x07, core::mem::size_of::<IdArg>());
/// Waits for a completion or an unexpected message ([`PollArgs`]).
pub const O2G_IOC_POLL: u32 = ioc(IOC_READ | IOC_WRITE, 0x08, core::mem::size_of::<PollArgs>());
/// Looks for a stored unexpected message ([`ProbeArgs`]).
pub const O2G_IOC_PROBE: u32 = ioc(
    IOC_READ | IOC_WRITE,
    0x09,
    core::mem::size_of::<ProbeArgs>(),
);
/// Reads one connection's counters ([`SocketStats`]).
pub const O2G_IOC_SOCKET_STATS: u32 = ioc(
    IOC_READ | IOC_WRITE,
    0x0a,
    core::mem::size_of::<SocketStats>(),
);

/// Applies the release ring now and resumes connections stalled for want
/// of room (no argument). For a process that releases through the ring
/// and finds [`O2G_STALLED`] non-zero, or the release ring full.
pub const O2G_IOC_SYNC: u32 = ioc(IOC_NONE, 0x0c, 0);

/// One endpoint in an [`O2G_IOC_LIST_ENDPOINTS`] answer.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EndpointSummary {
    /// Process (thread group) id that opened the endpoint.
    pub pid: u32,
    /// A number unique among the module's endpoints since it was loaded.
    pub endpoint: u32,
    /// The endpoint's counters.
    pub stats: EndpointStats,
}

const _: () = assert!(core::mem::size_of::<EndpointSummary>() == 136);

/// Argument of [`O2G_IOC_LIST_ENDPOINTS`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EndpointList {
    /// In: address of an array of [`EndpointSummary`].
    pub buf: u64,
    /// In: its length in entries, `..=O2G_MAX_LIST`.
    pub capacity: u32,
    /// Out: endpoints that exist; `min(count, capacity)` entries were written.
    pub count: u32,
}

const _: () = assert!(core::mem::size_of::<EndpointList>() == 16);

/// Largest [`EndpointList::capacity`].
pub const O2G_MAX_LIST: u32 = 4096;

/// Lists endpoints with their counters ([`EndpointList`]), for `o2g-stat`:
/// the caller's own (opened under the same effective uid), or every
/// endpoint for a caller with `CAP_SYS_ADMIN`.
pub const O2G_IOC_LIST_ENDPOINTS: u32 = ioc(
    IOC_READ | IOC_WRITE,
    0x0b,
    core::mem::size_of::<EndpointList>(),
);

/// Argument of [`O2G_IOC_OFFER`]: a rendezvous send's buffer, offered to
/// the module before the process writes the message's `Rts` header.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OfferArgs {
    /// In: address of the message (any alignment).
    pub buf: u64,
    /// In: its length, `..=O2G_MAX_MESSAGE`.
    pub len: u64,
    /// In: copied into the offer's [`record_kind::SENT`] record.
    pub user_data: u64,
    /// In: the rank the message goes to; a control connection to it must
    /// be registered.
    pub rank: u32,
    /// In: [`O2G_OFFER_REPLACE`] or zero.
    pub flags: u32,
    /// Out: the offer's id, for the `Rts` header's reference field. In,
    /// with [`O2G_OFFER_REPLACE`]: the offer whose buffer to replace.
    pub offer: u32,
    /// Out: explicit padding; always zero.
    pub reserved: u32,
}

const _: () = assert!(core::mem::size_of::<OfferArgs>() == 40);

/// [`OfferArgs::flags`]: replace the buffer of offer [`OfferArgs::offer`]
/// (to the same `rank`, of the same `len`) with `buf`, if its receiver
/// has not cleared it yet; `user_data` is kept. For a blocking send that
/// waited long enough for its receiver and now hands the module a copy,
/// so that the caller's buffer is free again. Errors: `EBUSY` (the offer
/// was cleared: its data goes out from the old buffer; wait for its
/// `SENT` record), `ENOENT` (no such offer of this endpoint), `EINVAL`
/// (another rank or length).
pub const O2G_OFFER_REPLACE: u32 = 1;

/// Offers a rendezvous send's buffer ([`OfferArgs`]): the module pins it
/// (read-only, counted against `RLIMIT_MEMLOCK` and the pin budget) and,
/// when the receiver's clear-to-send names the offer, its work item sends
/// the data on the control connection, from the pinned pages, without
/// the process. A [`record_kind::SENT`] record ends every offer; the
/// pages stay pinned until then, so a process that frees or unmaps the
/// buffer early cannot make the module read freed memory (it sends what
/// the pinned pages hold). Closing the endpoint ends every offer.
///
/// Errors: `EINVAL` (flags, length, rank, reserved), `ENOTCONN` (no control
/// connection to `rank`, or it failed; to oneself, no live connection
/// registered with [`O2G_REGISTER_SELF`]), `ENOSPC` (offer table full:
/// `max_posted` offers), `EAGAIN` (the ring could overflow: consume
/// completions first), `ENOBUFS` (pin budget), `ENOMEM`
/// (`RLIMIT_MEMLOCK`), `EFAULT`, `EBADFD` (before INIT).
pub const O2G_IOC_OFFER: u32 = ioc(
    IOC_READ | IOC_WRITE,
    0x0d,
    core::mem::size_of::<OfferArgs>(),
);

/// Argument of [`O2G_IOC_RNDV_STATS`]: the endpoint's rendezvous
/// counters, kept from INIT on.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RendezvousStats {
    /// Requests to send that found their receive posted.
    pub requests_matched: u64,
    /// Requests to send stored until a receive took them.
    pub requests_stored: u64,
    /// Rendezvous data messages written straight into their receive.
    pub data_msgs: u64,
    /// Their payload bytes.
    pub data_bytes: u64,
    /// Clear-to-send messages the module wrote.
    pub cts_sent: u64,
    /// Offers made.
    pub offers: u64,
    /// Offers whose data the module sent in full.
    pub offers_sent: u64,
    /// Payload bytes the module sent from offers.
    pub offer_bytes_sent: u64,
    /// With [`O2G_INIT_CREDIT`]: the eager bytes each peer may leave
    /// stored (what its ring has room for, see [`O2G_INIT_CREDIT`]);
    /// zero without.
    pub window_bytes: u64,
    /// The most eager bytes any one peer had stored here at once,
    /// counted at each eager header: never above `window_bytes`.
    pub held_peak: u64,
    /// `Credit` messages sent (or, to oneself, handed over).
    pub credits_sent: u64,
    /// `Credit` messages received from peers.
    pub credits_received: u64,
}

const _: () = assert!(core::mem::size_of::<RendezvousStats>() == 96);

/// Reads the endpoint's rendezvous and credit counters
/// ([`RendezvousStats`]). `EBADFD` before INIT.
pub const O2G_IOC_RNDV_STATS: u32 = ioc(IOC_READ, 0x0e, core::mem::size_of::<RendezvousStats>());

/// Argument of [`O2G_IOC_TAKE_CREDIT`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CreditArgs {
    /// In: the peer.
    pub rank: u32,
    /// Out: eager messages it granted since the last call.
    pub msgs: u32,
    /// Out: eager bytes it granted since the last call.
    pub bytes: u64,
}

const _: () = assert!(core::mem::size_of::<CreditArgs>() == 16);

/// Takes the eager credit `rank` granted this endpoint since the last
/// call ([`CreditArgs`]); the caller adds it to what it may still send
/// eagerly to that peer. Credit to oneself comes from this endpoint's own
/// window for the connection to itself. Errors: `EOPNOTSUPP` (INIT
/// without [`O2G_INIT_CREDIT`]), `EINVAL` (rank not below
/// [`InitArgs::ranks`]), `EBADFD` (before INIT).
pub const O2G_IOC_TAKE_CREDIT: u32 = ioc(
    IOC_READ | IOC_WRITE,
    0x0f,
    core::mem::size_of::<CreditArgs>(),
);

/// Most windows one endpoint may register at once; more get `ENOSPC`.
pub const O2G_MAX_WINDOWS: u32 = 64;
/// Largest window: a put names its offset in 32 bits.
pub const O2G_MAX_WINDOW: u64 = 1 << 32;

/// Argument of [`O2G_IOC_WIN_REGISTER`]: memory the module writes puts
/// into (MPI one-sided communication, with the module as the target's
/// agent).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WindowArgs {
    /// In: the window's address (any alignment).
    pub base: u64,
    /// In: its length, `1..=O2G_MAX_WINDOW`.
    pub len: u64,
    /// In: the context id puts name it by, below 2^31, unique among the
    /// endpoint's windows.
    pub context: u32,
    /// In: zero.
    pub flags: u32,
    /// Out: the window's id, for [`O2G_IOC_WIN_UNREGISTER`] and
    /// [`O2G_IOC_WIN_STATS`].
    pub id: u32,
    /// In: the origins that may lock the window are the ranks below
    /// this, `1..=O2G_MAX_SOCKETS` (it sizes the lock's state).
    pub ranks: u32,
}

const _: () = assert!(core::mem::size_of::<WindowArgs>() == 32);

/// Registers a memory window ([`WindowArgs`]): the module pins it
/// writable (counted against `RLIMIT_MEMLOCK` and the pin budget) and,
/// from then on, acts as the window's agent for MPI's passive target,
/// inside the protocol handler, whatever the process is doing
/// (`docs/protocol.md`, Windows):
///
/// - it keeps the window's lock: a `Lock` request on a messages
///   connection takes, releases or flushes it, and the module's send work
///   answers each on the control connection (an `Answer` for the receive
///   the origin posted), a waiting lock once it is granted;
/// - it writes each put (wire kind `Put`: offset in the tag, `reference`
///   zero) from an origin holding the lock straight into the window;
/// - it answers each get (wire kind `Get`) of a lock holder with the
///   window's bytes, sent by its send work from the pinned pages.
///
/// A put that names no registered window, has a non-zero `reference`,
/// comes from an origin without the lock or reaches past the window's end
/// is refused: its payload is read and dropped, and it is counted
/// ([`WindowStats`], and in the origin's next answer); the connection goes
/// on. A request naming no window, from a rank not below `ranks`, or
/// before the answer to the same origin's previous one fails the
/// connection. An origin whose connection fails loses its lock. Closing
/// the endpoint unregisters every window.
///
/// Errors: `EINVAL` (length, context, flags, ranks), `EEXIST` (a window
/// with this context is registered), `ENOSPC` ([`O2G_MAX_WINDOWS`]
/// registered), `ENOBUFS` (pin budget), `ENOMEM` (`RLIMIT_MEMLOCK`),
/// `EFAULT` (not writable memory, or inside an o2g mapping), `EBADFD`
/// (before INIT).
pub const O2G_IOC_WIN_REGISTER: u32 = ioc(
    IOC_READ | IOC_WRITE,
    0x10,
    core::mem::size_of::<WindowArgs>(),
);

/// Unregisters a window ([`IdArg`] with the window id) and unpins it; a
/// put arriving later is refused. A put half placed when this returns
/// places no more bytes. `ENOENT` for an id that names no window.
pub const O2G_IOC_WIN_UNREGISTER: u32 = ioc(IOC_WRITE, 0x11, core::mem::size_of::<IdArg>());

/// Argument of [`O2G_IOC_WIN_STATS`]: a window's counters.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WindowStats {
    /// In: the window id.
    pub id: u32,
    /// Explicit padding; must be zero.
    pub reserved: u32,
    /// Out: puts written into the window in full.
    pub placed_msgs: u64,
    /// Out: their payload bytes.
    pub placed_bytes: u64,
    /// Out: puts for this window refused (out of range, a non-zero
    /// `reference`, or from an origin without the lock).
    pub refused_msgs: u64,
    /// Out: their payload bytes, dropped.
    pub refused_bytes: u64,
    /// Out: puts for the endpoint naming no registered window.
    pub unknown_msgs: u64,
    /// Out: lock requests (lock, unlock, flush) the window took.
    pub requests: u64,
    /// Out: answers the module sent for it (counted as they are handed
    /// to the connection, or to this process itself).
    pub answers: u64,
    /// Out: gets the window took (granted or refused).
    pub gets: u64,
    /// Out: bytes of the granted ones.
    pub get_bytes: u64,
}

const _: () = assert!(core::mem::size_of::<WindowStats>() == 80);

/// Reads a window's counters ([`WindowStats`]). `ENOENT` for an id that
/// names no window, `EBADFD` before INIT.
pub const O2G_IOC_WIN_STATS: u32 = ioc(
    IOC_READ | IOC_WRITE,
    0x12,
    core::mem::size_of::<WindowStats>(),
);

/// Argument of [`O2G_IOC_WIN_EPOCH`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WindowEpoch {
    /// The window id.
    pub id: u32,
    /// Explicit padding; must be zero.
    pub reserved: u32,
    /// Fences the window's process has completed (it never goes back).
    pub epoch: u64,
}

const _: () = assert!(core::mem::size_of::<WindowEpoch>() == 16);

/// Records that the window's process has completed `epoch` fences
/// ([`WindowEpoch`]). A lock request names, in its `length`, the fences
/// its origin had completed; the module takes the lock only once the
/// window's process has completed as many, so that an epoch begun after
/// a fence sees everything that fence ended at the target (MPI 5.0
/// §12.5). `ENOENT` for an id that names no window.
pub const O2G_IOC_WIN_EPOCH: u32 = ioc(IOC_WRITE, 0x13, core::mem::size_of::<WindowEpoch>());
