//! Derived datatypes as type maps (MPI 5.0 chapter 5): the constructors
//! of §5.1 (contiguous, vector, hvector, indexed, hindexed, indexed_block,
//! hindexed_block, struct, subarray, darray, resized, dup), the bounds and
//! extents of §5.1.6–5.1.8, packing (§5.2), the portable `external32`
//! representation (§14.5.2), and element counting (`MPI_Get_elements`,
//! §5.1.11).
//!
//! A [`TypeMap`] is the list of data blocks one element of the datatype
//! consists of, in type-map order (the order packing visits them), each a
//! displacement from the buffer's origin, a length in bytes and the
//! [`Prim`] (primitive element type) it is made of; blocks adjacent in
//! both order and memory are merged, so a contiguous type is one block
//! and takes the fast path. Messages carry the *packed* bytes of a
//! datatype (its data in type-map order, no gaps): sender and receiver
//! may use different type maps with the same type signature.
//!
//! Bounds follow MPICH (and the standard where it is explicit): the lower
//! bound and upper bound of a derived type come from those of its
//! constituents, `resized` sets them explicitly ("sticky": a struct over a
//! resized type adds no alignment padding), and a struct without sticky
//! bounds rounds its extent up to the largest alignment of its primitive
//! elements (§5.1.6, ε).

use std::fmt;

/// Why a type constructor, pack or unpack failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TypeError {
    /// An argument the standard does not allow (a negative count, a
    /// subarray outside its array, an impossible distribution, ...).
    Invalid(&'static str),
    /// A size or displacement overflows the address space.
    Overflow,
    /// The buffer the caller has is smaller than the data need.
    OutOfBounds,
    /// A value does not fit its `external32` representation (a `long`
    /// beyond 32 bits, §14.5.2).
    Conversion,
}

impl fmt::Display for TypeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TypeError::Invalid(s) => write!(f, "invalid datatype argument: {s}"),
            TypeError::Overflow => f.write_str("datatype size or displacement overflows"),
            TypeError::OutOfBounds => f.write_str("buffer too small for the datatype's data"),
            TypeError::Conversion => f.write_str("value does not fit its external32 size"),
        }
    }
}

impl std::error::Error for TypeError {}

impl From<TypeError> for crate::Error {
    fn from(e: TypeError) -> Self {
        crate::Error::InvalidArgument(e.to_string())
    }
}

/// `Result` with [`TypeError`].
pub type TypeResult<T> = Result<T, TypeError>;

/// A primitive element type: what a predefined datatype is made of (LP64,
/// x86-64 sizes), with what `external32` needs to know about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Prim {
    /// One byte moved as it is (`MPI_BYTE`, `MPI_PACKED`, `MPI_CHAR`,
    /// `MPI_C_BOOL`, ...).
    Byte,
    /// A signed integer of `mem` bytes in memory and `ext` bytes in
    /// `external32` (`MPI_LONG` is 8 and 4).
    Int {
        /// Bytes in memory.
        mem: u8,
        /// Bytes in `external32`.
        ext: u8,
    },
    /// An unsigned integer, as [`Prim::Int`].
    Uint {
        /// Bytes in memory.
        mem: u8,
        /// Bytes in `external32`.
        ext: u8,
    },
    /// An IEEE float of 4 or 8 bytes.
    Float(u8),
    /// A complex number: two IEEE floats of 4 or 8 bytes each.
    Complex(u8),
    /// An x87 `long double` (80 bits in 16 bytes); IEEE binary128 in
    /// `external32`.
    LongDouble,
    /// Two `long double`s.
    ComplexLongDouble,
}

impl Prim {
    /// Bytes in memory.
    pub fn size(self) -> usize {
        match self {
            Prim::Byte => 1,
            Prim::Int { mem, .. } | Prim::Uint { mem, .. } => mem as usize,
            Prim::Float(n) => n as usize,
            Prim::Complex(n) => 2 * n as usize,
            Prim::LongDouble => 16,
            Prim::ComplexLongDouble => 32,
        }
    }

    /// Bytes in `external32` (§14.5.2, Table 14.2).
    pub fn external_size(self) -> usize {
        match self {
            Prim::Int { ext, .. } | Prim::Uint { ext, .. } => ext as usize,
            p => p.size(),
        }
    }

    /// Alignment in memory (the x86-64 C ABI's).
    pub fn align(self) -> usize {
        match self {
            Prim::Complex(n) => n as usize,
            Prim::ComplexLongDouble => 16,
            p => p.size(),
        }
    }

