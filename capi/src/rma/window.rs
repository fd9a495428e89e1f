//! Making and freeing windows (§12.2), and what a window carries besides
//! its memory: group, name, info, attributes and error handler (§12.2.6,
//! §12.2.7, §12.6, §7.7.3).

use o2g_mpi_abi_macros::export;
use std::cell::{Cell, RefCell};
use std::ffi::{c_char, c_int, c_void};
use std::rc::Rc;

use super::shared::{self, Owned};
use super::target::{Memory, Target};
use super::{
    attrs, win, Origin, Win, FLAVOR_ALLOCATE, FLAVOR_CREATE, FLAVOR_DYNAMIC, FLAVOR_SHARED,
};
use crate::comm::lock;
use crate::error::{
    boundary, boundary_win, explained, Code, Res, MPI_ERR_ARG, MPI_ERR_DISP, MPI_ERR_RMA_ATTACH,
    MPI_ERR_RMA_FLAVOR, MPI_ERR_RMA_SHARED, MPI_ERR_SIZE,
};
use crate::ffi;
use crate::handles::{self, ErrMode, Handle};

/// What a new window is made of, before it is registered.
struct Parts {
    mem: Memory,
    base: usize,
    size: usize,
    disp_unit: c_int,
    flavor: c_int,
    owned: Option<Owned>,
}

/// Checks a window's size and displacement unit.
fn size_and_unit(size: isize, disp_unit: isize) -> Res<(usize, c_int)> {
    let size = usize::try_from(size)
        .map_err(|_| explained(MPI_ERR_SIZE, &format!("a window of {size} bytes")))?;
    let unit = c_int::try_from(disp_unit)
        .ok()
        .filter(|&u| u > 0)
        .ok_or_else(|| explained(MPI_ERR_DISP, &format!("a displacement unit of {disp_unit}")))?;
    Ok((size, unit))
}

/// Makes the window of `parts` on communicator `comm` (collective) and
/// writes its handle to `out`.
///
/// # Safety
///
/// `out` is valid for a write of one handle.
unsafe fn make(
    comm: Handle,
    info: Handle,
    out: *mut Handle,
    make: impl FnOnce(&mpi::Communicator) -> Res<Parts>,
) -> Res<()> {
    let c = handles::intra_for(comm, "a window")?;
    let hints = crate::info::pairs(info, true)?;
    let wcomm = c.comm.dup()?;
    let p = make(&wcomm)?;
    let n = wcomm.size() as usize;
    let module =
        if matches!(p.flavor, FLAVOR_CREATE | FLAVOR_ALLOCATE) && p.size > 0 && module_wanted()? {
            // SAFETY: the memory stays valid until `MPI_Win_free`, which
            // unregisters it first: the caller's for `MPI_Win_create` (its
            // contract), the window's own for `MPI_Win_allocate`.
            unsafe {
                mpi::raw::window::register_window(
                    &wcomm,
                    std::ptr::with_exposed_provenance_mut(p.base),
                    p.size,
                )
            }
        } else {
            None
        };
    let (extents, served) = if p.flavor == FLAVOR_DYNAMIC {
        (None, vec![false; n])
    } else {
        let mine = [
            p.size as u64,
            p.disp_unit as u64,
            u64::from(module.is_some()),
        ];
        let mut all = vec![[0u64; 3]; n];
        wcomm.all_gather_into(&[mine], &mut all)?;
        (
            Some(all.iter().map(|e| (e[0], e[1] as u32)).collect()),
            all.iter().map(|e| e[2] != 0).collect(),
        )
    };
    let target = Rc::new(RefCell::new(Target::new(
        mpi::raw::another_handle(&wcomm),
        p.mem,
    )));
    Target::start(&target);
    let meta = std::sync::Arc::new(crate::comm::CommMeta::default());
    *lock(&meta.info) = hints;
    let w = Win {
        comm: wcomm,
        errh: Cell::new(ErrMode::Fatal),
        meta,
        target,
        origin: RefCell::new(Origin::new(n)),
        base: p.base,
        attrs: attrs(p.size, p.disp_unit, p.flavor),
        extents,
        owned: RefCell::new(p.owned),
        module: Cell::new(module),
        served,
    };
    let target = w.target.clone();
    let h = handles::new_win(w).inspect_err(|_| target.borrow_mut().freed = true)?;
    // SAFETY: by this function's contract.
    unsafe { ffi::out(out, h) }
}

