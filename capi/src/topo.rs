//! Process topologies (MPI 5.0 chapter 8): Cartesian, graph and
//! distributed-graph communicators and their inquiries, on the `mpi`
//! crate's [`mpi::topology`]. The topology is kept with the
//! communicator (its `CommMeta`) and copied by `MPI_Comm_dup`. No call
//! reorders ranks (`reorder` is accepted and not used, as §8.5 allows):
//! a new communicator holds the first processes of the old one in order.

use o2g_mpi_abi_macros::export;
use std::ffi::c_int;
use std::rc::Rc;
use std::sync::Arc;

use mpi::topology::{Cartesian, DistGraph, Graph, Neighborhood, Topology};

use crate::comm::{adopt, lock};
use crate::error::{
    boundary, explained, Code, Res, MPI_ERR_ARG, MPI_ERR_DIMS, MPI_ERR_RANK, MPI_ERR_TOPOLOGY,
};
use crate::ffi;
use crate::handles::{self, CommEntry, Handle};
use crate::status::{PROC_NULL, UNDEFINED};

/// `MPI_CART`, `MPI_GRAPH`, `MPI_DIST_GRAPH` (§8.5.5).
const CART: c_int = 211;
const GRAPH: c_int = 212;
const DIST_GRAPH: c_int = 213;
/// `MPI_UNWEIGHTED`, `MPI_WEIGHTS_EMPTY`: `(int *)10` and `(int *)11`.
const UNWEIGHTED: usize = 10;
const WEIGHTS_EMPTY: usize = 11;

fn none() -> Handle {
    std::ptr::null_mut()
}

/// A count argument; `what` if negative.
fn count(n: c_int, what: c_int) -> Res<usize> {
    usize::try_from(n).map_err(|_| Code(what))
}

/// The topology of the communicator `comm`, if it has one.
fn topology(comm: Handle) -> Res<(Rc<CommEntry>, Option<Arc<Topology>>)> {
    let c = handles::comm(comm)?;
    let t = lock(&c.meta.topo).clone();
    Ok((c, t))
}

/// The Cartesian topology of `comm` (`MPI_ERR_TOPOLOGY` for none).
fn cart(comm: Handle) -> Res<(Rc<CommEntry>, Cartesian)> {
    match topology(comm)? {
        (c, Some(t)) => match &*t {
            Topology::Cartesian(g) => Ok((c, g.clone())),
            _ => Err(Code(MPI_ERR_TOPOLOGY)),
        },
        _ => Err(Code(MPI_ERR_TOPOLOGY)),
    }
}

/// The graph topology of `comm` (`MPI_ERR_TOPOLOGY` for none).
fn graph(comm: Handle) -> Res<Graph> {
    match topology(comm)?.1.as_deref() {
        Some(Topology::Graph(g)) => Ok(g.clone()),
        _ => Err(Code(MPI_ERR_TOPOLOGY)),
    }
}

/// The distributed-graph topology of `comm` (`MPI_ERR_TOPOLOGY` for
/// none).
fn dist_graph(comm: Handle) -> Res<DistGraph> {
    match topology(comm)?.1.as_deref() {
        Some(Topology::DistGraph(g)) => Ok(g.clone()),
        _ => Err(Code(MPI_ERR_TOPOLOGY)),
    }
}

/// The neighbourhood of this process in `c`'s topology, for the
/// neighborhood collectives (§8.6); `MPI_ERR_TOPOLOGY` without one.
pub(crate) fn neighborhood(c: &CommEntry) -> Res<Neighborhood> {
    let Some(t) = lock(&c.meta.topo).clone() else {
        return Err(explained(
            MPI_ERR_TOPOLOGY,
            "a neighborhood collective needs a communicator with a Cartesian, graph \
             or distributed graph topology",
        ));
    };
    Ok(t.neighborhood(c.comm.rank())?)
}

