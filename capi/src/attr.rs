//! Attribute caching on communicators (MPI 5.0 §7.7): keyvals with the
//! user's copy and delete callbacks, the attributes of each communicator
//! (kept in its `CommMeta`), and the predefined attributes of
//! `MPI_COMM_WORLD` (§9.1.2, §11.10.1).
//!
//! Keyvals live in a concurrent [`Table`]; a keyval's C value is its
//! handle value (an `int`). An attribute holds an `Arc` of its keyval, so
//! `MPI_Comm_free_keyval` does not stop the callbacks of attributes still
//! set with it (§7.7.2). No lock is held while a callback runs: a callback
//! may call MPI, on the same communicator too.
//!
//! The standard ABI's `MPI_COMM_NULL_COPY_FN`, `MPI_COMM_DUP_FN` and
//! `MPI_COMM_NULL_DELETE_FN` are the pointer values 0, 1 and 0 (the
//! deprecated `MPI_NULL_COPY_FN`, `MPI_DUP_FN`, `MPI_NULL_DELETE_FN`
//! alike), recognised here; no function of those names is exported.

use o2g_mpi_abi_macros::export;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

use crate::comm::{lock, CommMeta};
use crate::error::{boundary, Code, Res, MPI_ERR_ARG, MPI_ERR_KEYVAL, MPI_SUCCESS};
use crate::ffi;
use crate::handles::{self, Handle};
use crate::status::{ANY_SOURCE, PROC_NULL};
use crate::table::Table;

/// `MPI_Comm_copy_attr_function` (§7.7.2).
type CopyFn =
    unsafe extern "C" fn(Handle, c_int, *mut c_void, *mut c_void, *mut c_void, *mut c_int) -> c_int;
/// `MPI_Comm_delete_attr_function` (§7.7.2).
type DeleteFn = unsafe extern "C" fn(Handle, c_int, *mut c_void, *mut c_void) -> c_int;

/// What `MPI_Comm_dup` does with an attribute.
#[derive(Clone, Copy)]
enum CopyKind {
    /// `MPI_COMM_NULL_COPY_FN`: the new communicator does not get it.
    Null,
    /// `MPI_COMM_DUP_FN`: it gets the same value.
    Dup,
    /// The user's function decides.
    User(CopyFn),
}

/// A keyval (`MPI_Comm_create_keyval`).
pub(crate) struct Keyval {
    copy: CopyKind,
    delete: Option<DeleteFn>,
    /// The `extra_state` pointer, passed back to the callbacks.
    extra: usize,
}

/// One attribute of a communicator.
#[derive(Clone)]
pub(crate) struct Attr {
    key: c_int,
    value: usize,
    kv: Arc<Keyval>,
}

static KEYVALS: Table<Keyval> = Table::new();

/// `MPI_KEYVAL_INVALID`.
const KEYVAL_INVALID: c_int = 0;
/// `MPI_TAG_UB` … `MPI_UNIVERSE_SIZE`: the predefined keys.
const TAG_UB: c_int = 501;
const IO: c_int = 502;
const HOST: c_int = 503;
const WTIME_IS_GLOBAL: c_int = 504;
const APPNUM: c_int = 505;
const LASTUSEDCODE: c_int = 506;
const UNIVERSE_SIZE: c_int = 507;

static TAG_UB_VALUE: c_int = mpi::TAG_UB;
/// No process is the host (`MPI_PROC_NULL`, §9.1.2).
static HOST_VALUE: c_int = PROC_NULL;
/// Every process can do I/O (`MPI_ANY_SOURCE`, §9.1.2).
static IO_VALUE: c_int = ANY_SOURCE;
/// `MPI_Wtime` is not synchronised between processes.
static WTIME_IS_GLOBAL_VALUE: c_int = 0;
/// Every job is one application, number 0.
static APPNUM_VALUE: c_int = 0;
/// The size of the world (set at `MPI_Init`): no process can be added.
static UNIVERSE_SIZE_VALUE: AtomicI32 = AtomicI32::new(1);

