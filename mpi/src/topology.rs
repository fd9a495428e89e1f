//! Process topologies (MPI 5.0 chapter 8): Cartesian grids, general graphs
//! and distributed graphs, as plain data (`Send + Sync`) with the
//! computations of their inquiry functions, and `MPI_Dims_create`.
//!
//! A topology is attached to a communicator by whoever keeps the
//! communicator (the C ABI keeps it with the handle); the communicator
//! itself is made with [`crate::Communicator::create_first`] (the first n
//! ranks, in order: no reordering is ever done, which §8.5 allows) and,
//! for `MPI_Cart_sub`, with [`crate::Communicator::split`].

use crate::error::{Error, Result};

fn bad(msg: String) -> Error {
    Error::InvalidArgument(msg)
}

/// `MPI_Dims_create` (§8.5.2): fills the zero entries of `dims` so that
/// the product of all entries is `nnodes`, with the free entries as close
/// to each other as possible, in non-increasing order.
///
/// # Errors
///
/// [`Error::InvalidArgument`] for a negative entry, a negative `nnodes`, or
/// fixed entries whose product does not divide `nnodes`.
pub fn dims_create(nnodes: i32, dims: &mut [i32]) -> Result<()> {
    if nnodes < 0 || dims.iter().any(|&d| d < 0) {
        return Err(bad(format!("dims_create({nnodes}, {dims:?})")));
    }
    let fixed: i64 = dims
        .iter()
        .filter(|&&d| d > 0)
        .map(|&d| i64::from(d))
        .product();
    let free = dims.iter().filter(|&&d| d == 0).count();
    if free == 0 {
        return if fixed == i64::from(nnodes) {
            Ok(())
        } else {
            Err(bad(format!("dims {dims:?} do not multiply to {nnodes}")))
        };
    }
    if nnodes == 0 || i64::from(nnodes) % fixed != 0 {
        return Err(bad(format!("{nnodes} nodes cannot fill dims {dims:?}")));
    }
    let mut best = Vec::new();
    let mut cur = Vec::with_capacity(free);
    balanced(
        (i64::from(nnodes) / fixed) as i32,
        free,
        i32::MAX,
        &mut cur,
        &mut best,
    );
    let mut it = best.into_iter();
    for d in dims.iter_mut().filter(|d| **d == 0) {
        *d = it.next().unwrap_or(1);
    }
    Ok(())
}

/// Searches the non-increasing factorisations of `m` into `k` factors,
/// each at most `cap`, for the one whose largest and smallest factors are
/// closest (the first found among equals: the one with the largest first
/// factors).
fn balanced(m: i32, k: usize, cap: i32, cur: &mut Vec<i32>, best: &mut Vec<i32>) {
    if k == 1 {
        if m <= cap {
            cur.push(m);
            let spread = |v: &[i32]| v[0] - v[v.len() - 1];
            if best.is_empty() || spread(cur) < spread(best) {
                *best = cur.clone();
            }
            cur.pop();
        }
        return;
    }
    // The first of k non-increasing factors is at least the k-th root.
    let mut d = cap.min(m);
    while d >= 1 {
        if m % d == 0 && (i64::from(d)).pow(k as u32) >= i64::from(m) {
            cur.push(d);
            balanced(m / d, k - 1, d, cur, best);
            cur.pop();
        } else if (i64::from(d)).pow(k as u32) < i64::from(m) {
            break;
        }
        d -= 1;
    }
}

/// A Cartesian grid (`MPI_Cart_create`, §8.5.1), ranks in row-major
/// order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cartesian {
    /// Processes along each dimension.
    pub dims: Vec<i32>,
    /// Whether each dimension wraps around.
    pub periods: Vec<bool>,
}

impl Cartesian {
    /// A grid with these extents and periodicities.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a negative or zero extent, or
    /// lengths that differ.
    pub fn new(dims: Vec<i32>, periods: Vec<bool>) -> Result<Self> {
        if dims.len() != periods.len() || dims.iter().any(|&d| d <= 0) {
            return Err(bad(format!("a grid of dims {dims:?}")));
        }
        Ok(Self { dims, periods })
    }

    /// Processes in the grid.
    pub fn size(&self) -> usize {
        self.dims.iter().map(|&d| d as usize).product()
    }

    /// `MPI_Cart_coords` (§8.5.5).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRank`] outside the grid.
    pub fn coords(&self, rank: i32) -> Result<Vec<i32>> {
        let size = self.size();
        if usize::try_from(rank).map_or(true, |r| r >= size) {
            return Err(Error::InvalidRank {
                rank,
                size: size as i32,
            });
        }
        let mut rest = rank;
        let mut c = vec![0; self.dims.len()];
        for (i, &d) in self.dims.iter().enumerate().rev() {
            c[i] = rest % d;
            rest /= d;
        }
        Ok(c)
    }

