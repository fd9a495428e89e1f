//! Collective operations (MPI 5.0 chapter 6) on the `mpi` crate's
//! collectives over bytes: element counts and displacements become byte
//! counts and offsets (the extent of the datatype times the count), and
//! reductions get the byte-level closure of `op.rs`. `MPI_IN_PLACE`
//! (§6.2.1) is honoured where the standard allows it, by taking the
//! contribution from the receive buffer.

use std::ffi::{c_int, c_void};

use crate::datatype::{self, buffer_len};
use crate::error::{boundary, Code, Res, MPI_ERR_ARG, MPI_ERR_BUFFER, MPI_ERR_COUNT, MPI_ERR_ROOT};
use crate::ffi::{self, is_in_place};
use crate::handles::{self, CommEntry, Handle};
use crate::op;

/// Per-rank byte counts, byte offsets, and the buffer length they need.
type Layout = (Vec<usize>, Vec<usize>, usize);

/// Computes a [`Layout`] for a communicator of the given size.
type LayoutFn<'a> = &'a dyn Fn(usize) -> Res<Layout>;

/// The root argument, checked against the communicator (`MPI_ERR_ROOT`).
fn root_of(c: &CommEntry, root: c_int) -> Res<i32> {
    if (0..c.comm.size()).contains(&root) {
        Ok(root)
    } else {
        Err(Code(MPI_ERR_ROOT))
    }
}

/// Per-rank blocks from element counts and displacements: byte counts,
/// byte offsets and the buffer length they need.
fn blocks(counts: &[c_int], displs: &[c_int], extent: usize) -> Res<Layout> {
    let mut c = Vec::with_capacity(counts.len());
    let mut d = Vec::with_capacity(counts.len());
    let mut end = 0usize;
    for (&n, &o) in counts.iter().zip(displs) {
        let n = datatype::count(n)?
            .checked_mul(extent)
            .ok_or(Code(MPI_ERR_COUNT))?;
        let o = usize::try_from(o)
            .map_err(|_| Code(MPI_ERR_ARG))?
            .checked_mul(extent)
            .ok_or(Code(MPI_ERR_ARG))?;
        end = end.max(o.checked_add(n).ok_or(Code(MPI_ERR_ARG))?);
        c.push(n);
        d.push(o);
    }
    Ok((c, d, end))
}

/// `p` equal blocks of `n` bytes.
fn uniform(p: usize, n: usize) -> (Vec<usize>, Vec<usize>) {
    (vec![n; p], (0..p).map(|i| i * n).collect())
}

fn total(p: usize, n: usize) -> Res<usize> {
    p.checked_mul(n).ok_or(Code(MPI_ERR_COUNT))
}

/// The counts and displacements arrays of a `v` collective.
///
/// # Safety
///
/// Non-null pointers are valid for `p` `int`s each.
unsafe fn vector(
    counts: *const c_int,
    displs: *const c_int,
    p: usize,
    extent: usize,
) -> Res<Layout> {
    // SAFETY: by the caller's contract.
    let (c, d) = unsafe { (ffi::array(counts, p)?, ffi::array(displs, p)?) };
    blocks(c, d, extent)
}

/// `MPI_Barrier` (§6.3).
#[no_mangle]
pub(crate) extern "C" fn MPI_Barrier(comm: Handle) -> c_int {
    boundary("MPI_Barrier", comm, || {
        Ok(handles::comm(comm)?.comm.barrier()?)
    })
}

/// `MPI_Bcast` (§6.4).
///
/// # Safety
///
/// `buf` must be valid for `count` elements of `dt`.
#[no_mangle]
pub(crate) unsafe extern "C" fn MPI_Bcast(
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    root: c_int,
    comm: Handle,
) -> c_int {
    boundary("MPI_Bcast", comm, || {
        let c = handles::comm(comm)?;
        let root = root_of(&c, root)?;
        let (len, _) = buffer_len(count, dt)?;
        // SAFETY: the caller's buffer holds `count` elements.
        let data = unsafe { ffi::bytes_mut(buf, len) }?;
        Ok(c.comm.broadcast_into(data, root)?)
    })
}

