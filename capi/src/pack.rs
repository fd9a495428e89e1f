//! Packing (MPI 5.0 §5.2 `MPI_Pack`, `MPI_Unpack`, `MPI_Pack_size`;
//! §14.5.2 the `external32` representation: `MPI_Pack_external` and
//! friends), element counts of a status (§5.1.11 `MPI_Get_elements`),
//! and addresses (§5.1.5 `MPI_Get_address`, `MPI_Aint_add`,
//! `MPI_Aint_diff`).
//!
//! `MPI_Pack`'s format is the datatype's packed data, the bytes a message
//! of it carries; `external32` is the same data big-endian with the
//! standard's sizes (`mpi::typemap`).

use o2g_mpi_abi_macros::export;
use std::ffi::{c_char, c_int, c_void};

use crate::buffer;
use crate::datatype::{count, resolve, resolve_committed, type_error, Count};
use crate::error::{boundary, Code, Res, MPI_ERR_ARG, MPI_ERR_COUNT, MPI_ERR_TRUNCATE};
use crate::ffi::{self, int_and_c};
use crate::handles::Handle;
use crate::status::{self, Status};

/// A non-negative `int` size or position.
fn size(n: impl TryInto<usize>) -> Res<usize> {
    n.try_into().map_err(|_| Code(MPI_ERR_ARG))
}

/// `datarep` must be `"external32"` (§14.5.2; the only one this library
/// knows).
///
/// # Safety
///
/// A non-null `datarep` is a NUL-terminated string.
unsafe fn external32(datarep: *const c_char) -> Res<()> {
    if datarep.is_null() {
        return Err(Code(MPI_ERR_ARG));
    }
    // SAFETY: NUL-terminated by the caller's contract.
    let s = unsafe { std::ffi::CStr::from_ptr(datarep) };
    if s.to_bytes() == b"external32" {
        Ok(())
    } else {
        Err(Code(crate::error::MPI_ERR_UNSUPPORTED_DATAREP))
    }
}

/// A conversion of packed native data (`external32` and back): from
/// `count` elements' bytes into a destination, giving the bytes it wrote.
type Convert<'a> = dyn Fn(usize, &[u8], &mut [u8]) -> Res<usize> + 'a;

/// Packs `incount` elements of `dt` at `inbuf` into `outbuf` (`outsize`
/// bytes) at `*position`, converting with `convert` (identity for
/// `MPI_Pack`); advances the position.
///
/// # Safety
///
/// As for `MPI_Pack`.
unsafe fn pack_common<N: Count>(
    inbuf: *const c_void,
    incount: N,
    dt: Handle,
    outbuf: *mut c_void,
    outsize: usize,
    position: &mut usize,
    convert: Option<&Convert<'_>>,
) -> Res<()> {
    let d = resolve_committed(dt)?;
    let n = count(incount)?;
    // SAFETY: the caller's input buffer holds `incount` elements.
    let data = unsafe { buffer::send_typed(&d, n, inbuf) }?;
    // SAFETY: the caller's output buffer has `outsize` bytes.
    let out = unsafe { ffi::bytes_mut(outbuf, outsize) }?;
    let room = out.get_mut(*position..).ok_or(Code(MPI_ERR_TRUNCATE))?;
    let used = match convert {
        None => {
            let dst = room.get_mut(..data.len()).ok_or(Code(MPI_ERR_TRUNCATE))?;
            dst.copy_from_slice(&data);
            data.len()
        }
        Some(f) => f(n, &data, room)?,
    };
    *position += used;
    Ok(())
}

/// Unpacks `outcount` elements of `dt` into `outbuf` from `inbuf`
/// (`insize` bytes) at `*position` (`convert` turns the bytes there into
/// packed native data and says how many it used); advances the position.
///
/// # Safety
///
/// As for `MPI_Unpack`.
unsafe fn unpack_common<N: Count>(
    inbuf: *const c_void,
    insize: usize,
    position: &mut usize,
    outbuf: *mut c_void,
    outcount: N,
    dt: Handle,
    convert: Option<&Convert<'_>>,
) -> Res<()> {
    let d = resolve_committed(dt)?;
    let n = count(outcount)?;
    let need = d.map.packed_size(n).map_err(|_| Code(MPI_ERR_COUNT))?;
    // SAFETY: the caller's input buffer has `insize` bytes.
    let input = unsafe { ffi::bytes(inbuf, insize) }?;
    let src = input.get(*position..).ok_or(Code(MPI_ERR_TRUNCATE))?;
    let native;
    let (data, used): (&[u8], usize) = match convert {
        None => (src.get(..need).ok_or(Code(MPI_ERR_TRUNCATE))?, need),
        Some(f) => {
            let mut v = vec![0u8; need];
            let used = f(n, src, &mut v)?;
            native = v;
            (&native, used)
        }
    };
    // SAFETY: the caller's output buffer holds `outcount` elements.
    let mut r = unsafe { buffer::recv_typed(d, n, outbuf) }?;
    r.bytes().copy_from_slice(data);
    r.finish(need);
    *position += used;
    Ok(())
}

