//! The type-map engine against hand-computed values and, by property
//! tests, against a naive reference: every constructor expanded element
//! by element as the standard defines it, packed byte by byte.

use super::*;
use proptest::prelude::*;

const INT: Prim = Prim::Int { mem: 4, ext: 4 };
const LONG: Prim = Prim::Int { mem: 8, ext: 4 };
const DOUBLE: Prim = Prim::Float(8);
const CHAR: Prim = Prim::Byte;

fn p(prim: Prim) -> TypeMap {
    TypeMap::primitive(prim)
}

#[test]
fn vector_bounds_and_blocks() {
    // 3 blocks of 2 ints, 4 ints apart: data at 0..8, 16..24, 32..40.
    let t = TypeMap::vector(3, 2, 4, &p(INT)).unwrap();
    assert_eq!((t.size(), t.lb(), t.extent()), (24, 0, 40));
    assert_eq!((t.true_lb(), t.true_extent(), t.elements()), (0, 40, 6));
    assert_eq!(t.blocks().len(), 3);
    assert_eq!(t.contiguous_range(1), None);
    // A negative stride: blocks at 0, -16, -32.
    let n = TypeMap::vector(3, 2, -4, &p(INT)).unwrap();
    assert_eq!((n.lb(), n.extent(), n.true_lb()), (-32, 40, -32));
    assert_eq!(n.span(2).unwrap(), (-32, 48));
}

#[test]
fn contiguous_types_merge_into_one_block() {
    let v = TypeMap::vector(4, 3, 3, &p(DOUBLE)).unwrap();
    assert_eq!(v.blocks().len(), 1);
    assert_eq!(v.contiguous_range(5), Some((0, 5 * 96)));
    let s = TypeMap::structure(&[2, 1], &[0, 8], &[&p(INT), &p(INT)]).unwrap();
    assert_eq!(s.blocks().len(), 1);
    assert_eq!(s.contiguous_range(3), Some((0, 36)));
    // Different primitives stay apart as blocks but copy as one run.
    let m = TypeMap::structure(&[1, 1], &[0, 4], &[&p(INT), &p(Prim::Float(4))]).unwrap();
    assert_eq!(m.blocks().len(), 2);
    assert_eq!(m.contiguous_range(2), Some((0, 16)));
    assert_eq!(m.homogeneous(), None);
    assert_eq!(v.homogeneous(), Some(DOUBLE));
}

#[test]
fn huge_counts_stay_cheap_or_fail_clearly() {
    // 2^31 - 1 bytes back to back: one block, made at once (mpi4py's
    // testContiguousBigMPI), and a contiguous type of those.
    let big = TypeMap::contiguous(i32::MAX as usize, &p(CHAR)).unwrap();
    assert_eq!((big.size(), big.blocks().len()), (i32::MAX as usize, 1));
    let bigger = TypeMap::contiguous(3, &big).unwrap();
    assert_eq!(
        (bigger.size(), bigger.blocks().len()),
        (3 * i32::MAX as usize, 1)
    );
    // 2^31 separate blocks would take gigabytes as a flat map: an error.
    let holes = TypeMap::vector(1 << 31, 1, 2, &p(CHAR));
    assert!(matches!(holes, Err(TypeError::Invalid(_))));
}

#[test]
fn struct_padding_and_resized_bounds() {
    // struct { double; char; } has extent 16 (alignment of the double).
    let s = TypeMap::structure(&[1, 1], &[0, 8], &[&p(DOUBLE), &p(CHAR)]).unwrap();
    assert_eq!((s.size(), s.extent(), s.true_extent()), (9, 16, 9));
    // Resized to lb -4, extent 20: sticky bounds, no padding in a struct.
    let r = TypeMap::resized(&s, -4, 20).unwrap();
    assert_eq!(
        (r.lb(), r.extent(), r.true_lb(), r.true_extent()),
        (-4, 20, 0, 9)
    );
    let s2 = TypeMap::structure(&[2], &[0], &[&r]).unwrap();
    assert_eq!((s2.lb(), s2.extent(), s2.size()), (-4, 40, 18));
    // Contiguous copies go extent apart.
    let c = TypeMap::contiguous(2, &s).unwrap();
    assert_eq!(
        (c.extent(), c.true_extent(), c.blocks()[2].disp),
        (32, 25, 16)
    );
    let empty = TypeMap::contiguous(0, &p(INT)).unwrap();
    assert_eq!(
        (empty.size(), empty.extent(), empty.true_extent()),
        (0, 0, 0)
    );
}

