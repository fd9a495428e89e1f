//! Datatypes (MPI 5.0 chapter 5; predefined C types of §3.2.2, handle
//! values of the standard ABI, §20.3): sizes, the element kind reductions
//! need, and contiguous derived types (§5.1.2).
//!
//! Messages carry the bytes of `count × extent` as they are in memory,
//! which is exact for every predefined type and for contiguous types over
//! them. Pair types (`MPI_DOUBLE_INT`, …) travel with their padding; their
//! `MPI_Type_size` is their data size as the standard defines.

use o2g_mpi_abi_macros::export;
use std::ffi::c_int;

use crate::error::{boundary, Code, Res, MPI_ERR_ARG, MPI_ERR_COUNT, MPI_ERR_TYPE};
use crate::ffi;
use crate::handles::{self, Handle};
use crate::table::Table;

/// The derived datatypes.
static TYPES: Table<TypeInfo> = Table::new();

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

/// A datatype: predefined or derived.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TypeInfo {
    /// `MPI_Type_size`: bytes of data.
    pub(crate) size: usize,
    /// Bytes one element occupies in a buffer (`MPI_Type_get_extent`).
    pub(crate) extent: usize,
    /// The element kind (a contiguous type keeps its old type's).
    pub(crate) kind: Kind,
    /// `MPI_Type_commit` was called (always true when predefined).
    pub(crate) committed: bool,
}

const fn basic(size: usize, kind: Kind) -> Option<TypeInfo> {
    Some(TypeInfo {
        size,
        extent: size,
        kind,
        committed: true,
    })
}

const fn pair(size: usize, extent: usize) -> Option<TypeInfo> {
    Some(TypeInfo {
        size,
        extent,
        kind: Kind::Opaque,
        committed: true,
    })
}

/// The predefined datatype with handle value `v` (LP64 sizes).
fn predefined(v: usize) -> Option<TypeInfo> {
    use Kind::*;
    match v {
        0x201..=0x203 => basic(8, I64), // AINT, COUNT, OFFSET
        0x207 => basic(1, Byte),        // PACKED
        0x208 => basic(2, I16),         // SHORT
        0x209 => basic(4, I32),         // INT
        0x20a | 0x20b => basic(8, I64), // LONG, LONG_LONG
        0x20c => basic(2, U16),         // UNSIGNED_SHORT
        0x20d => basic(4, U32),         // UNSIGNED
        0x20e | 0x20f => basic(8, U64), // UNSIGNED_LONG(_LONG)
        0x210 => basic(4, F32),         // FLOAT
        0x212 => basic(8, Opaque),      // C_FLOAT_COMPLEX
        0x214 => basic(8, F64),         // DOUBLE
        0x216 => basic(16, Opaque),     // C_DOUBLE_COMPLEX
        0x220 => basic(16, Opaque),     // LONG_DOUBLE
        0x224 => basic(32, Opaque),     // C_LONG_DOUBLE_COMPLEX
        0x228 => pair(8, 8),            // FLOAT_INT
        0x229 => pair(12, 16),          // DOUBLE_INT
        0x22a => pair(12, 16),          // LONG_INT
        0x22b => pair(8, 8),            // 2INT
        0x22c => pair(6, 8),            // SHORT_INT
        0x22d => pair(20, 32),          // LONG_DOUBLE_INT
        0x238 => basic(1, Bool),        // C_BOOL
        0x23c => basic(4, Opaque),      // WCHAR
        0x240 | 0x244 => basic(1, I8),  // INT8_T, SIGNED_CHAR
        0x241 | 0x245 => basic(1, U8),  // UINT8_T, UNSIGNED_CHAR
        0x243 => basic(1, Opaque),      // CHAR
        0x247 => basic(1, Byte),        // BYTE
        0x248 => basic(2, I16),         // INT16_T
        0x249 => basic(2, U16),         // UINT16_T
        0x250 => basic(4, I32),         // INT32_T
        0x251 => basic(4, U32),         // UINT32_T
        0x258 => basic(8, I64),         // INT64_T
        0x259 => basic(8, U64),         // UINT64_T
        _ => None,
    }
}

