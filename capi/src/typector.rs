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
    self, count, create, resolve, type_error, type_ref, Contents, Datatype, Kind, COMBINER_NAMED,
};
use crate::error::{boundary, Code, Res, MPI_ERR_ARG, MPI_ERR_TYPE};
use crate::ffi;
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
const COMBINER_VALUE_INDEX: c_int = 117;

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

/// Non-negative `int`s (block lengths, sizes) as `usize`; `MPI_ERR_ARG`
/// for a negative one.
fn lengths(v: &[c_int]) -> Res<Vec<usize>> {
    v.iter()
        .map(|&x| usize::try_from(x).map_err(|_| Code(MPI_ERR_ARG)))
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
    combiner: c_int,
    ints: Vec<c_int>,
    aints: Vec<isize>,
    newtype: *mut Handle,
) -> Res<()> {
    let map = map.map_err(type_error)?;
    let contents = Contents {
        combiner,
        ints,
        aints,
        types: vec![type_ref(oldtype, old)],
    };
    // SAFETY: by the caller's contract.
    unsafe { create(map, derived_kind(&[old]), contents, false, newtype) }
}

/// `MPI_Type_contiguous` (§5.1.2): `count` copies of `oldtype`, back to
/// back.
///
/// # Safety
///
/// `newtype` must be valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Type_contiguous(
    n: c_int,
    oldtype: Handle,
    newtype: *mut Handle,
) -> c_int {
    boundary("MPI_Type_contiguous", std::ptr::null_mut(), || {
        let old = resolve(oldtype)?;
        let map = TypeMap::contiguous(count(n)?, &old.map);
        // SAFETY: the caller passes a valid output pointer.
        unsafe {
            finish(
                map,
                oldtype,
                &old,
                COMBINER_CONTIGUOUS,
                vec![n],
                vec![],
                newtype,
            )
        }
    })
}

/// `MPI_Type_vector` (§5.1.2): `count` blocks of `blocklength` elements,
/// `stride` elements apart.
///
/// # Safety
///
/// `newtype` must be valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Type_vector(
    n: c_int,
    blocklength: c_int,
    stride: c_int,
    oldtype: Handle,
    newtype: *mut Handle,
) -> c_int {
    boundary("MPI_Type_vector", std::ptr::null_mut(), || {
        let old = resolve(oldtype)?;
        let bl = lengths(&[blocklength])?[0];
        let map = TypeMap::vector(count(n)?, bl, stride as isize, &old.map);
        let ints = vec![n, blocklength, stride];
        // SAFETY: the caller passes a valid output pointer.
        unsafe { finish(map, oldtype, &old, COMBINER_VECTOR, ints, vec![], newtype) }
    })
}

/// `MPI_Type_create_hvector` (§5.1.2): as `MPI_Type_vector` with the
/// stride in bytes.
///
/// # Safety
///
/// `newtype` must be valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Type_create_hvector(
    n: c_int,
    blocklength: c_int,
    stride: isize,
    oldtype: Handle,
    newtype: *mut Handle,
) -> c_int {
    boundary("MPI_Type_create_hvector", std::ptr::null_mut(), || {
        let old = resolve(oldtype)?;
        let bl = lengths(&[blocklength])?[0];
        let map = TypeMap::hvector(count(n)?, bl, stride, &old.map);
        let ints = vec![n, blocklength];
        // SAFETY: the caller passes a valid output pointer.
        unsafe {
            finish(
                map,
                oldtype,
                &old,
                COMBINER_HVECTOR,
                ints,
                vec![stride],
                newtype,
            )
        }
    })
}

