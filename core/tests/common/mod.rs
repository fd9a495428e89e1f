//! Test support shared by the integration tests (and the matching fuzz
//! target): a reference model of MPI matching, and ([`receiver`]) a small
//! receive machine. Each test binary uses a different part of it.
#![allow(dead_code)]

pub(crate) mod receiver;

use o2g_core::proto::envelope::{Envelope, Selector};

/// A message as the model tracks it; `loc` identifies it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Msg {
    pub(crate) env: Envelope,
    pub(crate) len: u64,
    pub(crate) loc: u64,
}

/// What the model expects [`Engine::post`] to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PostOut {
    /// The receive takes the message with this location.
    Matched(u64),
    Queued,
    Full,
}

/// What the model expects [`Engine::arrive`] to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ArriveOut {
    /// The message goes to the receive with this handle.
    Matched(u64),
    Unexpected,
    Full,
}

/// MPI matching written straight from the rules with plain vectors: every
/// search is a linear scan in posting or arrival order (MPI 4.1 §3.5), a
/// receive and a message match by context, source or ANY_SOURCE, tag or
/// ANY_TAG (§3.2.4). Handles and locations must be unique.
#[derive(Debug)]
pub(crate) struct Model {
    cap_posted: usize,
    cap_unexpected: usize,
    /// Posted receives in posting order.
    posted: Vec<(Selector, u64)>,
    /// Queued unexpected messages in arrival order.
    queued: Vec<Msg>,
    /// Messages taken by a receive or a matched probe, not yet released.
    claimed: Vec<Msg>,
}

impl Model {
    pub(crate) fn new(cap_posted: usize, cap_unexpected: usize) -> Self {
        Self {
            cap_posted,
            cap_unexpected,
            posted: Vec::new(),
            queued: Vec::new(),
            claimed: Vec::new(),
        }
    }

    pub(crate) fn post(&mut self, sel: Selector, handle: u64) -> PostOut {
        if let Some(i) = self.queued.iter().position(|m| sel.matches(&m.env)) {
            let m = self.queued.remove(i);
            self.claimed.push(m);
            return PostOut::Matched(m.loc);
        }
        if self.posted.len() == self.cap_posted {
            return PostOut::Full;
        }
        self.posted.push((sel, handle));
        PostOut::Queued
    }

    pub(crate) fn arrive(&mut self, msg: Msg) -> ArriveOut {
        if let Some(i) = self.posted.iter().position(|(s, _)| s.matches(&msg.env)) {
            return ArriveOut::Matched(self.posted.remove(i).1);
        }
        if self.queued.len() + self.claimed.len() == self.cap_unexpected {
            return ArriveOut::Full;
        }
        self.queued.push(msg);
        ArriveOut::Unexpected
    }

    /// The first-posted receive matching a message with `env`, removed:
    /// where a header goes before its message is stored.
    pub(crate) fn match_posted(&mut self, env: &Envelope) -> Option<u64> {
        let i = self.posted.iter().position(|(s, _)| s.matches(env))?;
        Some(self.posted.remove(i).1)
    }

    /// Whether the receive with this handle was still posted (and is now
    /// cancelled).
    pub(crate) fn cancel(&mut self, handle: u64) -> bool {
        let found = self.posted.iter().position(|(_, h)| *h == handle);
        found.map(|i| self.posted.remove(i)).is_some()
    }

    pub(crate) fn probe(&self, sel: Selector) -> Option<Msg> {
        self.queued.iter().find(|m| sel.matches(&m.env)).copied()
    }

    pub(crate) fn claim(&mut self, loc: u64) -> Option<Msg> {
        let i = self.queued.iter().position(|m| m.loc == loc)?;
        let m = self.queued.remove(i);
        self.claimed.push(m);
        Some(m)
    }

    pub(crate) fn release(&mut self, loc: u64) -> Option<Msg> {
        if let Some(i) = self.queued.iter().position(|m| m.loc == loc) {
            return Some(self.queued.remove(i));
        }
        let i = self.claimed.iter().position(|m| m.loc == loc)?;
        Some(self.claimed.remove(i))
    }

    pub(crate) fn posted_len(&self) -> usize {
        self.posted.len()
    }

    pub(crate) fn unexpected_len(&self) -> usize {
        self.queued.len() + self.claimed.len()
    }

    pub(crate) fn posted_handles(&self) -> impl Iterator<Item = u64> + '_ {
        self.posted.iter().map(|(_, h)| *h)
    }
}
