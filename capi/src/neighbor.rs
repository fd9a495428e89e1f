//! The neighborhood collectives (MPI 5.0 §8.6): `MPI_Neighbor_allgather(v)`
//! and `MPI_Neighbor_alltoall(v,w)`, their nonblocking (§8.7) and
//! persistent (§8.8) forms and the `_c` form of each, on the `mpi`
//! crate's neighborhood collectives over bytes.
//!
//! The neighbours come from the communicator's topology (`topo.rs`,
//! `MPI_ERR_TOPOLOGY` without one): a Cartesian grid's in each dimension
//! back then forward, a graph's `MPI_Graph_neighbors`, a distributed
//! graph's sources and destinations. The buffers are sides
//! (`coll_stage.rs`) of one block per source (receive) or destination
//! (send) instead of one per rank: the user's memory for flat datatypes,
//! packed or staged otherwise. The blocks of `MPI_PROC_NULL` neighbours
//! are left out of both sides, so they are neither read nor written.
//! `MPI_IN_PLACE` is not allowed (`MPI_ERR_BUFFER`). The nonblocking and
//! persistent forms resolve the arguments once (the neighbourhood, the
//! arrays, the datatypes), as the other collectives' starters do
//! (`icoll.rs`).

use std::ffi::{c_int, c_void};

use mpi::topology::Neighborhood;

use crate::coll_stage::{families, family, Int, Side, Spec};
use crate::error::{boundary, explained, Res, MPI_ERR_BUFFER};
use crate::ffi::is_in_place;
use crate::handles::{self, CommEntry, Handle};
use crate::icoll::{Run, Starter};
use crate::topo::neighborhood;

/// A neighborhood collective's arguments, resolved.
struct Resolved {
    nbrs: Neighborhood,
    /// The send side: one block per destination, or for an allgather one
    /// block sent to every destination.
    input: Side,
    /// The byte count and offset in the input of each destination's
    /// block.
    counts: Vec<usize>,
    displs: Vec<usize>,
    /// The receive side, one block per source.
    out: Side,
}

impl Resolved {
    /// Checks the arguments on `c` and resolves them; `gather` for an
    /// allgather, whose `send` is a single block.
    ///
    /// # Safety
    ///
    /// The non-null arrays of `send` hold one element per destination,
    /// those of `recv` one per source.
    unsafe fn new<C: Int, D: Int>(
        c: &CommEntry,
        sendbuf: *const c_void,
        send: Spec<C, D>,
        recvbuf: *mut c_void,
        recv: Spec<C, D>,
        gather: bool,
    ) -> Res<Resolved> {
        if is_in_place(sendbuf) || is_in_place(recvbuf) {
            return Err(explained(
                MPI_ERR_BUFFER,
                "MPI_IN_PLACE is not allowed in a neighborhood collective (MPI 5.0 §8.6)",
            ));
        }
        let nbrs = neighborhood(c)?;
        let (ins, outs) = (&nbrs.sources, &nbrs.destinations);
        // SAFETY: the arrays hold one element per source (caller).
        let out = unsafe { recv.side(recvbuf, ins.len()) }?.skipping(|i| ins[i].is_none())?;
        let (input, counts, displs) = if gather {
            // SAFETY: a single block reads no array.
            let input = unsafe { send.side(sendbuf, 1) }?;
            let (n, d) = (input.counts()[0], input.displs()[0]);
            (input, vec![n; outs.len()], vec![d; outs.len()])
        } else {
            // SAFETY: the arrays hold one element per destination
            // (caller).
            let input =
                unsafe { send.side(sendbuf, outs.len()) }?.skipping(|i| outs[i].is_none())?;
            let (n, d) = (input.counts().to_vec(), input.displs().to_vec());
            (input, n, d)
        };
        Ok(Resolved {
            nbrs,
            input,
            counts,
            displs,
            out,
        })
    }
}

/// The blocking neighborhood collectives.
///
/// # Safety
///
/// As for `MPI_Neighbor_alltoallw`: the arrays hold one element per
/// neighbour, the buffers every block they describe.
unsafe fn neighbor<C: Int, D: Int>(
    name: &str,
    comm: Handle,
    sendbuf: *const c_void,
    send: Spec<C, D>,
    recvbuf: *mut c_void,
    recv: Spec<C, D>,
    gather: bool,
) -> c_int {
    boundary(name, comm, || {
        let c = handles::comm(comm)?;
        // SAFETY: by the caller's contract.
        let Resolved {
            nbrs,
            input,
            counts,
            displs,
            out,
        } = unsafe { Resolved::new(&c, sendbuf, send, recvbuf, recv, gather) }?;
        // SAFETY: the send buffer holds every block sent.
        let data = unsafe { input.input() }?;
        // SAFETY: the receive buffer holds every block received.
        unsafe {
            out.run(|b, rc, rd| {
                Ok(c.comm
                    .neighbor_all_to_all_w_into(&nbrs, &data, &counts, &displs, b, rc, rd)?)
            })
        }
    })
}

/// The start of the nonblocking and persistent neighborhood collectives.
///
/// # Safety
///
/// As for [`neighbor`], the buffers whenever the request is active.
unsafe fn ineighbor<'f, C: Int + 'f, D: Int + 'f>(
    sendbuf: *const c_void,
    send: Spec<C, D>,
    recvbuf: *mut c_void,
    recv: Spec<C, D>,
    gather: bool,
) -> Box<Starter<'f>> {
    Box::new(move |c| {
        // SAFETY: the arrays are valid by the caller's contract (read
        // now, once).
        let r = unsafe { Resolved::new(c, sendbuf, send, recvbuf, recv, gather) }?;
        let run: Box<Run> = Box::new(move |c: &CommEntry| {
            // SAFETY: the send buffer holds every block sent.
            let data = unsafe { r.input.input() }?;
            let (nbrs, sc, sd) = (&r.nbrs, &r.counts, &r.displs);
            // SAFETY: the receive buffer holds every block received, the
            // request's until it completes (§8.7).
            unsafe {
                r.out.clone().start(|b, rc, rd| {
                    Ok(c.comm
                        .ineighbor_all_to_all_w_into(nbrs, &data, sc, sd, b, rc, rd)?)
                })
            }
        });
        Ok(run)
    })
}

