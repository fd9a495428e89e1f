//! Error classes and codes (MPI 5.0 §9.4, values of the standard ABI,
//! §20.5), the mapping from the `mpi` crate's errors, error handlers
//! (§9.3) and the FFI boundary every exported function goes through.
//!
//! Every error code this library returns is an error class (a code is its
//! own class). `MPI_ERRORS_ARE_FATAL` is the default handler of
//! `MPI_COMM_WORLD` and `MPI_COMM_SELF`, as the standard says; a program
//! that wants codes back sets `MPI_ERRORS_RETURN`.

use o2g_mpi_abi_macros::export;
use std::cell::RefCell;
use std::ffi::{c_char, c_int};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::ffi;
use crate::handles::{self, ErrMode, Handle};
use crate::thread;

macro_rules! classes {
    ($($name:ident = $v:expr, $text:expr;)*) => {
        $(
            #[doc = $text]
            #[allow(dead_code)]
            pub(crate) const $name: c_int = $v;
        )*
        /// The text of an error class, `None` for a value that is not one.
        fn class_text(code: c_int) -> Option<&'static str> {
            match code {
                $($v => Some(concat!(stringify!($name), ": ", $text)),)*
                _ => None,
            }
        }
    };
}

classes! {
    MPI_SUCCESS = 0, "no error";
    MPI_ERR_BUFFER = 1, "invalid buffer pointer";
    MPI_ERR_COUNT = 2, "invalid count argument";
    MPI_ERR_TYPE = 3, "invalid datatype";
    MPI_ERR_TAG = 4, "invalid tag";
    MPI_ERR_COMM = 5, "invalid communicator";
    MPI_ERR_RANK = 6, "invalid rank";
    MPI_ERR_REQUEST = 7, "invalid request";
    MPI_ERR_ROOT = 8, "invalid root";
    MPI_ERR_GROUP = 9, "invalid group";
    MPI_ERR_OP = 10, "invalid operation";
    MPI_ERR_TOPOLOGY = 11, "invalid topology";
    MPI_ERR_DIMS = 12, "invalid dimension argument";
    MPI_ERR_ARG = 13, "invalid argument of some other kind";
    MPI_ERR_UNKNOWN = 14, "unknown error";
    MPI_ERR_TRUNCATE = 15, "message truncated on receive";
    MPI_ERR_OTHER = 16, "known error not in this list";
    MPI_ERR_INTERN = 17, "internal MPI (implementation) error";
    MPI_ERR_PENDING = 18, "pending request";
    MPI_ERR_IN_STATUS = 19, "error code is in status";
    MPI_ERR_ACCESS = 20, "permission denied";
    MPI_ERR_AMODE = 21, "invalid file access mode";
    MPI_ERR_ASSERT = 22, "invalid assert argument";
    MPI_ERR_BAD_FILE = 23, "invalid file name";
    MPI_ERR_BASE = 24, "invalid base argument";
    MPI_ERR_CONVERSION = 25, "data conversion failed";
    MPI_ERR_DISP = 26, "invalid displacement argument";
    MPI_ERR_DUP_DATAREP = 27, "data representation already defined";
    MPI_ERR_FILE_EXISTS = 28, "file exists";
    MPI_ERR_FILE_IN_USE = 29, "file in use";
    MPI_ERR_FILE = 30, "invalid file handle";
    MPI_ERR_INFO_KEY = 31, "invalid info key";
    MPI_ERR_INFO_NOKEY = 32, "info key not set";
    MPI_ERR_INFO_VALUE = 33, "invalid info value";
    MPI_ERR_INFO = 34, "invalid info object";
    MPI_ERR_IO = 35, "I/O error";
    MPI_ERR_KEYVAL = 36, "invalid keyval";
    MPI_ERR_LOCKTYPE = 37, "invalid lock type";
    MPI_ERR_NAME = 38, "invalid service name";
    MPI_ERR_NO_MEM = 39, "memory exhausted";
    MPI_ERR_NOT_SAME = 40, "collective argument not the same on all processes";
    MPI_ERR_NO_SPACE = 41, "not enough space";
    MPI_ERR_NO_SUCH_FILE = 42, "file does not exist";
    MPI_ERR_PORT = 43, "invalid port name";
    MPI_ERR_QUOTA = 44, "quota exceeded";
    MPI_ERR_READ_ONLY = 45, "read-only file or file system";
    MPI_ERR_RMA_ATTACH = 46, "memory cannot be attached";
    MPI_ERR_RMA_CONFLICT = 47, "conflicting accesses to a window";
    MPI_ERR_RMA_RANGE = 48, "target memory outside the window";
    MPI_ERR_RMA_SHARED = 49, "memory cannot be shared";
    MPI_ERR_RMA_SYNC = 50, "wrong synchronization of RMA calls";
    MPI_ERR_SERVICE = 51, "invalid service name to unpublish";
    MPI_ERR_SIZE = 52, "invalid size argument";
    MPI_ERR_SPAWN = 53, "error in spawning processes";
    MPI_ERR_UNSUPPORTED_DATAREP = 54, "unsupported data representation";
    MPI_ERR_UNSUPPORTED_OPERATION = 55, "unsupported operation";
    MPI_ERR_WIN = 56, "invalid window";
    MPI_ERR_RMA_FLAVOR = 57, "wrong kind of window";
    MPI_ERR_PROC_ABORTED = 58, "operation failed because a peer process has aborted";
    MPI_ERR_VALUE_TOO_LARGE = 59, "value too large to store";
    MPI_ERR_SESSION = 60, "invalid session";
    MPI_ERR_ERRHANDLER = 61, "invalid error handler";
    MPI_ERR_ABI = 62, "ABI mismatch";
}