#[test]
fn subarray_c_and_fortran_order() {
    // A 4x5 int array, the 2x3 block at (1, 2): C order, rows of 5.
    let t = TypeMap::subarray(&[4, 5], &[2, 3], &[1, 2], Order::C, &p(INT)).unwrap();
    assert_eq!((t.lb(), t.extent(), t.size()), (0, 80, 24));
    assert_eq!((t.true_lb(), t.true_extent()), (28, 32));
    let disps: Vec<_> = t.blocks().iter().map(|b| (b.disp, b.len)).collect();
    assert_eq!(disps, [(28, 12), (48, 12)]);
    // Fortran order: columns of 4; (1, 2) is at 2*4 + 1 = 9 ints.
    let f = TypeMap::subarray(&[4, 5], &[2, 3], &[1, 2], Order::Fortran, &p(INT)).unwrap();
    let disps: Vec<_> = f.blocks().iter().map(|b| (b.disp, b.len)).collect();
    assert_eq!(disps, [(36, 8), (52, 8), (68, 8)]);
    assert!(TypeMap::subarray(&[4], &[3], &[2], Order::C, &p(INT)).is_err());
}

#[test]
fn darray_block_and_cyclic() {
    // 8 ints over 2 processes, block: rank 1 owns 4..8.
    let t = TypeMap::darray(
        2,
        1,
        &[8],
        &[Distribution::Block(None)],
        &[2],
        Order::C,
        &p(INT),
    )
    .unwrap();
    assert_eq!((t.extent(), t.blocks()[0].disp, t.size()), (32, 16, 16));
    // Cyclic(2) over 3 processes of 10: rank 1 owns 2,3, 8,9.
    let c = TypeMap::darray(
        3,
        1,
        &[10],
        &[Distribution::Cyclic(Some(2))],
        &[3],
        Order::C,
        &p(INT),
    )
    .unwrap();
    let disps: Vec<_> = c.blocks().iter().map(|b| (b.disp, b.len)).collect();
    assert_eq!(disps, [(8, 8), (32, 8)]);
    // A 4x4 array over a 2x2 grid, block-block: rank 3 = (1, 1) owns
    // rows 2..4, columns 2..4.
    let b = Distribution::Block(None);
    let g = TypeMap::darray(4, 3, &[4, 4], &[b, b], &[2, 2], Order::C, &p(INT)).unwrap();
    let disps: Vec<_> = g.blocks().iter().map(|b| (b.disp, b.len)).collect();
    assert_eq!(disps, [(40, 8), (56, 8)]);
    assert_eq!(g.extent(), 64);
    // Fortran order: rank 1 = (0, 1) owns rows 0..2 of columns 2..4,
    // column-major: (0,2) at 8 ints.
    let f = TypeMap::darray(4, 1, &[4, 4], &[b, b], &[2, 2], Order::Fortran, &p(INT)).unwrap();
    let disps: Vec<_> = f.blocks().iter().map(|b| (b.disp, b.len)).collect();
    assert_eq!(disps, [(32, 8), (48, 8)]);
    assert!(TypeMap::darray(3, 0, &[8], &[b], &[2], Order::C, &p(INT)).is_err());
    assert!(TypeMap::darray(
        2,
        0,
        &[8],
        &[Distribution::Block(Some(3))],
        &[2],
        Order::C,
        &p(INT)
    )
    .is_err());
}

#[test]
fn pack_checks_bounds_and_unpacks_partially() {
    let t = TypeMap::vector(2, 1, 2, &p(INT)).unwrap();
    let src: Vec<u8> = (0..16).collect();
    let mut out = [0u8; 8];
    assert_eq!(t.pack(1, &src[..12], 0, &mut out), Ok(8));
    assert_eq!(out, [0, 1, 2, 3, 8, 9, 10, 11]);
    assert_eq!(
        t.pack(1, &src[..11], 0, &mut out),
        Err(TypeError::OutOfBounds)
    );
    assert_eq!(
        t.pack(1, &src, 0, &mut out[..7]),
        Err(TypeError::OutOfBounds)
    );
    let mut dst = [0xffu8; 12];
    assert_eq!(t.unpack(1, &[1, 2, 3, 4, 5, 6], &mut dst, 0), Ok(6));
    assert_eq!(dst, [1, 2, 3, 4, 0xff, 0xff, 0xff, 0xff, 5, 6, 0xff, 0xff]);
    assert_eq!(
        t.unpack(1, &[0; 9], &mut dst, 0),
        Err(TypeError::OutOfBounds)
    );
    assert_eq!(t.elements_in(6), 1);
    assert_eq!(t.elements_in(8), 2);
    assert_eq!(t.elements_in(20), 5);
}

