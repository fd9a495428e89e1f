//! Collective operations (MPI 5.0 chapter 6) on the `mpi` crate's
//! collectives over bytes: element counts and displacements become byte
//! counts and offsets (the extent of the datatype times the count), and
//! reductions get the byte-level closure of `op.rs`. `MPI_IN_PLACE`
//! (§6.2.1) is honoured where the standard allows it, by taking the
//! contribution from the receive buffer.

use o2g_mpi_abi_macros::export;
use std::ffi::{c_int, c_void};

use crate::datatype::{self, buffer_len};
use crate::error::{boundary, Code, Res, MPI_ERR_ARG, MPI_ERR_BUFFER, MPI_ERR_COUNT, MPI_ERR_ROOT};
use crate::ffi::{self, is_in_place};
use crate::handles::{self, CommEntry, Handle};
use crate::op;

/// Per-rank byte counts, byte offsets, and the buffer length they need.
pub(crate) type Layout = (Vec<usize>, Vec<usize>, usize);

/// The root argument, checked against the communicator (`MPI_ERR_ROOT`).
pub(crate) fn root_of(c: &CommEntry, root: c_int) -> Res<i32> {
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

/// The per-rank blocks of a collective's buffer as its caller describes
/// them: `count` elements of a datatype for every rank (`MPI_Gather`,
/// `MPI_Scatter`, …), or a count and a displacement per rank in two
/// arrays (`MPI_Gatherv`, `MPI_Scatterv`, …).
#[derive(Clone, Copy)]
pub(crate) enum Blocks {
    /// `count` elements of the datatype each, one after the other.
    Uniform(c_int, Handle),
    /// The counts and the displacements arrays, and the datatype.
    Vector(*const c_int, *const c_int, Handle),
}

impl Blocks {
    /// The [`Layout`] of the blocks in a communicator of `p` processes.
    ///
    /// # Safety
    ///
    /// The non-null pointers of a `Vector` are valid for `p` `int`s each.
    pub(crate) unsafe fn layout(self, p: usize) -> Res<Layout> {
        match self {
            Blocks::Uniform(count, dt) => {
                let (n, _) = buffer_len(count, dt)?;
                let need = p.checked_mul(n).ok_or(Code(MPI_ERR_COUNT))?;
                Ok((vec![n; p], (0..p).map(|i| i * n).collect(), need))
            }
            Blocks::Vector(counts, displs, dt) => {
                let t = datatype::in_memory(dt)?;
                // SAFETY: by the caller's contract.
                let (c, d) = unsafe { (ffi::array(counts, p)?, ffi::array(displs, p)?) };
                blocks(c, d, t.extent)
            }
        }
    }
}

/// A buffer argument of so many elements of a datatype: what a process
/// sends (`P` = `*const c_void`) or receives (`*mut c_void`) itself.
#[derive(Clone, Copy)]
pub(crate) struct Buf<P>(
    /// Where the elements are.
    pub(crate) P,
    /// How many there are.
    pub(crate) c_int,
    /// Their datatype.
    pub(crate) Handle,
);

impl Buf<*const c_void> {
    /// The bytes to send.
    ///
    /// # Safety
    ///
    /// As for [`ffi::bytes`], for the buffer's elements.
    pub(crate) unsafe fn bytes<'a>(self) -> Res<&'a [u8]> {
        let (len, _) = buffer_len(self.1, self.2)?;
        // SAFETY: by the caller's contract.
        unsafe { ffi::bytes(self.0, len) }
    }
}

impl Buf<*mut c_void> {
    /// The room to receive into.
    ///
    /// # Safety
    ///
    /// As for [`ffi::bytes_mut`], for the buffer's elements.
    pub(crate) unsafe fn bytes_mut<'a>(self) -> Res<&'a mut [u8]> {
        let (len, _) = buffer_len(self.1, self.2)?;
        // SAFETY: by the caller's contract.
        unsafe { ffi::bytes_mut(self.0, len) }
    }
}

/// The part of a rooted collective (gather, scatter) before any buffer is
/// touched: the root, checked against the communicator, and at the root
/// the layout of the blocks. `MPI_IN_PLACE` is for the root alone
/// (`MPI_ERR_BUFFER` elsewhere).
///
/// # Safety
///
/// As for [`Blocks::layout`].
pub(crate) unsafe fn rooted(
    c: &CommEntry,
    root: c_int,
    in_place: bool,
    blocks: Blocks,
) -> Res<(i32, Option<Layout>)> {
    let root = root_of(c, root)?;
    if c.comm.rank() != root {
        return if in_place {
            Err(Code(MPI_ERR_BUFFER))
        } else {
            Ok((root, None))
        };
    }
    // SAFETY: by the caller's contract.
    let layout = unsafe { blocks.layout(c.comm.size() as usize) }?;
    Ok((root, Some(layout)))
}

/// `MPI_Barrier` (§6.3).
#[export]
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
#[export]
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
        // SAFETY: the caller's buffer holds `count` elements; a staged
        // buffer is packed at the root and unpacked elsewhere.
        let mut data = unsafe { crate::buffer::recv(buf, count, dt) }?;
        if c.comm.rank() == root {
            if let crate::buffer::Recv::Staged(v, _) = &mut data {
                // SAFETY: the root's buffer holds `count` elements.
                *v = unsafe { crate::buffer::send(buf, count, dt) }?.into_owned();
            }
        }
        c.comm.broadcast_into(data.bytes(), root)?;
        let n = data.bytes().len();
        if c.comm.rank() != root {
            data.finish(n);
        }
        Ok(())
    })
}