/// Whether windows go to the o2g module where it serves them:
/// `O2G_WIN_MODULE` unset or `1`; `0` keeps them in the library (to
/// compare the two).
fn module_wanted() -> Res<bool> {
    match std::env::var("O2G_WIN_MODULE").as_deref() {
        Err(_) | Ok("1") => Ok(true),
        Ok("0") => Ok(false),
        Ok(other) => Err(explained(
            crate::error::MPI_ERR_ARG,
            &format!("O2G_WIN_MODULE={other}: 0 (windows stay in the library) or 1"),
        )),
    }
}

/// `MPI_Win_create` and `_c` (§12.2.1).
///
/// # Safety
///
/// `base` is valid for `size` bytes for the window's life; `win` for a
/// write of one handle.
unsafe fn create(
    name: &str,
    base: *mut c_void,
    size: isize,
    unit: isize,
    info: Handle,
    comm: Handle,
    out: *mut Handle,
) -> c_int {
    boundary(name, comm, || {
        let (size, disp_unit) = size_and_unit(size, unit)?;
        // SAFETY: by this function's contract.
        unsafe {
            make(comm, info, out, |_| {
                let base = base.expose_provenance();
                Ok(Parts {
                    mem: Memory::Fixed {
                        base,
                        size,
                        disp_unit: disp_unit as usize,
                    },
                    base,
                    size,
                    disp_unit,
                    flavor: FLAVOR_CREATE,
                    owned: None,
                })
            })
        }
    })
}

/// `MPI_Win_create` (§12.2.1): a window over `size` bytes at `base`,
/// with displacements in units of `disp_unit` bytes. Collective.
///
/// # Safety
///
/// `base` is valid for `size` bytes until the window is freed; `win` for
/// a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Win_create(
    base: *mut c_void,
    size: isize,
    disp_unit: c_int,
    info: Handle,
    comm: Handle,
    win: *mut Handle,
) -> c_int {
    // SAFETY: the caller's contract is create's.
    unsafe {
        create(
            "MPI_Win_create",
            base,
            size,
            disp_unit as isize,
            info,
            comm,
            win,
        )
    }
}

/// `MPI_Win_create_c` (§12.2.1): `MPI_Win_create` with an `MPI_Aint`
/// displacement unit.
///
/// # Safety
///
/// As for `MPI_Win_create`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Win_create_c(
    base: *mut c_void,
    size: isize,
    disp_unit: isize,
    info: Handle,
    comm: Handle,
    win: *mut Handle,
) -> c_int {
    // SAFETY: the caller's contract is create's.
    unsafe { create("MPI_Win_create_c", base, size, disp_unit, info, comm, win) }
}

/// `MPI_Win_allocate` and `_c`, and the `_shared` ones (`shared`).
///
/// # Safety
///
/// `baseptr` is valid for a write of one pointer, `win` of one handle.
unsafe fn allocate(
    name: &str,
    shared: bool,
    (size, unit): (isize, isize),
    info: Handle,
    comm: Handle,
    baseptr: *mut c_void,
    out: *mut Handle,
) -> c_int {
    boundary(name, comm, || {
        let (size, disp_unit) = size_and_unit(size, unit)?;
        if baseptr.is_null() {
            return Err(Code(MPI_ERR_ARG));
        }
        let mut base = 0usize;
        // SAFETY: by this function's contract.
        unsafe {
            make(comm, info, out, |wcomm| {
                let (owned, start) = if shared {
                    shared_segment(wcomm, size)?
                } else {
                    (Owned::heap(size)?, 0)
                };
                base = owned.ptr() + start;
                Ok(Parts {
                    mem: Memory::Fixed {
                        base,
                        size,
                        disp_unit: disp_unit as usize,
                    },
                    base,
                    size,
                    disp_unit,
                    flavor: if shared {
                        FLAVOR_SHARED
                    } else {
                        FLAVOR_ALLOCATE
                    },
                    owned: Some(owned),
                })
            })?;
            ffi::out(
                baseptr.cast::<*mut c_void>(),
                std::ptr::with_exposed_provenance_mut(base),
            )
        }
    })
}