/// `MPI_ERR_LASTCODE`: the largest predefined error code (§9.4); codes
/// the user adds come after it (`errhandler.rs`).
pub(crate) const MPI_ERR_LASTCODE: c_int = 16383;

/// An MPI error code, as an error type so that `?` works.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Code(pub(crate) c_int);

/// A result whose error is an MPI error code.
pub(crate) type Res<T> = Result<T, Code>;

thread_local! {
    /// The message of the last error from the `mpi` crate, printed when an
    /// error is fatal.
    static LAST: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Threads whose [`LAST`] holds a message: while none does, a call need
/// not reach its thread-local (`__tls_get_addr` in this shared library)
/// to clear it. A thread always sees its own updates of the count.
static DETAILED: AtomicUsize = AtomicUsize::new(0);

/// Sets this thread's error message (empty: none).
fn set_detail(why: String) {
    LAST.with(|l| {
        let mut l = l.borrow_mut();
        match (l.is_empty(), why.is_empty()) {
            (true, false) => _ = DETAILED.fetch_add(1, Ordering::Relaxed),
            (false, true) => _ = DETAILED.fetch_sub(1, Ordering::Relaxed),
            _ => {}
        }
        *l = why;
    });
}

/// Takes this thread's error message, leaving none.
fn take_detail() -> String {
    if DETAILED.load(Ordering::Relaxed) == 0 {
        return String::new();
    }
    let why = LAST.with(|l| std::mem::take(&mut *l.borrow_mut()));
    if !why.is_empty() {
        DETAILED.fetch_sub(1, Ordering::Relaxed);
    }
    why
}

impl From<mpi::Error> for Code {
    fn from(e: mpi::Error) -> Self {
        use mpi::Error as E;
        let class = match &e {
            E::Truncated { .. } => MPI_ERR_TRUNCATE,
            E::InvalidRank { .. } => MPI_ERR_RANK,
            E::InvalidTag(_) => MPI_ERR_TAG,
            E::InvalidArgument(_) => MPI_ERR_ARG,
            E::InvalidCommunicator(_) => MPI_ERR_COMM,
            E::PeerGone { .. } => MPI_ERR_PROC_ABORTED,
            E::ResourceExhausted(_) => MPI_ERR_NO_MEM,
            _ => MPI_ERR_OTHER,
        };
        set_detail(e.to_string());
        Code(class)
    }
}

/// Error class `class` with a message saying why, printed if the error
/// is fatal.
pub(crate) fn explained(class: c_int, why: &str) -> Code {
    set_detail(why.to_owned());
    Code(class)
}

/// Runs `f`, turning a panic into `MPI_ERR_INTERN` (no unwinding reaches
/// C); the error code, or `None` on success.
fn run(f: impl FnOnce() -> Res<()>) -> Option<c_int> {
    // A reason left by an earlier call (one whose error was returned)
    // must not be reported with this call's.
    take_detail();
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => None,
        Ok(Err(Code(c))) => Some(c),
        Err(_) => Some(MPI_ERR_INTERN),
    }
}

