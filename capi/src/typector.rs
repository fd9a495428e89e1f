//! Datatype constructors (MPI 5.0 §5.1.2–§5.1.4, §5.1.7) and the
//! decoding of a datatype into the call that made it (§5.1.13,
//! `MPI_Type_get_envelope`, `MPI_Type_get_contents`). The type maps are
//! the `mpi` crate's (`mpi::typemap`); this file checks arguments and
//! records each constructor's arguments for decoding.

use o2g_mpi_abi_macros::export;
use std::ffi::c_int;
use std::sync::Arc;

use mpi::typemap::{Distribution, Order, TypeMap};

use crate::datatype::{
    self, count, create, resolve, type_error, type_ref, Contents, Count, Datatype, Kind,
    COMBINER_NAMED,
};
use crate::error::{boundary, Code, Res, MPI_ERR_ARG, MPI_ERR_COUNT, MPI_ERR_TYPE};
use crate::ffi::{self, int_and_c};
use crate::handles::{self, Handle};

const COMBINER_CONTIGUOUS: c_int = 103;
const COMBINER_VECTOR: c_int = 104;
const COMBINER_HVECTOR: c_int = 105;
const COMBINER_INDEXED: c_int = 106;
const COMBINER_HINDEXED: c_int = 107;
const COMBINER_INDEXED_BLOCK: c_int = 108;
const COMBINER_HINDEXED_BLOCK: c_int = 109;
const COMBINER_STRUCT: c_int = 110;
const COMBINER_SUBARRAY: c_int = 111;
const COMBINER_DARRAY: c_int = 112;
const COMBINER_RESIZED: c_int = 116;

/// `MPI_ORDER_C` and `MPI_ORDER_FORTRAN`.
fn order(o: c_int) -> Res<Order> {
    match o {
        12 => Ok(Order::C),
        15 => Ok(Order::Fortran),
        _ => Err(Code(MPI_ERR_ARG)),
    }
}

/// The element kind of a type built from `olds`: theirs if they all
/// share it and each is made of one primitive type (a vector of doubles
/// reduces as doubles), otherwise moved only.
fn derived_kind(olds: &[&Datatype]) -> Kind {
    let Some(first) = olds.first() else {
        return Kind::Opaque;
    };
    let prim = first.map.homogeneous();
    let same = olds.iter().all(|d| {
        d.kind == first.kind && d.map.homogeneous().is_some() && d.map.homogeneous() == prim
    });
    if same {
        first.kind
    } else {
        Kind::Opaque
    }
}

/// An integer argument of a type constructor, recorded as
/// `MPI_Type_get_contents` returns it: an `int` among the integers, an
/// `MPI_Aint` among the addresses, an `MPI_Count` (the `_c`
/// constructors, §5.1.13) among the large counts.
trait Arg: Copy + TryInto<usize> + TryInto<isize> {
    /// Appends `v` to the arguments of its kind in `to`.
    fn record(v: &[Self], to: &mut Contents);
}

impl Arg for c_int {
    fn record(v: &[Self], to: &mut Contents) {
        to.ints.extend_from_slice(v);
    }
}

impl Arg for isize {
    fn record(v: &[Self], to: &mut Contents) {
        to.aints.extend_from_slice(v);
    }
}

impl Arg for i64 {
    fn record(v: &[Self], to: &mut Contents) {
        to.counts.extend_from_slice(v);
    }
}

/// Non-negative lengths (block lengths, sizes) as `usize`;
/// `MPI_ERR_ARG` for a negative one.
fn lengths<N: Arg>(v: &[N]) -> Res<Vec<usize>> {
    v.iter()
        .map(|&x| x.try_into().map_err(|_| Code(MPI_ERR_ARG)))
        .collect()
}

/// Displacements or strides as `isize`; `MPI_ERR_COUNT` for one that
/// does not fit.
fn disps<N: Arg>(v: &[N]) -> Res<Vec<isize>> {
    v.iter()
        .map(|&x| x.try_into().map_err(|_| Code(MPI_ERR_COUNT)))
        .collect()
}