/// Records the world's size for `MPI_UNIVERSE_SIZE` (at `MPI_Init`).
pub(crate) fn set_universe_size(n: c_int) {
    UNIVERSE_SIZE_VALUE.store(n, Ordering::Relaxed);
}

/// The address a predefined key's value is at, for `MPI_COMM_WORLD`.
fn predefined(key: c_int) -> Option<*mut c_void> {
    let p: *const c_int = match key {
        TAG_UB => &TAG_UB_VALUE,
        IO => &IO_VALUE,
        HOST => &HOST_VALUE,
        WTIME_IS_GLOBAL => &WTIME_IS_GLOBAL_VALUE,
        APPNUM => &APPNUM_VALUE,
        LASTUSEDCODE => crate::errhandler::last_used_code(),
        UNIVERSE_SIZE => UNIVERSE_SIZE_VALUE.as_ptr(),
        _ => return None,
    };
    Some(p.cast_mut().cast())
}

/// The keyval behind the C value `key` (`MPI_ERR_KEYVAL` for none).
fn keyval(key: c_int) -> Res<Arc<Keyval>> {
    let v = usize::try_from(key).map_err(|_| Code(MPI_ERR_KEYVAL))?;
    KEYVALS.get(handles::handle(v)).ok_or(Code(MPI_ERR_KEYVAL))
}

/// Calls the delete callback of `a` (set on the communicator `comm`).
fn delete(comm: Handle, a: &Attr) -> Res<()> {
    let Some(f) = a.kv.delete else {
        return Ok(());
    };
    // SAFETY: `f` is the user's `MPI_Comm_delete_attr_function`, called
    // with the arguments §7.7.2 gives it; it may call MPI (no lock is
    // held).
    let rc = unsafe {
        f(
            comm,
            a.key,
            a.value as *mut c_void,
            a.kv.extra as *mut c_void,
        )
    };
    if rc == MPI_SUCCESS {
        Ok(())
    } else {
        Err(Code(rc))
    }
}

/// Copies the attributes of `from` (the communicator `old`) to `to`, as
/// `MPI_Comm_dup` does (§7.7.2): by each keyval's copy callback.
pub(crate) fn copy_all(old: Handle, from: &CommMeta, to: &CommMeta) -> Res<()> {
    let attrs = lock(&from.attrs).clone();
    let mut out = Vec::new();
    for a in attrs {
        match a.kv.copy {
            CopyKind::Null => {}
            CopyKind::Dup => out.push(a),
            CopyKind::User(f) => {
                let mut value: *mut c_void = std::ptr::null_mut();
                let mut flag: c_int = 0;
                // SAFETY: the user's `MPI_Comm_copy_attr_function`, with
                // the arguments of §7.7.2; the out-pointers are locals
                // that live across the call.
                let rc = unsafe {
                    f(
                        old,
                        a.key,
                        a.kv.extra as *mut c_void,
                        a.value as *mut c_void,
                        (&raw mut value).cast(),
                        &raw mut flag,
                    )
                };
                if rc != MPI_SUCCESS {
                    return Err(Code(rc));
                }
                if flag != 0 {
                    out.push(Attr {
                        value: value as usize,
                        ..a
                    });
                }
            }
        }
    }
    *lock(&to.attrs) = out;
    Ok(())
}

/// Deletes every attribute of the communicator `comm`, last set first,
/// calling the delete callbacks (`MPI_Comm_free`, and `MPI_Finalize` for
/// `MPI_COMM_SELF`, §11.2.2); the first error is returned, after all.
pub(crate) fn delete_all(comm: Handle, meta: &CommMeta) -> Res<()> {
    let attrs = std::mem::take(&mut *lock(&meta.attrs));
    let mut first = Ok(());
    for a in attrs.iter().rev() {
        let r = delete(comm, a);
        if first.is_ok() {
            first = r;
        }
    }
    first
}

