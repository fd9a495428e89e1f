//! Threads (MPI 5.0 §11.6): this library provides what `MPI_Init_thread`
//! asks for up to `MPI_THREAD_SERIALIZED` (`SERIALIZED` for `MULTIPLE`).
//!
//! - `SINGLE` and `FUNNELED`: only the thread that initialised MPI may
//!   call it. A call from another thread is fatal, with a message that
//!   says why (`error::boundary`): returning an error that a program
//!   under `MPI_ERRORS_ARE_FATAL` never checks would lose its messages in
//!   silence.
//! - `SERIALIZED`: any thread may call, one at a time. Every call takes a
//!   process-wide token ([`enter`]) for its whole length (a callback's
//!   nested calls on the same thread share it); a thread that finds the
//!   token held by another has broken the program's promise, and that is
//!   fatal with a message, never a race.
//!
//! Either way the handle state (`handles.rs`) is touched only by a thread
//! allowed to ([`may_use_state`]), which is what makes one process-wide
//! state with the `mpi` crate's single-threaded objects sound: under
//! `SERIALIZED` the token's acquire and release order every access.
//!
//! The few calls MPI lets any thread make at any time (`MPI_Initialized`,
//! `MPI_Finalized`, `MPI_Query_thread`, the version inquiries, the error
//! strings, the clock) answer from the process-wide atomics here.

use std::cell::Cell;
use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::OnceLock;

/// Whether `MPI_Init` completed in some thread of the process.
static INITIALIZED: AtomicBool = AtomicBool::new(false);

/// Whether `MPI_Finalize` completed.
static FINALIZED: AtomicBool = AtomicBool::new(false);

/// The thread levels (§11.6.1); this library does not provide the last.
pub(crate) const THREAD_SINGLE: c_int = 0;
pub(crate) const THREAD_FUNNELED: c_int = 1024;
pub(crate) const THREAD_SERIALIZED: c_int = 2048;
const THREAD_MULTIPLE: c_int = 4096;

/// The level `MPI_Init_thread` provided (`MPI_Init`: `MPI_THREAD_SINGLE`).
static PROVIDED: AtomicI32 = AtomicI32::new(THREAD_SINGLE);

/// The level this library provides for `required`: the same up to
/// `MPI_THREAD_SERIALIZED`, `SERIALIZED` for `MULTIPLE` (§11.6.1 lets it
/// provide less); `None` for a value that is no level.
pub(crate) fn provide(required: c_int) -> Option<c_int> {
    match required {
        THREAD_SINGLE | THREAD_FUNNELED | THREAD_SERIALIZED => Some(required),
        THREAD_MULTIPLE => Some(THREAD_SERIALIZED),
        _ => None,
    }
}

/// The thread holding the `SERIALIZED` token (its [`id`]), 0 for none.
static HOLDER: AtomicU64 = AtomicU64::new(0);

/// Numbers threads for [`HOLDER`] (0 is none).
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// This thread's number, once it has one.
    static ID: Cell<u64> = const { Cell::new(0) };
    /// How deep this thread is in calls that hold the token.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

fn id() -> u64 {
    ID.with(|i| {
        if i.get() == 0 {
            i.set(NEXT_ID.fetch_add(1, Ordering::Relaxed));
        }
        i.get()
    })
}

/// Why a call under `MPI_THREAD_SERIALIZED` is refused.
pub(crate) const CONCURRENT: &str = "called while another thread was inside MPI; under \
     MPI_THREAD_SERIALIZED the program must make its MPI calls one at a time";

/// Holds the `SERIALIZED` token (when that is the level) until dropped.
pub(crate) struct Entered(bool);

/// Enters MPI for a call: under `MPI_THREAD_SERIALIZED` takes the token
/// (or goes one deeper if this thread has it); `Err` if another thread
/// holds it. At the other levels it takes nothing.
pub(crate) fn enter() -> Result<Entered, ()> {
    if provided() != THREAD_SERIALIZED {
        return Ok(Entered(false));
    }
    let depth = DEPTH.with(Cell::get);
    if depth == 0 {
        HOLDER
            .compare_exchange(0, id(), Ordering::Acquire, Ordering::Relaxed)
            .map_err(|_| ())?;
    }
    DEPTH.with(|d| d.set(depth + 1));
    Ok(Entered(true))
}

impl Drop for Entered {
    fn drop(&mut self) {
        if self.0 {
            let depth = DEPTH.with(Cell::get) - 1;
            DEPTH.with(|d| d.set(depth));
            if depth == 0 {
                HOLDER.store(0, Ordering::Release);
            }
        }
    }
}

/// Whether this thread may touch the handle state now: under
/// `SERIALIZED` while it holds the token, else unless it is foreign.
pub(crate) fn may_use_state() -> bool {
    if provided() == THREAD_SERIALIZED {
        DEPTH.with(Cell::get) > 0
    } else {
        !is_foreign()
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
     initialized MPI, which MPI_THREAD_SINGLE and MPI_THREAD_FUNNELED forbid (ask \
     MPI_Init_thread for MPI_THREAD_SERIALIZED)";

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
/// initialised, by another thread, at `SINGLE` or `FUNNELED`.
pub(crate) fn is_foreign() -> bool {
    is_initialized() && !OWNER.with(Cell::get) && provided() != THREAD_SERIALIZED
}

/// Whether this thread initialised MPI (`MPI_Is_thread_main`).
pub(crate) fn is_main() -> bool {
    is_initialized() && OWNER.with(Cell::get)
}
