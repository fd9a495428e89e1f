//! Collective operations (MPI 4.1 chapter 6), built on point-to-point
//! messages in the communicator's collective context (so they never match
//! user messages).
//!
//! Algorithms, for the 2–64 processes this library aims at:
//! - barrier: dissemination, ⌈log2 p⌉ rounds, any p (§6.3);
//! - bcast: binomial tree (§6.4);
//! - reduce: binomial tree towards the root (§6.9.1);
//! - allreduce: recursive doubling, with the extra ranks of a
//!   non-power-of-two size folded into partners first (§6.9.6);
//! - gather(v): the root posts every receive at once (§6.5);
//! - scatter(v): the root starts every send at once (§6.6);
//! - allgather(v): ring, p−1 steps of one send and one receive (§6.7);
//! - alltoall(v): pairwise exchange, step s sends to rank+s and receives
//!   from rank−s, so no peer is a hot spot (§6.8).
//!
//! Counts and displacements of the `v` variants are in elements. Reduction
//! operations are taken to be commutative (see [`crate::operation`]).

use crate::communicator::Communicator;
use crate::datatype::{as_bytes, as_bytes_mut, zeroed_vec, Equivalence};
use crate::error::{Error, Result};
use crate::operation::Operation;
use crate::point_to_point::Process;
use crate::request::wait_all;

const TAG_BARRIER: u32 = 1;
const TAG_BCAST: u32 = 2;
const TAG_REDUCE: u32 = 3;
const TAG_ALLREDUCE: u32 = 4;
const TAG_GATHER: u32 = 5;
const TAG_SCATTER: u32 = 6;
const TAG_ALLGATHER: u32 = 7;
const TAG_ALLTOALL: u32 = 8;

fn bad(msg: String) -> Error {
    Error::InvalidArgument(msg)
}

/// The element range `[displ, displ + count)` of a buffer of `len`.
fn block(len: usize, count: usize, displ: usize, what: &str) -> Result<std::ops::Range<usize>> {
    let end = displ
        .checked_add(count)
        .filter(|&e| e <= len)
        .ok_or_else(|| {
            bad(format!(
                "{what}: block {displ}+{count} beyond a buffer of {len}"
            ))
        })?;
    Ok(displ..end)
}

/// Counts and displacements for `p` equal blocks of `n`.
fn uniform(p: usize, n: usize) -> (Vec<usize>, Vec<usize>) {
    (vec![n; p], (0..p).map(|i| i * n).collect())
}

impl Communicator {
    fn coll(&self) -> u32 {
        self.context + 1
    }

    fn csend(&self, data: &[u8], dest: usize, tag: u32) -> Result<()> {
        self.send_bytes(data, dest as i32, tag, self.coll())
    }

    /// Receives exactly `buf.len()` bytes from `src`.
    fn crecv(&self, buf: &mut [u8], src: usize, tag: u32) -> Result<()> {
        let want = buf.len();
        let st = self.recv_bytes(buf, src as i32, tag as i32, self.coll())?;
        if st.count_bytes() != want {
            return Err(bad(format!(
                "collective message from rank {src} has {} bytes, {want} expected: \
                 the processes disagree on counts",
                st.count_bytes()
            )));
        }
        Ok(())
    }

    /// Sends to `dest` and receives from `src` at the same time.
    fn cexchange(
        &self,
        send: &[u8],
        dest: usize,
        recv: &mut [u8],
        src: usize,
        tag: u32,
    ) -> Result<()> {
        let s = self.isend_bytes(send, dest as i32, tag, self.coll())?;
        self.crecv(recv, src, tag)?;
        s.wait().map(drop)
    }

    fn check_root(&self, root: i32) -> Result<usize> {
        self.world_rank(root)?;
        Ok(root as usize)
    }

    fn p_r(&self) -> (usize, usize) {
        (self.members.len(), self.rank as usize)
    }

    /// `MPI_Barrier` (§6.3): returns once every member has entered it.
    ///
    /// # Errors
    ///
    /// [`Error::PeerGone`] and transport errors.
    pub fn barrier(&self) -> Result<()> {
        if self.members.len() == self.rt.size as usize
            && self.rt.with(|t| t.enter_world_barrier())?
        {
            return self.wait_world_barrier();
        }
        let (p, r) = self.p_r();
        let mut k = 1;
        while k < p {
            self.cexchange(&[], (r + k) % p, &mut [], (r + p - k) % p, TAG_BARRIER)?;
            k <<= 1;
        }
        Ok(())
    }