/// Makes the communicator of the first `n` processes of `c` with the
/// topology `t`; `MPI_COMM_NULL` on the other processes.
fn create_with(c: &Rc<CommEntry>, n: usize, t: Topology) -> Res<Handle> {
    if n > c.comm.size() as usize {
        return Err(Code(MPI_ERR_ARG));
    }
    match c.comm.create_first(n)? {
        Some(new) => {
            let h = adopt(c, new, Vec::new())?;
            *lock(&handles::comm(h)?.meta.topo) = Some(Arc::new(t));
            Ok(h)
        }
        None => Ok(handles::handle(handles::COMM_NULL)),
    }
}

/// The grid `ndims`, `dims` and `periods` describe.
///
/// # Safety
///
/// `dims` and `periods` are valid for `ndims` reads.
unsafe fn grid(ndims: c_int, dims: *const c_int, periods: *const c_int) -> Res<Cartesian> {
    let n = count(ndims, MPI_ERR_DIMS)?;
    // SAFETY: by this function's contract.
    let (d, p) = unsafe { (ffi::array(dims, n)?, ffi::array(periods, n)?) };
    Cartesian::new(d.to_vec(), p.iter().map(|&x| x != 0).collect()).map_err(|_| Code(MPI_ERR_DIMS))
}

/// The graph `nnodes`, `index` and `edges` describe.
///
/// # Safety
///
/// `index` is valid for `nnodes` reads, `edges` for `index[nnodes-1]`.
unsafe fn graph_arg(nnodes: c_int, index: *const c_int, edges: *const c_int) -> Res<Graph> {
    let n = count(nnodes, MPI_ERR_ARG)?;
    // SAFETY: by this function's contract.
    let index = unsafe { ffi::array(index, n) }?;
    let ne = count(index.last().copied().unwrap_or(0), MPI_ERR_ARG)?;
    // SAFETY: as above.
    let edges = unsafe { ffi::array(edges, ne) }?;
    Graph::new(index.to_vec(), edges.to_vec()).map_err(|_| Code(MPI_ERR_ARG))
}

/// `MPI_Dims_create` (§8.5.2): fills the zero entries of `dims` with a
/// balanced factorisation of what `nnodes` leaves, largest first.
///
/// # Safety
///
/// `dims` must be valid for `ndims` reads and writes.
#[export]
pub(crate) unsafe extern "C" fn MPI_Dims_create(
    nnodes: c_int,
    ndims: c_int,
    dims: *mut c_int,
) -> c_int {
    boundary("MPI_Dims_create", none(), || {
        let n = count(ndims, MPI_ERR_DIMS)?;
        // SAFETY: the caller passes `ndims` entries.
        let d = unsafe { ffi::array_mut(dims, n) }?;
        mpi::topology::dims_create(nnodes, d).map_err(|_| Code(MPI_ERR_DIMS))
    })
}

/// `MPI_Cart_create` (§8.5.1): a communicator of the first
/// `dims[0]·…·dims[ndims-1]` processes of `comm_old`, in order, with a
/// Cartesian topology; `MPI_COMM_NULL` for the others. Collective.
///
/// # Safety
///
/// `dims` and `periods` must be valid for `ndims` reads, `comm_cart` for
/// a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Cart_create(
    comm_old: Handle,
    ndims: c_int,
    dims: *const c_int,
    periods: *const c_int,
    _reorder: c_int,
    comm_cart: *mut Handle,
) -> c_int {
    boundary("MPI_Cart_create", comm_old, || {
        // Topologies cannot be added to inter-communicators (§8.1).
        let c = handles::intra_for(comm_old, "MPI_Cart_create")?;
        // SAFETY: the caller passes `ndims` entries each.
        let g = unsafe { grid(ndims, dims, periods) }?;
        let h = create_with(&c, g.size(), Topology::Cartesian(g))?;
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(comm_cart, h) }
    })
}

