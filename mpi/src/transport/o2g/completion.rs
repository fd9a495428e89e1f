//! Reading the ring the module shares with this process: completed
//! receives, ended offers, and the announcements of stored messages and
//! requests to send, matched against the waiting receives.

use std::time::Duration;

use libo2g::{abi, Announced, Reaped, RecvError};
use o2g_core::proto::envelope::{Envelope, Selector};

use crate::error::{Error, Result};
use crate::request::NO_RANK;
use crate::transport::spin::spin_until;
use crate::transport::{RecvOutcome, RecvToken};

use super::failure::NO_LIVE_PEER;
use super::receive::{Attempt, RecvState, WaitingRecv, NO_PINS_FOR_RENDEZVOUS};
use super::{lib_err, O2g};

/// An announcement from the module.
pub(super) enum Notice {
    /// An eager message, now this process's.
    Stored(Announced),
    /// A request to send, which stays with the module: a receive takes it
    /// by posting with exactly its envelope.
    Request(Envelope),
}

/// The envelope of an announced request to send; `None` for a stored
/// message.
pub(super) fn request_of(n: &Notice) -> Option<Envelope> {
    match n {
        Notice::Stored(_) => None,
        Notice::Request(e) => Some(*e),
    }
}

/// `envelope`, of a stored message a receive just took, added to
/// `sync_matched` if a synchronous send sent it (it is owed an
/// acknowledgement).
pub(super) fn took_stored(sync_matched: &mut Vec<Envelope>, envelope: Envelope) -> Envelope {
    if envelope.is_sync() {
        sync_matched.push(envelope);
    }
    envelope
}

impl O2g {
    /// Reaps for at most `limit` without a system call; whether a
    /// completion came.
    pub(super) fn spin_on_ring(&mut self, limit: Duration) -> Result<bool> {
        spin_until(limit, || self.reap())
    }

    /// Takes every completion from the shared ring; whether there was one.
    pub(super) fn reap(&mut self) -> Result<bool> {
        // The common case of a wait: nothing new, nothing to post.
        if self.ep.ring_is_empty() && self.requested.is_empty() {
            self.check_notices()?;
            return Ok(false);
        }
        let mut any = false;
        while let Some(r) = self.ep.reap().map_err(|e| lib_err("reaping", e))? {
            any = true;
            let c = match r {
                Reaped::Owned(c) => c,
                Reaped::Stored(msg) => {
                    let (env, len) = (msg.envelope(), msg.len());
                    if let Some((w, n)) = self.held.announce(env, len, Notice::Stored(msg))? {
                        self.take_notice(w, n)?;
                    }
                    continue;
                }
                Reaped::Request { envelope, len } => {
                    let request = Notice::Request(envelope);
                    if let Some((w, n)) = self.held.announce(envelope, len, request)? {
                        self.take_notice(w, n)?;
                    }
                    continue;
                }
                Reaped::Sent(sent) => {
                    self.sent(sent);
                    continue;
                }
                Reaped::Raw(c) => {
                    let token = RecvToken::from_handle(c.user_data);
                    let Some(&RecvState::InPlace { cap, .. }) = self.recvs.get(&token) else {
                        continue;
                    };
                    let envelope = Envelope {
                        source: c.source,
                        tag: c.tag,
                        context: c.context,
                    };
                    let outcome = self.outcome(envelope, c.status, || RecvOutcome::InPlace {
                        envelope,
                        len: c.len,
                        written: c.len.min(cap as u64) as usize,
                    });
                    self.recvs.insert(token, RecvState::Done(outcome));
                    continue;
                }
            };
            let token = RecvToken::from_handle(c.user_data);
            let envelope = Envelope {
                source: c.source,
                tag: c.tag,
                context: c.context,
            };
            let (len, mut data) = (c.len, c.buf);
            let outcome = self.outcome(envelope, c.status, || {
                data.truncate(c.written);
                RecvOutcome::Done {
                    envelope,
                    len,
                    data,
                }
            });
            self.settle(token, outcome);
        }
        self.check_notices()?;
        self.post_requested()?;
        Ok(any)
    }

    /// Fails if receives wait for announcements the module stopped making.
    fn check_notices(&self) -> Result<()> {
        if self.held.has_waiting() && self.ep.notices_stopped() {
            // Cannot happen: every post reads the ring first, so it never
            // holds more than a record per posted receive and stored message.
            return Err(Error::ResourceExhausted(
                "o2g ring (the module stopped announcing stored messages)",
            ));
        }
        Ok(())
    }

    /// Waiting receive `w` took announcement `n`: a stored message is
    /// copied out now; a request to send is posted for exactly its
    /// envelope once the ring is read (a post refuses while records wait
    /// unread).
    pub(super) fn take_notice(&mut self, w: WaitingRecv, n: Notice) -> Result<()> {
        match n {
            Notice::Stored(msg) => {
                let outcome = self.deliver(msg, w.cap)?;
                self.settle(w.token, outcome);
            }
            Notice::Request(e) => self.requested.push_back((w, e)),
        }
        Ok(())
    }

    /// Posts the waiting receives that announced requests to send matched,
    /// each for exactly its request; those the module refuses for now
    /// (records arrived since the ring was read) wait for the next reap.
    pub(super) fn post_requested(&mut self) -> Result<()> {
        while let Some((w, e)) = self.requested.pop_front() {
            match self.try_post(Selector::exact(e), w.cap, w.token)? {
                Attempt::Made(state) => self.posted(w.token, state),
                Attempt::Retry => {
                    self.requested.push_front((w, e));
                    return Ok(());
                }
                Attempt::NoPins => return Err(Error::ResourceExhausted(NO_PINS_FOR_RENDEZVOUS)),
            }
        }
        Ok(())
    }

    /// The outcome of a receive the module completed with `status`:
    /// `matched()` if a message matched (noting a synchronous one), else a
    /// failure (and a failed connection kills its rank).
    pub(super) fn outcome(
        &mut self,
        envelope: Envelope,
        status: std::result::Result<(), RecvError>,
        matched: impl FnOnce() -> RecvOutcome,
    ) -> RecvOutcome {
        match status {
            Ok(()) | Err(RecvError::Truncated) => {
                if envelope.is_sync() {
                    self.sync_matched.push(envelope);
                }
                matched()
            }
            // The module completes receives from any source this way when
            // every connection has failed.
            Err(RecvError::ConnectionFailed) if envelope.source == abi::O2G_ANY_SOURCE => {
                RecvOutcome::Failed {
                    rank: NO_RANK,
                    reason: NO_LIVE_PEER.into(),
                }
            }
            Err(e) => {
                let reason = if e == RecvError::ConnectionFailed {
                    self.kill_unexplained(envelope.source, "the connection to the source failed")
                } else {
                    e.to_string()
                };
                RecvOutcome::Failed {
                    rank: envelope.source,
                    reason,
                }
            }
        }
    }
}
