//! Datatypes (MPI 5.0 chapter 5; predefined C types of §3.2.2, handle
//! values of the standard ABI, §20.3): the table of datatypes, the
//! predefined ones, size and extent inquiries, commit, free, dup and
//! names. The type constructors are in `typector.rs`, packing in
//! `pack.rs`, and how a (buffer, count, datatype) argument becomes bytes
//! to move in `buffer.rs`.
//!
//! Every datatype is an `mpi::typemap::TypeMap` (the `mpi` crate's type
//! maps: blocks, bounds, packing): a predefined type is one primitive
//! element (a pair type such as `MPI_DOUBLE_INT` a struct of two), a
//! derived type what its constructor made. Messages carry packed data
//! (`count × size` bytes); a contiguous type is moved straight from and
//! into the user's memory.

use o2g_mpi_abi_macros::export;
use std::ffi::{c_char, c_int};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use foldhash::{HashMap, HashMapExt};

use mpi::typemap::{Prim, TypeError, TypeMap};

use crate::error::{boundary, Code, Res, MPI_ERR_ARG, MPI_ERR_COUNT, MPI_ERR_TYPE};
use crate::ffi;
use crate::handles::{self, Handle};
use crate::table::Table;

/// The derived datatypes.
static TYPES: Table<Datatype> = Table::new();

/// Names set with `MPI_Type_set_name`, by handle value (predefined
/// types included).
static NAMES: RwLock<Option<HashMap<usize, String>>> = RwLock::new(None);

/// `MPI_DATATYPE_NULL`.
pub(crate) const DATATYPE_NULL: usize = 0x200;

/// What reductions may do with an element (§6.9.2's type groups).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    F32,
    F64,
    /// `MPI_C_BOOL` (group "Logical").
    Bool,
    /// `MPI_BYTE`, `MPI_PACKED` (group "Byte": bitwise operations only).
    Byte,
    /// Moved only: `MPI_CHAR`, `MPI_WCHAR`, long double, complex and pair
    /// types (operations on them are not supported).
    Opaque,
}

/// A summary of a datatype for the reductions: sizes and element kind.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TypeInfo {
    /// `MPI_Type_size`: bytes of data.
    pub(crate) size: usize,
    /// Bytes one element occupies in a buffer (`MPI_Type_get_extent`;
    /// 0 for a negative extent).
    pub(crate) extent: usize,
    /// The element kind (a homogeneous derived type keeps its old
    /// type's).
    pub(crate) kind: Kind,
}

/// One of the datatypes a constructor was called with, for
/// `MPI_Type_get_contents`.
#[derive(Clone)]
pub(crate) enum TypeRef {
    /// A predefined type, by handle value.
    Named(usize),
    /// A derived one.
    Derived(Arc<Datatype>),
}

/// The constructor call that made a derived datatype (§5.1.13): the
/// combiner and its integer, address, large-count (the `_c`
/// constructors') and datatype arguments.
#[derive(Clone)]
pub(crate) struct Contents {
    pub(crate) combiner: c_int,
    pub(crate) ints: Vec<c_int>,
    pub(crate) aints: Vec<isize>,
    pub(crate) counts: Vec<i64>,
    pub(crate) types: Vec<TypeRef>,
}

impl Contents {
    /// The contents of a `combiner` call, its arguments still to add.
    pub(crate) fn new(combiner: c_int) -> Self {
        Self {
            combiner,
            ints: Vec::new(),
            aints: Vec::new(),
            counts: Vec::new(),
            types: Vec::new(),
        }
    }
}

/// A datatype: its type map, its element kind, and for a derived one how
/// it was made.
#[derive(Clone)]
pub(crate) struct Datatype {
    pub(crate) map: TypeMap,
    pub(crate) kind: Kind,
    pub(crate) committed: bool,
    /// `None` for a predefined type (`MPI_COMBINER_NAMED`).
    pub(crate) contents: Option<Contents>,
}

impl Datatype {
    /// The summary the reductions use.
    pub(crate) fn info(&self) -> TypeInfo {
        TypeInfo {
            size: self.map.size(),
            extent: usize::try_from(self.map.extent()).unwrap_or(0),
            kind: self.kind,
        }
    }
}

/// `MPI_COMBINER_NAMED`.
pub(crate) const COMBINER_NAMED: c_int = 101;