/// `MPI_Type_indexed` (§5.1.2): blocks of `blocklengths[i]` elements at
/// `displacements[i]` elements.
///
/// # Safety
///
/// The arrays must hold `count` values; `newtype` must be valid for a
/// write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Type_indexed(
    n: c_int,
    blocklengths: *const c_int,
    displacements: *const c_int,
    oldtype: Handle,
    newtype: *mut Handle,
) -> c_int {
    boundary("MPI_Type_indexed", std::ptr::null_mut(), || {
        let old = resolve(oldtype)?;
        let k = count(n)?;
        // SAFETY: the caller passes `count` values in each array.
        let (bl, d) = unsafe { (ffi::array(blocklengths, k)?, ffi::array(displacements, k)?) };
        let disps: Vec<isize> = d.iter().map(|&x| x as isize).collect();
        let map = TypeMap::indexed(&lengths(bl)?, &disps, &old.map);
        let ints = [&[n][..], bl, d].concat();
        // SAFETY: the caller passes a valid output pointer.
        unsafe { finish(map, oldtype, &old, COMBINER_INDEXED, ints, vec![], newtype) }
    })
}

/// `MPI_Type_create_hindexed` (§5.1.2): as `MPI_Type_indexed` with the
/// displacements in bytes.
///
/// # Safety
///
/// The arrays must hold `count` values; `newtype` must be valid for a
/// write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Type_create_hindexed(
    n: c_int,
    blocklengths: *const c_int,
    displacements: *const isize,
    oldtype: Handle,
    newtype: *mut Handle,
) -> c_int {
    boundary("MPI_Type_create_hindexed", std::ptr::null_mut(), || {
        let old = resolve(oldtype)?;
        let k = count(n)?;
        // SAFETY: the caller passes `count` values in each array.
        let (bl, d) = unsafe { (ffi::array(blocklengths, k)?, ffi::array(displacements, k)?) };
        let map = TypeMap::hindexed(&lengths(bl)?, d, &old.map);
        let ints = [&[n][..], bl].concat();
        // SAFETY: the caller passes a valid output pointer.
        unsafe {
            finish(
                map,
                oldtype,
                &old,
                COMBINER_HINDEXED,
                ints,
                d.to_vec(),
                newtype,
            )
        }
    })
}

/// `MPI_Type_create_indexed_block` (§5.1.2): blocks of one length at
/// element displacements.
///
/// # Safety
///
/// `displacements` must hold `count` values; `newtype` must be valid for
/// a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Type_create_indexed_block(
    n: c_int,
    blocklength: c_int,
    displacements: *const c_int,
    oldtype: Handle,
    newtype: *mut Handle,
) -> c_int {
    boundary(
        "MPI_Type_create_indexed_block",
        std::ptr::null_mut(),
        || {
            let old = resolve(oldtype)?;
            // SAFETY: the caller passes `count` displacements.
            let d = unsafe { ffi::array(displacements, count(n)?) }?;
            let disps: Vec<isize> = d.iter().map(|&x| x as isize).collect();
            let bl = lengths(&[blocklength])?[0];
            let map = TypeMap::indexed_block(bl, &disps, &old.map);
            let ints = [&[n, blocklength][..], d].concat();
            let c = COMBINER_INDEXED_BLOCK;
            // SAFETY: the caller passes a valid output pointer.
            unsafe { finish(map, oldtype, &old, c, ints, vec![], newtype) }
        },
    )
}

/// `MPI_Type_create_hindexed_block` (§5.1.2): blocks of one length at
/// byte displacements.
///
/// # Safety
///
/// `displacements` must hold `count` values; `newtype` must be valid for
/// a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Type_create_hindexed_block(
    n: c_int,
    blocklength: c_int,
    displacements: *const isize,
    oldtype: Handle,
    newtype: *mut Handle,
) -> c_int {
    boundary(
        "MPI_Type_create_hindexed_block",
        std::ptr::null_mut(),
        || {
            let old = resolve(oldtype)?;
            // SAFETY: the caller passes `count` displacements.
            let d = unsafe { ffi::array(displacements, count(n)?) }?;
            let bl = lengths(&[blocklength])?[0];
            let map = TypeMap::hindexed_block(bl, d, &old.map);
            let c = COMBINER_HINDEXED_BLOCK;
            let ints = vec![n, blocklength];
            // SAFETY: the caller passes a valid output pointer.
            unsafe { finish(map, oldtype, &old, c, ints, d.to_vec(), newtype) }
        },
    )
}

