//! Raw pointers from C, made into references and slices: the one place of
//! this crate (besides the calls of user reduction functions in `op.rs`)
//! that dereferences what C hands in.
//!
//! Every function is `unsafe` with the same contract, the C binding's: a
//! non-null pointer is valid for the access the MPI standard describes for
//! that argument (so many elements, readable or writable, not aliased by
//! another argument unless the standard allows it). Null pointers and
//! negative or overflowing sizes are turned into MPI error codes here,
//! never dereferenced.

use std::ffi::{c_char, c_int, c_void};

use crate::error::{Code, Res, MPI_ERR_ARG, MPI_ERR_BUFFER};

/// `MPI_IN_PLACE` of the standard ABI: `(void *)1`.
pub(crate) fn is_in_place(p: *const c_void) -> bool {
    p.addr() == 1
}

/// Writes `v` to the output argument `p`; `MPI_ERR_ARG` if it is null.
///
/// # Safety
///
/// A non-null `p` is valid and aligned for a write of a `T`.
pub(crate) unsafe fn out<T>(p: *mut T, v: T) -> Res<()> {
    if p.is_null() {
        return Err(Code(MPI_ERR_ARG));
    }
    // SAFETY: non-null, and valid for the write by the caller's contract.
    unsafe { p.write(v) };
    Ok(())
}

/// An in-out argument; `MPI_ERR_ARG` if null.
///
/// # Safety
///
/// A non-null `p` is valid, aligned and exclusively ours for the
/// lifetime `'a`.
pub(crate) unsafe fn inout<'a, T>(p: *mut T) -> Res<&'a mut T> {
    // SAFETY: by the caller's contract when non-null.
    unsafe { p.as_mut() }.ok_or(Code(MPI_ERR_ARG))
}

/// An optional output argument such as `MPI_STATUS_IGNORE` (null).
///
/// # Safety
///
/// As for [`inout`].
pub(crate) unsafe fn optional<'a, T>(p: *mut T) -> Option<&'a mut T> {
    // SAFETY: by the caller's contract when non-null.
    unsafe { p.as_mut() }
}

/// A read-only input argument; `MPI_ERR_ARG` if null.
///
/// # Safety
///
/// A non-null `p` is valid and aligned for reads for `'a`.
pub(crate) unsafe fn input<'a, T>(p: *const T) -> Res<&'a T> {
    // SAFETY: by the caller's contract when non-null.
    unsafe { p.as_ref() }.ok_or(Code(MPI_ERR_ARG))
}

/// `len` bytes of a send buffer; `MPI_ERR_BUFFER` for null with `len > 0`.
///
/// # Safety
///
/// A non-null `p` is valid for reads of `len` bytes for `'a`.
pub(crate) unsafe fn bytes<'a>(p: *const c_void, len: usize) -> Res<&'a [u8]> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() || len > isize::MAX as usize {
        return Err(Code(MPI_ERR_BUFFER));
    }
    // SAFETY: non-null, valid for `len` bytes by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) })
}

/// `len` bytes of a receive buffer; `MPI_ERR_BUFFER` for null with
/// `len > 0`.
///
/// # Safety
///
/// A non-null `p` is valid for reads and writes of `len` bytes, and not
/// accessed otherwise, for `'a`.
pub(crate) unsafe fn bytes_mut<'a>(p: *mut c_void, len: usize) -> Res<&'a mut [u8]> {
    if len == 0 {
        return Ok(&mut []);
    }
    if p.is_null() || len > isize::MAX as usize {
        return Err(Code(MPI_ERR_BUFFER));
    }
    // SAFETY: non-null, valid and exclusive by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts_mut(p.cast::<u8>(), len) })
}

/// An input array of `n` elements (counts, displacements, handles);
/// `MPI_ERR_ARG` for null with `n > 0`.
///
/// # Safety
///
/// A non-null `p` is valid and aligned for reads of `n` elements for `'a`.
pub(crate) unsafe fn array<'a, T>(p: *const T, n: usize) -> Res<&'a [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(Code(MPI_ERR_ARG));
    }
    // SAFETY: non-null, valid for `n` elements by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// An in-out array of `n` elements (requests, statuses); `MPI_ERR_ARG` for
/// null with `n > 0`.
///
/// # Safety
///
/// A non-null `p` is valid, aligned and exclusive for `n` elements for
/// `'a`.
pub(crate) unsafe fn array_mut<'a, T>(p: *mut T, n: usize) -> Res<&'a mut [T]> {
    if n == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(Code(MPI_ERR_ARG));
    }
    // SAFETY: non-null, valid and exclusive by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts_mut(p, n) })
}

/// Copies `s` into the C string buffer `buf` of `cap` bytes (cut to
/// `cap - 1` bytes, NUL-terminated) and its length into `len`.
///
/// # Safety
///
/// A non-null `buf` is valid for `cap` bytes of writes and a non-null
/// `len` for one `int`.
pub(crate) unsafe fn write_str(buf: *mut c_char, cap: usize, s: &str, len: *mut c_int) -> Res<()> {
    let n = s.len().min(cap.saturating_sub(1));
    // SAFETY: `buf` has `cap` writable bytes by the caller's contract.
    let dst = unsafe { bytes_mut(buf.cast::<c_void>(), cap) }?;
    dst[..n].copy_from_slice(&s.as_bytes()[..n]);
    if let Some(end) = dst.get_mut(n) {
        *end = 0;
    }
    // SAFETY: `len` is valid for one int by the caller's contract.
    unsafe { out(len, n as c_int) }
}

