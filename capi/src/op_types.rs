//! Reductions on the predefined types whose elements are not one Rust
//! number (MPI 5.0 §6.9.2, §6.9.4): the value-index pairs of
//! `MPI_MINLOC` / `MPI_MAXLOC`, the C and Fortran complex types, Fortran's
//! `LOGICAL`s and `long double` (x86-64's 80-bit x87 format, computed
//! with the x87 unit itself).
//! They are recognised by handle value, so a derived type over them is
//! not (its reductions fail with `MPI_ERR_OP`).
//!
//! Layouts (x86-64 System V, as C lays out the pair structs the standard
//! describes): `MPI_FLOAT_INT` {float @0, int @4} 8 bytes,
//! `MPI_DOUBLE_INT` {double @0, int @8} 16, `MPI_LONG_INT` {long @0, int
//! @8} 16, `MPI_2INT` {int @0, int @4} 8, `MPI_SHORT_INT` {short @0, int
//! @4} 8, `MPI_LONG_DOUBLE_INT` {long double @0, int @16} 32; complex
//! types are {re, im} of their float type (`long double _Complex`: two
//! 16-byte slots). Padding bytes of the inout buffer are left as they are.
//! Fortran's pairs are two of one type: `MPI_2INTEGER` {int, int} (as
//! `MPI_2INT`), `MPI_2REAL` {real, real}, `MPI_2DOUBLE_PRECISION` {double,
//! double}, the index compared as a number of that type. A Fortran
//! `LOGICAL` is an integer of its size, `.TRUE.` 1 and `.FALSE.` 0
//! (gfortran).

use crate::op::{Builtin, Reducer};

/// A predefined type of this file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Special {
    /// A value-index pair: the value's kind, and the element's extent
    /// and index offset.
    Pair(Value, usize, usize),
    /// A Fortran pair: value and index both of this kind and size.
    SamePair(Value, usize),
    /// A Fortran `LOGICAL` of this many bytes.
    Logical(usize),
    /// `float _Complex` (and `MPI_CXX_FLOAT_COMPLEX`).
    ComplexF32,
    /// `double _Complex` (and `MPI_CXX_DOUBLE_COMPLEX`).
    ComplexF64,
    /// `long double _Complex` (and `MPI_CXX_LONG_DOUBLE_COMPLEX`).
    ComplexF80,
    /// `long double`.
    F80,
}

/// The value of a pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Value {
    F32,
    F64,
    I64,
    I32,
    I16,
    F80,
}

/// The special type with handle value `v`, if it is one.
pub(crate) fn special(v: usize) -> Option<Special> {
    use Special::*;
    Some(match v {
        0x212 | 0x213 | 0x21b | 0x2db => ComplexF32,
        0x216 | 0x217 | 0x21d | 0x2e3 => ComplexF64,
        0x218 | 0x2d0 => Logical(4),
        0x2c0 => Logical(1),
        0x2c8 => Logical(2),
        0x2d8 => Logical(8),
        0x230 => SamePair(Value::F32, 4),
        0x231 => SamePair(Value::F64, 8),
        0x232 => Pair(Value::I32, 8, 4),
        0x224 | 0x225 => ComplexF80,
        0x220 => F80,
        0x228 => Pair(Value::F32, 8, 4),
        0x229 => Pair(Value::F64, 16, 8),
        0x22a => Pair(Value::I64, 16, 8),
        0x22b => Pair(Value::I32, 8, 4),
        0x22c => Pair(Value::I16, 8, 4),
        0x22d => Pair(Value::F80, 32, 16),
        _ => return None,
    })
}