#[test]
fn external32_is_big_endian_with_standard_sizes() {
    let s = TypeMap::structure(&[1, 1, 1], &[0, 8, 16], &[&p(INT), &p(LONG), &p(DOUBLE)]).unwrap();
    assert_eq!(s.external32_size(1), Ok(16));
    let mut src = Vec::new();
    src.extend_from_slice(&0x0102_0304i32.to_ne_bytes());
    src.extend_from_slice(&[0; 4]);
    src.extend_from_slice(&(-2i64).to_ne_bytes());
    src.extend_from_slice(&1.5f64.to_ne_bytes());
    let mut out = [0u8; 16];
    assert_eq!(s.pack_external32(1, &src, 0, &mut out), Ok(16));
    assert_eq!(out[..8], [1, 2, 3, 4, 0xff, 0xff, 0xff, 0xfe]);
    assert_eq!(out[8..], 1.5f64.to_be_bytes());
    let mut back = vec![0u8; 24];
    assert_eq!(s.unpack_external32(1, &out, &mut back, 0), Ok(16));
    assert_eq!(back[..4], src[..4]);
    assert_eq!(back[8..], src[8..]);
    let big = (1i64 << 40).to_ne_bytes();
    let mut o4 = [0u8; 4];
    assert_eq!(
        p(LONG).pack_external32(1, &big, 0, &mut o4),
        Err(TypeError::Conversion)
    );
}

#[test]
fn long_double_becomes_binary128() {
    // 1.0L on x87: significand 0x8000..., exponent 0x3fff.
    let mut one = [0u8; 16];
    one[7] = 0x80;
    one[8] = 0xff;
    one[9] = 0x3f;
    let mut q = [0u8; 16];
    p(Prim::LongDouble)
        .pack_external32(1, &one, 0, &mut q)
        .unwrap();
    let mut want = [0u8; 16];
    want[0] = 0x3f;
    want[1] = 0xff;
    assert_eq!(q, want);
    let mut back = [0xaau8; 16];
    p(Prim::LongDouble)
        .unpack_external32(1, &q, &mut back, 0)
        .unwrap();
    assert_eq!(back, one);
}

/// A datatype as its constructor calls, for the reference.
#[derive(Clone, Debug)]
enum Ty {
    P(Prim),
    Contig(usize, Box<Ty>),
    Vector(usize, usize, isize, Box<Ty>),
    HVector(usize, usize, isize, Box<Ty>),
    Indexed(Vec<(usize, isize)>, Box<Ty>),
    HIndexed(Vec<(usize, isize)>, Box<Ty>),
    Struct(Vec<(usize, isize, Ty)>),
    Resized(isize, isize, Box<Ty>),
    Subarray(Vec<(usize, usize, usize)>, bool, Box<Ty>),
}

/// The naive type map: one entry per primitive element, and the bounds
/// (lb, ub, sticky, alignment).
struct Naive {
    entries: Vec<(isize, Prim)>,
    lb: isize,
    ub: isize,
    sticky: bool,
    align: usize,
}

impl Naive {
    fn extent(&self) -> isize {
        self.ub - self.lb
    }

    /// `copies` of `t` at `disp`, appended; returns their (lb, ub).
    fn place(
        entries: &mut Vec<(isize, Prim)>,
        t: &Naive,
        disp: isize,
        copies: usize,
    ) -> Option<(isize, isize)> {
        let mut b: Option<(isize, isize)> = None;
        for j in 0..copies {
            let at = disp + j as isize * t.extent();
            entries.extend(t.entries.iter().map(|&(d, p)| (at + d, p)));
            let (lo, hi) = (at + t.lb, at + t.ub);
            b = Some(b.map_or((lo, hi), |(l, h)| (l.min(lo), h.max(hi))));
        }
        b
    }

