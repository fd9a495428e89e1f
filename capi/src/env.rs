//! The environment (MPI 5.0 §11.2 "The World Model", §9.1 version
//! inquiries, §9.6 timers, §11.6 thread support; `MPI_Abi_get_version`
//! of §20.2).

use o2g_mpi_abi_macros::export;
use std::cell::Cell;
use std::ffi::{c_char, c_double, c_int};

use crate::error::{boundary, boundary_any_thread, boundary_init, Code, Res, MPI_ERR_OTHER};
use crate::ffi;
use crate::handles::{self, CommEntry, ErrMode, Handle, Phase};
use crate::thread;

/// `MPI_THREAD_SINGLE`: the only level this library provides.
const THREAD_SINGLE: c_int = 0;

fn none() -> Handle {
    std::ptr::null_mut()
}

/// Starts MPI and registers `MPI_COMM_WORLD` and `MPI_COMM_SELF`.
fn init() -> Res<()> {
    if handles::with(|s| s.phase)? != Phase::Before {
        return Err(Code(MPI_ERR_OTHER));
    }
    let universe = mpi::initialize()?;
    let world = universe.world();
    let me = u32::try_from(world.rank()).map_err(|_| Code(MPI_ERR_OTHER))?;
    let own = world
        .split(mpi::Color::With(me), 0)?
        .ok_or(Code(MPI_ERR_OTHER))?;
    handles::with(|s| {
        let fatal = || Cell::new(ErrMode::Fatal);
        s.add_comm(
            handles::COMM_WORLD,
            CommEntry {
                comm: world,
                errh: fatal(),
            },
        );
        s.add_comm(
            handles::COMM_SELF,
            CommEntry {
                comm: own,
                errh: fatal(),
            },
        );
        thread::initialized_here(universe.transport_name());
        s.universe = Some(universe);
        s.phase = Phase::Running;
    })
}

/// Ends the job after a fatal error or `MPI_Abort` with `code`.
pub(crate) fn abort_job(code: c_int) -> ! {
    match handles::comm(handles::handle(handles::COMM_WORLD)) {
        Ok(world) => world.comm.abort(code),
        Err(_) => std::process::exit(code),
    }
}

/// `MPI_Init` (§11.2.1). The arguments are not used (the process manager
/// passes everything through the environment). A failure is fatal
/// (`error::boundary_init`).
#[export]
pub(crate) extern "C" fn MPI_Init(_argc: *mut c_int, _argv: *mut *mut *mut c_char) -> c_int {
    boundary_init("MPI_Init", init)
}

/// `MPI_Init_thread` (§11.6.1): provides `MPI_THREAD_SINGLE` whatever is
/// required (handles are thread-local; a call from another thread ends
/// the job, see `thread.rs`). A failure is fatal, as for `MPI_Init`.
///
/// # Safety
///
/// `provided` must be valid for a write of one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Init_thread(
    _argc: *mut c_int,
    _argv: *mut *mut *mut c_char,
    _required: c_int,
    provided: *mut c_int,
) -> c_int {
    boundary_init("MPI_Init_thread", || {
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(provided, THREAD_SINGLE) }?;
        init()
    })
}

/// `MPI_Query_thread` (§11.6.1): `MPI_THREAD_SINGLE`.
///
/// # Safety
///
/// `provided` must be valid for a write of one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Query_thread(provided: *mut c_int) -> c_int {
    boundary_any_thread("MPI_Query_thread", || {
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(provided, THREAD_SINGLE) }
    })
}

/// `MPI_Initialized` (§11.2.1): whether `MPI_Init` has completed (true
/// after finalize too); any thread may ask.
///
/// # Safety
///
/// `flag` must be valid for a write of one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Initialized(flag: *mut c_int) -> c_int {
    boundary_any_thread("MPI_Initialized", || {
        let f = thread::is_initialized();
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(flag, c_int::from(f)) }
    })
}

