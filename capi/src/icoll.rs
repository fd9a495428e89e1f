//! Nonblocking collectives (MPI 5.0 §6.12) on the `mpi` crate's
//! schedules: each call checks its arguments as its blocking form does,
//! starts the collective (its first messages go out at once) and returns
//! a request that `MPI_Wait`, `MPI_Test` and the multiple-completion calls
//! complete like any other. The collective advances whenever the process
//! tests or waits for any request (or blocks in any call that waits); the
//! input is copied when it starts, the output written when it completes.
//! `MPI_IN_PLACE` as the blocking forms allow it.

use o2g_mpi_abi_macros::export;
use std::ffi::{c_int, c_void};

use crate::coll::{reduction, root_of, rooted, w_layout, Blocks, Buf};
use crate::coll_reduce::{input, scatter_counts};
use crate::datatype;
use crate::error::{boundary, Code, Res, MPI_ERR_ARG, MPI_ERR_BUFFER, MPI_ERR_COUNT};
use crate::ffi::{self, is_in_place};
use crate::handles::{self, CommEntry, Handle, ReqEntry};

/// Starts a nonblocking collective on `comm` with `f` and writes its
/// request handle to `req`.
///
/// # Safety
///
/// A non-null `req` is valid for a write of one handle.
unsafe fn start(
    name: &str,
    comm: Handle,
    req: *mut Handle,
    f: impl FnOnce(&CommEntry) -> Res<mpi::Request<'static>>,
) -> c_int {
    boundary(name, comm, || {
        let c = handles::comm(comm)?;
        if req.is_null() {
            return Err(Code(MPI_ERR_ARG));
        }
        let r = f(&c)?;
        let h = handles::new_request(ReqEntry::Live(r, c.errh.get()))?;
        // SAFETY: non-null, valid for one handle by the caller's contract.
        unsafe { ffi::out(req, h) }
    })
}

/// `MPI_Ibarrier` (§6.12.1).
///
/// # Safety
///
/// `req` must be valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Ibarrier(comm: Handle, req: *mut Handle) -> c_int {
    // SAFETY: the caller's contract is start's.
    unsafe { start("MPI_Ibarrier", comm, req, |c| Ok(c.comm.ibarrier()?)) }
}

/// `MPI_Ibcast` (§6.12.2).
///
/// # Safety
///
/// `buf` valid for `count` elements of `dt` until the request completes;
/// `req` for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Ibcast(
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    root: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    // SAFETY: the caller's contract is start's.
    unsafe {
        start("MPI_Ibcast", comm, req, |c| {
            let root = root_of(c, root)?;
            // SAFETY: the caller's buffer holds `count` elements and is
            // the request's until it completes (§6.12).
            let data = Buf(buf, count, dt).bytes_mut()?;
            Ok(c.comm.ibroadcast_into(data, root)?)
        })
    }
}

/// `MPI_Ireduce` (§6.12.4); `MPI_IN_PLACE` as `sendbuf` at the root.
///
/// # Safety
///
/// As for `MPI_Reduce`, the receive buffer until the request completes;
/// `req` valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Ireduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    dt: Handle,
    opr: Handle,
    root: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    // SAFETY: the caller's contract is start's.
    unsafe {
        start("MPI_Ireduce", comm, req, |c| {
            let root = root_of(c, root)?;
            let (len, op) = reduction(count, dt, opr)?;
            if c.comm.rank() != root {
                if is_in_place(sendbuf) {
                    return Err(Code(MPI_ERR_BUFFER));
                }
                // SAFETY: the send buffer holds `count` elements.
                let send = ffi::bytes(sendbuf, len)?;
                return Ok(c.comm.ireduce_into(send, None, op, root)?);
            }
            // SAFETY: the root's receive buffer holds `count` elements,
            // the request's until it completes.
            let recv = ffi::bytes_mut(recvbuf, len)?;
            let mut copy = Vec::new();
            // SAFETY: the send buffer holds `count` elements.
            let send = input(sendbuf, len, recv, &mut copy)?;
            Ok(c.comm.ireduce_into(send, Some(recv), op, root)?)
        })
    }
}