    /// `MPI_Cart_rank` (§8.5.5): coordinates outside a periodic dimension
    /// wrap around.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a coordinate outside a non-periodic
    /// dimension, or the wrong number of coordinates.
    pub fn rank(&self, coords: &[i32]) -> Result<i32> {
        if coords.len() != self.dims.len() {
            return Err(bad(format!(
                "{} coordinates for a {}-d grid",
                coords.len(),
                self.dims.len()
            )));
        }
        let mut r: i64 = 0;
        for ((&c, &d), &p) in coords.iter().zip(&self.dims).zip(&self.periods) {
            let c = if p {
                c.rem_euclid(d)
            } else if (0..d).contains(&c) {
                c
            } else {
                return Err(bad(format!("coordinate {c} outside 0..{d}")));
            };
            r = r * i64::from(d) + i64::from(c);
        }
        Ok(r as i32)
    }

    /// `MPI_Cart_shift` (§8.5.6) from `rank`: the ranks `disp` steps back
    /// and forward along `direction`; `None` (`MPI_PROC_NULL`) off the
    /// edge of a non-periodic dimension.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a direction outside the grid,
    /// [`Error::InvalidRank`] for a rank outside it.
    pub fn shift(
        &self,
        rank: i32,
        direction: i32,
        disp: i32,
    ) -> Result<(Option<i32>, Option<i32>)> {
        let dir = usize::try_from(direction)
            .ok()
            .filter(|&d| d < self.dims.len())
            .ok_or_else(|| {
                bad(format!(
                    "direction {direction} of a {}-d grid",
                    self.dims.len()
                ))
            })?;
        let c = self.coords(rank)?;
        let at = |delta: i64| {
            let mut c = c.clone();
            let (d, x) = (i64::from(self.dims[dir]), i64::from(c[dir]) + delta);
            if self.periods[dir] {
                c[dir] = x.rem_euclid(d) as i32;
            } else if (0..d).contains(&x) {
                c[dir] = x as i32;
            } else {
                return None;
            }
            self.rank(&c).ok()
        };
        Ok((at(-i64::from(disp)), at(i64::from(disp))))
    }

    /// `MPI_Cart_sub` (§8.5.7): the sub-grid keeping the dimensions with
    /// `remain[i]`, and for the process at `rank` the color (which
    /// sub-grid) and key (rank in it) of the split that makes it.
    ///
    /// # Errors
    ///
    /// As for [`Cartesian::coords`]; `remain` of the wrong length.
    pub fn sub(&self, remain: &[bool], rank: i32) -> Result<(Cartesian, u32, i32)> {
        if remain.len() != self.dims.len() {
            return Err(bad(format!(
                "{} remain_dims for a {}-d grid",
                remain.len(),
                self.dims.len()
            )));
        }
        let c = self.coords(rank)?;
        let (mut color, mut key) = (0i64, 0i64);
        let (mut dims, mut periods) = (Vec::new(), Vec::new());
        for i in 0..self.dims.len() {
            let d = i64::from(self.dims[i]);
            if remain[i] {
                key = key * d + i64::from(c[i]);
                dims.push(self.dims[i]);
                periods.push(self.periods[i]);
            } else {
                color = color * d + i64::from(c[i]);
            }
        }
        Ok((Cartesian { dims, periods }, color as u32, key as i32))
    }

    /// The neighbours of the process at `rank` in the order of the
    /// neighborhood collectives (§8.6): for each dimension, the one back
    /// then the one forward (`None` off a non-periodic edge).
    ///
    /// # Errors
    ///
    /// As for [`Cartesian::shift`].
    pub fn neighbors(&self, rank: i32) -> Result<Vec<Option<i32>>> {
        let mut out = Vec::with_capacity(2 * self.dims.len());
        for d in 0..self.dims.len() {
            let (back, fwd) = self.shift(rank, d as i32, 1)?;
            out.push(back);
            out.push(fwd);
        }
        Ok(out)
    }
}

/// A general graph (`MPI_Graph_create`, §8.5.3): node `i`'s neighbours
/// are `edges[index[i-1]..index[i]]` (`index[-1]` being 0).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Graph {
    /// Cumulative neighbour counts, one per node.
    pub index: Vec<i32>,
    /// The neighbours of every node, one after the other.
    pub edges: Vec<i32>,
}

