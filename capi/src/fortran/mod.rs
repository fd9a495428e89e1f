//! Fortran bindings: `mpif.h` and `use mpi` (MPI 5.0 §19.1), for
//! gfortran, over this library's C functions.
//!
//! `capi/build/fortran.rs` generates `mpi_xxx_`/`pmpi_xxx_` for every
//! exported function Fortran has (`bindings.rs` includes them) and the
//! headers; `special.rs` writes by hand the few whose Fortran form is not
//! the C one argument for argument, `caching.rs` those that take Fortran
//! callbacks (attribute caching, error handlers), `window.rs` those of
//! windows. The generated code
//! leans on:
//! - `handles.rs`: integer handles and back (`MPI_Comm_c2f`, ...);
//! - `args.rs`: the sentinels (`MPI_BOTTOM`, `MPI_STATUS_IGNORE`, ...,
//!   common blocks whose addresses are recognised), strings (blank-padded
//!   in Fortran, NUL-terminated in C) and 1-based indices.
//!
//! gfortran passes every argument by reference and each character
//! argument's length as a hidden `size_t` after the others; default
//! `INTEGER` and `LOGICAL` are 4 bytes, `.TRUE.` is 1, so integer and
//! logical arrays, `MPI_Aint`/`MPI_Count` values and statuses (8
//! integers, the C `MPI_Status`) are shared as they are.

/// Exports a binding written as `unsafe fn $body(c, args...)` twice: as
/// `$f` calling the C `MPI_` function `$c`, and as `$pf` calling `$pc`
/// (the profiling interface).
macro_rules! twice {
    ($body:ident, $f:ident($($a:ident: $t:ty),*) => $c:ident, $pf:ident => $pc:ident) => {
        /// The Fortran binding (see the function it calls).
        #[no_mangle]
        pub(crate) unsafe extern "C" fn $f($($a: $t),*) {
            // SAFETY: the arguments are Fortran's (module docs).
            unsafe { $body($c, $($a),*) }
        }
        /// The Fortran binding of the profiling interface.
        #[no_mangle]
        pub(crate) unsafe extern "C" fn $pf($($a: $t),*) {
            // SAFETY: the arguments are Fortran's (module docs).
            unsafe { $body($pc, $($a),*) }
        }
    };
}

/// Exports a binding whose work is the library's own (no C function to
/// choose between) under its Fortran name `$f` and its profiling name
/// `$pf`, both calling `unsafe fn $body(args...)`.
macro_rules! both {
    ($body:ident, $f:ident, $pf:ident($($a:ident: $t:ty),*)) => {
        /// The Fortran binding (see the function it calls).
        #[no_mangle]
        pub(crate) unsafe extern "C" fn $f($($a: $t),*) {
            // SAFETY: the arguments are Fortran's (module docs).
            unsafe { $body($($a),*) }
        }
        /// The Fortran binding of the profiling interface.
        #[no_mangle]
        pub(crate) unsafe extern "C" fn $pf($($a: $t),*) {
            // SAFETY: the arguments are Fortran's (module docs).
            unsafe { $body($($a),*) }
        }
    };
}

mod args;
mod bindings;
mod caching;
mod f90_types;
mod handles;
mod special;
mod window;

/// Stores `rc` in Fortran's `ierror`.
///
/// # Safety
///
/// `ierr` is null or valid for one integer.
unsafe fn set(ierr: *mut Fint, rc: std::ffi::c_int) {
    if !ierr.is_null() {
        // SAFETY: the caller's contract.
        unsafe { *ierr = rc };
    }
}

pub(crate) use args::{
    choice, fints, group_len, neighbor_len, one_based, status, statuses, str_in, weights, StrOut,
};
pub(crate) use handles::{c2f, c2f_after, f2c, Fint};

/// `MPI_ERR_IN_STATUS`: a multiple completion wrote its indices.
pub(crate) const ERR_IN_STATUS: Fint = 19;

/// Exported C functions without a Fortran binding, and why (for
/// `capi/README.md`'s Fortran table and its test).
#[allow(dead_code)]
pub(crate) fn unbound() -> &'static [(&'static str, &'static str)] {
    bindings::UNBOUND
}
