//! The crate's error type.
//!
//! Every failure a caller can see is one of these variants, so a transport
//! can tell a dead peer ([`Error::Timeout`]) from a corrupt or hostile one
//! ([`Error::Corrupt`]) from its own mistake ([`Error::BadArgument`]).

use std::time::Duration;

/// Why an emulated DIMMnet-1 operation failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The shared region refused an access (out of bounds, misaligned) or
    /// could not be opened.
    #[error("NIC memory: {0}")]
    Mem(#[from] o2g_nicmem::Error),
    /// The region does not hold a DIMMnet-1 layout this build understands,
    /// or the attaching node expects another one.
    #[error("incompatible DIMMnet region: {0}")]
    Incompatible(String),
    /// A wait passed its deadline: the peer it waited for is dead, stuck or
    /// was never started.
    #[error("timed out after {after:?} waiting for {what}")]
    Timeout {
        /// What the wait needed, naming the node and the word.
        what: String,
        /// How long it waited.
        after: Duration,
    },
    /// A field read from shared memory (written by a peer) is out of range.
    /// The value was not used.
    #[error("corrupt {field} from node {node}: {value}")]
    Corrupt {
        /// The node whose word it is.
        node: u32,
        /// Which field.
        field: &'static str,
        /// The offending value.
        value: u64,
    },
    /// The caller passed an argument outside what the model allows
    /// (a node that does not exist, an AOTF of 9 bytes, ...).
    #[error("bad argument: {0}")]
    BadArgument(String),
    /// AOTF or BOTF to a destination whose header seed was never set up.
    #[error("no header seed for node {0}: call Nic::seed_header first")]
    NotSeeded(u32),
    /// The message is longer than the receive buffer. The message was
    /// drained (the sender completed), its first `capacity` bytes kept.
    #[error("message of {len} bytes from node {from} truncated to {capacity}")]
    Truncated {
        /// Sender.
        from: u32,
        /// Length the sender announced.
        len: usize,
        /// Size of the receive buffer.
        capacity: usize,
    },
    /// An interrupt AOTF found the destination's list full; nothing was
    /// written.
    #[error("the interrupt list of node {node} holds its {capacity} entries already")]
    ListFull {
        /// The destination.
        node: u32,
        /// The list's capacity.
        capacity: usize,
    },
    /// The peer belongs to another process group (a stale or foreign job
    /// on the same region).
    #[error("node {node} uses process group {found}, expected {expected}")]
    ForeignPeer {
        /// The peer.
        node: u32,
        /// Its pgid.
        found: u16,
        /// Ours.
        expected: u16,
    },
}

/// Result alias for this crate.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// Whether this is a [`Error::Timeout`].
    pub fn is_timeout(&self) -> bool {
        matches!(self, Error::Timeout { .. })
    }
}