/// `op` on elements of `t` as a byte-level reducer; `None` where §6.9.2
/// does not allow the pair (or o2g cannot compute it: long double off
/// x86-64).
pub(crate) fn reducer(op: Builtin, t: Special) -> Option<Reducer> {
    use Builtin::*;
    match (t, op) {
        (Special::Pair(v, extent, at), Minloc | Maxloc) => {
            if v == Value::F80 && !x87::AVAILABLE {
                return None;
            }
            let max = op == Maxloc;
            Some(Box::new(move |a, b| {
                for (x, y) in a.chunks_exact(extent).zip(b.chunks_exact_mut(extent)) {
                    loc(v, max, at, x, y);
                }
            }))
        }
        (Special::SamePair(v, w), Minloc | Maxloc) => {
            let max = op == Maxloc;
            Some(Box::new(move |a, b| {
                for (x, y) in a.chunks_exact(2 * w).zip(b.chunks_exact_mut(2 * w)) {
                    same_pair_loc(v, w, max, x, y);
                }
            }))
        }
        (Special::Logical(w), Land | Lor | Lxor) => Some(Box::new(move |a, b| {
            let truth = |s: &[u8]| s.iter().any(|&b| b != 0);
            for (x, y) in a.chunks_exact(w).zip(b.chunks_exact_mut(w)) {
                let (p, q) = (truth(x), truth(y));
                let r = match op {
                    Land => p && q,
                    Lor => p || q,
                    _ => p != q,
                };
                y.fill(0);
                // 1 in the integer's lowest byte (little-endian x86-64).
                y[0] = u8::from(r);
            }
        })),
        (Special::ComplexF32, Sum | Prod) => Some(Box::new(move |a, b| {
            complex::<f32, 4>(op == Prod, 4, a, b, f32::from_ne_bytes, |x| x.to_ne_bytes())
        })),
        (Special::ComplexF64, Sum | Prod) => Some(Box::new(move |a, b| {
            complex::<f64, 8>(op == Prod, 8, a, b, f64::from_ne_bytes, |x| x.to_ne_bytes())
        })),
        (Special::ComplexF80, Sum | Prod) if x87::AVAILABLE => Some(Box::new(move |a, b| {
            for (x, y) in a.chunks_exact(32).zip(b.chunks_exact_mut(32)) {
                let (xr, xi) = (ld(&x[..10]), ld(&x[16..26]));
                let (yr, yi) = (ld(&y[..10]), ld(&y[16..26]));
                let (r, i) = if op == Prod {
                    (
                        x87::sub(x87::mul(xr, yr), x87::mul(xi, yi)),
                        x87::add(x87::mul(xr, yi), x87::mul(xi, yr)),
                    )
                } else {
                    (x87::add(xr, yr), x87::add(xi, yi))
                };
                y[..10].copy_from_slice(&r);
                y[16..26].copy_from_slice(&i);
            }
        })),
        (Special::F80, Sum | Prod | Max | Min) if x87::AVAILABLE => Some(Box::new(move |a, b| {
            for (x, y) in a.chunks_exact(16).zip(b.chunks_exact_mut(16)) {
                let (p, q) = (ld(&x[..10]), ld(&y[..10]));
                let r = match op {
                    Sum => x87::add(p, q),
                    Prod => x87::mul(p, q),
                    Max if x87::greater(p, q) => p,
                    Min if x87::greater(q, p) => p,
                    _ => q,
                };
                y[..10].copy_from_slice(&r);
            }
        })),
        _ => None,
    }
}

/// `MPI_MINLOC` / `MPI_MAXLOC` of a Fortran pair `x` into `y`: as
/// [`loc`], with an index of the value's kind and width `w`.
fn same_pair_loc(v: Value, w: usize, max: bool, x: &[u8], y: &mut [u8]) {
    use std::cmp::Ordering::*;
    let take_x = match compare(v, &x[..w], &y[..w]) {
        Some(Less) => !max,
        Some(Greater) => max,
        Some(Equal) => compare(v, &x[w..], &y[w..]) == Some(Less),
        None => false,
    };
    if take_x {
        y.copy_from_slice(x);
    }
}

/// The 10 bytes of an x87 extended value.
fn ld(b: &[u8]) -> [u8; 10] {
    let mut a = [0u8; 10];
    a.copy_from_slice(b);
    a
}

/// Complex sum or product of {re, im} elements of floats of `n` bytes.
fn complex<
    F: Copy + std::ops::Add<Output = F> + std::ops::Sub<Output = F> + std::ops::Mul<Output = F>,
    const N: usize,
>(
    prod: bool,
    n: usize,
    a: &[u8],
    b: &mut [u8],
    load: fn([u8; N]) -> F,
    store: fn(F) -> [u8; N],
) {
    let get = |s: &[u8]| {
        let mut x = [0u8; N];
        x.copy_from_slice(s);
        load(x)
    };
    for (x, y) in a.chunks_exact(2 * n).zip(b.chunks_exact_mut(2 * n)) {
        let (xr, xi) = (get(&x[..n]), get(&x[n..]));
        let (yr, yi) = (get(&y[..n]), get(&y[n..]));
        let (r, i) = if prod {
            (xr * yr - xi * yi, xr * yi + xi * yr)
        } else {
            (xr + yr, xi + yi)
        };
        y[..n].copy_from_slice(&store(r));
        y[n..].copy_from_slice(&store(i));
    }
}

