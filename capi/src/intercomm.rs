//! Inter-communicators (MPI 5.0 §7.6): `MPI_Intercomm_create`,
//! `MPI_Intercomm_create_from_groups`, `MPI_Intercomm_merge` and
//! `MPI_Comm_remote_size`, on the `mpi` crate's inter-communicators (see
//! its `intercomm` module). An inter-communicator is an ordinary
//! communicator handle: point-to-point calls on it name the remote group
//! (the `mpi` crate maps ranks), and dup, split, create, free, compare,
//! names and attributes work as on any other (`comm.rs`);
//! `MPI_Comm_remote_group` is in `group.rs`, `MPI_Comm_test_inter` in
//! `comm.rs`.

use o2g_mpi_abi_macros::export;
use std::ffi::{c_char, c_int};

use crate::comm::adopt;
use crate::error::{boundary, explained, Code, MPI_ERR_ARG, MPI_ERR_COMM, MPI_ERR_ERRHANDLER};
use crate::ffi;
use crate::handles::{self, ErrMode, Handle};

/// `MPI_MAX_STRINGTAG_LEN`, with the NUL.
const MAX_STRINGTAG: usize = 1024;

/// `MPI_Intercomm_create` (§7.6.2): the inter-communicator between the
/// group of `local_comm` and that of the remote leader `remote_leader`
/// of `peer_comm`; `peer_comm`, `remote_leader` and `tag` count at the
/// local leader only. The new communicator inherits `local_comm`'s error
/// handler. Collective over both groups.
///
/// # Safety
///
/// `newintercomm` must be valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Intercomm_create(
    local_comm: Handle,
    local_leader: c_int,
    peer_comm: Handle,
    remote_leader: c_int,
    tag: c_int,
    newintercomm: *mut Handle,
) -> c_int {
    boundary("MPI_Intercomm_create", local_comm, || {
        let c = handles::comm(local_comm)?;
        if c.comm.is_inter() {
            return Err(explained(
                MPI_ERR_COMM,
                "MPI_Intercomm_create's local_comm is an inter-communicator",
            ));
        }
        // The peer communicator is significant at the local leader only:
        // the others may pass anything, MPI_COMM_NULL included. A leader
        // without a valid one still enters the call (with none), which
        // tells its group that it failed rather than leave it waiting.
        let peer = (c.comm.rank() == local_leader).then(|| handles::comm(peer_comm));
        let valid = peer.as_ref().and_then(|p| p.as_ref().ok());
        let made =
            c.comm
                .intercomm_create(local_leader, valid.map(|p| &p.comm), remote_leader, tag);
        if let Some(Err(code)) = peer {
            return Err(code);
        }
        let ic = made?;
        let h = adopt(&c, ic, Vec::new())?;
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(newintercomm, h) }
    })
}

/// `MPI_Intercomm_create_from_groups` (§7.6.2) in the World model: the
/// inter-communicator between `local_group` (leader `local_leader` there)
/// and `remote_group` (leader `remote_leader` there), told apart from
/// other such calls by `stringtag`, with the error handler `errhandler`.
/// The groups agree through `MPI_COMM_WORLD`'s collective context (the
/// `mpi` crate's `intercomm_create_from_groups`). Collective over both
/// groups; `info` holds hints, none of which changes anything.
///
/// # Safety
///
/// `stringtag` is a C string; `newintercomm` must be valid for a write
/// of one handle.
#[export]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn MPI_Intercomm_create_from_groups(
    local_group: Handle,
    local_leader: c_int,
    remote_group: Handle,
    remote_leader: c_int,
    stringtag: *const c_char,
    info: Handle,
    errhandler: Handle,
    newintercomm: *mut Handle,
) -> c_int {
    let world = handles::handle(handles::COMM_WORLD);
    boundary("MPI_Intercomm_create_from_groups", world, || {
        let local = crate::group::lookup(local_group)?;
        let remote = crate::group::lookup(remote_group)?;
        // SAFETY: the caller passes a C string.
        let tag = unsafe { ffi::c_str(stringtag) }?;
        if tag.len() >= MAX_STRINGTAG {
            return Err(explained(
                MPI_ERR_ARG,
                "a string tag of MPI_MAX_STRINGTAG_LEN bytes or more",
            ));
        }
        let hints = crate::info::pairs(info, true)?;
        let mode = errmode_of(errhandler)?;
        let w = handles::comm(world)?;
        let ic = w.comm.intercomm_create_from_groups(
            &local,
            local_leader,
            &remote,
            remote_leader,
            &tag,
        )?;
        let h = handles::new_comm(ic, mode)?;
        *crate::comm::lock(&handles::comm(h)?.meta.info) = hints;
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(newintercomm, h) }
    })
}

/// The error mode the error-handler handle `h` stands for (the
/// communicator it will be set on filled in when that is registered).
fn errmode_of(h: Handle) -> Result<ErrMode, Code> {
    match handles::value(h) {
        handles::ERRORS_ARE_FATAL => Ok(ErrMode::Fatal),
        handles::ERRORS_ABORT => Ok(ErrMode::Abort),
        handles::ERRORS_RETURN => Ok(ErrMode::Return),
        _ => crate::errhandler::mode(h, std::ptr::null_mut()).ok_or(Code(MPI_ERR_ERRHANDLER)),
    }
}

/// `MPI_Intercomm_merge` (§7.6.2): the intra-communicator of both groups
/// of `intercomm`, the group that passes `high` false first (if both pass
/// the same, the one whose first process has the lower
/// `MPI_COMM_WORLD` rank). Inherits `intercomm`'s error handler.
/// Collective over both groups.
///
/// # Safety
///
/// `newintracomm` must be valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Intercomm_merge(
    intercomm: Handle,
    high: c_int,
    newintracomm: *mut Handle,
) -> c_int {
    boundary("MPI_Intercomm_merge", intercomm, || {
        let c = handles::comm(intercomm)?;
        if !c.comm.is_inter() {
            return Err(explained(
                MPI_ERR_COMM,
                "MPI_Intercomm_merge needs an inter-communicator",
            ));
        }
        let merged = c.comm.merge(high != 0)?;
        let h = adopt(&c, merged, Vec::new())?;
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(newintracomm, h) }
    })
}

/// `MPI_Comm_remote_size` (§7.6.1): the size of the remote group of an
/// inter-communicator (`MPI_ERR_COMM` for an intra-communicator).
///
/// # Safety
///
/// `size` must be valid for a write of one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Comm_remote_size(comm: Handle, size: *mut c_int) -> c_int {
    boundary("MPI_Comm_remote_size", comm, || {
        let n = handles::comm(comm)?.comm.remote_size().ok_or_else(|| {
            explained(
                MPI_ERR_COMM,
                "MPI_Comm_remote_size needs an inter-communicator",
            )
        })?;
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(size, n) }
    })
}
