//! Groups (MPI 5.0 §7.3): `MPI_Comm_group` and every `MPI_Group_*` call,
//! on the `mpi` crate's [`mpi::Group`], kept in a concurrent [`Table`].
//! `MPI_GROUP_EMPTY` is predefined; every operation returns a new handle,
//! an empty result too (which compares `MPI_IDENT` to `MPI_GROUP_EMPTY`).

use o2g_mpi_abi_macros::export;
use std::ffi::c_int;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::comm::{IDENT, SIMILAR, UNEQUAL};
use crate::error::{boundary, Code, Res, MPI_ERR_ARG, MPI_ERR_GROUP, MPI_ERR_RANK};
use crate::ffi;
use crate::handles::{self, Handle};
use crate::status::{PROC_NULL, UNDEFINED};
use crate::table::Table;

/// `MPI_GROUP_NULL`, `MPI_GROUP_EMPTY`.
const GROUP_NULL: usize = 0x108;
const GROUP_EMPTY: usize = 0x109;

static GROUPS: Table<mpi::Group> = Table::new();

/// This process's world rank (set at `MPI_Init`).
static ME: AtomicU32 = AtomicU32::new(0);

/// Records this process's world rank (at `MPI_Init`).
pub(crate) fn set_world_rank(r: u32) {
    ME.store(r, Ordering::Relaxed);
}

/// The group behind `h` (`MPI_ERR_GROUP` for none).
pub(crate) fn lookup(h: Handle) -> Res<mpi::Group> {
    handles::running()?;
    match handles::value(h) {
        GROUP_EMPTY => Ok(mpi::Group::empty(ME.load(Ordering::Relaxed))),
        _ => GROUPS
            .get(h)
            .map(|g| (*g).clone())
            .ok_or(Code(MPI_ERR_GROUP)),
    }
}

/// Files a new group and writes its handle to `out`.
///
/// # Safety
///
/// A non-null `out` is valid for a write of one handle.
pub(crate) unsafe fn give(g: mpi::Group, out: *mut Handle) -> Res<()> {
    let h = GROUPS.insert(g);
    // SAFETY: by this function's contract.
    unsafe { ffi::out(out, h) }.inspect_err(|_| drop(GROUPS.remove(h)))
}

/// A rank count argument.
fn count(n: c_int) -> Res<usize> {
    usize::try_from(n).map_err(|_| Code(MPI_ERR_ARG))
}

/// `mpi` crate errors of group calls: a bad rank is `MPI_ERR_RANK`, a
/// repeated one `MPI_ERR_ARG` (the default mapping).
fn ranks_err(e: mpi::Error) -> Code {
    match e {
        mpi::Error::InvalidRank { .. } => Code(MPI_ERR_RANK),
        e => Code::from(e),
    }
}

/// `MPI_Comm_group` (§7.3.1): the group (the local group of an
/// inter-communicator, §7.6.1).
///
/// # Safety
///
/// `group` must be valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Comm_group(comm: Handle, group: *mut Handle) -> c_int {
    boundary("MPI_Comm_group", comm, || {
        let g = handles::comm(comm)?.comm.group();
        // SAFETY: the caller passes a valid output pointer.
        unsafe { give(g, group) }
    })
}

/// `MPI_Comm_remote_group` (§7.6.1): the remote group of an
/// inter-communicator (`MPI_ERR_COMM` for an intra-communicator).
///
/// # Safety
///
/// `group` must be valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Comm_remote_group(comm: Handle, group: *mut Handle) -> c_int {
    boundary("MPI_Comm_remote_group", comm, || {
        let g = handles::comm(comm)?.comm.remote_group().ok_or_else(|| {
            crate::error::explained(
                crate::error::MPI_ERR_COMM,
                "MPI_Comm_remote_group needs an inter-communicator",
            )
        })?;
        // SAFETY: the caller passes a valid output pointer.
        unsafe { give(g, group) }
    })
}

