//! Communicators (MPI 5.0 chapter 7): size, rank, dup, split, free and
//! compare, on the `mpi` crate's `Communicator`.

use o2g_mpi_abi_macros::export;
use std::collections::HashSet;
use std::ffi::c_int;

use crate::error::{boundary, Code, MPI_ERR_ARG};
use crate::ffi;
use crate::handles::{self, Handle};
use crate::status::UNDEFINED;

/// `MPI_IDENT`, `MPI_CONGRUENT`, `MPI_SIMILAR`, `MPI_UNEQUAL` (§7.4.1).
const IDENT: c_int = 201;
const CONGRUENT: c_int = 202;
const SIMILAR: c_int = 203;
const UNEQUAL: c_int = 204;

/// `MPI_Comm_size` (§7.4.1).
///
/// # Safety
///
/// `size` must be valid for a write of one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Comm_size(comm: Handle, size: *mut c_int) -> c_int {
    boundary("MPI_Comm_size", comm, || {
        let n = handles::comm(comm)?.comm.size();
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(size, n) }
    })
}

/// `MPI_Comm_rank` (§7.4.1).
///
/// # Safety
///
/// `rank` must be valid for a write of one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Comm_rank(comm: Handle, rank: *mut c_int) -> c_int {
    boundary("MPI_Comm_rank", comm, || {
        let r = handles::comm(comm)?.comm.rank();
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(rank, r) }
    })
}

/// `MPI_Comm_dup` (§7.4.2): same group, new context, same error handler.
/// Collective.
///
/// # Safety
///
/// `newcomm` must be valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Comm_dup(comm: Handle, newcomm: *mut Handle) -> c_int {
    boundary("MPI_Comm_dup", comm, || {
        let c = handles::comm(comm)?;
        let h = handles::new_comm(c.comm.dup()?, c.errh.get())?;
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(newcomm, h) }
    })
}

/// `MPI_Comm_split` (§7.4.2): one communicator per `color` (ordered by
/// `key`, then rank); `MPI_UNDEFINED` gets `MPI_COMM_NULL`. Collective.
///
/// # Safety
///
/// `newcomm` must be valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Comm_split(
    comm: Handle,
    color: c_int,
    key: c_int,
    newcomm: *mut Handle,
) -> c_int {
    boundary("MPI_Comm_split", comm, || {
        let c = handles::comm(comm)?;
        let color = match color {
            UNDEFINED => mpi::Color::Undefined,
            c => mpi::Color::With(u32::try_from(c).map_err(|_| Code(MPI_ERR_ARG))?),
        };
        let h = match c.comm.split(color, key)? {
            Some(n) => handles::new_comm(n, c.errh.get())?,
            None => handles::handle(handles::COMM_NULL),
        };
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(newcomm, h) }
    })
}

/// `MPI_Comm_free` (§7.4.3): sets the handle to `MPI_COMM_NULL`. Pending
/// operations on the communicator complete normally.
///
/// # Safety
///
/// `comm` must be valid for reading and writing one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Comm_free(comm: *mut Handle) -> c_int {
    // SAFETY: read for the error handler only; null is allowed here.
    let target = unsafe { comm.as_ref() }
        .copied()
        .unwrap_or(std::ptr::null_mut());
    boundary("MPI_Comm_free", target, || {
        // SAFETY: the caller passes a valid in-out pointer.
        let h = unsafe { ffi::inout(comm) }?;
        handles::free_comm(*h)?;
        *h = handles::handle(handles::COMM_NULL);
        Ok(())
    })
}

/// `MPI_Comm_compare` (§7.4.1): `MPI_IDENT` for the same communicator,
/// `MPI_CONGRUENT` for the same members in the same order, `MPI_SIMILAR`
/// for the same members in another order, `MPI_UNEQUAL` otherwise.
///
/// # Safety
///
/// `result` must be valid for a write of one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Comm_compare(
    a: Handle,
    b: Handle,
    result: *mut c_int,
) -> c_int {
    boundary("MPI_Comm_compare", a, || {
        let (x, y) = (handles::comm(a)?, handles::comm(b)?);
        let (mx, my) = (
            mpi::raw::world_ranks(&x.comm),
            mpi::raw::world_ranks(&y.comm),
        );
        let r = if mx == my && mpi::raw::context_id(&x.comm) == mpi::raw::context_id(&y.comm) {
            IDENT
        } else if mx == my {
            CONGRUENT
        } else if mx.len() == my.len()
            && mx.iter().collect::<HashSet<_>>() == my.iter().collect::<HashSet<_>>()
        {
            SIMILAR
        } else {
            UNEQUAL
        };
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(result, r) }
    })
}