/// Records a new derived type made from `oldtype` (one old type) and
/// writes its handle.
///
/// # Safety
///
/// `newtype` is valid for a write of one handle.
unsafe fn finish(
    map: Result<TypeMap, mpi::typemap::TypeError>,
    oldtype: Handle,
    old: &Arc<Datatype>,
    mut contents: Contents,
    newtype: *mut Handle,
) -> Res<()> {
    let map = map.map_err(type_error)?;
    contents.types = vec![type_ref(oldtype, old)];
    // SAFETY: by the caller's contract.
    unsafe { create(map, derived_kind(&[old]), contents, false, newtype) }
}

/// `MPI_Type_contiguous` and `MPI_Type_contiguous_c`.
///
/// # Safety
///
/// `newtype` must be valid for a write of one handle.
unsafe fn contiguous<N: Arg>(name: &str, n: N, oldtype: Handle, newtype: *mut Handle) -> c_int {
    boundary(name, std::ptr::null_mut(), || {
        let old = resolve(oldtype)?;
        let map = TypeMap::contiguous(count(n)?, &old.map);
        let mut c = Contents::new(COMBINER_CONTIGUOUS);
        N::record(&[n], &mut c);
        // SAFETY: the caller passes a valid output pointer.
        unsafe { finish(map, oldtype, &old, c, newtype) }
    })
}

int_and_c! {
    /// `MPI_Type_contiguous` (§5.1.2): `count` copies of `oldtype`, back to
    /// back.
    fn MPI_Type_contiguous / MPI_Type_contiguous_c(
        n: [N], oldtype: [Handle], newtype: [*mut Handle],
    ) => contiguous;
}

/// `MPI_Type_vector`, `MPI_Type_create_hvector` and their `_c` forms:
/// the stride in elements (`bytes` false) or in bytes.
///
/// # Safety
///
/// `newtype` must be valid for a write of one handle.
#[allow(clippy::too_many_arguments)]
unsafe fn strided<N: Arg, A: Arg>(
    name: &str,
    bytes: bool,
    n: N,
    blocklength: N,
    stride: A,
    oldtype: Handle,
    newtype: *mut Handle,
) -> c_int {
    boundary(name, std::ptr::null_mut(), || {
        let old = resolve(oldtype)?;
        let bl = lengths(&[blocklength])?[0];
        let st = disps(&[stride])?[0];
        let map = if bytes {
            TypeMap::hvector(count(n)?, bl, st, &old.map)
        } else {
            TypeMap::vector(count(n)?, bl, st, &old.map)
        };
        let mut c = Contents::new(if bytes {
            COMBINER_HVECTOR
        } else {
            COMBINER_VECTOR
        });
        N::record(&[n, blocklength], &mut c);
        A::record(&[stride], &mut c);
        // SAFETY: the caller passes a valid output pointer.
        unsafe { finish(map, oldtype, &old, c, newtype) }
    })
}

int_and_c! {
    /// `MPI_Type_vector` (§5.1.2): `count` blocks of `blocklength` elements,
    /// `stride` elements apart.
    fn MPI_Type_vector / MPI_Type_vector_c(
        n: [N], blocklength: [N], stride: [N], oldtype: [Handle], newtype: [*mut Handle],
    ) => strided(false);
}

int_and_c! {
    /// `MPI_Type_create_hvector` (§5.1.2): as `MPI_Type_vector` with the
    /// stride in bytes.
    fn MPI_Type_create_hvector / MPI_Type_create_hvector_c(
        n: [N], blocklength: [N], stride: [A], oldtype: [Handle], newtype: [*mut Handle],
    ) => strided(true);
}

