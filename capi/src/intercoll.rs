//! Blocking collectives on inter-communicators (MPI 5.0 §6.2.2): the C
//! side of bcast, reduce, allreduce, gather(v), scatter(v), allgather(v)
//! and alltoall(v/w), which `coll.rs` and `coll_reduce.rs` hand over to
//! when their communicator is an inter-communicator; the barrier needs
//! nothing here (the `mpi` crate's dispatches by itself). The algorithms
//! are the `mpi` crate's (`collective/inter.rs`).
//!
//! What differs from intra-communicators: a rooted collective's `root`
//! is `MPI_ROOT` at the root, `MPI_PROC_NULL` at the other processes of
//! its group (which then touch no buffer) and the root's rank in the
//! other group; per-process arrays and blocks describe the *remote*
//! group's processes; and `MPI_IN_PLACE` is not allowed
//! (`MPI_ERR_BUFFER`). The reduce-scatters need nothing here
//! (`coll_reduce.rs` passes the local group's counts, as there, and the
//! `mpi` crate dispatches), nor do the nonblocking and persistent forms
//! (`icoll.rs`, which follows these rules); scan and exscan, blocking or
//! not, fail with `MPI_ERR_COMM` (§6.2.2: undefined there).

use std::ffi::{c_int, c_void};

use crate::coll::{reduction, Reduction};
use crate::coll_stage::{Int, Spec};
use crate::error::{explained, Code, Res, MPI_ERR_BUFFER, MPI_ERR_ROOT};
use crate::ffi::is_in_place;
use crate::handles::{CommEntry, Handle};
use crate::status::PROC_NULL;

/// `MPI_ROOT`.
const ROOT: c_int = -4;

/// The `mpi` crate's root argument for the C `root` on the
/// inter-communicator `c` (`MPI_ERR_ROOT` for one that is none).
pub(crate) fn root_of(c: &CommEntry, root: c_int) -> Res<i32> {
    match root {
        ROOT => Ok(mpi::intercomm::ROOT),
        PROC_NULL => Ok(mpi::intercomm::PROC_NULL),
        r if (0..c.comm.target_size()).contains(&r) => Ok(r),
        _ => Err(Code(MPI_ERR_ROOT)),
    }
}

/// Fails for `MPI_IN_PLACE`, which inter-communicators do not take.
pub(crate) fn not_in_place(buf: *const c_void) -> Res<()> {
    match is_in_place(buf) {
        true => Err(explained(
            MPI_ERR_BUFFER,
            "MPI_IN_PLACE is not allowed on an inter-communicator (§6.2.2)",
        )),
        false => Ok(()),
    }
}

/// The remote group's size, the number of blocks of per-process sides.
fn remote(c: &CommEntry) -> usize {
    c.comm.target_size() as usize
}

/// `MPI_Bcast` on an inter-communicator.
///
/// # Safety
///
/// At the root and in the other group, `buf` is valid for `count`
/// elements of `dt`.
pub(crate) unsafe fn bcast<C: Int, D: Int>(
    c: &CommEntry,
    buf: *mut c_void,
    count: C,
    dt: Handle,
    root: c_int,
) -> Res<()> {
    let root = root_of(c, root)?;
    if root == mpi::intercomm::PROC_NULL {
        return Ok(());
    }
    // SAFETY: a single piece reads no array.
    let side = unsafe { Spec::<C, D>::One(count, dt).side(buf, 1) }?;
    if root == mpi::intercomm::ROOT && !side.direct() {
        // The root only sends: its packed data, never unpacked back.
        // SAFETY: the root's buffer holds `count` elements.
        let mut data = unsafe { side.input() }?.into_owned();
        return Ok(c.comm.broadcast_into(&mut data[..], root)?);
    }
    // SAFETY: the caller's buffer holds `count` elements.
    unsafe { side.run(|b, _, _| Ok(c.comm.broadcast_into(b, root)?)) }
}

/// `MPI_Reduce` on an inter-communicator.
///
/// # Safety
///
/// In the other group `sendbuf`, at the root `recvbuf`, is valid for
/// `count` elements of `dt`.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn reduce<C: Int>(
    c: &CommEntry,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: C,
    dt: Handle,
    opr: Handle,
    root: c_int,
) -> Res<()> {
    let root = root_of(c, root)?;
    match root {
        mpi::intercomm::PROC_NULL => Ok(()),
        mpi::intercomm::ROOT => {
            // The root contributes nothing: its send buffer is not read.
            let r = Reduction::new(recvbuf, recvbuf, count, dt, opr)?;
            let op = r.op.operation();
            // SAFETY: the root's receive buffer holds `count` elements.
            unsafe {
                r.out
                    .run(|b, _, _| Ok(c.comm.reduce_into(&[], Some(b), &op, root)?))
            }
        }
        _ => {
            not_in_place(sendbuf)?;
            // SAFETY: the send buffer holds `count` elements.
            let (_, op, send) = unsafe { reduction(sendbuf, recvbuf, count, dt, opr) }?;
            Ok(c.comm.reduce_into(&send, None, &op, root)?)
        }
    }
}

