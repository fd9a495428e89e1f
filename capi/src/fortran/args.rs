//! What the generated bindings do to Fortran arguments besides handles:
//! the sentinels, strings, indices and arrays.
//!
//! The sentinels (`MPI_BOTTOM`, `MPI_IN_PLACE`, `MPI_STATUS_IGNORE`, ...)
//! are variables in common blocks of `mpif.h` (`/O2G_BOTTOM/`, ...), which
//! Fortran passes by address; a binding compares an argument's address
//! with theirs and passes C's value instead. This library defines each
//! block (`o2g_bottom_`, ...). A program's own copy of a block, if the
//! linker gave it one, comes first in the global scope, so the address is
//! taken from `dlsym(RTLD_DEFAULT)` as well as from this library's symbol,
//! and either counts.

use std::cell::UnsafeCell;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::OnceLock;

use super::handles::{f2c, Fint};
use crate::handles::Handle;

/// A common block of `N` integers that only its address matters for.
#[repr(C)]
pub(crate) struct Block<const N: usize>(UnsafeCell<[c_int; N]>);

// SAFETY: nothing reads or writes the contents on the Rust side; only
// the address is used.
unsafe impl<const N: usize> Sync for Block<N> {}

impl<const N: usize> Block<N> {
    const fn new() -> Self {
        Self(UnsafeCell::new([0; N]))
    }
}

macro_rules! blocks {
    ($($sym:ident: $n:literal;)*) => {
        $(
            /// A sentinel's common block (see the module docs).
            #[no_mangle]
            #[allow(non_upper_case_globals)]
            pub(crate) static $sym: Block<$n> = Block::new();
        )*
        /// Each block's symbol name and this library's address of it.
        fn blocks() -> [(&'static CStr, usize); 8] {
            [$((
                // The symbol name, with the NUL dlsym wants.
                match CStr::from_bytes_with_nul(concat!(stringify!($sym), "\0").as_bytes()) {
                    Ok(s) => s,
                    Err(_) => unreachable!(),
                },
                std::ptr::addr_of!($sym).addr(),
            )),*]
        }
    };
}

// The order is `Sentinel`'s.
blocks! {
    o2g_bottom_: 1;
    o2g_in_place_: 1;
    o2g_buffer_automatic_: 1;
    o2g_status_ignore_: 8;
    o2g_statuses_ignore_: 8;
    o2g_errcodes_ignore_: 1;
    o2g_unweighted_: 1;
    o2g_weights_empty_: 1;
}

#[derive(Clone, Copy)]
enum Sentinel {
    Bottom,
    InPlace,
    BufferAutomatic,
    StatusIgnore,
    StatusesIgnore,
    #[allow(dead_code)] // spawn, which takes it, is not exported
    ErrcodesIgnore,
    Unweighted,
    WeightsEmpty,
}

/// Each sentinel's addresses: the global scope's and this library's.
fn addresses() -> &'static [[usize; 2]; 8] {
    static ADDR: OnceLock<[[usize; 2]; 8]> = OnceLock::new();
    ADDR.get_or_init(|| {
        blocks().map(|(name, own)| {
            // SAFETY: `name` is a NUL-terminated symbol name; RTLD_DEFAULT
            // searches the global scope and the result is only compared.
            let global = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
            [global.addr(), own]
        })
    })
}

fn is(p: *const c_void, s: Sentinel) -> bool {
    !p.is_null() && addresses()[s as usize].contains(&p.addr())
}

/// A choice buffer: C's `MPI_BOTTOM`, `MPI_IN_PLACE` or
/// `MPI_BUFFER_AUTOMATIC` for Fortran's, else the buffer.
pub(crate) fn choice(p: *mut c_void) -> *mut c_void {
    if is(p, Sentinel::Bottom) {
        std::ptr::null_mut()
    } else if is(p, Sentinel::InPlace) {
        std::ptr::without_provenance_mut(1)
    } else if is(p, Sentinel::BufferAutomatic) {
        std::ptr::without_provenance_mut(2)
    } else {
        p
    }
}

/// Graph weights: C's `MPI_UNWEIGHTED` (10) or `MPI_WEIGHTS_EMPTY` (11)
/// for Fortran's, else the array.
pub(crate) fn weights(p: *mut Fint) -> *mut c_int {
    if is(p.cast(), Sentinel::Unweighted) {
        std::ptr::without_provenance_mut(10)
    } else if is(p.cast(), Sentinel::WeightsEmpty) {
        std::ptr::without_provenance_mut(11)
    } else {
        p
    }
}

/// A status to write: null (C's `MPI_STATUS_IGNORE`) for Fortran's.
pub(crate) fn status(p: *mut Fint) -> *mut Fint {
    if is(p.cast(), Sentinel::StatusIgnore) {
        std::ptr::null_mut()
    } else {
        p
    }
}

/// Statuses to write: null (C's `MPI_STATUSES_IGNORE`) for Fortran's.
pub(crate) fn statuses(p: *mut Fint) -> *mut Fint {
    if is(p.cast(), Sentinel::StatusesIgnore) {
        std::ptr::null_mut()
    } else {
        p
    }
}

/// A Fortran string as C's: trailing blanks go (§19.1.4), and it ends at
/// the first NUL if it has one.
///
/// # Safety
///
/// `p` is valid for `len` bytes.
pub(crate) unsafe fn str_in(p: *const c_char, len: usize) -> CString {
    let bytes = if p.is_null() {
        &[][..]
    } else {
        // SAFETY: the caller's contract.
        unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) }
    };
    let bytes = bytes.split(|&b| b == 0).next().unwrap_or(&[]);
    let end = bytes.iter().rposition(|&b| b != b' ').map_or(0, |i| i + 1);
    CString::new(&bytes[..end]).unwrap_or_default()
}