/// `MPI_Reduce` (§6.9.1); `MPI_IN_PLACE` as `sendbuf` at the root.
///
/// # Safety
///
/// `sendbuf` (unless `MPI_IN_PLACE`) and, at the root, `recvbuf` must be
/// valid for `count` elements of `dt`.
#[no_mangle]
pub(crate) unsafe extern "C" fn MPI_Reduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    dt: Handle,
    opr: Handle,
    root: c_int,
    comm: Handle,
) -> c_int {
    boundary("MPI_Reduce", comm, || {
        let c = handles::comm(comm)?;
        let root = root_of(&c, root)?;
        let (len, t) = buffer_len(count, dt)?;
        let f = op::reducer(opr, t, dt)?;
        let op = mpi::UserOperation::commutative(|a: &[u8], b: &mut [u8]| f(a, b));
        let at_root = c.comm.rank() == root;
        let recv = if at_root {
            // SAFETY: the root's receive buffer holds `count` elements.
            Some(unsafe { ffi::bytes_mut(recvbuf, len) }?)
        } else {
            None
        };
        let copy;
        let send: &[u8] = match (is_in_place(sendbuf), recv.as_deref()) {
            (true, Some(r)) => {
                copy = r.to_vec();
                &copy
            }
            (true, None) => return Err(Code(MPI_ERR_BUFFER)),
            // SAFETY: the caller's send buffer holds `count` elements.
            (false, _) => unsafe { ffi::bytes(sendbuf, len) }?,
        };
        Ok(c.comm.reduce_into(send, recv, &op, root)?)
    })
}

/// `MPI_Allreduce` (§6.9.6); `MPI_IN_PLACE` as `sendbuf`.
///
/// # Safety
///
/// `sendbuf` (unless `MPI_IN_PLACE`) and `recvbuf` must be valid for
/// `count` elements of `dt`.
#[no_mangle]
pub(crate) unsafe extern "C" fn MPI_Allreduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    dt: Handle,
    opr: Handle,
    comm: Handle,
) -> c_int {
    boundary("MPI_Allreduce", comm, || {
        let c = handles::comm(comm)?;
        let (len, t) = buffer_len(count, dt)?;
        let f = op::reducer(opr, t, dt)?;
        let op = mpi::UserOperation::commutative(|a: &[u8], b: &mut [u8]| f(a, b));
        // SAFETY: the caller's receive buffer holds `count` elements.
        let recv = unsafe { ffi::bytes_mut(recvbuf, len) }?;
        let copy;
        let send: &[u8] = if is_in_place(sendbuf) {
            copy = recv.to_vec();
            &copy
        } else {
            // SAFETY: the caller's send buffer holds `count` elements.
            unsafe { ffi::bytes(sendbuf, len) }?
        };
        Ok(c.comm.all_reduce_into(send, recv, &op)?)
    })
}

/// The root's side of a gather: the receive buffer and blocks, and this
/// process's contribution (`MPI_IN_PLACE`: its block of the receive
/// buffer).
///
/// # Safety
///
/// As for `MPI_Gatherv`.
#[allow(clippy::too_many_arguments)]
unsafe fn gather_common(
    name: &str,
    comm: Handle,
    sendbuf: *const c_void,
    scount: c_int,
    stype: Handle,
    recvbuf: *mut c_void,
    root: c_int,
    layout: LayoutFn<'_>,
) -> c_int {
    boundary(name, comm, || {
        let c = handles::comm(comm)?;
        let root = root_of(&c, root)?;
        let p = c.comm.size() as usize;
        let in_place = is_in_place(sendbuf);
        if c.comm.rank() != root {
            if in_place {
                return Err(Code(MPI_ERR_BUFFER));
            }
            let (slen, _) = buffer_len(scount, stype)?;
            // SAFETY: the caller's send buffer holds `scount` elements.
            let send = unsafe { ffi::bytes(sendbuf, slen) }?;
            return Ok(c.comm.gather_varcount_into(send, None, root)?);
        }
        let (counts, displs, need) = layout(p)?;
        // SAFETY: the root's receive buffer covers every block.
        let recv = unsafe { ffi::bytes_mut(recvbuf, need) }?;
        let me = root as usize;
        let copy;
        let send: &[u8] = if in_place {
            copy = recv[displs[me]..displs[me] + counts[me]].to_vec();
            &copy
        } else {
            let (slen, _) = buffer_len(scount, stype)?;
            // SAFETY: the caller's send buffer holds `scount` elements.
            unsafe { ffi::bytes(sendbuf, slen) }?
        };
        Ok(c.comm
            .gather_varcount_into(send, Some((recv, &counts, &displs)), root)?)
    })
}

