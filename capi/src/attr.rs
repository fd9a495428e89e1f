//! Attribute caching (MPI 5.0 §7.7): keyvals with the user's copy and
//! delete callbacks, the attributes cached on communicators (kept in each
//! one's `CommMeta`, §7.7.2) and on datatypes (in a concurrent map by
//! handle value, predefined types included, §7.7.4), and the predefined
//! attributes of `MPI_COMM_WORLD` (§9.1.2, §11.10.1).
//!
//! One cache ([`Cache`]) and one set of operations on it serve every kind
//! of object; a keyval remembers the kind it was made for
//! ([`Object`]), and using it on another kind is `MPI_ERR_KEYVAL`. The
//! callbacks of both kinds have the same C signature (the object is a
//! handle, a pointer in the standard ABI).
//!
//! Keyvals live in a concurrent [`Table`]; a keyval's C value is its
//! handle value (an `int`). An attribute holds an `Arc` of its keyval, so
//! `MPI_Comm_free_keyval` does not stop the callbacks of attributes still
//! set with it (§7.7.2). No lock is held while a callback runs: a callback
//! may call MPI, on the same object too.
//!
//! The standard ABI's `MPI_COMM_NULL_COPY_FN`, `MPI_COMM_DUP_FN` and
//! `MPI_COMM_NULL_DELETE_FN` are the pointer values 0, 1 and 0 (the
//! deprecated `MPI_NULL_COPY_FN`, `MPI_DUP_FN`, `MPI_NULL_DELETE_FN`
//! alike, and `MPI_TYPE_NULL_COPY_FN`, `MPI_TYPE_DUP_FN`,
//! `MPI_TYPE_NULL_DELETE_FN`), recognised here; no function of those
//! names is exported.

use o2g_mpi_abi_macros::export;
use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};

use crate::comm::{lock, CommMeta};
use crate::error::{boundary, Code, Res, MPI_ERR_ARG, MPI_ERR_KEYVAL, MPI_SUCCESS};
use crate::ffi;
use crate::fortran::{c2f, Fint};
use crate::handles::{self, Handle};
use crate::status::{ANY_SOURCE, PROC_NULL};
use crate::table::Table;

/// `MPI_Comm_copy_attr_function` and `MPI_Type_copy_attr_function`
/// (§7.7.2, §7.7.4).
type CopyFn =
    unsafe extern "C" fn(Handle, c_int, *mut c_void, *mut c_void, *mut c_void, *mut c_int) -> c_int;
/// `MPI_Comm_delete_attr_function` and `MPI_Type_delete_attr_function`.
type DeleteFn = unsafe extern "C" fn(Handle, c_int, *mut c_void, *mut c_void) -> c_int;

/// Fortran's copy subroutine (§19.1): `(OLDOBJ, KEYVAL, EXTRA_STATE,
/// ATTRIBUTE_VAL_IN, ATTRIBUTE_VAL_OUT, FLAG, IERROR)`, all by reference,
/// the values `INTEGER(KIND=MPI_ADDRESS_KIND)`, `FLAG` a `LOGICAL`.
pub(crate) type FCopyFn = unsafe extern "C" fn(
    *mut Fint,
    *mut Fint,
    *mut isize,
    *mut isize,
    *mut isize,
    *mut Fint,
    *mut Fint,
);
/// Fortran's delete subroutine: `(OBJ, KEYVAL, ATTRIBUTE_VAL,
/// EXTRA_STATE, IERROR)`.
pub(crate) type FDeleteFn =
    unsafe extern "C" fn(*mut Fint, *mut Fint, *mut isize, *mut isize, *mut Fint);

/// The kind of object a keyval caches attributes on.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Object {
    /// `MPI_Comm_create_keyval` (§7.7.2).
    Comm,
    /// `MPI_Type_create_keyval` (§7.7.4).
    Type,
    /// `MPI_Win_create_keyval` (§7.7.3).
    Win,
}

/// What duplicating the object (`MPI_Comm_dup`, `MPI_Type_dup`) does
/// with an attribute.
#[derive(Clone, Copy)]
enum CopyKind {
    /// `MPI_COMM_NULL_COPY_FN`: the new object does not get it.
    Null,
    /// `MPI_COMM_DUP_FN`: it gets the same value.
    Dup,
    /// The user's function decides.
    User(CopyFn),
    /// The user's Fortran subroutine decides.
    Fortran(FCopyFn),
}

