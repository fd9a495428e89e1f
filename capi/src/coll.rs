//! Collective operations (MPI 5.0 chapter 6) on the `mpi` crate's
//! collectives over bytes. Each buffer argument is a [`Side`]
//! (`coll_stage.rs`): the user's memory for flat datatypes, packed or
//! staged and unpacked for any other committed datatype; per-rank counts
//! and displacements become byte counts and offsets in that buffer, and
//! reductions get the byte-level closure of `op.rs`. `MPI_IN_PLACE`
//! (§6.2.1) is honoured where the standard allows it, by taking the
//! contribution from the receive buffer. Each collective but the barrier
//! is defined once with `family!`, which also makes its nonblocking
//! (`icoll.rs` starts it) and persistent (`pcoll.rs`) forms and the
//! large-count `_c` form of all three.

use o2g_mpi_abi_macros::export;
use std::borrow::Cow;
use std::ffi::{c_int, c_void};

use crate::coll_stage::{families, family, reduction_side, Int, Side, Spec};
use crate::error::{boundary, Code, Res, MPI_ERR_BUFFER, MPI_ERR_ROOT};
use crate::ffi::is_in_place;
use crate::handles::{self, CommEntry, Handle};
use crate::icoll::{iallgather, ialltoall, ibcast, igather, ireduce, iscatter};
use crate::op;

/// The root argument, checked against the communicator (`MPI_ERR_ROOT`).
pub(crate) fn root_of(c: &CommEntry, root: c_int) -> Res<i32> {
    if (0..c.comm.size()).contains(&root) {
        Ok(root)
    } else {
        Err(Code(MPI_ERR_ROOT))
    }
}

/// The part of a rooted collective (gather, scatter) before any buffer is
/// touched: the root, checked against the communicator, and at the root
/// the side of its blocks. `MPI_IN_PLACE` is for the root alone
/// (`MPI_ERR_BUFFER` elsewhere).
///
/// # Safety
///
/// As for [`Spec::side`].
pub(crate) unsafe fn rooted<C: Int, D: Int>(
    c: &CommEntry,
    root: c_int,
    in_place: bool,
    buf: *const c_void,
    blocks: Spec<C, D>,
) -> Res<(i32, Option<Side>)> {
    let root = root_of(c, root)?;
    if c.comm.rank() != root {
        return if in_place {
            Err(Code(MPI_ERR_BUFFER))
        } else {
            Ok((root, None))
        };
    }
    // SAFETY: by the caller's contract.
    let side = unsafe { blocks.side(buf, c.comm.size() as usize) }?;
    Ok((root, Some(side)))
}

/// Where a collective's input comes from, resolved before it starts (for
/// a persistent collective once, at `MPI_*_init`) and read when it
/// starts: a send side, or with `MPI_IN_PLACE` block `me` of the receive
/// side (all of it for `None`), copied because the collective overwrites
/// it.
#[derive(Clone)]
pub(crate) enum Input {
    Send(Side),
    InPlace(Side, Option<usize>),
}

impl Input {
    /// `send`'s side of `n` blocks at `sendbuf`, or with `MPI_IN_PLACE`
    /// (`sendbuf`) block `me` of `recv`.
    ///
    /// # Safety
    ///
    /// As for [`Spec::side`].
    pub(crate) unsafe fn new<C: Int, D: Int>(
        sendbuf: *const c_void,
        send: Spec<C, D>,
        n: usize,
        recv: &Side,
        me: Option<usize>,
    ) -> Res<Input> {
        Ok(if is_in_place(sendbuf) {
            Input::InPlace(recv.clone(), me)
        } else {
            // SAFETY: by the caller's contract.
            Input::Send(unsafe { send.side(sendbuf, n) }?)
        })
    }

    /// The side whose layout the input has.
    pub(crate) fn side(&self) -> &Side {
        match self {
            Input::Send(s) | Input::InPlace(s, _) => s,
        }
    }

    /// The bytes the process contributes now.
    ///
    /// # Safety
    ///
    /// The buffers hold the elements their sides describe.
    pub(crate) unsafe fn read<'a>(&self) -> Res<Cow<'a, [u8]>> {
        // SAFETY: by the caller's contract.
        unsafe {
            Ok(match self {
                Input::Send(s) => s.input()?,
                Input::InPlace(r, Some(i)) => Cow::Owned(r.input_of(*i)?),
                Input::InPlace(r, None) => Cow::Owned(r.input()?.into_owned()),
            })
        }
    }
}