/// `MPI_Iallreduce` (§6.12.5); `MPI_IN_PLACE` as `sendbuf`.
///
/// # Safety
///
/// As for `MPI_Allreduce`, the receive buffer until the request
/// completes; `req` valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Iallreduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    dt: Handle,
    opr: Handle,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    // SAFETY: the caller's contract is start's.
    unsafe {
        start("MPI_Iallreduce", comm, req, |c| {
            let (len, op) = reduction(count, dt, opr)?;
            // SAFETY: the receive buffer holds `count` elements, the
            // request's until it completes.
            let recv = ffi::bytes_mut(recvbuf, len)?;
            let mut copy = Vec::new();
            // SAFETY: the send buffer holds `count` elements.
            let send = input(sendbuf, len, recv, &mut copy)?;
            Ok(c.comm.iall_reduce_into(send, recv, op)?)
        })
    }
}

/// `MPI_Iscan` and `MPI_Iexscan`.
///
/// # Safety
///
/// As for `MPI_Iscan`.
#[allow(clippy::too_many_arguments)]
unsafe fn iscan_common(
    name: &str,
    inclusive: bool,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    dt: Handle,
    opr: Handle,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    // SAFETY: the caller's contract is start's.
    unsafe {
        start(name, comm, req, |c| {
            let (len, op) = reduction(count, dt, opr)?;
            // SAFETY: the receive buffer holds `count` elements, the
            // request's until it completes.
            let recv = ffi::bytes_mut(recvbuf, len)?;
            let mut copy = Vec::new();
            // SAFETY: the send buffer holds `count` elements.
            let send = input(sendbuf, len, recv, &mut copy)?;
            if inclusive {
                Ok(c.comm.iscan_into(send, recv, op)?)
            } else {
                Ok(c.comm.iexscan_into(send, recv, op)?)
            }
        })
    }
}

/// `MPI_Iscan` (§6.12.8); `MPI_IN_PLACE` as `sendbuf`.
///
/// # Safety
///
/// As for `MPI_Scan`, the receive buffer until the request completes;
/// `req` valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Iscan(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    dt: Handle,
    opr: Handle,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    // SAFETY: the caller's contract is iscan_common's.
    unsafe {
        iscan_common(
            "MPI_Iscan",
            true,
            sendbuf,
            recvbuf,
            count,
            dt,
            opr,
            comm,
            req,
        )
    }
}

/// `MPI_Iexscan` (§6.12.9); `MPI_IN_PLACE` as `sendbuf`.
///
/// # Safety
///
/// As for `MPI_Iscan`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Iexscan(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    dt: Handle,
    opr: Handle,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    // SAFETY: the caller's contract is iscan_common's.
    unsafe {
        iscan_common(
            "MPI_Iexscan",
            false,
            sendbuf,
            recvbuf,
            count,
            dt,
            opr,
            comm,
            req,
        )
    }
}

/// `MPI_Ireduce_scatter` and `MPI_Ireduce_scatter_block`.
///
/// # Safety
///
/// As for `MPI_Ireduce_scatter`.
#[allow(clippy::too_many_arguments)]
unsafe fn ireduce_scatter_common(
    name: &str,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    counts: Option<*const c_int>,
    block: c_int,
    dt: Handle,
    opr: Handle,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    // SAFETY: the caller's contract is start's.
    unsafe {
        start(name, comm, req, |c| {
            let (p, r) = (c.comm.size() as usize, c.comm.rank() as usize);
            // SAFETY: the caller passes `size` counts.
            let counts = scatter_counts(counts, block, p)?;
            let total = counts.iter().try_fold(0usize, |a, &n| a.checked_add(n));
            let total = c_int::try_from(total.ok_or(Code(MPI_ERR_COUNT))?)
                .map_err(|_| Code(MPI_ERR_COUNT))?;
            let (len, op) = reduction(total, dt, opr)?;
            let (extent, _) = datatype::buffer_len(1, dt)?;
            let bytes: Vec<usize> = counts.iter().map(|&n| n * extent).collect();
            let in_place = is_in_place(sendbuf);
            let room = if in_place { len } else { bytes[r] };
            // SAFETY: the receive buffer holds `room` bytes, the
            // request's until it completes.
            let recv = ffi::bytes_mut(recvbuf, room)?;
            let mut copy = Vec::new();
            // SAFETY: the send buffer holds the whole input.
            let send = input(sendbuf, len, recv, &mut copy)?;
            let mine = &mut recv[..bytes[r]];
            Ok(c.comm.ireduce_scatter_into(send, mine, &bytes, op)?)
        })
    }
}