/// The `MPI_Aint`-sized signed integer of this ABI.
const AINT: Prim = Prim::Int { mem: 8, ext: 8 };

/// Every predefined datatype: handle value, name, what it is made of
/// (`None`: a pair type built in [`predefined_map`]), element kind.
const PREDEFINED: &[(usize, &str, Option<Prim>, Kind)] = {
    use Kind::*;
    const fn i(mem: u8, ext: u8) -> Option<Prim> {
        Some(Prim::Int { mem, ext })
    }
    const fn u(mem: u8, ext: u8) -> Option<Prim> {
        Some(Prim::Uint { mem, ext })
    }
    const B: Option<Prim> = Some(Prim::Byte);
    const F4: Option<Prim> = Some(Prim::Float(4));
    const F8: Option<Prim> = Some(Prim::Float(8));
    const C4: Option<Prim> = Some(Prim::Complex(4));
    const C8: Option<Prim> = Some(Prim::Complex(8));
    const LD: Option<Prim> = Some(Prim::LongDouble);
    const CLD: Option<Prim> = Some(Prim::ComplexLongDouble);
    &[
        (0x201, "MPI_AINT", Some(AINT), I64),
        (0x202, "MPI_COUNT", i(8, 8), I64),
        (0x203, "MPI_OFFSET", i(8, 8), I64),
        (0x207, "MPI_PACKED", B, Byte),
        (0x208, "MPI_SHORT", i(2, 2), I16),
        (0x209, "MPI_INT", i(4, 4), I32),
        (0x20a, "MPI_LONG", i(8, 4), I64),
        (0x20b, "MPI_LONG_LONG", i(8, 8), I64),
        (0x20c, "MPI_UNSIGNED_SHORT", u(2, 2), U16),
        (0x20d, "MPI_UNSIGNED", u(4, 4), U32),
        (0x20e, "MPI_UNSIGNED_LONG", u(8, 4), U64),
        (0x20f, "MPI_UNSIGNED_LONG_LONG", u(8, 8), U64),
        (0x210, "MPI_FLOAT", F4, F32),
        (0x212, "MPI_C_FLOAT_COMPLEX", C4, Opaque),
        (0x213, "MPI_CXX_FLOAT_COMPLEX", C4, Opaque),
        (0x214, "MPI_DOUBLE", F8, F64),
        (0x216, "MPI_C_DOUBLE_COMPLEX", C8, Opaque),
        (0x217, "MPI_CXX_DOUBLE_COMPLEX", C8, Opaque),
        (0x218, "MPI_LOGICAL", i(4, 4), Opaque),
        (0x219, "MPI_INTEGER", i(4, 4), I32),
        (0x21a, "MPI_REAL", F4, F32),
        (0x21b, "MPI_COMPLEX", C4, Opaque),
        (0x21c, "MPI_DOUBLE_PRECISION", F8, F64),
        (0x21d, "MPI_DOUBLE_COMPLEX", C8, Opaque),
        (0x21e, "MPI_CHARACTER", B, Opaque),
        (0x220, "MPI_LONG_DOUBLE", LD, Opaque),
        (0x224, "MPI_C_LONG_DOUBLE_COMPLEX", CLD, Opaque),
        (0x225, "MPI_CXX_LONG_DOUBLE_COMPLEX", CLD, Opaque),
        (0x228, "MPI_FLOAT_INT", None, Opaque),
        (0x229, "MPI_DOUBLE_INT", None, Opaque),
        (0x22a, "MPI_LONG_INT", None, Opaque),
        (0x22b, "MPI_2INT", None, Opaque),
        (0x22c, "MPI_SHORT_INT", None, Opaque),
        (0x22d, "MPI_LONG_DOUBLE_INT", None, Opaque),
        (0x230, "MPI_2REAL", None, Opaque),
        (0x231, "MPI_2DOUBLE_PRECISION", None, Opaque),
        (0x232, "MPI_2INTEGER", None, Opaque),
        (0x238, "MPI_C_BOOL", B, Bool),
        (0x239, "MPI_CXX_BOOL", B, Opaque),
        (0x23c, "MPI_WCHAR", u(4, 2), Opaque),
        (0x240, "MPI_INT8_T", i(1, 1), I8),
        (0x241, "MPI_UINT8_T", u(1, 1), U8),
        (0x243, "MPI_CHAR", B, Opaque),
        (0x244, "MPI_SIGNED_CHAR", i(1, 1), I8),
        (0x245, "MPI_UNSIGNED_CHAR", u(1, 1), U8),
        (0x247, "MPI_BYTE", B, Byte),
        (0x248, "MPI_INT16_T", i(2, 2), I16),
        (0x249, "MPI_UINT16_T", u(2, 2), U16),
        (0x250, "MPI_INT32_T", i(4, 4), I32),
        (0x251, "MPI_UINT32_T", u(4, 4), U32),
        (0x258, "MPI_INT64_T", i(8, 8), I64),
        (0x259, "MPI_UINT64_T", u(8, 8), U64),
        (0x2c0, "MPI_LOGICAL1", i(1, 1), Opaque),
        (0x2c1, "MPI_INTEGER1", i(1, 1), I8),
        (0x2c8, "MPI_LOGICAL2", i(2, 2), Opaque),
        (0x2c9, "MPI_INTEGER2", i(2, 2), I16),
        (0x2ca, "MPI_REAL2", Some(Prim::Float(2)), Opaque),
        (0x2d0, "MPI_LOGICAL4", i(4, 4), Opaque),
        (0x2d1, "MPI_INTEGER4", i(4, 4), I32),
        (0x2d2, "MPI_REAL4", F4, F32),
        (0x2d3, "MPI_COMPLEX4", Some(Prim::Complex(2)), Opaque),
        (0x2d8, "MPI_LOGICAL8", i(8, 8), Opaque),
        (0x2d9, "MPI_INTEGER8", i(8, 8), I64),
        (0x2da, "MPI_REAL8", F8, F64),
        (0x2db, "MPI_COMPLEX8", C4, Opaque),
        (0x2e0, "MPI_LOGICAL16", i(16, 16), Opaque),
        (0x2e1, "MPI_INTEGER16", i(16, 16), Opaque),
        (0x2e2, "MPI_REAL16", LD, Opaque),
        (0x2e3, "MPI_COMPLEX16", C8, Opaque),
        (0x2eb, "MPI_COMPLEX32", CLD, Opaque),
    ]
};