/// `MPI_Cart_map` (§8.5.8): the rank this process would have in such a
/// grid (its own rank, none being reordered), `MPI_UNDEFINED` if it would
/// not be in it.
///
/// # Safety
///
/// `dims` and `periods` must be valid for `ndims` reads, `newrank` for a
/// write of one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Cart_map(
    comm: Handle,
    ndims: c_int,
    dims: *const c_int,
    periods: *const c_int,
    newrank: *mut c_int,
) -> c_int {
    boundary("MPI_Cart_map", comm, || {
        let c = handles::comm(comm)?;
        // SAFETY: the caller passes `ndims` entries each.
        let g = unsafe { grid(ndims, dims, periods) }?;
        if g.size() > c.comm.size() as usize {
            return Err(Code(MPI_ERR_ARG));
        }
        let r = c.comm.rank();
        let r = if (r as usize) < g.size() {
            r
        } else {
            UNDEFINED
        };
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(newrank, r) }
    })
}

/// `MPI_Cartdim_get` (§8.5.5).
///
/// # Safety
///
/// `ndims` must be valid for a write of one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Cartdim_get(comm: Handle, ndims: *mut c_int) -> c_int {
    boundary("MPI_Cartdim_get", comm, || {
        let n = cart(comm)?.1.dims.len() as c_int;
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(ndims, n) }
    })
}

/// `MPI_Cart_get` (§8.5.5): extents, periodicities and this process's
/// coordinates (`maxdims` at least the number of dimensions).
///
/// # Safety
///
/// `dims`, `periods` and `coords` must be valid for `maxdims` writes.
#[export]
pub(crate) unsafe extern "C" fn MPI_Cart_get(
    comm: Handle,
    maxdims: c_int,
    dims: *mut c_int,
    periods: *mut c_int,
    coords: *mut c_int,
) -> c_int {
    boundary("MPI_Cart_get", comm, || {
        let (c, g) = cart(comm)?;
        let n = g.dims.len();
        if count(maxdims, MPI_ERR_ARG)? < n {
            return Err(Code(MPI_ERR_ARG));
        }
        let me = g.coords(c.comm.rank())?;
        // SAFETY: the caller passes `maxdims >= n` entries each.
        let (d, p, x) = unsafe {
            (
                ffi::array_mut(dims, n)?,
                ffi::array_mut(periods, n)?,
                ffi::array_mut(coords, n)?,
            )
        };
        d.copy_from_slice(&g.dims);
        for (o, &b) in p.iter_mut().zip(&g.periods) {
            *o = c_int::from(b);
        }
        x.copy_from_slice(&me);
        Ok(())
    })
}

/// `MPI_Cart_rank` (§8.5.5): a coordinate outside a periodic dimension
/// wraps around; outside another it is `MPI_ERR_ARG`.
///
/// # Safety
///
/// `coords` must be valid for as many reads as there are dimensions,
/// `rank` for a write of one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Cart_rank(
    comm: Handle,
    coords: *const c_int,
    rank: *mut c_int,
) -> c_int {
    boundary("MPI_Cart_rank", comm, || {
        let (_, g) = cart(comm)?;
        // SAFETY: the caller passes one coordinate per dimension.
        let x = unsafe { ffi::array(coords, g.dims.len()) }?;
        let r = g.rank(x).map_err(|_| Code(MPI_ERR_ARG))?;
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(rank, r) }
    })
}

/// `MPI_Cart_coords` (§8.5.5).
///
/// # Safety
///
/// `coords` must be valid for `maxdims` writes.
#[export]
pub(crate) unsafe extern "C" fn MPI_Cart_coords(
    comm: Handle,
    rank: c_int,
    maxdims: c_int,
    coords: *mut c_int,
) -> c_int {
    boundary("MPI_Cart_coords", comm, || {
        let (_, g) = cart(comm)?;
        let n = g.dims.len();
        if count(maxdims, MPI_ERR_ARG)? < n {
            return Err(Code(MPI_ERR_ARG));
        }
        let x = g.coords(rank).map_err(|_| Code(MPI_ERR_RANK))?;
        // SAFETY: the caller passes `maxdims >= n` entries.
        unsafe { ffi::array_mut(coords, n) }?.copy_from_slice(&x);
        Ok(())
    })
}

