//! The crate's error type.

use std::time::Duration;

/// Why an operation on an emulated AP1000 cell failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A cell number outside the machine.
    #[error("cell {cell} does not exist (the machine has {cells})")]
    NoSuchCell {
        /// The cell asked for.
        cell: usize,
        /// How many the machine has.
        cells: usize,
    },
    /// A store whose top 6 address bits are not a line-sending command.
    #[error("store to {0:#010x} is not LSEND or LSENDE")]
    BadCommand(u32),
    /// An address range outside the cell's memory.
    #[error("{len} bytes at {addr:#x} leave the cell's {size}-byte memory")]
    BadAddress {
        /// Start of the range.
        addr: u32,
        /// Its length.
        len: usize,
        /// The memory's size.
        size: usize,
    },
    /// A message longer than the hardware takes: 512 KiB (Table 1), or
    /// more than the receiving ring holds.
    #[error("a {len}-byte message exceeds the limit of {max} bytes")]
    TooLarge {
        /// The message's length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// Line sends that do not form a message: LSENDE on a header line, a
    /// line past the length the header announced, or LSENDE before it.
    #[error("bad message: {0}")]
    BadMessage(String),
    /// A configuration the model cannot run (sizes not multiples of a
    /// line, a cache that is not a power of two, ...).
    #[error("bad configuration: {0}")]
    BadConfig(String),
    /// A wait ran out of time; `what` names the condition waited for.
    #[error("timed out after {after:?} waiting for {what}")]
    Timeout {
        /// The condition.
        what: String,
        /// How long the caller waited.
        after: Duration,
    },
}

/// Result alias for this crate.
pub type Result<T> = std::result::Result<T, Error>;
