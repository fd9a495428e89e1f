//! Integer handles for Fortran (MPI 5.0 §19.3.4, "Transfer of Handles")
//! and the C functions that convert them (`MPI_Comm_c2f`, `MPI_Comm_f2c`,
//! ... and `MPI_Status_c2f`/`MPI_Status_f2c`).
//!
//! A predefined handle is its standard value in both languages. A handle
//! this library creates has a value that only grows (`table.rs`), so it
//! would outgrow a Fortran `INTEGER` in a long run that makes many
//! requests; Fortran gets a slot number instead, from `FIRST_SLOT` up,
//! and a slot is reused once the generated bindings see its object go
//! (a free, a completed request, a received message). A slot taken by C
//! code's `MPI_Xxx_c2f` for an object C then frees stays mapped to the
//! dead value, which no object will have again: nothing but the slot is
//! lost.

use std::collections::{HashMap, VecDeque};
use std::ffi::{c_int, c_void};
use std::sync::{LazyLock, Mutex};

use o2g_mpi_abi_macros::export;

use crate::error::{boundary_any_thread, Code, MPI_ERR_ARG};
use crate::handles::{handle, value, Handle, FIRST_DYNAMIC};

/// Fortran's default `INTEGER` (`MPI_Fint`).
pub(crate) type Fint = c_int;

/// The first slot; below it, a Fortran handle is a predefined one.
const FIRST_SLOT: Fint = FIRST_DYNAMIC as Fint;

/// What `f2c` gives for an integer that names no object: a value no
/// handle has, so the C function reports the handle invalid.
const NO_OBJECT: usize = usize::MAX & !0xf;

/// The slots: the C value of each (0 when free), and back.
struct Slots {
    c_of: Vec<usize>,
    f_of: HashMap<usize, Fint>,
    free: VecDeque<usize>,
}

static SLOTS: LazyLock<Mutex<Slots>> = LazyLock::new(|| {
    Mutex::new(Slots {
        c_of: Vec::new(),
        f_of: HashMap::new(),
        free: VecDeque::new(),
    })
});

fn slots() -> std::sync::MutexGuard<'static, Slots> {
    // A panic elsewhere cannot leave the maps half-updated in a way that
    // matters more than ending the job would: take the lock over.
    SLOTS.lock().unwrap_or_else(|e| e.into_inner())
}

/// The Fortran integer of handle `h`.
pub(crate) fn c2f(h: Handle) -> Fint {
    let v = value(h);
    if v < FIRST_DYNAMIC {
        return v as Fint;
    }
    let mut s = slots();
    if let Some(&f) = s.f_of.get(&v) {
        return f;
    }
    let i = match s.free.pop_front() {
        Some(i) => i,
        None => {
            s.c_of.push(0);
            s.c_of.len() - 1
        }
    };
    let Ok(f) = Fint::try_from(i).map(|i| i.saturating_add(FIRST_SLOT)) else {
        eprintln!("o2g: more than 2^31 live MPI objects for Fortran (aborting the job)");
        crate::env::abort_job(crate::error::MPI_ERR_INTERN)
    };
    s.c_of[i] = v;
    s.f_of.insert(v, f);
    f
}

/// The handle of Fortran integer `f`.
pub(crate) fn f2c(f: Fint) -> Handle {
    if f < FIRST_SLOT {
        // Predefined, or (negative) nothing: the C side checks.
        return handle(f as u32 as usize);
    }
    let s = slots();
    match s.c_of.get((f - FIRST_SLOT) as usize) {
        Some(&v) if v != 0 => handle(v),
        _ => handle(NO_OBJECT),
    }
}

/// The integer for handle `after` that a call returned in place of
/// `before`, which Fortran passed as `f`: `f` itself if the object is the
/// same, else a new integer, and `f`'s slot is free again (the object
/// was freed, completed or received). The binding has `before` from its
/// own `f2c(f)`, so an unchanged handle costs no lookup.
pub(crate) fn c2f_after(f: Fint, before: Handle, after: Handle) -> Fint {
    if value(before) == value(after) {
        return f;
    }
    if f >= FIRST_SLOT {
        let mut s = slots();
        let i = (f - FIRST_SLOT) as usize;
        if let Some(v) = s.c_of.get(i).copied().filter(|&v| v != 0) {
            s.c_of[i] = 0;
            s.f_of.remove(&v);
            s.free.push_back(i);
        }
    }
    c2f(after)
}

