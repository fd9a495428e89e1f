//! Communicators (MPI 5.0 chapter 7): size, rank, dup (also with info
//! and nonblocking), split, split by type, create from a group (also
//! collectively over the group only), free, compare, names and info
//! hints, on the `mpi` crate's `Communicator`. Groups are `group.rs`,
//! attributes `attr.rs`, topologies `topo.rs`.

use o2g_mpi_abi_macros::export;
use std::collections::HashSet;
use std::ffi::{c_char, c_int};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::attr::{self, Attr};
use crate::error::{boundary, Code, Res, MPI_ERR_ARG, MPI_ERR_COMM};
use crate::ffi;
use crate::handles::{self, Handle, ReqEntry};
use crate::info::{self, Pairs};
use crate::status::UNDEFINED;

/// `MPI_IDENT`, `MPI_CONGRUENT`, `MPI_SIMILAR`, `MPI_UNEQUAL` (§7.4.1).
pub(crate) const IDENT: c_int = 201;
const CONGRUENT: c_int = 202;
pub(crate) const SIMILAR: c_int = 203;
pub(crate) const UNEQUAL: c_int = 204;

/// `MPI_COMM_TYPE_SHARED`, `_HW_UNGUIDED`, `_HW_GUIDED` (§7.4.2).
const COMM_TYPE_SHARED: c_int = 221;
const COMM_TYPE_HW_UNGUIDED: c_int = 222;
const COMM_TYPE_HW_GUIDED: c_int = 223;
const COMM_TYPE_RESOURCE_GUIDED: c_int = 224;

/// `MPI_MAX_OBJECT_NAME`, with the NUL.
pub(crate) const MAX_OBJECT_NAME: usize = 128;

/// The plain data of a communicator, `Send + Sync` (the `mpi` crate's
/// communicator is not): what a later thread-safe library shares as is.
#[derive(Default)]
pub(crate) struct CommMeta {
    /// `MPI_Comm_set_name` (§7.8).
    pub(crate) name: Mutex<String>,
    /// Cached attributes, in the order they were first set (§7.7).
    pub(crate) attrs: Mutex<Vec<Attr>>,
    /// Info hints (§7.4.4).
    pub(crate) info: Mutex<Pairs>,
    /// The virtual topology (chapter 8), if any.
    pub(crate) topo: Mutex<Option<Arc<mpi::topology::Topology>>>,
}

impl CommMeta {
    /// The data of a predefined communicator named `name`.
    pub(crate) fn named(name: &str) -> Arc<Self> {
        let m = Self::default();
        *lock(&m.name) = name.to_owned();
        Arc::new(m)
    }
}

/// Locks `m`, taking over a lock poisoned by a panic elsewhere (the data
/// behind these locks holds no invariant a panic could break).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Registers `comm`, made from the communicator `parent` (whose error
/// handler it inherits), with the info hints `hints`.
pub(crate) fn adopt(
    parent: &handles::CommEntry,
    comm: mpi::Communicator,
    hints: Pairs,
) -> Res<Handle> {
    let h = handles::new_comm(comm, parent.errh.get())?;
    *lock(&handles::comm(h)?.meta.info) = hints;
    Ok(h)
}

/// `MPI_Comm_dup(_with_info)`: a new communicator with the attributes
/// (by their copy callbacks), topology and error handler of `comm`, and
/// `hints` or else those of `comm`.
fn dup(comm: Handle, hints: Option<Pairs>) -> Res<Handle> {
    let c = handles::comm(comm)?;
    let hints = hints.unwrap_or_else(|| lock(&c.meta.info).clone());
    let h = adopt(&c, c.comm.dup()?, hints)?;
    let n = handles::comm(h)?;
    *lock(&n.meta.topo) = lock(&c.meta.topo).clone();
    if let Err(e) = attr::copy_all(comm, &c.meta, &n.meta) {
        drop(n);
        handles::free_comm(h)?;
        return Err(e);
    }
    Ok(h)
}

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

