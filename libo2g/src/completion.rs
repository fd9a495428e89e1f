//! Finished receives, as reaped from the completion ring.

use std::fmt;

use crate::abi;

/// Why a posted receive finished without (all of) its message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum RecvError {
    /// The message was longer than the buffer (`-EMSGSIZE`): the buffer holds
    /// its first `buf.len()` bytes (`MPI_ERR_TRUNCATE`).
    #[error("message truncated: longer than the receive buffer")]
    Truncated,
    /// The connection to the source failed: a protocol error, or the peer
    /// went away (`-ECONNRESET`).
    #[error("the connection to the source failed (protocol error or peer gone)")]
    ConnectionFailed,
    /// The source's socket was unregistered mid-message (`-ECONNABORTED`).
    #[error("the source's socket was unregistered mid-message")]
    Unregistered,
    /// Another status; holds the errno (the status negated).
    #[error("receive failed with errno {0}")]
    Other(i32),
}

impl RecvError {
    /// Maps a [`abi::Completion::status`]: zero is success, a negative errno
    /// a failure.
    pub fn from_status(status: i32) -> Result<(), RecvError> {
        match status {
            0 => Ok(()),
            s if s == -libc::EMSGSIZE => Err(RecvError::Truncated),
            s if s == -libc::ECONNRESET => Err(RecvError::ConnectionFailed),
            s if s == -libc::ECONNABORTED => Err(RecvError::Unregistered),
            s => Err(RecvError::Other(s.wrapping_neg())),
        }
    }
}

/// A receive posted with [`Endpoint::post`](crate::Endpoint::post) finished;
/// its buffer is the caller's again.
pub struct Completed {
    /// The buffer given to `post`, with its length unchanged.
    pub buf: Vec<u8>,
    /// The `user_data` given to `post`.
    pub user_data: u64,
    /// The message's length as sent.
    pub len: u64,
    /// Bytes written at the start of `buf`: `min(len, buf.len())`. After a
    /// connection failure the module may have written fewer.
    pub written: usize,
    /// The message's source rank.
    pub source: u32,
    /// The message's tag.
    pub tag: u32,
    /// The message's context id.
    pub context: u32,
    /// Whether the whole message arrived.
    pub status: Result<(), RecvError>,
}

impl Completed {
    /// Builds the result of `record` for a receive into `buf`.
    pub(crate) fn new(buf: Vec<u8>, user_data: u64, record: &abi::Completion) -> Self {
        let written = usize::try_from(record.len).map_or(buf.len(), |len| len.min(buf.len()));
        Self {
            buf,
            user_data,
            len: record.len,
            written,
            source: record.source,
            tag: record.tag,
            context: record.context,
            status: RecvError::from_status(record.status),
        }
    }

    /// The received bytes, `&buf[..written]`.
    pub fn data(&self) -> &[u8] {
        &self.buf[..self.written]
    }
}

impl fmt::Debug for Completed {
    // The buffer may be large: show its length, not its bytes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Completed")
            .field("buf_len", &self.buf.len())
            .field("user_data", &self.user_data)
            .field("len", &self.len)
            .field("written", &self.written)
            .field("source", &self.source)
            .field("tag", &self.tag)
            .field("context", &self.context)
            .field("status", &self.status)
            .finish()
    }
}

/// A receive posted with [`Endpoint::post_raw`](crate::Endpoint::post_raw)
/// finished: the module no longer writes into its buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawCompleted {
    /// The `user_data` given to `post_raw`.
    pub user_data: u64,
    /// The message's length as sent; `min(len, buffer length)` bytes were
    /// written.
    pub len: u64,
    /// The message's source rank.
    pub source: u32,
    /// The message's tag.
    pub tag: u32,
    /// The message's context id.
    pub context: u32,
    /// Whether the whole message arrived.
    pub status: Result<(), RecvError>,
}

impl From<&abi::Completion> for RawCompleted {
    fn from(c: &abi::Completion) -> Self {
        Self {
            user_data: c.user_data,
            len: c.len,
            source: c.source,
            tag: c.tag,
            context: c.context,
            status: RecvError::from_status(c.status),
        }
    }
}

/// One record reaped from the completion ring.
#[derive(Debug)]
pub enum Reaped {
    /// A receive posted with [`Endpoint::post`](crate::Endpoint::post),
    /// with its buffer.
    Owned(Completed),
    /// A receive posted with [`Endpoint::post_raw`](crate::Endpoint::post_raw).
    Raw(RawCompleted),
    /// With [`EndpointConfig::notices`](crate::EndpointConfig::notices): an
    /// unexpected message was stored and is now this process's.
    Stored(crate::Announced),
    /// With notices: a request to send was stored. It stays with the
    /// module: a receive takes it by posting with exactly this envelope.
    Request {
        /// The message's envelope.
        envelope: crate::Envelope,
        /// The message's length.
        len: u64,
    },
    /// An offer ([`Endpoint::offer`](crate::Endpoint::offer)) ended.
    Sent(Sent),
}

/// An offer ended: the module no longer reads its buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sent {
    /// The offer's `user_data`.
    pub user_data: u64,
    /// Bytes sent (what the receiver asked for).
    pub len: u64,
    /// Whether the data went out: a failure is the control connection's
    /// ([`RecvError::ConnectionFailed`]).
    pub status: Result<(), RecvError>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_recv_errors() {
        assert_eq!(RecvError::from_status(0), Ok(()));
        assert_eq!(
            RecvError::from_status(-libc::EMSGSIZE),
            Err(RecvError::Truncated)
        );
        assert_eq!(
            RecvError::from_status(-libc::ECONNRESET),
            Err(RecvError::ConnectionFailed)
        );
        assert_eq!(
            RecvError::from_status(-libc::ECONNABORTED),
            Err(RecvError::Unregistered)
        );
        assert_eq!(
            RecvError::from_status(-libc::EIO),
            Err(RecvError::Other(libc::EIO))
        );
        // Positive statuses break the ABI; they still map, negated.
        assert_eq!(RecvError::from_status(5), Err(RecvError::Other(-5)));
        assert_eq!(
            RecvError::from_status(i32::MIN),
            Err(RecvError::Other(i32::MIN))
        );
    }

    #[test]
    fn written_is_clamped_to_the_buffer() {
        let rec = |len| abi::Completion {
            user_data: 0,
            len,
            source: 1,
            tag: 2,
            context: 3,
            ..Default::default()
        };
        let c = Completed::new(vec![7; 10], 99, &rec(4));
        assert_eq!((c.written, c.data()), (4, &[7u8; 4][..]));
        assert_eq!(c.user_data, 99);
        assert_eq!((c.source, c.tag, c.context), (1, 2, 3));
        let c = Completed::new(vec![0; 10], 0, &rec(25));
        assert_eq!(c.written, 10);
        assert_eq!(c.len, 25);
        let c = Completed::new(vec![0; 10], 0, &rec(u64::MAX));
        assert_eq!(c.written, 10);
        assert!(format!("{c:?}").contains("buf_len: 10"));
    }
}
