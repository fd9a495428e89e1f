//! The one error type every operation returns.
//!
//! MPI 4.1 §9.4 defines error classes; the variants below name the class
//! they stand for, so a reader who knows MPI recognises them. Unlike rsmpi,
//! nothing here is thrown away: every call returns `Result<_, Error>`.

use std::io;

/// Why an MPI operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A message was longer than the receive buffer (`MPI_ERR_TRUNCATE`,
    /// §3.2.4). The buffer holds the first `capacity` bytes.
    #[error("message truncated: {len} bytes from rank {source_rank} (tag {tag}) do not fit a {capacity}-byte buffer (MPI_ERR_TRUNCATE)")]
    Truncated {
        /// Bytes the sender sent.
        len: u64,
        /// Bytes the receive buffer holds.
        capacity: usize,
        /// Sender's rank in the communicator.
        source_rank: i32,
        /// The message's tag.
        tag: i32,
    },
    /// A rank outside `0..size` (`MPI_ERR_RANK`).
    #[error("invalid rank {rank} for a communicator of size {size} (MPI_ERR_RANK)")]
    InvalidRank {
        /// The rank given.
        rank: i32,
        /// The communicator's size.
        size: i32,
    },
    /// A tag outside `0..=TAG_UB`, or a wildcard where none is allowed
    /// (`MPI_ERR_TAG`).
    #[error("invalid tag {0} (MPI_ERR_TAG)")]
    InvalidTag(i32),
    /// Arguments that do not fit together, such as a buffer shorter than the
    /// counts say (`MPI_ERR_ARG`, `MPI_ERR_COUNT`, `MPI_ERR_BUFFER`).
    #[error("invalid argument: {0} (MPI_ERR_ARG)")]
    InvalidArgument(String),
    /// A communicator unsuitable for the operation: an inter-communicator
    /// where only intra-communicators are allowed (a virtual topology,
    /// §8.1; a collective not provided on inter-communicators, §6.2.2),
    /// or the other way round (`MPI_ERR_COMM`).
    #[error("invalid communicator: {0} (MPI_ERR_COMM)")]
    InvalidCommunicator(String),
    /// A peer process is gone: its connection closed or broke
    /// (`MPI_ERR_PROC_FAILED` in the fault-tolerance sense).
    #[error("{}", peer_gone(*rank, reason))]
    PeerGone {
        /// The peer's rank in `MPI_COMM_WORLD`; `u32::MAX` where it is not
        /// known (a send that failed, as its queue saw it).
        rank: u32,
        /// What was seen.
        reason: String,
    },
    /// An operating-system call failed (`MPI_ERR_OTHER`).
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The system error.
        #[source]
        source: io::Error,
    },
    /// The process manager (PMI-1 or PMI-2) refused or broke the protocol.
    #[error("PMI: {0}")]
    Pmi(String),
    /// The environment configures something impossible.
    #[error("configuration: {0}")]
    Config(String),
    /// The selected transport is not available in this build or system.
    #[error("transport {name:?} is not available: {reason}")]
    TransportUnavailable {
        /// The value of `O2G_TRANSPORT`.
        name: String,
        /// Why not.
        reason: String,
    },
    /// A fixed-size resource is exhausted (`MPI_ERR_NO_MEM`, §3.5
    /// "Resource limitations"); nothing was changed.
    #[error("resource exhausted: {0}")]
    ResourceExhausted(&'static str),
    /// The operation came after `MPI_Finalize` (`MPI_ERR_OTHER`).
    #[error("MPI is finalized")]
    Finalized,
    /// MPI was already initialised in this process (§11.2.1 allows it once).
    #[error("MPI is already initialized in this process")]
    AlreadyInitialized,
    /// The call would wait forever: nothing that could complete it is left
    /// (no live peer, or a world of one waiting for itself).
    #[error("deadlock: {0}")]
    Deadlock(String),
    /// A bounded wait ran out (bootstrap only; MPI operations themselves
    /// have no timeouts).
    #[error("timed out: {0}")]
    Timeout(String),
}

impl Error {
    /// Wraps an I/O error with what was being done.
    pub(crate) fn io(context: impl Into<String>, source: io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// [`Error::PeerGone`] in words.
fn peer_gone(rank: u32, reason: &str) -> String {
    if rank == crate::request::NO_RANK {
        format!("the peer of a send is gone: {reason}")
    } else {
        format!("peer world rank {rank} is gone: {reason}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lost_peer_is_named_when_known() {
        let e = |rank| {
            Error::PeerGone {
                rank,
                reason: "read failed".into(),
            }
            .to_string()
        };
        assert_eq!(e(3), "peer world rank 3 is gone: read failed");
        assert_eq!(
            e(crate::request::NO_RANK),
            "the peer of a send is gone: read failed"
        );
    }
}