    /// Writes the `external32` form of the native element `src` to `dst`
    /// (`external_size()` bytes).
    fn to_external(self, src: &[u8], dst: &mut [u8]) -> TypeResult<()> {
        match self {
            Prim::Byte => dst.copy_from_slice(src),
            Prim::Int { mem, ext } | Prim::Uint { mem, ext } if mem > ext => {
                let signed = matches!(self, Prim::Int { .. });
                let mut a = [0u8; 16];
                a[..src.len()].copy_from_slice(src);
                let v = u128::from_le_bytes(a);
                let bits = 8 * u32::from(ext);
                let fits = if signed {
                    let v = extend_signed(v, 8 * u32::from(mem));
                    let lim = 1i128 << (bits - 1);
                    (-lim..lim).contains(&v)
                } else {
                    v < (1u128 << bits)
                };
                if !fits {
                    return Err(TypeError::Conversion);
                }
                dst.copy_from_slice(&v.to_be_bytes()[16 - ext as usize..]);
            }
            Prim::Int { .. } | Prim::Uint { .. } | Prim::Float(_) => swap_into(src, dst),
            Prim::Complex(n) => {
                let n = n as usize;
                swap_into(&src[..n], &mut dst[..n]);
                swap_into(&src[n..], &mut dst[n..]);
            }
            Prim::LongDouble => x87_to_quad(src, dst),
            Prim::ComplexLongDouble => {
                x87_to_quad(&src[..16], &mut dst[..16]);
                x87_to_quad(&src[16..], &mut dst[16..]);
            }
        }
        Ok(())
    }

    /// Writes the native form of the `external32` element `src` to `dst`.
    fn to_native(self, src: &[u8], dst: &mut [u8]) {
        match self {
            Prim::Byte => dst.copy_from_slice(src),
            Prim::Int { mem, ext } | Prim::Uint { mem, ext } if mem > ext => {
                let mut a = [0u8; 16];
                a[16 - ext as usize..].copy_from_slice(src);
                let mut v = u128::from_be_bytes(a);
                if matches!(self, Prim::Int { .. }) {
                    v = extend_signed(v, 8 * u32::from(ext)) as u128;
                }
                dst.copy_from_slice(&v.to_le_bytes()[..mem as usize]);
            }
            Prim::Int { .. } | Prim::Uint { .. } | Prim::Float(_) => swap_into(src, dst),
            Prim::Complex(n) => {
                let n = n as usize;
                swap_into(&src[..n], &mut dst[..n]);
                swap_into(&src[n..], &mut dst[n..]);
            }
            Prim::LongDouble => quad_to_x87(src, dst),
            Prim::ComplexLongDouble => {
                quad_to_x87(&src[..16], &mut dst[..16]);
                quad_to_x87(&src[16..], &mut dst[16..]);
            }
        }
    }
}

/// The low `bits` bits of `v` as a signed number.
fn extend_signed(v: u128, bits: u32) -> i128 {
    let shift = 128 - bits;
    ((v << shift) as i128) >> shift
}

/// `dst` = `src` reversed (little-endian ↔ big-endian).
fn swap_into(src: &[u8], dst: &mut [u8]) {
    for (d, s) in dst.iter_mut().zip(src.iter().rev()) {
        *d = *s;
    }
}

/// x87 extended precision (little-endian: 64-bit significand with an
/// explicit integer bit, then sign and 15-bit exponent) to big-endian IEEE
/// binary128 (same exponent bias; the 63 fraction bits become the top of
/// its 112): exact.
fn x87_to_quad(src: &[u8], dst: &mut [u8]) {
    let mut m = [0u8; 8];
    m.copy_from_slice(&src[..8]);
    let mant = u64::from_le_bytes(m);
    let se = u16::from_le_bytes([src[8], src[9]]);
    let frac = u128::from(mant & !(1 << 63)) << 49;
    let q = (u128::from(se) << 112) | frac;
    dst.copy_from_slice(&q.to_be_bytes());
}

/// Big-endian IEEE binary128 to x87 extended precision (the fraction cut
/// to 63 bits; the integer bit set unless the number is zero or
/// subnormal); the 6 padding bytes are zero.
fn quad_to_x87(src: &[u8], dst: &mut [u8]) {
    let mut a = [0u8; 16];
    a.copy_from_slice(src);
    let q = u128::from_be_bytes(a);
    let se = (q >> 112) as u16;
    let frac = ((q >> 49) as u64) & !(1 << 63);
    let int_bit = if se & 0x7fff != 0 { 1u64 << 63 } else { 0 };
    dst[..8].copy_from_slice(&(frac | int_bit).to_le_bytes());
    dst[8..10].copy_from_slice(&se.to_le_bytes());
    dst[10..16].fill(0);
}