/// Checks that this thread may call MPI now (`thread.rs`) and enters. A
/// call it may not make ends the job with a message, whatever the error
/// handler: that thread has no handler, nor anything else, to go by.
#[must_use]
fn single_thread(name: &str) -> thread::Entered {
    if thread::is_foreign() {
        set_detail(thread::OTHER_THREAD.to_owned());
        raise(name, ErrMode::Fatal, MPI_ERR_OTHER);
    }
    match thread::enter() {
        Ok(e) => e,
        Err(()) => {
            set_detail(thread::CONCURRENT.to_owned());
            raise(name, ErrMode::Fatal, MPI_ERR_OTHER);
            // A fatal error does not return.
            unreachable!("a fatal error returned")
        }
    }
}

/// The FFI boundary: runs `f` (in the thread that initialised MPI only),
/// turns a panic into `MPI_ERR_INTERN`, and hands an error to the error
/// handler of communicator `comm` (§9.3; `MPI_COMM_WORLD`'s when `comm`
/// is not one).
pub(crate) fn boundary(name: &str, comm: Handle, f: impl FnOnce() -> Res<()>) -> c_int {
    let _entered = single_thread(name);
    match run(f) {
        None => MPI_SUCCESS,
        Some(code) => raise(name, handles::errmode(comm), code),
    }
}

/// The FFI boundary of the calls MPI lets any thread make at any time
/// (`MPI_Initialized`, the version inquiries, ...): as [`boundary`]
/// without a communicator, from any thread.
pub(crate) fn boundary_any_thread(name: &str, f: impl FnOnce() -> Res<()>) -> c_int {
    match run(f) {
        None => MPI_SUCCESS,
        Some(code) => raise(name, handles::errmode(std::ptr::null_mut()), code),
    }
}

/// The FFI boundary of `MPI_Init` and `MPI_Init_thread`. Before MPI runs
/// an error is fatal, as under the initial error handler
/// `MPI_ERRORS_ARE_FATAL` (§9.3; no other can have been set yet), so that
/// a program that does not check does not run on without MPI; a second
/// call while MPI runs goes to `MPI_COMM_WORLD`'s handler.
pub(crate) fn boundary_init(name: &str, f: impl FnOnce() -> Res<()>) -> c_int {
    let _entered = single_thread(name);
    let mode = match handles::running() {
        Ok(()) => handles::errmode(std::ptr::null_mut()),
        Err(_) => ErrMode::Fatal,
    };
    match run(f) {
        None => MPI_SUCCESS,
        Some(code) => raise(name, mode, code),
    }
}

/// The FFI boundary for calls on requests, whose error handler is that
/// of the communicator each request came from: `f` sets `mode` (it starts
/// as `MPI_COMM_WORLD`'s) before it fails.
pub(crate) fn boundary_req(name: &str, f: impl FnOnce(&mut ErrMode) -> Res<()>) -> c_int {
    let _entered = single_thread(name);
    let mut mode = handles::errmode(std::ptr::null_mut());
    match run(|| f(&mut mode)) {
        None => MPI_SUCCESS,
        Some(code) => raise(name, mode, code),
    }
}

/// The FFI boundary for calls on a window: as [`boundary`], with the
/// error handler of window `win` (§12.6; `MPI_COMM_WORLD`'s when `win`
/// is not one).
pub(crate) fn boundary_win(name: &str, win: Handle, f: impl FnOnce() -> Res<()>) -> c_int {
    let _entered = single_thread(name);
    match run(f) {
        None => MPI_SUCCESS,
        Some(code) => raise(name, crate::rma::errmode(win), code),
    }
}

/// Applies an error mode to an error `code` raised by `name`.
pub(crate) fn raise(name: &str, mode: ErrMode, code: c_int) -> c_int {
    if mode == ErrMode::Return || code == MPI_SUCCESS {
        return code;
    }
    if let ErrMode::User { errh, comm } = mode {
        take_detail();
        crate::errhandler::invoke(errh, comm, code);
        return code;
    }
    let detail = take_detail();
    let text = class_text(code).unwrap_or("unknown error");
    let handler = if mode == ErrMode::Abort {
        "MPI_ERRORS_ABORT"
    } else {
        "MPI_ERRORS_ARE_FATAL"
    };
    // One write, so that the lines of several ranks do not interleave.
    let line = if detail.is_empty() {
        format!("o2g: {name}: {text} ({handler}: aborting the job)\n")
    } else {
        format!("o2g: {name}: {detail} ({text}; {handler}: aborting the job)\n")
    };
    eprint!("{line}");
    crate::env::abort_job(code)
}