    /// Waits for the transport's hardware barrier, receiving meanwhile
    /// (through `Runtime::with`, which also acknowledges synchronous
    /// sends), and fails when a member dies. A communicator spanning the
    /// whole world may use it whatever its context: every process calls
    /// the barriers of such communicators in one order, or the program
    /// would deadlock anyway.
    fn wait_world_barrier(&self) -> Result<()> {
        loop {
            if self.rt.with(|t| t.test_world_barrier())? {
                return Ok(());
            }
            let dead = self.rt.with(|t| {
                Ok(self
                    .members
                    .iter()
                    .find_map(|&m| t.peer_failure(m).map(|why| (m, why))))
            })?;
            if let Some((rank, reason)) = dead {
                return Err(Error::PeerGone { rank, reason });
            }
            // Keep receiving, but do not sleep in the transport's idle
            // wait: the barrier's completion is not an event it wakes for.
            self.rt
                .with(|t| t.progress(Some(std::time::Duration::ZERO)))?;
            std::thread::yield_now();
        }
    }

    /// `MPI_Bcast` (§6.4): `buf` of `root` is copied into `buf` of every
    /// member. Every member passes a buffer of the same length.
    ///
    /// # Errors
    ///
    /// Invalid root, length disagreement, dead peers.
    pub fn broadcast_into<T: Equivalence>(&self, buf: &mut [T], root: i32) -> Result<()> {
        let root = self.check_root(root)?;
        let (p, r) = self.p_r();
        let bytes = as_bytes_mut(buf);
        let rel = (r + p - root) % p;
        let mut mask = 1;
        while mask < p {
            if rel & mask != 0 {
                self.crecv(bytes, (rel - mask + root) % p, TAG_BCAST)?;
                break;
            }
            mask <<= 1;
        }
        mask >>= 1;
        while mask > 0 {
            if rel + mask < p {
                self.csend(bytes, (rel + mask + root) % p, TAG_BCAST)?;
            }
            mask >>= 1;
        }
        Ok(())
    }

    /// `MPI_Reduce` (§6.9.1): combines `send` of every member with `op`
    /// into `recv` of `root` (`recv` is required at the root only).
    ///
    /// # Errors
    ///
    /// Invalid root; a root `recv` whose length differs from `send`.
    pub fn reduce_into<T: Equivalence, O: Operation<T>>(
        &self,
        send: &[T],
        recv: Option<&mut [T]>,
        op: &O,
        root: i32,
    ) -> Result<()> {
        let root = self.check_root(root)?;
        let (p, r) = self.p_r();
        let n = send.len();
        if r == root && recv.as_ref().is_none_or(|b| b.len() != n) {
            return Err(bad(format!(
                "reduce: the root needs a receive buffer of {n}"
            )));
        }
        let rel = (r + p - root) % p;
        let mut acc = send.to_vec();
        let mut tmp: Vec<T> = zeroed_vec(n);
        let mut mask = 1;
        while mask < p {
            if rel & mask == 0 {
                let child = rel | mask;
                if child < p {
                    self.crecv(as_bytes_mut(&mut tmp), (child + root) % p, TAG_REDUCE)?;
                    op.apply(&tmp, &mut acc);
                }
            } else {
                self.csend(as_bytes(&acc), ((rel & !mask) + root) % p, TAG_REDUCE)?;
                break;
            }
            mask <<= 1;
        }
        if let Some(out) = recv.filter(|_| r == root) {
            out.copy_from_slice(&acc);
        }
        Ok(())
    }

