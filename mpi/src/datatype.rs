//! Datatypes (MPI 4.1 chapter 5, predefined types of §3.2.2): which Rust
//! types can travel as message data, and their byte views.
//!
//! Every buffer is a slice `[T]` with `T:` [`Equivalence`]. Messages carry
//! the bytes of the slice as they are in memory, which is what
//! `MPI_Type_contiguous` over a predefined type means; both ends must use
//! the same type (§3.3.1, "type matching", is the programmer's duty in MPI
//! too). Sender and receiver are assumed to share a byte order.
//!
//! `unsafe` here is only the byte views of [`Equivalence`] slices (see
//! the crate documentation for the other places).

/// A type whose values can be sent as their raw bytes.
///
/// Implemented for the integer and floating-point primitives. Implement it
/// for your own `#[repr(C)]` structs of such fields:
///
/// ```
/// #[derive(Clone, Copy, Default)]
/// #[repr(C)]
/// struct Particle {
///     pos: [f64; 3],
///     id: u64,
/// }
/// // SAFETY: repr(C), no padding (4 x 8 bytes), every bit pattern valid.
/// unsafe impl mpi::Equivalence for Particle {}
/// ```
///
/// # Safety
///
/// The implementing type must
/// - have no padding bytes (all of its bytes are initialised, so they may
///   be read as `u8`), and
/// - accept every bit pattern as a valid value (received bytes become
///   values without any check), which rules out `bool`, `char`, enums,
///   references and pointers.
pub unsafe trait Equivalence: Copy + 'static {}

macro_rules! equivalence {
    ($($t:ty),*) => {$(
        // SAFETY: primitive integers and floats have no padding and every
        // bit pattern is a valid value.
        unsafe impl Equivalence for $t {}
    )*};
}
equivalence!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize, f32, f64);

// SAFETY: an array of `T` has no padding between its elements and is valid
// for every bit pattern when `T` is.
unsafe impl<T: Equivalence, const N: usize> Equivalence for [T; N] {}

/// The bytes of a slice of equivalent values.
pub(crate) fn as_bytes<T: Equivalence>(buf: &[T]) -> &[u8] {
    // SAFETY: `T: Equivalence` has no padding, so all `size_of_val(buf)`
    // bytes are initialised; `u8` has alignment 1; the lifetime and
    // shared borrow carry over from `buf`.
    unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), size_of_val(buf)) }
}

/// The bytes of a mutable slice of equivalent values.
pub(crate) fn as_bytes_mut<T: Equivalence>(buf: &mut [T]) -> &mut [u8] {
    // SAFETY: as in `as_bytes`; in addition every byte pattern written
    // through the view leaves valid `T` values behind (`Equivalence`
    // contract), and the exclusive borrow carries over from `buf`.
    unsafe { std::slice::from_raw_parts_mut(buf.as_mut_ptr().cast::<u8>(), size_of_val(buf)) }
}

/// A vector of `n` zero-valued `T` (all-zero bytes are a valid `T`).
pub(crate) fn zeroed_vec<T: Equivalence>(n: usize) -> Vec<T> {
    let mut v = Vec::with_capacity(n);
    // SAFETY: the capacity is `n`; `write_bytes` initialises all `n`
    // elements to zero bytes, which is a valid `T` by the `Equivalence`
    // contract, before `set_len` exposes them.
    unsafe {
        std::ptr::write_bytes(v.as_mut_ptr(), 0, n);
        v.set_len(n);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_views_cover_the_whole_slice() {
        let mut v = [1u32, 0x0102_0304];
        assert_eq!(as_bytes(&v).len(), 8);
        as_bytes_mut(&mut v)[0] = 9;
        assert_eq!(v[0], u32::from_le_bytes([9, 0, 0, 0]));
        let z: Vec<[f64; 2]> = zeroed_vec(3);
        assert_eq!(z, vec![[0.0; 2]; 3]);
    }
}
