//! The buffers of collective operations (MPI 5.0 chapter 6) with any
//! committed datatype: a collective's send or receive buffer is a
//! [`Side`], one block ("piece") per rank or a single one, each `n`
//! elements of a datatype at a byte offset from the buffer's address.
//!
//! A side whose datatypes are all flat (their elements are exactly the
//! `n × extent` bytes at the address: predefined types, contiguous
//! derived ones) is the user's memory itself, read and written in place
//! with no copy: the bytes from its lowest piece to its highest, as
//! displacements may be negative (§6.8). Any other side is staged: its pieces are packed one
//! after the other (`buffer.rs`'s packed form, as point-to-point messages
//! carry them) before the collective runs, or received into a staging
//! buffer that is unpacked into the user's layout when the collective
//! completes (for a nonblocking one, when its request completes), run by
//! run through raw pointers, so gaps are never touched.
//!
//! Counts and displacements come as `int` or, for the large-count `_c`
//! functions, as `MPI_Count` and `MPI_Aint`: [`Spec`] is generic over
//! both and converts each through one checked conversion.

use std::borrow::Cow;
use std::ffi::{c_int, c_void};
use std::sync::Arc;

use crate::datatype::{count, is_predefined, resolve_committed, Count, Datatype};
use crate::error::{Code, Res, MPI_ERR_ARG, MPI_ERR_COUNT};
use crate::ffi;
use crate::handles::{self, Handle};

/// A displacement argument (`int` or `MPI_Aint`).
pub(crate) fn displ<D: TryInto<isize>>(d: D) -> Res<isize> {
    d.try_into().map_err(|_| Code(MPI_ERR_ARG))
}

/// A count or displacement type of the C interface.
pub(crate) trait Int: Count + TryInto<isize> {}
impl Int for c_int {}
impl Int for i64 {}
impl Int for isize {}
impl Int for usize {}

/// How a caller describes a side of a collective.
#[derive(Clone, Copy)]
pub(crate) enum Spec<C, D> {
    /// `count` elements of a datatype at the buffer: what a process sends
    /// or receives itself.
    One(C, Handle),
    /// `count` elements of a datatype for every rank, one block after the
    /// other (`MPI_Gather`, `MPI_Alltoall`, …).
    Each(C, Handle),
    /// A count and a displacement (in extents) per rank, one datatype
    /// (`MPI_Gatherv`, `MPI_Alltoallv`, …).
    V(*const C, *const D, Handle),
    /// A count, a displacement in bytes and a datatype per rank
    /// (`MPI_Alltoallw`).
    W(*const C, *const D, *const Handle),
}

/// One block of a side: `n` elements of `d`, `off` bytes from the
/// buffer's address.
#[derive(Clone)]
struct Piece {
    off: isize,
    d: Arc<Datatype>,
    n: usize,
}

/// A committed datatype, and whether its elements are their memory
/// (`flat`): `count × extent` bytes from the address, no gap; with
/// `pairs`, a predefined type counts as flat (the reductions keep the
/// C layout of the predefined pair, complex and long double types).
fn typed(h: Handle, pairs: bool) -> Res<(Arc<Datatype>, bool)> {
    let d = resolve_committed(h)?;
    let size = d.map.size();
    let flat = d.map.contiguous_range(2) == Some((0, 2 * size))
        || (pairs && is_predefined(handles::value(h)));
    Ok((d, flat))
}

/// `a × b` for byte lengths, `MPI_ERR_COUNT` past `isize::MAX`.
fn mul(a: usize, b: usize) -> Res<usize> {
    a.checked_mul(b)
        .filter(|&v| v <= isize::MAX as usize)
        .ok_or(Code(MPI_ERR_COUNT))
}