    /// `MPI_Allreduce` (§6.9.6): every member gets `op` over all `send`s.
    ///
    /// # Errors
    ///
    /// `recv` shorter or longer than `send`; dead peers.
    pub fn all_reduce_into<T: Equivalence, O: Operation<T>>(
        &self,
        send: &[T],
        recv: &mut [T],
        op: &O,
    ) -> Result<()> {
        let n = send.len();
        if recv.len() != n {
            return Err(bad(format!(
                "allreduce: {} elements sent, {} received",
                n,
                recv.len()
            )));
        }
        let (p, r) = self.p_r();
        recv.copy_from_slice(send);
        let mut tmp: Vec<T> = zeroed_vec(n);
        let pof2 = 1usize << p.ilog2();
        let rem = p - pof2;
        // Fold the first 2*rem ranks pairwise so that pof2 ranks remain.
        let newrank = if r < 2 * rem {
            if r % 2 == 0 {
                self.csend(as_bytes(recv), r + 1, TAG_ALLREDUCE)?;
                None
            } else {
                self.crecv(as_bytes_mut(&mut tmp), r - 1, TAG_ALLREDUCE)?;
                op.apply(&tmp, recv);
                Some(r / 2)
            }
        } else {
            Some(r - rem)
        };
        if let Some(nr) = newrank {
            let mut mask = 1;
            while mask < pof2 {
                let partner = nr ^ mask;
                let dst = if partner < rem {
                    partner * 2 + 1
                } else {
                    partner + rem
                };
                self.cexchange(
                    as_bytes(recv),
                    dst,
                    as_bytes_mut(&mut tmp),
                    dst,
                    TAG_ALLREDUCE,
                )?;
                op.apply(&tmp, recv);
                mask <<= 1;
            }
        }
        if r < 2 * rem {
            if r % 2 == 0 {
                self.crecv(as_bytes_mut(recv), r + 1, TAG_ALLREDUCE)?;
            } else {
                self.csend(as_bytes(recv), r - 1, TAG_ALLREDUCE)?;
            }
        }
        Ok(())
    }

    /// `MPI_Gatherv` (§6.5): member `i`'s `send` lands in the root's `recv`
    /// at `displs[i]` (`counts`, `displs` and `recv` matter at the root
    /// only; pass `None` elsewhere).
    ///
    /// # Errors
    ///
    /// Invalid root; counts that disagree with what members send.
    pub fn gather_varcount_into<T: Equivalence>(
        &self,
        send: &[T],
        recv: Option<(&mut [T], &[usize], &[usize])>,
        root: i32,
    ) -> Result<()> {
        let root = self.check_root(root)?;
        let (p, r) = self.p_r();
        if r != root {
            return self.csend(as_bytes(send), root, TAG_GATHER);
        }
        let Some((recv, counts, displs)) = recv else {
            return Err(bad("gather: the root needs a receive buffer".into()));
        };
        if counts.len() != p || displs.len() != p {
            return Err(bad(format!("gather: {p} counts and displacements needed")));
        }
        let mut staging: Vec<Vec<T>> = (0..p)
            .map(|i| zeroed_vec(if i == r { 0 } else { counts[i] }))
            .collect();
        let mut reqs = Vec::with_capacity(p);
        for (i, buf) in staging.iter_mut().enumerate().filter(|(i, _)| *i != r) {
            reqs.push(self.irecv_bytes(
                as_bytes_mut(buf),
                i as i32,
                TAG_GATHER as i32,
                self.coll(),
            )?);
        }
        let statuses = wait_all(reqs)?;
        for (i, st) in (0..p).filter(|i| *i != r).zip(statuses) {
            if st.count_bytes() != counts[i] * size_of::<T>() {
                return Err(bad(format!("gather: rank {i} sent a different count")));
            }
        }
        staging[r] = send.to_vec();
        for (i, data) in staging.iter().enumerate() {
            let range = block(recv.len(), counts[i], displs[i], "gather")?;
            if data.len() != counts[i] {
                return Err(bad(format!(
                    "gather: the root sends {} not {}",
                    data.len(),
                    counts[i]
                )));
            }
            recv[range].copy_from_slice(data);
        }
        Ok(())
    }

    /// `MPI_Gather` (§6.5): every member's `send` (same length everywhere)
    /// lands in the root's `recv`, in rank order.
    ///
    /// # Errors
    ///
    /// As for [`Communicator::gather_varcount_into`].
    pub fn gather_into<T: Equivalence>(
        &self,
        send: &[T],
        recv: Option<&mut [T]>,
        root: i32,
    ) -> Result<()> {
        let (counts, displs) = uniform(self.members.len(), send.len());
        self.gather_varcount_into(send, recv.map(|b| (b, &counts[..], &displs[..])), root)
    }