/// `MPI_Type_create_struct` (§5.1.2): blocks of `blocklengths[i]`
/// elements of `types[i]` at byte displacements.
///
/// # Safety
///
/// The arrays must hold `count` values; `newtype` must be valid for a
/// write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Type_create_struct(
    n: c_int,
    blocklengths: *const c_int,
    displacements: *const isize,
    types: *const Handle,
    newtype: *mut Handle,
) -> c_int {
    boundary("MPI_Type_create_struct", std::ptr::null_mut(), || {
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
        let map = TypeMap::structure(&lengths(bl)?, d, &maps).map_err(type_error)?;
        let refs: Vec<&Datatype> = olds.iter().map(|d| &**d).collect();
        let contents = Contents {
            combiner: COMBINER_STRUCT,
            ints: [&[n][..], bl].concat(),
            aints: d.to_vec(),
            types: ts.iter().zip(&olds).map(|(&h, d)| type_ref(h, d)).collect(),
        };
        // SAFETY: the caller passes a valid output pointer.
        unsafe { create(map, derived_kind(&refs), contents, false, newtype) }
    })
}

/// `MPI_Type_create_subarray` (§5.1.3): a block of an n-dimensional
/// array, in C or Fortran order.
///
/// # Safety
///
/// The arrays must hold `ndims` values; `newtype` must be valid for a
/// write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Type_create_subarray(
    ndims: c_int,
    sizes: *const c_int,
    subsizes: *const c_int,
    starts: *const c_int,
    ord: c_int,
    oldtype: Handle,
    newtype: *mut Handle,
) -> c_int {
    boundary("MPI_Type_create_subarray", std::ptr::null_mut(), || {
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
        let ints = [&[ndims][..], s, ss, st, &[ord]].concat();
        // SAFETY: the caller passes a valid output pointer.
        unsafe { finish(map, oldtype, &old, COMBINER_SUBARRAY, ints, vec![], newtype) }
    })
}

/// `MPI_Type_create_darray` (§5.1.4): process `rank`'s part of an array
/// distributed block-wise or cyclically over a process grid.
///
/// # Safety
///
/// The arrays must hold `ndims` values; `newtype` must be valid for a
/// write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Type_create_darray(
    size: c_int,
    rank: c_int,
    ndims: c_int,
    gsizes: *const c_int,
    distribs: *const c_int,
    dargs: *const c_int,
    psizes: *const c_int,
    ord: c_int,
    oldtype: Handle,
    newtype: *mut Handle,
) -> c_int {
    boundary("MPI_Type_create_darray", std::ptr::null_mut(), || {
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
        let ints = [&[size, rank, ndims][..], g, di, da, p, &[ord]].concat();
        // SAFETY: the caller passes a valid output pointer.
        unsafe { finish(map, oldtype, &old, COMBINER_DARRAY, ints, vec![], newtype) }
    })
}

/// `MPI_Type_create_resized` (§5.1.7): the same data with a new lower
/// bound and extent.
///
/// # Safety
///
/// `newtype` must be valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Type_create_resized(
    oldtype: Handle,
    lb: isize,
    extent: isize,
    newtype: *mut Handle,
) -> c_int {
    boundary("MPI_Type_create_resized", std::ptr::null_mut(), || {
        let old = resolve(oldtype)?;
        let map = TypeMap::resized(&old.map, lb, extent);
        let c = COMBINER_RESIZED;
        // SAFETY: the caller passes a valid output pointer.
        unsafe { finish(map, oldtype, &old, c, vec![], vec![lb, extent], newtype) }
    })
}