/// `MPI_Type_indexed`, `MPI_Type_create_hindexed` and their `_c` forms:
/// blocks of `blocklengths[i]` elements at `displacements[i]`, in
/// elements (`bytes` false) or bytes.
///
/// # Safety
///
/// The arrays must hold `count` values; `newtype` must be valid for a
/// write of one handle.
#[allow(clippy::too_many_arguments)]
unsafe fn indexed_any<N: Arg, A: Arg>(
    name: &str,
    bytes: bool,
    n: N,
    blocklengths: *const N,
    displacements: *const A,
    oldtype: Handle,
    newtype: *mut Handle,
) -> c_int {
    boundary(name, std::ptr::null_mut(), || {
        let old = resolve(oldtype)?;
        let k = count(n)?;
        // SAFETY: the caller passes `count` values in each array.
        let (bl, d) = unsafe { (ffi::array(blocklengths, k)?, ffi::array(displacements, k)?) };
        let (lens, ds) = (lengths(bl)?, disps(d)?);
        let map = if bytes {
            TypeMap::hindexed(&lens, &ds, &old.map)
        } else {
            TypeMap::indexed(&lens, &ds, &old.map)
        };
        let mut c = Contents::new(if bytes {
            COMBINER_HINDEXED
        } else {
            COMBINER_INDEXED
        });
        N::record(&[n], &mut c);
        N::record(bl, &mut c);
        A::record(d, &mut c);
        // SAFETY: the caller passes a valid output pointer.
        unsafe { finish(map, oldtype, &old, c, newtype) }
    })
}

int_and_c! {
    /// `MPI_Type_indexed` (§5.1.2): blocks of `blocklengths[i]` elements at
    /// `displacements[i]` elements.
    fn MPI_Type_indexed / MPI_Type_indexed_c(
        n: [N], blocklengths: [*const N], displacements: [*const N], oldtype: [Handle],
        newtype: [*mut Handle],
    ) => indexed_any(false);
}

int_and_c! {
    /// `MPI_Type_create_hindexed` (§5.1.2): as `MPI_Type_indexed` with the
    /// displacements in bytes.
    fn MPI_Type_create_hindexed / MPI_Type_create_hindexed_c(
        n: [N], blocklengths: [*const N], displacements: [*const A], oldtype: [Handle],
        newtype: [*mut Handle],
    ) => indexed_any(true);
}

/// `MPI_Type_create_indexed_block`, `MPI_Type_create_hindexed_block` and
/// their `_c` forms: blocks of one length at displacements in elements
/// (`bytes` false) or bytes.
///
/// # Safety
///
/// `displacements` must hold `count` values; `newtype` must be valid for
/// a write of one handle.
#[allow(clippy::too_many_arguments)]
unsafe fn block_any<N: Arg, A: Arg>(
    name: &str,
    bytes: bool,
    n: N,
    blocklength: N,
    displacements: *const A,
    oldtype: Handle,
    newtype: *mut Handle,
) -> c_int {
    boundary(name, std::ptr::null_mut(), || {
        let old = resolve(oldtype)?;
        // SAFETY: the caller passes `count` displacements.
        let d = unsafe { ffi::array(displacements, count(n)?) }?;
        let (bl, ds) = (lengths(&[blocklength])?[0], disps(d)?);
        let (map, combiner) = if bytes {
            let m = TypeMap::hindexed_block(bl, &ds, &old.map);
            (m, COMBINER_HINDEXED_BLOCK)
        } else {
            let m = TypeMap::indexed_block(bl, &ds, &old.map);
            (m, COMBINER_INDEXED_BLOCK)
        };
        let mut c = Contents::new(combiner);
        N::record(&[n, blocklength], &mut c);
        A::record(d, &mut c);
        // SAFETY: the caller passes a valid output pointer.
        unsafe { finish(map, oldtype, &old, c, newtype) }
    })
}

int_and_c! {
    /// `MPI_Type_create_indexed_block` (§5.1.2): blocks of one length at
    /// element displacements.
    fn MPI_Type_create_indexed_block / MPI_Type_create_indexed_block_c(
        n: [N], blocklength: [N], displacements: [*const N], oldtype: [Handle],
        newtype: [*mut Handle],
    ) => block_any(false);
}

int_and_c! {
    /// `MPI_Type_create_hindexed_block` (§5.1.2): blocks of one length at
    /// byte displacements.
    fn MPI_Type_create_hindexed_block / MPI_Type_create_hindexed_block_c(
        n: [N], blocklength: [N], displacements: [*const A], oldtype: [Handle],
        newtype: [*mut Handle],
    ) => block_any(true);
}