    /// `MPI_Scatterv` (§6.6): block `i` of the root's `send` (`counts[i]`
    /// elements at `displs[i]`) goes to member `i`'s `recv`.
    ///
    /// # Errors
    ///
    /// Invalid root; blocks outside `send`; `recv` of the wrong length.
    pub fn scatter_varcount_into<T: Equivalence>(
        &self,
        send: Option<(&[T], &[usize], &[usize])>,
        recv: &mut [T],
        root: i32,
    ) -> Result<()> {
        let root = self.check_root(root)?;
        let (p, r) = self.p_r();
        if r != root {
            return self.crecv(as_bytes_mut(recv), root, TAG_SCATTER);
        }
        let Some((send, counts, displs)) = send else {
            return Err(bad("scatter: the root needs a send buffer".into()));
        };
        if counts.len() != p || displs.len() != p {
            return Err(bad(format!("scatter: {p} counts and displacements needed")));
        }
        let mut reqs = Vec::with_capacity(p);
        for i in (0..p).filter(|i| *i != r) {
            let range = block(send.len(), counts[i], displs[i], "scatter")?;
            reqs.push(self.isend_bytes(
                as_bytes(&send[range]),
                i as i32,
                TAG_SCATTER,
                self.coll(),
            )?);
        }
        let own = block(send.len(), counts[r], displs[r], "scatter")?;
        let done = wait_all(reqs);
        if recv.len() != own.len() {
            return Err(bad(format!(
                "scatter: root receives {} not {}",
                recv.len(),
                own.len()
            )));
        }
        recv.copy_from_slice(&send[own]);
        done.map(drop)
    }

    /// `MPI_Scatter` (§6.6): equal blocks of the root's `send` go to the
    /// members in rank order.
    ///
    /// # Errors
    ///
    /// As for [`Communicator::scatter_varcount_into`].
    pub fn scatter_into<T: Equivalence>(
        &self,
        send: Option<&[T]>,
        recv: &mut [T],
        root: i32,
    ) -> Result<()> {
        let (counts, displs) = uniform(self.members.len(), recv.len());
        self.scatter_varcount_into(send.map(|b| (b, &counts[..], &displs[..])), recv, root)
    }

    /// `MPI_Allgatherv` (§6.7): every member's `send` lands at
    /// `displs[i]` of every member's `recv`.
    ///
    /// # Errors
    ///
    /// Counts that disagree; blocks outside `recv`.
    pub fn all_gather_varcount_into<T: Equivalence>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        displs: &[usize],
    ) -> Result<()> {
        let (p, r) = self.p_r();
        if counts.len() != p || displs.len() != p || counts[r] != send.len() {
            return Err(bad(format!(
                "allgather: {p} counts and displacements needed, count[{r}] = {}",
                send.len()
            )));
        }
        let blocks = (0..p)
            .map(|i| block(recv.len(), counts[i], displs[i], "allgather"))
            .collect::<Result<Vec<_>>>()?;
        recv[blocks[r].clone()].copy_from_slice(send);
        let (right, left) = ((r + 1) % p, (r + p - 1) % p);
        for s in 0..p.saturating_sub(1) {
            let out = blocks[(r + p - s) % p].clone();
            let inn = blocks[(r + 2 * p - s - 1) % p].clone();
            let req = self.isend_bytes(
                as_bytes(&recv[out]),
                right as i32,
                TAG_ALLGATHER,
                self.coll(),
            )?;
            self.crecv(as_bytes_mut(&mut recv[inn]), left, TAG_ALLGATHER)?;
            req.wait()?;
        }
        Ok(())
    }

    /// `MPI_Allgather` (§6.7): every member gets every member's `send`, in
    /// rank order.
    ///
    /// # Errors
    ///
    /// `recv` not `size` times `send`.
    pub fn all_gather_into<T: Equivalence>(&self, send: &[T], recv: &mut [T]) -> Result<()> {
        let (counts, displs) = uniform(self.members.len(), send.len());
        self.all_gather_varcount_into(send, recv, &counts, &displs)
    }

    /// `MPI_Alltoallv` (§6.8): block `j` of member `i`'s `send` lands as
    /// block `i` of member `j`'s `recv`.
    ///
    /// # Errors
    ///
    /// Counts that disagree between sender and receiver; blocks outside
    /// the buffers.
    #[allow(clippy::too_many_arguments)]
    pub fn all_to_all_varcount_into<T: Equivalence>(
        &self,
        send: &[T],
        send_counts: &[usize],
        send_displs: &[usize],
        recv: &mut [T],
        recv_counts: &[usize],
        recv_displs: &[usize],
    ) -> Result<()> {
        let (p, r) = self.p_r();
        if [send_counts, send_displs, recv_counts, recv_displs]
            .iter()
            .any(|v| v.len() != p)
        {
            return Err(bad(format!(
                "alltoall: {p} counts and displacements needed"
            )));
        }
        let sb = |i: usize| block(send.len(), send_counts[i], send_displs[i], "alltoall send");
        let rlen = recv.len();
        let rb = |i: usize| block(rlen, recv_counts[i], recv_displs[i], "alltoall recv");
        let (own_s, own_r) = (sb(r)?, rb(r)?);
        if own_s.len() != own_r.len() {
            return Err(bad("alltoall: own send and receive counts differ".into()));
        }
        recv[own_r].copy_from_slice(&send[own_s]);
        for s in 1..p {
            let (dst, src) = ((r + s) % p, (r + p - s) % p);
            let req = self.isend_bytes(
                as_bytes(&send[sb(dst)?]),
                dst as i32,
                TAG_ALLTOALL,
                self.coll(),
            )?;
            let range = rb(src)?;
            self.crecv(as_bytes_mut(&mut recv[range]), src, TAG_ALLTOALL)?;
            req.wait()?;
        }
        Ok(())
    }

    /// `MPI_Alltoall` (§6.8): equal blocks, block `j` of member `i` to
    /// block `i` of member `j`.
    ///
    /// # Errors
    ///
    /// Buffers that are not a multiple of `size` or differ in length.
    pub fn all_to_all_into<T: Equivalence>(&self, send: &[T], recv: &mut [T]) -> Result<()> {
        let p = self.members.len();
        if send.len() % p != 0 || recv.len() != send.len() {
            return Err(bad(format!(
                "alltoall: buffers of {} and {} for {p} ranks",
                send.len(),
                recv.len()
            )));
        }
        let (counts, displs) = uniform(p, send.len() / p);
        self.all_to_all_varcount_into(send, &counts, &displs, recv, &counts, &displs)
    }
}