/// What a process contributes to a collective: `send`'s data, or with
/// `MPI_IN_PLACE` (`in_place`) a copy of block `me` of `recv` (all of it
/// for `None`).
///
/// # Safety
///
/// The buffers hold the elements their sides describe.
pub(crate) unsafe fn contribution<'a, C: Int, D: Int>(
    sendbuf: *const c_void,
    send: Spec<C, D>,
    recv: &Side,
    me: Option<usize>,
) -> Res<Cow<'a, [u8]>> {
    // SAFETY: by the caller's contract.
    unsafe { Input::new(sendbuf, send, 1, recv, me)?.read() }
}

/// A reduction over `count` elements of `dt`, resolved: the receive side
/// at `recvbuf`, the operation, and the input (`sendbuf`'s elements, or
/// with `MPI_IN_PLACE` the receive buffer's).
#[derive(Clone)]
pub(crate) struct Reduction {
    pub(crate) out: Side,
    pub(crate) op: op::Resolved,
    pub(crate) input: Input,
}

impl Reduction {
    /// Checks and resolves the arguments; no buffer is read until
    /// [`Input::read`].
    pub(crate) fn new<C: Int>(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: C,
        dt: Handle,
        opr: Handle,
    ) -> Res<Reduction> {
        let out = reduction_side(recvbuf, count, dt)?;
        let op = op::Resolved::new(&out, dt, opr)?;
        let input = if is_in_place(sendbuf) {
            Input::InPlace(out.clone(), None)
        } else {
            Input::Send(reduction_side(sendbuf, count, dt)?)
        };
        Ok(Reduction { out, op, input })
    }
}

/// [`Reduction::new`] with its input read and its operation made, for a
/// blocking reduction.
///
/// # Safety
///
/// The buffers hold `count` elements of `dt` (the receive buffer where
/// it is used: always with `MPI_IN_PLACE`).
pub(crate) unsafe fn reduction<'a, C: Int>(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: C,
    dt: Handle,
    opr: Handle,
) -> Res<(Side, op::Resolved, Cow<'a, [u8]>)> {
    let r = Reduction::new(sendbuf, recvbuf, count, dt, opr)?;
    // SAFETY: by the caller's contract.
    let send = unsafe { r.input.read() }?;
    Ok((r.out, r.op, send))
}

/// `MPI_Barrier` (§6.3).
#[export]
pub(crate) extern "C" fn MPI_Barrier(comm: Handle) -> c_int {
    boundary("MPI_Barrier", comm, || {
        // The `mpi` crate's barrier serves inter-communicators too.
        Ok(handles::comm(comm)?.comm.barrier()?)
    })
}

family! {
    /// `MPI_Bcast` (§6.4): a non-contiguous type is packed at the root
    /// and unpacked elsewhere.
    ///
    /// # Safety
    ///
    /// `buf` must be valid for `count` elements of `dt`.
    fn MPI_Bcast, MPI_Bcast_c;
        MPI_Ibcast, MPI_Ibcast_c;
        MPI_Bcast_init, MPI_Bcast_init_c(
        buf: *mut c_void,
        count: Count,
        dt: Handle,
        root: c_int,
        comm: Handle,
    ) on comm as name {}
    blocking {
        boundary(name, comm, || {
            let c = handles::comm(comm)?;
            if c.comm.is_inter() {
                // SAFETY: by the caller's contract.
                return unsafe { crate::intercoll::bcast::<Count, Disp>(&c, buf, count, dt, root) };
            }
            let root = root_of(&c, root)?;
            // SAFETY: a single piece reads no array.
            let side = unsafe { Spec::<Count, Disp>::One(count, dt).side(buf, 1) }?;
            if c.comm.rank() == root && !side.direct() {
                // SAFETY: the root's buffer holds `count` elements.
                let mut data = unsafe { side.input() }?.into_owned();
                return Ok(c.comm.broadcast_into(&mut data[..], root)?);
            }
            // SAFETY: the caller's buffer holds `count` elements.
            unsafe { side.run(|b, _, _| Ok(c.comm.broadcast_into(b, root)?)) }
        })
    }
    start ibcast(buf, count, dt, root);
}

