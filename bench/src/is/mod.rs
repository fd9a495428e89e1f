//! A NAS-IS-style integer sort (NPB 3.4 IS, MPI version), on the `mpi`
//! crate: the same keys, bucket redistribution, collectives and
//! verification as NPB, so its figures are comparable with the C version
//! run on Open MPI and MPICH.
//!
//! - [`class`]: problem sizes and NPB's partial-verification values.
//! - [`keys`]: NPB's random number generator and key sequence.
//! - [`hot`]: the sort's loops over every key, kept on one page of code.
//! - [`sort`]: one ranking iteration (allreduce of bucket sizes, alltoall
//!   of counts, alltoallv of keys), the timed loop and the full check.

pub mod class;
pub mod hot;
pub mod keys;
pub mod sort;
