//! Handles as `int`s and back (`MPI_Comm_toint`, `MPI_Comm_fromint`, and
//! the same for every handle type): the standard ABI's conversions for
//! code that must store a handle in an `int`, such as Fortran bindings
//! built on the C ABI.
//!
//! A handle is already a small integer dressed as a pointer
//! (`handles.rs`): the predefined ones are the standard's constants, the
//! others count up from `FIRST_DYNAMIC`. Both conversions are the
//! identity on that integer, with no lookup, so they work for any handle
//! kind, also kinds o2g does not implement yet (`MPI_WIN_NULL`,
//! `MPI_FILE_NULL`, ...), and any thread may call them. Only a handle
//! whose value no longer fits an `int` (after some 134 million objects
//! in one process) cannot be converted: that ends the job with a message,
//! since the `int` result has no room for an error code.

use std::ffi::c_int;

use o2g_mpi_abi_macros::export;

use crate::handles::{handle, value, Handle};

/// The `int` of handle `h`, for the conversion `name`.
fn to_int(name: &str, h: Handle) -> c_int {
    match c_int::try_from(value(h)) {
        Ok(i) => i,
        Err(_) => {
            eprintln!(
                "o2g: {name}: handle value {:#x} does not fit in an int (aborting the job)",
                value(h)
            );
            crate::env::abort_job(crate::error::MPI_ERR_INTERN)
        }
    }
}

/// The handle of `int` `i` (negative values give handles no object has).
fn from_int(i: c_int) -> Handle {
    handle(i as u32 as usize)
}

macro_rules! conversions {
    ($($to:ident, $from:ident;)*) => {$(
        /// Handle → `int` (MPI 5.0 standard ABI): the identity on the handle's
        /// value.
        #[export]
        pub(crate) extern "C" fn $to(h: Handle) -> c_int {
            to_int(stringify!($to), h)
        }

        /// `int` → handle (MPI 5.0 standard ABI): the inverse of the `toint`
        /// conversion.
        #[export]
        pub(crate) extern "C" fn $from(i: c_int) -> Handle {
            from_int(i)
        }
    )*};
}

conversions! {
    MPI_Comm_toint, MPI_Comm_fromint;
    MPI_Errhandler_toint, MPI_Errhandler_fromint;
    MPI_File_toint, MPI_File_fromint;
    MPI_Group_toint, MPI_Group_fromint;
    MPI_Info_toint, MPI_Info_fromint;
    MPI_Message_toint, MPI_Message_fromint;
    MPI_Op_toint, MPI_Op_fromint;
    MPI_Request_toint, MPI_Request_fromint;
    MPI_Session_toint, MPI_Session_fromint;
    MPI_Type_toint, MPI_Type_fromint;
    MPI_Win_toint, MPI_Win_fromint;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_are_inverse_on_handle_values() {
        for v in [0x101usize, 0x209, 0x10000, 0x7fff_fff0] {
            let h = handle(v);
            assert_eq!(value(MPI_Comm_fromint(MPI_Comm_toint(h))), v);
            assert_eq!(MPI_Type_toint(h) as usize, v);
        }
    }
}