fn create_keyval(copy: *const c_void, del: *const c_void, extra: *mut c_void) -> Res<c_int> {
    let copy = match copy.addr() {
        0 => CopyKind::Null,
        1 => CopyKind::Dup,
        // SAFETY: any other value is the address of the user's
        // `MPI_Comm_copy_attr_function` (the C prototype says so); it is
        // only called as one.
        _ => CopyKind::User(unsafe { std::mem::transmute::<*const c_void, CopyFn>(copy) }),
    };
    let delete = match del.addr() {
        0 => None,
        // SAFETY: as above, an `MPI_Comm_delete_attr_function`.
        _ => Some(unsafe { std::mem::transmute::<*const c_void, DeleteFn>(del) }),
    };
    let kv = Keyval {
        copy,
        delete,
        extra: extra as usize,
    };
    let h = KEYVALS.insert(kv);
    c_int::try_from(handles::value(h)).map_err(|_| {
        KEYVALS.remove(h);
        Code(MPI_ERR_KEYVAL)
    })
}

fn free_keyval(key: &mut c_int) -> Res<()> {
    keyval(*key)?;
    KEYVALS.remove(handles::handle(*key as usize));
    *key = KEYVAL_INVALID;
    Ok(())
}

fn set_attr(comm: Handle, key: c_int, value: *mut c_void) -> Res<()> {
    let c = handles::comm(comm)?;
    if predefined(key).is_some() {
        return Err(Code(MPI_ERR_KEYVAL));
    }
    let kv = keyval(key)?;
    let old = lock(&c.meta.attrs).iter().find(|a| a.key == key).cloned();
    if let Some(old) = old {
        delete(comm, &old)?;
    }
    let new = Attr {
        key,
        value: value as usize,
        kv,
    };
    let mut attrs = lock(&c.meta.attrs);
    match attrs.iter_mut().find(|a| a.key == key) {
        Some(slot) => *slot = new,
        None => attrs.push(new),
    }
    Ok(())
}

/// # Safety
///
/// `value` is valid for a write of one pointer, `flag` of one `int`.
unsafe fn get_attr(comm: Handle, key: c_int, value: *mut c_void, flag: *mut c_int) -> Res<()> {
    let c = handles::comm(comm)?;
    let found = match predefined(key) {
        Some(p) => (handles::value(comm) == handles::COMM_WORLD).then_some(p),
        None => {
            keyval(key)?;
            let attrs = lock(&c.meta.attrs);
            attrs
                .iter()
                .find(|a| a.key == key)
                .map(|a| a.value as *mut c_void)
        }
    };
    // SAFETY: by this function's contract.
    unsafe {
        if let Some(v) = found {
            ffi::out(value.cast::<*mut c_void>(), v)?;
        }
        ffi::out(flag, c_int::from(found.is_some()))
    }
}

fn delete_attr(comm: Handle, key: c_int) -> Res<()> {
    let c = handles::comm(comm)?;
    if predefined(key).is_some() {
        return Err(Code(MPI_ERR_KEYVAL));
    }
    keyval(key)?;
    let old = lock(&c.meta.attrs).iter().find(|a| a.key == key).cloned();
    let old = old.ok_or(Code(MPI_ERR_ARG))?;
    delete(comm, &old)?;
    lock(&c.meta.attrs).retain(|a| a.key != key);
    Ok(())
}

/// `MPI_Comm_create_keyval` (§7.7.2): `copy` may be
/// `MPI_COMM_NULL_COPY_FN` or `MPI_COMM_DUP_FN`, `delete`
/// `MPI_COMM_NULL_DELETE_FN`.
///
/// # Safety
///
/// `copy` and `delete` are those values or functions of the C prototypes'
/// types; `keyval` is valid for a write of one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Comm_create_keyval(
    copy: *const c_void,
    delete: *const c_void,
    keyval: *mut c_int,
    extra_state: *mut c_void,
) -> c_int {
    boundary("MPI_Comm_create_keyval", std::ptr::null_mut(), || {
        handles::running()?;
        let k = create_keyval(copy, delete, extra_state)?;
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(keyval, k) }
    })
}

/// `MPI_Keyval_create` (§7.7.2, deprecated since MPI 2.0): as
/// `MPI_Comm_create_keyval`.
///
/// # Safety
///
/// As for `MPI_Comm_create_keyval`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Keyval_create(
    copy: *const c_void,
    delete: *const c_void,
    keyval: *mut c_int,
    extra_state: *mut c_void,
) -> c_int {
    boundary("MPI_Keyval_create", std::ptr::null_mut(), || {
        handles::running()?;
        let k = create_keyval(copy, delete, extra_state)?;
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(keyval, k) }
    })
}