/// Runs `f` on the position `*position` (an `int`, `MPI_Aint` or
/// `MPI_Count`) as a `usize` and stores the position it leaves;
/// `MPI_ERR_COUNT` if that does not fit the argument.
///
/// # Safety
///
/// `position` is valid for reading and writing one `P`.
unsafe fn at_position<P: Count + TryFrom<usize>>(
    position: *mut P,
    f: impl FnOnce(&mut usize) -> Res<()>,
) -> Res<()> {
    // SAFETY: the caller passes a valid position.
    let pos = unsafe { ffi::inout(position) }?;
    let mut p = size(*pos)?;
    f(&mut p)?;
    *pos = P::try_from(p).map_err(|_| Code(MPI_ERR_COUNT))?;
    Ok(())
}

/// `MPI_Pack` and `MPI_Pack_c`.
///
/// # Safety
///
/// `inbuf` holds `incount` elements of `dt`, `outbuf` has `outsize`
/// bytes, `position` is valid for one `N`.
#[allow(clippy::too_many_arguments)]
unsafe fn pack<N: Count + TryFrom<usize>>(
    name: &str,
    inbuf: *const c_void,
    incount: N,
    dt: Handle,
    outbuf: *mut c_void,
    outsize: N,
    position: *mut N,
    comm: Handle,
) -> c_int {
    boundary(name, comm, || {
        crate::handles::comm(comm)?;
        // SAFETY: the caller's contract is pack_common's and at_position's.
        unsafe {
            at_position(position, |p| {
                pack_common(inbuf, incount, dt, outbuf, size(outsize)?, p, None)
            })
        }
    })
}

int_and_c! {
    /// `MPI_Pack` (§5.2.1): appends `incount` elements of `dt` to `outbuf` at
    /// `*position`.
    fn MPI_Pack / MPI_Pack_c(
        inbuf: [*const c_void], incount: [N], dt: [Handle], outbuf: [*mut c_void],
        outsize: [N], position: [*mut N], comm: [Handle],
    ) => pack;
}

/// `MPI_Unpack` and `MPI_Unpack_c`.
///
/// # Safety
///
/// `inbuf` has `insize` bytes, `outbuf` room for `outcount` elements of
/// `dt`, `position` is valid for one `N`.
#[allow(clippy::too_many_arguments)]
unsafe fn unpack<N: Count + TryFrom<usize>>(
    name: &str,
    inbuf: *const c_void,
    insize: N,
    position: *mut N,
    outbuf: *mut c_void,
    outcount: N,
    dt: Handle,
    comm: Handle,
) -> c_int {
    boundary(name, comm, || {
        crate::handles::comm(comm)?;
        // SAFETY: the caller's contract is unpack_common's and at_position's.
        unsafe {
            at_position(position, |p| {
                unpack_common(inbuf, size(insize)?, p, outbuf, outcount, dt, None)
            })
        }
    })
}

int_and_c! {
    /// `MPI_Unpack` (§5.2.1): takes `outcount` elements of `dt` from
    /// `inbuf` at `*position`.
    fn MPI_Unpack / MPI_Unpack_c(
        inbuf: [*const c_void], insize: [N], position: [*mut N], outbuf: [*mut c_void],
        outcount: [N], dt: [Handle], comm: [Handle],
    ) => unpack;
}

/// `MPI_Pack_size` and `MPI_Pack_size_c`.
///
/// # Safety
///
/// `out` must be valid for a write of one `N`.
unsafe fn pack_size<N: Count + TryFrom<usize>>(
    name: &str,
    incount: N,
    dt: Handle,
    comm: Handle,
    out: *mut N,
) -> c_int {
    boundary(name, comm, || {
        crate::handles::comm(comm)?;
        let d = resolve_committed(dt)?;
        let n = d.map.packed_size(count(incount)?).map_err(type_error)?;
        let n = N::try_from(n).map_err(|_| Code(MPI_ERR_COUNT))?;
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(out, n) }
    })
}

