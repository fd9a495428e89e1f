//! Fuzzes the dump area's allocator with the driver and byte-owner
//! reference model of the tests (`core/tests/dump_ref`): every live
//! region disjoint from every other (skipped tails included), inside the
//! area and aligned, `used() <= size`, and, on small areas, the same
//! offsets, refusals and `used()` as the model.
//!
//! Input: `[records, size_hi, size_lo, align, (kind, arg)*]`. Lengths are
//! scaled to the area so that whole-area, near-full, zero-length and
//! too-long requests are all common. With the top bit of `records`, the
//! area is near `u64::MAX` bytes and only the invariants are checked
//! (the model keeps a byte map): overflow must be refused, not panic.
#![no_main]

#[path = "../../tests/dump_ref/mod.rs"]
mod dump_ref;

use dump_ref::{check, Op};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [r, hi, lo, a, rest @ ..] = data else {
        return;
    };
    let records = usize::from(r % 9);
    let huge = r & 0x80 != 0;
    let size = if huge {
        u64::MAX - u64::from(u16::from_be_bytes([*hi, *lo]))
    } else {
        u64::from(u16::from_be_bytes([*hi, *lo]) % 1025)
    };
    // 0 and 3 are not powers of two (they count as 1); 64 is the kernel's.
    let align = [0, 1, 2, 3, 8, 16, 64, 4096][usize::from(a % 8)];
    let ops: Vec<Op> = rest
        .chunks_exact(2)
        .map(|op| {
            let arg = u64::from(op[1]);
            match op[0] % 10 {
                0 => Op::Alloc(0),
                1 => Op::Alloc(arg % (size / 8 + 1)),
                2 => Op::Alloc((u128::from(size) * u128::from(arg) / 255) as u64),
                3 => Op::Alloc(size.saturating_sub(arg % 16)),
                4 => Op::Alloc(size.saturating_add(1 + arg % 4)),
                5 | 6 => Op::Free(usize::from(op[1])),
                7 | 8 => Op::FreeOldest,
                _ => Op::FreeRaw(u32::from(op[1] % 16)),
            }
        })
        .collect();
    check(records, size, align, &ops, !huge);
});