/// `MPI_Type_get_value_index` (§6.9.4): the pair type of a value type and
/// an index type for `MPI_MINLOC`/`MPI_MAXLOC`: the predefined one where
/// there is one (`MPI_DOUBLE_INT`, ...), else a new committed type
/// `{value, index}` laid out as a C struct.
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
        let (vt, it) = (resolve(value)?, resolve(index)?);
        let named = match (handles::value(value), handles::value(index)) {
            (0x210, 0x209) => Some(0x228), // MPI_FLOAT, MPI_INT
            (0x214, 0x209) => Some(0x229), // MPI_DOUBLE
            (0x20a, 0x209) => Some(0x22a), // MPI_LONG
            (0x209, 0x209) => Some(0x22b), // MPI_INT
            (0x208, 0x209) => Some(0x22c), // MPI_SHORT
            (0x220, 0x209) => Some(0x22d), // MPI_LONG_DOUBLE
            _ => None,
        };
        if let Some(v) = named {
            // SAFETY: the caller passes a valid output pointer.
            return unsafe { ffi::out(pair, handles::handle(v)) };
        }
        let align = it
            .map
            .blocks()
            .iter()
            .map(|b| b.prim.align())
            .max()
            .unwrap_or(1);
        let at = usize::try_from(vt.map.extent())
            .map_err(|_| Code(MPI_ERR_TYPE))?
            .next_multiple_of(align) as isize;
        let map = TypeMap::structure(&[1, 1], &[0, at], &[&vt.map, &it.map]).map_err(type_error)?;
        let contents = Contents {
            combiner: COMBINER_VALUE_INDEX,
            ints: vec![],
            aints: vec![],
            types: vec![type_ref(value, &vt), type_ref(index, &it)],
        };
        // SAFETY: the caller passes a valid output pointer.
        unsafe { create(map, Kind::Opaque, contents, true, pair) }
    })
}

/// `MPI_Type_get_envelope` (§5.1.13): how many integers, addresses and
/// datatypes `MPI_Type_get_contents` returns, and the combiner.
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
    boundary("MPI_Type_get_envelope", std::ptr::null_mut(), || {
        let d = resolve(dt)?;
        let (ni, na, nd, c) = match &d.contents {
            None => (0, 0, 0, COMBINER_NAMED),
            Some(c) => (c.ints.len(), c.aints.len(), c.types.len(), c.combiner),
        };
        let big = |n: usize| c_int::try_from(n).map_err(|_| Code(MPI_ERR_ARG));
        // SAFETY: the caller passes valid output pointers.
        unsafe {
            ffi::out(num_integers, big(ni)?)?;
            ffi::out(num_addresses, big(na)?)?;
            ffi::out(num_datatypes, big(nd)?)?;
            ffi::out(combiner, c)
        }
    })
}

/// `MPI_Type_get_contents` (§5.1.13): the arguments of the constructor
/// call that made `dt`. Derived old types come back as new handles the
/// caller frees; `MPI_ERR_TYPE` for a predefined type.
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
    boundary("MPI_Type_get_contents", std::ptr::null_mut(), || {
        let d = resolve(dt)?;
        let c = d.contents.as_ref().ok_or(Code(MPI_ERR_TYPE))?;
        let (mi, ma, md) = (
            count(max_integers)?,
            count(max_addresses)?,
            count(max_datatypes)?,
        );
        if mi < c.ints.len() || ma < c.aints.len() || md < c.types.len() {
            return Err(Code(MPI_ERR_ARG));
        }
        // SAFETY: the caller passes arrays of the sizes it gives.
        let (i, a, t) = unsafe {
            (
                ffi::array_mut(integers, c.ints.len())?,
                ffi::array_mut(addresses, c.aints.len())?,
                ffi::array_mut(datatypes, c.types.len())?,
            )
        };
        i.copy_from_slice(&c.ints);
        a.copy_from_slice(&c.aints);
        for (slot, r) in t.iter_mut().zip(&c.types) {
            *slot = datatype::handle_of(r);
        }
        Ok(())
    })
}