/// `MPI_Gather` (§6.5); `MPI_IN_PLACE` as `sendbuf` at the root.
///
/// # Safety
///
/// `sendbuf` valid for `sendcount` elements of `sendtype`; at the root,
/// `recvbuf` valid for `size × recvcount` elements of `recvtype`.
#[no_mangle]
pub(crate) unsafe extern "C" fn MPI_Gather(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Handle,
    root: c_int,
    comm: Handle,
) -> c_int {
    let layout = |p: usize| {
        let (n, _) = buffer_len(recvcount, recvtype)?;
        let (c, d) = uniform(p, n);
        Ok((c, d, total(p, n)?))
    };
    // SAFETY: the caller's contract is the one gather_common needs.
    unsafe {
        gather_common(
            "MPI_Gather",
            comm,
            sendbuf,
            sendcount,
            sendtype,
            recvbuf,
            root,
            &layout,
        )
    }
}

/// `MPI_Gatherv` (§6.5); `MPI_IN_PLACE` as `sendbuf` at the root.
///
/// # Safety
///
/// `sendbuf` valid for `sendcount` elements of `sendtype`; at the root,
/// `recvcounts` and `displs` valid for `size` `int`s and `recvbuf` for
/// every block they describe.
#[no_mangle]
pub(crate) unsafe extern "C" fn MPI_Gatherv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: Handle,
    root: c_int,
    comm: Handle,
) -> c_int {
    let layout = |p: usize| {
        let t = datatype::committed(recvtype)?;
        // SAFETY: the root passes `size` counts and displacements.
        unsafe { vector(recvcounts, displs, p, t.extent) }
    };
    // SAFETY: the caller's contract is the one gather_common needs.
    unsafe {
        gather_common(
            "MPI_Gatherv",
            comm,
            sendbuf,
            sendcount,
            sendtype,
            recvbuf,
            root,
            &layout,
        )
    }
}

/// The common part of scatter and scatterv.
///
/// # Safety
///
/// As for `MPI_Scatterv`.
#[allow(clippy::too_many_arguments)]
unsafe fn scatter_common(
    name: &str,
    comm: Handle,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    rcount: c_int,
    rtype: Handle,
    root: c_int,
    layout: LayoutFn<'_>,
) -> c_int {
    boundary(name, comm, || {
        let c = handles::comm(comm)?;
        let root = root_of(&c, root)?;
        let p = c.comm.size() as usize;
        let in_place = is_in_place(recvbuf);
        if c.comm.rank() != root {
            if in_place {
                return Err(Code(MPI_ERR_BUFFER));
            }
            let (rlen, _) = buffer_len(rcount, rtype)?;
            // SAFETY: the caller's receive buffer holds `rcount` elements.
            let recv = unsafe { ffi::bytes_mut(recvbuf, rlen) }?;
            return Ok(c.comm.scatter_varcount_into(None, recv, root)?);
        }
        let (counts, displs, need) = layout(p)?;
        // SAFETY: the root's send buffer covers every block.
        let send = unsafe { ffi::bytes(sendbuf, need) }?;
        let me = root as usize;
        let mut scratch;
        let recv: &mut [u8] = if in_place {
            scratch = vec![0u8; counts[me]];
            &mut scratch
        } else {
            let (rlen, _) = buffer_len(rcount, rtype)?;
            // SAFETY: the caller's receive buffer holds `rcount` elements.
            unsafe { ffi::bytes_mut(recvbuf, rlen) }?
        };
        Ok(c.comm
            .scatter_varcount_into(Some((send, &counts, &displs)), recv, root)?)
    })
}

