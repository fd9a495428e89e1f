//! The reductions of MPI 5.0 chapter 6 beyond reduce: `MPI_Allreduce`
//! (§6.9.6), `MPI_Scan` (§6.11.1), `MPI_Exscan` (§6.11.2),
//! `MPI_Reduce_scatter` (§6.10.1) and `MPI_Reduce_scatter_block`
//! (§6.10.2), with their nonblocking, persistent and `_c` forms
//! (`family!`), on the `mpi` crate's collectives over bytes, with
//! `MPI_IN_PLACE` (the input is then taken from the receive buffer) and
//! any committed datatype (`coll_stage.rs`).

use std::ffi::{c_int, c_void};

use crate::coll::{reduction, Reduction};
use crate::coll_stage::{families, family, reduction_side, Int};
use crate::datatype::count;
use crate::error::{boundary, Code, Res, MPI_ERR_COUNT};
use crate::ffi;
use crate::handles::{self, Handle};
use crate::icoll::{iallreduce, ireduce_scatter, AllKind};

/// Allreduce, scan and exscan (`kind`): rank 0's receive buffer is left
/// as it is by an exclusive scan (a staged one is not unpacked there).
///
/// # Safety
///
/// As for `MPI_Allreduce`.
#[allow(clippy::too_many_arguments)]
unsafe fn all_reduce<C: Int>(
    name: &str,
    comm: Handle,
    kind: AllKind,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: C,
    dt: Handle,
    opr: Handle,
) -> c_int {
    boundary(name, comm, || {
        // Of these, only allreduce is provided on inter-communicators.
        let c = match kind {
            AllKind::Allreduce => handles::comm(comm)?,
            _ => handles::intra(comm)?,
        };
        if c.comm.is_inter() {
            // SAFETY: by the caller's contract.
            return unsafe { crate::intercoll::allreduce(&c, sendbuf, recvbuf, count, dt, opr) };
        }
        // SAFETY: the buffers hold `count` elements.
        let (out, op, send) = unsafe { reduction(sendbuf, recvbuf, count, dt, opr) }?;
        if kind == AllKind::Exscan && c.comm.rank() == 0 && !out.direct() {
            let mut scratch = vec![0u8; out.len()];
            return Ok(c.comm.exscan_into(&send, &mut scratch, &op)?);
        }
        // SAFETY: the receive buffer holds `count` elements.
        unsafe {
            out.run(|b, _, _| {
                match kind {
                    AllKind::Allreduce => c.comm.all_reduce_into(&send, b, &op)?,
                    AllKind::Scan => c.comm.scan_into(&send, b, &op)?,
                    AllKind::Exscan => c.comm.exscan_into(&send, b, &op)?,
                }
                Ok(())
            })
        }
    })
}

families! {
    (
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: Count,
        dt: Handle,
        opr: Handle,
        comm: Handle,
    ) on comm as name;

    /// `MPI_Allreduce` (§6.9.6); `MPI_IN_PLACE` as `sendbuf`.
    ///
    /// # Safety
    ///
    /// `sendbuf` (unless `MPI_IN_PLACE`) and `recvbuf` must be valid for
    /// `count` elements of `dt`.
    fn MPI_Allreduce, MPI_Allreduce_c;
        MPI_Iallreduce, MPI_Iallreduce_c;
        MPI_Allreduce_init, MPI_Allreduce_init_c
    {
        let kind = AllKind::Allreduce;
    }
    moves all_reduce / iallreduce(kind, sendbuf, recvbuf, count, dt, opr);

    /// `MPI_Scan` (§6.11.1): the reduction of ranks 0 to this one, in
    /// rank order; `MPI_IN_PLACE` as `sendbuf`.
    ///
    /// # Safety
    ///
    /// `sendbuf` (unless `MPI_IN_PLACE`) and `recvbuf` valid for `count`
    /// elements of `dt`.
    fn MPI_Scan, MPI_Scan_c;
        MPI_Iscan, MPI_Iscan_c;
        MPI_Scan_init, MPI_Scan_init_c
    {
        let kind = AllKind::Scan;
    }
    moves all_reduce / iallreduce(kind, sendbuf, recvbuf, count, dt, opr);

    /// `MPI_Exscan` (§6.11.2): the reduction of ranks 0 to this one's
    /// predecessor, in rank order (rank 0's `recvbuf` is left as it is);
    /// `MPI_IN_PLACE` as `sendbuf`.
    ///
    /// # Safety
    ///
    /// As for `MPI_Scan`.
    fn MPI_Exscan, MPI_Exscan_c;
        MPI_Iexscan, MPI_Iexscan_c;
        MPI_Exscan_init, MPI_Exscan_init_c
    {
        let kind = AllKind::Exscan;
    }
    moves all_reduce / iallreduce(kind, sendbuf, recvbuf, count, dt, opr);
}

