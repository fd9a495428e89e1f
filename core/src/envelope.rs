//! The MPI message envelope and the selectors a receive matches it with.
//!
//! MPI 4.1 §3.2.3 defines a message's envelope as (source, destination, tag,
//! communicator). The destination is implicit here: one matching engine
//! serves one process. The communicator is represented by its *context id*,
//! a number both sides agree on when the communicator is created, so that
//! traffic on different communicators never matches (§3.2.3, and the
//! contexts of §7.2.2).
//!
//! A receive selects by source rank or `MPI_ANY_SOURCE` and by tag or
//! `MPI_ANY_TAG`, but never by a wildcard communicator (§3.2.4).

/// A process rank within a communicator (MPI `int`, never negative on the
/// wire).
pub type Rank = u32;

/// A message tag (MPI `int`; valid user tags are `0..=MPI_TAG_UB`).
pub type Tag = u32;

/// A communicator's context id; messages only match within one context.
pub type ContextId = u32;

/// Bit 31 of a message's context field marks a synchronous-mode send
/// (`MPI_Ssend`, §3.4): the receiving library acknowledges the message as
/// soon as a receive matches it. The bit is not part of the communicator's
/// identity: matching ignores it, so context ids have 31 bits.
pub const SYNC_FLAG: ContextId = 1 << 31;

/// The envelope of one message as it travels: who sent it, with which tag,
/// on which communicator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Envelope {
    /// Rank of the sender in the communicator.
    pub source: Rank,
    /// The message tag.
    pub tag: Tag,
    /// The communicator's context id.
    pub context: ContextId,
}

impl Envelope {
    /// Whether the sender waits for an acknowledgement of the match
    /// ([`SYNC_FLAG`]).
    pub const fn is_sync(&self) -> bool {
        self.context & SYNC_FLAG != 0
    }

    /// The envelope as matching sees it: without [`SYNC_FLAG`].
    pub const fn matching_key(&self) -> Self {
        Self {
            context: self.context & !SYNC_FLAG,
            ..*self
        }
    }
}

/// The source a receive accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SourceSel {
    /// Only messages from this rank.
    Rank(Rank),
    /// `MPI_ANY_SOURCE`: messages from any rank.
    Any,
}

/// The tag a receive accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TagSel {
    /// Only messages with this tag.
    Tag(Tag),
    /// `MPI_ANY_TAG`: messages with any tag.
    Any,
}

/// What a receive or probe accepts: a source, a tag and one context.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Selector {
    /// Accepted source.
    pub source: SourceSel,
    /// Accepted tag.
    pub tag: TagSel,
    /// The context; there is no wildcard for it.
    pub context: ContextId,
}

impl Selector {
    /// Accepts messages from `source` with `tag` in `context`; `None`
    /// accepts any source (`MPI_ANY_SOURCE`) or any tag (`MPI_ANY_TAG`).
    pub const fn new(source: Option<Rank>, tag: Option<Tag>, context: ContextId) -> Self {
        Self {
            source: match source {
                Some(r) => SourceSel::Rank(r),
                None => SourceSel::Any,
            },
            tag: match tag {
                Some(t) => TagSel::Tag(t),
                None => TagSel::Any,
            },
            context,
        }
    }

    /// Accepts any source and any tag in `context`.
    pub const fn any(context: ContextId) -> Self {
        Self::new(None, None, context)
    }

    /// A selector for exactly this envelope.
    pub const fn exact(env: Envelope) -> Self {
        Self {
            source: SourceSel::Rank(env.source),
            tag: TagSel::Tag(env.tag),
            context: env.context,
        }
    }

    /// Whether a message with envelope `env` satisfies this selector.
    pub const fn matches(&self, env: &Envelope) -> bool {
        let source = match self.source {
            SourceSel::Rank(r) => r == env.source,
            SourceSel::Any => true,
        };
        let tag = match self.tag {
            TagSel::Tag(t) => t == env.tag,
            TagSel::Any => true,
        };
        source && tag && (self.context ^ env.context) & !SYNC_FLAG == 0
    }

    /// The single envelope this selector accepts, if it has no wildcard.
    pub const fn as_exact(&self) -> Option<Envelope> {
        match (self.source, self.tag) {
            (SourceSel::Rank(source), TagSel::Tag(tag)) => Some(Envelope {
                source,
                tag,
                context: self.context,
            }),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ENV: Envelope = Envelope {
        source: 3,
        tag: 7,
        context: 1,
    };

    #[test]
    fn wildcards_match_everything_but_the_context() {
        let any = Selector {
            source: SourceSel::Any,
            tag: TagSel::Any,
            context: 1,
        };
        assert!(any.matches(&ENV));
        assert!(!Selector { context: 2, ..any }.matches(&ENV));
        assert_eq!(any.as_exact(), None);
    }

    #[test]
    fn options_build_the_same_selectors_as_the_enums() {
        assert_eq!(Selector::new(Some(3), Some(7), 1), Selector::exact(ENV));
        let any = Selector::any(1);
        assert_eq!((any.source, any.tag), (SourceSel::Any, TagSel::Any));
        assert_eq!(Selector::new(None, Some(7), 1).tag, TagSel::Tag(7));
    }

    #[test]
    fn exact_selector_round_trips() {
        let sel = Selector::exact(ENV);
        assert!(sel.matches(&ENV));
        assert!(!sel.matches(&Envelope { tag: 8, ..ENV }));
        assert!(!sel.matches(&Envelope { source: 4, ..ENV }));
        assert_eq!(sel.as_exact(), Some(ENV));
    }
}