/// `MPI_Scatter` (§6.6); `MPI_IN_PLACE` as `recvbuf` at the root.
///
/// # Safety
///
/// At the root `sendbuf` valid for `size × sendcount` elements of
/// `sendtype`; `recvbuf` valid for `recvcount` elements of `recvtype`.
#[no_mangle]
pub(crate) unsafe extern "C" fn MPI_Scatter(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Handle,
    root: c_int,
    comm: Handle,
) -> c_int {
    let layout = |p: usize| {
        let (n, _) = buffer_len(sendcount, sendtype)?;
        let (c, d) = uniform(p, n);
        Ok((c, d, total(p, n)?))
    };
    // SAFETY: the caller's contract is the one scatter_common needs.
    unsafe {
        scatter_common(
            "MPI_Scatter",
            comm,
            sendbuf,
            recvbuf,
            recvcount,
            recvtype,
            root,
            &layout,
        )
    }
}

/// `MPI_Scatterv` (§6.6); `MPI_IN_PLACE` as `recvbuf` at the root.
///
/// # Safety
///
/// At the root `sendcounts` and `displs` valid for `size` `int`s and
/// `sendbuf` for every block; `recvbuf` valid for `recvcount` elements.
#[no_mangle]
pub(crate) unsafe extern "C" fn MPI_Scatterv(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    displs: *const c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Handle,
    root: c_int,
    comm: Handle,
) -> c_int {
    let layout = |p: usize| {
        let t = datatype::committed(sendtype)?;
        // SAFETY: the root passes `size` counts and displacements.
        unsafe { vector(sendcounts, displs, p, t.extent) }
    };
    // SAFETY: the caller's contract is the one scatter_common needs.
    unsafe {
        scatter_common(
            "MPI_Scatterv",
            comm,
            sendbuf,
            recvbuf,
            recvcount,
            recvtype,
            root,
            &layout,
        )
    }
}

/// The common part of allgather and allgatherv.
///
/// # Safety
///
/// As for `MPI_Allgatherv`.
unsafe fn allgather_common(
    name: &str,
    comm: Handle,
    sendbuf: *const c_void,
    scount: c_int,
    stype: Handle,
    recvbuf: *mut c_void,
    layout: LayoutFn<'_>,
) -> c_int {
    boundary(name, comm, || {
        let c = handles::comm(comm)?;
        let (p, me) = (c.comm.size() as usize, c.comm.rank() as usize);
        let (counts, displs, need) = layout(p)?;
        // SAFETY: the caller's receive buffer covers every block.
        let recv = unsafe { ffi::bytes_mut(recvbuf, need) }?;
        let copy;
        let send: &[u8] = if is_in_place(sendbuf) {
            copy = recv[displs[me]..displs[me] + counts[me]].to_vec();
            &copy
        } else {
            let (slen, _) = buffer_len(scount, stype)?;
            // SAFETY: the caller's send buffer holds `scount` elements.
            unsafe { ffi::bytes(sendbuf, slen) }?
        };
        Ok(c.comm
            .all_gather_varcount_into(send, recv, &counts, &displs)?)
    })
}

/// `MPI_Allgather` (§6.7); `MPI_IN_PLACE` as `sendbuf`.
///
/// # Safety
///
/// `sendbuf` valid for `sendcount` elements of `sendtype`, `recvbuf` for
/// `size × recvcount` elements of `recvtype`.
#[no_mangle]
pub(crate) unsafe extern "C" fn MPI_Allgather(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Handle,
    comm: Handle,
) -> c_int {
    let layout = |p: usize| {
        let (n, _) = buffer_len(recvcount, recvtype)?;
        let (c, d) = uniform(p, n);
        Ok((c, d, total(p, n)?))
    };
    // SAFETY: the caller's contract is the one allgather_common needs.
    unsafe {
        allgather_common(
            "MPI_Allgather",
            comm,
            sendbuf,
            sendcount,
            sendtype,
            recvbuf,
            &layout,
        )
    }
}