impl Graph {
    /// The graph `index` and `edges` describe.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a decreasing or negative index, an
    /// index that does not end at the number of edges, or an edge to a
    /// node that does not exist.
    pub fn new(index: Vec<i32>, edges: Vec<i32>) -> Result<Self> {
        let n = index.len() as i32;
        let mut prev = 0;
        for &i in &index {
            if i < prev {
                return Err(bad(format!("graph index {index:?} decreases")));
            }
            prev = i;
        }
        if prev as usize != edges.len() || edges.iter().any(|&e| !(0..n).contains(&e)) {
            return Err(bad(format!("graph index {index:?} and edges {edges:?}")));
        }
        Ok(Self { index, edges })
    }

    /// Nodes in the graph.
    pub fn nnodes(&self) -> usize {
        self.index.len()
    }

    /// `MPI_Graph_neighbors` (§8.5.5) of node `rank`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRank`] for a node outside the graph.
    pub fn neighbors(&self, rank: i32) -> Result<&[i32]> {
        let r = usize::try_from(rank)
            .ok()
            .filter(|&r| r < self.index.len())
            .ok_or(Error::InvalidRank {
                rank,
                size: self.index.len() as i32,
            })?;
        let start = if r == 0 {
            0
        } else {
            self.index[r - 1] as usize
        };
        Ok(&self.edges[start..self.index[r] as usize])
    }
}

/// The part of a distributed graph (`MPI_Dist_graph_create(_adjacent)`,
/// §8.5.4) one process knows: its in- and out-neighbours with their
/// weights.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DistGraph {
    /// Processes with an edge to this one.
    pub sources: Vec<i32>,
    /// Their weights (1 each when unweighted).
    pub source_weights: Vec<i32>,
    /// Processes this one has an edge to.
    pub destinations: Vec<i32>,
    /// Their weights (1 each when unweighted).
    pub destination_weights: Vec<i32>,
    /// Whether weights were given (`MPI_UNWEIGHTED` was not).
    pub weighted: bool,
}

/// A communicator's virtual topology (`MPI_Topo_test`, §8.5.5).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Topology {
    /// `MPI_CART`.
    Cartesian(Cartesian),
    /// `MPI_GRAPH`.
    Graph(Graph),
    /// `MPI_DIST_GRAPH`.
    DistGraph(DistGraph),
}

/// The neighbours of one process as the neighborhood collectives (§8.6)
/// use them: the ranks whose blocks it receives, in the order of the
/// blocks of its receive buffer, and those it sends its blocks to, in
/// the order of its send buffer. `None` is `MPI_PROC_NULL`: nothing is
/// sent to it, nothing received from it, and its receive block is left
/// as it is.
///
/// A rank may appear several times (a multigraph, or both neighbours of
/// a periodic dimension of size 1 or 2). Which sent block lands in which
/// received one is then decided by [`Neighborhood::cartesian`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Neighborhood {
    /// Whom each receive block comes from.
    pub sources: Vec<Option<i32>>,
    /// Whom each send block goes to.
    pub destinations: Vec<Option<i32>>,
    /// The Cartesian pairing (§8.6, and the MPI 4.0 erratum for periodic
    /// dimensions of size 1 or 2): a process's block `2d + e` (sent to
    /// its neighbour back, `e = 0`, or forward, `e = 1`, along dimension
    /// `d`) lands in the receiver's block `2d + 1 − e`. Otherwise the
    /// k-th block a process sends to another lands in the k-th block that
    /// one receives from it.
    pub cartesian: bool,
}

impl Neighborhood {
    /// The neighbourhood of a graph or distributed-graph process: the
    /// k-th block sent to a process lands in the k-th block it receives
    /// from the sender.
    pub fn graph(sources: Vec<Option<i32>>, destinations: Vec<Option<i32>>) -> Self {
        Self {
            sources,
            destinations,
            cartesian: false,
        }
    }

    /// The order in which the receive blocks are matched with the
    /// messages from their sources: a sender sends its blocks in order,
    /// and the k-th message from a given source matches the k-th
    /// receive posted for it (§3.5), so posting the blocks in this order
    /// pairs them as [`Neighborhood::cartesian`] says.
    pub fn receive_order(&self) -> Vec<usize> {
        let n = self.sources.len();
        if self.cartesian && n % 2 == 0 {
            // Block 2d + e of the sender, sent in order, lands in block
            // 2d + 1 − e: post 1, 0, 3, 2, …
            (0..n).map(|i| i ^ 1).collect()
        } else {
            (0..n).collect()
        }
    }
}