/// `MPI_Type_create_struct` and `MPI_Type_create_struct_c`.
///
/// # Safety
///
/// The arrays must hold `count` values; `newtype` must be valid for a
/// write of one handle.
unsafe fn structure<N: Arg, A: Arg>(
    name: &str,
    n: N,
    blocklengths: *const N,
    displacements: *const A,
    types: *const Handle,
    newtype: *mut Handle,
) -> c_int {
    boundary(name, std::ptr::null_mut(), || {
        let k = count(n)?;
        // SAFETY: the caller passes `count` values in each array.
        let (bl, d, ts) = unsafe {
            (
                ffi::array(blocklengths, k)?,
                ffi::array(displacements, k)?,
                ffi::array(types, k)?,
            )
        };
        let olds = ts.iter().map(|&h| resolve(h)).collect::<Res<Vec<_>>>()?;
        let maps: Vec<&TypeMap> = olds.iter().map(|d| &d.map).collect();
        let map = TypeMap::structure(&lengths(bl)?, &disps(d)?, &maps).map_err(type_error)?;
        let refs: Vec<&Datatype> = olds.iter().map(|d| &**d).collect();
        let mut contents = Contents::new(COMBINER_STRUCT);
        N::record(&[n], &mut contents);
        N::record(bl, &mut contents);
        A::record(d, &mut contents);
        contents.types = ts.iter().zip(&olds).map(|(&h, d)| type_ref(h, d)).collect();
        // SAFETY: the caller passes a valid output pointer.
        unsafe { create(map, derived_kind(&refs), contents, false, newtype) }
    })
}

int_and_c! {
    /// `MPI_Type_create_struct` (§5.1.2): blocks of `blocklengths[i]`
    /// elements of `types[i]` at byte displacements.
    fn MPI_Type_create_struct / MPI_Type_create_struct_c(
        n: [N], blocklengths: [*const N], displacements: [*const A], types: [*const Handle],
        newtype: [*mut Handle],
    ) => structure;
}

/// `MPI_Type_create_subarray` and `MPI_Type_create_subarray_c`.
///
/// # Safety
///
/// The arrays must hold `ndims` values; `newtype` must be valid for a
/// write of one handle.
#[allow(clippy::too_many_arguments)]
unsafe fn subarray<N: Arg>(
    name: &str,
    ndims: c_int,
    sizes: *const N,
    subsizes: *const N,
    starts: *const N,
    ord: c_int,
    oldtype: Handle,
    newtype: *mut Handle,
) -> c_int {
    boundary(name, std::ptr::null_mut(), || {
        let old = resolve(oldtype)?;
        let k = count(ndims)?;
        // SAFETY: the caller passes `ndims` values in each array.
        let (s, ss, st) = unsafe {
            (
                ffi::array(sizes, k)?,
                ffi::array(subsizes, k)?,
                ffi::array(starts, k)?,
            )
        };
        let map = TypeMap::subarray(
            &lengths(s)?,
            &lengths(ss)?,
            &lengths(st)?,
            order(ord)?,
            &old.map,
        );
        let mut c = Contents::new(COMBINER_SUBARRAY);
        c.ints.push(ndims);
        for v in [s, ss, st] {
            N::record(v, &mut c);
        }
        c.ints.push(ord);
        // SAFETY: the caller passes a valid output pointer.
        unsafe { finish(map, oldtype, &old, c, newtype) }
    })
}

int_and_c! {
    /// `MPI_Type_create_subarray` (§5.1.3): a block of an n-dimensional
    /// array, in C or Fortran order.
    fn MPI_Type_create_subarray / MPI_Type_create_subarray_c(
        ndims: [c_int], sizes: [*const N], subsizes: [*const N], starts: [*const N],
        ord: [c_int], oldtype: [Handle], newtype: [*mut Handle],
    ) => subarray;
}