/// Every member's segment of a shared window, from its size:
/// (start, size), in rank order, and the mapping's length.
fn segments(wcomm: &mpi::Communicator, size: usize) -> Res<(Vec<(usize, u64)>, usize)> {
    let n = wcomm.size() as usize;
    let mut sizes = vec![0u64; n];
    wcomm.all_gather_into(&[size as u64], &mut sizes)?;
    let (offsets, len) = shared::layout(&sizes)?;
    Ok((offsets.into_iter().zip(sizes).collect(), len))
}

/// Maps a shared window's memory on every member (collective): all must
/// be on one host. The mapping, and where this member's segment starts
/// in it.
fn shared_segment(wcomm: &mpi::Communicator, size: usize) -> Res<(Owned, usize)> {
    let n = wcomm.size() as usize;
    let mut host = [0u8; 64];
    let me = crate::ffi::hostname();
    let cut = me.len().min(host.len());
    host[..cut].copy_from_slice(&me.as_bytes()[..cut]);
    let mut hosts = vec![[0u8; 64]; n];
    wcomm.all_gather_into(&[host], &mut hosts)?;
    let (segs, len) = segments(wcomm, size)?;
    let start = segs[wcomm.rank() as usize].0;
    // Every member learns whether the first could create the object, so
    // that all fail together. What the first member says: 1 it made the object, 2 the members
    // are not on one host, 0 it could not make it.
    const MADE: u64 = 1;
    const HOSTS: u64 = 2;
    let mut id = [std::process::id() as u64, next_shared_id(), 0];
    let mut mine = None;
    let mut failure = None;
    if wcomm.rank() == 0 {
        if hosts.iter().any(|h| *h != host) {
            id[2] = HOSTS;
        } else {
            match shared::map(&shared::object_name(id[0] as u32, id[1]), len, true) {
                Ok(m) => {
                    id[2] = MADE;
                    mine = Some(m);
                }
                Err(e) => failure = Some(e),
            }
        }
    }
    let mut first = [id];
    wcomm.broadcast_into(&mut first, 0)?;
    let [pid, serial, made] = first[0];
    match made {
        MADE => {}
        HOSTS => {
            return Err(explained(
                MPI_ERR_RMA_SHARED,
                "MPI_Win_allocate_shared needs every process of the communicator on one host",
            ))
        }
        _ => {
            return Err(failure.unwrap_or_else(|| {
                explained(
                    MPI_ERR_RMA_SHARED,
                    "the first process could not make the shared window memory",
                )
            }))
        }
    }
    let name = shared::object_name(pid as u32, serial);
    let mapped = match mine {
        Some(m) => Ok(m),
        None => shared::map(&name, len, false),
    };
    // Everyone has mapped it (or failed) before the name goes.
    let ok = u8::from(mapped.is_ok());
    let mut all = vec![0u8; n];
    wcomm.all_gather_into(&[ok], &mut all)?;
    if wcomm.rank() == 0 {
        shared::unlink(&name);
    }
    if all.contains(&0) {
        return Err(mapped.err().unwrap_or_else(|| {
            explained(
                MPI_ERR_RMA_SHARED,
                "another process could not map the shared window",
            )
        }));
    }
    mapped.map(|m| (m, start))
}

/// A serial number for this process's shared windows.
fn next_shared_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

macro_rules! allocators {
    ($($name:ident, $shared:expr, $unit:ty;)*) => {$(
        /// `MPI_Win_allocate`, `MPI_Win_allocate_shared` and their `_c`
        /// forms (§12.2.2, §12.2.3): the library allocates `size` bytes
        /// (aligned to 64) and writes their address to `*baseptr`; a
        /// shared window's memory is one mapping all members on the host
        /// share, each member's segment after the previous one's.
        /// Collective.
        ///
        /// # Safety
        ///
        /// `baseptr` is valid for a write of one pointer, `win` of one
        /// handle.
        #[export]
        pub(crate) unsafe extern "C" fn $name(size: isize, disp_unit: $unit, info: Handle, comm: Handle, baseptr: *mut c_void, win: *mut Handle) -> c_int {
            // SAFETY: the caller's contract is allocate's.
            unsafe { allocate(stringify!($name), $shared, (size, disp_unit as isize), info, comm, baseptr, win) }
        }
    )*};
}