    fn compose(parts: &[(isize, usize, &Naive)], pad: bool) -> Naive {
        let mut entries = Vec::new();
        let mut b: Option<(isize, isize)> = None;
        let (mut sticky, mut align) = (false, 1);
        for &(d, n, t) in parts {
            if let Some((lo, hi)) = Self::place(&mut entries, t, d, n) {
                b = Some(b.map_or((lo, hi), |(l, h)| (l.min(lo), h.max(hi))));
                sticky |= t.sticky;
                align = align.max(t.align);
            }
        }
        let (lb, mut ub) = b.unwrap_or((0, 0));
        if pad && !sticky && (ub - lb).rem_euclid(align as isize) != 0 {
            ub += align as isize - (ub - lb).rem_euclid(align as isize);
        }
        Naive {
            entries,
            lb,
            ub,
            sticky,
            align,
        }
    }
}

fn naive(t: &Ty) -> Naive {
    match t {
        Ty::P(p) => Naive {
            entries: vec![(0, *p)],
            lb: 0,
            ub: p.size() as isize,
            sticky: false,
            align: p.align(),
        },
        Ty::Contig(n, o) => {
            let o = naive(o);
            Naive::compose(&[(0, *n, &o)], false)
        }
        Ty::Vector(n, bl, s, o) | Ty::HVector(n, bl, s, o) => {
            let o = naive(o);
            let s = if matches!(t, Ty::Vector(..)) {
                s * o.extent()
            } else {
                *s
            };
            let parts: Vec<_> = (0..*n).map(|i| (i as isize * s, *bl, &o)).collect();
            Naive::compose(&parts, false)
        }
        Ty::Indexed(b, o) | Ty::HIndexed(b, o) => {
            let o = naive(o);
            let unit = if matches!(t, Ty::Indexed(..)) {
                o.extent()
            } else {
                1
            };
            let parts: Vec<_> = b.iter().map(|&(n, d)| (d * unit, n, &o)).collect();
            Naive::compose(&parts, false)
        }
        Ty::Struct(fs) => {
            let ns: Vec<_> = fs.iter().map(|f| naive(&f.2)).collect();
            let parts: Vec<_> = fs.iter().zip(&ns).map(|(f, n)| (f.1, f.0, n)).collect();
            Naive::compose(&parts, true)
        }
        Ty::Resized(lb, ext, o) => Naive {
            lb: *lb,
            ub: lb + ext,
            sticky: true,
            ..naive(o)
        },
        Ty::Subarray(dims, c, o) => {
            // Element by element, row-major over the subarray (C) or
            // column-major (Fortran).
            let o = naive(o);
            let nd = dims.len();
            let order: Vec<usize> = if *c {
                (0..nd).collect()
            } else {
                (0..nd).rev().collect()
            };
            let mut strides = vec![0isize; nd];
            let mut s = o.extent();
            for &k in order.iter().rev() {
                strides[k] = s;
                s *= dims[k].0 as isize;
            }
            let total: usize = dims.iter().map(|d| d.1).product();
            let mut entries = Vec::new();
            for mut i in 0..total {
                let mut idx = vec![0usize; nd];
                for &k in order.iter().rev() {
                    idx[k] = i % dims[k].1;
                    i /= dims[k].1;
                }
                let d: isize = (0..nd)
                    .map(|k| (dims[k].2 + idx[k]) as isize * strides[k])
                    .sum();
                Naive::place(&mut entries, &o, d, 1);
            }
            Naive {
                entries,
                lb: 0,
                ub: s,
                sticky: true,
                align: o.align,
            }
        }
    }
}

