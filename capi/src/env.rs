//! The environment (MPI 5.0 §11.2 "The World Model", §9.1 version
//! inquiries, §9.6 timers, §11.4 hardware resource information, §11.6
//! thread support; `MPI_Abi_get_version` and `MPI_Abi_get_info` of
//! §20.2).

use o2g_mpi_abi_macros::export;
use std::cell::Cell;
use std::ffi::{c_char, c_double, c_int};

use crate::comm::CommMeta;
use crate::error::{
    boundary, boundary_any_thread, boundary_init, Code, Res, MPI_ERR_ARG, MPI_ERR_OTHER,
};
use crate::ffi;
use crate::handles::{self, CommEntry, ErrMode, Handle, Phase};
use crate::thread;

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
    crate::group::set_world_rank(me);
    crate::attr::set_universe_size(world.size());
    handles::with(|s| {
        let fatal = || Cell::new(ErrMode::Fatal);
        s.add_comm(
            handles::COMM_WORLD,
            CommEntry {
                comm: world,
                errh: fatal(),
                meta: CommMeta::named("MPI_COMM_WORLD"),
            },
        );
        s.add_comm(
            handles::COMM_SELF,
            CommEntry {
                comm: own,
                errh: fatal(),
                meta: CommMeta::named("MPI_COMM_SELF"),
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

/// `MPI_Init_thread` (§11.6.1): provides what is required, up to
/// `MPI_THREAD_MULTIPLE` (`thread.rs`). A `required` that is no level,
/// like any failure, is fatal, as for `MPI_Init`.
///
/// # Safety
///
/// `provided` must be valid for a write of one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Init_thread(
    _argc: *mut c_int,
    _argv: *mut *mut *mut c_char,
    required: c_int,
    provided: *mut c_int,
) -> c_int {
    boundary_init("MPI_Init_thread", || {
        let level = thread::provide(required).ok_or_else(|| {
            crate::error::explained(
                crate::error::MPI_ERR_ARG,
                &format!("required = {required} is not a thread level (MPI_THREAD_SINGLE, FUNNELED, SERIALIZED or MULTIPLE)"),
            )
        })?;
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(provided, level) }?;
        init()?;
        if level == thread::THREAD_MULTIPLE {
            thread::take_turns();
        }
        thread::set_provided(level);
        Ok(())
    })
}

/// `MPI_Query_thread` (§11.6.1): the level `MPI_Init_thread` provided.
///
/// # Safety
///
/// `provided` must be valid for a write of one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Query_thread(provided: *mut c_int) -> c_int {
    boundary_any_thread("MPI_Query_thread", || {
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(provided, thread::provided()) }
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

/// `MPI_Finalize` (§11.2.2): first deletes the attributes of
/// `MPI_COMM_SELF` (last set first, calling their delete callbacks, as
/// if the communicator were freed), then releases every handle, delivers
/// what is queued and synchronises with the other processes.
#[export]
pub(crate) extern "C" fn MPI_Finalize() -> c_int {
    boundary("MPI_Finalize", none(), || {
        let own = handles::handle(handles::COMM_SELF);
        let meta = handles::comm(own)?.meta.clone();
        crate::attr::delete_all(own, &meta)?;
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

/// `MPI_Abi_get_info` (§20.2): a new info object with the sizes, in
/// bytes, of this ABI's integer types: `mpi_aint_size`, `mpi_count_size`
/// and `mpi_offset_size` (8 each on LP64). May be called at any time,
/// before `MPI_Init` too.
///
/// # Safety
///
/// `info` must be valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Abi_get_info(info: *mut Handle) -> c_int {
    boundary_any_thread("MPI_Abi_get_info", || {
        if info.is_null() {
            return Err(Code(MPI_ERR_ARG));
        }
        // `MPI_Aint` is an `isize`, `MPI_Count` and `MPI_Offset` `i64`s.
        let sizes = [
            ("mpi_aint_size", std::mem::size_of::<isize>()),
            ("mpi_count_size", std::mem::size_of::<i64>()),
            ("mpi_offset_size", std::mem::size_of::<i64>()),
        ];
        let pairs = sizes
            .iter()
            .map(|(k, n)| ((*k).to_owned(), n.to_string()))
            .collect();
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(info, crate::info::new_info(pairs)) }
    })
}

/// The number of processors the system has online (`sysconf(3)`), if it
/// says.
fn online_cpus() -> Option<usize> {
    // SAFETY: `sysconf` only reads the name it is given.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    usize::try_from(n).ok().filter(|&n| n > 0)
}

/// `MPI_Get_hw_resource_info` (§11.4): a new info object describing the
/// hardware this process runs on, as far as o2g knows it:
/// `mpi_hw_resource_type` is `mpi_shared_memory` (the one resource type
/// `MPI_Comm_split_type` with `MPI_COMM_TYPE_HW_GUIDED` groups by here),
/// `host` the host's name, `num_cpus_online` the processors the system
/// has online and `num_cpus_available` those this process may run on
/// (its CPU affinity); a count the system does not give is left out.
///
/// # Safety
///
/// `hw_info` must be valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Get_hw_resource_info(hw_info: *mut Handle) -> c_int {
    boundary_any_thread("MPI_Get_hw_resource_info", || {
        if hw_info.is_null() {
            return Err(Code(MPI_ERR_ARG));
        }
        let mut pairs = vec![
            (
                "mpi_hw_resource_type".to_owned(),
                "mpi_shared_memory".to_owned(),
            ),
            ("host".to_owned(), ffi::hostname()),
        ];
        if let Some(n) = online_cpus() {
            pairs.push(("num_cpus_online".to_owned(), n.to_string()));
        }
        if let Ok(n) = std::thread::available_parallelism() {
            pairs.push(("num_cpus_available".to_owned(), n.to_string()));
        }
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(hw_info, crate::info::new_info(pairs)) }
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
            "o2g MPI {} (MPI 5.0 standard ABI 1.0, a subset; up to MPI_THREAD_MULTIPLE; transport {})",
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

/// `MPI_Is_thread_main` (§11.6.1): whether the caller is the thread that
/// initialised MPI; any thread may ask.
///
/// # Safety
///
/// `flag` must be valid for a write of one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Is_thread_main(flag: *mut c_int) -> c_int {
    boundary_any_thread("MPI_Is_thread_main", || {
        let main = thread::is_main();
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(flag, c_int::from(main)) }
    })
}

/// `MPI_Pcontrol` (§15.2.4): profiling control, which this library
/// leaves to profiling tools: it does nothing. The C prototype is
/// variadic; this definition reads only `level`, which the C calling
/// conventions of the supported targets (x86-64 and AArch64 Linux) pass
/// where a variadic callee finds it, and ignores the rest.
#[export]
pub(crate) extern "C" fn MPI_Pcontrol(level: c_int) -> c_int {
    let _ = level;
    crate::error::MPI_SUCCESS
}

/// `MPI_Alloc_mem` (§9.2): `size` bytes from `malloc` (at least one, so
/// that every call has its own address); `info` is not used but must be
/// an info object or `MPI_INFO_NULL`. `baseptr` is a `void **`.
///
/// # Safety
///
/// `baseptr` must be valid for a write of one pointer.
#[export]
pub(crate) unsafe extern "C" fn MPI_Alloc_mem(
    size: isize,
    info: Handle,
    baseptr: *mut std::ffi::c_void,
) -> c_int {
    boundary("MPI_Alloc_mem", none(), || {
        handles::running()?;
        crate::info::pairs(info, true)?;
        let n = usize::try_from(size).map_err(|_| Code(crate::error::MPI_ERR_SIZE))?;
        // SAFETY: malloc of any size is sound; the result is checked.
        let p = unsafe { libc::malloc(n.max(1)) };
        if p.is_null() {
            return Err(Code(crate::error::MPI_ERR_NO_MEM));
        }
        // SAFETY: the caller passes a valid `void **`.
        unsafe { ffi::out(baseptr.cast::<*mut std::ffi::c_void>(), p) }.inspect_err(|_| {
            // SAFETY: `p` came from malloc just above and is not used again.
            unsafe { libc::free(p) }
        })
    })
}

/// `MPI_Free_mem` (§9.2): frees memory from `MPI_Alloc_mem`.
///
/// # Safety
///
/// `base` is null or a pointer `MPI_Alloc_mem` returned and not yet
/// freed.
#[export]
pub(crate) unsafe extern "C" fn MPI_Free_mem(base: *mut std::ffi::c_void) -> c_int {
    boundary("MPI_Free_mem", none(), || {
        // SAFETY: by this function's contract, `base` came from malloc
        // (in MPI_Alloc_mem) or is null.
        unsafe { libc::free(base) };
        Ok(())
    })
}