impl Cartesian {
    /// The neighbourhood of the process at `rank` (§8.6): in each
    /// dimension its neighbour back then forward, both ways.
    ///
    /// # Errors
    ///
    /// As for [`Cartesian::shift`].
    pub fn neighborhood(&self, rank: i32) -> Result<Neighborhood> {
        let n = self.neighbors(rank)?;
        Ok(Neighborhood {
            sources: n.clone(),
            destinations: n,
            cartesian: true,
        })
    }
}

impl Graph {
    /// The neighbourhood of node `rank` (§8.6): its `MPI_Graph_neighbors`
    /// both ways.
    ///
    /// # Errors
    ///
    /// As for [`Graph::neighbors`].
    pub fn neighborhood(&self, rank: i32) -> Result<Neighborhood> {
        let n: Vec<Option<i32>> = self.neighbors(rank)?.iter().map(|&r| Some(r)).collect();
        Ok(Neighborhood::graph(n.clone(), n))
    }
}

impl DistGraph {
    /// The neighbourhood of this process (§8.6): its sources and
    /// destinations as `MPI_Dist_graph_neighbors` gives them, repeated
    /// edges included; the weights play no part.
    pub fn neighborhood(&self) -> Neighborhood {
        let some = |v: &[i32]| v.iter().map(|&r| Some(r)).collect();
        Neighborhood::graph(some(&self.sources), some(&self.destinations))
    }
}

impl Topology {
    /// The neighbourhood of the process at `rank` in this topology
    /// (§8.6); a distributed graph holds only its own process's.
    ///
    /// # Errors
    ///
    /// A rank outside the topology.
    pub fn neighborhood(&self, rank: i32) -> Result<Neighborhood> {
        match self {
            Topology::Cartesian(c) => c.neighborhood(rank),
            Topology::Graph(g) => g.neighborhood(rank),
            Topology::DistGraph(g) => Ok(g.neighborhood()),
        }
    }
}

