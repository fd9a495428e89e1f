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

mod allgather;
mod allreduce;
mod alltoall;
mod barrier;
mod bcast;
mod gather;
mod reduce;

use crate::communicator::Communicator;
use crate::datatype::Equivalence;
use crate::error::{Error, Result};
use crate::operation::Operation;
use crate::point_to_point::Process;

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
