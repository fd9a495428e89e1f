//! A message given as several host buffers (a gather list), so a caller
//! can send a header and a payload that live apart as one message without
//! first copying them together.

use crate::error::{Error, Result};

/// The concatenation of `parts`, read without copying it together.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Gather<'a> {
    parts: &'a [&'a [u8]],
}

impl<'a> Gather<'a> {
    pub(crate) fn new(parts: &'a [&'a [u8]]) -> Self {
        Self { parts }
    }

    /// Total length of all parts.
    pub(crate) fn len(&self) -> usize {
        self.parts.iter().map(|p| p.len()).sum()
    }

    /// Calls `f` on the pieces that make up bytes `[from, from + len)`, in
    /// order.
    ///
    /// # Errors
    ///
    /// [`Error::BadArgument`] if the range leaves the data (nothing is
    /// passed to `f` then); otherwise the first error of `f`.
    pub(crate) fn for_each(
        &self,
        from: usize,
        len: usize,
        mut f: impl FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        if from.checked_add(len).is_none_or(|end| end > self.len()) {
            return Err(Error::BadArgument(format!(
                "{len} bytes at {from} of a {}-byte message",
                self.len()
            )));
        }
        let (mut skip, mut left) = (from, len);
        for p in self.parts {
            if left == 0 {
                break;
            }
            if skip >= p.len() {
                skip -= p.len();
                continue;
            }
            let take = (p.len() - skip).min(left);
            f(&p[skip..skip + take])?;
            left -= take;
            skip = 0;
        }
        Ok(())
    }

    /// Copies bytes `[from, from + out.len())` into `out`.
    pub(crate) fn copy_to(&self, from: usize, out: &mut [u8]) -> Result<()> {
        let mut at = 0;
        self.for_each(from, out.len(), |b| {
            out[at..at + b.len()].copy_from_slice(b);
            at += b.len();
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_across_parts() {
        let parts: [&[u8]; 4] = [b"ab", b"", b"cde", b"f"];
        let g = Gather::new(&parts);
        assert_eq!(g.len(), 6);
        for from in 0..=6 {
            for len in 0..=6 - from {
                let mut out = vec![0u8; len];
                g.copy_to(from, &mut out).unwrap();
                assert_eq!(&out[..], &b"abcdef"[from..from + len]);
            }
        }
        let mut out = [0u8; 2];
        assert!(matches!(g.copy_to(5, &mut out), Err(Error::BadArgument(_))));
        assert!(g.for_each(usize::MAX, 2, |_| Ok(())).is_err());
    }
}