/// `MPI_Type_create_darray` and `MPI_Type_create_darray_c`.
///
/// # Safety
///
/// The arrays must hold `ndims` values; `newtype` must be valid for a
/// write of one handle.
#[allow(clippy::too_many_arguments)]
unsafe fn darray<N: Arg>(
    name: &str,
    size: c_int,
    rank: c_int,
    ndims: c_int,
    gsizes: *const N,
    distribs: *const c_int,
    dargs: *const c_int,
    psizes: *const c_int,
    ord: c_int,
    oldtype: Handle,
    newtype: *mut Handle,
) -> c_int {
    boundary(name, std::ptr::null_mut(), || {
        let old = resolve(oldtype)?;
        let k = count(ndims)?;
        // SAFETY: the caller passes `ndims` values in each array.
        let (g, di, da, p) = unsafe {
            (
                ffi::array(gsizes, k)?,
                ffi::array(distribs, k)?,
                ffi::array(dargs, k)?,
                ffi::array(psizes, k)?,
            )
        };
        let dist = di
            .iter()
            .zip(da)
            .map(|(&d, &a)| {
                let arg = match a {
                    19 => None, // MPI_DISTRIBUTE_DFLT_DARG
                    a => Some(usize::try_from(a).map_err(|_| Code(MPI_ERR_ARG))?),
                };
                match d {
                    16 => Ok(Distribution::None),
                    17 => Ok(Distribution::Block(arg)),
                    18 => Ok(Distribution::Cyclic(arg)),
                    _ => Err(Code(MPI_ERR_ARG)),
                }
            })
            .collect::<Res<Vec<_>>>()?;
        let (sz, rk) = (lengths(&[size])?[0], lengths(&[rank])?[0]);
        let map = TypeMap::darray(
            sz,
            rk,
            &lengths(g)?,
            &dist,
            &lengths(p)?,
            order(ord)?,
            &old.map,
        );
        let mut c = Contents::new(COMBINER_DARRAY);
        c.ints.extend_from_slice(&[size, rank, ndims]);
        N::record(g, &mut c);
        c.ints.extend([di, da, p].concat());
        c.ints.push(ord);
        // SAFETY: the caller passes a valid output pointer.
        unsafe { finish(map, oldtype, &old, c, newtype) }
    })
}

int_and_c! {
    /// `MPI_Type_create_darray` (§5.1.4): process `rank`'s part of an array
    /// distributed block-wise or cyclically over a process grid.
    fn MPI_Type_create_darray / MPI_Type_create_darray_c(
        size: [c_int], rank: [c_int], ndims: [c_int], gsizes: [*const N],
        distribs: [*const c_int], dargs: [*const c_int], psizes: [*const c_int], ord: [c_int],
        oldtype: [Handle], newtype: [*mut Handle],
    ) => darray;
}

/// `MPI_Type_create_resized` and `MPI_Type_create_resized_c`.
///
/// # Safety
///
/// `newtype` must be valid for a write of one handle.
unsafe fn resized<A: Arg>(
    name: &str,
    oldtype: Handle,
    lb: A,
    extent: A,
    newtype: *mut Handle,
) -> c_int {
    boundary(name, std::ptr::null_mut(), || {
        let old = resolve(oldtype)?;
        let b = disps(&[lb, extent])?;
        let map = TypeMap::resized(&old.map, b[0], b[1]);
        let mut c = Contents::new(COMBINER_RESIZED);
        A::record(&[lb, extent], &mut c);
        // SAFETY: the caller passes a valid output pointer.
        unsafe { finish(map, oldtype, &old, c, newtype) }
    })
}

int_and_c! {
    /// `MPI_Type_create_resized` (§5.1.7): the same data with a new lower
    /// bound and extent.
    fn MPI_Type_create_resized / MPI_Type_create_resized_c(
        oldtype: [Handle], lb: [A], extent: [A], newtype: [*mut Handle],
    ) => resized;
}