allocators! {
    MPI_Win_allocate, false, c_int;
    MPI_Win_allocate_c, false, isize;
    MPI_Win_allocate_shared, true, c_int;
    MPI_Win_allocate_shared_c, true, isize;
}

/// `MPI_Win_shared_query` and `_c`.
///
/// # Safety
///
/// The out-pointers are valid for one write each.
unsafe fn shared_query<U: TryFrom<u32>>(
    name: &str,
    win: Handle,
    rank: c_int,
    size: *mut isize,
    unit: *mut U,
    baseptr: *mut c_void,
) -> c_int {
    boundary_win(name, win, || {
        let w = self::win(win)?;
        if w.attrs.flavor != FLAVOR_SHARED {
            return Err(explained(
                MPI_ERR_RMA_FLAVOR,
                "not a window of MPI_Win_allocate_shared",
            ));
        }
        let owned = w.owned.borrow();
        let start = owned.as_ref().map_or(0, Owned::ptr);
        let sizes: Vec<u64> = w.extents.iter().flatten().map(|e| e.0).collect();
        let (offsets, _) = shared::layout(&sizes)?;
        let r = if rank == super::PROC_NULL {
            // MPI_PROC_NULL: the first member with memory.
            sizes.iter().position(|&s| s > 0).unwrap_or(0)
        } else {
            super::target_rank(&w, rank)?.unwrap_or(0)
        };
        let (bytes, du) = w.extents.as_ref().map_or((0, 1), |e| e[r]);
        let p = if bytes == 0 && rank != super::PROC_NULL {
            0
        } else {
            start + offsets[r]
        };
        let du = U::try_from(du).map_err(|_| Code(MPI_ERR_ARG))?;
        // SAFETY: the caller passes valid out-pointers.
        unsafe {
            ffi::out(size, bytes as isize)?;
            ffi::out(unit, du)?;
            ffi::out(
                baseptr.cast::<*mut c_void>(),
                std::ptr::with_exposed_provenance_mut(p),
            )
        }
    })
}

/// `MPI_Win_shared_query` (§12.2.3): the size, displacement unit and
/// address (in this process) of member `rank`'s segment of a shared
/// window; for `MPI_PROC_NULL`, those of the first member whose segment
/// is not empty.
///
/// # Safety
///
/// The out-pointers are valid for one write each.
#[export]
pub(crate) unsafe extern "C" fn MPI_Win_shared_query(
    win: Handle,
    rank: c_int,
    size: *mut isize,
    disp_unit: *mut c_int,
    baseptr: *mut c_void,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { shared_query("MPI_Win_shared_query", win, rank, size, disp_unit, baseptr) }
}

/// `MPI_Win_shared_query_c` (§12.2.3): with an `MPI_Aint` unit.
///
/// # Safety
///
/// As for `MPI_Win_shared_query`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Win_shared_query_c(
    win: Handle,
    rank: c_int,
    size: *mut isize,
    disp_unit: *mut isize,
    baseptr: *mut c_void,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        shared_query(
            "MPI_Win_shared_query_c",
            win,
            rank,
            size,
            disp_unit,
            baseptr,
        )
    }
}

/// `MPI_Win_create_dynamic` (§12.2.4): a window with no memory until
/// `MPI_Win_attach`; displacements are addresses (`MPI_Get_address`).
/// Collective.
///
/// # Safety
///
/// `win` is valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Win_create_dynamic(
    info: Handle,
    comm: Handle,
    win: *mut Handle,
) -> c_int {
    boundary("MPI_Win_create_dynamic", comm, || {
        // SAFETY: by the caller's contract.
        unsafe {
            make(comm, info, win, |_| {
                Ok(Parts {
                    mem: Memory::Dynamic(Vec::new()),
                    base: 0,
                    size: 0,
                    disp_unit: 1,
                    flavor: FLAVOR_DYNAMIC,
                    owned: None,
                })
            })
        }
    })
}

/// The regions of dynamic window `w`, for a change.
fn regions<R>(w: &Win, f: impl FnOnce(&mut Vec<(usize, usize)>) -> Res<R>) -> Res<R> {
    match &mut w.target.borrow_mut().mem {
        Memory::Dynamic(r) => f(r),
        Memory::Fixed { .. } => Err(explained(
            MPI_ERR_RMA_FLAVOR,
            "not a window of MPI_Win_create_dynamic",
        )),
    }
}

