//! Twin/diff encoding: what a WB sends home. Pure byte logic, no shared
//! memory.
//!
//! A diff lists the *runs* of bytes where a cached page differs from its
//! twin (the copy taken at CACHE time):
//!
//! ```text
//! run count u32, then per run: offset u16 | length u16 | the new bytes
//! ```
//!
//! Runs are never merged across unchanged bytes, even one: an unchanged
//! byte sent home would overwrite what another writer of the same page
//! changed there, and losing that is what twins and diffs exist to avoid
//! (the multiple-writer property). The largest diff of a 4 KiB page
//! (2048 runs, one of two bytes, the others of one, split by single
//! unchanged bytes) is [`max_encoded`] bytes.
//!
//! A diff arriving from another node is untrusted: [`runs`] validates
//! every run (inside the page, in increasing order, not overlapping, the
//! encoding exactly consumed) before anything is applied.

use crate::error::{Error, Result};

/// Bytes of a run header.
const RUN_HEADER: usize = 4;

/// The largest encoding of a diff of a `page_len`-byte page.
///
/// `r` runs cost `4 r` header bytes plus the changed bytes, at most
/// `page_len - (r - 1)` (runs are separated by unchanged bytes), so the
/// cost grows with `r`, which is at most `ceil(page_len / 2)`.
pub const fn max_encoded(page_len: usize) -> usize {
    let runs = page_len.div_ceil(2);
    if runs == 0 {
        4
    } else {
        4 + RUN_HEADER * runs + page_len - (runs - 1)
    }
}

/// What a diff holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DiffStats {
    /// Runs of changed bytes.
    pub runs: usize,
    /// Changed bytes.
    pub dirty_bytes: usize,
    /// Bytes of the encoding (what travels to the home).
    pub encoded_bytes: usize,
}

/// Encodes the difference of `page` against `twin` into `out` (cleared
/// first).
///
/// # Panics
///
/// If the two differ in length or exceed 64 KiB (offsets are 16-bit).
pub fn encode(page: &[u8], twin: &[u8], out: &mut Vec<u8>) -> DiffStats {
    assert_eq!(page.len(), twin.len(), "page and twin differ in size");
    assert!(
        page.len() <= 1 << 16,
        "pages above 64 KiB do not fit u16 offsets"
    );
    out.clear();
    out.extend_from_slice(&[0; 4]);
    let mut stats = DiffStats::default();
    let n = page.len();
    let mut i = 0;
    while i < n {
        // Skip equal 8-byte words quickly, then equal bytes.
        while i + 8 <= n && page[i..i + 8] == twin[i..i + 8] {
            i += 8;
        }
        while i < n && page[i] == twin[i] {
            i += 1;
        }
        if i == n {
            break;
        }
        let start = i;
        while i < n && page[i] != twin[i] {
            i += 1;
        }
        let len = i - start;
        out.extend_from_slice(&(start as u16).to_le_bytes());
        out.extend_from_slice(&(len as u16).to_le_bytes());
        out.extend_from_slice(&page[start..i]);
        stats.runs += 1;
        stats.dirty_bytes += len;
    }
    out[..4].copy_from_slice(&(stats.runs as u32).to_le_bytes());
    stats.encoded_bytes = out.len();
    stats
}

/// The validated runs of `encoded` for a page of `page_len` bytes:
/// `(offset, new bytes)` in increasing offset order.
///
/// # Errors
///
/// [`Error::Corrupt`] for any malformed encoding.
pub fn runs(encoded: &[u8], page_len: usize) -> Result<Vec<(usize, &[u8])>> {
    let bad = |why: &str| Err(Error::Corrupt(format!("diff: {why}")));
    let Some(count) = encoded.get(..4) else {
        return bad("shorter than its run count");
    };
    let count = u32::from_le_bytes(count.try_into().expect("4 bytes")) as usize;
    if count > page_len.div_ceil(2) {
        return bad("more runs than a page can have");
    }
    let mut out = Vec::with_capacity(count);
    let mut at = 4;
    let mut end_of_last = 0;
    for _ in 0..count {
        let Some(h) = encoded.get(at..at + RUN_HEADER) else {
            return bad("truncated run header");
        };
        let off = usize::from(u16::from_le_bytes([h[0], h[1]]));
        let len = usize::from(u16::from_le_bytes([h[2], h[3]]));
        at += RUN_HEADER;
        if len == 0 || off < end_of_last || off + len > page_len {
            return bad("run empty, out of order or outside the page");
        }
        let Some(bytes) = encoded.get(at..at + len) else {
            return bad("truncated run");
        };
        out.push((off, bytes));
        at += len;
        end_of_last = off + len;
    }
    if at != encoded.len() {
        return bad("trailing bytes");
    }
    Ok(out)
}

