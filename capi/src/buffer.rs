//! How a (buffer, count, datatype) argument becomes the bytes a message
//! carries (MPI 5.0 §3.2.2, §5.1.11): a datatype's packed data. A
//! contiguous type is its memory: sends read it in place and receives
//! land straight in it (over o2g, with no copy). Any other type is
//! packed into a buffer of the library's own before it is sent, and
//! received into a staging buffer that is unpacked when the receive
//! completes (a nonblocking one in whichever wait or test completes it,
//! `mpi::raw::irecv_staged`); a short or truncated message unpacks only
//! what arrived. Packing and unpacking copy run by run through raw
//! pointers (`ffi::read_at`, `ffi::write_at`), so the gaps of a type are
//! never touched, not even by a reference.

use std::borrow::Cow;
use std::ffi::c_void;
use std::sync::Arc;

use crate::datatype::{count, resolve_committed, Count, Datatype};
use crate::error::{Code, Res, MPI_ERR_COUNT};
use crate::ffi;
use crate::handles::Handle;

/// `count` elements of `dt` at `buf`, checked: the datatype (committed)
/// and the count (an `int` or an `MPI_Count`; `MPI_ERR_COUNT` for one
/// that is negative or whose bytes overflow).
pub(crate) fn typed<N: Count>(n: N, dt: Handle) -> Res<(Arc<Datatype>, usize)> {
    let d = resolve_committed(dt)?;
    let n = count(n)?;
    d.map
        .packed_size(n)
        .ok()
        .filter(|&b| b <= isize::MAX as usize)
        .ok_or(Code(MPI_ERR_COUNT))?;
    Ok((d, n))
}

/// Checks a (count, datatype) argument: `MPI_ERR_TYPE` for an unknown
/// or uncommitted type, `MPI_ERR_COUNT` for a bad count.
pub(crate) fn check<N: Count>(n: N, dt: Handle) -> Res<()> {
    typed(n, dt).map(drop)
}

/// Makes `req` own `data` if it is a packed copy (`mpi::raw::hold`), so
/// that it lives until the send has let go of it.
pub(crate) fn keep(req: mpi::Request<'static>, data: Cow<'_, [u8]>) -> mpi::Request<'static> {
    match data {
        Cow::Borrowed(_) => req,
        Cow::Owned(v) => mpi::raw::hold(req, v),
    }
}

/// Packs `n` elements of `d` at `buf`.
///
/// # Safety
///
/// `buf` holds `n` elements of `d` (valid for reads of their data).
unsafe fn pack(d: &Datatype, n: usize, buf: *const c_void) -> Res<Vec<u8>> {
    let len = d.map.packed_size(n).map_err(|_| Code(MPI_ERR_COUNT))?;
    let mut out = vec![0u8; len];
    d.map.for_each_run(n, len, |off, r| {
        // SAFETY: every run lies in the caller's elements (contract).
        unsafe { ffi::read_at(buf, off, &mut out[r]) }
    });
    Ok(out)
}

/// The bytes to send for `count` elements of `dt` at `buf`: the user's
/// memory for a contiguous type, else a packed copy.
///
/// # Safety
///
/// `buf` holds `count` elements of `dt` for `'a`.
pub(crate) unsafe fn send<'a, N: Count>(
    buf: *const c_void,
    n: N,
    dt: Handle,
) -> Res<Cow<'a, [u8]>> {
    let (d, n) = typed(n, dt)?;
    // SAFETY: by the caller's contract.
    unsafe { send_typed(&d, n, buf) }
}

/// [`send`] for a resolved datatype.
///
/// # Safety
///
/// As for [`send`].
pub(crate) unsafe fn send_typed<'a>(
    d: &Datatype,
    n: usize,
    buf: *const c_void,
) -> Res<Cow<'a, [u8]>> {
    match d.map.contiguous_range(n) {
        Some((_, 0)) => Ok(Cow::Borrowed(&[])),
        // SAFETY: the elements' data are these `len` bytes (contract).
        Some((off, len)) => Ok(Cow::Borrowed(unsafe {
            ffi::bytes(ffi::offset(buf, off).cast(), len)
        }?)),
        // SAFETY: by the caller's contract.
        None => Ok(Cow::Owned(unsafe { pack(d, n, buf) }?)),
    }
}

/// Where received data go in the user's memory, for unpacking.
pub(crate) struct Unpack {
    d: Arc<Datatype>,
    n: usize,
    base: *mut c_void,
}

impl Unpack {
    /// Writes the packed `data` (at most `n` elements' worth) into the
    /// elements.
    pub(crate) fn apply(&self, data: &[u8]) {
        self.d.map.for_each_run(self.n, data.len(), |off, r| {
            // SAFETY: `Unpack` is only made by `recv` and `irecv`, whose
            // callers keep the elements' memory valid and ours until the
            // receive completes, which is when this runs.
            unsafe { ffi::write_at(self.base, off, &data[r]) }
        });
    }
}