/// `MPI_Comm_free_keyval` (§7.7.2): sets `*keyval` to
/// `MPI_KEYVAL_INVALID`; attributes still set with it keep their
/// callbacks.
///
/// # Safety
///
/// `keyval` is valid for reading and writing one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Comm_free_keyval(keyval: *mut c_int) -> c_int {
    boundary("MPI_Comm_free_keyval", std::ptr::null_mut(), || {
        handles::running()?;
        // SAFETY: the caller passes a valid in-out pointer.
        free_keyval(unsafe { ffi::inout(keyval) }?)
    })
}

/// `MPI_Keyval_free` (§7.7.2, deprecated since MPI 2.0).
///
/// # Safety
///
/// As for `MPI_Comm_free_keyval`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Keyval_free(keyval: *mut c_int) -> c_int {
    boundary("MPI_Keyval_free", std::ptr::null_mut(), || {
        handles::running()?;
        // SAFETY: the caller passes a valid in-out pointer.
        free_keyval(unsafe { ffi::inout(keyval) }?)
    })
}

/// `MPI_Comm_set_attr` (§7.7.2): a value already set is deleted first
/// (its delete callback runs).
#[export]
pub(crate) extern "C" fn MPI_Comm_set_attr(
    comm: Handle,
    keyval: c_int,
    attribute_val: *mut c_void,
) -> c_int {
    boundary("MPI_Comm_set_attr", comm, || {
        set_attr(comm, keyval, attribute_val)
    })
}

/// `MPI_Attr_put` (§7.7.2, deprecated since MPI 2.0).
#[export]
pub(crate) extern "C" fn MPI_Attr_put(
    comm: Handle,
    keyval: c_int,
    attribute_val: *mut c_void,
) -> c_int {
    boundary("MPI_Attr_put", comm, || {
        set_attr(comm, keyval, attribute_val)
    })
}

/// `MPI_Comm_get_attr` (§7.7.2): `attribute_val` is a `void **`; the
/// predefined keys of `MPI_COMM_WORLD` give pointers to `int`s.
///
/// # Safety
///
/// `attribute_val` is valid for a write of one pointer, `flag` of one
/// `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Comm_get_attr(
    comm: Handle,
    keyval: c_int,
    attribute_val: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    boundary("MPI_Comm_get_attr", comm, || {
        // SAFETY: the caller's pointers, as this function requires.
        unsafe { get_attr(comm, keyval, attribute_val, flag) }
    })
}

/// `MPI_Attr_get` (§7.7.2, deprecated since MPI 2.0).
///
/// # Safety
///
/// As for `MPI_Comm_get_attr`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Attr_get(
    comm: Handle,
    keyval: c_int,
    attribute_val: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    boundary("MPI_Attr_get", comm, || {
        // SAFETY: the caller's pointers, as this function requires.
        unsafe { get_attr(comm, keyval, attribute_val, flag) }
    })
}

/// `MPI_Comm_delete_attr` (§7.7.2): runs the delete callback, then
/// removes the attribute; `MPI_ERR_ARG` if none is set.
#[export]
pub(crate) extern "C" fn MPI_Comm_delete_attr(comm: Handle, keyval: c_int) -> c_int {
    boundary("MPI_Comm_delete_attr", comm, || delete_attr(comm, keyval))
}

/// `MPI_Attr_delete` (§7.7.2, deprecated since MPI 2.0).
#[export]
pub(crate) extern "C" fn MPI_Attr_delete(comm: Handle, keyval: c_int) -> c_int {
    boundary("MPI_Attr_delete", comm, || delete_attr(comm, keyval))
}

/// The world's size once MPI is initialised (for `MPI_INFO_ENV`).
pub(crate) fn universe_size() -> Option<c_int> {
    crate::thread::is_initialized().then(|| UNIVERSE_SIZE_VALUE.load(Ordering::Relaxed))
}