/// `MPI_Group_size` (§7.3.1).
///
/// # Safety
///
/// `size` must be valid for a write of one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Group_size(group: Handle, size: *mut c_int) -> c_int {
    boundary("MPI_Group_size", std::ptr::null_mut(), || {
        let n = lookup(group)?.size();
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(size, n) }
    })
}

/// `MPI_Group_rank` (§7.3.1): `MPI_UNDEFINED` for a process outside the
/// group.
///
/// # Safety
///
/// `rank` must be valid for a write of one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Group_rank(group: Handle, rank: *mut c_int) -> c_int {
    boundary("MPI_Group_rank", std::ptr::null_mut(), || {
        let r = lookup(group)?.rank().unwrap_or(UNDEFINED);
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(rank, r) }
    })
}

/// `MPI_Group_translate_ranks` (§7.3.1): `MPI_UNDEFINED` for a process
/// not in `group2`, `MPI_PROC_NULL` stays `MPI_PROC_NULL`.
///
/// # Safety
///
/// `ranks1` must be valid for `n` reads, `ranks2` for `n` writes.
#[export]
pub(crate) unsafe extern "C" fn MPI_Group_translate_ranks(
    group1: Handle,
    n: c_int,
    ranks1: *const c_int,
    group2: Handle,
    ranks2: *mut c_int,
) -> c_int {
    boundary("MPI_Group_translate_ranks", std::ptr::null_mut(), || {
        let (a, b) = (lookup(group1)?, lookup(group2)?);
        let n = count(n)?;
        // SAFETY: the caller passes `n` readable ranks.
        let from = unsafe { ffi::array(ranks1, n) }?;
        let real: Vec<c_int> = from.iter().copied().filter(|&r| r != PROC_NULL).collect();
        let mut got = a.translate_ranks(&real, &b).map_err(ranks_err)?.into_iter();
        let out: Vec<c_int> = from
            .iter()
            .map(|&r| match r {
                PROC_NULL => PROC_NULL,
                _ => got.next().flatten().unwrap_or(UNDEFINED),
            })
            .collect();
        // SAFETY: the caller passes `n` writable ranks.
        let to = unsafe { ffi::array_mut(ranks2, n) }?;
        to.copy_from_slice(&out);
        Ok(())
    })
}

/// `MPI_Group_compare` (§7.3.1): `MPI_IDENT`, `MPI_SIMILAR` or
/// `MPI_UNEQUAL`.
///
/// # Safety
///
/// `result` must be valid for a write of one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Group_compare(
    group1: Handle,
    group2: Handle,
    result: *mut c_int,
) -> c_int {
    boundary("MPI_Group_compare", std::ptr::null_mut(), || {
        let r = match lookup(group1)?.compare(&lookup(group2)?) {
            mpi::Comparison::Identical => IDENT,
            mpi::Comparison::Similar => SIMILAR,
            mpi::Comparison::Unequal => UNEQUAL,
        };
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(result, r) }
    })
}

/// `MPI_Group_union` (§7.3.2).
///
/// # Safety
///
/// `newgroup` must be valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Group_union(
    a: Handle,
    b: Handle,
    newgroup: *mut Handle,
) -> c_int {
    boundary("MPI_Group_union", std::ptr::null_mut(), || {
        let g = lookup(a)?.union(&lookup(b)?);
        // SAFETY: the caller passes a valid output pointer.
        unsafe { give(g, newgroup) }
    })
}

/// `MPI_Group_intersection` (§7.3.2).
///
/// # Safety
///
/// `newgroup` must be valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Group_intersection(
    a: Handle,
    b: Handle,
    newgroup: *mut Handle,
) -> c_int {
    boundary("MPI_Group_intersection", std::ptr::null_mut(), || {
        let g = lookup(a)?.intersection(&lookup(b)?);
        // SAFETY: the caller passes a valid output pointer.
        unsafe { give(g, newgroup) }
    })
}