/// `MPI_Finalized` (§11.2.2): whether `MPI_Finalize` has completed; any
/// thread may ask.
///
/// # Safety
///
/// `flag` must be valid for a write of one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Finalized(flag: *mut c_int) -> c_int {
    boundary_any_thread("MPI_Finalized", || {
        let f = thread::is_finalized();
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(flag, c_int::from(f)) }
    })
}

/// `MPI_Finalize` (§11.2.2): releases every handle, delivers what is
/// queued and synchronises with the other processes.
#[export]
pub(crate) extern "C" fn MPI_Finalize() -> c_int {
    boundary("MPI_Finalize", none(), || {
        handles::running()?;
        let universe = handles::with(|s| {
            s.clear();
            s.phase = Phase::After;
            s.universe.take()
        })?;
        let done = match universe {
            Some(u) => u.finalize().map_err(Code::from),
            None => Err(Code(MPI_ERR_OTHER)),
        };
        thread::finalized();
        done
    })
}

/// `MPI_Abort` (§9.5): ends every process of the job with `errorcode`.
#[export]
pub(crate) extern "C" fn MPI_Abort(comm: Handle, errorcode: c_int) -> c_int {
    match handles::comm(comm).or_else(|_| handles::comm(handles::handle(handles::COMM_WORLD))) {
        Ok(c) => c.comm.abort(errorcode),
        Err(_) => std::process::exit(errorcode),
    }
}

/// `MPI_Get_version` (§9.1.1): 5.0, the standard whose ABI this is.
///
/// # Safety
///
/// Both pointers must be valid for a write of one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Get_version(
    version: *mut c_int,
    subversion: *mut c_int,
) -> c_int {
    boundary_any_thread("MPI_Get_version", || {
        // SAFETY: the caller passes valid output pointers.
        unsafe {
            ffi::out(version, 5)?;
            ffi::out(subversion, 0)
        }
    })
}

/// `MPI_Abi_get_version` (§20.2): version 1.0 of the standard ABI.
///
/// # Safety
///
/// Both pointers must be valid for a write of one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Abi_get_version(major: *mut c_int, minor: *mut c_int) -> c_int {
    boundary_any_thread("MPI_Abi_get_version", || {
        // SAFETY: the caller passes valid output pointers.
        unsafe {
            ffi::out(major, 1)?;
            ffi::out(minor, 0)
        }
    })
}

/// `MPI_Get_library_version` (§9.1.1), at most
/// `MPI_MAX_LIBRARY_VERSION_STRING` (8192) bytes with the NUL.
///
/// # Safety
///
/// `version` must be valid for 8192 bytes of writes, `len` for one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Get_library_version(
    version: *mut c_char,
    len: *mut c_int,
) -> c_int {
    boundary_any_thread("MPI_Get_library_version", || {
        let text = format!(
            "o2g MPI {} (MPI 5.0 standard ABI 1.0, a subset; MPI_THREAD_SINGLE; transport {})",
            env!("CARGO_PKG_VERSION"),
            thread::transport().unwrap_or("chosen at MPI_Init by O2G_TRANSPORT")
        );
        // SAFETY: the caller passes the buffer and length pointers.
        unsafe { ffi::write_str(version, 8192, &text, len) }
    })
}

/// `MPI_Get_processor_name` (§9.1.2): this host's name, at most
/// `MPI_MAX_PROCESSOR_NAME` (256) bytes with the NUL.
///
/// # Safety
///
/// `name` must be valid for 256 bytes of writes, `len` for one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Get_processor_name(
    name: *mut c_char,
    len: *mut c_int,
) -> c_int {
    boundary("MPI_Get_processor_name", none(), || {
        // SAFETY: the caller passes the buffer and length pointers.
        unsafe { ffi::write_str(name, 256, &ffi::hostname(), len) }
    })
}

/// `MPI_Wtime` (§9.6.1): seconds since a fixed point in this process.
#[export]
pub(crate) extern "C" fn MPI_Wtime() -> c_double {
    mpi::wtime()
}

/// `MPI_Wtick` (§9.6.1): the resolution of `MPI_Wtime`.
#[export]
pub(crate) extern "C" fn MPI_Wtick() -> c_double {
    mpi::wtick()
}