/// The element counts of a reduce-scatter, from `recvcounts` (`size`
/// of them) or `recvcount` for every rank, and their sum.
///
/// # Safety
///
/// A non-null `counts` is valid for `p` elements.
pub(crate) unsafe fn scatter_counts<C: Int>(
    counts: Option<*const C>,
    block: C,
    p: usize,
) -> Res<(Vec<usize>, usize)> {
    let counts = match counts {
        // SAFETY: by the caller's contract.
        Some(ptr) => unsafe { ffi::array(ptr, p) }?
            .iter()
            .map(|&n| count(n))
            .collect::<Res<Vec<usize>>>()?,
        None => vec![count(block)?; p],
    };
    let total = counts.iter().try_fold(0usize, |a, &n| a.checked_add(n));
    Ok((counts, total.ok_or(Code(MPI_ERR_COUNT))?))
}

/// The common start of reduce-scatter (blocking or not), resolved: the
/// reduction of the whole input with this rank's block as its output
/// side, and each rank's block in bytes of the input. With
/// `MPI_IN_PLACE` the receive buffer holds the whole input.
///
/// # Safety
///
/// `counts` (if given) valid for `p` elements.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn scatter_parts<C: Int>(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    counts: Option<*const C>,
    block: C,
    dt: Handle,
    opr: Handle,
    p: usize,
    r: usize,
) -> Res<(Reduction, Vec<usize>)> {
    // SAFETY: the caller passes `size` counts.
    let (counts, total) = unsafe { scatter_counts(counts, block, p) }?;
    let total = i64::try_from(total).map_err(|_| Code(MPI_ERR_COUNT))?;
    let mut red = Reduction::new(sendbuf, recvbuf, total, dt, opr)?;
    let grain = red.out.grain();
    let bytes = counts.iter().map(|&n| n * grain).collect();
    red.out = reduction_side(recvbuf, counts[r], dt)?;
    Ok((red, bytes))
}

family! {
    /// `MPI_Reduce_scatter` (§6.10.1): the reduction of every rank's
    /// `sendbuf` (the sum of `recvcounts` elements), of which rank i gets
    /// block i; `MPI_IN_PLACE` as `sendbuf` (the input is in `recvbuf`).
    ///
    /// # Safety
    ///
    /// `recvcounts` valid for `size` elements; `sendbuf` (unless
    /// `MPI_IN_PLACE`) valid for their sum of elements of `dt`, `recvbuf`
    /// for this rank's count (for their sum with `MPI_IN_PLACE`).
    fn MPI_Reduce_scatter, MPI_Reduce_scatter_c;
        MPI_Ireduce_scatter, MPI_Ireduce_scatter_c;
        MPI_Reduce_scatter_init, MPI_Reduce_scatter_init_c(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        recvcounts: *const Count,
        dt: Handle,
        opr: Handle,
        comm: Handle,
    ) on comm as name {}
    blocking {
        // SAFETY: the caller's contract is reduce_scatter's.
        unsafe { reduce_scatter(name, sendbuf, recvbuf, Some(recvcounts), 0, dt, opr, comm) }
    }
    start ireduce_scatter(sendbuf, recvbuf, Some(recvcounts), 0, dt, opr);
}

family! {
    /// `MPI_Reduce_scatter_block` (§6.10.2): as `MPI_Reduce_scatter`
    /// with `recvcount` elements for every rank.
    ///
    /// # Safety
    ///
    /// `sendbuf` (unless `MPI_IN_PLACE`) valid for `size × recvcount`
    /// elements of `dt`, `recvbuf` for `recvcount` (`size × recvcount`
    /// with `MPI_IN_PLACE`).
    fn MPI_Reduce_scatter_block, MPI_Reduce_scatter_block_c;
        MPI_Ireduce_scatter_block, MPI_Ireduce_scatter_block_c;
        MPI_Reduce_scatter_block_init, MPI_Reduce_scatter_block_init_c(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        recvcount: Count,
        dt: Handle,
        opr: Handle,
        comm: Handle,
    ) on comm as name {}
    blocking {
        // SAFETY: the caller's contract is reduce_scatter's.
        unsafe { reduce_scatter(name, sendbuf, recvbuf, None, recvcount, dt, opr, comm) }
    }
    start ireduce_scatter(sendbuf, recvbuf, None, recvcount, dt, opr);
}

/// Reduce-scatter and reduce-scatter-block.
///
/// # Safety
///
/// As for `MPI_Reduce_scatter`.
#[allow(clippy::too_many_arguments)]
unsafe fn reduce_scatter<C: Int>(
    name: &str,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    counts: Option<*const C>,
    block: C,
    dt: Handle,
    opr: Handle,
    comm: Handle,
) -> c_int {
    boundary(name, comm, || {
        let c = handles::comm(comm)?;
        if c.comm.is_inter() {
            crate::intercoll::not_in_place(sendbuf)?;
        }
        // On an inter-communicator too, `counts` are the local group's
        // (§6.10.1); the `mpi` crate reduces the other group's data.
        let (p, r) = (c.comm.size() as usize, c.comm.rank() as usize);
        // SAFETY: by the caller's contract.
        let (red, bytes) =
            unsafe { scatter_parts(sendbuf, recvbuf, counts, block, dt, opr, p, r) }?;
        // SAFETY: the send buffer (the receive one in place) holds the
        // whole input.
        let send = unsafe { red.input.read() }?;
        let op = red.op.operation();
        // SAFETY: the receive buffer holds this rank's block.
        unsafe {
            red.out
                .run(|b, _, _| Ok(c.comm.reduce_scatter_into(&send, b, &bytes, &op)?))
        }
    })
}