/// The type map of a pair type: `{value at 0, index at its alignment}`,
/// extent padded as a C struct's.
fn pair_map(value: Prim, index: Prim) -> TypeMap {
    let v = TypeMap::primitive(value);
    let i = TypeMap::primitive(index);
    let at = value.size().next_multiple_of(index.align()) as isize;
    TypeMap::structure(&[1, 1], &[0, at], &[&v, &i]).expect("a pair type is valid")
}

/// The type map of the predefined type `v` made of `prim` (or a pair).
fn predefined_map(v: usize, prim: Option<Prim>) -> TypeMap {
    let int = Prim::Int { mem: 4, ext: 4 };
    match (v, prim) {
        (_, Some(p)) => TypeMap::primitive(p),
        (0x228, _) => pair_map(Prim::Float(4), int),
        (0x229, _) => pair_map(Prim::Float(8), int),
        (0x22a, _) => pair_map(Prim::Int { mem: 8, ext: 4 }, int),
        (0x22c, _) => pair_map(Prim::Int { mem: 2, ext: 2 }, int),
        (0x22d, _) => pair_map(Prim::LongDouble, int),
        (0x230, _) => pair_map(Prim::Float(4), Prim::Float(4)),
        (0x231, _) => pair_map(Prim::Float(8), Prim::Float(8)),
        _ => pair_map(int, int), // 2INT, 2INTEGER
    }
}

/// Every predefined handle value is below this (the standard ABI fixes
/// them all under `0x400`): the predefined datatypes are found by index,
/// without hashing, on every call that names one.
const PREDEFINED_LIMIT: usize = 0x400;

const _: () = {
    let mut i = 0;
    while i < PREDEFINED.len() {
        assert!(PREDEFINED[i].0 < PREDEFINED_LIMIT);
        i += 1;
    }
};

/// A predefined datatype and its name.
type Predefined = (&'static str, Arc<Datatype>);

/// The predefined datatypes, indexed by handle value, built once.
fn predefined_table() -> &'static [Option<Predefined>] {
    static T: OnceLock<Vec<Option<Predefined>>> = OnceLock::new();
    T.get_or_init(|| {
        let mut t = vec![None; PREDEFINED_LIMIT];
        for &(v, name, prim, kind) in PREDEFINED {
            let d = Datatype {
                map: predefined_map(v, prim),
                kind,
                committed: true,
                contents: None,
            };
            t[v] = Some((name, Arc::new(d)));
        }
        t
    })
}