/// `MPI_Comm_dup` (§7.4.2): same group, new context, same error
/// handler, topology and info hints; attributes copied by their keyvals'
/// copy callbacks. Collective.
///
/// # Safety
///
/// `newcomm` must be valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Comm_dup(comm: Handle, newcomm: *mut Handle) -> c_int {
    boundary("MPI_Comm_dup", comm, || {
        let h = dup(comm, None)?;
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(newcomm, h) }
    })
}

/// `MPI_Comm_dup_with_info` (§7.4.2): as `MPI_Comm_dup`, with the hints
/// of `info` instead of those of `comm`.
///
/// # Safety
///
/// `newcomm` must be valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Comm_dup_with_info(
    comm: Handle,
    info: Handle,
    newcomm: *mut Handle,
) -> c_int {
    boundary("MPI_Comm_dup_with_info", comm, || {
        let h = dup(comm, Some(info::pairs(info, true)?))?;
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(newcomm, h) }
    })
}

/// `MPI_Comm_idup` (§7.4.2): the duplication is done before the call
/// returns (it is collective inside: every member must call it before
/// any returns), and the request is complete at once.
///
/// # Safety
///
/// `newcomm` and `request` must be valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Comm_idup(
    comm: Handle,
    newcomm: *mut Handle,
    request: *mut Handle,
) -> c_int {
    boundary("MPI_Comm_idup", comm, || {
        let h = dup(comm, None)?;
        let r = handles::new_request(ReqEntry::ProcNull)?;
        // SAFETY: the caller passes valid output pointers.
        unsafe {
            ffi::out(newcomm, h)?;
            ffi::out(request, r)
        }
    })
}

/// `MPI_Comm_idup_with_info` (§7.4.2): as `MPI_Comm_idup` (complete at
/// once), with the hints of `info`.
///
/// # Safety
///
/// `newcomm` and `request` must be valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Comm_idup_with_info(
    comm: Handle,
    info: Handle,
    newcomm: *mut Handle,
    request: *mut Handle,
) -> c_int {
    boundary("MPI_Comm_idup_with_info", comm, || {
        let h = dup(comm, Some(info::pairs(info, true)?))?;
        let r = handles::new_request(ReqEntry::ProcNull)?;
        // SAFETY: the caller passes valid output pointers.
        unsafe {
            ffi::out(newcomm, h)?;
            ffi::out(request, r)
        }
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
            Some(n) => adopt(&c, n, Vec::new())?,
            None => handles::handle(handles::COMM_NULL),
        };
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(newcomm, h) }
    })
}

/// `MPI_Comm_free` (§7.4.3): calls the delete callbacks of its
/// attributes (last set first), then sets the handle to
/// `MPI_COMM_NULL`; a callback's error is returned after the
/// communicator is freed. Pending operations on the communicator
/// complete normally.
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
        if handles::value(*h) < handles::FIRST_DYNAMIC {
            return Err(Code(MPI_ERR_COMM));
        }
        let meta = handles::comm(*h)?.meta.clone();
        // Its attached buffer's messages go out first (§3.6.1).
        let flushed = crate::bsend::comm_freed(&meta);
        let deleted = attr::delete_all(*h, &meta);
        handles::free_comm(*h)?;
        *h = handles::handle(handles::COMM_NULL);
        flushed.and(deleted)
    })
}

/// `MPI_Comm_compare` (§7.4.1): `MPI_IDENT` for the same communicator,
/// `MPI_CONGRUENT` for the same members in the same order, `MPI_SIMILAR`
/// for the same members in another order, `MPI_UNEQUAL` otherwise. Two
/// inter-communicators compare both their local and their remote groups
/// (§7.6.1); an inter- and an intra-communicator are `MPI_UNEQUAL`.
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
        let ranks = |c: &mpi::Communicator| {
            let remote = c.remote_group().map(|g| g.world_ranks().to_vec());
            (mpi::raw::world_ranks(c).to_vec(), remote)
        };
        let ((lx, rx), (ly, ry)) = (ranks(&x.comm), ranks(&y.comm));
        let same_set = |p: &[u32], q: &[u32]| {
            p.len() == q.len()
                && p.iter().collect::<HashSet<_>>() == q.iter().collect::<HashSet<_>>()
        };
        let r = if rx.is_some() != ry.is_some() {
            UNEQUAL
        } else if lx == ly && rx == ry {
            if mpi::raw::context_id(&x.comm) == mpi::raw::context_id(&y.comm) {
                IDENT
            } else {
                CONGRUENT
            }
        } else if same_set(&lx, &ly)
            && same_set(rx.as_deref().unwrap_or(&[]), ry.as_deref().unwrap_or(&[]))
        {
            SIMILAR
        } else {
            UNEQUAL
        };
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(result, r) }
    })
}

