//! The sort's loops over every key, kept together on one page of code.
//!
//! Under QEMU's TCG a translated block jumps straight into the next only
//! when both lie on the same guest page; a jump to another page goes
//! through a hash lookup. A loop that straddles a page boundary pays that
//! on every pass, and the linker decides where the loop lands: the same
//! commit built at two checkout paths ran the IS at 35 and at 65 Mop/s
//! (`docs/results.md`, "The Rust IS's speed depends on where its code
//! lands"). So these loops live in a section of their own, which starts on
//! a page boundary and is shorter than a page, and [`check_placement`]
//! says when that no longer holds.

/// The section holding the loops. A C identifier, so that the linker
/// defines `__start_` and `__stop_` symbols around it.
macro_rules! hot_section {
    () => {
        "o2g_is_hot"
    };
}

/// Size of a guest page, the unit TCG chains translated blocks within.
const PAGE: usize = 4096;

// A zero-length piece of the section that asks for page alignment: the
// linker gives the whole output section the largest alignment of its
// pieces. "R" (SHF_GNU_RETAIN) keeps `--gc-sections` from dropping it, as
// nothing refers to it.
#[cfg(target_os = "linux")]
core::arch::global_asm!(
    concat!(".pushsection ", hot_section!(), ",\"axR\",@progbits"),
    ".balign 4096",
    ".popsection",
);

/// Counts the keys per bucket, bucket `(k >> shift) % count.len()`.
#[inline(never)]
#[link_section = hot_section!()]
pub fn count_per_bucket(keys: &[i32], shift: u32, count: &mut [i32; super::sort::MAX_BUCKETS]) {
    for &k in keys {
        count[bucket(k, shift)] += 1;
    }
}

/// Writes the keys to `out` grouped by bucket; `next[b]` is where bucket
/// `b`'s next key goes, and ends past its last.
#[inline(never)]
#[link_section = hot_section!()]
pub fn group_by_bucket(
    keys: &[i32],
    shift: u32,
    next: &mut [usize; super::sort::MAX_BUCKETS],
    out: &mut [i32],
) {
    for &k in keys {
        let b = bucket(k, shift);
        out[next[b]] = k;
        next[b] += 1;
    }
}

/// Adds one to `counts[k - min_key]` for every key `k`.
#[inline(never)]
#[link_section = hot_section!()]
pub fn count_values(keys: &[i32], min_key: i32, counts: &mut [i32]) {
    for &k in keys {
        counts[(k - min_key) as usize] += 1;
    }
}

/// Turns per-value counts into the number of keys up to each value.
#[inline(never)]
#[link_section = hot_section!()]
pub fn running_sum(counts: &mut [i32]) {
    let mut below = 0;
    for c in counts.iter_mut() {
        below += *c;
        *c = below;
    }
}

/// A key's bucket. Keys lie in 0..max_key, so `k >> shift` is below the
/// bucket count; masking it to the arrays' fixed length changes nothing
/// but lets the compiler drop the bounds checks, which under TCG made
/// these loops about 30% longer than the C version's.
#[inline(always)]
fn bucket(k: i32, shift: u32) -> usize {
    (k >> shift) as usize % super::sort::MAX_BUCKETS
}

/// Whether the loops above lie on one page of this program's code, in a
/// section that starts on a page boundary: `Err` says where they lie
/// instead.
pub fn check_placement() -> Result<(), String> {
    let (start, end) = section_bounds();
    let loops = [
        ("count_per_bucket", count_per_bucket as *const () as usize),
        ("group_by_bucket", group_by_bucket as *const () as usize),
        ("count_values", count_values as *const () as usize),
        ("running_sum", running_sum as *const () as usize),
    ];
    for (name, address) in loops {
        if !(start..end).contains(&address) {
            return Err(format!(
                "the sort's loop {name} at {address:#x} is outside section {} ({start:#x}-{end:#x})",
                hot_section!()
            ));
        }
    }
    // The loops fit on one page only because the section starts on one:
    // that the section does not straddle a page by chance is not enough.
    if start % PAGE != 0 {
        return Err(format!(
            "section {} starts at {start:#x}, not on a page boundary: the sort's loops may straddle one",
            hot_section!()
        ));
    }
    if end - start > PAGE {
        return Err(format!(
            "section {} ({start:#x}-{end:#x}) is longer than a page: the sort's loops straddle a page boundary",
            hot_section!()
        ));
    }
    Ok(())
}

/// The addresses where the section starts and ends.
#[cfg(target_os = "linux")]
fn section_bounds() -> (usize, usize) {
    extern "C" {
        static __start_o2g_is_hot: u8;
        static __stop_o2g_is_hot: u8;
    }
    (
        core::ptr::addr_of!(__start_o2g_is_hot) as usize,
        core::ptr::addr_of!(__stop_o2g_is_hot) as usize,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loops_lie_on_one_page() {
        check_placement().unwrap();
    }

    #[test]
    fn loops_count_group_and_sum() {
        let keys = [5, 1, 7, 1, 3];
        let mut count = [0; super::super::sort::MAX_BUCKETS];
        count_per_bucket(&keys, 1, &mut count);
        assert_eq!(&count[..4], &[2, 1, 1, 1]);
        let mut next = [0; super::super::sort::MAX_BUCKETS];
        next[..4].copy_from_slice(&[0, 2, 3, 4]);
        let mut out = [0; 5];
        group_by_bucket(&keys, 1, &mut next, &mut out);
        assert_eq!(out, [1, 1, 3, 5, 7]);
        let mut counts = [0; 7];
        count_values(&keys, 1, &mut counts);
        assert_eq!(counts, [2, 0, 1, 0, 1, 0, 1]);
        running_sum(&mut counts);
        assert_eq!(counts, [2, 2, 3, 3, 4, 4, 5]);
    }
}