/// A NUL-terminated C string argument (names, info keys and values),
/// as text (bytes that are not UTF-8 replaced); `MPI_ERR_ARG` if null.
///
/// # Safety
///
/// A non-null `p` points to a NUL-terminated string valid for reads.
pub(crate) unsafe fn c_str(p: *const c_char) -> Res<String> {
    if p.is_null() {
        return Err(Code(MPI_ERR_ARG));
    }
    // SAFETY: non-null and NUL-terminated by the caller's contract.
    let s = unsafe { std::ffi::CStr::from_ptr(p) };
    Ok(String::from_utf8_lossy(s.to_bytes()).into_owned())
}

/// This host's name (`gethostname(2)`), for `MPI_Get_processor_name`.
pub(crate) fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for `buf.len()` bytes of writes;
    // gethostname writes at most that many.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast::<c_char>(), buf.len()) };
    if rc != 0 {
        return "localhost".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// The address `off` bytes from `base`. From `MPI_BOTTOM` (null) it is
/// the absolute address `off` (an `MPI_Get_address` result, whose
/// provenance that call exposed).
pub(crate) fn offset(base: *const c_void, off: isize) -> *const u8 {
    if base.is_null() {
        std::ptr::with_exposed_provenance(off as usize)
    } else {
        base.cast::<u8>().wrapping_offset(off)
    }
}

/// Copies `dst.len()` bytes from `off` bytes past `base` (a run of a
/// datatype's data, packed) without making a reference to the user's
/// memory around it, which another request may be using.
///
/// # Safety
///
/// The bytes at `offset(base, off)` are valid for reads of `dst.len()`
/// bytes (the caller's buffer holds the datatype's data there).
pub(crate) unsafe fn read_at(base: *const c_void, off: isize, dst: &mut [u8]) {
    // SAFETY: valid for the read by the caller's contract; `dst` is ours.
    unsafe { std::ptr::copy_nonoverlapping(offset(base, off), dst.as_mut_ptr(), dst.len()) }
}

/// Copies `src` to `off` bytes past `base` (unpacking a run of a
/// datatype's data), touching no other byte.
///
/// # Safety
///
/// The bytes at `offset(base, off)` are valid for writes of `src.len()`
/// bytes and not otherwise accessed during the call.
pub(crate) unsafe fn write_at(base: *mut c_void, off: isize, src: &[u8]) {
    let dst = offset(base, off).cast_mut();
    // SAFETY: valid for the write by the caller's contract.
    unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len()) }
}

/// Defines an exported MPI function and its large-count `_c` twin
/// (MPI 5.0 §2.5.8, §19.2) from one implementation, so the two never
/// drift apart: `$imp(name, extra..., args...)`, generic over the count
/// types. Each parameter's type is written in brackets; `[N]` is `int`
/// in the first function and `MPI_Count` in the second, `[A]` `MPI_Aint`
/// and `MPI_Count`, `[*mut N]`, `[*const N]`, `[*mut A]`, `[*const A]`
/// pointers to them; any other type is the same in both.
///
/// One pair: `/// doc` `fn MPI_X / MPI_X_c (params) => imp (extra...);`
/// (the extra arguments are optional). A family sharing one parameter
/// list: `(params) => imp;` followed by `/// doc` `fn MPI_X / MPI_X_c
/// (extra...);` for each pair.
macro_rules! int_and_c {
    (
        $params:tt => $imp:ident;
        $($(#[doc = $doc:literal])* fn $int:ident / $c:ident ($($extra:expr),* $(,)?);)+
    ) => {$(
        $crate::ffi::int_and_c! {
            $(#[doc = $doc])*
            fn $int / $c $params => $imp($($extra),*);
        }
    )+};
    (
        $(#[doc = $doc:literal])*
        fn $int:ident / $c:ident ($($p:ident : [$($t:tt)+]),* $(,)?)
            => $imp:ident $(($($extra:expr),* $(,)?))?;
    ) => {
        $(#[doc = $doc])*
        ///
        /// # Safety
        ///
        /// The C binding's contract for each argument (see `ffi.rs`).
        #[o2g_mpi_abi_macros::export]
        pub(crate) unsafe extern "C" fn $int(
            $($p: $crate::ffi::int_and_c!(@ty ::std::ffi::c_int, isize; $($t)+)),*
        ) -> ::std::ffi::c_int {
            // SAFETY: the caller's contract is the implementation's.
            unsafe { $imp(stringify!($int), $($($extra,)*)? $($p),*) }
        }

        $(#[doc = $doc])*
        ///
        /// The large-count form (§2.5.8): the counts are `MPI_Count`s.
        ///
        /// # Safety
        ///
        /// The C binding's contract for each argument (see `ffi.rs`).
        #[o2g_mpi_abi_macros::export]
        pub(crate) unsafe extern "C" fn $c(
            $($p: $crate::ffi::int_and_c!(@ty i64, i64; $($t)+)),*
        ) -> ::std::ffi::c_int {
            // SAFETY: the caller's contract is the implementation's.
            unsafe { $imp(stringify!($c), $($($extra,)*)? $($p),*) }
        }
    };
    (@ty $n:ty, $a:ty; N) => { $n };
    (@ty $n:ty, $a:ty; A) => { $a };
    (@ty $n:ty, $a:ty; *mut N) => { *mut $n };
    (@ty $n:ty, $a:ty; *const N) => { *const $n };
    (@ty $n:ty, $a:ty; *mut A) => { *mut $a };
    (@ty $n:ty, $a:ty; *const A) => { *const $a };
    (@ty $n:ty, $a:ty; $($t:tt)+) => { $($t)+ };
}
pub(crate) use int_and_c;
