//! `MPI_Comm_create_from_group` (MPI 5.0 §7.4.2) in the World model: a
//! communicator made from a group with no parent communicator, collective
//! over the group's members only.
//!
//! o2g has no sessions, so every group is a group of `MPI_COMM_WORLD`'s
//! processes, and the members agree on a context id as
//! `MPI_Comm_create_group` does, on `MPI_COMM_WORLD`'s collective
//! context: a reduction to the group's first member and a broadcast back,
//! among the members only. The string tag becomes that call's tag
//! (`mpi::intercomm::string_tag`, the 31-bit FNV-1a hash that
//! `MPI_Intercomm_create_from_groups` makes of its own), which tells
//! concurrent calls of overlapping groups apart; a
//! message of another call is an error, never taken for this one's.

use o2g_mpi_abi_macros::export;
use std::ffi::{c_char, c_int};

use crate::error::{boundary, Code, Res, MPI_ERR_ARG, MPI_ERR_ERRHANDLER, MPI_ERR_GROUP};
use crate::ffi;
use crate::handles::{self, ErrMode, Handle};

/// `MPI_MAX_STRINGTAG_LEN`, with the NUL.
const MAX_STRINGTAG: usize = 1024;

/// The error mode the error-handler handle `h` stands for (the
/// communicator filled in when it is registered); `MPI_ERRHANDLER_NULL`
/// is the default, `MPI_ERRORS_ARE_FATAL`.
fn errmode_of(h: Handle) -> Res<ErrMode> {
    match handles::value(h) {
        handles::ERRHANDLER_NULL | handles::ERRORS_ARE_FATAL => Ok(ErrMode::Fatal),
        handles::ERRORS_ABORT => Ok(ErrMode::Abort),
        handles::ERRORS_RETURN => Ok(ErrMode::Return),
        _ => crate::errhandler::mode(h, std::ptr::null_mut()).ok_or(Code(MPI_ERR_ERRHANDLER)),
    }
}

/// `MPI_Comm_create_from_group` (§7.4.2): a communicator of the processes
/// of `group` (which must hold the caller), with the error handler
/// `errhandler` and the hints of `info`, and `MPI_TAG_UB` as an
/// attribute (§9.1.2). Collective over `group` only: every member passes
/// the same `stringtag` (at most `MPI_MAX_STRINGTAG_LEN` bytes), which
/// tells concurrent calls apart.
///
/// # Safety
///
/// `stringtag` is a C string; `newcomm` must be valid for a write of one
/// handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Comm_create_from_group(
    group: Handle,
    stringtag: *const c_char,
    info: Handle,
    errhandler: Handle,
    newcomm: *mut Handle,
) -> c_int {
    boundary("MPI_Comm_create_from_group", std::ptr::null_mut(), || {
        let g = crate::group::lookup(group)?;
        // SAFETY: the caller passes a C string.
        let tag = unsafe { ffi::c_str(stringtag) }?;
        if tag.len() >= MAX_STRINGTAG {
            return Err(Code(MPI_ERR_ARG));
        }
        if newcomm.is_null() {
            return Err(Code(MPI_ERR_ARG));
        }
        let hints = crate::info::pairs(info, true)?;
        let mode = errmode_of(errhandler)?;
        let world = handles::comm(handles::handle(handles::COMM_WORLD))?;
        let comm = world
            .comm
            .create_group(&g, mpi::intercomm::string_tag(&tag))?
            .ok_or(Code(MPI_ERR_GROUP))?;
        let h = handles::new_comm(comm, mode)?;
        let c = handles::comm(h)?;
        *crate::comm::lock(&c.meta.info) = hints;
        crate::attr::give_tag_ub(&c.meta);
        // SAFETY: the caller passes a valid output pointer (checked
        // non-null above).
        unsafe { ffi::out(newcomm, h) }
    })
}