/// The datatype behind `h`, committed or not (`MPI_ERR_TYPE` if none).
pub(crate) fn lookup(h: Handle) -> Res<TypeInfo> {
    let v = handles::value(h);
    if let Some(t) = predefined(v) {
        return Ok(t);
    }
    TYPES.get(h).map(|t| *t).ok_or(Code(MPI_ERR_TYPE))
}

/// A datatype usable for communication: it must be committed (§5.1.9).
pub(crate) fn committed(h: Handle) -> Res<TypeInfo> {
    let t = lookup(h)?;
    if t.committed {
        Ok(t)
    } else {
        Err(Code(MPI_ERR_TYPE))
    }
}

/// A `count` argument: negative is `MPI_ERR_COUNT`.
pub(crate) fn count(n: c_int) -> Res<usize> {
    usize::try_from(n).map_err(|_| Code(MPI_ERR_COUNT))
}

/// Bytes of `count` elements of datatype `h` in a buffer.
pub(crate) fn buffer_len(n: c_int, h: Handle) -> Res<(usize, TypeInfo)> {
    let t = committed(h)?;
    let bytes = count(n)?
        .checked_mul(t.extent)
        .filter(|&b| b <= isize::MAX as usize)
        .ok_or(Code(MPI_ERR_COUNT))?;
    Ok((bytes, t))
}

/// `MPI_Type_size` (§5.1.5): bytes of data in one element.
///
/// # Safety
///
/// `size` must be valid for a write of one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Type_size(dt: Handle, size: *mut c_int) -> c_int {
    boundary("MPI_Type_size", std::ptr::null_mut(), || {
        let s = c_int::try_from(lookup(dt)?.size).map_err(|_| Code(MPI_ERR_ARG))?;
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(size, s) }
    })
}

/// `MPI_Type_get_extent` (§5.1.7): lower bound 0 and the extent.
///
/// # Safety
///
/// `lb` and `extent` must be valid for a write of one `MPI_Aint` each.
#[export]
pub(crate) unsafe extern "C" fn MPI_Type_get_extent(
    dt: Handle,
    lb: *mut isize,
    extent: *mut isize,
) -> c_int {
    boundary("MPI_Type_get_extent", std::ptr::null_mut(), || {
        let t = lookup(dt)?;
        // SAFETY: the caller passes valid output pointers.
        unsafe {
            ffi::out(lb, 0)?;
            ffi::out(extent, t.extent as isize)
        }
    })
}

/// `MPI_Type_contiguous` (§5.1.2): `count` copies of `oldtype`, back to
/// back. The new type must be committed before use.
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
        let old = lookup(oldtype)?;
        let n = count(n)?;
        let (size, extent) = old
            .size
            .checked_mul(n)
            .zip(old.extent.checked_mul(n))
            .filter(|&(_, e)| e <= isize::MAX as usize)
            .ok_or(Code(MPI_ERR_COUNT))?;
        let info = TypeInfo {
            size,
            extent,
            kind: old.kind,
            committed: false,
        };
        let h = TYPES.insert(info);
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(newtype, h) }
    })
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
        let v = handles::value(*unsafe { ffi::inout(dt) }?);
        if predefined(v).is_some() {
            return Ok(());
        }
        let h = handles::handle(v);
        let t = TYPES.get(h).ok_or(Code(MPI_ERR_TYPE))?;
        let done = TypeInfo {
            committed: true,
            ..*t
        };
        TYPES
            .replace(h, done)
            .then_some(())
            .ok_or(Code(MPI_ERR_TYPE))
    })
}

/// `MPI_Type_free` (§5.1.10): frees a derived type and sets the handle to
/// `MPI_DATATYPE_NULL`; predefined types cannot be freed.
///
/// # Safety
///
/// `dt` must be valid for reading and writing one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Type_free(dt: *mut Handle) -> c_int {
    boundary("MPI_Type_free", std::ptr::null_mut(), || {
        // SAFETY: the caller passes a valid in-out pointer.
        let h = unsafe { ffi::inout(dt) }?;
        TYPES.remove(*h).ok_or(Code(MPI_ERR_TYPE))?;
        *h = handles::handle(0x200);
        Ok(())
    })
}