/// `MPI_Win_attach` (§12.2.4): `size` bytes at `base` join the dynamic
/// window; they may not overlap a region attached already.
///
/// # Safety
///
/// `base` is valid for `size` bytes until detached.
#[export]
pub(crate) unsafe extern "C" fn MPI_Win_attach(
    win: Handle,
    base: *mut c_void,
    size: isize,
) -> c_int {
    boundary_win("MPI_Win_attach", win, || {
        let w = self::win(win)?;
        let size = usize::try_from(size).map_err(|_| Code(MPI_ERR_SIZE))?;
        let b = base.expose_provenance();
        regions(&w, |r| {
            let end = b.checked_add(size).ok_or(Code(MPI_ERR_RMA_ATTACH))?;
            if size > 0 && r.iter().any(|&(a, l)| b < a + l && a < end) {
                return Err(explained(
                    MPI_ERR_RMA_ATTACH,
                    "the memory overlaps a region attached already",
                ));
            }
            r.push((b, size));
            Ok(())
        })
    })
}

/// `MPI_Win_detach` (§12.2.4): the region attached at `base` leaves the
/// dynamic window.
#[export]
pub(crate) extern "C" fn MPI_Win_detach(win: Handle, base: *const c_void) -> c_int {
    boundary_win("MPI_Win_detach", win, || {
        let w = self::win(win)?;
        let b = base.addr();
        regions(&w, |r| {
            let at = r.iter().position(|&(a, _)| a == b).ok_or_else(|| {
                explained(MPI_ERR_RMA_ATTACH, "no region is attached at that address")
            })?;
            r.remove(at);
            Ok(())
        })
    })
}

/// `MPI_Win_free` (§12.2.5): waits until every member is done with the
/// window (collective), deletes its attributes, and frees it; `*win`
/// becomes `MPI_WIN_NULL`. Memory from `MPI_Win_allocate(_shared)` goes
/// with it.
///
/// # Safety
///
/// `win` is valid for reading and writing one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Win_free(win: *mut Handle) -> c_int {
    // SAFETY: the caller passes a valid in-out pointer (checked again
    // below for the result).
    let h = unsafe { win.as_ref() }
        .copied()
        .unwrap_or(std::ptr::null_mut());
    boundary_win("MPI_Win_free", h, || {
        // SAFETY: as above.
        let slot = unsafe { ffi::inout(win) }?;
        let w = self::win(*slot)?;
        {
            let o = w.origin.borrow();
            if o.lock_all.is_some()
                || o.started.is_some()
                || o.posted
                || o.held.iter().any(|h| *h != super::Held::None)
            {
                return Err(super::sync_error(
                    "MPI_Win_free inside an epoch: unlock, complete or wait first",
                ));
            }
        }
        super::sync::finish_gets(&w, None)?;
        w.comm.barrier()?;
        // Every epoch on it is over: the module lets go of the memory.
        if let Some(id) = w.module.take() {
            mpi::raw::window::unregister_window(&w.comm, id)?;
        }
        // A delete callback's error leaves the window as it was.
        super::attrs::delete_all(*slot, &w)?;
        w.target.borrow_mut().freed = true;
        mpi::raw::advance(&w.comm);
        let err = w.local_error();
        handles::free_win(*slot)?;
        *slot = handles::handle(super::WIN_NULL);
        err
    })
}

/// `MPI_Win_get_group` (§12.2.7): a new group of the window's members.
///
/// # Safety
///
/// `group` is valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Win_get_group(win: Handle, group: *mut Handle) -> c_int {
    boundary_win("MPI_Win_get_group", win, || {
        let g = self::win(win)?.comm.group();
        // SAFETY: the caller passes a valid output pointer.
        unsafe { crate::group::give(g, group) }
    })
}

/// `MPI_Win_set_info` (§12.2.7): the hints replace those of the same
/// keys; none changes what this library does.
#[export]
pub(crate) extern "C" fn MPI_Win_set_info(win: Handle, info: Handle) -> c_int {
    boundary_win("MPI_Win_set_info", win, || {
        let w = self::win(win)?;
        let r = crate::info::merge(&mut lock(&w.meta.info), info);
        r
    })
}