family! {
    /// `MPI_Reduce` (§6.9.1); `MPI_IN_PLACE` as `sendbuf` at the root.
    ///
    /// # Safety
    ///
    /// `sendbuf` (unless `MPI_IN_PLACE`) and, at the root, `recvbuf` must
    /// be valid for `count` elements of `dt`.
    fn MPI_Reduce, MPI_Reduce_c;
        MPI_Ireduce, MPI_Ireduce_c;
        MPI_Reduce_init, MPI_Reduce_init_c(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: Count,
        dt: Handle,
        opr: Handle,
        root: c_int,
        comm: Handle,
    ) on comm as name {}
    blocking {
        boundary(name, comm, || {
            let c = handles::comm(comm)?;
            if c.comm.is_inter() {
                // SAFETY: by the caller's contract.
                return unsafe {
                    crate::intercoll::reduce(&c, sendbuf, recvbuf, count, dt, opr, root)
                };
            }
            let root = root_of(&c, root)?;
            if c.comm.rank() != root && is_in_place(sendbuf) {
                return Err(Code(MPI_ERR_BUFFER));
            }
            // SAFETY: the buffers hold `count` elements where used.
            let (out, op, send) = unsafe { reduction(sendbuf, recvbuf, count, dt, opr) }?;
            if c.comm.rank() != root {
                return Ok(c.comm.reduce_into(&send, None, &op, root)?);
            }
            // SAFETY: the root's receive buffer holds `count` elements.
            unsafe { out.run(|b, _, _| Ok(c.comm.reduce_into(&send, Some(b), &op, root)?)) }
        })
    }
    start ireduce(sendbuf, recvbuf, count, dt, opr, root);
}

/// The common part of gather and gatherv: the root receives every block;
/// its own contribution, with `MPI_IN_PLACE`, is its block of the receive
/// buffer.
///
/// # Safety
///
/// As for `MPI_Gatherv`.
unsafe fn gather<C: Int, D: Int>(
    name: &str,
    comm: Handle,
    sendbuf: *const c_void,
    send: Spec<C, D>,
    recvbuf: *mut c_void,
    recv: Spec<C, D>,
    root: c_int,
) -> c_int {
    boundary(name, comm, || {
        let c = handles::comm(comm)?;
        if c.comm.is_inter() {
            // SAFETY: by the caller's contract.
            return unsafe { crate::intercoll::gather(&c, sendbuf, send, recvbuf, recv, root) };
        }
        // SAFETY: the root's arrays are valid by the caller's contract.
        let (root, side) = unsafe { rooted(&c, root, is_in_place(sendbuf), recvbuf, recv) }?;
        let Some(side) = side else {
            // SAFETY: the caller's send buffer holds its elements.
            let data = unsafe { send.side(sendbuf, 1)?.input() }?;
            return Ok(c.comm.gather_varcount_into(&data, None, root)?);
        };
        // SAFETY: the buffers hold their elements.
        let data = unsafe { contribution(sendbuf, send, &side, Some(root as usize)) }?;
        // SAFETY: the root's receive buffer covers every block.
        unsafe {
            side.run(|b, n, d| Ok(c.comm.gather_varcount_into(&data, Some((b, n, d)), root)?))
        }
    })
}

