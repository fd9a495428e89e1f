//! What posting a receive gives back.

use std::fmt;

use crate::slab::Key;
use crate::{Error, UnexpectedMessage};

/// Names a receive posted with [`Endpoint::post`](crate::Endpoint::post), for
/// [`Endpoint::cancel`](crate::Endpoint::cancel). Once the receive is reaped
/// or cancelled the handle names nothing, even if the module reuses its id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RecvHandle {
    pub(crate) key: Key,
    pub(crate) recv_id: u64,
}

impl RecvHandle {
    /// The module's id of the receive.
    pub fn recv_id(&self) -> u64 {
        self.recv_id
    }
}

/// What [`Endpoint::post`](crate::Endpoint::post) did with a buffer.
#[derive(Debug)]
pub enum Post<'a> {
    /// The receive is queued and the endpoint holds the buffer; it comes back
    /// through [`Endpoint::reap`](crate::Endpoint::reap), or through a
    /// successful [`Endpoint::cancel`](crate::Endpoint::cancel).
    Queued(RecvHandle),
    /// A stored unexpected message matched at once. The module did not take
    /// the buffer: copy the message into it ([`UnexpectedMessage::copy_to`])
    /// and free the message.
    Unexpected {
        /// The message the receive took.
        msg: UnexpectedMessage<'a>,
        /// The buffer, untouched.
        buf: Vec<u8>,
    },
    /// With [`EndpointConfig::notices`](crate::EndpointConfig::notices):
    /// nothing was posted, because messages were announced that this
    /// process has not reaped yet, and one of them may be the receive's.
    /// Reap them, match them, and post again if none fits.
    Rescan(Vec<u8>),
}

/// What [`Endpoint::post_raw`](crate::Endpoint::post_raw) did.
#[derive(Debug)]
pub enum PostOutcome<'a> {
    /// The receive is queued; the module writes into the buffer until its
    /// completion is reaped or [`Endpoint::cancel_raw`](crate::Endpoint::cancel_raw)
    /// returns `true`.
    Queued {
        /// The module's id of the receive.
        recv_id: u64,
    },
    /// A stored unexpected message matched at once; the buffer was not taken.
    Unexpected(UnexpectedMessage<'a>),
    /// Nothing was posted: see [`Post::Rescan`].
    Rescan,
}

/// A failed [`Endpoint::post`](crate::Endpoint::post), with the caller's
/// buffer.
pub struct PostError {
    /// What went wrong.
    pub error: Error,
    /// The buffer, untouched. `None` only when the module's answer broke the
    /// ABI (an unknown outcome) so that it may still write into the buffer:
    /// the endpoint then keeps it, returning it if a completion for it
    /// appears, and otherwise leaking it rather than freeing memory the
    /// module might write.
    pub buf: Option<Vec<u8>>,
}

impl From<PostError> for Error {
    fn from(e: PostError) -> Self {
        e.error
    }
}

impl fmt::Debug for PostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostError")
            .field("error", &self.error)
            .field("buf_len", &self.buf.as_ref().map(Vec::len))
            .finish()
    }
}

impl fmt::Display for PostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.error.fmt(f)
    }
}

impl std::error::Error for PostError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&self.error)
    }
}