/// How the values `x` and `y` of two pairs compare: `Less`, `Equal`,
/// `Greater`, or `None` when unordered (a NaN).
fn compare(v: Value, x: &[u8], y: &[u8]) -> Option<std::cmp::Ordering> {
    fn get<const N: usize>(s: &[u8]) -> [u8; N] {
        let mut a = [0u8; N];
        a.copy_from_slice(&s[..N]);
        a
    }
    match v {
        Value::F32 => f32::from_ne_bytes(get(x)).partial_cmp(&f32::from_ne_bytes(get(y))),
        Value::F64 => f64::from_ne_bytes(get(x)).partial_cmp(&f64::from_ne_bytes(get(y))),
        Value::I64 => Some(i64::from_ne_bytes(get(x)).cmp(&i64::from_ne_bytes(get(y)))),
        Value::I32 => Some(i32::from_ne_bytes(get(x)).cmp(&i32::from_ne_bytes(get(y)))),
        Value::I16 => Some(i16::from_ne_bytes(get(x)).cmp(&i16::from_ne_bytes(get(y)))),
        Value::F80 => {
            let (p, q) = (ld(&x[..10]), ld(&y[..10]));
            if x87::greater(p, q) {
                Some(std::cmp::Ordering::Greater)
            } else if x87::greater(q, p) {
                Some(std::cmp::Ordering::Less)
            } else if x87::equal(p, q) {
                Some(std::cmp::Ordering::Equal)
            } else {
                None
            }
        }
    }
}

/// `MPI_MINLOC` / `MPI_MAXLOC` (§6.9.4) of pair `x` (the left operand)
/// into pair `y`: the smaller (larger) value with its index, the smaller
/// index of two equal values.
fn loc(v: Value, max: bool, at: usize, x: &[u8], y: &mut [u8]) {
    use std::cmp::Ordering::*;
    let idx = |s: &[u8]| i32::from_ne_bytes([s[at], s[at + 1], s[at + 2], s[at + 3]]);
    let take_x = match compare(v, x, y) {
        Some(Less) => !max,
        Some(Greater) => max,
        Some(Equal) => {
            let i = idx(x).min(idx(y));
            y[at..at + 4].copy_from_slice(&i.to_ne_bytes());
            false
        }
        None => false,
    };
    if take_x {
        y[..at].copy_from_slice(&x[..at]);
        y[at..at + 4].copy_from_slice(&x[at..at + 4]);
    }
}

/// x87 extended-precision arithmetic, the C `long double` of x86-64.
#[cfg(target_arch = "x86_64")]
mod x87 {
    use std::arch::asm;

    /// Long double arithmetic is available.
    pub(super) const AVAILABLE: bool = true;

    /// `a OP b` with the x87 instruction `$op` (`faddp`, `fmulp`, …,
    /// which computes st(1) OP st(0) and pops).
    macro_rules! binop {
        ($name:ident, $op:literal) => {
            pub(super) fn $name(a: [u8; 10], b: [u8; 10]) -> [u8; 10] {
                let mut out = [0u8; 10];
                // SAFETY: the three pointers are to local 10-byte arrays,
                // valid for the 80-bit loads and store; the two loads
                // push, the arithmetic pops one, the store pops the
                // other, so the x87 stack is empty again (st(0) and st(1)
                // are declared clobbered).
                unsafe {
                    asm!(
                        "fld tbyte ptr [{a}]",
                        "fld tbyte ptr [{b}]",
                        concat!($op, " st(1), st"),
                        "fstp tbyte ptr [{o}]",
                        a = in(reg) a.as_ptr(),
                        b = in(reg) b.as_ptr(),
                        o = in(reg) out.as_mut_ptr(),
                        out("st(0)") _,
                        out("st(1)") _,
                        options(nostack),
                    );
                }
                out
            }
        };
    }
    binop!(add, "faddp");
    binop!(mul, "fmulp");
    // `fsubp st(1), st` computes st(1) − st(0), which is a − b (GNU
    // assemblers swap the mnemonic; Rust's LLVM assembler follows Intel).
    binop!(sub, "fsubp");

