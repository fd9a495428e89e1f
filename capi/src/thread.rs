//! Threads (MPI 5.0 §11.6): this library provides what `MPI_Init_thread`
//! asks for, `MPI_THREAD_MULTIPLE` included.
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
//! - `MULTIPLE`: any thread may call at any time. Every call takes the
//!   same token, waiting for it first come first served ([`Gate`]), so
//!   one thread at a time runs inside the library, as MPICH's global
//!   critical section does. A thread that waits inside MPI (a blocking
//!   receive, a wait, a barrier) does not keep it: between two calls to
//!   the transport, at most a millisecond apart and at once when another
//!   thread is waiting, it lets every waiting thread have a turn
//!   (`mpi::raw::set_turns`, [`pass`]), so no thread's receive starves
//!   behind another's wait. The token is never passed while the library
//!   holds a borrow of shared state (the `mpi` crate passes it only
//!   between two calls to the transport; `handles.rs` never lends its
//!   state across a call into the crate).
//!
//! Either way the handle state (`handles.rs`) is touched only by a thread
//! allowed to ([`may_use_state`]), which is what makes one process-wide
//! state with the `mpi` crate's single-threaded objects sound: under
//! `SERIALIZED` and `MULTIPLE` the token's acquire and release order every
//! access.
//!
//! The few calls MPI lets any thread make at any time (`MPI_Initialized`,
//! `MPI_Finalized`, `MPI_Query_thread`, the version inquiries, the error
//! strings, the clock) answer from the process-wide atomics here.

use std::cell::Cell;
use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};

/// Whether `MPI_Init` completed in some thread of the process.
static INITIALIZED: AtomicBool = AtomicBool::new(false);

/// Whether `MPI_Finalize` completed.
static FINALIZED: AtomicBool = AtomicBool::new(false);

/// The thread levels (§11.6.1).
pub(crate) const THREAD_SINGLE: c_int = 0;
pub(crate) const THREAD_FUNNELED: c_int = 1024;
pub(crate) const THREAD_SERIALIZED: c_int = 2048;
pub(crate) const THREAD_MULTIPLE: c_int = 4096;

/// The level `MPI_Init_thread` provided (`MPI_Init`: `MPI_THREAD_SINGLE`).
static PROVIDED: AtomicI32 = AtomicI32::new(THREAD_SINGLE);

/// The level this library provides for `required`: the same; `None`
/// for a value that is no level.
pub(crate) fn provide(required: c_int) -> Option<c_int> {
    match required {
        THREAD_SINGLE | THREAD_FUNNELED | THREAD_SERIALIZED | THREAD_MULTIPLE => Some(required),
        _ => None,
    }
}

/// The token under `MPI_THREAD_MULTIPLE`: a ticket lock, so threads get
/// it in the order they asked.
struct Gate {
    /// The next ticket to hand out, and the ticket being served.
    tickets: Mutex<(u64, u64)>,
    turn: Condvar,
}

static GATE: Gate = Gate {
    tickets: Mutex::new((0, 0)),
    turn: Condvar::new(),
};

/// Threads waiting for the token under `MPI_THREAD_MULTIPLE`.
static WAITING: AtomicUsize = AtomicUsize::new(0);

impl Gate {
    fn tickets(&self) -> std::sync::MutexGuard<'_, (u64, u64)> {
        self.tickets.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits for this thread's turn, then holds the token.
    fn acquire(&self) {
        let mut t = self.tickets();
        let mine = t.0;
        t.0 += 1;
        if t.1 != mine {
            WAITING.fetch_add(1, Ordering::SeqCst);
            while t.1 != mine {
                t = self.turn.wait(t).unwrap_or_else(|e| e.into_inner());
            }
            WAITING.fetch_sub(1, Ordering::SeqCst);
        }
        HOLDER.store(id(), Ordering::Relaxed);
    }

    /// Gives the token to the next ticket.
    fn release(&self) {
        HOLDER.store(0, Ordering::Relaxed);
        let mut t = self.tickets();
        t.1 += 1;
        drop(t);
        self.turn.notify_all();
    }
}

/// Whether another thread waits for the token (`mpi::raw::Turns`).
fn contended() -> bool {
    WAITING.load(Ordering::SeqCst) > 0
}

/// Lets the threads waiting for the token have their turn, then takes
/// it back (`mpi::raw::Turns`): called by a thread that holds it, inside
/// a wait.
fn pass() {
    if !contended() || DEPTH.with(Cell::get) == 0 {
        return;
    }
    GATE.release();
    GATE.acquire();
}

/// Installs the turn-taking for `MPI_THREAD_MULTIPLE` (at
/// `MPI_Init_thread`).
pub(crate) fn take_turns() {
    mpi::raw::set_turns(mpi::raw::Turns { contended, pass });
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

/// Holds the token (under `SERIALIZED` and `MULTIPLE`) until dropped.
pub(crate) struct Entered(bool);

/// Enters MPI for a call: under `MPI_THREAD_SERIALIZED` takes the token
/// (or goes one deeper if this thread has it), `Err` if another thread
/// holds it; under `MPI_THREAD_MULTIPLE` waits for it. At the other
/// levels it takes nothing.
pub(crate) fn enter() -> Result<Entered, ()> {
    let level = provided();
    if level != THREAD_SERIALIZED && level != THREAD_MULTIPLE {
        return Ok(Entered(false));
    }
    let depth = DEPTH.with(Cell::get);
    if depth == 0 {
        if level == THREAD_MULTIPLE {
            GATE.acquire();
        } else {
            HOLDER
                .compare_exchange(0, id(), Ordering::Acquire, Ordering::Relaxed)
                .map_err(|_| ())?;
        }
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
                if provided() == THREAD_MULTIPLE {
                    GATE.release();
                } else {
                    HOLDER.store(0, Ordering::Release);
                }
            }
        }
    }
}

/// Whether the level lets any thread call, holding the token.
fn shared_level() -> bool {
    matches!(provided(), THREAD_SERIALIZED | THREAD_MULTIPLE)
}

/// Whether this thread may touch the handle state now: under
/// `SERIALIZED` and `MULTIPLE` while it holds the token, else unless it
/// is foreign.
pub(crate) fn may_use_state() -> bool {
    if shared_level() {
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
     MPI_Init_thread for MPI_THREAD_SERIALIZED or MPI_THREAD_MULTIPLE)";

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
    is_initialized() && !OWNER.with(Cell::get) && !shared_level()
}

/// Whether this thread initialised MPI (`MPI_Is_thread_main`).
pub(crate) fn is_main() -> bool {
    is_initialized() && OWNER.with(Cell::get)
}