/// `MPI_Ireduce_scatter` (§6.12.6); `MPI_IN_PLACE` as `sendbuf`.
///
/// # Safety
///
/// As for `MPI_Reduce_scatter`, the receive buffer until the request
/// completes; `req` valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Ireduce_scatter(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    dt: Handle,
    opr: Handle,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let name = "MPI_Ireduce_scatter";
    let counts = Some(recvcounts);
    // SAFETY: the caller's contract is ireduce_scatter_common's.
    unsafe { ireduce_scatter_common(name, sendbuf, recvbuf, counts, 0, dt, opr, comm, req) }
}

/// `MPI_Ireduce_scatter_block` (§6.12.7); `MPI_IN_PLACE` as `sendbuf`.
///
/// # Safety
///
/// As for `MPI_Reduce_scatter_block`, the receive buffer until the
/// request completes; `req` valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Ireduce_scatter_block(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: c_int,
    dt: Handle,
    opr: Handle,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let name = "MPI_Ireduce_scatter_block";
    // SAFETY: the caller's contract is ireduce_scatter_common's.
    unsafe { ireduce_scatter_common(name, sendbuf, recvbuf, None, recvcount, dt, opr, comm, req) }
}

/// `MPI_Igather` and `MPI_Igatherv`: with `MPI_IN_PLACE` the root's
/// contribution is its block of the receive buffer.
///
/// # Safety
///
/// As for `MPI_Igatherv`.
unsafe fn igather_common(
    name: &str,
    comm: Handle,
    send: Buf<*const c_void>,
    recvbuf: *mut c_void,
    root: c_int,
    recv_blocks: Blocks,
    req: *mut Handle,
) -> c_int {
    // SAFETY: the caller's contract is start's.
    unsafe {
        start(name, comm, req, |c| {
            let in_place = is_in_place(send.0);
            // SAFETY: the root's arrays are valid by the caller's contract.
            let (root, layout) = rooted(c, root, in_place, recv_blocks)?;
            let Some((counts, displs, need)) = layout else {
                // SAFETY: the send buffer holds its elements.
                let data = send.bytes()?;
                return Ok(c.comm.igather_varcount_into(data, None, root)?);
            };
            // SAFETY: the root's receive buffer covers every block, the
            // request's until it completes.
            let recv = ffi::bytes_mut(recvbuf, need)?;
            let me = root as usize;
            let copy;
            let data: &[u8] = if in_place {
                copy = recv[displs[me]..displs[me] + counts[me]].to_vec();
                &copy
            } else {
                // SAFETY: the send buffer holds its elements.
                send.bytes()?
            };
            Ok(c.comm
                .igather_varcount_into(data, Some((recv, &counts, &displs)), root)?)
        })
    }
}

/// `MPI_Igather` (§6.12.3); `MPI_IN_PLACE` as `sendbuf` at the root.
///
/// # Safety
///
/// As for `MPI_Gather`, the root's receive buffer until the request
/// completes; `req` valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Igather(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Handle,
    root: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let send = Buf(sendbuf, sendcount, sendtype);
    let recv = Blocks::Uniform(recvcount, recvtype);
    // SAFETY: the caller's contract is igather_common's.
    unsafe { igather_common("MPI_Igather", comm, send, recvbuf, root, recv, req) }
}

/// `MPI_Igatherv` (§6.12.3); `MPI_IN_PLACE` as `sendbuf` at the root.
///
/// # Safety
///
/// As for `MPI_Gatherv`, the root's receive buffer until the request
/// completes; `req` valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Igatherv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: Handle,
    root: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let send = Buf(sendbuf, sendcount, sendtype);
    let recv = Blocks::Vector(recvcounts, displs, recvtype);
    // SAFETY: the caller's contract is igather_common's.
    unsafe { igather_common("MPI_Igatherv", comm, send, recvbuf, root, recv, req) }
}