/// What removing an attribute (freeing the object, deleting or
/// replacing the attribute) calls.
#[derive(Clone, Copy)]
enum DeleteKind {
    /// `MPI_COMM_NULL_DELETE_FN`: nothing.
    Null,
    User(DeleteFn),
    Fortran(FDeleteFn),
}

/// A keyval (`MPI_Comm_create_keyval`, `MPI_Type_create_keyval`).
pub(crate) struct Keyval {
    object: Object,
    copy: CopyKind,
    delete: DeleteKind,
    /// The `extra_state` pointer, passed back to the callbacks.
    extra: usize,
}

/// One attribute of an object.
#[derive(Clone)]
pub(crate) struct Attr {
    key: c_int,
    value: usize,
    kv: Arc<Keyval>,
}

/// The attributes cached on one object, in the order they were first set.
pub(crate) type Cache = Mutex<Vec<Attr>>;

static KEYVALS: Table<Keyval> = Table::new();

/// The caches of the datatypes that have had an attribute set, by handle
/// value (a predefined type's too): datatypes change by replacement in
/// their table (commit), so their attributes live beside it.
static TYPE_ATTRS: RwLock<Option<HashMap<usize, Arc<Cache>>>> = RwLock::new(None);

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

/// The communicators made by `MPI_Comm_create_from_group`, which carry
/// `MPI_TAG_UB` as `MPI_COMM_WORLD` does (§9.1.2). The `Weak` keeps the
/// allocation, so an address is never another communicator's.
static TAG_UB_COMMS: Mutex<Vec<Weak<CommMeta>>> = Mutex::new(Vec::new());

/// Gives the communicator with data `meta` the `MPI_TAG_UB` attribute.
pub(crate) fn give_tag_ub(meta: &Arc<CommMeta>) {
    let mut v = lock(&TAG_UB_COMMS);
    // Forget the communicators freed since.
    v.retain(|w| w.strong_count() > 0);
    v.push(Arc::downgrade(meta));
}