/// `MPI_Win_get_info` (§12.2.7): a new info object with the window's
/// hints.
///
/// # Safety
///
/// `info_used` is valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Win_get_info(win: Handle, info_used: *mut Handle) -> c_int {
    boundary_win("MPI_Win_get_info", win, || {
        let w = self::win(win)?;
        let mut hints = lock(&w.meta.info).clone();
        // What o2g did with the window: served by the module, and the
        // puts it placed in this process's memory so far.
        let module = w.module.get();
        hints.push(("o2g_module_agent".into(), module.is_some().to_string()));
        if let Some(id) = module {
            let placed = mpi::raw::window::placed_puts(&w.comm, id)?;
            hints.push(("o2g_placed_puts".into(), placed.to_string()));
        }
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(info_used, crate::info::new_info(hints)) }
    })
}

/// `MPI_Win_set_name` (§7.8): at most `MPI_MAX_OBJECT_NAME - 1` bytes
/// are kept.
///
/// # Safety
///
/// `name` is a C string.
#[export]
pub(crate) unsafe extern "C" fn MPI_Win_set_name(win: Handle, name: *const c_char) -> c_int {
    boundary_win("MPI_Win_set_name", win, || {
        let w = self::win(win)?;
        // SAFETY: the caller passes a C string.
        let n = unsafe { ffi::c_str(name) }?;
        *lock(&w.meta.name) = crate::comm::object_name(n);
        Ok(())
    })
}

/// `MPI_Win_get_name` (§7.8): empty for a window never named.
///
/// # Safety
///
/// `name` is valid for `MPI_MAX_OBJECT_NAME` bytes of writes,
/// `resultlen` for one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Win_get_name(
    win: Handle,
    name: *mut c_char,
    resultlen: *mut c_int,
) -> c_int {
    boundary_win("MPI_Win_get_name", win, || {
        let n = lock(&self::win(win)?.meta.name).clone();
        // SAFETY: the caller passes the buffer and length pointers.
        unsafe { ffi::write_str(name, crate::comm::MAX_OBJECT_NAME, &n, resultlen) }
    })
}

/// `MPI_Win_set_errhandler` (§12.6): `MPI_ERRORS_ARE_FATAL` (the
/// default), `MPI_ERRORS_ABORT`, `MPI_ERRORS_RETURN`, or a handler from
/// `MPI_Win_create_errhandler`.
#[export]
pub(crate) extern "C" fn MPI_Win_set_errhandler(win: Handle, errh: Handle) -> c_int {
    boundary_win("MPI_Win_set_errhandler", win, || {
        let w = self::win(win)?;
        w.errh.set(crate::error::mode_of(errh, win)?);
        Ok(())
    })
}

/// `MPI_Win_get_errhandler` (§12.6).
///
/// # Safety
///
/// `errh` is valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Win_get_errhandler(win: Handle, errh: *mut Handle) -> c_int {
    boundary_win("MPI_Win_get_errhandler", win, || {
        let v = crate::error::handle_of(self::win(win)?.errh.get());
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(errh, handles::handle(v)) }
    })
}

/// `MPI_Win_create_errhandler` (§12.6): a handler called with the
/// window and the error code.
///
/// # Safety
///
/// `function` is an `MPI_Win_errhandler_function`; `errhandler` valid
/// for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Win_create_errhandler(
    function: Option<crate::errhandler::ErrhFn>,
    errhandler: *mut Handle,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        crate::errhandler::create(
            "MPI_Win_create_errhandler",
            function.map(crate::errhandler::ErrhFunc::C),
            errhandler,
        )
    }
}

/// `MPI_Win_call_errhandler` (§12.6): applies the window's handler to
/// `errorcode`; `MPI_SUCCESS` once a handler that returns has run.
#[export]
pub(crate) extern "C" fn MPI_Win_call_errhandler(win: Handle, errorcode: c_int) -> c_int {
    let mode = match self::win(win) {
        Ok(w) => w.errh.get(),
        Err(e) => return boundary_win("MPI_Win_call_errhandler", win, || Err(e)),
    };
    crate::error::raise("MPI_Win_call_errhandler", mode, errorcode);
    crate::error::MPI_SUCCESS
}
