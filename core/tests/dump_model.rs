//! The dump area's allocator under random allocations and frees whose
//! sizes reach the whole area, with many zero-length regions and forced
//! wrap-arounds: its invariants on their own, then against the byte-owner
//! reference model of `dump_ref` (the `dump` fuzz target runs the same).

mod dump_ref;

use dump_ref::{check, Op};
use proptest::prelude::*;

/// An area size, an alignment (3 stands for "not a power of two", which
/// counts as 1) and a record count, then operations sized for that area.
fn case() -> impl Strategy<Value = (usize, u64, u64, Vec<Op>)> {
    (
        1usize..=8,
        0u64..=320,
        prop::sample::select(vec![1u64, 3, 8, 64]),
    )
        .prop_flat_map(|(records, size, align)| {
            let len = prop_oneof![
                3 => Just(0),
                3 => 1..=size / 4 + 1,
                3 => size / 4..=size,
                2 => Just(size),
                1 => size + 1..=size + 8,
            ];
            let op = prop_oneof![
                6 => len.prop_map(Op::Alloc),
                3 => any::<usize>().prop_map(Op::Free),
                2 => Just(Op::FreeOldest),
                1 => (0u32..12).prop_map(Op::FreeRaw),
            ];
            (
                Just(records),
                Just(size),
                Just(align),
                prop::collection::vec(op, 1..120),
            )
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Payloads never overlap, stay inside the area and aligned, `used()`
    /// stays within the area, an area holding no byte has room.
    #[test]
    fn invariants_hold((records, size, align, ops) in case()) {
        check(records, size, align, &ops, false);
    }

    /// Same offsets, same refusals and `used()` equal to the bytes held,
    /// as the reference model.
    #[test]
    fn agrees_with_the_reference_model((records, size, align, ops) in case()) {
        check(records, size, align, &ops, true);
    }
}

/// The sequence, through the model: a stored message, a stored
/// empty one, the first received, then more messages.
#[test]
fn empty_region_left_alone() {
    let ops = [
        Op::Alloc(96),
        Op::Alloc(0),
        Op::FreeOldest,
        Op::Alloc(200),
        Op::Alloc(96),
        Op::Free(1),
        Op::Alloc(48),
    ];
    check(4, 256, 8, &ops, false);
    check(4, 256, 8, &ops, true);
}
