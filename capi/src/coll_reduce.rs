//! The reductions of MPI 5.0 chapter 6 beyond reduce and allreduce:
//! `MPI_Scan` (§6.11.1), `MPI_Exscan` (§6.11.2), `MPI_Reduce_scatter`
//! (§6.10.1) and `MPI_Reduce_scatter_block` (§6.10.2), on the `mpi`
//! crate's collectives over bytes, with `MPI_IN_PLACE` (the input is then
//! taken from the receive buffer).

use o2g_mpi_abi_macros::export;
use std::ffi::{c_int, c_void};

use crate::coll::reduction;
use crate::datatype;
use crate::error::{boundary, Code, Res, MPI_ERR_COUNT};
use crate::ffi::{self, is_in_place};
use crate::handles::{self, Handle};

/// The input of a reduction: `sendbuf`'s `len` bytes, or with
/// `MPI_IN_PLACE` a copy of the first `len` bytes of `recv`.
///
/// # Safety
///
/// Unless `MPI_IN_PLACE`, `sendbuf` is valid for reads of `len` bytes.
pub(crate) unsafe fn input<'a>(
    sendbuf: *const c_void,
    len: usize,
    recv: &[u8],
    copy: &'a mut Vec<u8>,
) -> Res<&'a [u8]> {
    if is_in_place(sendbuf) {
        *copy = recv.get(..len).ok_or(Code(MPI_ERR_COUNT))?.to_vec();
        Ok(copy)
    } else {
        // SAFETY: by the caller's contract.
        unsafe { ffi::bytes(sendbuf, len) }
    }
}

/// Scan and exscan.
///
/// # Safety
///
/// As for `MPI_Scan`.
#[allow(clippy::too_many_arguments)]
unsafe fn scan_common(
    name: &str,
    inclusive: bool,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    dt: Handle,
    opr: Handle,
    comm: Handle,
) -> c_int {
    boundary(name, comm, || {
        let c = handles::comm(comm)?;
        let (len, op) = reduction(count, dt, opr)?;
        // SAFETY: the caller's receive buffer holds `count` elements.
        let recv = unsafe { ffi::bytes_mut(recvbuf, len) }?;
        let mut copy = Vec::new();
        // SAFETY: the caller's send buffer holds `count` elements.
        let send = unsafe { input(sendbuf, len, recv, &mut copy) }?;
        if inclusive {
            Ok(c.comm.scan_into(send, recv, &op)?)
        } else {
            Ok(c.comm.exscan_into(send, recv, &op)?)
        }
    })
}

/// `MPI_Scan` (§6.11.1): the reduction of ranks 0 to this one, in rank
/// order; `MPI_IN_PLACE` as `sendbuf`.
///
/// # Safety
///
/// `sendbuf` (unless `MPI_IN_PLACE`) and `recvbuf` valid for `count`
/// elements of `dt`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Scan(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    dt: Handle,
    opr: Handle,
    comm: Handle,
) -> c_int {
    // SAFETY: the caller's contract is scan_common's.
    unsafe { scan_common("MPI_Scan", true, sendbuf, recvbuf, count, dt, opr, comm) }
}

/// `MPI_Exscan` (§6.11.2): the reduction of ranks 0 to this one's
/// predecessor, in rank order (rank 0's `recvbuf` is left as it is);
/// `MPI_IN_PLACE` as `sendbuf`.
///
/// # Safety
///
/// As for `MPI_Scan`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Exscan(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    dt: Handle,
    opr: Handle,
    comm: Handle,
) -> c_int {
    // SAFETY: the caller's contract is scan_common's.
    unsafe { scan_common("MPI_Exscan", false, sendbuf, recvbuf, count, dt, opr, comm) }
}