impl<C: Int, D: Int> Spec<C, D> {
    /// The side these arguments describe for a buffer at `base` in a
    /// communicator of `p` processes.
    ///
    /// # Safety
    ///
    /// The non-null arrays are valid for `p` elements each.
    pub(crate) unsafe fn side(self, base: *const c_void, p: usize) -> Res<Side> {
        let mut pieces = Vec::new();
        let mut flat = true;
        let mut add = |h: Handle, n: usize, at: &dyn Fn(isize) -> Res<isize>| -> Res<()> {
            let (d, f) = typed(h, false)?;
            mul(n, d.map.size())?;
            flat &= f;
            let off = at(d.map.extent())?;
            pieces.push(Piece { off, d, n });
            Ok(())
        };
        let scale = |i: isize, e: isize| i.checked_mul(e).ok_or(Code(MPI_ERR_ARG));
        match self {
            Spec::One(n, h) => add(h, count(n)?, &|_| Ok(0))?,
            Spec::Each(n, h) => {
                let n = count(n)?;
                let step = isize::try_from(n).map_err(|_| Code(MPI_ERR_COUNT))?;
                for i in 0..p as isize {
                    add(h, n, &|e| scale(scale(i, step)?, e))?;
                }
            }
            Spec::V(counts, displs, h) => {
                // SAFETY: by the caller's contract.
                let (c, d) = unsafe { (ffi::array(counts, p)?, ffi::array(displs, p)?) };
                for (&n, &o) in c.iter().zip(d) {
                    add(h, count(n)?, &|e| scale(displ(o)?, e))?;
                }
            }
            Spec::W(counts, displs, types) => {
                // SAFETY: by the caller's contract.
                let (c, d, t) = unsafe {
                    (
                        ffi::array(counts, p)?,
                        ffi::array(displs, p)?,
                        ffi::array(types, p)?,
                    )
                };
                for i in 0..p {
                    add(t[i], count(c[i])?, &|_| displ(d[i]))?;
                }
            }
        }
        Side::new(base, pieces, flat)
    }
}

/// `count` elements of `dt` at `buf`, the buffer of a reduction: flat
/// for the predefined types too (their C layout is what the operations
/// read).
pub(crate) fn reduction_side<C: Int>(buf: *const c_void, n: C, dt: Handle) -> Res<Side> {
    let (d, flat) = typed(dt, true)?;
    let n = count(n)?;
    mul(n, d.map.size())?;
    let pieces = vec![Piece { off: 0, d, n }];
    Side::new(buf, pieces, flat)
}

/// One side of a collective: its pieces, and the byte layout the `mpi`
/// crate's collectives see (per-rank byte counts and offsets in a buffer
/// of `len` bytes: the user's memory from `lo` bytes past `base` if
/// `direct`, else the packed data). Resolved once, a side can start a
/// collective any number of times (a persistent one's, cloned at each
/// `MPI_Start`).
#[derive(Clone)]
pub(crate) struct Side {
    base: *const c_void,
    pieces: Vec<Piece>,
    direct: bool,
    /// The lowest byte offset of a non-empty piece (direct sides; 0
    /// otherwise): displacements are relative to the buffer's address
    /// and may be negative (§6.8, §8.6.2), so the memory the collective
    /// sees starts there.
    lo: isize,
    counts: Vec<usize>,
    displs: Vec<usize>,
    len: usize,
}

impl Side {
    fn new(base: *const c_void, pieces: Vec<Piece>, direct: bool) -> Res<Side> {
        let mut counts = Vec::with_capacity(pieces.len());
        let mut displs = Vec::with_capacity(pieces.len());
        let mut len = 0usize;
        let mut lo = 0isize;
        if direct {
            // Each piece's bytes as a range of offsets from `base`; an
            // empty one has none, whatever its displacement. Two passes
            // over the pieces instead of a list of ranges: this runs on
            // every collective call.
            let range = |p: &Piece| -> Res<Option<(isize, isize)>> {
                let extent = usize::try_from(p.d.map.extent()).unwrap_or(0);
                let n = isize::try_from(mul(p.n, extent)?).map_err(|_| Code(MPI_ERR_COUNT))?;
                let end = p.off.checked_add(n).ok_or(Code(MPI_ERR_ARG))?;
                Ok((n > 0).then_some((p.off, end)))
            };
            let mut hi = None::<isize>;
            let mut low = None::<isize>;
            for p in &pieces {
                if let Some((a, b)) = range(p)? {
                    low = Some(low.map_or(a, |l| l.min(a)));
                    hi = Some(hi.map_or(b, |h| h.max(b)));
                }
            }
            lo = low.unwrap_or(0);
            let hi = hi.unwrap_or(0);
            len = hi
                .checked_sub(lo)
                .and_then(|l| usize::try_from(l).ok())
                .ok_or(Code(MPI_ERR_ARG))?;
            for p in &pieces {
                let (a, b) = range(p)?.unwrap_or((lo, lo));
                // In `lo..=hi`, so both fit.
                displs.push((a - lo) as usize);
                counts.push((b - a) as usize);
            }
        } else {
            for p in &pieces {
                let n = mul(p.n, p.d.map.size())?;
                displs.push(len);
                counts.push(n);
                len = len.checked_add(n).ok_or(Code(MPI_ERR_COUNT))?;
            }
        }
        Ok(Side {
            base,
            pieces,
            direct,
            lo,
            counts,
            displs,
            len,
        })
    }