/// `MPI_Allreduce` on an inter-communicator.
///
/// # Safety
///
/// Both buffers are valid for `count` elements of `dt`.
pub(crate) unsafe fn allreduce<C: Int>(
    c: &CommEntry,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: C,
    dt: Handle,
    opr: Handle,
) -> Res<()> {
    not_in_place(sendbuf)?;
    // SAFETY: the buffers hold `count` elements.
    let (out, op, send) = unsafe { reduction(sendbuf, recvbuf, count, dt, opr) }?;
    // SAFETY: the receive buffer holds `count` elements.
    unsafe { out.run(|b, _, _| Ok(c.comm.all_reduce_into(&send, b, &op)?)) }
}

/// `MPI_Gather(v)` on an inter-communicator: the root's `recv` has one
/// block per process of the other group.
///
/// # Safety
///
/// In the other group `sendbuf` holds its elements; at the root the
/// arrays of `recv` hold the remote group's size of elements and
/// `recvbuf` every block.
pub(crate) unsafe fn gather<C: Int, D: Int>(
    c: &CommEntry,
    sendbuf: *const c_void,
    send: Spec<C, D>,
    recvbuf: *mut c_void,
    recv: Spec<C, D>,
    root: c_int,
) -> Res<()> {
    let root = root_of(c, root)?;
    match root {
        mpi::intercomm::PROC_NULL => Ok(()),
        mpi::intercomm::ROOT => {
            not_in_place(sendbuf)?;
            // SAFETY: the root's arrays and buffer, by the caller's
            // contract.
            let side = unsafe { recv.side(recvbuf, remote(c)) }?;
            // SAFETY: the receive buffer covers every block.
            unsafe {
                side.run(|b, n, d| {
                    Ok(c.comm
                        .gather_varcount_into::<u8>(&[], Some((b, n, d)), root)?)
                })
            }
        }
        _ => {
            not_in_place(sendbuf)?;
            // SAFETY: the caller's send buffer holds its elements.
            let data = unsafe { send.side(sendbuf, 1)?.input() }?;
            Ok(c.comm.gather_varcount_into(&data, None, root)?)
        }
    }
}

/// `MPI_Scatter(v)` on an inter-communicator: the root's `send` has one
/// block per process of the other group.
///
/// # Safety
///
/// At the root the arrays of `send` hold the remote group's size of
/// elements and `sendbuf` every block; in the other group `recvbuf`
/// holds its elements.
pub(crate) unsafe fn scatter<C: Int, D: Int>(
    c: &CommEntry,
    sendbuf: *const c_void,
    send: Spec<C, D>,
    recvbuf: *mut c_void,
    recv: Spec<C, D>,
    root: c_int,
) -> Res<()> {
    let root = root_of(c, root)?;
    match root {
        mpi::intercomm::PROC_NULL => Ok(()),
        mpi::intercomm::ROOT => {
            not_in_place(recvbuf)?;
            // SAFETY: the root's arrays and buffer, by the caller's
            // contract.
            let side = unsafe { send.side(sendbuf, remote(c)) }?;
            // SAFETY: the send buffer covers every block.
            let data = unsafe { side.input() }?;
            let blocks = Some((&data[..], side.counts(), side.displs()));
            Ok(c.comm.scatter_varcount_into(blocks, &mut [], root)?)
        }
        _ => {
            not_in_place(recvbuf)?;
            // SAFETY: the caller's receive buffer holds its elements.
            unsafe {
                recv.side(recvbuf, 1)?
                    .run(|b, _, _| Ok(c.comm.scatter_varcount_into(None, b, root)?))
            }
        }
    }
}

/// `MPI_Allgather(v)` on an inter-communicator: `recv` has one block per
/// process of the other group.
///
/// # Safety
///
/// `sendbuf` holds its elements; the arrays of `recv` hold the remote
/// group's size of elements and `recvbuf` every block.
pub(crate) unsafe fn allgather<C: Int, D: Int>(
    c: &CommEntry,
    sendbuf: *const c_void,
    send: Spec<C, D>,
    recvbuf: *mut c_void,
    recv: Spec<C, D>,
) -> Res<()> {
    not_in_place(sendbuf)?;
    // SAFETY: the arrays and buffers are valid by the caller's contract.
    unsafe {
        let side = recv.side(recvbuf, remote(c))?;
        let data = send.side(sendbuf, 1)?.input()?;
        side.run(|b, n, d| Ok(c.comm.all_gather_varcount_into(&data, b, n, d)?))
    }
}

/// `MPI_Alltoall(v/w)` on an inter-communicator: both sides have one
/// block per process of the other group.
///
/// # Safety
///
/// The arrays hold the remote group's size of elements each and the
/// buffers every block they describe.
pub(crate) unsafe fn alltoall<C: Int, D: Int>(
    c: &CommEntry,
    sendbuf: *const c_void,
    send: Spec<C, D>,
    recvbuf: *mut c_void,
    recv: Spec<C, D>,
) -> Res<()> {
    not_in_place(sendbuf)?;
    let q = remote(c);
    // SAFETY: the arrays and buffers are valid by the caller's contract.
    unsafe {
        let rside = recv.side(recvbuf, q)?;
        let sside = send.side(sendbuf, q)?;
        let data = sside.input()?;
        let (sc, sd) = (sside.counts(), sside.displs());
        rside.run(|b, rc, rd| Ok(c.comm.all_to_all_w_into(&data, sc, sd, b, rc, rd)?))
    }
}