/// A run of data of one primitive type in a type map.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Block {
    /// Displacement from the buffer's origin, in bytes.
    pub disp: isize,
    /// Length in bytes (a multiple of `prim.size()`).
    pub len: usize,
    /// What the block is made of.
    pub prim: Prim,
}

/// Array storage order of `subarray` and `darray` (§5.1.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Row-major: the last dimension varies fastest (`MPI_ORDER_C`).
    C,
    /// Column-major: the first dimension varies fastest
    /// (`MPI_ORDER_FORTRAN`).
    Fortran,
}

/// How `darray` distributes one dimension (§5.1.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Distribution {
    /// Not distributed (the process grid has 1 there).
    None,
    /// Blocks of the given size (`None`: `MPI_DISTRIBUTE_DFLT_DARG`, the
    /// dimension divided evenly, rounded up).
    Block(Option<usize>),
    /// Round-robin blocks of the given size (default 1).
    Cyclic(Option<usize>),
}

/// A datatype as its type map; see the module documentation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeMap {
    blocks: Vec<Block>,
    /// The blocks merged regardless of their primitive type: what
    /// packing copies.
    runs: Vec<(isize, usize)>,
    size: usize,
    /// Bytes of one element in `external32`.
    ext_size: usize,
    /// Primitive elements in one element.
    elements: usize,
    lb: isize,
    ub: isize,
    true_lb: isize,
    true_ub: isize,
    align: usize,
    sticky: bool,
}

/// The most separate blocks a type map may have: a flat map of more
/// would take gigabytes (a vector of 2^31 single bytes), so the
/// constructor fails with a clear error instead of exhausting memory.
const MAX_BLOCKS: usize = 1 << 24;

/// Collects blocks in type-map order, merging adjacent ones.
#[derive(Default)]
struct Builder {
    blocks: Vec<Block>,
    runs: Vec<(isize, usize)>,
    true_lb: Option<isize>,
    true_ub: isize,
}

impl Builder {
    fn push(&mut self, disp: isize, len: usize, prim: Prim) -> TypeResult<()> {
        if len == 0 {
            return Ok(());
        }
        let end = disp
            .checked_add(isize::try_from(len).map_err(|_| TypeError::Overflow)?)
            .ok_or(TypeError::Overflow)?;
        self.true_lb = Some(self.true_lb.map_or(disp, |l| l.min(disp)));
        self.true_ub = if self.blocks.is_empty() {
            end
        } else {
            self.true_ub.max(end)
        };
        match self.blocks.last_mut() {
            Some(b) if b.prim == prim && b.disp + b.len as isize == disp => b.len += len,
            _ => self.blocks.push(Block { disp, len, prim }),
        }
        match self.runs.last_mut() {
            Some(r) if r.0 + r.1 as isize == disp => r.1 += len,
            _ => self.runs.push((disp, len)),
        }
        Ok(())
    }
}

fn mul(a: isize, b: isize) -> TypeResult<isize> {
    a.checked_mul(b).ok_or(TypeError::Overflow)
}

fn add(a: isize, b: isize) -> TypeResult<isize> {
    a.checked_add(b).ok_or(TypeError::Overflow)
}

fn signed(n: usize) -> TypeResult<isize> {
    isize::try_from(n).map_err(|_| TypeError::Overflow)
}

/// `n` consecutive copies of a type at a displacement: one piece of a
/// constructor's type map.
struct Segment<'a> {
    disp: isize,
    copies: usize,
    old: &'a TypeMap,
}

impl TypeMap {
    /// The predefined datatype made of one `prim`.
    pub fn primitive(prim: Prim) -> Self {
        let n = prim.size();
        TypeMap {
            blocks: vec![Block {
                disp: 0,
                len: n,
                prim,
            }],
            runs: vec![(0, n)],
            size: n,
            ext_size: prim.external_size(),
            elements: 1,
            lb: 0,
            ub: n as isize,
            true_lb: 0,
            true_ub: n as isize,
            align: prim.align(),
            sticky: false,
        }
    }