    /// The start of the user's memory a direct side's collective sees.
    fn start_ptr(&self) -> *const c_void {
        ffi::offset(self.base, self.lo).cast()
    }

    /// Whether the side is the user's memory (else it is staged).
    pub(crate) fn direct(&self) -> bool {
        self.direct
    }

    /// Per-rank byte counts.
    pub(crate) fn counts(&self) -> &[usize] {
        &self.counts
    }

    /// Per-rank byte offsets.
    pub(crate) fn displs(&self) -> &[usize] {
        &self.displs
    }

    /// The length of the buffer the collective sees.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The bytes one element of the first piece's datatype takes in the
    /// buffer the collective sees (a reduction's grain): its extent in
    /// the user's memory, its size packed.
    pub(crate) fn grain(&self) -> usize {
        self.pieces.first().map_or(0, |p| {
            if self.direct {
                usize::try_from(p.d.map.extent()).unwrap_or(0)
            } else {
                p.d.map.size()
            }
        })
    }

    /// The bytes the side sends: the user's memory, or its pieces packed.
    ///
    /// # Safety
    ///
    /// The buffer holds every piece's elements (valid for reads) for `'a`.
    pub(crate) unsafe fn input<'a>(&self) -> Res<Cow<'a, [u8]>> {
        if self.direct {
            // SAFETY: by the caller's contract.
            return Ok(Cow::Borrowed(unsafe {
                ffi::bytes(self.start_ptr(), self.len)
            }?));
        }
        let mut out = vec![0u8; self.len];
        for (p, &at) in self.pieces.iter().zip(&self.displs) {
            let base = ffi::offset(self.base, p.off).cast();
            let len = p.n * p.d.map.size();
            p.d.map.for_each_run(p.n, len, |off, r| {
                // SAFETY: every run lies in the piece's elements (contract).
                unsafe { ffi::read_at(base, off, &mut out[at + r.start..at + r.end]) }
            });
        }
        Ok(Cow::Owned(out))
    }

    /// A copy of piece `i` as the collective carries it (a process's own
    /// block, for `MPI_IN_PLACE`).
    ///
    /// # Safety
    ///
    /// As for [`Side::input`].
    pub(crate) unsafe fn input_of(&self, i: usize) -> Res<Vec<u8>> {
        // SAFETY: by the caller's contract.
        let all = unsafe { self.input() }?;
        Ok(all[self.displs[i]..self.displs[i] + self.counts[i]].to_vec())
    }

    /// Unpacks packed `data` (the whole staged layout) into the pieces.
    fn unpack(&self, data: &[u8]) {
        for (p, &at) in self.pieces.iter().zip(&self.displs) {
            let len = p.n * p.d.map.size();
            let base = ffi::offset(self.base, p.off).cast_mut().cast();
            p.d.map.for_each_run(p.n, len, |off, r| {
                // SAFETY: a side is only unpacked by `run` and `start`,
                // whose callers keep the pieces' memory valid and ours
                // until the collective completes, which is when this runs.
                unsafe { ffi::write_at(base, off, &data[at + r.start..at + r.end]) }
            });
        }
    }

    /// Runs a blocking collective `f` that writes this side: into the
    /// user's memory, or into a staging buffer unpacked once `f` has
    /// succeeded.
    ///
    /// # Safety
    ///
    /// The buffer is valid for writes of every piece's elements, and not
    /// accessed otherwise, during the call.
    pub(crate) unsafe fn run<R>(
        self,
        f: impl FnOnce(&mut [u8], &[usize], &[usize]) -> Res<R>,
    ) -> Res<R> {
        if self.direct {
            // SAFETY: by the caller's contract.
            let b = unsafe { ffi::bytes_mut(self.start_ptr().cast_mut(), self.len) }?;
            return f(b, &self.counts, &self.displs);
        }
        let mut v = vec![0u8; self.len];
        let r = f(&mut v, &self.counts, &self.displs)?;
        self.unpack(&v);
        Ok(r)
    }

