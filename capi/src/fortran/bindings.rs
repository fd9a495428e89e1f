//! The generated Fortran bindings (`capi/build/fortran.rs`).
//!
//! Each `mpi_xxx_` converts its arguments, calls the C `MPI_Xxx` (so a
//! C profiling tool also sees Fortran's calls) and stores the result in
//! `ierror`; `pmpi_xxx_` calls `PMPI_Xxx`.
//!
//! # Safety (of every generated function)
//!
//! The caller is Fortran code compiled with `mpif.h` or `use mpi`: each
//! pointer is a valid argument of the type the standard's Fortran binding
//! gives it, each hidden length the length of its character argument.

#![allow(
    clippy::missing_safety_doc,
    clippy::too_many_arguments,
    clippy::let_and_return,
    unused_unsafe
)]

use std::ffi::{c_char, c_int, c_void};

use crate::fortran::Fint;
use crate::handles::Handle;

include!(concat!(env!("OUT_DIR"), "/fortran_bindings.rs"));
