//! Info objects (MPI 5.0 §10): ordered (key, value) string pairs, in a
//! concurrent [`Table`], each behind its own lock since they change in
//! place. `MPI_INFO_ENV` (§11.2.3) is built on each use from what the
//! process knows of its start; it cannot be changed.

use o2g_mpi_abi_macros::export;
use std::ffi::{c_char, c_int};
use std::sync::Mutex;

use crate::comm::lock;
use crate::error::{
    boundary, boundary_any_thread, Code, Res, MPI_ERR_ARG, MPI_ERR_INFO, MPI_ERR_INFO_KEY,
    MPI_ERR_INFO_NOKEY, MPI_ERR_INFO_VALUE,
};
use crate::ffi;
use crate::handles::{self, Handle};
use crate::table::Table;

/// `MPI_INFO_NULL`.
pub(crate) const INFO_NULL: usize = 0x130;
/// `MPI_INFO_ENV`.
const INFO_ENV: usize = 0x131;
/// `MPI_MAX_INFO_KEY`, `MPI_MAX_INFO_VAL` (with the NUL).
const MAX_KEY: usize = 256;
const MAX_VAL: usize = 1024;

/// The pairs of one info object, in the order they were first set.
pub(crate) type Pairs = Vec<(String, String)>;

struct Info {
    pairs: Mutex<Pairs>,
}

static INFOS: Table<Info> = Table::new();

/// The contents of `MPI_INFO_ENV` (§11.2.3): the command, its
/// arguments, the process count, the host, the working directory and the
/// thread level, as far as this process knows them.
fn env_pairs() -> Pairs {
    let mut args = std::env::args();
    let mut p = Vec::new();
    if let Some(cmd) = args.next() {
        p.push(("command".into(), cmd));
    }
    let rest: Vec<String> = args.collect();
    if !rest.is_empty() {
        p.push(("argv".into(), rest.join(" ")));
    }
    if let Some(n) = crate::attr::universe_size() {
        p.push(("maxprocs".into(), n.to_string()));
    }
    p.push(("host".into(), ffi::hostname()));
    if let Ok(d) = std::env::current_dir() {
        p.push(("wdir".into(), d.display().to_string()));
    }
    p.push(("thread_level".into(), "MPI_THREAD_SINGLE".into()));
    p
}

/// Sets the hints of the info object `info` in `hints` (`MPI_Comm_set_info`,
/// `MPI_Win_set_info`): each replaces the hint of the same key, or joins.
pub(crate) fn merge(hints: &mut Pairs, info: Handle) -> Res<()> {
    for (k, v) in pairs(info, false)? {
        match hints.iter_mut().find(|(hk, _)| *hk == k) {
            Some(slot) => slot.1 = v,
            None => hints.push((k, v)),
        }
    }
    Ok(())
}

/// The pairs of the info object `h` (a copy); `MPI_INFO_NULL` is empty
/// when `null_ok`, `MPI_ERR_INFO` otherwise and for unknown handles.
pub(crate) fn pairs(h: Handle, null_ok: bool) -> Res<Pairs> {
    match handles::value(h) {
        INFO_NULL if null_ok => Ok(Vec::new()),
        INFO_ENV => Ok(env_pairs()),
        _ => Ok(lock(&INFOS.get(h).ok_or(Code(MPI_ERR_INFO))?.pairs).clone()),
    }
}

/// A new info object holding `pairs`; returns its handle.
pub(crate) fn new_info(pairs: Pairs) -> Handle {
    INFOS.insert(Info {
        pairs: Mutex::new(pairs),
    })
}

/// Runs `f` on the pairs of a changeable info object.
fn change<R>(h: Handle, f: impl FnOnce(&mut Pairs) -> Res<R>) -> Res<R> {
    let i = INFOS.get(h).ok_or(Code(MPI_ERR_INFO))?;
    let mut p = lock(&i.pairs);
    f(&mut p)
}

/// A key argument: 1 to `MPI_MAX_INFO_KEY - 1` bytes.
///
/// # Safety
///
/// `key` is a C string.
unsafe fn key_arg(key: *const c_char) -> Res<String> {
    // SAFETY: by this function's contract.
    let k = unsafe { ffi::c_str(key) }.map_err(|_| Code(MPI_ERR_INFO_KEY))?;
    if k.is_empty() || k.len() >= MAX_KEY {
        return Err(Code(MPI_ERR_INFO_KEY));
    }
    Ok(k)
}