    /// Builds the type map of the segments in order; `pad` applies a
    /// struct's alignment padding.
    fn build<'a>(
        segs: impl IntoIterator<Item = TypeResult<Segment<'a>>>,
        pad: bool,
    ) -> TypeResult<Self> {
        let mut b = Builder::default();
        let (mut size, mut ext_size, mut elements) = (0usize, 0usize, 0usize);
        let mut bounds: Option<(isize, isize)> = None;
        let (mut align, mut sticky) = (1usize, false);
        let too_many =
            || TypeError::Invalid("more than 2^24 separate blocks (o2g keeps a type map flat)");
        for s in segs {
            let s = s?;
            if b.blocks.len() > MAX_BLOCKS {
                return Err(too_many());
            }
            if s.copies == 0 {
                continue;
            }
            let t = s.old;
            let last = add(s.disp, mul(signed(s.copies - 1)?, t.extent())?)?;
            let lo = add(s.disp.min(last), t.lb)?;
            let hi = add(s.disp.max(last), t.ub)?;
            bounds = Some(bounds.map_or((lo, hi), |(l, h)| (l.min(lo), h.max(hi))));
            let n = s.copies;
            let scaled = |x: usize| x.checked_mul(n).ok_or(TypeError::Overflow);
            size = size
                .checked_add(scaled(t.size)?)
                .ok_or(TypeError::Overflow)?;
            ext_size = ext_size
                .checked_add(scaled(t.ext_size)?)
                .ok_or(TypeError::Overflow)?;
            elements = elements
                .checked_add(scaled(t.elements)?)
                .ok_or(TypeError::Overflow)?;
            align = align.max(t.align);
            sticky |= t.sticky;
            if let [blk] = &t.blocks[..] {
                if signed(blk.len)? == t.extent() {
                    // One block filling its extent: the copies are one
                    // block, whatever their number (a contiguous type of
                    // 2^31 bytes is made in constant time).
                    b.push(add(s.disp, blk.disp)?, scaled(blk.len)?, blk.prim)?;
                    continue;
                }
            }
            let mut at = s.disp;
            for j in 0..n {
                for blk in &t.blocks {
                    b.push(add(at, blk.disp)?, blk.len, blk.prim)?;
                }
                if b.blocks.len() > MAX_BLOCKS {
                    return Err(too_many());
                }
                if j + 1 < n {
                    at = add(at, t.extent())?;
                }
            }
        }
        let (lb, mut ub) = bounds.unwrap_or((0, 0));
        if pad && !sticky {
            let rem = (ub - lb).rem_euclid(align as isize);
            if rem != 0 {
                ub = add(ub, align as isize - rem)?;
            }
        }
        let true_lb = b.true_lb.unwrap_or(0);
        let true_ub = if b.true_lb.is_some() { b.true_ub } else { 0 };
        Ok(TypeMap {
            blocks: b.blocks,
            runs: b.runs,
            size,
            ext_size,
            elements,
            lb,
            ub,
            true_lb,
            true_ub,
            align,
            sticky,
        })
    }

    /// `MPI_Type_contiguous` (§5.1.2): `count` copies back to back.
    pub fn contiguous(count: usize, old: &TypeMap) -> TypeResult<Self> {
        let seg = Segment {
            disp: 0,
            copies: count,
            old,
        };
        Self::build([Ok(seg)], false)
    }

    /// `MPI_Type_vector` (§5.1.2): `count` blocks of `blocklen` elements,
    /// `stride` elements apart.
    pub fn vector(count: usize, blocklen: usize, stride: isize, old: &TypeMap) -> TypeResult<Self> {
        Self::hvector(count, blocklen, mul(stride, old.extent())?, old)
    }

    /// `MPI_Type_create_hvector` (§5.1.2): as `vector` with the stride in
    /// bytes.
    pub fn hvector(
        count: usize,
        blocklen: usize,
        stride: isize,
        old: &TypeMap,
    ) -> TypeResult<Self> {
        if signed(blocklen)
            .ok()
            .and_then(|b| b.checked_mul(old.extent()))
            == Some(stride)
        {
            // Blocks back to back: the same type map as one contiguous
            // run of all the elements.
            let n = count.checked_mul(blocklen).ok_or(TypeError::Overflow)?;
            return Self::contiguous(n, old);
        }
        // Made lazily: a vector of 2^31 blocks must fail on the block
        // limit, not first allocate 2^31 segments.
        let segs = (0..count).map(|i| {
            Ok(Segment {
                disp: mul(signed(i)?, stride)?,
                copies: blocklen,
                old,
            })
        });
        Self::build(segs, false)
    }

    /// `MPI_Type_indexed` (§5.1.2): blocks of `blocklens[i]` elements at
    /// `disps[i]` elements.
    pub fn indexed(blocklens: &[usize], disps: &[isize], old: &TypeMap) -> TypeResult<Self> {
        let bytes = disps
            .iter()
            .map(|&d| mul(d, old.extent()))
            .collect::<TypeResult<Vec<_>>>()?;
        Self::hindexed(blocklens, &bytes, old)
    }

    /// `MPI_Type_create_hindexed` (§5.1.2): as `indexed` with the
    /// displacements in bytes.
    pub fn hindexed(blocklens: &[usize], disps: &[isize], old: &TypeMap) -> TypeResult<Self> {
        if blocklens.len() != disps.len() {
            return Err(TypeError::Invalid("as many block lengths as displacements"));
        }
        let segs = blocklens
            .iter()
            .zip(disps)
            .map(|(&copies, &disp)| Ok(Segment { disp, copies, old }));
        Self::build(segs, false)
    }

    /// `MPI_Type_create_indexed_block` (§5.1.2): blocks of one length at
    /// element displacements.
    pub fn indexed_block(blocklen: usize, disps: &[isize], old: &TypeMap) -> TypeResult<Self> {
        Self::indexed(&vec![blocklen; disps.len()], disps, old)
    }

    /// `MPI_Type_create_hindexed_block` (§5.1.2): blocks of one length at
    /// byte displacements.
    pub fn hindexed_block(blocklen: usize, disps: &[isize], old: &TypeMap) -> TypeResult<Self> {
        Self::hindexed(&vec![blocklen; disps.len()], disps, old)
    }

    /// `MPI_Type_create_struct` (§5.1.2): blocks of `blocklens[i]`
    /// elements of `types[i]` at byte displacements; the extent is padded
    /// to the largest alignment unless a constituent has explicit bounds.
    pub fn structure(blocklens: &[usize], disps: &[isize], types: &[&TypeMap]) -> TypeResult<Self> {
        if blocklens.len() != disps.len() || blocklens.len() != types.len() {
            return Err(TypeError::Invalid(
                "as many block lengths, displacements and types",
            ));
        }
        let segs = (0..types.len()).map(|i| {
            Ok(Segment {
                disp: disps[i],
                copies: blocklens[i],
                old: types[i],
            })
        });
        Self::build(segs, true)
    }

    /// `MPI_Type_create_resized` (§5.1.7): the same data with lower bound
    /// `lb` and extent `extent`.
    pub fn resized(old: &TypeMap, lb: isize, extent: isize) -> TypeResult<Self> {
        Ok(TypeMap {
            lb,
            ub: add(lb, extent)?,
            sticky: true,
            ..old.clone()
        })
    }

    /// `MPI_Type_create_subarray` (§5.1.3): the `subsizes` block starting
    /// at `starts` of an array of `sizes` elements; lower bound 0, extent
    /// the whole array.
    pub fn subarray(
        sizes: &[usize],
        subsizes: &[usize],
        starts: &[usize],
        order: Order,
        old: &TypeMap,
    ) -> TypeResult<Self> {
        let n = sizes.len();
        if n == 0 || subsizes.len() != n || starts.len() != n {
            return Err(TypeError::Invalid(
                "one size, subsize and start per dimension",
            ));
        }
        for k in 0..n {
            if sizes[k] == 0
                || starts[k]
                    .checked_add(subsizes[k])
                    .is_none_or(|e| e > sizes[k])
            {
                return Err(TypeError::Invalid("subarray outside its array"));
            }
        }
        let mut t = old.clone();
        let (mut stride, mut offset) = (old.extent(), 0isize);
        for k in memory_order(n, order) {
            t = Self::hvector(subsizes[k], 1, stride, &t)?;
            offset = add(offset, mul(signed(starts[k])?, stride)?)?;
            stride = mul(stride, signed(sizes[k])?)?;
        }
        t = Self::hindexed(&[1], &[offset], &t)?;
        Self::resized(&t, 0, stride)
    }

    /// `MPI_Type_create_darray` (§5.1.4): the part of a `gsizes` array
    /// that process `rank` of `size` owns when the array is distributed
    /// over a `psizes` process grid (ranks in row-major order).
    pub fn darray(
        size: usize,
        rank: usize,
        gsizes: &[usize],
        distribs: &[Distribution],
        psizes: &[usize],
        order: Order,
        old: &TypeMap,
    ) -> TypeResult<Self> {
        let n = gsizes.len();
        if n == 0 || distribs.len() != n || psizes.len() != n {
            return Err(TypeError::Invalid(
                "one gsize, distribution and psize per dimension",
            ));
        }
        let grid = psizes
            .iter()
            .try_fold(1usize, |a, &p| a.checked_mul(p))
            .ok_or(TypeError::Overflow)?;
        if grid != size || rank >= size || psizes.contains(&0) {
            return Err(TypeError::Invalid(
                "the process grid must hold size processes",
            ));
        }
        let mut coords = vec![0; n];
        let mut r = rank;
        for k in (0..n).rev() {
            coords[k] = r % psizes[k];
            r /= psizes[k];
        }
        let mut t = old.clone();
        let mut stride = old.extent();
        for k in memory_order(n, order) {
            let runs = owned(gsizes[k], distribs[k], psizes[k], coords[k])?;
            let lens: Vec<usize> = runs.iter().map(|r| r.1).collect();
            let disps = runs
                .iter()
                .map(|r| mul(signed(r.0)?, stride))
                .collect::<TypeResult<Vec<_>>>()?;
            t = Self::hindexed(&lens, &disps, &t)?;
            stride = mul(stride, signed(gsizes[k])?)?;
            t = Self::resized(&t, 0, stride)?;
        }
        Ok(t)
    }

    /// `MPI_Type_size`: bytes of data in one element.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Lower bound (§5.1.7).
    pub fn lb(&self) -> isize {
        self.lb
    }

    /// Upper bound.
    pub fn ub(&self) -> isize {
        self.ub
    }

    /// Extent: upper bound minus lower bound.
    pub fn extent(&self) -> isize {
        self.ub - self.lb
    }

    /// True lower bound: the lowest displacement of data (§5.1.8).
    pub fn true_lb(&self) -> isize {
        self.true_lb
    }

    /// True extent: the span of the data.
    pub fn true_extent(&self) -> isize {
        self.true_ub - self.true_lb
    }

    /// The blocks of one element, in type-map order.
    pub fn blocks(&self) -> &[Block] {
        &self.blocks
    }

    /// Primitive elements in one element (`MPI_Get_elements` of one).
    pub fn elements(&self) -> usize {
        self.elements
    }

    /// The primitive type every block is made of, if there is one.
    pub fn homogeneous(&self) -> Option<Prim> {
        let p = self.blocks.first()?.prim;
        self.blocks.iter().all(|b| b.prim == p).then_some(p)
    }

    /// Where `count` elements' data are in memory, from the origin, if
    /// they fill one range without a gap: the fast path (no packing).
    pub fn contiguous_range(&self, count: usize) -> Option<(isize, usize)> {
        let len = self.size.checked_mul(count)?;
        if len == 0 {
            return Some((0, 0));
        }
        match self.runs[..] {
            [(d, l)]
                if l == self.size
                    && (count == 1 || (self.extent() == l as isize && d == self.lb)) =>
            {
                Some((d, len))
            }
            _ => None,
        }
    }

    /// The byte range `[lo, hi)` from the origin that `count` elements'
    /// data occupy (`(0, 0)` if there are none).
    pub fn span(&self, count: usize) -> TypeResult<(isize, isize)> {
        if count == 0 || self.size == 0 {
            return Ok((0, 0));
        }
        let last = mul(signed(count - 1)?, self.extent())?;
        Ok((
            add(self.true_lb, last.min(0))?,
            add(self.true_ub, last.max(0))?,
        ))
    }

    /// Bytes `count` elements pack into.
    pub fn packed_size(&self, count: usize) -> TypeResult<usize> {
        self.size.checked_mul(count).ok_or(TypeError::Overflow)
    }

    /// Bytes `count` elements take in `external32`.
    pub fn external32_size(&self, count: usize) -> TypeResult<usize> {
        self.ext_size.checked_mul(count).ok_or(TypeError::Overflow)
    }

    /// Checks that `count` elements fit a buffer of `len` bytes whose
    /// origin is at `origin`; the origin as a signed offset.
    fn check(&self, count: usize, len: usize, origin: isize) -> TypeResult<isize> {
        let (lo, hi) = self.span(count)?;
        let o = origin;
        if lo < hi && (add(o, lo)? < 0 || add(o, hi)? > signed(len)?) {
            return Err(TypeError::OutOfBounds);
        }
        Ok(o)
    }

    /// Calls `f(memory offset, packed offset, block)` for the blocks of
    /// `count` elements in order, from `origin`, until the packed offset
    /// reaches `limit`.
    fn walk(
        &self,
        count: usize,
        origin: isize,
        limit: usize,
        mut f: impl FnMut(usize, usize, &Block),
    ) {
        let mut packed = 0usize;
        let mut base = origin;
        for _ in 0..count {
            for b in &self.blocks {
                if packed >= limit {
                    return;
                }
                f((base + b.disp) as usize, packed, b);
                packed += b.len;
            }
            base += self.extent();
        }
    }

    /// Packs `count` elements from `src` (the origin at `src[origin]`)
    /// into the start of `out`; returns the bytes written
    /// ([`TypeMap::packed_size`]). The origin may lie outside `src` (data
    /// at positive displacements only): it is an offset, not an index.
    ///
    /// # Errors
    ///
    /// [`TypeError::OutOfBounds`] if the data fall outside `src` or `out`
    /// is too short.
    pub fn pack(
        &self,
        count: usize,
        src: &[u8],
        origin: isize,
        out: &mut [u8],
    ) -> TypeResult<usize> {
        let o = self.check(count, src.len(), origin)?;
        let n = self.packed_size(count)?;
        if out.len() < n {
            return Err(TypeError::OutOfBounds);
        }
        if let Some((d, len)) = self.contiguous_range(count) {
            let at = (o + d) as usize;
            out[..len].copy_from_slice(&src[at..at + len]);
            return Ok(n);
        }
        let mut packed = 0usize;
        let mut base = o;
        for _ in 0..count {
            for &(d, len) in &self.runs {
                let at = (base + d) as usize;
                out[packed..packed + len].copy_from_slice(&src[at..at + len]);
                packed += len;
            }
            base += self.extent();
        }
        Ok(n)
    }

    /// Unpacks into `count` elements of `dst` (the origin at
    /// `dst[origin]`) what `packed` holds, which may be less than
    /// `count` elements (a short message): only the bytes present are
    /// written, nothing else of `dst` is touched. Returns the bytes used.
    ///
    /// # Errors
    ///
    /// [`TypeError::OutOfBounds`] if the elements fall outside `dst` or
    /// `packed` holds more than `count` elements.
    pub fn unpack(
        &self,
        count: usize,
        packed: &[u8],
        dst: &mut [u8],
        origin: isize,
    ) -> TypeResult<usize> {
        let o = self.check(count, dst.len(), origin)?;
        let n = self.packed_size(count)?;
        if packed.len() > n {
            return Err(TypeError::OutOfBounds);
        }
        let n = packed.len();
        if let Some((d, _)) = self.contiguous_range(count) {
            let at = (o + d) as usize;
            dst[at..at + n].copy_from_slice(packed);
            return Ok(n);
        }
        let mut done = 0usize;
        let mut base = o;
        'outer: for _ in 0..count {
            for &(d, len) in &self.runs {
                let len = len.min(n - done);
                if len == 0 {
                    break 'outer;
                }
                let at = (base + d) as usize;
                dst[at..at + len].copy_from_slice(&packed[done..done + len]);
                done += len;
            }
            base += self.extent();
        }
        Ok(n)
    }

    /// Calls `f(memory offset from the origin, packed range)` for the
    /// contiguous runs of `count` elements in type-map order, up to
    /// `limit` packed bytes (the last run cut short): how a caller that
    /// holds the memory by raw pointer packs (copy from the offset into
    /// the range) or unpacks (the other way). Bounds are the caller's.
    pub fn for_each_run(
        &self,
        count: usize,
        limit: usize,
        mut f: impl FnMut(isize, std::ops::Range<usize>),
    ) {
        let mut packed = 0usize;
        let mut base = 0isize;
        for _ in 0..count {
            for &(d, len) in &self.runs {
                let len = len.min(limit - packed);
                if len == 0 {
                    return;
                }
                f(base + d, packed..packed + len);
                packed += len;
            }
            base += self.extent();
        }
    }

    /// Converts `count` packed elements (native, as [`TypeMap::pack`]
    /// makes them) to `external32` (§14.5.2: big-endian, the standard's
    /// sizes) in `out`; returns the bytes written.
    ///
    /// # Errors
    ///
    /// [`TypeError::OutOfBounds`] if `native` or `out` is too short;
    /// [`TypeError::Conversion`] for a value too wide for its `external32`
    /// size.
    pub fn external32_from_packed(
        &self,
        count: usize,
        native: &[u8],
        out: &mut [u8],
    ) -> TypeResult<usize> {
        let n = self.external32_size(count)?;
        if native.len() < self.packed_size(count)? || out.len() < n {
            return Err(TypeError::OutOfBounds);
        }
        let (mut at, mut e_at) = (0usize, 0usize);
        for _ in 0..count {
            for b in &self.blocks {
                let (w, e) = (b.prim.size(), b.prim.external_size());
                for _ in 0..b.len / w {
                    b.prim
                        .to_external(&native[at..at + w], &mut out[e_at..e_at + e])?;
                    at += w;
                    e_at += e;
                }
            }
        }
        Ok(n)
    }

    /// Converts `count` elements of `external32` back to packed native
    /// bytes in `out`; returns the `external32` bytes used.
    ///
    /// # Errors
    ///
    /// [`TypeError::OutOfBounds`] if `ext` or `out` is too short.
    pub fn packed_from_external32(
        &self,
        count: usize,
        ext: &[u8],
        out: &mut [u8],
    ) -> TypeResult<usize> {
        let n = self.external32_size(count)?;
        if ext.len() < n || out.len() < self.packed_size(count)? {
            return Err(TypeError::OutOfBounds);
        }
        let (mut at, mut e_at) = (0usize, 0usize);
        for _ in 0..count {
            for b in &self.blocks {
                let (w, e) = (b.prim.size(), b.prim.external_size());
                for _ in 0..b.len / w {
                    b.prim.to_native(&ext[e_at..e_at + e], &mut out[at..at + w]);
                    at += w;
                    e_at += e;
                }
            }
        }
        Ok(n)
    }

    /// Packs `count` elements from `src` in `external32` into `out`:
    /// [`TypeMap::pack`] then [`TypeMap::external32_from_packed`].
    ///
    /// # Errors
    ///
    /// As for those two.
    pub fn pack_external32(
        &self,
        count: usize,
        src: &[u8],
        origin: isize,
        out: &mut [u8],
    ) -> TypeResult<usize> {
        let mut native = vec![0u8; self.packed_size(count)?];
        self.pack(count, src, origin, &mut native)?;
        self.external32_from_packed(count, &native, out)
    }

    /// Unpacks `count` elements of `external32` into `dst`; returns the
    /// bytes used.
    ///
    /// # Errors
    ///
    /// As for [`TypeMap::packed_from_external32`] and [`TypeMap::unpack`].
    pub fn unpack_external32(
        &self,
        count: usize,
        packed: &[u8],
        dst: &mut [u8],
        origin: isize,
    ) -> TypeResult<usize> {
        let mut native = vec![0u8; self.packed_size(count)?];
        let n = self.packed_from_external32(count, packed, &mut native)?;
        self.unpack(count, &native, dst, origin)?;
        Ok(n)
    }

    /// Primitive elements whole in the first `bytes` packed bytes of a
    /// message of this type (`MPI_Get_elements`, §5.1.11), which may end
    /// in the middle of an element.
    pub fn elements_in(&self, bytes: usize) -> usize {
        if self.size == 0 {
            return 0;
        }
        let whole = bytes / self.size;
        let mut n = whole * self.elements;
        let rest = bytes % self.size;
        self.walk(1, 0, rest, |_, packed, b| {
            n += (b.len.min(rest - packed)) / b.prim.size();
        });
        n
    }
}