/// Room for a string a C function writes (the longest the standard's
/// maxima allow), to be copied to Fortran blank-padded.
pub(crate) struct StrOut(Vec<u8>);

impl StrOut {
    /// `MPI_MAX_LIBRARY_VERSION_STRING`, the largest maximum, and a NUL.
    pub(crate) fn new() -> Self {
        Self(vec![0; 8192 + 1])
    }

    pub(crate) fn as_mut_ptr(&mut self) -> *mut c_char {
        self.0.as_mut_ptr().cast()
    }

    /// Copies the C string to Fortran's `len` bytes at `p`, cut to fit and
    /// padded with blanks.
    ///
    /// # Safety
    ///
    /// `p` is valid for `len` bytes.
    pub(crate) unsafe fn copy_to(&self, p: *mut c_char, len: usize) {
        if p.is_null() {
            return;
        }
        let n = self.0.iter().position(|&b| b == 0).unwrap_or(0).min(len);
        // SAFETY: the caller's contract.
        let dst = unsafe { std::slice::from_raw_parts_mut(p.cast::<u8>(), len) };
        dst[..n].copy_from_slice(&self.0[..n]);
        dst[n..].fill(b' ');
    }
}

/// `n` integers from `p` (none if `p` is null).
///
/// # Safety
///
/// A non-null `p` is valid for `n` integers.
pub(crate) unsafe fn fints(p: *const Fint, n: usize) -> Vec<Fint> {
    if p.is_null() || n == 0 {
        return Vec::new();
    }
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts(p, n) }.to_vec()
}

/// Makes the first `count` indices at `p` 1-based, as Fortran counts
/// (`MPI_UNDEFINED` and other negative values stay).
///
/// # Safety
///
/// `p` is valid for `count` integers when `count` is positive.
pub(crate) unsafe fn one_based(p: *mut Fint, count: Fint) {
    for i in 0..usize::try_from(count).unwrap_or(0) {
        // SAFETY: the caller's contract.
        unsafe {
            if *p.add(i) >= 0 {
                *p.add(i) += 1;
            }
        }
    }
}

extern "C" {
    fn PMPI_Comm_test_inter(comm: Handle, flag: *mut c_int) -> c_int;
    fn PMPI_Comm_size(comm: Handle, size: *mut c_int) -> c_int;
    fn PMPI_Comm_remote_size(comm: Handle, size: *mut c_int) -> c_int;
    fn PMPI_Comm_rank(comm: Handle, rank: *mut c_int) -> c_int;
    fn PMPI_Topo_test(comm: Handle, status: *mut c_int) -> c_int;
    fn PMPI_Cartdim_get(comm: Handle, ndims: *mut c_int) -> c_int;
    fn PMPI_Graph_neighbors_count(comm: Handle, rank: c_int, n: *mut c_int) -> c_int;
    fn PMPI_Dist_graph_neighbors_count(
        comm: Handle,
        indegree: *mut c_int,
        outdegree: *mut c_int,
        weighted: *mut c_int,
    ) -> c_int;
}

/// How many entries `MPI_ALLTOALLW`'s type arrays have on the
/// communicator Fortran passed: its size, or its remote group's (0 if it
/// is not a communicator; the C function reports that).
///
/// # Safety
///
/// `comm` is valid for one integer.
pub(crate) unsafe fn group_len(comm: *const Fint) -> usize {
    // SAFETY: the caller's contract; the C functions get valid pointers.
    unsafe {
        let c = f2c(*comm);
        let (mut inter, mut n) = (0, 0);
        if PMPI_Comm_test_inter(c, &mut inter) != 0 {
            return 0;
        }
        let rc = if inter != 0 {
            PMPI_Comm_remote_size(c, &mut n)
        } else {
            PMPI_Comm_size(c, &mut n)
        };
        if rc == 0 {
            usize::try_from(n).unwrap_or(0)
        } else {
            0
        }
    }
}

/// `MPI_CART`, `MPI_GRAPH` and `MPI_DIST_GRAPH` (`MPI_Topo_test`).
const CART: c_int = 211;
const GRAPH: c_int = 212;
const DIST_GRAPH: c_int = 213;

/// How many entries the neighbourhood alltoallw's type arrays have on the
/// communicator Fortran passed: its out-degree for the send types
/// (`send`), its in-degree for the receive types; `2 * ndims` on a
/// Cartesian one (0 without a topology: the C function reports that).
///
/// # Safety
///
/// `comm` is valid for one integer.
pub(crate) unsafe fn neighbor_len(comm: *const Fint, send: bool) -> usize {
    // SAFETY: the caller's contract; the C functions get valid pointers.
    unsafe {
        let c = f2c(*comm);
        let mut kind = 0;
        if PMPI_Topo_test(c, &mut kind) != 0 {
            return 0;
        }
        let (mut a, mut b, mut w) = (0, 0, 0);
        let ok = match kind {
            CART => {
                PMPI_Cartdim_get(c, &mut a) == 0 && {
                    a *= 2;
                    b = a;
                    true
                }
            }
            GRAPH => {
                let mut rank = 0;
                PMPI_Comm_rank(c, &mut rank) == 0
                    && PMPI_Graph_neighbors_count(c, rank, &mut a) == 0
                    && {
                        b = a;
                        true
                    }
            }
            DIST_GRAPH => PMPI_Dist_graph_neighbors_count(c, &mut b, &mut a, &mut w) == 0,
            _ => false,
        };
        // `a` is the out-degree, `b` the in-degree.
        let n = if send { a } else { b };
        if ok {
            usize::try_from(n).unwrap_or(0)
        } else {
            0
        }
    }
}