    /// The flags of comparing `a` with `b` (`fcomip`): (above, equal).
    fn flags(a: [u8; 10], b: [u8; 10]) -> (bool, bool) {
        let (above, equal): (u8, u8);
        // SAFETY: the pointers are to local 10-byte arrays, valid for the
        // 80-bit loads; the loads push two values, `fcomip` pops one and
        // `fstp st(0)` the other, so the x87 stack is empty again.
        unsafe {
            asm!(
                "fld tbyte ptr [{b}]",
                "fld tbyte ptr [{a}]",
                "fcomip st, st(1)",
                "fstp st(0)",
                "seta {above}",
                "setnp {ordered}",
                "sete {equal}",
                "and {equal}, {ordered}",
                a = in(reg) a.as_ptr(),
                b = in(reg) b.as_ptr(),
                above = out(reg_byte) above,
                ordered = out(reg_byte) _,
                equal = out(reg_byte) equal,
                out("st(0)") _,
                out("st(1)") _,
                options(nostack),
            );
        }
        (above != 0, equal != 0)
    }

    /// `a > b` (false if either is a NaN).
    pub(super) fn greater(a: [u8; 10], b: [u8; 10]) -> bool {
        flags(a, b).0
    }

    /// `a == b` (false if either is a NaN).
    pub(super) fn equal(a: [u8; 10], b: [u8; 10]) -> bool {
        flags(a, b).1
    }
}

/// Elsewhere `long double` is not computed (reductions on it fail).
#[cfg(not(target_arch = "x86_64"))]
mod x87 {
    pub(super) const AVAILABLE: bool = false;
    pub(super) fn add(a: [u8; 10], _: [u8; 10]) -> [u8; 10] {
        a
    }
    pub(super) fn mul(a: [u8; 10], _: [u8; 10]) -> [u8; 10] {
        a
    }
    pub(super) fn sub(a: [u8; 10], _: [u8; 10]) -> [u8; 10] {
        a
    }
    pub(super) fn greater(_: [u8; 10], _: [u8; 10]) -> bool {
        false
    }
    pub(super) fn equal(_: [u8; 10], _: [u8; 10]) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An x87 extended value of a small integer (exact in f64).
    fn ext(x: f64) -> [u8; 10] {
        // sign, 15-bit exponent (bias 16383), 64-bit mantissa with an
        // explicit integer bit.
        let mut out = [0u8; 10];
        if x == 0.0 {
            return out;
        }
        let bits = x.abs().to_bits();
        let e = ((bits >> 52) & 0x7ff) as i64 - 1023;
        let m = ((bits & ((1 << 52) - 1)) | (1 << 52)) << 11;
        out[..8].copy_from_slice(&m.to_le_bytes());
        let se = (e + 16383) as u16 | if x < 0.0 { 0x8000 } else { 0 };
        out[8..].copy_from_slice(&se.to_le_bytes());
        out
    }

    #[test]
    fn long_double_arithmetic() {
        if !x87::AVAILABLE {
            return;
        }
        assert_eq!(x87::add(ext(1.5), ext(2.25)), ext(3.75));
        assert_eq!(x87::mul(ext(-3.0), ext(2.5)), ext(-7.5));
        assert_eq!(x87::sub(ext(5.0), ext(7.0)), ext(-2.0));
        assert!(x87::greater(ext(2.0), ext(1.0)) && !x87::greater(ext(1.0), ext(2.0)));
        assert!(x87::equal(ext(2.0), ext(2.0)) && !x87::equal(ext(2.0), ext(3.0)));
    }

    #[test]
    fn minloc_maxloc_pairs() {
        let pair = |v: f64, i: i32| {
            let mut b = [0u8; 16];
            b[..8].copy_from_slice(&v.to_ne_bytes());
            b[8..12].copy_from_slice(&i.to_ne_bytes());
            b
        };
        let min = reducer(Builtin::Minloc, special(0x229).unwrap()).unwrap();
        let max = reducer(Builtin::Maxloc, special(0x229).unwrap()).unwrap();
        let mut y = pair(2.0, 5);
        min(&pair(1.0, 7), &mut y);
        assert_eq!(y, pair(1.0, 7));
        min(&pair(1.0, 3), &mut y);
        assert_eq!(y, pair(1.0, 3));
        max(&pair(0.5, 1), &mut y);
        assert_eq!(y, pair(1.0, 3));
        let mut c = [0u8; 16];
        c[..8].copy_from_slice(&[1.0f32.to_ne_bytes(), 2.0f32.to_ne_bytes()].concat());
        let prod = reducer(Builtin::Prod, special(0x212).unwrap()).unwrap();
        let x = [3.0f32.to_ne_bytes(), (-1.0f32).to_ne_bytes()].concat();
        prod(&x, &mut c[..8]);
        // (3 − i)(1 + 2i) = 5 + 5i
        assert_eq!(
            &c[..8],
            &[5.0f32.to_ne_bytes(), 5.0f32.to_ne_bytes()].concat()[..]
        );
    }
}