families! {
    sections "§8.7", "§8.8";
    (
        sendbuf: *const c_void,
        sendcount: Count,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcount: Count,
        recvtype: Handle,
        comm: Handle,
    ) on comm as name;

    /// `MPI_Neighbor_allgather` (§8.6.1): `sendbuf` to every destination,
    /// one block from each source into `recvbuf`, in the neighbours'
    /// order (nonblocking §8.7.1, persistent §8.8.1).
    ///
    /// # Safety
    ///
    /// `sendbuf` valid for `sendcount` elements of `sendtype`, `recvbuf`
    /// for `indegree × recvcount` elements of `recvtype`.
    fn MPI_Neighbor_allgather, MPI_Neighbor_allgather_c;
        MPI_Ineighbor_allgather, MPI_Ineighbor_allgather_c;
        MPI_Neighbor_allgather_init, MPI_Neighbor_allgather_init_c
    {
        let send = Spec::<Count, Disp>::One(sendcount, sendtype);
        let recv = Spec::Each(recvcount, recvtype);
        let gather = true;
    }
    moves neighbor / ineighbor(sendbuf, send, recvbuf, recv, gather);

    /// `MPI_Neighbor_alltoall` (§8.6.2): block `i` of `sendbuf` to
    /// destination `i`, block `j` of `recvbuf` from source `j`
    /// (nonblocking §8.7.2, persistent §8.8.2).
    ///
    /// # Safety
    ///
    /// `sendbuf` valid for `outdegree × sendcount` elements of
    /// `sendtype`, `recvbuf` for `indegree × recvcount` elements of
    /// `recvtype`.
    fn MPI_Neighbor_alltoall, MPI_Neighbor_alltoall_c;
        MPI_Ineighbor_alltoall, MPI_Ineighbor_alltoall_c;
        MPI_Neighbor_alltoall_init, MPI_Neighbor_alltoall_init_c
    {
        let send = Spec::<Count, Disp>::Each(sendcount, sendtype);
        let recv = Spec::Each(recvcount, recvtype);
        let gather = false;
    }
    moves neighbor / ineighbor(sendbuf, send, recvbuf, recv, gather);
}

family! {
    sections "§8.7", "§8.8";
    /// `MPI_Neighbor_allgatherv` (§8.6.1): as `MPI_Neighbor_allgather`
    /// with a count and a displacement (in extents) per source
    /// (nonblocking §8.7.1, persistent §8.8.1).
    ///
    /// # Safety
    ///
    /// `sendbuf` valid for `sendcount` elements; `recvcounts` and
    /// `displs` for `indegree` elements and `recvbuf` for every block
    /// they describe.
    fn MPI_Neighbor_allgatherv, MPI_Neighbor_allgatherv_c;
        MPI_Ineighbor_allgatherv, MPI_Ineighbor_allgatherv_c;
        MPI_Neighbor_allgatherv_init, MPI_Neighbor_allgatherv_init_c(
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
        let gather = true;
    }
    moves neighbor / ineighbor(sendbuf, send, recvbuf, recv, gather);
}

family! {
    sections "§8.7", "§8.8";
    /// `MPI_Neighbor_alltoallv` (§8.6.2): as `MPI_Neighbor_alltoall` with
    /// a count and a displacement (in extents) per neighbour
    /// (nonblocking §8.7.2, persistent §8.8.2).
    ///
    /// # Safety
    ///
    /// The send arrays valid for `outdegree` elements, the receive ones
    /// for `indegree`, and the buffers for every block they describe.
    fn MPI_Neighbor_alltoallv, MPI_Neighbor_alltoallv_c;
        MPI_Ineighbor_alltoallv, MPI_Ineighbor_alltoallv_c;
        MPI_Neighbor_alltoallv_init, MPI_Neighbor_alltoallv_init_c(
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
        let gather = false;
    }
    moves neighbor / ineighbor(sendbuf, send, recvbuf, recv, gather);
}

family! {
    sections "§8.7", "§8.8";
    /// `MPI_Neighbor_alltoallw` (§8.6.2): blocks of a datatype each, at
    /// byte displacements (`MPI_Aint` in both forms), one per neighbour
    /// (nonblocking §8.7.2, persistent §8.8.2).
    ///
    /// # Safety
    ///
    /// The send arrays valid for `outdegree` elements, the receive ones
    /// for `indegree`, and the buffers for every block they describe.
    fn MPI_Neighbor_alltoallw, MPI_Neighbor_alltoallw_c;
        MPI_Ineighbor_alltoallw, MPI_Ineighbor_alltoallw_c;
        MPI_Neighbor_alltoallw_init, MPI_Neighbor_alltoallw_init_c(
        sendbuf: *const c_void,
        sendcounts: *const Count,
        sdispls: *const isize,
        sendtypes: *const Handle,
        recvbuf: *mut c_void,
        recvcounts: *const Count,
        rdispls: *const isize,
        recvtypes: *const Handle,
        comm: Handle,
    ) on comm as name {
        let send = Spec::W(sendcounts, sdispls, sendtypes);
        let recv = Spec::W(recvcounts, rdispls, recvtypes);
        let gather = false;
    }
    moves neighbor / ineighbor(sendbuf, send, recvbuf, recv, gather);
}