int_and_c! {
    /// `MPI_Pack_size` (§5.2.1): an upper bound of the bytes `MPI_Pack`
    /// needs for `incount` elements of `dt` (exactly their size here;
    /// `MPI_ERR_COUNT` if the `int` form cannot hold it).
    fn MPI_Pack_size / MPI_Pack_size_c(
        incount: [N], dt: [Handle], comm: [Handle], out: [*mut N],
    ) => pack_size;
}

/// `MPI_Pack_external` and `MPI_Pack_external_c`.
///
/// # Safety
///
/// `datarep` a NUL-terminated string, `inbuf` holds `incount` elements of
/// `dt`, `outbuf` has `outsize` bytes, `position` valid for one `A`.
#[allow(clippy::too_many_arguments)]
unsafe fn pack_external<N: Count, A: Count + TryFrom<usize>>(
    name: &str,
    datarep: *const c_char,
    inbuf: *const c_void,
    incount: N,
    dt: Handle,
    outbuf: *mut c_void,
    outsize: A,
    position: *mut A,
) -> c_int {
    boundary(name, std::ptr::null_mut(), || {
        // SAFETY: the caller passes a string.
        unsafe { external32(datarep) }?;
        let d = resolve_committed(dt)?;
        let conv = |n: usize, native: &[u8], out: &mut [u8]| {
            d.map
                .external32_from_packed(n, native, out)
                .map_err(type_error)
        };
        let outsize = size(outsize)?;
        // SAFETY: the caller's contract is pack_common's and at_position's.
        unsafe {
            at_position(position, |p| {
                pack_common(inbuf, incount, dt, outbuf, outsize, p, Some(&conv))
            })
        }
    })
}

int_and_c! {
    /// `MPI_Pack_external` (§14.5.2): as `MPI_Pack` in `external32`.
    fn MPI_Pack_external / MPI_Pack_external_c(
        datarep: [*const c_char], inbuf: [*const c_void], incount: [N], dt: [Handle],
        outbuf: [*mut c_void], outsize: [A], position: [*mut A],
    ) => pack_external;
}

/// `MPI_Unpack_external` and `MPI_Unpack_external_c`.
///
/// # Safety
///
/// `datarep` a NUL-terminated string, `inbuf` has `insize` bytes,
/// `outbuf` room for `outcount` elements of `dt`, `position` valid for
/// one `A`.
#[allow(clippy::too_many_arguments)]
unsafe fn unpack_external<N: Count, A: Count + TryFrom<usize>>(
    name: &str,
    datarep: *const c_char,
    inbuf: *const c_void,
    insize: A,
    position: *mut A,
    outbuf: *mut c_void,
    outcount: N,
    dt: Handle,
) -> c_int {
    boundary(name, std::ptr::null_mut(), || {
        // SAFETY: the caller passes a string.
        unsafe { external32(datarep) }?;
        let d = resolve_committed(dt)?;
        let conv = |n: usize, ext: &[u8], native: &mut [u8]| {
            d.map
                .packed_from_external32(n, ext, native)
                .map_err(type_error)
        };
        let insize = size(insize)?;
        // SAFETY: the caller's contract is unpack_common's and at_position's.
        unsafe {
            at_position(position, |p| {
                unpack_common(inbuf, insize, p, outbuf, outcount, dt, Some(&conv))
            })
        }
    })
}

int_and_c! {
    /// `MPI_Unpack_external` (§14.5.2): as `MPI_Unpack` from `external32`.
    fn MPI_Unpack_external / MPI_Unpack_external_c(
        datarep: [*const c_char], inbuf: [*const c_void], insize: [A], position: [*mut A],
        outbuf: [*mut c_void], outcount: [N], dt: [Handle],
    ) => unpack_external;
}

/// `MPI_Pack_external_size` and `MPI_Pack_external_size_c`.
///
/// # Safety
///
/// `datarep` a NUL-terminated string, `out` valid for one `A`.
unsafe fn pack_external_size<N: Count, A: TryFrom<usize>>(
    name: &str,
    datarep: *const c_char,
    incount: N,
    dt: Handle,
    out: *mut A,
) -> c_int {
    boundary(name, std::ptr::null_mut(), || {
        // SAFETY: the caller passes a string.
        unsafe { external32(datarep) }?;
        let d = resolve_committed(dt)?;
        let n = d.map.external32_size(count(incount)?).map_err(type_error)?;
        let n = A::try_from(n).map_err(|_| Code(MPI_ERR_COUNT))?;
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(out, n) }
    })
}