families! {
    (
        sendbuf: *const c_void,
        sendcount: Count,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcount: Count,
        recvtype: Handle,
        root: c_int,
        comm: Handle,
    ) on comm as name;

    /// `MPI_Gather` (§6.5); `MPI_IN_PLACE` as `sendbuf` at the root.
    ///
    /// # Safety
    ///
    /// `sendbuf` valid for `sendcount` elements of `sendtype`; at the
    /// root, `recvbuf` valid for `size × recvcount` elements of
    /// `recvtype`.
    fn MPI_Gather, MPI_Gather_c;
        MPI_Igather, MPI_Igather_c;
        MPI_Gather_init, MPI_Gather_init_c
    {
        let send = Spec::<Count, Disp>::One(sendcount, sendtype);
        let recv = Spec::Each(recvcount, recvtype);
    }
    moves gather / igather(sendbuf, send, recvbuf, recv, root);

    /// `MPI_Scatter` (§6.6); `MPI_IN_PLACE` as `recvbuf` at the root.
    ///
    /// # Safety
    ///
    /// At the root `sendbuf` valid for `size × sendcount` elements of
    /// `sendtype`; `recvbuf` valid for `recvcount` elements of
    /// `recvtype`.
    fn MPI_Scatter, MPI_Scatter_c;
        MPI_Iscatter, MPI_Iscatter_c;
        MPI_Scatter_init, MPI_Scatter_init_c
    {
        let send = Spec::<Count, Disp>::Each(sendcount, sendtype);
        let recv = Spec::One(recvcount, recvtype);
    }
    moves scatter / iscatter(sendbuf, send, recvbuf, recv, root);
}

family! {
    /// `MPI_Gatherv` (§6.5); `MPI_IN_PLACE` as `sendbuf` at the root.
    ///
    /// # Safety
    ///
    /// `sendbuf` valid for `sendcount` elements of `sendtype`; at the
    /// root, `recvcounts` and `displs` valid for `size` elements and
    /// `recvbuf` for every block they describe.
    fn MPI_Gatherv, MPI_Gatherv_c;
        MPI_Igatherv, MPI_Igatherv_c;
        MPI_Gatherv_init, MPI_Gatherv_init_c(
        sendbuf: *const c_void,
        sendcount: Count,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcounts: *const Count,
        displs: *const Disp,
        recvtype: Handle,
        root: c_int,
        comm: Handle,
    ) on comm as name {
        let send = Spec::One(sendcount, sendtype);
        let recv = Spec::V(recvcounts, displs, recvtype);
    }
    moves gather / igather(sendbuf, send, recvbuf, recv, root);
}

/// The common part of scatter and scatterv: the root sends every block;
/// with `MPI_IN_PLACE` it keeps its own block where it is.
///
/// # Safety
///
/// As for `MPI_Scatterv`.
unsafe fn scatter<C: Int, D: Int>(
    name: &str,
    comm: Handle,
    sendbuf: *const c_void,
    send: Spec<C, D>,
    recvbuf: *mut c_void,
    recv: Spec<C, D>,
    root: c_int,
) -> c_int {
    boundary(name, comm, || {
        let c = handles::comm(comm)?;
        if c.comm.is_inter() {
            // SAFETY: by the caller's contract.
            return unsafe { crate::intercoll::scatter(&c, sendbuf, send, recvbuf, recv, root) };
        }
        let in_place = is_in_place(recvbuf);
        // SAFETY: the root's arrays are valid by the caller's contract.
        let (root, side) = unsafe { rooted(&c, root, in_place, sendbuf, send) }?;
        // SAFETY: the receive buffer holds its elements (unless in place).
        let out = unsafe { recv.side(recvbuf, 1) };
        let Some(side) = side else {
            // SAFETY: the caller's receive buffer holds its elements.
            return unsafe { out?.run(|b, _, _| Ok(c.comm.scatter_varcount_into(None, b, root)?)) };
        };
        // SAFETY: the root's send buffer covers every block.
        let data = unsafe { side.input() }?;
        let blocks = Some((&data[..], side.counts(), side.displs()));
        if in_place {
            let mut scratch = vec![0u8; side.counts()[root as usize]];
            return Ok(c.comm.scatter_varcount_into(blocks, &mut scratch, root)?);
        }
        // SAFETY: the caller's receive buffer holds its elements.
        unsafe { out?.run(|b, _, _| Ok(c.comm.scatter_varcount_into(blocks, b, root)?)) }
    })
}

