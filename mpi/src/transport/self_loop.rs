//! `self`: a world of one process; every message goes to itself.
//!
//! Messages go straight into the matcher: a send is one copy into the
//! matched receive or the unexpected store. The socket transports use the
//! same path for messages to their own rank unless `O2G_SELF=0`.

use std::time::Duration;

use o2g_core::proto::envelope::Envelope;

use super::matcher::Matcher;
use super::outbox::Sends;
use super::{ReceivesThroughMatcher, SendHalf, SendToken, Transport};
use crate::config::Config;
use crate::error::{Error, Result};

/// The loopback transport.
pub(crate) struct SelfLoop {
    matcher: Matcher,
    /// Always empty: every send completes at once.
    sends: Sends,
}

impl SelfLoop {
    pub(crate) fn new(_config: &Config) -> Result<Self> {
        Ok(Self {
            matcher: Matcher::new(),
            sends: Sends::new(),
        })
    }
}

impl Transport for SelfLoop {
    fn progress(&mut self, timeout: Option<Duration>) -> Result<()> {
        // Nothing ever arrives from outside: waiting cannot help.
        match timeout {
            None => Err(Error::Deadlock(
                "a world of one process is waiting for a message it has not sent".into(),
            )),
            Some(_) => Ok(()),
        }
    }

    fn peer_failure(&self, _rank: u32) -> Option<String> {
        None
    }
}

impl SendHalf for SelfLoop {
    fn send(&mut self, dest: u32, env: Envelope, data: &[u8]) -> Result<()> {
        if dest != 0 {
            return Err(Error::InvalidRank {
                rank: dest as i32,
                size: 1,
            });
        }
        self.matcher.deliver_local(env, data)
    }

    fn isend(&mut self, dest: u32, env: Envelope, data: &[u8]) -> Result<SendToken> {
        self.send(dest, env, data).map(|()| SendToken(0))
    }

    fn sends(&mut self) -> &mut Sends {
        &mut self.sends
    }

    fn has_queued_sends(&self) -> bool {
        false
    }
}

impl ReceivesThroughMatcher for SelfLoop {
    fn matcher(&mut self) -> &mut Matcher {
        &mut self.matcher
    }
}