/// `MPI_Group_difference` (§7.3.2).
///
/// # Safety
///
/// `newgroup` must be valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Group_difference(
    a: Handle,
    b: Handle,
    newgroup: *mut Handle,
) -> c_int {
    boundary("MPI_Group_difference", std::ptr::null_mut(), || {
        let g = lookup(a)?.difference(&lookup(b)?);
        // SAFETY: the caller passes a valid output pointer.
        unsafe { give(g, newgroup) }
    })
}

/// `MPI_Group_incl` (§7.3.2).
///
/// # Safety
///
/// `ranks` must be valid for `n` reads, `newgroup` for a write of one
/// handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Group_incl(
    group: Handle,
    n: c_int,
    ranks: *const c_int,
    newgroup: *mut Handle,
) -> c_int {
    boundary("MPI_Group_incl", std::ptr::null_mut(), || {
        let g = lookup(group)?;
        // SAFETY: the caller passes `n` readable ranks.
        let r = unsafe { ffi::array(ranks, count(n)?) }?;
        let g = g.incl(r).map_err(ranks_err)?;
        // SAFETY: the caller passes a valid output pointer.
        unsafe { give(g, newgroup) }
    })
}

/// `MPI_Group_excl` (§7.3.2).
///
/// # Safety
///
/// `ranks` must be valid for `n` reads, `newgroup` for a write of one
/// handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Group_excl(
    group: Handle,
    n: c_int,
    ranks: *const c_int,
    newgroup: *mut Handle,
) -> c_int {
    boundary("MPI_Group_excl", std::ptr::null_mut(), || {
        let g = lookup(group)?;
        // SAFETY: the caller passes `n` readable ranks.
        let r = unsafe { ffi::array(ranks, count(n)?) }?;
        let g = g.excl(r).map_err(ranks_err)?;
        // SAFETY: the caller passes a valid output pointer.
        unsafe { give(g, newgroup) }
    })
}

/// `MPI_Group_range_incl` (§7.3.2): `ranges` holds `n` triplets
/// `first, last, stride`.
///
/// # Safety
///
/// `ranges` must be valid for `n` reads of three `int`s, `newgroup` for a
/// write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Group_range_incl(
    group: Handle,
    n: c_int,
    ranges: *const [c_int; 3],
    newgroup: *mut Handle,
) -> c_int {
    boundary("MPI_Group_range_incl", std::ptr::null_mut(), || {
        let g = lookup(group)?;
        // SAFETY: the caller passes `n` readable triplets.
        let r = unsafe { ffi::array(ranges, count(n)?) }?;
        let g = g.range_incl(r).map_err(ranks_err)?;
        // SAFETY: the caller passes a valid output pointer.
        unsafe { give(g, newgroup) }
    })
}

/// `MPI_Group_range_excl` (§7.3.2).
///
/// # Safety
///
/// As for `MPI_Group_range_incl`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Group_range_excl(
    group: Handle,
    n: c_int,
    ranges: *const [c_int; 3],
    newgroup: *mut Handle,
) -> c_int {
    boundary("MPI_Group_range_excl", std::ptr::null_mut(), || {
        let g = lookup(group)?;
        // SAFETY: the caller passes `n` readable triplets.
        let r = unsafe { ffi::array(ranges, count(n)?) }?;
        let g = g.range_excl(r).map_err(ranks_err)?;
        // SAFETY: the caller passes a valid output pointer.
        unsafe { give(g, newgroup) }
    })
}

/// `MPI_Group_free` (§7.3.3): sets the handle to `MPI_GROUP_NULL`
/// (`MPI_GROUP_EMPTY` may be freed too, and stays valid).
///
/// # Safety
///
/// `group` must be valid for reading and writing one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Group_free(group: *mut Handle) -> c_int {
    boundary("MPI_Group_free", std::ptr::null_mut(), || {
        handles::running()?;
        // SAFETY: the caller passes a valid in-out pointer.
        let h = unsafe { ffi::inout(group) }?;
        if handles::value(*h) != GROUP_EMPTY {
            GROUPS.remove(*h).ok_or(Code(MPI_ERR_GROUP))?;
        }
        *h = handles::handle(GROUP_NULL);
        Ok(())
    })
}