/// Applies `encoded` to `page`.
///
/// # Errors
///
/// [`Error::Corrupt`] for a malformed diff; `page` is then unchanged.
pub fn apply(encoded: &[u8], page: &mut [u8]) -> Result<()> {
    for (off, bytes) in runs(encoded, page.len())? {
        page[off..off + bytes.len()].copy_from_slice(bytes);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn runs_are_exact_and_never_merged() {
        let twin = vec![0u8; 64];
        let mut page = twin.clone();
        page[3] = 1;
        page[5] = 2; // byte 4 unchanged between two runs
        page[60..64].copy_from_slice(&[9; 4]);
        let mut enc = Vec::new();
        let s = encode(&page, &twin, &mut enc);
        assert_eq!((s.runs, s.dirty_bytes), (3, 6));
        let r = runs(&enc, 64).unwrap();
        assert_eq!(
            r,
            vec![(3, &[1u8][..]), (5, &[2u8][..]), (60, &[9u8; 4][..])]
        );
        // Another writer's byte 4 at home survives.
        let mut home = twin.clone();
        home[4] = 77;
        apply(&enc, &mut home).unwrap();
        assert_eq!((home[3], home[4], home[5]), (1, 77, 2));
    }

    #[test]
    fn the_worst_case_fits_the_bound() {
        let twin = vec![0u8; 4096];
        let mut page: Vec<u8> = (0..4096).map(|i| (i % 2 == 0) as u8).collect();
        let mut enc = Vec::new();
        let s = encode(&page, &twin, &mut enc);
        assert_eq!((s.runs, s.dirty_bytes), (2048, 2048));
        // One more changed byte at the end: the largest diff.
        page[4095] = 1;
        let s = encode(&page, &twin, &mut enc);
        assert_eq!((s.runs, s.dirty_bytes), (2048, 2049));
        assert_eq!(enc.len(), max_encoded(4096));
        assert_eq!(max_encoded(2), 10);
        assert_eq!(max_encoded(0), 4);
    }

    #[test]
    fn malformed_diffs_are_refused() {
        let ok = {
            let mut e = Vec::new();
            encode(&[1, 2, 3, 4], &[0, 2, 0, 4], &mut e);
            e
        };
        assert!(runs(&ok, 4).is_ok());
        assert!(runs(&ok, 2).is_err(), "run outside a smaller page");
        assert!(runs(&ok[..ok.len() - 1], 4).is_err());
        let mut trailing = ok.clone();
        trailing.push(0);
        assert!(runs(&trailing, 4).is_err());
        // Out of order: second run before the first.
        let bad = [2, 0, 0, 0, 2, 0, 1, 0, 7, 0, 0, 1, 0, 7];
        assert!(runs(&bad, 4).is_err());
        assert!(runs(&[0xff, 0xff, 0xff, 0xff], 4096).is_err());
        assert!(runs(&[], 4096).is_err());
    }

    proptest! {
        #[test]
        fn applying_the_diff_to_the_twin_gives_the_page(
            twin in proptest::collection::vec(any::<u8>(), 0..600),
            edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..80),
        ) {
            let mut page = twin.clone();
            for (i, b) in edits {
                if !page.is_empty() {
                    let n = page.len();
                    page[i % n] = b;
                }
            }
            let mut enc = Vec::new();
            let s = encode(&page, &twin, &mut enc);
            let changed = page.iter().zip(&twin).filter(|(a, b)| a != b).count();
            prop_assert_eq!(s.dirty_bytes, changed);
            prop_assert!(enc.len() <= max_encoded(page.len()));
            let mut rebuilt = twin.clone();
            apply(&enc, &mut rebuilt).unwrap();
            prop_assert_eq!(rebuilt, page);
        }
    }
}