fn build(t: &Ty) -> TypeMap {
    match t {
        Ty::P(p) => TypeMap::primitive(*p),
        Ty::Contig(n, o) => TypeMap::contiguous(*n, &build(o)).unwrap(),
        Ty::Vector(n, bl, s, o) => TypeMap::vector(*n, *bl, *s, &build(o)).unwrap(),
        Ty::HVector(n, bl, s, o) => TypeMap::hvector(*n, *bl, *s, &build(o)).unwrap(),
        Ty::Indexed(b, o) => {
            let (bl, d): (Vec<_>, Vec<_>) = b.iter().copied().unzip();
            if bl.iter().all(|&x| x == bl[0]) {
                TypeMap::indexed_block(bl[0], &d, &build(o)).unwrap()
            } else {
                TypeMap::indexed(&bl, &d, &build(o)).unwrap()
            }
        }
        Ty::HIndexed(b, o) => {
            let (bl, d): (Vec<_>, Vec<_>) = b.iter().copied().unzip();
            if bl.iter().all(|&x| x == bl[0]) {
                TypeMap::hindexed_block(bl[0], &d, &build(o)).unwrap()
            } else {
                TypeMap::hindexed(&bl, &d, &build(o)).unwrap()
            }
        }
        Ty::Struct(fs) => {
            let ts: Vec<_> = fs.iter().map(|f| build(&f.2)).collect();
            let refs: Vec<_> = ts.iter().collect();
            let bl: Vec<_> = fs.iter().map(|f| f.0).collect();
            let d: Vec<_> = fs.iter().map(|f| f.1).collect();
            TypeMap::structure(&bl, &d, &refs).unwrap()
        }
        Ty::Resized(lb, ext, o) => TypeMap::resized(&build(o), *lb, *ext).unwrap(),
        Ty::Subarray(dims, c, o) => {
            let sizes: Vec<_> = dims.iter().map(|d| d.0).collect();
            let subs: Vec<_> = dims.iter().map(|d| d.1).collect();
            let starts: Vec<_> = dims.iter().map(|d| d.2).collect();
            let order = if *c { Order::C } else { Order::Fortran };
            TypeMap::subarray(&sizes, &subs, &starts, order, &build(o)).unwrap()
        }
    }
}

fn prim() -> impl Strategy<Value = Prim> {
    prop_oneof![
        Just(CHAR),
        Just(Prim::Int { mem: 2, ext: 2 }),
        Just(INT),
        Just(LONG),
        Just(Prim::Uint { mem: 8, ext: 8 }),
        Just(Prim::Float(4)),
        Just(DOUBLE),
        Just(Prim::Complex(4)),
    ]
}

fn ty() -> impl Strategy<Value = Ty> {
    prim().prop_map(Ty::P).prop_recursive(3, 24, 3, |inner| {
        let b = || inner.clone().prop_map(Box::new);
        prop_oneof![
            (0..4usize, b()).prop_map(|(n, o)| Ty::Contig(n, o)),
            (0..4usize, 0..3usize, -3..4isize, b())
                .prop_map(|(n, bl, s, o)| Ty::Vector(n, bl, s, o)),
            (0..4usize, 0..3usize, -20..40isize, b())
                .prop_map(|(n, bl, s, o)| Ty::HVector(n, bl, s, o)),
            (prop::collection::vec((0..3usize, -2..6isize), 1..4), b())
                .prop_map(|(v, o)| Ty::Indexed(v, o)),
            (prop::collection::vec((0..3usize, -16..48isize), 1..4), b())
                .prop_map(|(v, o)| Ty::HIndexed(v, o)),
            prop::collection::vec((0..3usize, -16..48isize, inner.clone()), 1..4)
                .prop_map(Ty::Struct),
            (-8..8isize, 0..40isize, b()).prop_map(|(lb, e, o)| Ty::Resized(lb, e, o)),
            (
                prop::collection::vec((1..4usize, 0..4usize, 0..4usize), 1..3),
                any::<bool>(),
                b()
            )
                .prop_map(|(d, c, o)| {
                    let d = d
                        .into_iter()
                        .map(|(s, sub, st)| (s, sub.min(s), st.min(s - sub.min(s))))
                        .collect();
                    Ty::Subarray(d, c, o)
                }),
        ]
    })
}

/// Packs `count` elements byte by byte from the naive type map.
fn naive_pack(n: &Naive, count: usize, src: &[u8], origin: isize) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..count {
        for &(d, p) in &n.entries {
            let at = (origin + i as isize * n.extent() + d) as usize;
            out.extend_from_slice(&src[at..at + p.size()]);
        }
    }
    out
}