/// `MPI_Cart_shift` (§8.5.6): the ranks `disp` steps back and forward
/// along `direction`; `MPI_PROC_NULL` off a non-periodic edge.
///
/// # Safety
///
/// `rank_source` and `rank_dest` must be valid for a write of one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Cart_shift(
    comm: Handle,
    direction: c_int,
    disp: c_int,
    rank_source: *mut c_int,
    rank_dest: *mut c_int,
) -> c_int {
    boundary("MPI_Cart_shift", comm, || {
        let (c, g) = cart(comm)?;
        let (s, d) = g
            .shift(c.comm.rank(), direction, disp)
            .map_err(|_| Code(MPI_ERR_ARG))?;
        // SAFETY: the caller passes valid output pointers.
        unsafe {
            ffi::out(rank_source, s.unwrap_or(PROC_NULL))?;
            ffi::out(rank_dest, d.unwrap_or(PROC_NULL))
        }
    })
}

/// `MPI_Cart_sub` (§8.5.7): the sub-grids keeping the dimensions with
/// `remain_dims[i]` true, one communicator each (with no dimension left,
/// a 0-dimensional grid of one process). Collective.
///
/// # Safety
///
/// `remain_dims` must be valid for as many reads as there are
/// dimensions, `newcomm` for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Cart_sub(
    comm: Handle,
    remain_dims: *const c_int,
    newcomm: *mut Handle,
) -> c_int {
    boundary("MPI_Cart_sub", comm, || {
        let (c, g) = cart(comm)?;
        // SAFETY: the caller passes one flag per dimension.
        let remain = unsafe { ffi::array(remain_dims, g.dims.len()) }?;
        let remain: Vec<bool> = remain.iter().map(|&x| x != 0).collect();
        let (sub, color, key) = g.sub(&remain, c.comm.rank())?;
        let new = c
            .comm
            .split(mpi::Color::With(color), key)?
            .ok_or(Code(MPI_ERR_TOPOLOGY))?;
        let h = adopt(&c, new, Vec::new())?;
        *lock(&handles::comm(h)?.meta.topo) = Some(Arc::new(Topology::Cartesian(sub)));
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(newcomm, h) }
    })
}

/// `MPI_Topo_test` (§8.5.5): `MPI_CART`, `MPI_GRAPH`, `MPI_DIST_GRAPH`
/// or `MPI_UNDEFINED`.
///
/// # Safety
///
/// `status` must be valid for a write of one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Topo_test(comm: Handle, status: *mut c_int) -> c_int {
    boundary("MPI_Topo_test", comm, || {
        let t = match topology(comm)?.1.as_deref() {
            Some(Topology::Cartesian(_)) => CART,
            Some(Topology::Graph(_)) => GRAPH,
            Some(Topology::DistGraph(_)) => DIST_GRAPH,
            None => UNDEFINED,
        };
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(status, t) }
    })
}

/// `MPI_Graph_create` (§8.5.3): a communicator of the first `nnodes`
/// processes of `comm_old`, in order, with the graph topology; node `i`'s
/// neighbours are `edges[index[i-1]..index[i]]`. Collective.
///
/// # Safety
///
/// `index` must be valid for `nnodes` reads, `edges` for
/// `index[nnodes-1]`, `comm_graph` for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Graph_create(
    comm_old: Handle,
    nnodes: c_int,
    index: *const c_int,
    edges: *const c_int,
    _reorder: c_int,
    comm_graph: *mut Handle,
) -> c_int {
    boundary("MPI_Graph_create", comm_old, || {
        // Topologies cannot be added to inter-communicators (§8.1).
        let c = handles::intra_for(comm_old, "MPI_Graph_create")?;
        // SAFETY: the caller passes arrays of those lengths.
        let g = unsafe { graph_arg(nnodes, index, edges) }?;
        let h = create_with(&c, g.nnodes(), Topology::Graph(g))?;
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(comm_graph, h) }
    })
}

