//! Threads (MPI 5.0 §11.6): this library provides `MPI_THREAD_FUNNELED`
//! when `MPI_Init_thread` asks for it or more (`MPI_THREAD_SINGLE` when it
//! asks for that): the program may have other threads, but only the one
//! that initialised MPI calls it. Its state is thread-local.
//!
//! A call from another thread than the one that initialised MPI would
//! find no state there and fail with `MPI_ERR_OTHER`, which a program
//! under `MPI_ERRORS_ARE_FATAL` never checks: its messages would be lost
//! in silence. So once MPI is initialised, every call from another thread
//! is fatal, with a message that says why (`error::boundary`), except the
//! few MPI lets any thread make at any time (`MPI_Initialized`,
//! `MPI_Finalized`, `MPI_Query_thread`, the version inquiries, the error
//! strings, the clock), which answer from the process-wide state here.

use std::cell::Cell;
use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::OnceLock;

/// Whether `MPI_Init` completed in some thread of the process.
static INITIALIZED: AtomicBool = AtomicBool::new(false);

/// Whether `MPI_Finalize` completed.
static FINALIZED: AtomicBool = AtomicBool::new(false);

/// `MPI_THREAD_SINGLE` and `MPI_THREAD_FUNNELED`, and the two levels
/// above them, which this library does not provide.
pub(crate) const THREAD_SINGLE: c_int = 0;
pub(crate) const THREAD_FUNNELED: c_int = 1024;
const THREAD_SERIALIZED: c_int = 2048;
const THREAD_MULTIPLE: c_int = 4096;

/// The level `MPI_Init_thread` provided (`MPI_Init`: `MPI_THREAD_SINGLE`).
static PROVIDED: AtomicI32 = AtomicI32::new(THREAD_SINGLE);

/// The level this library provides for `required`: the same for
/// `MPI_THREAD_SINGLE` and `FUNNELED`, `FUNNELED` for the two above
/// (§11.6.1 lets it provide less); `None` for a value that is no level.
pub(crate) fn provide(required: c_int) -> Option<c_int> {
    match required {
        THREAD_SINGLE => Some(THREAD_SINGLE),
        THREAD_FUNNELED | THREAD_SERIALIZED | THREAD_MULTIPLE => Some(THREAD_FUNNELED),
        _ => None,
    }
}

/// Records the level provided (at `MPI_Init_thread`).
pub(crate) fn set_provided(level: c_int) {
    PROVIDED.store(level, Ordering::Relaxed);
}

/// The level provided, for `MPI_Query_thread`.
pub(crate) fn provided() -> c_int {
    PROVIDED.load(Ordering::Relaxed)
}

/// The transport `MPI_Init` chose, for `MPI_Get_library_version`.
static TRANSPORT: OnceLock<String> = OnceLock::new();

thread_local! {
    /// Whether this thread initialised MPI.
    static OWNER: Cell<bool> = const { Cell::new(false) };
}

/// Why a call from another thread is refused.
pub(crate) const OTHER_THREAD: &str = "called from a thread other than the one that \
     initialized MPI; this MPI provides MPI_THREAD_FUNNELED at most (only that thread may call it)";

/// `MPI_Init` completed in this thread, over `transport`.
pub(crate) fn initialized_here(transport: &str) {
    OWNER.with(|o| o.set(true));
    let _ = TRANSPORT.set(transport.to_owned());
    INITIALIZED.store(true, Ordering::Release);
}

/// `MPI_Finalize` completed.
pub(crate) fn finalized() {
    FINALIZED.store(true, Ordering::Release);
}

/// Whether MPI was initialised, by any thread.
pub(crate) fn is_initialized() -> bool {
    INITIALIZED.load(Ordering::Acquire)
}

/// Whether MPI was finalised.
pub(crate) fn is_finalized() -> bool {
    FINALIZED.load(Ordering::Acquire)
}

/// The transport in use, once MPI is initialised.
pub(crate) fn transport() -> Option<&'static str> {
    TRANSPORT.get().map(String::as_str)
}

/// Whether this call comes from a thread that may not call MPI: MPI is
/// initialised, by another thread.
pub(crate) fn is_foreign() -> bool {
    is_initialized() && !OWNER.with(Cell::get)
}