/// `MPI_Iscatter` and `MPI_Iscatterv`: with `MPI_IN_PLACE` the root keeps
/// its own block where it is (it is left out of the schedule).
///
/// # Safety
///
/// As for `MPI_Iscatterv`.
unsafe fn iscatter_common(
    name: &str,
    comm: Handle,
    sendbuf: *const c_void,
    send_blocks: Blocks,
    recv: Buf<*mut c_void>,
    root: c_int,
    req: *mut Handle,
) -> c_int {
    // SAFETY: the caller's contract is start's.
    unsafe {
        start(name, comm, req, |c| {
            let in_place = is_in_place(recv.0);
            // SAFETY: the root's arrays are valid by the caller's contract.
            let (root, layout) = rooted(c, root, in_place, send_blocks)?;
            let Some((mut counts, displs, need)) = layout else {
                // SAFETY: the receive buffer holds its elements, the
                // request's until it completes.
                let data = recv.bytes_mut()?;
                return Ok(c.comm.iscatter_varcount_into(None, data, root)?);
            };
            // SAFETY: the root's send buffer covers every block.
            let send = ffi::bytes(sendbuf, need)?;
            let data: &'static mut [u8] = if in_place {
                counts[root as usize] = 0;
                &mut []
            } else {
                // SAFETY: the receive buffer holds its elements, the
                // request's until it completes.
                recv.bytes_mut()?
            };
            Ok(c.comm
                .iscatter_varcount_into(Some((send, &counts, &displs)), data, root)?)
        })
    }
}

/// `MPI_Iscatter` (§6.12.3); `MPI_IN_PLACE` as `recvbuf` at the root.
///
/// # Safety
///
/// As for `MPI_Scatter`, the receive buffer until the request completes;
/// `req` valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Iscatter(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Handle,
    root: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let send = Blocks::Uniform(sendcount, sendtype);
    let recv = Buf(recvbuf, recvcount, recvtype);
    // SAFETY: the caller's contract is iscatter_common's.
    unsafe { iscatter_common("MPI_Iscatter", comm, sendbuf, send, recv, root, req) }
}

/// `MPI_Iscatterv` (§6.12.3); `MPI_IN_PLACE` as `recvbuf` at the root.
///
/// # Safety
///
/// As for `MPI_Scatterv`, the receive buffer until the request
/// completes; `req` valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Iscatterv(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    displs: *const c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Handle,
    root: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let send = Blocks::Vector(sendcounts, displs, sendtype);
    let recv = Buf(recvbuf, recvcount, recvtype);
    // SAFETY: the caller's contract is iscatter_common's.
    unsafe { iscatter_common("MPI_Iscatterv", comm, sendbuf, send, recv, root, req) }
}

/// `MPI_Iallgather` and `MPI_Iallgatherv`: with `MPI_IN_PLACE` a
/// process's contribution is its block of the receive buffer.
///
/// # Safety
///
/// As for `MPI_Iallgatherv`.
unsafe fn iallgather_common(
    name: &str,
    comm: Handle,
    send: Buf<*const c_void>,
    recvbuf: *mut c_void,
    recv_blocks: Blocks,
    req: *mut Handle,
) -> c_int {
    // SAFETY: the caller's contract is start's.
    unsafe {
        start(name, comm, req, |c| {
            let (p, me) = (c.comm.size() as usize, c.comm.rank() as usize);
            // SAFETY: the arrays are valid by the caller's contract.
            let (counts, displs, need) = recv_blocks.layout(p)?;
            // SAFETY: the receive buffer covers every block, the
            // request's until it completes.
            let recv = ffi::bytes_mut(recvbuf, need)?;
            let copy;
            let data: &[u8] = if is_in_place(send.0) {
                copy = recv[displs[me]..displs[me] + counts[me]].to_vec();
                &copy
            } else {
                // SAFETY: the send buffer holds its elements.
                send.bytes()?
            };
            Ok(c.comm
                .iall_gather_varcount_into(data, recv, &counts, &displs)?)
        })
    }
}

/// `MPI_Iallgather` (§6.12.3); `MPI_IN_PLACE` as `sendbuf`.
///
/// # Safety
///
/// As for `MPI_Allgather`, the receive buffer until the request
/// completes; `req` valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Iallgather(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Handle,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let send = Buf(sendbuf, sendcount, sendtype);
    let recv = Blocks::Uniform(recvcount, recvtype);
    // SAFETY: the caller's contract is iallgather_common's.
    unsafe { iallgather_common("MPI_Iallgather", comm, send, recvbuf, recv, req) }
}

/// `MPI_Iallgatherv` (§6.12.3); `MPI_IN_PLACE` as `sendbuf`.
///
/// # Safety
///
/// As for `MPI_Allgatherv`, the receive buffer until the request
/// completes; `req` valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Iallgatherv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: Handle,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let send = Buf(sendbuf, sendcount, sendtype);
    let recv = Blocks::Vector(recvcounts, displs, recvtype);
    // SAFETY: the caller's contract is iallgather_common's.
    unsafe { iallgather_common("MPI_Iallgatherv", comm, send, recvbuf, recv, req) }
}

