//! A receive's or probe's [`Selector`] (o2g-core's) in the ABI's encoding.

use crate::{abi, Error, Result};
use o2g_core::proto::envelope::{Selector, SourceSel, TagSel};

/// A [`Selector`] in the ABI's encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Encoded {
    pub(crate) source: u32,
    pub(crate) tag: u32,
    pub(crate) context: u32,
}

/// `sel` in the ABI encoding, with the wildcards as the ANY sentinels.
///
/// # Errors
///
/// [`Error::InvalidArgument`] for an exact source or tag of `u32::MAX` (the
/// sentinel given explicitly) or a source rank at or above
/// [`abi::O2G_MAX_RANK`].
pub(crate) fn encode(sel: Selector) -> Result<Encoded> {
    let source =
        match sel.source {
            SourceSel::Any => abi::O2G_ANY_SOURCE,
            SourceSel::Rank(abi::O2G_ANY_SOURCE) => return Err(Error::InvalidArgument(
                "source u32::MAX is the ANY_SOURCE sentinel: pass SourceSel::Any to accept any \
                 source"
                    .into(),
            )),
            SourceSel::Rank(s) if s >= abi::O2G_MAX_RANK => {
                return Err(Error::InvalidArgument(format!(
                    "source rank {s} is not below the maximum rank {}",
                    abi::O2G_MAX_RANK
                )))
            }
            SourceSel::Rank(s) => s,
        };
    let tag = match sel.tag {
        TagSel::Any => abi::O2G_ANY_TAG,
        TagSel::Tag(abi::O2G_ANY_TAG) => {
            return Err(Error::InvalidArgument(
                "tag u32::MAX is the ANY_TAG sentinel: pass TagSel::Any to accept any tag".into(),
            ))
        }
        TagSel::Tag(t) => t,
    };
    Ok(Encoded {
        source,
        tag,
        context: sel.context,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn none_maps_to_the_any_sentinels() {
        let e = encode(Selector::any(5)).unwrap();
        assert_eq!(
            e,
            Encoded {
                source: abi::O2G_ANY_SOURCE,
                tag: abi::O2G_ANY_TAG,
                context: 5
            }
        );
        let e = encode(Selector::new(Some(3), Some(0), 1)).unwrap();
        assert_eq!((e.source, e.tag, e.context), (3, 0, 1));
        let top = Selector::new(Some(abi::O2G_MAX_RANK - 1), Some(u32::MAX - 1), 0);
        assert_eq!(encode(top).unwrap().tag, u32::MAX - 1);
    }

    #[test]
    fn explicit_sentinels_are_refused() {
        let e = encode(Selector::new(Some(u32::MAX), None, 0)).unwrap_err();
        assert!(e.to_string().contains("ANY_SOURCE"), "{e}");
        let e = encode(Selector::new(None, Some(u32::MAX), 0)).unwrap_err();
        assert!(e.to_string().contains("ANY_TAG"), "{e}");
        assert_eq!(e.raw_os_error(), Some(libc::EINVAL));
    }

    #[test]
    fn ranks_beyond_the_maximum_are_refused() {
        let e = encode(Selector::new(Some(abi::O2G_MAX_RANK), None, 0)).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    }
}