/// `MPI_Type_get_value_index` (§6.9.4): the predefined pair type of a
/// value type and an index type for `MPI_MINLOC`/`MPI_MAXLOC`
/// (`MPI_DOUBLE_INT`, ...), or `MPI_DATATYPE_NULL` for a combination that
/// has none (the standard's answer: the function never creates a type).
///
/// # Safety
///
/// `pair` must be valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Type_get_value_index(
    value: Handle,
    index: Handle,
    pair: *mut Handle,
) -> c_int {
    boundary("MPI_Type_get_value_index", std::ptr::null_mut(), || {
        resolve(value)?;
        resolve(index)?;
        let named = match (handles::value(value), handles::value(index)) {
            (0x210, 0x209) => 0x228, // MPI_FLOAT, MPI_INT
            (0x214, 0x209) => 0x229, // MPI_DOUBLE
            (0x20a, 0x209) => 0x22a, // MPI_LONG
            (0x209, 0x209) => 0x22b, // MPI_INT
            (0x208, 0x209) => 0x22c, // MPI_SHORT
            (0x220, 0x209) => 0x22d, // MPI_LONG_DOUBLE
            _ => 0x200,              // MPI_DATATYPE_NULL
        };
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(pair, handles::handle(named)) }
    })
}

/// `MPI_Type_get_envelope` and `MPI_Type_get_envelope_c`: the numbers
/// as `T`s; without `num_large_counts` (the `int` form) a type made by
/// a `_c` constructor, whose large counts it cannot describe, is
/// `MPI_ERR_TYPE`.
///
/// # Safety
///
/// The output pointers must be valid for a write of one value each.
unsafe fn envelope<T: TryFrom<usize>>(
    name: &str,
    dt: Handle,
    num_integers: *mut T,
    num_addresses: *mut T,
    num_large_counts: Option<*mut T>,
    num_datatypes: *mut T,
    combiner: *mut c_int,
) -> c_int {
    boundary(name, std::ptr::null_mut(), || {
        let d = resolve(dt)?;
        let (ni, na, nc, nd, c) = match &d.contents {
            None => (0, 0, 0, 0, COMBINER_NAMED),
            Some(c) => (
                c.ints.len(),
                c.aints.len(),
                c.counts.len(),
                c.types.len(),
                c.combiner,
            ),
        };
        let big = |n: usize| T::try_from(n).map_err(|_| Code(MPI_ERR_ARG));
        // SAFETY: the caller passes valid output pointers.
        unsafe {
            match num_large_counts {
                Some(p) => ffi::out(p, big(nc)?)?,
                None if nc > 0 => return Err(Code(MPI_ERR_TYPE)),
                None => {}
            }
            ffi::out(num_integers, big(ni)?)?;
            ffi::out(num_addresses, big(na)?)?;
            ffi::out(num_datatypes, big(nd)?)?;
            ffi::out(combiner, c)
        }
    })
}

/// `MPI_Type_get_envelope` (§5.1.13): how many integers, addresses and
/// datatypes `MPI_Type_get_contents` returns, and the combiner;
/// `MPI_ERR_TYPE` for a type made by a large-count constructor (use
/// `MPI_Type_get_envelope_c`).
///
/// # Safety
///
/// The four output pointers must be valid for a write of one `int` each.
#[export]
pub(crate) unsafe extern "C" fn MPI_Type_get_envelope(
    dt: Handle,
    num_integers: *mut c_int,
    num_addresses: *mut c_int,
    num_datatypes: *mut c_int,
    combiner: *mut c_int,
) -> c_int {
    let (name, (ni, na, nd)) = (
        "MPI_Type_get_envelope",
        (num_integers, num_addresses, num_datatypes),
    );
    // SAFETY: the caller's contract is envelope's.
    unsafe { envelope(name, dt, ni, na, None, nd, combiner) }
}

/// `MPI_Type_get_envelope_c` (§5.1.13): as `MPI_Type_get_envelope`, with
/// the number of large counts (the `MPI_Count` arguments of a `_c`
/// constructor).
///
/// # Safety
///
/// The five output pointers must be valid for a write of one value each.
#[export]
pub(crate) unsafe extern "C" fn MPI_Type_get_envelope_c(
    dt: Handle,
    num_integers: *mut i64,
    num_addresses: *mut i64,
    num_large_counts: *mut i64,
    num_datatypes: *mut i64,
    combiner: *mut c_int,
) -> c_int {
    let (name, (ni, na, nd)) = (
        "MPI_Type_get_envelope_c",
        (num_integers, num_addresses, num_datatypes),
    );
    let nc = Some(num_large_counts);
    // SAFETY: the caller's contract is envelope's.
    unsafe { envelope(name, dt, ni, na, nc, nd, combiner) }
}