/// `MPI_Graph_map` (§8.5.8): this process's own rank if it is one of the
/// first `nnodes`, `MPI_UNDEFINED` otherwise.
///
/// # Safety
///
/// As for `MPI_Graph_create`; `newrank` valid for one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Graph_map(
    comm: Handle,
    nnodes: c_int,
    index: *const c_int,
    edges: *const c_int,
    newrank: *mut c_int,
) -> c_int {
    boundary("MPI_Graph_map", comm, || {
        let c = handles::comm(comm)?;
        // SAFETY: the caller passes arrays of those lengths.
        let g = unsafe { graph_arg(nnodes, index, edges) }?;
        if g.nnodes() > c.comm.size() as usize {
            return Err(Code(MPI_ERR_ARG));
        }
        let r = c.comm.rank();
        let r = if (r as usize) < g.nnodes() {
            r
        } else {
            UNDEFINED
        };
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(newrank, r) }
    })
}

/// `MPI_Graphdims_get` (§8.5.5).
///
/// # Safety
///
/// Both pointers must be valid for a write of one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Graphdims_get(
    comm: Handle,
    nnodes: *mut c_int,
    nedges: *mut c_int,
) -> c_int {
    boundary("MPI_Graphdims_get", comm, || {
        let g = graph(comm)?;
        // SAFETY: the caller passes valid output pointers.
        unsafe {
            ffi::out(nnodes, g.nnodes() as c_int)?;
            ffi::out(nedges, g.edges.len() as c_int)
        }
    })
}

/// `MPI_Graph_get` (§8.5.5): the first `maxindex` entries of the index
/// and `maxedges` of the edges.
///
/// # Safety
///
/// `index` must be valid for `maxindex` writes, `edges` for `maxedges`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Graph_get(
    comm: Handle,
    maxindex: c_int,
    maxedges: c_int,
    index: *mut c_int,
    edges: *mut c_int,
) -> c_int {
    boundary("MPI_Graph_get", comm, || {
        let g = graph(comm)?;
        let ni = count(maxindex, MPI_ERR_ARG)?.min(g.index.len());
        let ne = count(maxedges, MPI_ERR_ARG)?.min(g.edges.len());
        // SAFETY: the caller passes at least that many entries each.
        unsafe {
            ffi::array_mut(index, ni)?.copy_from_slice(&g.index[..ni]);
            ffi::array_mut(edges, ne)?.copy_from_slice(&g.edges[..ne]);
        }
        Ok(())
    })
}

/// `MPI_Graph_neighbors_count` (§8.5.5).
///
/// # Safety
///
/// `nneighbors` must be valid for a write of one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Graph_neighbors_count(
    comm: Handle,
    rank: c_int,
    nneighbors: *mut c_int,
) -> c_int {
    boundary("MPI_Graph_neighbors_count", comm, || {
        let n = graph(comm)?
            .neighbors(rank)
            .map_err(|_| Code(MPI_ERR_RANK))?
            .len();
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(nneighbors, n as c_int) }
    })
}

/// `MPI_Graph_neighbors` (§8.5.5): the first `maxneighbors` neighbours
/// of node `rank`.
///
/// # Safety
///
/// `neighbors` must be valid for `maxneighbors` writes.
#[export]
pub(crate) unsafe extern "C" fn MPI_Graph_neighbors(
    comm: Handle,
    rank: c_int,
    maxneighbors: c_int,
    neighbors: *mut c_int,
) -> c_int {
    boundary("MPI_Graph_neighbors", comm, || {
        let g = graph(comm)?;
        let nb = g.neighbors(rank).map_err(|_| Code(MPI_ERR_RANK))?;
        let n = count(maxneighbors, MPI_ERR_ARG)?.min(nb.len());
        // SAFETY: the caller passes `maxneighbors` entries.
        unsafe { ffi::array_mut(neighbors, n) }?.copy_from_slice(&nb[..n]);
        Ok(())
    })
}

/// The weights argument of a distributed-graph call for `n` edges:
/// `None` for `MPI_UNWEIGHTED`, no weights for `MPI_WEIGHTS_EMPTY`.
///
/// # Safety
///
/// Any other `w` is valid for `n` reads.
unsafe fn weights_arg(w: *const c_int, n: usize) -> Res<Option<Vec<c_int>>> {
    match w.addr() {
        UNWEIGHTED => Ok(None),
        WEIGHTS_EMPTY if n == 0 => Ok(Some(Vec::new())),
        WEIGHTS_EMPTY => Err(Code(MPI_ERR_ARG)),
        // SAFETY: by this function's contract.
        _ => Ok(Some(unsafe { ffi::array(w, n) }?.to_vec())),
    }
}

