//! `MPI_Status` (MPI 5.0 §3.2.5; layout of the standard ABI, §20.4):
//! three public `int` fields, `MPI_SOURCE`, `MPI_TAG`, `MPI_ERROR`, then
//! five `int`s the implementation owns (32 bytes in all). o2g keeps the
//! received byte count in the first two private slots (low and high 32
//! bits) and the cancelled flag in the third.

use std::ffi::c_int;

use o2g_mpi_abi_macros::export;

use crate::error::{boundary_any_thread, Code, Res, MPI_ERR_ARG, MPI_SUCCESS};
use crate::ffi::{self, out};

/// `MPI_ANY_SOURCE` of the standard ABI.
pub(crate) const ANY_SOURCE: c_int = -1;
/// `MPI_ANY_TAG` of the standard ABI.
pub(crate) const ANY_TAG: c_int = -2;
/// `MPI_PROC_NULL` of the standard ABI.
pub(crate) const PROC_NULL: c_int = -3;
/// `MPI_UNDEFINED` of the standard ABI.
pub(crate) const UNDEFINED: c_int = -32766;

/// A count for an output argument of type `T` (`int`, or `MPI_Count` in
/// the `_c` functions): `MPI_UNDEFINED` when it is undefined (`None`) or
/// does not fit in `T`, as §3.2.5, §5.1.5 and §5.1.11 ask of the `int`
/// forms.
pub(crate) fn count_or_undefined<T: TryFrom<u64> + From<c_int>>(n: Option<u64>) -> T {
    n.and_then(|n| T::try_from(n).ok())
        .unwrap_or_else(|| T::from(UNDEFINED))
}

/// The C `MPI_Status`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct Status {
    pub(crate) source: c_int,
    pub(crate) tag: c_int,
    pub(crate) error: c_int,
    private: [c_int; 5],
}

const _: () = assert!(size_of::<Status>() == 32);

impl Status {
    /// What a completed operation reports.
    pub(crate) fn new(source: c_int, tag: c_int, bytes: usize, cancelled: bool) -> Self {
        let bytes = bytes as u64;
        Self {
            source,
            tag,
            error: 0,
            private: [
                bytes as u32 as c_int,
                (bytes >> 32) as u32 as c_int,
                c_int::from(cancelled),
                0,
                0,
            ],
        }
    }

    /// The empty status (§3.7.3): any source, any tag, no data.
    pub(crate) fn empty() -> Self {
        Self::new(ANY_SOURCE, ANY_TAG, 0, false)
    }

    /// The status of a completed `mpi` crate operation.
    pub(crate) fn from_mpi(s: &mpi::Status) -> Self {
        Self::new(s.source_rank(), s.tag(), s.count_bytes(), s.is_cancelled())
    }

    /// This status with `MPI_ERROR` set to `error`.
    pub(crate) fn with_error(self, error: c_int) -> Self {
        Self { error, ..self }
    }

    /// Bytes received.
    pub(crate) fn bytes(&self) -> u64 {
        u64::from(self.private[0] as u32) | (u64::from(self.private[1] as u32) << 32)
    }

    /// Whether the operation was cancelled.
    pub(crate) fn cancelled(&self) -> bool {
        self.private[2] != 0
    }

    /// Stores this status in the caller's `MPI_Status` unless it is
    /// `MPI_STATUS_IGNORE`, leaving `MPI_ERROR` alone as single-completion
    /// calls must (§3.2.5), except in the empty status, whose `MPI_ERROR`
    /// is `MPI_SUCCESS` (§3.7.3; no completed operation has
    /// `MPI_ANY_SOURCE` as its source).
    ///
    /// # Safety
    ///
    /// A non-null `p` is valid for reading and writing one `MPI_Status`.
    pub(crate) unsafe fn store(&self, p: *mut Status) {
        // SAFETY: by the caller's contract.
        if let Some(st) = unsafe { ffi::optional(p) } {
            let error = if self.source == ANY_SOURCE {
                MPI_SUCCESS
            } else {
                st.error
            };
            *st = self.with_error(error);
        }
    }
}

/// The caller's status, for `MPI_Get_count` and friends.
///
/// # Safety
///
/// A non-null `p` is valid for reading one `MPI_Status`.
pub(crate) unsafe fn read(p: *const Status) -> Res<Status> {
    // SAFETY: by the caller's contract.
    unsafe { ffi::input(p) }
        .copied()
        .map_err(|_| Code(MPI_ERR_ARG))
}

/// `MPI_Status_get_source` (MPI 5.0 §3.2.5): the `MPI_SOURCE` field, for
/// bindings that cannot reach the struct's fields.
///
/// # Safety
///
/// `st` must be valid for reading one `MPI_Status`, `source` for writing
/// one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Status_get_source(
    st: *const Status,
    source: *mut c_int,
) -> c_int {
    // SAFETY: by the caller's contract.
    boundary_any_thread("MPI_Status_get_source", || unsafe {
        out(source, read(st)?.source)
    })
}

/// `MPI_Status_get_tag` (§3.2.5): the `MPI_TAG` field.
///
/// # Safety
///
/// As for `MPI_Status_get_source`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Status_get_tag(st: *const Status, tag: *mut c_int) -> c_int {
    // SAFETY: by the caller's contract.
    boundary_any_thread("MPI_Status_get_tag", || unsafe { out(tag, read(st)?.tag) })
}

/// `MPI_Status_get_error` (§3.2.5): the `MPI_ERROR` field.
///
/// # Safety
///
/// As for `MPI_Status_get_source`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Status_get_error(
    st: *const Status,
    error: *mut c_int,
) -> c_int {
    // SAFETY: by the caller's contract.
    boundary_any_thread("MPI_Status_get_error", || unsafe {
        out(error, read(st)?.error)
    })
}

/// Sets one public field of the caller's status.
///
/// # Safety
///
/// A non-null `st` is valid for reading and writing one `MPI_Status`.
unsafe fn set(name: &str, st: *mut Status, f: impl FnOnce(&mut Status)) -> c_int {
    boundary_any_thread(name, || {
        // SAFETY: by the caller's contract.
        f(unsafe { ffi::inout(st) }?);
        Ok(())
    })
}

/// `MPI_Status_set_source` (§3.2.5): sets `MPI_SOURCE`, as a generalized
/// request's query function does.
///
/// # Safety
///
/// `st` must be valid for reading and writing one `MPI_Status`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Status_set_source(st: *mut Status, source: c_int) -> c_int {
    // SAFETY: by the caller's contract.
    unsafe { set("MPI_Status_set_source", st, |s| s.source = source) }
}

/// `MPI_Status_set_tag` (§3.2.5): sets `MPI_TAG`.
///
/// # Safety
///
/// As for `MPI_Status_set_source`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Status_set_tag(st: *mut Status, tag: c_int) -> c_int {
    // SAFETY: by the caller's contract.
    unsafe { set("MPI_Status_set_tag", st, |s| s.tag = tag) }
}

/// `MPI_Status_set_error` (§3.2.5): sets `MPI_ERROR`.
///
/// # Safety
///
/// As for `MPI_Status_set_source`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Status_set_error(st: *mut Status, error: c_int) -> c_int {
    // SAFETY: by the caller's contract.
    unsafe { set("MPI_Status_set_error", st, |s| s.error = error) }
}