/// The predefined datatype with handle value `v`, and its name.
fn predefined(v: usize) -> Option<&'static Predefined> {
    predefined_table().get(v)?.as_ref()
}

/// Whether handle value `v` is a predefined datatype.
pub(crate) fn is_predefined(v: usize) -> bool {
    predefined(v).is_some()
}

/// The datatype behind `h`, committed or not (`MPI_ERR_TYPE` if none).
pub(crate) fn resolve(h: Handle) -> Res<Arc<Datatype>> {
    if let Some((_, d)) = predefined(handles::value(h)) {
        return Ok(d.clone());
    }
    TYPES.get(h).ok_or(Code(MPI_ERR_TYPE))
}

/// A datatype usable for communication: it must be committed (§5.1.9).
pub(crate) fn resolve_committed(h: Handle) -> Res<Arc<Datatype>> {
    let d = resolve(h)?;
    if d.committed {
        Ok(d)
    } else {
        Err(Code(MPI_ERR_TYPE))
    }
}

/// The summary of the datatype behind `h` (`MPI_ERR_TYPE` if none).
pub(crate) fn lookup(h: Handle) -> Res<TypeInfo> {
    Ok(resolve(h)?.info())
}

/// A count argument of either width: an `int` or, in the large-count
/// `_c` functions (§2.5.8), an `MPI_Count`. One conversion
/// ([`count`]) serves both, so each `_c` function shares its body with
/// its `int` twin.
pub(crate) trait Count: Copy + TryInto<usize> {}

impl<T: Copy + TryInto<usize>> Count for T {}

/// A `count` argument (`int` or `MPI_Count`): negative, or more than
/// `usize` holds, is `MPI_ERR_COUNT`, never truncated.
pub(crate) fn count<N: Count>(n: N) -> Res<usize> {
    n.try_into().map_err(|_| Code(MPI_ERR_COUNT))
}

/// The MPI error class of an error of the type-map engine.
pub(crate) fn type_error(e: TypeError) -> Code {
    Code(match e {
        // The reason goes into the fatal error's message.
        TypeError::Invalid(why) => return crate::error::explained(MPI_ERR_ARG, why),
        TypeError::Overflow => MPI_ERR_COUNT,
        TypeError::OutOfBounds => crate::error::MPI_ERR_TRUNCATE,
        TypeError::Conversion => crate::error::MPI_ERR_CONVERSION,
    })
}

/// Files a new derived (uncommitted unless `committed`) datatype and
/// writes its handle to `out`.
///
/// # Safety
///
/// A non-null `out` is valid for a write of one handle.
pub(crate) unsafe fn create(
    map: TypeMap,
    kind: Kind,
    contents: Contents,
    committed: bool,
    out: *mut Handle,
) -> Res<()> {
    if out.is_null() {
        return Err(Code(MPI_ERR_ARG));
    }
    let h = TYPES.insert(Datatype {
        map,
        kind,
        committed,
        contents: Some(contents),
    });
    // SAFETY: non-null, valid by the caller's contract.
    unsafe { ffi::out(out, h) }
}

/// `MPI_COMBINER_F90_REAL`, `_COMPLEX` and `_INTEGER`: the combiners of
/// the types `MPI_Type_create_f90_*` returns, which may not be freed.
pub(crate) const COMBINERS_F90: [c_int; 3] = [113, 114, 115];

/// The handle of the parameterized Fortran type with `combiner` and
/// arguments `ints` over predefined type `named` (§19.2.5): made once,
/// then the same handle for the same arguments, as the standard's
/// "predefined" handles are.
pub(crate) fn f90_type(combiner: c_int, ints: Vec<c_int>, named: usize) -> Res<Handle> {
    let mut made = f90_made();
    if let Some(m) = made
        .iter()
        .find(|m| m.combiner == combiner && m.ints == ints)
    {
        return Ok(handles::handle(m.handle));
    }
    let base = resolve(handles::handle(named))?;
    let mut contents = Contents::new(combiner);
    contents.ints = ints.clone();
    let h = TYPES.insert(Datatype {
        map: base.map.clone(),
        kind: base.kind,
        committed: true,
        contents: Some(contents),
    });
    made.push(F90Type {
        combiner,
        ints,
        handle: handles::value(h),
        named,
    });
    Ok(h)
}