/// Ranks `r` all within `0..size`.
fn in_range(r: &[c_int], size: c_int) -> Res<()> {
    match r.iter().all(|x| (0..size).contains(x)) {
        true => Ok(()),
        false => Err(Code(MPI_ERR_RANK)),
    }
}

/// Registers a duplicate of `old` with the distributed graph `g`.
fn dist_comm(c: &Rc<CommEntry>, g: DistGraph, hints: crate::info::Pairs) -> Res<Handle> {
    let h = adopt(c, c.comm.dup()?, hints)?;
    *lock(&handles::comm(h)?.meta.topo) = Some(Arc::new(Topology::DistGraph(g)));
    Ok(h)
}

/// `MPI_Dist_graph_create_adjacent` (§8.5.4): every process names its
/// own in- and out-neighbours (with weights, or `MPI_UNWEIGHTED`); the
/// new communicator has every process of `comm_old`, in order.
/// Collective.
///
/// # Safety
///
/// `sources` (and `sourceweights` unless a special value) must be valid
/// for `indegree` reads, `destinations` (and `destweights`) for
/// `outdegree`; `comm_dist_graph` for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Dist_graph_create_adjacent(
    comm_old: Handle,
    indegree: c_int,
    sources: *const c_int,
    sourceweights: *const c_int,
    outdegree: c_int,
    destinations: *const c_int,
    destweights: *const c_int,
    info: Handle,
    _reorder: c_int,
    comm_dist_graph: *mut Handle,
) -> c_int {
    boundary("MPI_Dist_graph_create_adjacent", comm_old, || {
        // Topologies cannot be added to inter-communicators (§8.1).
        let c = handles::intra_for(comm_old, "MPI_Dist_graph_create_adjacent")?;
        let hints = crate::info::pairs(info, true)?;
        let (ni, no) = (
            count(indegree, MPI_ERR_ARG)?,
            count(outdegree, MPI_ERR_ARG)?,
        );
        // SAFETY: the caller passes arrays of those lengths (or the
        // special weight values).
        let (s, sw, d, dw) = unsafe {
            (
                ffi::array(sources, ni)?.to_vec(),
                weights_arg(sourceweights, ni)?,
                ffi::array(destinations, no)?.to_vec(),
                weights_arg(destweights, no)?,
            )
        };
        in_range(&s, c.comm.size())?;
        in_range(&d, c.comm.size())?;
        let weighted = sw.is_some() || dw.is_some();
        let g = DistGraph {
            source_weights: sw.unwrap_or_else(|| vec![1; ni]),
            destination_weights: dw.unwrap_or_else(|| vec![1; no]),
            sources: s,
            destinations: d,
            weighted,
        };
        let h = dist_comm(&c, g, hints)?;
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(comm_dist_graph, h) }
    })
}

