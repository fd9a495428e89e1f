//! [`Error`]: every way an emulated-board operation can fail.
//!
//! Waits never hang: each one has a deadline and fails with
//! [`Error::Timeout`] naming what it waited for. Values read from shared
//! memory that no correct peer would write fail with [`Error::Corrupt`]
//! instead of being used.

use std::time::Duration;

/// Why an operation on the emulated board or an AP1000 ring failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The shared mapping refused an access (out of bounds, misaligned) or
    /// could not be opened.
    #[error("NIC memory: {0}")]
    Mem(#[from] o2g_nicmem::Error),
    /// A wait ran out of time; `what` names the condition waited for.
    #[error("timed out after {after:?} waiting for {what}")]
    Timeout {
        /// The condition, e.g. "a task in node 2's EXT FIFO".
        what: String,
        /// How long the caller waited.
        after: Duration,
    },
    /// The region does not hold a board of the layout the caller expects.
    #[error("board layout mismatch: {field} is {found} in the region, {expected} expected")]
    LayoutMismatch {
        /// The header field that differs.
        field: &'static str,
        /// Its value in the region.
        found: u64,
        /// The value this process was configured with.
        expected: u64,
    },
    /// A configuration cannot be laid out (zero nodes, too many, too big).
    #[error("bad configuration: {0}")]
    BadConfig(String),
    /// Shared memory held a value no correct peer writes.
    #[error("corrupt shared state: {0}")]
    Corrupt(String),
    /// A node number outside the board.
    #[error("node {node} does not exist (the board has {nodes})")]
    NoSuchNode {
        /// The node asked for.
        node: u32,
        /// How many the board has.
        nodes: u32,
    },
    /// A DSM page outside its home node's DSM area.
    #[error("DSM page {page} of node {node} does not exist (a node has {pages})")]
    NoSuchPage {
        /// The home node.
        node: u32,
        /// The page asked for.
        page: u32,
        /// DSM pages per node.
        pages: u32,
    },
    /// An access past the end of a page, a shared range or a cache entry.
    #[error("access of {len} bytes at offset {offset} exceeds {limit} bytes")]
    OutOfRange {
        /// Start of the access.
        offset: usize,
        /// Its length.
        len: usize,
        /// The size it must fit in.
        limit: usize,
    },
    /// Every cache page of the node is in use.
    #[error("node {0}: no free cache page (write some back first)")]
    CacheFull(u32),
    /// Every twin page of the node is in use.
    #[error("node {0}: no free twin page (write some back first)")]
    TwinFull(u32),
    /// A cache entry number that is not a valid, live entry.
    #[error("node {node}: cache entry {entry} is not in use")]
    NotCached {
        /// The node.
        node: u32,
        /// The entry.
        entry: u32,
    },
    /// A node's DSM area has no room for an allocation.
    #[error("node {node}: {wanted} DSM pages wanted, {free} free")]
    OutOfDsm {
        /// The home node.
        node: u32,
        /// Pages asked for.
        wanted: u32,
        /// Pages left.
        free: u32,
    },
    /// A PB found the target FIFO full and the caller asked not to wait.
    #[error("PB to node {0}: FIFO full (255 task ids waiting)")]
    FifoFull(u32),
    /// A task id whose kind has no registered handler.
    #[error("task id {0:#010x}: no handler registered for its kind")]
    UnknownTask(u32),
    /// A send found the ring without room and the caller asked not to wait.
    #[error("ring full: {need} bytes needed, {free} free")]
    RingFull {
        /// Bytes the message occupies in the ring.
        need: usize,
        /// Bytes free.
        free: usize,
    },
    /// A message larger than the ring's largest message.
    #[error("message of {len} bytes exceeds the ring's maximum payload of {max}")]
    MessageTooLarge {
        /// Payload length.
        len: usize,
        /// The largest payload the ring takes.
        max: usize,
    },
    /// A synchronisation variable number outside the board's table.
    #[error("synchronisation variable {var} does not exist (the board has {vars})")]
    NoSuchSyncVar {
        /// The variable asked for.
        var: u32,
        /// How many the board has.
        vars: u32,
    },
    /// A release of a synchronisation variable the caller does not hold.
    #[error("node {node} released synchronisation variable {var}, held by {holder:?}")]
    NotOwner {
        /// The releasing node.
        node: u32,
        /// The variable.
        var: u32,
        /// The node holding it, if any.
        holder: Option<u32>,
    },
}

/// Result alias for this crate.
pub type Result<T> = std::result::Result<T, Error>;