/// The error mode an error-handler handle stands for, set on the
/// communicator `comm`.
pub(crate) fn mode_of(errh: Handle, comm: Handle) -> Res<ErrMode> {
    match handles::value(errh) {
        handles::ERRORS_ARE_FATAL => Ok(ErrMode::Fatal),
        handles::ERRORS_ABORT => Ok(ErrMode::Abort),
        handles::ERRORS_RETURN => Ok(ErrMode::Return),
        _ => crate::errhandler::mode(errh, comm).ok_or(Code(MPI_ERR_ERRHANDLER)),
    }
}

/// `MPI_Comm_set_errhandler` (§9.3.1): `MPI_ERRORS_ARE_FATAL`,
/// `MPI_ERRORS_ABORT`, `MPI_ERRORS_RETURN` or one from
/// `MPI_Comm_create_errhandler`.
#[export]
pub(crate) extern "C" fn MPI_Comm_set_errhandler(comm: Handle, errh: Handle) -> c_int {
    boundary("MPI_Comm_set_errhandler", comm, || {
        let c = handles::comm(comm)?;
        c.errh.set(mode_of(errh, comm)?);
        Ok(())
    })
}

/// The handle value of the error handler `mode` stands for, as a get
/// call hands it out (one more reference to a user handler).
pub(crate) fn handle_of(mode: ErrMode) -> usize {
    match mode {
        ErrMode::Fatal => handles::ERRORS_ARE_FATAL,
        ErrMode::Abort => handles::ERRORS_ABORT,
        ErrMode::Return => handles::ERRORS_RETURN,
        ErrMode::User { errh, .. } => {
            crate::errhandler::retain(errh);
            errh
        }
    }
}

/// `MPI_Comm_get_errhandler` (§9.3.1).
///
/// # Safety
///
/// `errh` must be valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Comm_get_errhandler(comm: Handle, errh: *mut Handle) -> c_int {
    boundary("MPI_Comm_get_errhandler", comm, || {
        let v = handle_of(handles::comm(comm)?.errh.get());
        // SAFETY: the caller passes a valid output pointer (or null, which
        // `out` rejects).
        unsafe { ffi::out(errh, handles::handle(v)) }
    })
}

/// `MPI_Errhandler_free` (§9.3.4): sets the handle to
/// `MPI_ERRHANDLER_NULL`; a user handler stays in force on the
/// communicators it is set on.
///
/// # Safety
///
/// `errh` must be valid for reading and writing one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Errhandler_free(errh: *mut Handle) -> c_int {
    boundary("MPI_Errhandler_free", std::ptr::null_mut(), || {
        // SAFETY: as the caller guarantees.
        let h = unsafe { ffi::inout(errh) }?;
        if handles::value(*h) >= handles::FIRST_DYNAMIC {
            crate::errhandler::release(*h)?;
        } else {
            mode_of(*h, std::ptr::null_mut())?;
        }
        *h = handles::handle(handles::ERRHANDLER_NULL);
        Ok(())
    })
}

/// `MPI_Error_class` (§9.4): every predefined code of this library is a
/// class; a code the user added has the class it was added to.
///
/// # Safety
///
/// `class` must be valid for a write of one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Error_class(code: c_int, class: *mut c_int) -> c_int {
    boundary_any_thread("MPI_Error_class", || {
        if let Some(c) = crate::errhandler::class_of(code) {
            // SAFETY: the caller passes a valid output pointer.
            return unsafe { ffi::out(class, c) };
        }
        if !(0..=MPI_ERR_LASTCODE).contains(&code) {
            return Err(Code(MPI_ERR_ARG));
        }
        let c = if class_text(code).is_some() || code <= MPI_ERR_ABI {
            code
        } else {
            MPI_ERR_UNKNOWN
        };
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(class, c) }
    })
}

/// `MPI_Error_string` (§9.4): the text of an error code, at most
/// `MPI_MAX_ERROR_STRING` (512) bytes with its terminating NUL.
///
/// # Safety
///
/// `string` must be valid for 512 bytes of writes, `len` for one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Error_string(
    code: c_int,
    string: *mut c_char,
    len: *mut c_int,
) -> c_int {
    boundary_any_thread("MPI_Error_string", || {
        let text = match class_text(code) {
            Some(t) => t.to_string(),
            None if crate::errhandler::class_of(code).is_some() => {
                crate::errhandler::string_of(code).unwrap_or_default()
            }
            None if (0..=MPI_ERR_LASTCODE).contains(&code) => format!("MPI error code {code}"),
            None => return Err(Code(MPI_ERR_ARG)),
        };
        // SAFETY: the caller passes MPI_MAX_ERROR_STRING bytes and an int.
        unsafe { ffi::write_str(string, 512, &text, len) }
    })
}