/// Where `MPI_Type_get_contents(_c)` writes: the sizes of the arrays and
/// the arrays (no large counts in the `int` form).
struct ContentsOut<N> {
    max: [N; 4],
    integers: *mut c_int,
    addresses: *mut isize,
    large_counts: Option<*mut i64>,
    datatypes: *mut Handle,
}

/// `MPI_Type_get_contents` and `MPI_Type_get_contents_c`; without room
/// for large counts (the `int` form), a type made by a `_c` constructor
/// is `MPI_ERR_TYPE`.
///
/// # Safety
///
/// The arrays must be valid for `max` values each.
unsafe fn contents<N: Count>(name: &str, dt: Handle, o: ContentsOut<N>) -> c_int {
    boundary(name, std::ptr::null_mut(), || {
        let d = resolve(dt)?;
        let c = d.contents.as_ref().ok_or(Code(MPI_ERR_TYPE))?;
        let [mi, ma, mc, md] = o.max.map(count);
        let lc = match o.large_counts {
            Some(p) if mc? >= c.counts.len() => p,
            Some(_) => return Err(Code(MPI_ERR_ARG)),
            None if c.counts.is_empty() => std::ptr::null_mut(),
            None => return Err(Code(MPI_ERR_TYPE)),
        };
        if mi? < c.ints.len() || ma? < c.aints.len() || md? < c.types.len() {
            return Err(Code(MPI_ERR_ARG));
        }
        // SAFETY: the caller passes arrays of the sizes it gives.
        let (i, a, l, t) = unsafe {
            (
                ffi::array_mut(o.integers, c.ints.len())?,
                ffi::array_mut(o.addresses, c.aints.len())?,
                ffi::array_mut(lc, c.counts.len())?,
                ffi::array_mut(o.datatypes, c.types.len())?,
            )
        };
        i.copy_from_slice(&c.ints);
        a.copy_from_slice(&c.aints);
        l.copy_from_slice(&c.counts);
        for (slot, r) in t.iter_mut().zip(&c.types) {
            *slot = datatype::handle_of(r);
        }
        Ok(())
    })
}

/// `MPI_Type_get_contents` (§5.1.13): the arguments of the constructor
/// call that made `dt`. Derived old types come back as new handles the
/// caller frees; `MPI_ERR_TYPE` for a predefined type, or one made by a
/// large-count constructor (use `MPI_Type_get_contents_c`).
///
/// # Safety
///
/// The arrays must be valid for `max_*` values each.
#[export]
pub(crate) unsafe extern "C" fn MPI_Type_get_contents(
    dt: Handle,
    max_integers: c_int,
    max_addresses: c_int,
    max_datatypes: c_int,
    integers: *mut c_int,
    addresses: *mut isize,
    datatypes: *mut Handle,
) -> c_int {
    let o = ContentsOut {
        max: [max_integers, max_addresses, 0, max_datatypes],
        integers,
        addresses,
        large_counts: None,
        datatypes,
    };
    // SAFETY: the caller's contract is contents'.
    unsafe { contents("MPI_Type_get_contents", dt, o) }
}

/// `MPI_Type_get_contents_c` (§5.1.13): as `MPI_Type_get_contents`, with
/// the large counts of a type made by a `_c` constructor.
///
/// # Safety
///
/// The arrays must be valid for `max_*` values each.
#[export]
pub(crate) unsafe extern "C" fn MPI_Type_get_contents_c(
    dt: Handle,
    max_integers: i64,
    max_addresses: i64,
    max_large_counts: i64,
    max_datatypes: i64,
    integers: *mut c_int,
    addresses: *mut isize,
    large_counts: *mut i64,
    datatypes: *mut Handle,
) -> c_int {
    let o = ContentsOut {
        max: [max_integers, max_addresses, max_large_counts, max_datatypes],
        integers,
        addresses,
        large_counts: Some(large_counts),
        datatypes,
    };
    // SAFETY: the caller's contract is contents'.
    unsafe { contents("MPI_Type_get_contents_c", dt, o) }
}