/// `MPI_Comm_create` (§7.4.2): a communicator of the processes of
/// `group` (which must belong to `comm`); `MPI_COMM_NULL` for the
/// others. Collective over `comm`; processes may pass different groups if
/// those are the same or disjoint.
///
/// # Safety
///
/// `newcomm` must be valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Comm_create(
    comm: Handle,
    group: Handle,
    newcomm: *mut Handle,
) -> c_int {
    boundary("MPI_Comm_create", comm, || {
        let c = handles::comm(comm)?;
        let g = crate::group::lookup(group)?;
        let h = match c.comm.create(&g)? {
            Some(n) => adopt(&c, n, Vec::new())?,
            None => handles::handle(handles::COMM_NULL),
        };
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(newcomm, h) }
    })
}

/// `MPI_Comm_create_group` (§7.4.2): as `MPI_Comm_create`, but
/// collective only over the members of `group`, told apart from other
/// such calls by `tag`.
///
/// # Safety
///
/// `newcomm` must be valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Comm_create_group(
    comm: Handle,
    group: Handle,
    tag: c_int,
    newcomm: *mut Handle,
) -> c_int {
    boundary("MPI_Comm_create_group", comm, || {
        let c = handles::intra_for(comm, "MPI_Comm_create_group")?;
        let g = crate::group::lookup(group)?;
        let h = match c.comm.create_group(&g, tag)? {
            Some(n) => adopt(&c, n, Vec::new())?,
            None => handles::handle(handles::COMM_NULL),
        };
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(newcomm, h) }
    })
}

/// `MPI_Comm_split_type` (§7.4.2): `MPI_COMM_TYPE_SHARED` groups the
/// processes of one host (same host name); `MPI_COMM_TYPE_HW_GUIDED`
/// and `MPI_COMM_TYPE_RESOURCE_GUIDED` (MPI 4.1) do so for the
/// `mpi_hw_resource_type` `mpi_shared_memory` and give `MPI_COMM_NULL`
/// for any other; `MPI_COMM_TYPE_HW_UNGUIDED` does so when that makes a
/// strictly smaller group, `MPI_COMM_NULL` otherwise; `MPI_UNDEFINED`
/// gives `MPI_COMM_NULL`. Ordered by `key`, then rank. The new
/// communicator keeps the hints of `info`. Collective. On an
/// inter-communicator it is `MPI_Comm_split` with the host as the colour
/// (§7.6.2): each host's processes of the two groups make an
/// inter-communicator.
///
/// # Safety
///
/// `newcomm` must be valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Comm_split_type(
    comm: Handle,
    split_type: c_int,
    key: c_int,
    info: Handle,
    newcomm: *mut Handle,
) -> c_int {
    boundary("MPI_Comm_split_type", comm, || {
        let c = handles::comm(comm)?;
        let hints = info::pairs(info, true)?;
        let host = ffi::hostname();
        let by_host = match split_type {
            UNDEFINED => None,
            COMM_TYPE_SHARED | COMM_TYPE_HW_UNGUIDED => Some(host.as_str()),
            COMM_TYPE_HW_GUIDED | COMM_TYPE_RESOURCE_GUIDED => hints
                .iter()
                .any(|(k, v)| k == "mpi_hw_resource_type" && v == "mpi_shared_memory")
                .then_some(host.as_str()),
            _ => return Err(Code(MPI_ERR_ARG)),
        };
        let made = if c.comm.is_inter() {
            c.comm.split(host_color(by_host), key)?
        } else {
            c.comm.split_by_host(by_host, key)?
        };
        let made = made.filter(|n| split_type != COMM_TYPE_HW_UNGUIDED || n.size() < c.comm.size());
        let h = match made {
            Some(n) => adopt(&c, n, hints)?,
            None => handles::handle(handles::COMM_NULL),
        };
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(newcomm, h) }
    })
}