fn find<'a>(p: &'a Pairs, key: &str) -> Option<&'a str> {
    p.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

/// `MPI_Info_create` (§10): a new, empty info object.
///
/// # Safety
///
/// `info` is valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Info_create(info: *mut Handle) -> c_int {
    boundary("MPI_Info_create", std::ptr::null_mut(), || {
        let h = new_info(Vec::new());
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(info, h) }
    })
}

/// `MPI_Info_create_env` (§11.2.3): a new info object with the contents
/// of `MPI_INFO_ENV` (the arguments are not used: the process's own
/// command line is known). May be called before `MPI_Init`.
///
/// # Safety
///
/// `info` is valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Info_create_env(
    _argc: c_int,
    _argv: *mut *mut c_char,
    info: *mut Handle,
) -> c_int {
    boundary_any_thread("MPI_Info_create_env", || {
        let h = new_info(env_pairs());
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(info, h) }
    })
}

/// `MPI_Info_set` (§10): sets or replaces `key`.
///
/// # Safety
///
/// `key` and `value` are C strings.
#[export]
pub(crate) unsafe extern "C" fn MPI_Info_set(
    info: Handle,
    key: *const c_char,
    value: *const c_char,
) -> c_int {
    boundary("MPI_Info_set", std::ptr::null_mut(), || {
        // SAFETY: the caller passes C strings.
        let k = unsafe { key_arg(key) }?;
        // SAFETY: as above.
        let v = unsafe { ffi::c_str(value) }.map_err(|_| Code(MPI_ERR_INFO_VALUE))?;
        if v.len() >= MAX_VAL {
            return Err(Code(MPI_ERR_INFO_VALUE));
        }
        change(info, |p| {
            match p.iter_mut().find(|(pk, _)| *pk == k) {
                Some(slot) => slot.1 = v,
                None => p.push((k, v)),
            }
            Ok(())
        })
    })
}

/// `MPI_Info_delete` (§10): `MPI_ERR_INFO_NOKEY` if `key` is not set.
///
/// # Safety
///
/// `key` is a C string.
#[export]
pub(crate) unsafe extern "C" fn MPI_Info_delete(info: Handle, key: *const c_char) -> c_int {
    boundary("MPI_Info_delete", std::ptr::null_mut(), || {
        // SAFETY: the caller passes a C string.
        let k = unsafe { key_arg(key) }?;
        change(info, |p| {
            let n = p.len();
            p.retain(|(pk, _)| *pk != k);
            if p.len() == n {
                return Err(Code(MPI_ERR_INFO_NOKEY));
            }
            Ok(())
        })
    })
}

/// `MPI_Info_get_string` (§10): the value of `key` into `value`, cut to
/// `*buflen - 1` bytes and NUL-terminated; `*buflen` becomes the value's
/// length plus one. `flag` is false if the key is not set.
///
/// # Safety
///
/// `key` is a C string; `buflen` and `flag` are valid for one `int`;
/// `value` for `*buflen` bytes of writes.
#[export]
pub(crate) unsafe extern "C" fn MPI_Info_get_string(
    info: Handle,
    key: *const c_char,
    buflen: *mut c_int,
    value: *mut c_char,
    flag: *mut c_int,
) -> c_int {
    boundary("MPI_Info_get_string", std::ptr::null_mut(), || {
        // SAFETY: the caller passes a C string.
        let k = unsafe { key_arg(key) }?;
        let p = pairs(info, false)?;
        // SAFETY: the caller passes a valid in-out `int`.
        let len = unsafe { ffi::inout(buflen) }?;
        let cap = usize::try_from(*len).map_err(|_| Code(MPI_ERR_ARG))?;
        let Some(v) = find(&p, &k) else {
            // SAFETY: the caller passes a valid output pointer.
            return unsafe { ffi::out(flag, 0) };
        };
        if cap > 0 {
            let mut n = 0;
            // SAFETY: `value` has `cap` writable bytes.
            unsafe { ffi::write_str(value, cap, v, &raw mut n) }?;
        }
        *len = c_int::try_from(v.len() + 1).map_err(|_| Code(MPI_ERR_ARG))?;
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(flag, 1) }
    })
}