/// `MPI_Dist_graph_create` (§8.5.4): each process passes any edges of
/// the graph (`degrees[i]` edges from `sources[i]`); every process learns
/// its own neighbours in one exchange. Collective.
///
/// # Safety
///
/// `sources` and `degrees` must be valid for `n` reads, `destinations`
/// (and `weights` unless a special value) for the sum of `degrees`,
/// `comm_dist_graph` for a write of one handle.
#[export]
pub(crate) unsafe extern "C" fn MPI_Dist_graph_create(
    comm_old: Handle,
    n: c_int,
    sources: *const c_int,
    degrees: *const c_int,
    destinations: *const c_int,
    weights: *const c_int,
    info: Handle,
    _reorder: c_int,
    comm_dist_graph: *mut Handle,
) -> c_int {
    boundary("MPI_Dist_graph_create", comm_old, || {
        // Topologies cannot be added to inter-communicators (§8.1).
        let c = handles::intra_for(comm_old, "MPI_Dist_graph_create")?;
        let hints = crate::info::pairs(info, true)?;
        let n = count(n, MPI_ERR_ARG)?;
        // SAFETY: the caller passes `n` entries each.
        let (s, deg) = unsafe { (ffi::array(sources, n)?, ffi::array(degrees, n)?) };
        let total = deg
            .iter()
            .try_fold(0usize, |a, &x| Some(a + usize::try_from(x).ok()?));
        let total = total.ok_or(Code(MPI_ERR_ARG))?;
        // SAFETY: the caller passes `total` destinations (and weights).
        let (d, w) = unsafe {
            (
                ffi::array(destinations, total)?,
                weights_arg(weights, total)?,
            )
        };
        let mut edges = Vec::with_capacity(total);
        let mut k = 0;
        for (&src, &dg) in s.iter().zip(deg) {
            for _ in 0..dg {
                let wt = w.as_ref().map_or(1, |w| w[k]);
                edges.push((src, d[k], wt));
                k += 1;
            }
        }
        let g = c
            .comm
            .dist_graph_from_edges(&edges, w.is_some())
            .map_err(|e| match e {
                mpi::Error::InvalidRank { .. } => Code(MPI_ERR_RANK),
                e => Code::from(e),
            })?;
        let h = dist_comm(&c, g, hints)?;
        // SAFETY: the caller passes a valid output pointer.
        unsafe { ffi::out(comm_dist_graph, h) }
    })
}

/// `MPI_Dist_graph_neighbors_count` (§8.5.5).
///
/// # Safety
///
/// The three pointers must be valid for a write of one `int`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Dist_graph_neighbors_count(
    comm: Handle,
    indegree: *mut c_int,
    outdegree: *mut c_int,
    weighted: *mut c_int,
) -> c_int {
    boundary("MPI_Dist_graph_neighbors_count", comm, || {
        let g = dist_graph(comm)?;
        // SAFETY: the caller passes valid output pointers.
        unsafe {
            ffi::out(indegree, g.sources.len() as c_int)?;
            ffi::out(outdegree, g.destinations.len() as c_int)?;
            ffi::out(weighted, c_int::from(g.weighted))
        }
    })
}

/// Writes the first entries of `v` to the weights array `w` unless it is
/// `MPI_UNWEIGHTED`.
///
/// # Safety
///
/// Any other `w` is valid for `n` writes.
unsafe fn put_weights(w: *mut c_int, v: &[c_int], n: usize) -> Res<()> {
    if matches!(w.addr(), UNWEIGHTED | WEIGHTS_EMPTY) {
        return Ok(());
    }
    // SAFETY: by this function's contract.
    unsafe { ffi::array_mut(w, n) }?.copy_from_slice(&v[..n]);
    Ok(())
}

/// `MPI_Dist_graph_neighbors` (§8.5.5): the first `maxindegree`
/// sources and `maxoutdegree` destinations, with their weights unless
/// `MPI_UNWEIGHTED` is passed.
///
/// # Safety
///
/// `sources` and `sourceweights` must be valid for `maxindegree` writes,
/// `destinations` and `destweights` for `maxoutdegree`.
#[export]
pub(crate) unsafe extern "C" fn MPI_Dist_graph_neighbors(
    comm: Handle,
    maxindegree: c_int,
    sources: *mut c_int,
    sourceweights: *mut c_int,
    maxoutdegree: c_int,
    destinations: *mut c_int,
    destweights: *mut c_int,
) -> c_int {
    boundary("MPI_Dist_graph_neighbors", comm, || {
        let g = dist_graph(comm)?;
        let ni = count(maxindegree, MPI_ERR_ARG)?.min(g.sources.len());
        let no = count(maxoutdegree, MPI_ERR_ARG)?.min(g.destinations.len());
        // SAFETY: the caller passes arrays of at least those lengths.
        unsafe {
            ffi::array_mut(sources, ni)?.copy_from_slice(&g.sources[..ni]);
            put_weights(sourceweights, &g.source_weights, ni)?;
            ffi::array_mut(destinations, no)?.copy_from_slice(&g.destinations[..no]);
            put_weights(destweights, &g.destination_weights, no)
        }
    })
}