macro_rules! conversions {
    ($($c2f:ident, $f2c:ident;)*) => {$(
        /// Handle → Fortran integer (MPI 5.0 §19.3.4).
        #[export]
        pub(crate) extern "C" fn $c2f(h: Handle) -> Fint {
            c2f(h)
        }

        /// Fortran integer → handle (MPI 5.0 §19.3.4); an integer that names
        /// no object gives a handle every function rejects.
        #[export]
        pub(crate) extern "C" fn $f2c(f: Fint) -> Handle {
            f2c(f)
        }
    )*};
}

conversions! {
    MPI_Comm_c2f, MPI_Comm_f2c;
    MPI_Errhandler_c2f, MPI_Errhandler_f2c;
    MPI_Group_c2f, MPI_Group_f2c;
    MPI_Info_c2f, MPI_Info_f2c;
    MPI_Message_c2f, MPI_Message_f2c;
    MPI_Op_c2f, MPI_Op_f2c;
    MPI_Request_c2f, MPI_Request_f2c;
    MPI_Type_c2f, MPI_Type_f2c;
    MPI_Win_c2f, MPI_Win_f2c;
}

/// The integers of a Fortran status: the C `MPI_Status`, as they are.
const STATUS_INTS: usize = 8;

/// Copies 8 integers from `src` to `dst` for `name`, `MPI_ERR_ARG` if
/// either is null.
///
/// # Safety
///
/// Non-null pointers are valid for 8 `int`s.
unsafe fn copy_status(name: &str, src: *const Fint, dst: *mut Fint) -> c_int {
    boundary_any_thread(name, || {
        if src.is_null() || dst.is_null() {
            return Err(Code(MPI_ERR_ARG));
        }
        // SAFETY: both hold a status (the caller's contract); C and
        // Fortran statuses are the same 8 integers, and distinct objects.
        unsafe { std::ptr::copy(src, dst, STATUS_INTS) };
        Ok(())
    })
}

/// `MPI_Status_c2f` (§19.3.5).
///
/// # Safety
///
/// `c_status` is a status, `f_status` room for `MPI_STATUS_SIZE` integers.
#[export]
pub(crate) unsafe extern "C" fn MPI_Status_c2f(
    c_status: *const c_void,
    f_status: *mut Fint,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { copy_status("MPI_Status_c2f", c_status.cast(), f_status) }
}

/// `MPI_Status_f2c` (§19.3.5).
///
/// # Safety
///
/// `f_status` holds `MPI_STATUS_SIZE` integers, `c_status` is room for a
/// status.
#[export]
pub(crate) unsafe extern "C" fn MPI_Status_f2c(
    f_status: *const Fint,
    c_status: *mut c_void,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { copy_status("MPI_Status_f2c", f_status, c_status.cast()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn predefined_handles_are_their_values() {
        for v in [0x101usize, 0x209, 0x180, 0x3ff] {
            assert_eq!(c2f(handle(v)), v as Fint);
            assert_eq!(value(f2c(v as Fint)), v);
        }
    }

    #[test]
    fn slots_map_both_ways_and_are_reused_after_a_free() {
        let a = handle(0x7000_0000_0010);
        let b = handle(0x7000_0000_0020);
        let fa = c2f(a);
        assert!(fa >= FIRST_SLOT);
        assert_eq!(c2f(a), fa, "the same object keeps its integer");
        assert_eq!(value(f2c(fa)), value(a));
        let fb = c2f(b);
        assert_ne!(fa, fb);
        // `a` is freed: its slot goes, and it now names no object.
        let null = handle(0x180);
        assert_eq!(c2f_after(fa, a, null), 0x180);
        assert_eq!(value(f2c(fa)), NO_OBJECT);
        // An unchanged handle keeps its integer.
        assert_eq!(c2f_after(fb, b, b), fb);
        // A later object can have the freed slot; `b` keeps its own.
        let c = handle(0x7000_0000_0030);
        let fc = c2f(c);
        assert_eq!(value(f2c(fc)), value(c));
        assert_eq!(value(f2c(fb)), value(b));
        assert_eq!(value(f2c(-5)), (-5i32) as u32 as usize);
    }
}