/// The split colour of a host on an inter-communicator: a hash of its
/// name (every rank runs the same library, so the same hash), 31 bits.
fn host_color(host: Option<&str>) -> mpi::Color {
    use std::hash::{DefaultHasher, Hash, Hasher};
    host.map_or(mpi::Color::Undefined, |h| {
        let mut s = DefaultHasher::new();
        h.hash(&mut s);
        mpi::Color::With((s.finish() & 0x7fff_ffff) as u32)
    })
}

/// A name as an object keeps it: at most `MPI_MAX_OBJECT_NAME - 1`
/// bytes, cut between characters.
pub(crate) fn object_name(mut n: String) -> String {
    let mut cut = n.len().min(MAX_OBJECT_NAME - 1);
    while !n.is_char_boundary(cut) {
        cut -= 1;
    }
    n.truncate(cut);
    n
}

/// `MPI_Comm_set_name` (§7.8): at most `MPI_MAX_OBJECT_NAME - 1` bytes
/// are kept.
///
/// # Safety
///
/// `name` is a C string.
#[export]
pub(crate) unsafe extern "C" fn MPI_Comm_set_name(comm: Handle, name: *const c_char) -> c_int {
    boundary("MPI_Comm_set_name", comm, || {
        let c = handles::comm(comm)?;
        // SAFETY: the caller passes a C string.
        let n = unsafe { ffi::c_str(name) }?;
        *lock(&c.meta.name) = object_name(n);
        Ok(())
    })
}

/// `MPI_Comm_get_name` (§7.8): `MPI_COMM_WORLD` and `MPI_COMM_SELF`
/// until renamed, empty for a communicator never named.
///
/// # Safety
///
/// `name` must be valid for `MPI_MAX_OBJECT_NAME` bytes of writes,
/// `resultlen` for one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Comm_get_name(
    comm: Handle,
    name: *mut c_char,
    resultlen: *mut c_int,
) -> c_int {
    boundary("MPI_Comm_get_name", comm, || {
        // The null handle is named too, as in MPICH and Open MPI (mpi4py
        // relies on it).
        let n = if handles::value(comm) == handles::COMM_NULL {
            "MPI_COMM_NULL".to_owned()
        } else {
            lock(&handles::comm(comm)?.meta.name).clone()
        };
        // SAFETY: the caller passes the buffer and length pointers.
        unsafe { ffi::write_str(name, MAX_OBJECT_NAME, &n, resultlen) }
    })
}

/// `MPI_Comm_set_info` (§7.4.4): the hints of `info` replace those of
/// the same keys; no hint changes what this library does.
#[export]
pub(crate) extern "C" fn MPI_Comm_set_info(comm: Handle, info: Handle) -> c_int {
    boundary("MPI_Comm_set_info", comm, || {
        let c = handles::comm(comm)?;
        let r = info::merge(&mut lock(&c.meta.info), info);
        r
    })
}

/// `MPI_Comm_get_info` (§7.4.4): a new info object with the hints set on
/// the communicator (by `MPI_Comm_set_info`, `MPI_Comm_dup_with_info`,
/// `MPI_Comm_split_type`, or inherited by `MPI_Comm_dup`).
///
/// # Safety
///
/// `info_used` must be valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Comm_get_info(comm: Handle, info_used: *mut Handle) -> c_int {
    boundary("MPI_Comm_get_info", comm, || {
        let hints = lock(&handles::comm(comm)?.meta.info).clone();
        let h = info::new_info(hints);
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(info_used, h) }
    })
}

/// `MPI_Comm_test_inter` (§7.6.1): whether `comm` is an
/// inter-communicator (`intercomm.rs`).
///
/// # Safety
///
/// `flag` must be valid for a write of one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Comm_test_inter(comm: Handle, flag: *mut c_int) -> c_int {
    boundary("MPI_Comm_test_inter", comm, || {
        let inter = handles::comm(comm)?.comm.is_inter();
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(flag, c_int::from(inter)) }
    })
}