/// A receive buffer: the user's memory for a contiguous type, else a
/// staging buffer to unpack.
pub(crate) enum Recv<'a> {
    Direct(&'a mut [u8]),
    Staged(Vec<u8>, Unpack),
}

impl Recv<'_> {
    /// The bytes a message is received into.
    pub(crate) fn bytes(&mut self) -> &mut [u8] {
        match self {
            Recv::Direct(b) => b,
            Recv::Staged(v, _) => v,
        }
    }

    /// Completes the receive of `received` bytes: unpacks them unless
    /// they are in place already.
    pub(crate) fn finish(self, received: usize) {
        if let Recv::Staged(v, u) = self {
            u.apply(&v[..received.min(v.len())]);
        }
    }
}

/// The room to receive `n` elements of `d` (resolved by [`typed`]) at
/// `buf`.
///
/// # Safety
///
/// `buf` is valid for writes of `n` elements of `d`, and not accessed
/// otherwise, for `'a` (until [`Recv::finish`]).
pub(crate) unsafe fn recv_typed<'a>(d: Arc<Datatype>, n: usize, buf: *mut c_void) -> Res<Recv<'a>> {
    match d.map.contiguous_range(n) {
        Some((_, 0)) => Ok(Recv::Direct(&mut [])),
        Some((off, len)) => {
            let p = ffi::offset(buf, off).cast_mut().cast();
            // SAFETY: the elements' data are these `len` bytes (contract).
            Ok(Recv::Direct(unsafe { ffi::bytes_mut(p, len) }?))
        }
        None => {
            let len = d.map.packed_size(n).map_err(|_| Code(MPI_ERR_COUNT))?;
            Ok(Recv::Staged(vec![0u8; len], Unpack { d, n, base: buf }))
        }
    }
}

/// The bytes a finished receive delivered (a truncated one: what fit).
pub(crate) fn received(r: &mpi::Result<mpi::Status>) -> usize {
    match r {
        Ok(s) => s.count_bytes(),
        Err(mpi::Error::Truncated { capacity, .. }) => *capacity,
        Err(_) => 0,
    }
}

/// `MPI_Irecv` of `count` elements of `dt` at `buf` from `src` with `tag`
/// (the `mpi` crate's wildcards): in place for a contiguous type, else
/// staged and unpacked when the request completes.
///
/// # Safety
///
/// `buf` is valid for writes of `count` elements of `dt`, and not
/// accessed otherwise, until the request completes or is freed.
pub(crate) unsafe fn irecv<N: Count>(
    comm: &mpi::Communicator,
    buf: *mut c_void,
    n: N,
    dt: Handle,
    src: i32,
    tag: i32,
) -> Res<mpi::Request<'static>> {
    let (d, n) = typed(n, dt)?;
    // SAFETY: by the caller's contract.
    unsafe { irecv_typed(comm, buf, d, n, src, tag) }
}

/// [`irecv`] for a resolved datatype (a persistent receive keeps its
/// datatype, which the program may free meanwhile).
///
/// # Safety
///
/// As for [`irecv`].
pub(crate) unsafe fn irecv_typed(
    comm: &mpi::Communicator,
    buf: *mut c_void,
    d: Arc<Datatype>,
    n: usize,
    src: i32,
    tag: i32,
) -> Res<mpi::Request<'static>> {
    // SAFETY: by the caller's contract (the slice is not kept).
    match unsafe { recv_typed(d, n, buf) }? {
        Recv::Direct(b) => {
            let (p, len) = (b.as_mut_ptr(), b.len());
            // SAFETY: the caller keeps these bytes for the request until
            // it completes or is freed (MPI §3.7.2).
            Ok(unsafe { mpi::raw::irecv(comm, p, len, src, tag) }?)
        }
        Recv::Staged(v, u) => {
            let unpack = Box::new(move |data: &[u8]| u.apply(data));
            Ok(mpi::raw::irecv_staged(comm, v.len(), src, tag, unpack)?)
        }
    }
}

/// `MPI_Imrecv` of a message into a staging buffer, unpacked into the
/// user's elements when the request completes.
pub(crate) fn imrecv_staged(msg: mpi::Message, r: Recv<'_>) -> mpi::Request<'static> {
    match r {
        Recv::Staged(v, u) => {
            mpi::raw::imrecv_staged(msg, v.len(), Box::new(move |data: &[u8]| u.apply(data)))
        }
        // SAFETY: a direct buffer is the caller's, who keeps it for the
        // request until it completes (MPI §3.8.3).
        Recv::Direct(b) => unsafe { mpi::raw::imrecv(msg, b.as_mut_ptr(), b.len()) },
    }
}