family! {
    /// `MPI_Scatterv` (§6.6); `MPI_IN_PLACE` as `recvbuf` at the root.
    ///
    /// # Safety
    ///
    /// At the root `sendcounts` and `displs` valid for `size` elements
    /// and `sendbuf` for every block; `recvbuf` valid for `recvcount`
    /// elements.
    fn MPI_Scatterv, MPI_Scatterv_c;
        MPI_Iscatterv, MPI_Iscatterv_c;
        MPI_Scatterv_init, MPI_Scatterv_init_c(
        sendbuf: *const c_void,
        sendcounts: *const Count,
        displs: *const Disp,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcount: Count,
        recvtype: Handle,
        root: c_int,
        comm: Handle,
    ) on comm as name {
        let send = Spec::V(sendcounts, displs, sendtype);
        let recv = Spec::One(recvcount, recvtype);
    }
    moves scatter / iscatter(sendbuf, send, recvbuf, recv, root);
}

/// The common part of allgather and allgatherv: with `MPI_IN_PLACE` a
/// process's contribution is its block of the receive buffer.
///
/// # Safety
///
/// As for `MPI_Allgatherv`.
unsafe fn allgather<C: Int, D: Int>(
    name: &str,
    comm: Handle,
    sendbuf: *const c_void,
    send: Spec<C, D>,
    recvbuf: *mut c_void,
    recv: Spec<C, D>,
) -> c_int {
    boundary(name, comm, || {
        let c = handles::comm(comm)?;
        if c.comm.is_inter() {
            // SAFETY: by the caller's contract.
            return unsafe { crate::intercoll::allgather(&c, sendbuf, send, recvbuf, recv) };
        }
        let (p, me) = (c.comm.size() as usize, c.comm.rank() as usize);
        // SAFETY: the arrays and buffers are valid by the caller's
        // contract.
        unsafe {
            let side = recv.side(recvbuf, p)?;
            let data = contribution(sendbuf, send, &side, Some(me))?;
            side.run(|b, n, d| Ok(c.comm.all_gather_varcount_into(&data, b, n, d)?))
        }
    })
}

families! {
    (
        sendbuf: *const c_void,
        sendcount: Count,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcount: Count,
        recvtype: Handle,
        comm: Handle,
    ) on comm as name;

    /// `MPI_Allgather` (§6.7); `MPI_IN_PLACE` as `sendbuf`.
    ///
    /// # Safety
    ///
    /// `sendbuf` valid for `sendcount` elements of `sendtype`, `recvbuf`
    /// for `size × recvcount` elements of `recvtype`.
    fn MPI_Allgather, MPI_Allgather_c;
        MPI_Iallgather, MPI_Iallgather_c;
        MPI_Allgather_init, MPI_Allgather_init_c
    {
        let send = Spec::<Count, Disp>::One(sendcount, sendtype);
        let recv = Spec::Each(recvcount, recvtype);
    }
    moves allgather / iallgather(sendbuf, send, recvbuf, recv);

    /// `MPI_Alltoall` (§6.8); `MPI_IN_PLACE` as `sendbuf`.
    ///
    /// # Safety
    ///
    /// `sendbuf` valid for `size × sendcount` elements of `sendtype`,
    /// `recvbuf` for `size × recvcount` elements of `recvtype`.
    fn MPI_Alltoall, MPI_Alltoall_c;
        MPI_Ialltoall, MPI_Ialltoall_c;
        MPI_Alltoall_init, MPI_Alltoall_init_c
    {
        let send = Spec::<Count, Disp>::Each(sendcount, sendtype);
        let recv = Spec::Each(recvcount, recvtype);
    }
    moves alltoall / ialltoall(sendbuf, send, recvbuf, recv);
}

family! {
    /// `MPI_Allgatherv` (§6.7); `MPI_IN_PLACE` as `sendbuf`.
    ///
    /// # Safety
    ///
    /// `sendbuf` valid for `sendcount` elements; `recvcounts` and
    /// `displs` for `size` elements and `recvbuf` for every block they
    /// describe.
    fn MPI_Allgatherv, MPI_Allgatherv_c;
        MPI_Iallgatherv, MPI_Iallgatherv_c;
        MPI_Allgatherv_init, MPI_Allgatherv_init_c(
        sendbuf: *const c_void,
        sendcount: Count,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcounts: *const Count,
        displs: *const Disp,
        recvtype: Handle,
        comm: Handle,
    ) on comm as name {
        let send = Spec::One(sendcount, sendtype);
        let recv = Spec::V(recvcounts, displs, recvtype);
    }
    moves allgather / iallgather(sendbuf, send, recvbuf, recv);
}