    /// Starts a nonblocking collective `f` that writes this side: into
    /// the user's memory, or into a staging buffer the request owns and
    /// unpacks when it completes.
    ///
    /// # Safety
    ///
    /// The buffer is valid for writes of every piece's elements, and not
    /// accessed otherwise, until the request completes or is freed.
    pub(crate) unsafe fn start(
        self,
        f: impl FnOnce(&'static mut [u8], &[usize], &[usize]) -> Res<mpi::Request<'static>>,
    ) -> Res<mpi::Request<'static>> {
        if self.direct {
            // SAFETY: by the caller's contract (§6.12: the buffer is the
            // request's until it completes).
            let b = unsafe { ffi::bytes_mut(self.start_ptr().cast_mut(), self.len) }?;
            return f(b, &self.counts, &self.displs);
        }
        let mut v = vec![0u8; self.len];
        // SAFETY: the vector's heap memory moves into the continuation
        // below, which the request owns and drops only after the
        // collective (`Request::then`), and nothing else touches it before
        // the collective completes; moving a `Vec` does not move its heap
        // memory.
        let b = unsafe { ffi::bytes_mut(v.as_mut_ptr().cast(), v.len()) }?;
        let req = f(b, &self.counts, &self.displs)?;
        Ok(req.then(Box::new(move |_| self.unpack(&v))))
    }
}

impl Side {
    /// This side with the pieces `skip` names left empty, so that the
    /// collective neither reads nor writes them: the blocks of a
    /// neighborhood collective's `MPI_PROC_NULL` neighbours (§8.6), which
    /// a staged side would otherwise unpack its zeros into.
    pub(crate) fn skipping(&self, skip: impl Fn(usize) -> bool) -> Res<Side> {
        let pieces = self
            .pieces
            .iter()
            .enumerate()
            .map(|(i, p)| Piece {
                n: if skip(i) { 0 } else { p.n },
                ..p.clone()
            })
            .collect();
        Side::new(self.base, pieces, self.direct)
    }
}