/// The byte length of `count` elements of `dt`, and `opr` on them as the
/// `mpi` crate's operation over bytes (`op::operation`: its grain is the
/// datatype's extent, so a reduction that cuts long vectors into blocks
/// cuts only between elements; a non-commutative operation is applied in
/// rank order).
pub(crate) fn reduction(
    count: c_int,
    dt: Handle,
    opr: Handle,
) -> Res<(usize, mpi::UserOperation<op::Reducer>)> {
    op::operation(count, dt, opr)
}

/// `MPI_Reduce` (§6.9.1); `MPI_IN_PLACE` as `sendbuf` at the root.
///
/// # Safety
///
/// `sendbuf` (unless `MPI_IN_PLACE`) and, at the root, `recvbuf` must be
/// valid for `count` elements of `dt`.
#[export]
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
        let (len, op) = reduction(count, dt, opr)?;
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
#[export]
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
        let (len, op) = reduction(count, dt, opr)?;
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

/// The common part of gather and gatherv: the root receives every block;
/// its own contribution, with `MPI_IN_PLACE`, is its block of the receive
/// buffer.
///
/// # Safety
///
/// As for `MPI_Gatherv`.
unsafe fn gather_common(
    name: &str,
    comm: Handle,
    send: Buf<*const c_void>,
    recvbuf: *mut c_void,
    root: c_int,
    recv_blocks: Blocks,
) -> c_int {
    boundary(name, comm, || {
        let c = handles::comm(comm)?;
        let in_place = is_in_place(send.0);
        // SAFETY: the root's arrays are valid by the caller's contract.
        let (root, layout) = unsafe { rooted(&c, root, in_place, recv_blocks) }?;
        let Some((counts, displs, need)) = layout else {
            // SAFETY: the caller's send buffer holds its elements.
            let send = unsafe { send.bytes() }?;
            return Ok(c.comm.gather_varcount_into(send, None, root)?);
        };
        // SAFETY: the root's receive buffer covers every block.
        let recv = unsafe { ffi::bytes_mut(recvbuf, need) }?;
        let me = root as usize;
        let copy;
        let send: &[u8] = if in_place {
            copy = recv[displs[me]..displs[me] + counts[me]].to_vec();
            &copy
        } else {
            // SAFETY: the caller's send buffer holds its elements.
            unsafe { send.bytes() }?
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
#[export]
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
    let send = Buf(sendbuf, sendcount, sendtype);
    let recv = Blocks::Uniform(recvcount, recvtype);
    // SAFETY: the caller's contract is the one gather_common needs.
    unsafe { gather_common("MPI_Gather", comm, send, recvbuf, root, recv) }
}

/// `MPI_Gatherv` (§6.5); `MPI_IN_PLACE` as `sendbuf` at the root.
///
/// # Safety
///
/// `sendbuf` valid for `sendcount` elements of `sendtype`; at the root,
/// `recvcounts` and `displs` valid for `size` `int`s and `recvbuf` for
/// every block they describe.
#[export]
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
    let send = Buf(sendbuf, sendcount, sendtype);
    let recv = Blocks::Vector(recvcounts, displs, recvtype);
    // SAFETY: the caller's contract is the one gather_common needs.
    unsafe { gather_common("MPI_Gatherv", comm, send, recvbuf, root, recv) }
}

/// The common part of scatter and scatterv: the root sends every block;
/// with `MPI_IN_PLACE` it keeps its own block where it is.
///
/// # Safety
///
/// As for `MPI_Scatterv`.
unsafe fn scatter_common(
    name: &str,
    comm: Handle,
    sendbuf: *const c_void,
    send_blocks: Blocks,
    recv: Buf<*mut c_void>,
    root: c_int,
) -> c_int {
    boundary(name, comm, || {
        let c = handles::comm(comm)?;
        let in_place = is_in_place(recv.0);
        // SAFETY: the root's arrays are valid by the caller's contract.
        let (root, layout) = unsafe { rooted(&c, root, in_place, send_blocks) }?;
        let Some((counts, displs, need)) = layout else {
            // SAFETY: the caller's receive buffer holds its elements.
            let recv = unsafe { recv.bytes_mut() }?;
            return Ok(c.comm.scatter_varcount_into(None, recv, root)?);
        };
        // SAFETY: the root's send buffer covers every block.
        let send = unsafe { ffi::bytes(sendbuf, need) }?;
        let me = root as usize;
        let mut scratch;
        let recv: &mut [u8] = if in_place {
            scratch = vec![0u8; counts[me]];
            &mut scratch
        } else {
            // SAFETY: the caller's receive buffer holds its elements.
            unsafe { recv.bytes_mut() }?
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
#[export]
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
    let send = Blocks::Uniform(sendcount, sendtype);
    let recv = Buf(recvbuf, recvcount, recvtype);
    // SAFETY: the caller's contract is the one scatter_common needs.
    unsafe { scatter_common("MPI_Scatter", comm, sendbuf, send, recv, root) }
}

/// `MPI_Scatterv` (§6.6); `MPI_IN_PLACE` as `recvbuf` at the root.
///
/// # Safety
///
/// At the root `sendcounts` and `displs` valid for `size` `int`s and
/// `sendbuf` for every block; `recvbuf` valid for `recvcount` elements.
#[export]
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
    let send = Blocks::Vector(sendcounts, displs, sendtype);
    let recv = Buf(recvbuf, recvcount, recvtype);
    // SAFETY: the caller's contract is the one scatter_common needs.
    unsafe { scatter_common("MPI_Scatterv", comm, sendbuf, send, recv, root) }
}

/// The common part of allgather and allgatherv: with `MPI_IN_PLACE` a
/// process's contribution is its block of the receive buffer.
///
/// # Safety
///
/// As for `MPI_Allgatherv`.
unsafe fn allgather_common(
    name: &str,
    comm: Handle,
    send: Buf<*const c_void>,
    recvbuf: *mut c_void,
    recv_blocks: Blocks,
) -> c_int {
    boundary(name, comm, || {
        let c = handles::comm(comm)?;
        let (p, me) = (c.comm.size() as usize, c.comm.rank() as usize);
        // SAFETY: the arrays are valid by the caller's contract.
        let (counts, displs, need) = unsafe { recv_blocks.layout(p) }?;
        // SAFETY: the caller's receive buffer covers every block.
        let recv = unsafe { ffi::bytes_mut(recvbuf, need) }?;
        let copy;
        let send: &[u8] = if is_in_place(send.0) {
            copy = recv[displs[me]..displs[me] + counts[me]].to_vec();
            &copy
        } else {
            // SAFETY: the caller's send buffer holds its elements.
            unsafe { send.bytes() }?
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
#[export]
pub(crate) unsafe extern "C" fn MPI_Allgather(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Handle,
    comm: Handle,
) -> c_int {
    let send = Buf(sendbuf, sendcount, sendtype);
    let recv = Blocks::Uniform(recvcount, recvtype);
    // SAFETY: the caller's contract is the one allgather_common needs.
    unsafe { allgather_common("MPI_Allgather", comm, send, recvbuf, recv) }
}

/// `MPI_Allgatherv` (§6.7); `MPI_IN_PLACE` as `sendbuf`.
///
/// # Safety
///
/// `sendbuf` valid for `sendcount` elements; `recvcounts` and `displs`
/// for `size` `int`s and `recvbuf` for every block they describe.
#[export]
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
    let send = Buf(sendbuf, sendcount, sendtype);
    let recv = Blocks::Vector(recvcounts, displs, recvtype);
    // SAFETY: the caller's contract is the one allgather_common needs.
    unsafe { allgather_common("MPI_Allgatherv", comm, send, recvbuf, recv) }
}

/// The common part of alltoall and alltoallv: `MPI_IN_PLACE` sends from a
/// copy of the receive buffer with its layout.
///
/// # Safety
///
/// As for `MPI_Alltoallv`.
unsafe fn alltoall_common(
    name: &str,
    comm: Handle,
    sendbuf: *const c_void,
    send_blocks: Blocks,
    recvbuf: *mut c_void,
    recv_blocks: Blocks,
) -> c_int {
    boundary(name, comm, || {
        let c = handles::comm(comm)?;
        let p = c.comm.size() as usize;
        // SAFETY: the arrays are valid by the caller's contract.
        let (rc, rd, rneed) = unsafe { recv_blocks.layout(p) }?;
        // SAFETY: the caller's receive buffer covers every block.
        let recv = unsafe { ffi::bytes_mut(recvbuf, rneed) }?;
        let copy;
        let (send, sc, sd): (&[u8], Vec<usize>, Vec<usize>) = if is_in_place(sendbuf) {
            copy = recv.to_vec();
            (&copy, rc.clone(), rd.clone())
        } else {
            // SAFETY: the arrays are valid by the caller's contract.
            let (sc, sd, sneed) = unsafe { send_blocks.layout(p) }?;
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
#[export]
pub(crate) unsafe extern "C" fn MPI_Alltoall(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Handle,
    comm: Handle,
) -> c_int {
    let send = Blocks::Uniform(sendcount, sendtype);
    let recv = Blocks::Uniform(recvcount, recvtype);
    // SAFETY: the caller's contract is the one alltoall_common needs.
    unsafe { alltoall_common("MPI_Alltoall", comm, sendbuf, send, recvbuf, recv) }
}

/// `MPI_Alltoallv` (§6.8); `MPI_IN_PLACE` as `sendbuf`.
///
/// # Safety
///
/// The count and displacement arrays valid for `size` `int`s each, and
/// the buffers for every block they describe.
#[export]
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
    let send = Blocks::Vector(sendcounts, sdispls, sendtype);
    let recv = Blocks::Vector(recvcounts, rdispls, recvtype);
    // SAFETY: the caller's contract is the one alltoall_common needs.
    unsafe { alltoall_common("MPI_Alltoallv", comm, sendbuf, send, recvbuf, recv) }
}

/// The per-rank blocks of an alltoallw buffer: `counts[i]` elements of
/// `types[i]` at byte displacement `displs[i]` (§6.8).
///
/// # Safety
///
/// The non-null arrays are valid for `p` elements each.
pub(crate) unsafe fn w_layout(
    counts: *const c_int,
    displs: *const c_int,
    types: *const Handle,
    p: usize,
) -> Res<Layout> {
    // SAFETY: by the caller's contract.
    let (c, d, t) = unsafe {
        (
            ffi::array(counts, p)?,
            ffi::array(displs, p)?,
            ffi::array(types, p)?,
        )
    };
    let mut bytes = Vec::with_capacity(p);
    let mut offsets = Vec::with_capacity(p);
    let mut end = 0usize;
    for i in 0..p {
        let (n, _) = buffer_len(c[i], t[i])?;
        let o = usize::try_from(d[i]).map_err(|_| Code(MPI_ERR_ARG))?;
        end = end.max(o.checked_add(n).ok_or(Code(MPI_ERR_ARG))?);
        bytes.push(n);
        offsets.push(o);
    }
    Ok((bytes, offsets, end))
}

/// `MPI_Alltoallw` (§6.8): blocks of a datatype each, at byte
/// displacements; `MPI_IN_PLACE` as `sendbuf` sends from a copy of the
/// receive buffer with its layout.
///
/// # Safety
///
/// The count, displacement and type arrays valid for `size` elements
/// each, and the buffers for every block they describe.
#[export]
pub(crate) unsafe extern "C" fn MPI_Alltoallw(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtypes: *const Handle,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtypes: *const Handle,
    comm: Handle,
) -> c_int {
    boundary("MPI_Alltoallw", comm, || {
        let c = handles::comm(comm)?;
        let p = c.comm.size() as usize;
        // SAFETY: the arrays hold `size` elements each.
        let (rc, rd, rneed) = unsafe { w_layout(recvcounts, rdispls, recvtypes, p) }?;
        // SAFETY: the caller's receive buffer covers every block.
        let recv = unsafe { ffi::bytes_mut(recvbuf, rneed) }?;
        let copy;
        let (send, sc, sd): (&[u8], Vec<usize>, Vec<usize>) = if is_in_place(sendbuf) {
            copy = recv.to_vec();
            (&copy, rc.clone(), rd.clone())
        } else {
            // SAFETY: the arrays hold `size` elements each.
            let (sc, sd, sneed) = unsafe { w_layout(sendcounts, sdispls, sendtypes, p) }?;
            // SAFETY: the caller's send buffer covers every block.
            (unsafe { ffi::bytes(sendbuf, sneed) }?, sc, sd)
        };
        Ok(c.comm.all_to_all_w_into(send, &sc, &sd, recv, &rc, &rd)?)
    })
}