/// One type `MPI_Type_create_f90_*` made.
struct F90Type {
    combiner: c_int,
    ints: Vec<c_int>,
    handle: usize,
    /// The predefined type it is laid out as.
    named: usize,
}

fn f90_made() -> std::sync::MutexGuard<'static, Vec<F90Type>> {
    static MADE: Mutex<Vec<F90Type>> = Mutex::new(Vec::new());
    MADE.lock().unwrap_or_else(|e| e.into_inner())
}

/// The predefined type an `MPI_Type_create_f90_*` type with handle value
/// `v` is laid out as (for the reductions that know types by value).
pub(crate) fn f90_named(v: usize) -> Option<usize> {
    f90_made().iter().find(|m| m.handle == v).map(|m| m.named)
}

/// A handle for `r`, for `MPI_Type_get_contents`: a predefined type's
/// own, a derived one a new handle the caller frees (§5.1.13).
pub(crate) fn handle_of(r: &TypeRef) -> Handle {
    match r {
        TypeRef::Named(v) => handles::handle(*v),
        TypeRef::Derived(d) => TYPES.insert(Datatype::clone(d)),
    }
}

/// How a constructor refers to old type `h` in its contents.
pub(crate) fn type_ref(h: Handle, d: &Arc<Datatype>) -> TypeRef {
    let v = handles::value(h);
    if is_predefined(v) {
        TypeRef::Named(v)
    } else {
        TypeRef::Derived(d.clone())
    }
}

/// `MPI_Type_size` and its `MPI_Count` forms: the size as a `T`,
/// `MPI_UNDEFINED` if it does not fit (§5.1.5).
///
/// # Safety
///
/// `size` must be valid for a write of one `T`.
unsafe fn size_count<T: TryFrom<u64> + From<c_int>>(name: &str, dt: Handle, size: *mut T) -> c_int {
    boundary(name, std::ptr::null_mut(), || {
        let s = resolve(dt)?.map.size() as u64;
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(size, crate::status::count_or_undefined(Some(s))) }
    })
}

/// `MPI_Type_size` (§5.1.5): bytes of data in one element;
/// `MPI_UNDEFINED` if they do not fit in an `int`.
///
/// # Safety
///
/// `size` must be valid for a write of one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Type_size(dt: Handle, size: *mut c_int) -> c_int {
    // SAFETY: the caller's contract is size_count's.
    unsafe { size_count("MPI_Type_size", dt, size) }
}

/// `MPI_Type_size_c` (§5.1.5): the size as an `MPI_Count`.
///
/// # Safety
///
/// `size` must be valid for a write of one `MPI_Count`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Type_size_c(dt: Handle, size: *mut i64) -> c_int {
    // SAFETY: the caller's contract is size_count's.
    unsafe { size_count("MPI_Type_size_c", dt, size) }
}

/// `MPI_Type_size_x` (§5.1.5, deprecated in MPI 4.1): as `MPI_Type_size_c`.
///
/// # Safety
///
/// `size` must be valid for a write of one `MPI_Count`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Type_size_x(dt: Handle, size: *mut i64) -> c_int {
    // SAFETY: the caller's contract is size_count's.
    unsafe { size_count("MPI_Type_size_x", dt, size) }
}

/// The extent queries: `true_` picks §5.1.8's true bounds over §5.1.7's.
///
/// # Safety
///
/// `lb` and `extent` valid for a write of one `T` each.
unsafe fn bounds<T>(
    name: &str,
    dt: Handle,
    true_: bool,
    lb: *mut T,
    extent: *mut T,
    conv: fn(isize) -> T,
) -> c_int {
    boundary(name, std::ptr::null_mut(), || {
        let d = resolve(dt)?;
        let m = &d.map;
        let (l, e) = if true_ {
            (m.true_lb(), m.true_extent())
        } else {
            (m.lb(), m.extent())
        };
        // SAFETY: the caller passes valid output pointers.
        unsafe {
            ffi::out(lb, conv(l))?;
            ffi::out(extent, conv(e))
        }
    })
}