/// The dimensions from the fastest-varying in memory to the slowest.
fn memory_order(n: usize, order: Order) -> Vec<usize> {
    match order {
        Order::C => (0..n).rev().collect(),
        Order::Fortran => (0..n).collect(),
    }
}

/// The runs `(start, len)` of indices of a dimension of `g` elements that
/// grid coordinate `c` of `p` owns.
fn owned(g: usize, d: Distribution, p: usize, c: usize) -> TypeResult<Vec<(usize, usize)>> {
    Ok(match d {
        Distribution::None => {
            if p != 1 {
                return Err(TypeError::Invalid(
                    "an undistributed dimension needs one process",
                ));
            }
            vec![(0, g)]
        }
        Distribution::Block(darg) => {
            let b = darg.unwrap_or(g.div_ceil(p));
            if b == 0 && g > 0 || b.checked_mul(p).is_none_or(|t| t < g) {
                return Err(TypeError::Invalid(
                    "block size times processes below the size",
                ));
            }
            let lo = (c * b).min(g);
            let hi = lo.saturating_add(b).min(g);
            vec![(lo, hi - lo)]
        }
        Distribution::Cyclic(darg) => {
            let b = darg.unwrap_or(1);
            if b == 0 {
                return Err(TypeError::Invalid("cyclic block size 0"));
            }
            let step = b.checked_mul(p).ok_or(TypeError::Overflow)?;
            let mut runs = Vec::new();
            let mut s = c * b;
            while s < g {
                runs.push((s, b.min(g - s)));
                s += step;
            }
            runs
        }
    })
}

#[cfg(test)]
mod tests;