/// `MPI_Info_get` (§10, deprecated since MPI 4.0): the value of `key`,
/// cut to `valuelen` bytes, into `value` (`valuelen + 1` bytes).
///
/// # Safety
///
/// `key` is a C string; `value` is valid for `valuelen + 1` bytes of
/// writes; `flag` for one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Info_get(
    info: Handle,
    key: *const c_char,
    valuelen: c_int,
    value: *mut c_char,
    flag: *mut c_int,
) -> c_int {
    boundary("MPI_Info_get", std::ptr::null_mut(), || {
        // SAFETY: the caller passes a C string.
        let k = unsafe { key_arg(key) }?;
        let cap = usize::try_from(valuelen).map_err(|_| Code(MPI_ERR_ARG))?;
        let p = pairs(info, false)?;
        let found = find(&p, &k);
        if let Some(v) = found {
            let mut n = 0;
            // SAFETY: `value` has `valuelen + 1` writable bytes.
            unsafe { ffi::write_str(value, cap + 1, v, &raw mut n) }?;
        }
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(flag, c_int::from(found.is_some())) }
    })
}

/// `MPI_Info_get_valuelen` (§10, deprecated since MPI 4.0): the length
/// of `key`'s value, without the NUL.
///
/// # Safety
///
/// `key` is a C string; `valuelen` and `flag` are valid for one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Info_get_valuelen(
    info: Handle,
    key: *const c_char,
    valuelen: *mut c_int,
    flag: *mut c_int,
) -> c_int {
    boundary("MPI_Info_get_valuelen", std::ptr::null_mut(), || {
        // SAFETY: the caller passes a C string.
        let k = unsafe { key_arg(key) }?;
        let p = pairs(info, false)?;
        let found = find(&p, &k);
        // SAFETY: the caller passes valid output pointers.
        unsafe {
            if let Some(v) = found {
                ffi::out(valuelen, v.len() as c_int)?;
            }
            ffi::out(flag, c_int::from(found.is_some()))
        }
    })
}

/// `MPI_Info_get_nkeys` (§10).
///
/// # Safety
///
/// `nkeys` is valid for a write of one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Info_get_nkeys(info: Handle, nkeys: *mut c_int) -> c_int {
    boundary("MPI_Info_get_nkeys", std::ptr::null_mut(), || {
        let n = pairs(info, false)?.len();
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(nkeys, n as c_int) }
    })
}

/// `MPI_Info_get_nthkey` (§10): key number `n` (from 0, in the order the
/// keys were first set) into `key` (`MPI_MAX_INFO_KEY` bytes).
///
/// # Safety
///
/// `key` is valid for `MPI_MAX_INFO_KEY` bytes of writes.
#[export]
pub(crate) unsafe extern "C" fn MPI_Info_get_nthkey(
    info: Handle,
    n: c_int,
    key: *mut c_char,
) -> c_int {
    boundary("MPI_Info_get_nthkey", std::ptr::null_mut(), || {
        let p = pairs(info, false)?;
        let (k, _) = usize::try_from(n)
            .ok()
            .and_then(|i| p.get(i))
            .ok_or(Code(MPI_ERR_ARG))?;
        let mut len = 0;
        // SAFETY: the caller passes MPI_MAX_INFO_KEY bytes.
        unsafe { ffi::write_str(key, MAX_KEY, k, &raw mut len) }
    })
}

/// `MPI_Info_dup` (§10): a new info object with the same pairs in the
/// same order.
///
/// # Safety
///
/// `newinfo` is valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Info_dup(info: Handle, newinfo: *mut Handle) -> c_int {
    boundary("MPI_Info_dup", std::ptr::null_mut(), || {
        let h = new_info(pairs(info, false)?);
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(newinfo, h) }
    })
}

/// `MPI_Info_free` (§10): sets the handle to `MPI_INFO_NULL`.
///
/// # Safety
///
/// `info` is valid for reading and writing one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Info_free(info: *mut Handle) -> c_int {
    boundary("MPI_Info_free", std::ptr::null_mut(), || {
        // SAFETY: the caller passes a valid in-out pointer.
        let h = unsafe { ffi::inout(info) }?;
        INFOS.remove(*h).ok_or(Code(MPI_ERR_INFO))?;
        *h = handles::handle(INFO_NULL);
        Ok(())
    })
}