macro_rules! extent_fns {
    ($($name:ident, $t:ty, $true_:expr, $doc:expr;)*) => {$(
        #[doc = $doc]
        ///
        /// # Safety
        ///
        /// `lb` and `extent` must be valid for a write of one value each.
        #[export]
        pub(crate) unsafe extern "C" fn $name(dt: Handle, lb: *mut $t, extent: *mut $t) -> c_int {
            // SAFETY: the caller's contract is bounds's.
            unsafe { bounds(stringify!($name), dt, $true_, lb, extent, |x| x as $t) }
        }
    )*};
}

extent_fns! {
    MPI_Type_get_extent, isize, false, "`MPI_Type_get_extent` (§5.1.7): lower bound and extent.";
    MPI_Type_get_extent_c, i64, false, "`MPI_Type_get_extent_c` (§5.1.7): as `MPI_Count`s.";
    MPI_Type_get_extent_x, i64, false, "`MPI_Type_get_extent_x` (§5.1.7, deprecated): as `MPI_Count`s.";
    MPI_Type_get_true_extent, isize, true, "`MPI_Type_get_true_extent` (§5.1.8): the bounds of the data.";
    MPI_Type_get_true_extent_c, i64, true, "`MPI_Type_get_true_extent_c` (§5.1.8): as `MPI_Count`s.";
    MPI_Type_get_true_extent_x, i64, true, "`MPI_Type_get_true_extent_x` (§5.1.8, deprecated): as `MPI_Count`s.";
}

/// `MPI_Type_commit` (§5.1.9). Committing a predefined type is allowed
/// and does nothing.
///
/// # Safety
///
/// `dt` must be valid for reading one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Type_commit(dt: *mut Handle) -> c_int {
    boundary("MPI_Type_commit", std::ptr::null_mut(), || {
        // SAFETY: the caller passes a valid in-out pointer.
        let h = *unsafe { ffi::inout(dt) }?;
        if is_predefined(handles::value(h)) {
            return Ok(());
        }
        let t = TYPES.get(h).ok_or(Code(MPI_ERR_TYPE))?;
        let done = Datatype {
            committed: true,
            ..Datatype::clone(&t)
        };
        TYPES
            .replace(h, done)
            .then_some(())
            .ok_or(Code(MPI_ERR_TYPE))
    })
}

/// `MPI_Type_free` (§5.1.10): calls the delete callbacks of its
/// attributes (§7.7.4, last set first, while the type still exists), then
/// frees a derived type and sets the handle to `MPI_DATATYPE_NULL`; a
/// callback's error is returned after the type is freed, as
/// `MPI_Comm_free` does. Predefined types cannot be freed. Operations in
/// progress and types built from it keep what they need.
///
/// # Safety
///
/// `dt` must be valid for reading and writing one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Type_free(dt: *mut Handle) -> c_int {
    boundary("MPI_Type_free", std::ptr::null_mut(), || {
        // SAFETY: the caller passes a valid in-out pointer.
        let h = unsafe { ffi::inout(dt) }?;
        let d = TYPES.get(*h).ok_or(Code(MPI_ERR_TYPE))?;
        if d.contents
            .as_ref()
            .is_some_and(|c| COMBINERS_F90.contains(&c.combiner))
        {
            return Err(crate::error::explained(
                MPI_ERR_TYPE,
                "a type of MPI_Type_create_f90_* is predefined and may not be freed",
            ));
        }
        let deleted = crate::attr::type_free(*h);
        TYPES.remove(*h).ok_or(Code(MPI_ERR_TYPE))?;
        names_mut(|n| n.remove(&handles::value(*h)));
        *h = handles::handle(DATATYPE_NULL);
        deleted
    })
}

/// `MPI_Type_dup` (§5.1.13): a new handle for the same type, committed if
/// the old one is, with combiner `MPI_COMBINER_DUP`, and the attributes
/// the copy callbacks give it (§7.7.4). If a copy callback fails, the new
/// type is freed again, `*newtype` is `MPI_DATATYPE_NULL` and its error
/// is returned.
///
/// # Safety
///
/// `newtype` must be valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Type_dup(oldtype: Handle, newtype: *mut Handle) -> c_int {
    boundary("MPI_Type_dup", std::ptr::null_mut(), || {
        let old = resolve(oldtype)?;
        let contents = Contents {
            types: vec![type_ref(oldtype, &old)],
            ..Contents::new(102)
        };
        // SAFETY: the caller passes a valid output pointer.
        unsafe { create(old.map.clone(), old.kind, contents, old.committed, newtype) }?;
        // SAFETY: `create` has just written the new handle there.
        let new = unsafe { ffi::inout(newtype) }?;
        crate::attr::type_dup(oldtype, *new).inspect_err(|_| {
            TYPES.remove(*new);
            *new = handles::handle(DATATYPE_NULL);
        })
    })
}