/// Defines an exported MPI function in its `int` form and its large-count
/// `_c` form (MPI 5.0 §2.5.8) from one body: in the parameter types
/// `Count` is `int` or `MPI_Count`, `Disp` `int` or `MPI_Aint`; `as name`
/// binds the function's C name for the body. Each form lives in a module
/// of its own name, where those two aliases are defined.
macro_rules! with_c {
    (
        $(#[$doc:meta])*
        fn $name:ident, $name_c:ident ( $($a:ident : $t:ty),* $(,)? ) as $n:ident => $body:block
    ) => {
        #[allow(non_snake_case)]
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            #[allow(dead_code)]
            type Count = std::ffi::c_int;
            #[allow(dead_code)]
            type Disp = std::ffi::c_int;
            $(#[$doc])*
            #[o2g_mpi_abi_macros::export]
            pub(crate) unsafe extern "C" fn $name($($a: $t),*) -> std::ffi::c_int {
                let $n = stringify!($name);
                $body
            }
        }
        #[allow(non_snake_case)]
        mod $name_c {
            #[allow(unused_imports)]
            use super::*;
            #[allow(dead_code)]
            type Count = i64;
            #[allow(dead_code)]
            type Disp = isize;
            $(#[$doc])*
            ///
            /// The large-count form: `MPI_Count` counts, `MPI_Aint`
            /// displacements.
            #[o2g_mpi_abi_macros::export]
            pub(crate) unsafe extern "C" fn $name_c($($a: $t),*) -> std::ffi::c_int {
                let $n = stringify!($name_c);
                $body
            }
        }
    };
}
pub(crate) use with_c;

/// Defines a collective's blocking, nonblocking (§6.12) and persistent
/// (§6.13) forms, each in its `int` and `_c` form ([`with_c`]), from one
/// parameter list (the blocking one, ending with the communicator `on`
/// names): `prep` binds what every form uses, `blocking` is the blocking
/// body, and `start` makes the starter (`icoll.rs`) that the nonblocking
/// form runs once and the persistent form at every `MPI_Start`. A
/// collective that moves blocks says `moves f / if(args)` instead: its
/// blocking body is `f(name, comm, args)`, its starter `if(args)`. The
/// generated docs cite §6.12 and §6.13 for the nonblocking and persistent
/// forms; a leading `sections "§a", "§b";` cites others (the
/// neighborhood collectives', §8.7 and §8.8).
macro_rules! family {
    (
        sections $nb:literal, $pers:literal;
        $(#[$doc:meta])*
        fn $b:ident, $b_c:ident; $i:ident, $i_c:ident; $p:ident, $p_c:ident
        ($($a:ident: $t:ty),* $(,)?) on $comm:ident as $n:ident
        { $($prep:stmt;)* }
        moves $f:ident / $if:ident ($($arg:ident),*);
    ) => {
        $crate::coll_stage::family! {
            sections $nb, $pers;
            $(#[$doc])*
            fn $b, $b_c; $i, $i_c; $p, $p_c($($a: $t),*) on $comm as $n
            { $($prep;)* }
            blocking {
                // SAFETY: the caller's contract is the collective's.
                unsafe { $f($n, $comm, $($arg),*) }
            }
            start $if($($arg),*);
        }
    };
    (
        sections $nb:literal, $pers:literal;
        $(#[$doc:meta])*
        fn $b:ident, $b_c:ident; $i:ident, $i_c:ident; $p:ident, $p_c:ident
        ($($a:ident: $t:ty),* $(,)?) on $comm:ident as $n:ident
        { $($prep:stmt;)* }
        blocking $block:block
        start $start:expr;
    ) => {
        $crate::coll_stage::with_c! {
            $(#[$doc])*
            fn $b, $b_c($($a: $t),*) as $n => {
                $($prep;)*
                $block
            }
        }
        $crate::coll_stage::with_c! {
            #[doc = concat!("`", stringify!($i), "` (", $nb, "): `", stringify!($b),
                "` as a nonblocking collective, which the wait and test calls complete.")]
            ///
            /// # Safety
            #[doc = concat!("As for `", stringify!($b), "`, the buffers and arrays")]
            /// until the request completes; `req` valid for a write of one
            /// handle.
            fn $i, $i_c($($a: $t,)* req: *mut Handle) as $n => {
                $($prep;)*
                // SAFETY: the caller's contract is the nonblocking
                // collective's.
                unsafe { $crate::icoll::start($n, $comm, req, $start) }
            }
        }
        $crate::coll_stage::with_c! {
            #[doc = concat!("`", stringify!($p), "` (", $pers, "): a persistent `",
                stringify!($i), "`, run anew at each `MPI_Start`; the info")]
            /// argument's hints change nothing.
            ///
            /// # Safety
            #[doc = concat!("As for `", stringify!($b), "`, the buffers whenever the")]
            /// request is active (the arrays are copied at the call); `req`
            /// valid for a write of one handle.
            fn $p, $p_c($($a: $t,)* info: Handle, req: *mut Handle) as $n => {
                let _ = info;
                $($prep;)*
                // SAFETY: the init call's promise (§6.13, §8.8): the
                // buffers are valid whenever the request is active (the
                // arrays are read now).
                let start = unsafe { $start };
                // SAFETY: the caller's contract is the init's.
                unsafe { $crate::pcoll::init($n, $comm, req, start) }
            }
        }
    };
    // The collectives' sections by default.
    ($(#[$doc:meta])* fn $($rest:tt)*) => {
        $crate::coll_stage::family! { sections "§6.12", "§6.13"; $(#[$doc])* fn $($rest)* }
    };
}
pub(crate) use family;

/// [`family`] for several collectives with one parameter list, given
/// once before them (after the sections to cite, if not the
/// collectives').
macro_rules! families {
    (sections $nb:literal, $pers:literal; ($($params:tt)*) on $comm:ident as $n:ident;) => {};
    (
        sections $nb:literal, $pers:literal;
        ($($params:tt)*) on $comm:ident as $n:ident;
        $(#[$doc:meta])*
        fn $b:ident, $b_c:ident; $i:ident, $i_c:ident; $p:ident, $p_c:ident
        { $($prep:stmt;)* }
        blocking $block:block
        start $start:expr;
        $($rest:tt)*
    ) => {
        $crate::coll_stage::family! {
            sections $nb, $pers;
            $(#[$doc])*
            fn $b, $b_c; $i, $i_c; $p, $p_c($($params)*) on $comm as $n
            { $($prep;)* }
            blocking $block
            start $start;
        }
        $crate::coll_stage::families! {
            sections $nb, $pers; ($($params)*) on $comm as $n; $($rest)*
        }
    };
    (
        sections $nb:literal, $pers:literal;
        ($($params:tt)*) on $comm:ident as $n:ident;
        $(#[$doc:meta])*
        fn $b:ident, $b_c:ident; $i:ident, $i_c:ident; $p:ident, $p_c:ident
        { $($prep:stmt;)* }
        moves $f:ident / $if:ident ($($arg:ident),*);
        $($rest:tt)*
    ) => {
        $crate::coll_stage::family! {
            sections $nb, $pers;
            $(#[$doc])*
            fn $b, $b_c; $i, $i_c; $p, $p_c($($params)*) on $comm as $n
            { $($prep;)* }
            moves $f / $if($($arg),*);
        }
        $crate::coll_stage::families! {
            sections $nb, $pers; ($($params)*) on $comm as $n; $($rest)*
        }
    };
    // The collectives' sections by default.
    (($($params:tt)*) on $comm:ident as $n:ident; $($rest:tt)*) => {
        $crate::coll_stage::families! {
            sections "§6.12", "§6.13"; ($($params)*) on $comm as $n; $($rest)*
        }
    };
}
pub(crate) use families;
