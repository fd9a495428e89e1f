//! Synchronous-mode send (`MPI_Ssend`, MPI 4.1 §3.4): the send completes
//! only once a matching receive has started.
//!
//! The sender marks the message with the context's
//! [`SYNC_FLAG`](o2g_core::proto::envelope::SYNC_FLAG) bit, which matching
//! ignores (in user space and in the kernel module alike). Every transport
//! reports the envelopes of marked messages at the moment a receive takes
//! them ([`Transport::take_sync_matches`]); [`acknowledge`] then answers
//! each with an empty message on the communicator's collective context
//! with tag [`ACK_TAG`] plus the message's tag ([`ack_tag`]), which no
//! collective uses. The sender posts the receive for that
//! acknowledgement before it sends, and waits for it.
//!
//! Acknowledgements go out from [`crate::environment::Runtime::with`],
//! that is after every call into the transport, so a process that is
//! itself blocked (in a receive, a wait, or its own `MPI_Ssend`) still
//! acknowledges what its posted receives take: two processes that each
//! post a receive and then `MPI_Ssend` to each other do not deadlock.
//!
//! A sender may have several synchronous sends in flight to one
//! destination (`MPI_Issend`), so acknowledgements need to say which
//! message they answer without a sequence number: messages from one
//! sender with one tag on one communicator are matched in the order they
//! were sent (non-overtaking, §3.5), their acknowledgements carry that tag
//! and travel in that order too, and the sender posts the receives for
//! them in the same order, so each acknowledgement completes the send it
//! answers. A request for a synchronous send dropped before its
//! acknowledgement came leaves that receive posted until it arrives
//! (`Runtime::orphan`), so it never answers a later send.

use o2g_core::proto::envelope::{Envelope, Selector, SourceSel, TagSel, SYNC_FLAG};

use crate::transport::Transport;

/// Tag bit of acknowledgements; above `MPI_TAG_UB`, so no user message has
/// it, and on the collective context, whose tags are small.
pub(crate) const ACK_TAG: u32 = 1 << 31;

/// The tag of the acknowledgement of a message with tag `tag`.
pub(crate) fn ack_tag(tag: u32) -> u32 {
    ACK_TAG | tag
}

/// The context acknowledgements for messages on `context` travel on: the
/// communicator's collective context (point-to-point contexts are even).
pub(crate) fn ack_context(context: u32) -> u32 {
    (context & !SYNC_FLAG) | 1
}

/// The envelope of a synchronous-mode message.
pub(crate) fn marked(env: Envelope) -> Envelope {
    Envelope {
        context: env.context | SYNC_FLAG,
        ..env
    }
}

/// What the sender of a message with `tag` on `context` to world rank
/// `dest` posts to receive the acknowledgement.
pub(crate) fn ack_selector(dest: u32, context: u32, tag: u32) -> Selector {
    Selector {
        source: SourceSel::Rank(dest),
        tag: TagSel::Tag(ack_tag(tag)),
        context: ack_context(context),
    }
}

/// Acknowledges every synchronous-mode message the transport matched since
/// the last call. `me` is this process's world rank. A failed send means
/// the sender is gone, and then nobody waits for the acknowledgement.
pub(crate) fn acknowledge(t: &mut dyn Transport, me: u32) {
    if !t.has_sync_matches() {
        return;
    }
    for env in t.take_sync_matches() {
        let ack = Envelope {
            source: me,
            tag: ack_tag(env.tag),
            context: ack_context(env.context),
        };
        if let Ok(token) = t.isend(env.source, ack, &[]) {
            t.release_send(token);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acknowledgements_use_the_collective_context_without_the_mark() {
        assert_eq!(ack_context(4), 5);
        assert_eq!(ack_context(4 | SYNC_FLAG), 5);
        let m = marked(Envelope {
            source: 1,
            tag: 2,
            context: 6,
        });
        assert!(m.is_sync() && m.matching_key().context == 6);
        let s = ack_selector(3, m.context, 2);
        assert!(s.matches(&Envelope {
            source: 3,
            tag: ACK_TAG | 2,
            context: 7
        }));
        assert!(!s.matches(&Envelope {
            source: 3,
            tag: ACK_TAG | 9,
            context: 7
        }));
    }
}