fn naive_unpack(n: &Naive, count: usize, packed: &[u8], dst: &mut [u8], origin: isize) {
    let mut k = 0;
    for i in 0..count {
        for &(d, p) in &n.entries {
            let at = (origin + i as isize * n.extent() + d) as usize;
            for b in 0..p.size() {
                if k < packed.len() {
                    dst[at + b] = packed[k];
                    k += 1;
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn engine_matches_the_naive_reference(t in ty(), count in 0..4usize, cut in any::<prop::sample::Index>(), seed in any::<u8>()) {
        let n = naive(&t);
        let m = build(&t);
        let size: usize = n.entries.iter().map(|e| e.1.size()).sum();
        prop_assert_eq!(m.size(), size);
        prop_assert_eq!((m.lb(), m.ub()), (n.lb, n.ub));
        prop_assert_eq!(m.elements(), n.entries.len());
        let ext32: usize = n.entries.iter().map(|e| e.1.external_size()).sum();
        prop_assert_eq!(m.external32_size(1).unwrap(), ext32);
        if let (Some(lo), Some(hi)) = (
            n.entries.iter().map(|e| e.0).min(),
            n.entries.iter().map(|e| e.0 + e.1.size() as isize).max(),
        ) {
            prop_assert_eq!((m.true_lb(), m.true_lb() + m.true_extent()), (lo, hi));
        }
        // A buffer around the span, with a margin the data must not touch.
        let (lo, hi) = m.span(count).unwrap();
        let margin = 8isize;
        let len = (hi - lo + 2 * margin) as usize;
        let origin = margin - lo;
        let src: Vec<u8> = (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect();
        let want = naive_pack(&n, count, &src, origin);
        let mut got = vec![0u8; m.packed_size(count).unwrap()];
        prop_assert_eq!(m.pack(count, &src, origin, &mut got), Ok(want.len()));
        prop_assert_eq!(&got, &want);
        // The run walk (what the C ABI packs with) gives the same bytes.
        let mut via = vec![0u8; want.len()];
        m.for_each_run(count, usize::MAX, |off, r| {
            let at = (origin + off) as usize;
            let len = r.len();
            via[r].copy_from_slice(&src[at..at + len]);
        });
        prop_assert_eq!(&via, &want);
        // Unpack a prefix (a short message) onto a patterned buffer.
        let k = if want.is_empty() { 0 } else { cut.index(want.len() + 1) };
        let mut a = vec![0xa5u8; len];
        let mut b = a.clone();
        prop_assert_eq!(m.unpack(count, &want[..k], &mut a, origin), Ok(k));
        naive_unpack(&n, count, &want[..k], &mut b, origin);
        prop_assert_eq!(&a, &b);
        // Elements whole in the prefix.
        let mut whole = 0;
        let mut at = 0;
        'o: for _ in 0..count {
            for e in &n.entries {
                at += e.1.size();
                if at > k { break 'o; }
                whole += 1;
            }
        }
        prop_assert_eq!(m.elements_in(k), whole);
        // external32 round trip of values that fit (longs sign-extended
        // from 32 bits).
        let mut clean = vec![0u8; len];
        naive_unpack(&n, count, &want, &mut clean, origin);
        for i in 0..count {
            for &(d, p) in &n.entries {
                if p == LONG {
                    let at = (origin + i as isize * n.extent() + d) as usize;
                    let v = i32::from_ne_bytes(clean[at..at + 4].try_into().unwrap());
                    clean[at..at + 8].copy_from_slice(&i64::from(v).to_ne_bytes());
                }
            }
        }
        let mut e32 = vec![0u8; m.external32_size(count).unwrap()];
        let mut back = vec![0u8; len];
        // Overlapping entries may undo the sign extension: a conversion
        // error is then right, and only possible with longs.
        if m.pack_external32(count, &clean, origin, &mut e32) == Err(TypeError::Conversion) {
            prop_assert!(n.entries.iter().any(|e| e.1 == LONG));
            return Ok(());
        }
        m.unpack_external32(count, &e32, &mut back, origin).unwrap();
        let (mut p1, mut p2) = (vec![0u8; want.len()], vec![0u8; want.len()]);
        m.pack(count, &clean, origin, &mut p1).unwrap();
        m.pack(count, &back, origin, &mut p2).unwrap();
        prop_assert_eq!(p1, p2);
    }

    #[test]
    fn contiguous_fast_path_is_exact(t in ty(), count in 1..4usize) {
        let m = build(&t);
        if let Some((d, len)) = m.contiguous_range(count) {
            let n = naive(&t);
            let (lo, hi) = m.span(count).unwrap();
            prop_assert_eq!((lo, hi - lo), (d, len as isize));
            // Packed order is memory order.
            let mut at = d;
            for i in 0..count {
                for &(e, p) in &n.entries {
                    prop_assert_eq!(i as isize * n.extent() + e, at);
                    at += p.size() as isize;
                }
            }
        }
    }
}
