//! Attributes on windows (§7.7.3): keyvals, the user's attributes, and
//! the predefined ones of §12.2.6 (`MPI_WIN_BASE`, `MPI_WIN_SIZE`,
//! `MPI_WIN_DISP_UNIT`, `MPI_WIN_CREATE_FLAVOR`, `MPI_WIN_MODEL`), which
//! `MPI_Win_get_attr` answers from the window itself.

use o2g_mpi_abi_macros::export;
use std::ffi::{c_int, c_void};

use super::win;
use crate::attr::{self, Object};
use crate::error::{boundary, boundary_win, Code, Res, MPI_ERR_KEYVAL};
use crate::ffi;
use crate::handles::{self, Handle};

/// The predefined keys.
const WIN_BASE: c_int = 601;
const WIN_DISP_UNIT: c_int = 602;
const WIN_SIZE: c_int = 603;
const WIN_CREATE_FLAVOR: c_int = 604;
const WIN_MODEL: c_int = 605;

fn is_predefined(key: c_int) -> bool {
    (WIN_BASE..=WIN_MODEL).contains(&key)
}

/// `MPI_Win_create_keyval` (§7.7.3): `copy` may be
/// `MPI_WIN_NULL_COPY_FN` or `MPI_WIN_DUP_FN` (windows are never
/// duplicated, so it is never called), `delete`
/// `MPI_WIN_NULL_DELETE_FN`.
///
/// # Safety
///
/// `copy` and `delete` are those values or functions of the C
/// prototypes' types; `keyval` is valid for a write of one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Win_create_keyval(
    copy: *const c_void,
    delete: *const c_void,
    keyval: *mut c_int,
    extra_state: *mut c_void,
) -> c_int {
    boundary("MPI_Win_create_keyval", std::ptr::null_mut(), || {
        handles::running()?;
        // SAFETY: the caller passes a valid output pointer (or null,
        // refused before the keyval is made).
        unsafe { attr::create_keyval(Object::Win, copy, delete, keyval, extra_state) }
    })
}

/// `MPI_Win_free_keyval` (§7.7.3): sets `*keyval` to
/// `MPI_KEYVAL_INVALID`; attributes still set with it keep their
/// callbacks.
///
/// # Safety
///
/// `keyval` is valid for reading and writing one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Win_free_keyval(keyval: *mut c_int) -> c_int {
    boundary("MPI_Win_free_keyval", std::ptr::null_mut(), || {
        handles::running()?;
        // SAFETY: the caller passes a valid in-out pointer.
        attr::free_keyval(Object::Win, unsafe { ffi::inout(keyval) }?)
    })
}

/// `MPI_Win_set_attr` (§7.7.3): a value already set is deleted first (its
/// delete callback runs); the predefined keys cannot be set.
#[export]
pub(crate) extern "C" fn MPI_Win_set_attr(
    win: Handle,
    keyval: c_int,
    attribute_val: *mut c_void,
) -> c_int {
    boundary_win("MPI_Win_set_attr", win, || {
        let w = self::win(win)?;
        if is_predefined(keyval) {
            return Err(Code(MPI_ERR_KEYVAL));
        }
        attr::set_in(Object::Win, win, &w.meta.attrs, keyval, attribute_val)
    })
}

/// `MPI_Win_get_attr` (§7.7.3, §12.2.6): `attribute_val` is a `void **`;
/// for `MPI_WIN_BASE` it receives the base address itself, for the other
/// predefined keys a pointer to the value.
///
/// # Safety
///
/// `attribute_val` is valid for a write of one pointer, `flag` of one
/// `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Win_get_attr(
    win: Handle,
    keyval: c_int,
    attribute_val: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    boundary_win("MPI_Win_get_attr", win, || {
        let w = self::win(win)?;
        let a = &*w.attrs;
        let found: Option<*mut c_void> = match keyval {
            WIN_BASE => Some(std::ptr::with_exposed_provenance_mut(w.base)),
            WIN_SIZE => Some((&raw const a.size).cast_mut().cast()),
            WIN_DISP_UNIT => Some((&raw const a.disp_unit).cast_mut().cast()),
            WIN_CREATE_FLAVOR => Some((&raw const a.flavor).cast_mut().cast()),
            WIN_MODEL => Some((&raw const a.model).cast_mut().cast()),
            _ => attr::get_in(Object::Win, Some(&w.meta.attrs), keyval)?,
        };
        // SAFETY: the caller's pointers, as this function requires.
        unsafe { attr::put_found(found, attribute_val, flag) }
    })
}

/// `MPI_Win_delete_attr` (§7.7.3): runs the delete callback, then
/// removes the attribute; `MPI_ERR_ARG` if none is set.
#[export]
pub(crate) extern "C" fn MPI_Win_delete_attr(win: Handle, keyval: c_int) -> c_int {
    boundary_win("MPI_Win_delete_attr", win, || {
        let w = self::win(win)?;
        if is_predefined(keyval) {
            return Err(Code(MPI_ERR_KEYVAL));
        }
        attr::delete_in(Object::Win, win, Some(&w.meta.attrs), keyval)
    })
}

/// Deletes every attribute of window `win` (at `MPI_Win_free`).
pub(crate) fn delete_all(win: Handle, w: &super::Win) -> Res<()> {
    attr::delete_cache(win, &w.meta.attrs)
}