/// The element counts of a reduce-scatter, from `recvcounts` (`size`
/// ints) or `recvcount` for every rank.
///
/// # Safety
///
/// A non-null `counts` is valid for `p` ints.
pub(crate) unsafe fn scatter_counts(
    counts: Option<*const c_int>,
    block: c_int,
    p: usize,
) -> Res<Vec<usize>> {
    match counts {
        // SAFETY: by the caller's contract.
        Some(ptr) => unsafe { ffi::array(ptr, p) }?
            .iter()
            .map(|&n| datatype::count(n))
            .collect(),
        None => Ok(vec![datatype::count(block)?; p]),
    }
}

/// Reduce-scatter and reduce-scatter-block.
///
/// # Safety
///
/// As for `MPI_Reduce_scatter`.
#[allow(clippy::too_many_arguments)]
unsafe fn reduce_scatter_common(
    name: &str,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    counts: Option<*const c_int>,
    block: c_int,
    dt: Handle,
    opr: Handle,
    comm: Handle,
) -> c_int {
    boundary(name, comm, || {
        let c = handles::comm(comm)?;
        let (p, r) = (c.comm.size() as usize, c.comm.rank() as usize);
        // SAFETY: the caller passes `size` counts.
        let counts = unsafe { scatter_counts(counts, block, p) }?;
        let total = counts.iter().try_fold(0usize, |a, &n| a.checked_add(n));
        let total =
            c_int::try_from(total.ok_or(Code(MPI_ERR_COUNT))?).map_err(|_| Code(MPI_ERR_COUNT))?;
        let (len, op) = reduction(total, dt, opr)?;
        let (extent, _) = datatype::buffer_len(1, dt)?;
        let bytes: Vec<usize> = counts.iter().map(|&n| n * extent).collect();
        let mine = bytes[r];
        let in_place = is_in_place(sendbuf);
        // With MPI_IN_PLACE the receive buffer holds the whole input.
        let room = if in_place { len } else { mine };
        // SAFETY: the caller's receive buffer holds `room` bytes.
        let recv = unsafe { ffi::bytes_mut(recvbuf, room) }?;
        let mut copy = Vec::new();
        // SAFETY: the caller's send buffer holds the whole input.
        let send = unsafe { input(sendbuf, len, recv, &mut copy) }?;
        Ok(c.comm
            .reduce_scatter_into(send, &mut recv[..mine], &bytes, &op)?)
    })
}

/// `MPI_Reduce_scatter` (§6.10.1): the reduction of every rank's
/// `sendbuf` (the sum of `recvcounts` elements), of which rank i gets
/// block i; `MPI_IN_PLACE` as `sendbuf` (the input is in `recvbuf`).
///
/// # Safety
///
/// `recvcounts` valid for `size` ints; `sendbuf` (unless `MPI_IN_PLACE`)
/// valid for their sum of elements of `dt`, `recvbuf` for this rank's
/// count (for their sum with `MPI_IN_PLACE`).
#[export]
pub(crate) unsafe extern "C" fn MPI_Reduce_scatter(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    dt: Handle,
    opr: Handle,
    comm: Handle,
) -> c_int {
    let counts = Some(recvcounts);
    let name = "MPI_Reduce_scatter";
    // SAFETY: the caller's contract is reduce_scatter_common's.
    unsafe { reduce_scatter_common(name, sendbuf, recvbuf, counts, 0, dt, opr, comm) }
}

/// `MPI_Reduce_scatter_block` (§6.10.2): as `MPI_Reduce_scatter` with
/// `recvcount` elements for every rank.
///
/// # Safety
///
/// `sendbuf` (unless `MPI_IN_PLACE`) valid for `size × recvcount`
/// elements of `dt`, `recvbuf` for `recvcount` (`size × recvcount` with
/// `MPI_IN_PLACE`).
#[export]
pub(crate) unsafe extern "C" fn MPI_Reduce_scatter_block(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: c_int,
    dt: Handle,
    opr: Handle,
    comm: Handle,
) -> c_int {
    let name = "MPI_Reduce_scatter_block";
    // SAFETY: the caller's contract is reduce_scatter_common's.
    unsafe { reduce_scatter_common(name, sendbuf, recvbuf, None, recvcount, dt, opr, comm) }
}