int_and_c! {
    /// `MPI_Pack_external_size` (§14.5.2): the bytes `incount` elements of
    /// `dt` take in `external32`.
    fn MPI_Pack_external_size / MPI_Pack_external_size_c(
        datarep: [*const c_char], incount: [N], dt: [Handle], out: [*mut A],
    ) => pack_external_size;
}

/// The primitive elements of `dt` in the message `st` reports
/// (§5.1.11); `None` (`MPI_UNDEFINED`) if they do not end on a primitive
/// element.
///
/// # Safety
///
/// `st` is valid for reading one `MPI_Status`.
unsafe fn elements(st: *const Status, dt: Handle) -> Res<Option<u64>> {
    // SAFETY: by the caller's contract.
    let s = unsafe { status::read(st) }?;
    let d = resolve(dt)?;
    let bytes = usize::try_from(s.bytes()).map_err(|_| Code(MPI_ERR_COUNT))?;
    let n = d.map.elements_in(bytes);
    // Bytes of the whole elements counted: must be all of them.
    let size = d.map.size();
    let whole = bytes.checked_div(size).unwrap_or(0);
    let mut covered = whole * size;
    let mut left = n - whole * d.map.elements();
    for b in d.map.blocks() {
        let k = (b.len / b.prim.size()).min(left);
        covered += k * b.prim.size();
        left -= k;
    }
    Ok((covered == bytes).then_some(n as u64))
}

/// `MPI_Get_elements` and its `MPI_Count` forms: the count as a `T`,
/// `MPI_UNDEFINED` if it is undefined or does not fit.
///
/// # Safety
///
/// `st` valid for reading one `MPI_Status`, `count` for one `T`.
unsafe fn elements_count<T: TryFrom<u64> + From<c_int>>(
    name: &str,
    st: *const Status,
    dt: Handle,
    count: *mut T,
) -> c_int {
    boundary(name, std::ptr::null_mut(), || {
        // SAFETY: the caller passes a valid status.
        let n = status::count_or_undefined(unsafe { elements(st, dt) }?);
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(count, n) }
    })
}

/// `MPI_Get_elements` (§5.1.11): primitive elements received, also of a
/// message that ends in the middle of an element of `dt`
/// (`MPI_UNDEFINED` if more than an `int` holds).
///
/// # Safety
///
/// `st` valid for reading one `MPI_Status`, `count` for one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Get_elements(
    st: *const Status,
    dt: Handle,
    count: *mut c_int,
) -> c_int {
    // SAFETY: the caller's contract is elements_count's.
    unsafe { elements_count("MPI_Get_elements", st, dt, count) }
}

/// `MPI_Get_elements_c` (§5.1.11).
///
/// # Safety
///
/// As for `MPI_Get_elements`, with one `MPI_Count`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Get_elements_c(
    st: *const Status,
    dt: Handle,
    count: *mut i64,
) -> c_int {
    // SAFETY: the caller's contract is elements_count's.
    unsafe { elements_count("MPI_Get_elements_c", st, dt, count) }
}

/// `MPI_Get_elements_x` (§5.1.11, deprecated in MPI 4.1).
///
/// # Safety
///
/// As for `MPI_Get_elements`, with one `MPI_Count`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Get_elements_x(
    st: *const Status,
    dt: Handle,
    count: *mut i64,
) -> c_int {
    // SAFETY: the caller's contract is elements_count's.
    unsafe { elements_count("MPI_Get_elements_x", st, dt, count) }
}

/// `MPI_Get_address` (§5.1.5): the address of `location`, usable as a
/// displacement from `MPI_BOTTOM` (its provenance is exposed, so the
/// library may read and write there later).
///
/// # Safety
///
/// `address` must be valid for a write of one `MPI_Aint`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Get_address(
    location: *const c_void,
    address: *mut isize,
) -> c_int {
    boundary("MPI_Get_address", std::ptr::null_mut(), || {
        let a = location.expose_provenance() as isize;
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(address, a) }
    })
}

/// `MPI_Aint_add` (§5.1.5): `base + disp` as addresses.
#[export]
pub(crate) extern "C" fn MPI_Aint_add(base: isize, disp: isize) -> isize {
    base.wrapping_add(disp)
}

/// `MPI_Aint_diff` (§5.1.5): `addr1 - addr2` as addresses.
#[export]
pub(crate) extern "C" fn MPI_Aint_diff(addr1: isize, addr2: isize) -> isize {
    addr1.wrapping_sub(addr2)
}