/// The layout of one side of an alltoall variant.
#[derive(Clone, Copy)]
enum Side {
    /// Alltoall and alltoallv: blocks of one datatype.
    Blocks(Blocks),
    /// Alltoallw: counts, byte displacements and datatypes.
    W(*const c_int, *const c_int, *const Handle),
}

impl Side {
    /// # Safety
    ///
    /// The non-null arrays are valid for `p` elements each.
    unsafe fn layout(self, p: usize) -> Res<crate::coll::Layout> {
        // SAFETY: by the caller's contract.
        unsafe {
            match self {
                Side::Blocks(b) => b.layout(p),
                Side::W(c, d, t) => w_layout(c, d, t, p),
            }
        }
    }
}

/// `MPI_Ialltoall`, `MPI_Ialltoallv` and `MPI_Ialltoallw`: `MPI_IN_PLACE`
/// sends from a copy of the receive buffer with its layout.
///
/// # Safety
///
/// As for `MPI_Ialltoallw`.
unsafe fn ialltoall_common(
    name: &str,
    comm: Handle,
    sendbuf: *const c_void,
    send_side: Side,
    recvbuf: *mut c_void,
    recv_side: Side,
    req: *mut Handle,
) -> c_int {
    // SAFETY: the caller's contract is start's.
    unsafe {
        start(name, comm, req, |c| {
            let p = c.comm.size() as usize;
            // SAFETY: the arrays are valid by the caller's contract.
            let (rc, rd, rneed) = recv_side.layout(p)?;
            // SAFETY: the receive buffer covers every block, the
            // request's until it completes.
            let recv = ffi::bytes_mut(recvbuf, rneed)?;
            let copy;
            let (send, sc, sd): (&[u8], Vec<usize>, Vec<usize>) = if is_in_place(sendbuf) {
                copy = recv.to_vec();
                (&copy, rc.clone(), rd.clone())
            } else {
                // SAFETY: the arrays are valid by the caller's contract.
                let (sc, sd, sneed) = send_side.layout(p)?;
                // SAFETY: the send buffer covers every block.
                (ffi::bytes(sendbuf, sneed)?, sc, sd)
            };
            Ok(c.comm
                .iall_to_all_varcount_into(send, &sc, &sd, recv, &rc, &rd)?)
        })
    }
}

/// `MPI_Ialltoall` (§6.12.3); `MPI_IN_PLACE` as `sendbuf`.
///
/// # Safety
///
/// As for `MPI_Alltoall`, the receive buffer until the request
/// completes; `req` valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Ialltoall(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Handle,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let send = Side::Blocks(Blocks::Uniform(sendcount, sendtype));
    let recv = Side::Blocks(Blocks::Uniform(recvcount, recvtype));
    // SAFETY: the caller's contract is ialltoall_common's.
    unsafe { ialltoall_common("MPI_Ialltoall", comm, sendbuf, send, recvbuf, recv, req) }
}

/// `MPI_Ialltoallv` (§6.12.3); `MPI_IN_PLACE` as `sendbuf`.
///
/// # Safety
///
/// As for `MPI_Alltoallv`, the receive buffer until the request
/// completes; `req` valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Ialltoallv(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtype: Handle,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let send = Side::Blocks(Blocks::Vector(sendcounts, sdispls, sendtype));
    let recv = Side::Blocks(Blocks::Vector(recvcounts, rdispls, recvtype));
    // SAFETY: the caller's contract is ialltoall_common's.
    unsafe { ialltoall_common("MPI_Ialltoallv", comm, sendbuf, send, recvbuf, recv, req) }
}

/// `MPI_Ialltoallw` (§6.12.3); `MPI_IN_PLACE` as `sendbuf`.
///
/// # Safety
///
/// As for `MPI_Alltoallw`, the receive buffer until the request
/// completes; `req` valid for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Ialltoallw(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtypes: *const Handle,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtypes: *const Handle,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let send = Side::W(sendcounts, sdispls, sendtypes);
    let recv = Side::W(recvcounts, rdispls, recvtypes);
    // SAFETY: the caller's contract is ialltoall_common's.
    unsafe { ialltoall_common("MPI_Ialltoallw", comm, sendbuf, send, recvbuf, recv, req) }
}