fn names_mut<R>(f: impl FnOnce(&mut HashMap<usize, String>) -> R) -> R {
    let mut w = NAMES.write().unwrap_or_else(|e| e.into_inner());
    f(w.get_or_insert_with(HashMap::new))
}

/// `MPI_Type_set_name` (§7.8): at most `MPI_MAX_OBJECT_NAME` − 1 (127)
/// bytes are kept.
///
/// # Safety
///
/// `name` must be a NUL-terminated string.
#[export]
pub(crate) unsafe extern "C" fn MPI_Type_set_name(dt: Handle, name: *const c_char) -> c_int {
    boundary("MPI_Type_set_name", std::ptr::null_mut(), || {
        resolve(dt)?;
        if name.is_null() {
            return Err(Code(MPI_ERR_ARG));
        }
        // SAFETY: a NUL-terminated string by the caller's contract.
        let s = unsafe { std::ffi::CStr::from_ptr(name) }.to_bytes();
        let s = String::from_utf8_lossy(&s[..s.len().min(127)]).into_owned();
        names_mut(|n| n.insert(handles::value(dt), s));
        Ok(())
    })
}

/// `MPI_Type_get_name` (§7.8): a predefined type's is its C name
/// (`"MPI_INT"`), a derived type's empty until set.
///
/// # Safety
///
/// `name` must be valid for `MPI_MAX_OBJECT_NAME` (128) bytes, `len` for
/// one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Type_get_name(
    dt: Handle,
    name: *mut c_char,
    len: *mut c_int,
) -> c_int {
    boundary("MPI_Type_get_name", std::ptr::null_mut(), || {
        let v = handles::value(dt);
        if v == 0x200 {
            // The null handle is named too, as in MPICH and Open MPI
            // (mpi4py relies on it).
            // SAFETY: the caller passes MPI_MAX_OBJECT_NAME bytes and an int.
            return unsafe { ffi::write_str(name, 128, "MPI_DATATYPE_NULL", len) };
        }
        resolve(dt)?;
        let set = NAMES
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .and_then(|n| n.get(&v).cloned());
        let s =
            set.unwrap_or_else(|| predefined(v).map_or(String::new(), |(n, _)| (*n).to_owned()));
        // SAFETY: the caller passes MPI_MAX_OBJECT_NAME bytes and an int.
        unsafe { ffi::write_str(name, 128, &s, len) }
    })
}

/// `MPI_Type_match_size` (§19.1.9): a predefined type of a type class
/// (`MPI_TYPECLASS_INTEGER`, `_REAL`, `_COMPLEX`) and size in bytes: the
/// C type where C has one, else the Fortran type of that size
/// (`MPI_INTEGER16`, `MPI_REAL2`, `MPI_COMPLEX4`), as MPICH answers.
///
/// # Safety
///
/// `dt` must be valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Type_match_size(
    typeclass: c_int,
    size: c_int,
    dt: *mut Handle,
) -> c_int {
    boundary("MPI_Type_match_size", std::ptr::null_mut(), || {
        let v = match (typeclass, size) {
            (192, 1) => 0x244,  // MPI_SIGNED_CHAR
            (192, 2) => 0x208,  // MPI_SHORT
            (192, 4) => 0x209,  // MPI_INT
            (192, 8) => 0x20a,  // MPI_LONG
            (192, 16) => 0x2e1, // MPI_INTEGER16
            (193, 2) => 0x2ca,  // MPI_REAL2
            (193, 4) => 0x210,  // MPI_FLOAT
            (193, 8) => 0x214,  // MPI_DOUBLE
            (193, 16) => 0x220, // MPI_LONG_DOUBLE
            (194, 4) => 0x2d3,  // MPI_COMPLEX4
            (194, 8) => 0x212,  // MPI_C_FLOAT_COMPLEX
            (194, 16) => 0x216, // MPI_C_DOUBLE_COMPLEX
            (194, 32) => 0x224, // MPI_C_LONG_DOUBLE_COMPLEX
            _ => return Err(Code(MPI_ERR_ARG)),
        };
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(dt, handles::handle(v)) }
    })
}