/// `MPI_Allgatherv` (§6.7); `MPI_IN_PLACE` as `sendbuf`.
///
/// # Safety
///
/// `sendbuf` valid for `sendcount` elements; `recvcounts` and `displs`
/// for `size` `int`s and `recvbuf` for every block they describe.
#[no_mangle]
pub(crate) unsafe extern "C" fn MPI_Allgatherv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: Handle,
    comm: Handle,
) -> c_int {
    let layout = |p: usize| {
        let t = datatype::committed(recvtype)?;
        // SAFETY: the caller passes `size` counts and displacements.
        unsafe { vector(recvcounts, displs, p, t.extent) }
    };
    // SAFETY: the caller's contract is the one allgather_common needs.
    unsafe {
        allgather_common(
            "MPI_Allgatherv",
            comm,
            sendbuf,
            sendcount,
            sendtype,
            recvbuf,
            &layout,
        )
    }
}

/// The common part of alltoall and alltoallv: `send` and `recv` layouts
/// in bytes; `MPI_IN_PLACE` sends from a copy of the receive buffer with
/// its layout.
///
/// # Safety
///
/// As for `MPI_Alltoallv`.
unsafe fn alltoall_common(
    name: &str,
    comm: Handle,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    send_layout: LayoutFn<'_>,
    recv_layout: LayoutFn<'_>,
) -> c_int {
    boundary(name, comm, || {
        let c = handles::comm(comm)?;
        let p = c.comm.size() as usize;
        let (rc, rd, rneed) = recv_layout(p)?;
        // SAFETY: the caller's receive buffer covers every block.
        let recv = unsafe { ffi::bytes_mut(recvbuf, rneed) }?;
        let copy;
        let (send, sc, sd): (&[u8], Vec<usize>, Vec<usize>) = if is_in_place(sendbuf) {
            copy = recv.to_vec();
            (&copy, rc.clone(), rd.clone())
        } else {
            let (sc, sd, sneed) = send_layout(p)?;
            // SAFETY: the caller's send buffer covers every block.
            (unsafe { ffi::bytes(sendbuf, sneed) }?, sc, sd)
        };
        Ok(c.comm
            .all_to_all_varcount_into(send, &sc, &sd, recv, &rc, &rd)?)
    })
}

/// `MPI_Alltoall` (§6.8); `MPI_IN_PLACE` as `sendbuf`.
///
/// # Safety
///
/// `sendbuf` valid for `size × sendcount` elements of `sendtype`,
/// `recvbuf` for `size × recvcount` elements of `recvtype`.
#[no_mangle]
pub(crate) unsafe extern "C" fn MPI_Alltoall(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Handle,
    comm: Handle,
) -> c_int {
    let sl = |p: usize| {
        let (n, _) = buffer_len(sendcount, sendtype)?;
        let (c, d) = uniform(p, n);
        Ok((c, d, total(p, n)?))
    };
    let rl = |p: usize| {
        let (n, _) = buffer_len(recvcount, recvtype)?;
        let (c, d) = uniform(p, n);
        Ok((c, d, total(p, n)?))
    };
    // SAFETY: the caller's contract is the one alltoall_common needs.
    unsafe { alltoall_common("MPI_Alltoall", comm, sendbuf, recvbuf, &sl, &rl) }
}

/// `MPI_Alltoallv` (§6.8); `MPI_IN_PLACE` as `sendbuf`.
///
/// # Safety
///
/// The count and displacement arrays valid for `size` `int`s each, and
/// the buffers for every block they describe.
#[no_mangle]
pub(crate) unsafe extern "C" fn MPI_Alltoallv(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtype: Handle,
    comm: Handle,
) -> c_int {
    let sl = |p: usize| {
        let t = datatype::committed(sendtype)?;
        // SAFETY: the caller passes `size` counts and displacements.
        unsafe { vector(sendcounts, sdispls, p, t.extent) }
    };
    let rl = |p: usize| {
        let t = datatype::committed(recvtype)?;
        // SAFETY: the caller passes `size` counts and displacements.
        unsafe { vector(recvcounts, rdispls, p, t.extent) }
    };
    // SAFETY: the caller's contract is the one alltoall_common needs.
    unsafe { alltoall_common("MPI_Alltoallv", comm, sendbuf, recvbuf, &sl, &rl) }
}
