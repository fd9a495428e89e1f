//! Persistent collective operations (MPI 5.0 §6.13): `MPI_Barrier_init`,
//! `MPI_Bcast_init`, …, `MPI_Exscan_init` and their `_c` forms. Each
//! init call files an inactive persistent request (`persistent.rs`'s,
//! with a collective start) that keeps the call's arguments; every
//! `MPI_Start` or `MPI_Startall` starts the matching nonblocking
//! collective (`icoll.rs`) with them anew, and the usual wait and test
//! calls complete it and make it inactive again. The arguments (buffers,
//! count and displacement arrays, datatype and operation handles) are
//! read at each start, so they are checked there; the info argument
//! carries hints, none of which changes what the library does.

use o2g_mpi_abi_macros::export;
use std::ffi::c_int;

use crate::error::{boundary, Code, MPI_ERR_ARG};
use crate::ffi;
use crate::handles::{self, Handle};
use crate::icoll::Starter;
use crate::persistent;

/// Files a persistent collective on `comm` whose arguments `starter`
/// resolves now and whose every start runs what it resolved them into,
/// and writes its handle to `req`.
///
/// # Safety
///
/// A non-null `req` is valid for a write of one handle.
pub(crate) unsafe fn init(
    name: &str,
    comm: Handle,
    req: *mut Handle,
    starter: Box<Starter<'_>>,
) -> c_int {
    boundary(name, comm, || {
        let c = handles::comm(comm)?;
        if req.is_null() {
            return Err(Code(MPI_ERR_ARG));
        }
        let run = starter(&c)?;
        let h = persistent::collective(c, run)?;
        // SAFETY: non-null, valid for one handle by the caller's contract.
        unsafe { ffi::out(req, h) }
    })
}

/// `MPI_Barrier_init` (§6.13.1): a persistent barrier.
///
/// # Safety
///
/// `req` must be valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Barrier_init(
    comm: Handle,
    info: Handle,
    req: *mut Handle,
) -> c_int {
    let _ = info;
    // SAFETY: the caller's contract is init's.
    unsafe { init("MPI_Barrier_init", comm, req, crate::icoll::ibarrier()) }
}
