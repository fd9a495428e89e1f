//! Which messages a receive or a probe accepts.

use crate::{abi, Error, Result};

/// The envelope a receive or probe accepts: a source rank (or any), a tag
/// (or any), and a communicator context.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Selector {
    /// The source rank, below [`abi::O2G_MAX_RANK`]; `None` accepts any
    /// (`MPI_ANY_SOURCE`).
    pub source: Option<u32>,
    /// The tag; `None` accepts any (`MPI_ANY_TAG`). `u32::MAX` is reserved
    /// for "any" and refused as an exact tag.
    pub tag: Option<u32>,
    /// The communicator's context id.
    pub context: u32,
}

/// A [`Selector`] in the ABI's encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Encoded {
    pub(crate) source: u32,
    pub(crate) tag: u32,
    pub(crate) context: u32,
}

impl Selector {
    /// Accepts messages from `source` with `tag` in `context`.
    pub const fn new(source: Option<u32>, tag: Option<u32>, context: u32) -> Self {
        Self {
            source,
            tag,
            context,
        }
    }

    /// Accepts any source and any tag in `context`.
    pub const fn any(context: u32) -> Self {
        Self::new(None, None, context)
    }

    /// The ABI encoding, with `None` as the ANY sentinels.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for `Some(u32::MAX)` (the sentinel given
    /// explicitly) or a source rank at or above [`abi::O2G_MAX_RANK`].
    pub(crate) fn encode(self) -> Result<Encoded> {
        let source =
            match self.source {
                None => abi::O2G_ANY_SOURCE,
                Some(abi::O2G_ANY_SOURCE) => return Err(Error::InvalidArgument(
                    "source u32::MAX is the ANY_SOURCE sentinel: pass None to accept any source"
                        .into(),
                )),
                Some(s) if s >= abi::O2G_MAX_RANK => {
                    return Err(Error::InvalidArgument(format!(
                        "source rank {s} is not below the maximum rank {}",
                        abi::O2G_MAX_RANK
                    )))
                }
                Some(s) => s,
            };
        let tag = match self.tag {
            None => abi::O2G_ANY_TAG,
            Some(abi::O2G_ANY_TAG) => {
                return Err(Error::InvalidArgument(
                    "tag u32::MAX is the ANY_TAG sentinel: pass None to accept any tag".into(),
                ))
            }
            Some(t) => t,
        };
        Ok(Encoded {
            source,
            tag,
            context: self.context,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn none_maps_to_the_any_sentinels() {
        let e = Selector::any(5).encode().unwrap();
        assert_eq!(
            e,
            Encoded {
                source: abi::O2G_ANY_SOURCE,
                tag: abi::O2G_ANY_TAG,
                context: 5
            }
        );
        let e = Selector::new(Some(3), Some(0), 1).encode().unwrap();
        assert_eq!((e.source, e.tag, e.context), (3, 0, 1));
        let top = Selector::new(Some(abi::O2G_MAX_RANK - 1), Some(u32::MAX - 1), 0);
        assert_eq!(top.encode().unwrap().tag, u32::MAX - 1);
    }

    #[test]
    fn explicit_sentinels_are_refused() {
        let e = Selector::new(Some(u32::MAX), None, 0).encode().unwrap_err();
        assert!(e.to_string().contains("ANY_SOURCE"), "{e}");
        let e = Selector::new(None, Some(u32::MAX), 0).encode().unwrap_err();
        assert!(e.to_string().contains("ANY_TAG"), "{e}");
        assert_eq!(e.raw_os_error(), Some(libc::EINVAL));
    }

    #[test]
    fn ranks_beyond_the_maximum_are_refused() {
        let e = Selector::new(Some(abi::O2G_MAX_RANK), None, 0)
            .encode()
            .unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    }
}
