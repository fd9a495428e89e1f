//! `MPI_Type_create_f90_integer`, `_real` and `_complex` (§19.2.5): the
//! type of a Fortran `KIND` chosen by precision and range
//! (`SELECTED_INT_KIND(r)`, `SELECTED_REAL_KIND(p, r)`), with gfortran's
//! kinds on x86-64: integers of 1, 2, 4, 8 bytes, reals of 4, 8, 16. Each
//! is laid out as the predefined `MPI_INTEGERn`/`MPI_REALn`/`MPI_COMPLEXn`
//! of its size, its envelope is `MPI_COMBINER_F90_*` with the arguments
//! asked for, and the same arguments give the same handle, which may not
//! be freed (`datatype::f90_type`); reductions treat it as that
//! predefined type.

use std::ffi::c_int;

use o2g_mpi_abi_macros::export;

use crate::datatype::f90_type;
use crate::error::{boundary, Code, MPI_ERR_ARG};
use crate::ffi;
use crate::handles::Handle;
use crate::status::UNDEFINED;

/// Decimal range (`RANGE`) of each integer kind, and its type's value.
const INTEGERS: [(c_int, usize); 4] = [(2, 0x2c1), (4, 0x2c9), (9, 0x2d1), (18, 0x2d9)];

/// Precision and decimal exponent range of each real kind, and the
/// values of its real and complex types.
const REALS: [(c_int, c_int, usize, usize); 3] = [
    (6, 37, 0x2d2, 0x2db),
    (15, 307, 0x2da, 0x2e3),
    (33, 4931, 0x2e2, 0x2eb),
];

/// The smallest kind that has precision `p` and range `r`
/// (`MPI_UNDEFINED` for either asks nothing of it).
fn real(p: c_int, r: c_int) -> Option<(usize, usize)> {
    let any = |x: c_int| x == UNDEFINED;
    if any(p) && any(r) {
        return None;
    }
    REALS
        .iter()
        .find(|&&(kp, kr, ..)| (any(p) || p <= kp) && (any(r) || r <= kr))
        .map(|&(_, _, re, cx)| (re, cx))
}

/// `MPI_COMBINER_F90_REAL`, `_COMPLEX`, `_INTEGER`.
const F90_REAL: c_int = 113;
const F90_COMPLEX: c_int = 114;
const F90_INTEGER: c_int = 115;

/// Writes the type with `combiner` and arguments `ints` over the
/// predefined type `v` found for `name`, or `MPI_ERR_ARG` if none fits.
///
/// # Safety
///
/// `newtype` is valid for a write of one handle.
unsafe fn answer(
    name: &str,
    combiner: c_int,
    ints: Vec<c_int>,
    v: Option<usize>,
    newtype: *mut Handle,
) -> c_int {
    boundary(name, std::ptr::null_mut(), || {
        let v = v.ok_or(Code(MPI_ERR_ARG))?;
        let h = f90_type(combiner, ints, v)?;
        // SAFETY: the caller's contract.
        unsafe { ffi::out(newtype, h) }
    })
}

/// `MPI_Type_create_f90_integer` (§19.2.5).
///
/// # Safety
///
/// `newtype` is valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Type_create_f90_integer(
    r: c_int,
    newtype: *mut Handle,
) -> c_int {
    let v = INTEGERS.iter().find(|&&(kr, _)| r <= kr).map(|&(_, v)| v);
    // SAFETY: the caller's contract.
    unsafe {
        answer(
            "MPI_Type_create_f90_integer",
            F90_INTEGER,
            vec![r],
            v,
            newtype,
        )
    }
}

/// `MPI_Type_create_f90_real` (§19.2.5).
///
/// # Safety
///
/// `newtype` is valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Type_create_f90_real(
    p: c_int,
    r: c_int,
    newtype: *mut Handle,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        answer(
            "MPI_Type_create_f90_real",
            F90_REAL,
            vec![p, r],
            real(p, r).map(|t| t.0),
            newtype,
        )
    }
}

/// `MPI_Type_create_f90_complex` (§19.2.5).
///
/// # Safety
///
/// `newtype` is valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Type_create_f90_complex(
    p: c_int,
    r: c_int,
    newtype: *mut Handle,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        answer(
            "MPI_Type_create_f90_complex",
            F90_COMPLEX,
            vec![p, r],
            real(p, r).map(|t| t.1),
            newtype,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_the_smallest_that_fit() {
        assert_eq!(real(6, UNDEFINED), Some((0x2d2, 0x2db)));
        assert_eq!(real(7, UNDEFINED), Some((0x2da, 0x2e3)));
        assert_eq!(real(UNDEFINED, 300), Some((0x2da, 0x2e3)));
        assert_eq!(real(15, 308), Some((0x2e2, 0x2eb)));
        assert_eq!(real(34, 1), None);
        assert_eq!(real(UNDEFINED, UNDEFINED), None);
    }
}