/// Rooted collectives in rsmpi's shape: `world.process_at_rank(root)?`
/// then `broadcast_into`, `reduce_into_root` (at the root) or
/// `reduce_into` (elsewhere), and so on.
impl Process<'_> {
    /// `MPI_Bcast` from this process (§6.4).
    ///
    /// # Errors
    ///
    /// As for [`Communicator::broadcast_into`].
    pub fn broadcast_into<T: Equivalence>(&self, buf: &mut [T]) -> Result<()> {
        self.communicator().broadcast_into(buf, self.rank())
    }

    /// `MPI_Reduce` to this process, called by this process (§6.9.1).
    ///
    /// # Errors
    ///
    /// As for [`Communicator::reduce_into`].
    pub fn reduce_into_root<T: Equivalence, O: Operation<T>>(
        &self,
        send: &[T],
        recv: &mut [T],
        op: &O,
    ) -> Result<()> {
        self.communicator()
            .reduce_into(send, Some(recv), op, self.rank())
    }

    /// `MPI_Reduce` to this process, called by the other members.
    ///
    /// # Errors
    ///
    /// As for [`Communicator::reduce_into`].
    pub fn reduce_into<T: Equivalence, O: Operation<T>>(&self, send: &[T], op: &O) -> Result<()> {
        self.communicator().reduce_into(send, None, op, self.rank())
    }

    /// `MPI_Gather` to this process, called by this process (§6.5).
    ///
    /// # Errors
    ///
    /// As for [`Communicator::gather_into`].
    pub fn gather_into_root<T: Equivalence>(&self, send: &[T], recv: &mut [T]) -> Result<()> {
        self.communicator()
            .gather_into(send, Some(recv), self.rank())
    }

    /// `MPI_Gather` to this process, called by the other members.
    ///
    /// # Errors
    ///
    /// As for [`Communicator::gather_into`].
    pub fn gather_into<T: Equivalence>(&self, send: &[T]) -> Result<()> {
        self.communicator().gather_into(send, None, self.rank())
    }

    /// `MPI_Scatter` from this process, called by this process (§6.6).
    ///
    /// # Errors
    ///
    /// As for [`Communicator::scatter_into`].
    pub fn scatter_into_root<T: Equivalence>(&self, send: &[T], recv: &mut [T]) -> Result<()> {
        self.communicator()
            .scatter_into(Some(send), recv, self.rank())
    }

    /// `MPI_Scatter` from this process, called by the other members.
    ///
    /// # Errors
    ///
    /// As for [`Communicator::scatter_into`].
    pub fn scatter_into<T: Equivalence>(&self, recv: &mut [T]) -> Result<()> {
        self.communicator().scatter_into(None, recv, self.rank())
    }
}