impl crate::Communicator {
    /// The part of the distributed graph `MPI_Dist_graph_create` (§8.5.4)
    /// describes that this process knows: each process passes some edges
    /// `(source, destination, weight)` of the whole graph, any process
    /// any edge, and learns its own in- and out-edges. An edge reaches
    /// its ends in one all-to-all exchange; the neighbours come in the
    /// order of the rank that passed the edge, then of its list.
    /// `weighted` is whether this process passed weights; the graph is
    /// weighted if any did. Collective.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidCommunicator`] on an inter-communicator (§8.1);
    /// [`Error::InvalidRank`] for an edge end outside the communicator;
    /// those of the collectives.
    pub fn dist_graph_from_edges(
        &self,
        edges: &[(i32, i32, i32)],
        weighted: bool,
    ) -> Result<DistGraph> {
        self.intra_only("a distributed graph topology")?;
        let p = self.members.len();
        let size = self.size();
        let check = |r: i32| {
            usize::try_from(r)
                .ok()
                .filter(|&r| r < p)
                .ok_or(Error::InvalidRank { rank: r, size })
        };
        // To each process, the edges it is an end of: [is_out, peer, weight].
        let mut out: Vec<Vec<[i32; 3]>> = vec![Vec::new(); p];
        for &(s, d, w) in edges {
            let (si, di) = (check(s)?, check(d)?);
            out[si].push([1, d, w]);
            out[di].push([0, s, w]);
        }
        let counts: Vec<usize> = out.iter().map(Vec::len).collect();
        let mut recv_counts = vec![0usize; p];
        self.all_to_all_into(&counts, &mut recv_counts)?;
        let displs = |c: &[usize]| {
            c.iter()
                .scan(0, |acc, &n| {
                    let d = *acc;
                    *acc += n;
                    Some(d)
                })
                .collect::<Vec<_>>()
        };
        let send: Vec<[i32; 3]> = out.concat();
        let mut recv = vec![[0i32; 3]; recv_counts.iter().sum()];
        self.all_to_all_varcount_into(
            &send,
            &counts,
            &displs(&counts),
            &mut recv,
            &recv_counts,
            &displs(&recv_counts),
        )?;
        let mut any = [i32::from(weighted)];
        let mine = any;
        self.all_reduce_into(&mine, &mut any, &crate::SystemOperation::Max)?;
        let mut g = DistGraph {
            sources: Vec::new(),
            source_weights: Vec::new(),
            destinations: Vec::new(),
            destination_weights: Vec::new(),
            weighted: any[0] != 0,
        };
        for [is_out, peer, w] in recv {
            if is_out == 1 {
                g.destinations.push(peer);
                g.destination_weights.push(w);
            } else {
                g.sources.push(peer);
                g.source_weights.push(w);
            }
        }
        Ok(g)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dims(n: i32, d: &[i32]) -> Vec<i32> {
        let mut d = d.to_vec();
        dims_create(n, &mut d).unwrap();
        d
    }

    #[test]
    fn dims_are_balanced_and_non_increasing() {
        assert_eq!(dims(6, &[0, 0]), [3, 2]);
        assert_eq!(dims(7, &[0, 0]), [7, 1]);
        assert_eq!(dims(12, &[0, 0, 0]), [3, 2, 2]);
        assert_eq!(dims(16, &[0, 0, 0, 0]), [2, 2, 2, 2]);
        assert_eq!(dims(56, &[0, 0]), [8, 7]);
        assert_eq!(dims(1, &[0, 0, 0]), [1, 1, 1]);
        assert_eq!(dims(24, &[0, 3, 0]), [4, 3, 2]);
        assert_eq!(dims(8, &[2, 4]), [2, 4]);
        assert_eq!(dims(64, &[0, 0, 0]), [4, 4, 4]);
        assert!(dims_create(10, &mut [3, 0]).is_err());
        assert!(dims_create(8, &mut [2, 2]).is_err());
        assert!(dims_create(8, &mut [-1, 0]).is_err());
    }

    #[test]
    fn cartesian_coordinates_shifts_and_subgrids() {
        let c = Cartesian::new(vec![2, 3], vec![false, true]).unwrap();
        assert_eq!(c.size(), 6);
        assert_eq!(c.coords(5).unwrap(), [1, 2]);
        assert_eq!(c.rank(&[1, 2]).unwrap(), 5);
        assert_eq!(c.rank(&[1, -1]).unwrap(), 5);
        assert!(c.rank(&[2, 0]).is_err());
        assert_eq!(c.shift(0, 0, 1).unwrap(), (None, Some(3)));
        assert_eq!(c.shift(0, 1, 1).unwrap(), (Some(2), Some(1)));
        assert_eq!(c.shift(4, 1, -4).unwrap(), (Some(5), Some(3)));
        assert_eq!(c.neighbors(4).unwrap(), [Some(1), None, Some(3), Some(5)]);
        let (s, color, key) = c.sub(&[false, true], 4).unwrap();
        assert_eq!((s.dims.as_slice(), color, key), (&[3][..], 1, 1));
        let (s, color, key) = c.sub(&[true, false], 4).unwrap();
        assert_eq!(
            (s.dims.as_slice(), s.periods.as_slice(), color, key),
            (&[2][..], &[false][..], 1, 1)
        );
        assert!(c.coords(6).is_err());
    }

    #[test]
    fn neighborhoods_and_their_receive_order() {
        let c = Cartesian::new(vec![2, 1], vec![true, true]).unwrap();
        let n = Topology::Cartesian(c).neighborhood(1).unwrap();
        assert_eq!(n.sources, [Some(0), Some(0), Some(1), Some(1)]);
        assert_eq!(n.destinations, n.sources);
        assert_eq!(n.receive_order(), [1, 0, 3, 2]);
        let c = Cartesian::new(vec![3], vec![false]).unwrap();
        let n = c.neighborhood(0).unwrap();
        assert_eq!(n.sources, [None, Some(1)]);
        let g = Graph::new(vec![2, 3], vec![1, 1, 0]).unwrap();
        let n = Topology::Graph(g).neighborhood(0).unwrap();
        assert_eq!(
            (n.sources.as_slice(), n.cartesian),
            (&[Some(1), Some(1)][..], false)
        );
        assert_eq!(n.receive_order(), [0, 1]);
        let d = DistGraph {
            sources: vec![2],
            source_weights: vec![1],
            destinations: vec![0, 0],
            destination_weights: vec![1, 1],
            weighted: false,
        };
        let n = d.neighborhood();
        assert_eq!(
            (n.sources, n.destinations),
            (vec![Some(2)], vec![Some(0), Some(0)])
        );
    }

    #[test]
    fn graph_neighbors() {
        let g = Graph::new(vec![2, 3, 4, 6], vec![1, 3, 0, 3, 0, 2]).unwrap();
        assert_eq!(g.neighbors(0).unwrap(), [1, 3]);
        assert_eq!(g.neighbors(3).unwrap(), [0, 2]);
        assert!(g.neighbors(4).is_err());
        assert!(Graph::new(vec![2, 1], vec![0, 1]).is_err());
        assert!(Graph::new(vec![1], vec![1]).is_err());
    }
}