/// The common part of alltoall, alltoallv and alltoallw: `MPI_IN_PLACE`
/// sends from a copy of the receive buffer with its layout.
///
/// # Safety
///
/// As for `MPI_Alltoallw`.
unsafe fn alltoall<C: Int, D: Int>(
    name: &str,
    comm: Handle,
    sendbuf: *const c_void,
    send: Spec<C, D>,
    recvbuf: *mut c_void,
    recv: Spec<C, D>,
) -> c_int {
    boundary(name, comm, || {
        let c = handles::comm(comm)?;
        if c.comm.is_inter() {
            // SAFETY: by the caller's contract.
            return unsafe { crate::intercoll::alltoall(&c, sendbuf, send, recvbuf, recv) };
        }
        let p = c.comm.size() as usize;
        // SAFETY: the arrays and buffers are valid by the caller's
        // contract.
        let (rside, input) = unsafe { alltoall_sides(p, sendbuf, send, recvbuf, recv) }?;
        // SAFETY: the send buffer (or the receive one, in place) holds
        // every block.
        let data = unsafe { input.read() }?;
        let (sc, sd) = (input.side().counts(), input.side().displs());
        // SAFETY: the receive buffer covers every block.
        unsafe { rside.run(|b, rc, rd| Ok(c.comm.all_to_all_w_into(&data, sc, sd, b, rc, rd)?)) }
    })
}

/// The sides of an alltoall in a communicator of `p` processes: the
/// receive side, and the input. With `MPI_IN_PLACE` the input has the
/// receive buffer's layout and is a copy of it.
///
/// # Safety
///
/// The arrays hold what the arguments describe.
pub(crate) unsafe fn alltoall_sides<C: Int, D: Int>(
    p: usize,
    sendbuf: *const c_void,
    send: Spec<C, D>,
    recvbuf: *mut c_void,
    recv: Spec<C, D>,
) -> Res<(Side, Input)> {
    // SAFETY: by the caller's contract.
    unsafe {
        let rside = recv.side(recvbuf, p)?;
        let input = Input::new(sendbuf, send, p, &rside, None)?;
        Ok((rside, input))
    }
}

family! {
    /// `MPI_Alltoallv` (§6.8); `MPI_IN_PLACE` as `sendbuf`.
    ///
    /// # Safety
    ///
    /// The count and displacement arrays valid for `size` elements each,
    /// and the buffers for every block they describe.
    fn MPI_Alltoallv, MPI_Alltoallv_c;
        MPI_Ialltoallv, MPI_Ialltoallv_c;
        MPI_Alltoallv_init, MPI_Alltoallv_init_c(
        sendbuf: *const c_void,
        sendcounts: *const Count,
        sdispls: *const Disp,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcounts: *const Count,
        rdispls: *const Disp,
        recvtype: Handle,
        comm: Handle,
    ) on comm as name {
        let send = Spec::V(sendcounts, sdispls, sendtype);
        let recv = Spec::V(recvcounts, rdispls, recvtype);
    }
    moves alltoall / ialltoall(sendbuf, send, recvbuf, recv);
}

family! {
    /// `MPI_Alltoallw` (§6.8): blocks of a datatype each, at byte
    /// displacements; `MPI_IN_PLACE` as `sendbuf` sends from a copy of
    /// the receive buffer with its layout.
    ///
    /// # Safety
    ///
    /// The count, displacement and type arrays valid for `size` elements
    /// each, and the buffers for every block they describe.
    fn MPI_Alltoallw, MPI_Alltoallw_c;
        MPI_Ialltoallw, MPI_Ialltoallw_c;
        MPI_Alltoallw_init, MPI_Alltoallw_init_c(
        sendbuf: *const c_void,
        sendcounts: *const Count,
        sdispls: *const Disp,
        sendtypes: *const Handle,
        recvbuf: *mut c_void,
        recvcounts: *const Count,
        rdispls: *const Disp,
        recvtypes: *const Handle,
        comm: Handle,
    ) on comm as name {
        let send = Spec::W(sendcounts, sdispls, sendtypes);
        let recv = Spec::W(recvcounts, rdispls, recvtypes);
    }
    moves alltoall / ialltoall(sendbuf, send, recvbuf, recv);
}