fn has_tag_ub(meta: &Arc<CommMeta>) -> bool {
    lock(&TAG_UB_COMMS)
        .iter()
        .any(|w| std::ptr::eq(w.as_ptr(), Arc::as_ptr(meta)))
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

/// The keyval behind the C value `key`, made for `object`
/// (`MPI_ERR_KEYVAL` for none, or one of another kind).
fn keyval(object: Object, key: c_int) -> Res<Arc<Keyval>> {
    let v = usize::try_from(key).map_err(|_| Code(MPI_ERR_KEYVAL))?;
    KEYVALS
        .get(handles::handle(v))
        .filter(|kv| kv.object == object)
        .ok_or(Code(MPI_ERR_KEYVAL))
}

/// Calls the delete callback of `a` (set on the object `obj`).
fn delete(obj: Handle, a: &Attr) -> Res<()> {
    // SAFETY: `f` is the user's delete function (C's, or Fortran's with
    // every argument by reference to a local), called with the arguments
    // §7.7.2 gives it; it may call MPI (no lock is held).
    let rc = unsafe {
        match a.kv.delete {
            DeleteKind::Null => return Ok(()),
            DeleteKind::User(f) => f(
                obj,
                a.key,
                a.value as *mut c_void,
                a.kv.extra as *mut c_void,
            ),
            DeleteKind::Fortran(f) => {
                let (mut o, mut key) = (c2f(obj), a.key);
                let (mut value, mut extra, mut ierr) = (a.value as isize, a.kv.extra as isize, 0);
                f(&mut o, &mut key, &mut value, &mut extra, &mut ierr);
                ierr
            }
        }
    };
    if rc == MPI_SUCCESS {
        Ok(())
    } else {
        Err(Code(rc))
    }
}

/// Copies the attributes in `from` (cached on the object `old`) to `to`,
/// as duplicating the object does (§7.7.2): by each keyval's copy
/// callback. On a callback's error `to` is left empty and the copies
/// made so far are not deleted (their values are the callbacks' own).
fn copy_cache(old: Handle, from: &Cache, to: &Cache) -> Res<()> {
    let attrs = lock(from).clone();
    let mut out = Vec::new();
    for a in attrs {
        match a.kv.copy {
            CopyKind::Null => {}
            CopyKind::Dup => out.push(a),
            CopyKind::User(f) => {
                let mut value: *mut c_void = std::ptr::null_mut();
                let mut flag: c_int = 0;
                // SAFETY: the user's copy function, with the arguments of
                // §7.7.2; the out-pointers are locals that live across
                // the call.
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
            CopyKind::Fortran(f) => {
                let (mut o, mut key) = (c2f(old), a.key);
                let (mut extra, mut value_in) = (a.kv.extra as isize, a.value as isize);
                let (mut value, mut flag, mut ierr) = (0isize, 0, 0);
                // SAFETY: the user's Fortran subroutine, every argument a
                // reference to a local that lives across the call.
                unsafe {
                    f(
                        &mut o,
                        &mut key,
                        &mut extra,
                        &mut value_in,
                        &mut value,
                        &mut flag,
                        &mut ierr,
                    )
                };
                if ierr != MPI_SUCCESS {
                    return Err(Code(ierr));
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
    *lock(to) = out;
    Ok(())
}

/// Deletes every attribute in `cache` (of the object `obj`), last set
/// first, calling the delete callbacks; the first error is returned,
/// after all.
pub(crate) fn delete_cache(obj: Handle, cache: &Cache) -> Res<()> {
    let attrs = std::mem::take(&mut *lock(cache));
    let mut first = Ok(());
    for a in attrs.iter().rev() {
        let r = delete(obj, a);
        if first.is_ok() {
            first = r;
        }
    }
    first
}

/// Copies the attributes of `from` (the communicator `old`) to `to`, as
/// `MPI_Comm_dup` does (§7.7.2).
pub(crate) fn copy_all(old: Handle, from: &CommMeta, to: &CommMeta) -> Res<()> {
    copy_cache(old, &from.attrs, &to.attrs)
}

/// Deletes every attribute of the communicator `comm`, last set first,
/// calling the delete callbacks (`MPI_Comm_free`, and `MPI_Finalize` for
/// `MPI_COMM_SELF`, §11.2.2); the first error is returned, after all.
pub(crate) fn delete_all(comm: Handle, meta: &CommMeta) -> Res<()> {
    delete_cache(comm, &meta.attrs)
}

/// Sets `key` to `value` in `cache` (of the object `obj`): a value
/// already set is deleted first (its delete callback runs, §7.7.2).
pub(crate) fn set_in(
    object: Object,
    obj: Handle,
    cache: &Cache,
    key: c_int,
    value: *mut c_void,
) -> Res<()> {
    let kv = keyval(object, key)?;
    let old = lock(cache).iter().find(|a| a.key == key).cloned();
    if let Some(old) = old {
        delete(obj, &old)?;
    }
    let new = Attr {
        key,
        value: value as usize,
        kv,
    };
    let mut attrs = lock(cache);
    match attrs.iter_mut().find(|a| a.key == key) {
        Some(slot) => *slot = new,
        None => attrs.push(new),
    }
    Ok(())
}

/// The value of `key` in `cache`, if set.
pub(crate) fn get_in(
    object: Object,
    cache: Option<&Cache>,
    key: c_int,
) -> Res<Option<*mut c_void>> {
    keyval(object, key)?;
    Ok(cache.and_then(|c| {
        lock(c)
            .iter()
            .find(|a| a.key == key)
            .map(|a| a.value as *mut c_void)
    }))
}

/// Deletes `key` from `cache` (of the object `obj`): the delete callback
/// runs first, and an error from it leaves the attribute set (§7.7.2);
/// `MPI_ERR_ARG` if none is set.
pub(crate) fn delete_in(object: Object, obj: Handle, cache: Option<&Cache>, key: c_int) -> Res<()> {
    keyval(object, key)?;
    let cache = cache.ok_or(Code(MPI_ERR_ARG))?;
    let old = lock(cache).iter().find(|a| a.key == key).cloned();
    let old = old.ok_or(Code(MPI_ERR_ARG))?;
    delete(obj, &old)?;
    lock(cache).retain(|a| a.key != key);
    Ok(())
}

/// Writes a found value (or none) to the C out-arguments of a get.
///
/// # Safety
///
/// `value` is valid for a write of one pointer, `flag` of one `int`.
pub(crate) unsafe fn put_found(
    found: Option<*mut c_void>,
    value: *mut c_void,
    flag: *mut c_int,
) -> Res<()> {
    // SAFETY: by this function's contract.
    unsafe {
        if let Some(v) = found {
            ffi::out(value.cast::<*mut c_void>(), v)?;
        }
        ffi::out(flag, c_int::from(found.is_some()))
    }
}

/// Creates a keyval for `object` with these callbacks and writes it to
/// `out`: `MPI_ERR_ARG` for a null `out` before anything is created, so
/// a refused call leaves no keyval behind.
///
/// # Safety
///
/// `out` is null or valid for a write of one `int`.
pub(crate) unsafe fn create_keyval(
    object: Object,
    copy: *const c_void,
    del: *const c_void,
    out: *mut c_int,
    extra: *mut c_void,
) -> Res<()> {
    if out.is_null() {
        return Err(Code(MPI_ERR_ARG));
    }
    let k = new_keyval(object, copy, del, extra)?;
    // SAFETY: non-null (checked above), valid by this function's
    // contract.
    unsafe { ffi::out(out, k) }
}

/// A new keyval for `object` with these callbacks.
fn new_keyval(
    object: Object,
    copy: *const c_void,
    del: *const c_void,
    extra: *mut c_void,
) -> Res<c_int> {
    let copy = match copy.addr() {
        0 => CopyKind::Null,
        1 => CopyKind::Dup,
        // SAFETY: any other value is the address of the user's copy
        // function (the C prototype says so); it is only called as one.
        _ => CopyKind::User(unsafe { std::mem::transmute::<*const c_void, CopyFn>(copy) }),
    };
    let delete = match del.addr() {
        0 => DeleteKind::Null,
        // SAFETY: as above, a delete function.
        _ => DeleteKind::User(unsafe { std::mem::transmute::<*const c_void, DeleteFn>(del) }),
    };
    insert_keyval(Keyval {
        object,
        copy,
        delete,
        extra: extra as usize,
    })
}

/// A new keyval for `object` with Fortran's copy and delete subroutines
/// (`MPI_COMM_CREATE_KEYVAL` from Fortran; the predefined
/// `MPI_COMM_NULL_COPY_FN` and the others are subroutines too, in
/// `fortran/keyval.rs`).
pub(crate) fn new_fortran_keyval(
    object: Object,
    copy: FCopyFn,
    del: FDeleteFn,
    extra: isize,
) -> Res<c_int> {
    handles::running()?;
    insert_keyval(Keyval {
        object,
        copy: CopyKind::Fortran(copy),
        delete: DeleteKind::Fortran(del),
        extra: extra as usize,
    })
}

fn insert_keyval(kv: Keyval) -> Res<c_int> {
    let h = KEYVALS.insert(kv);
    c_int::try_from(handles::value(h)).map_err(|_| {
        KEYVALS.remove(h);
        Code(MPI_ERR_KEYVAL)
    })
}

pub(crate) fn free_keyval(object: Object, key: &mut c_int) -> Res<()> {
    keyval(object, *key)?;
    KEYVALS.remove(handles::handle(*key as usize));
    *key = KEYVAL_INVALID;
    Ok(())
}

fn set_attr(comm: Handle, key: c_int, value: *mut c_void) -> Res<()> {
    let c = handles::comm(comm)?;
    if predefined(key).is_some() {
        return Err(Code(MPI_ERR_KEYVAL));
    }
    set_in(Object::Comm, comm, &c.meta.attrs, key, value)
}

/// # Safety
///
/// `value` is valid for a write of one pointer, `flag` of one `int`.
unsafe fn get_attr(comm: Handle, key: c_int, value: *mut c_void, flag: *mut c_int) -> Res<()> {
    let c = handles::comm(comm)?;
    let found = match predefined(key) {
        Some(p) => (handles::value(comm) == handles::COMM_WORLD
            || (key == TAG_UB && has_tag_ub(&c.meta)))
        .then_some(p),
        None => get_in(Object::Comm, Some(&c.meta.attrs), key)?,
    };
    // SAFETY: by this function's contract.
    unsafe { put_found(found, value, flag) }
}

fn delete_attr(comm: Handle, key: c_int) -> Res<()> {
    let c = handles::comm(comm)?;
    if predefined(key).is_some() {
        return Err(Code(MPI_ERR_KEYVAL));
    }
    delete_in(Object::Comm, comm, Some(&c.meta.attrs), key)
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
        // SAFETY: the caller passes a valid output pointer (or null,
        // refused before the keyval is made).
        unsafe { create_keyval(Object::Comm, copy, delete, keyval, extra_state) }
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
        // SAFETY: the caller passes a valid output pointer (or null,
        // refused before the keyval is made).
        unsafe { create_keyval(Object::Comm, copy, delete, keyval, extra_state) }
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
        free_keyval(Object::Comm, unsafe { ffi::inout(keyval) }?)
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
        free_keyval(Object::Comm, unsafe { ffi::inout(keyval) }?)
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

/// The attribute cache of the datatype with handle value `v`, if it has
/// one.
fn type_cache(v: usize) -> Option<Arc<Cache>> {
    let r = TYPE_ATTRS.read().unwrap_or_else(|e| e.into_inner());
    r.as_ref()?.get(&v).cloned()
}

/// The attribute cache of the datatype with handle value `v`, made if it
/// has none yet.
fn type_cache_made(v: usize) -> Arc<Cache> {
    let mut w = TYPE_ATTRS.write().unwrap_or_else(|e| e.into_inner());
    w.get_or_insert_with(HashMap::new)
        .entry(v)
        .or_default()
        .clone()
}

/// `MPI_Type_dup`'s part (§7.7.4): the attributes of the datatype `old`
/// go to the new datatype `new` by their copy callbacks.
pub(crate) fn type_dup(old: Handle, new: Handle) -> Res<()> {
    let Some(from) = type_cache(handles::value(old)) else {
        return Ok(());
    };
    let to = Cache::default();
    copy_cache(old, &from, &to)?;
    if !lock(&to).is_empty() {
        let mut w = TYPE_ATTRS.write().unwrap_or_else(|e| e.into_inner());
        w.get_or_insert_with(HashMap::new)
            .insert(handles::value(new), Arc::new(to));
    }
    Ok(())
}

/// `MPI_Type_free`'s part (§7.7.4): deletes the attributes of the
/// datatype `dt`, last set first, calling the delete callbacks (while the
/// datatype still exists: a callback may look at it); the first error.
pub(crate) fn type_free(dt: Handle) -> Res<()> {
    let removed = {
        let mut w = TYPE_ATTRS.write().unwrap_or_else(|e| e.into_inner());
        w.as_mut().and_then(|m| m.remove(&handles::value(dt)))
    };
    removed.map_or(Ok(()), |c| delete_cache(dt, &c))
}

/// `MPI_Type_create_keyval` (§7.7.4): `copy` may be
/// `MPI_TYPE_NULL_COPY_FN` or `MPI_TYPE_DUP_FN`, `delete`
/// `MPI_TYPE_NULL_DELETE_FN`.
///
/// # Safety
///
/// `copy` and `delete` are those values or functions of the C prototypes'
/// types; `keyval` is valid for a write of one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Type_create_keyval(
    copy: *const c_void,
    delete: *const c_void,
    keyval: *mut c_int,
    extra_state: *mut c_void,
) -> c_int {
    boundary("MPI_Type_create_keyval", std::ptr::null_mut(), || {
        handles::running()?;
        // SAFETY: the caller passes a valid output pointer (or null,
        // refused before the keyval is made).
        unsafe { create_keyval(Object::Type, copy, delete, keyval, extra_state) }
    })
}

/// `MPI_Type_free_keyval` (§7.7.4): sets `*keyval` to
/// `MPI_KEYVAL_INVALID`; attributes still set with it keep their
/// callbacks.
///
/// # Safety
///
/// `keyval` is valid for reading and writing one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Type_free_keyval(keyval: *mut c_int) -> c_int {
    boundary("MPI_Type_free_keyval", std::ptr::null_mut(), || {
        handles::running()?;
        // SAFETY: the caller passes a valid in-out pointer.
        free_keyval(Object::Type, unsafe { ffi::inout(keyval) }?)
    })
}

/// `MPI_Type_set_attr` (§7.7.4): on any datatype, predefined ones too; a
/// value already set is deleted first (its delete callback runs).
#[export]
pub(crate) extern "C" fn MPI_Type_set_attr(
    datatype: Handle,
    keyval: c_int,
    attribute_val: *mut c_void,
) -> c_int {
    boundary("MPI_Type_set_attr", std::ptr::null_mut(), || {
        handles::running()?;
        crate::datatype::resolve(datatype)?;
        // An unknown keyval makes no cache.
        self::keyval(Object::Type, keyval)?;
        let cache = type_cache_made(handles::value(datatype));
        set_in(Object::Type, datatype, &cache, keyval, attribute_val)
    })
}

/// `MPI_Type_get_attr` (§7.7.4): `attribute_val` is a `void **`.
///
/// # Safety
///
/// `attribute_val` is valid for a write of one pointer, `flag` of one
/// `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Type_get_attr(
    datatype: Handle,
    keyval: c_int,
    attribute_val: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    boundary("MPI_Type_get_attr", std::ptr::null_mut(), || {
        handles::running()?;
        crate::datatype::resolve(datatype)?;
        let cache = type_cache(handles::value(datatype));
        let found = get_in(Object::Type, cache.as_deref(), keyval)?;
        // SAFETY: the caller's pointers, as this function requires.
        unsafe { put_found(found, attribute_val, flag) }
    })
}

/// `MPI_Type_delete_attr` (§7.7.4): runs the delete callback, then
/// removes the attribute; `MPI_ERR_ARG` if none is set.
#[export]
pub(crate) extern "C" fn MPI_Type_delete_attr(datatype: Handle, keyval: c_int) -> c_int {
    boundary("MPI_Type_delete_attr", std::ptr::null_mut(), || {
        handles::running()?;
        crate::datatype::resolve(datatype)?;
        let cache = type_cache(handles::value(datatype));
        delete_in(Object::Type, datatype, cache.as_deref(), keyval)
    })
}

/// The world's size once MPI is initialised (for `MPI_INFO_ENV`).
pub(crate) fn universe_size() -> Option<c_int> {
    crate::thread::is_initialized().then(|| UNIVERSE_SIZE_VALUE.load(Ordering::Relaxed))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Threads setting, reading, copying and deleting datatype attributes
    /// at once (on one shared type and on types of their own) never lose
    /// or mix up a value.
    #[test]
    fn type_attributes_are_safe_from_many_threads() {
        let null = std::ptr::null::<c_void>();
        let dup = std::ptr::without_provenance::<c_void>(1);
        let keys: Vec<c_int> = (0..4)
            .map(|_| new_keyval(Object::Type, dup, null, std::ptr::null_mut()).unwrap())
            .collect();
        // A handle value no datatype has: the cache does not look.
        let shared = crate::table::fresh_handle();
        std::thread::scope(|s| {
            for (t, &key) in keys.iter().enumerate() {
                s.spawn(move || {
                    let own = crate::table::fresh_handle();
                    for i in 0..200usize {
                        let v = std::ptr::without_provenance_mut::<c_void>(t * 1000 + i);
                        for obj in [own, shared] {
                            let h = handles::handle(obj);
                            set_in(Object::Type, h, &type_cache_made(obj), key, v).unwrap();
                            let got = get_in(Object::Type, type_cache(obj).as_deref(), key);
                            assert_eq!(got.unwrap(), Some(v));
                        }
                        let copy = crate::table::fresh_handle();
                        type_dup(handles::handle(own), handles::handle(copy)).unwrap();
                        let got = get_in(Object::Type, type_cache(copy).as_deref(), key);
                        assert_eq!(got.unwrap(), Some(v));
                        type_free(handles::handle(copy)).unwrap();
                        assert!(type_cache(copy).is_none());
                    }
                    let c = type_cache(own);
                    delete_in(Object::Type, handles::handle(own), c.as_deref(), key).unwrap();
                    let got = get_in(Object::Type, type_cache(own).as_deref(), key);
                    assert_eq!(got.unwrap(), None);
                    type_free(handles::handle(own)).unwrap();
                });
            }
        });
        let c = type_cache(shared).unwrap();
        assert_eq!(lock(&c).len(), keys.len());
        for (t, &key) in keys.iter().enumerate() {
            let got = get_in(Object::Type, Some(&c), key).unwrap();
            assert_eq!(got.map(|p| p.addr()), Some(t * 1000 + 199));
        }
        type_free(handles::handle(shared)).unwrap();
        // A communicator's keyval is not a datatype's, nor the reverse.
        let ck = new_keyval(Object::Comm, null, null, std::ptr::null_mut()).unwrap();
        assert!(get_in(Object::Type, Some(&c), ck).is_err());
        assert!(get_in(Object::Comm, Some(&c), keys[0]).is_err());
        for mut k in keys.into_iter().chain([ck]) {
            let object = if k == ck { Object::Comm } else { Object::Type };
            free_keyval(object, &mut k).unwrap();
            assert_eq!(k, KEYVAL_INVALID);
        }
    }
}
