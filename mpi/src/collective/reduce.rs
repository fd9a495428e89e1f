//! `MPI_Reduce` (§6.9.1): a binomial tree for short vectors; for long
//! ones, allreduce's reduce-scatter then a gather of the blocks to the
//! root (the module documentation says why and from which size).

use super::allreduce::{Cut, Split};
use super::{bad, TAG_REDUCE, TAG_REDUCE_GATHER};
use crate::communicator::Communicator;
use crate::datatype::{as_bytes, as_bytes_mut, zeroed_vec, Equivalence};
use crate::error::Result;
use crate::operation::Operation;
use crate::request::wait_all;

impl Communicator {
    /// `MPI_Reduce` (§6.9.1): combines `send` of every member with `op`
    /// into `recv` of `root` (`recv` is required at the root only). On an
    /// inter-communicator, the other group's `send`s into the root's
    /// `recv`, `root` as for [`Communicator::broadcast_into`].
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
        if self.inter.is_some() {
            return self.inter_reduce(send, recv, op, root);
        }
        let root = self.check_root(root)?;
        let (p, r) = self.p_r();
        let n = send.len();
        let out = match recv.filter(|_| r == root) {
            Some(out) if out.len() == n => Some(out),
            None if r != root => None,
            _ => {
                return Err(bad(format!(
                    "reduce: the root needs a receive buffer of {n}"
                )))
            }
        };
        let mut acc = send.to_vec();
        let cut = match Split::for_op::<T, O>(p, n, op) {
            Split::Whole if !op.commutes() => {
                self.reduce_in_order(&mut acc, op, root)?;
                if let Some(out) = out {
                    out.copy_from_slice(&acc);
                }
                return Ok(());
            }
            Split::Whole => {
                self.reduce_binomial(&mut acc, op, root)?;
                if let Some(out) = out {
                    out.copy_from_slice(&acc);
                }
                return Ok(());
            }
            Split::Halving(cut) => {
                self.reduce_scatter_halving(&mut acc, cut, op, TAG_REDUCE)?;
                cut
            }
            Split::Ring(cut) => {
                self.reduce_scatter_ring(&mut acc, cut, op, TAG_REDUCE)?;
                cut
            }
        };
        self.gather_blocks(&acc, cut, out, root)
    }

    /// Reduces into `acc` of `root` along a binomial tree: in round k the
    /// members whose relative rank has bit k set send what they have
    /// gathered to the one with that bit clear, and leave.
    fn reduce_binomial<T: Equivalence, O: Operation<T>>(
        &self,
        acc: &mut [T],
        op: &O,
        root: usize,
    ) -> Result<()> {
        let (p, r) = self.p_r();
        let rel = (r + p - root) % p;
        let mut tmp: Vec<T> = zeroed_vec(acc.len());
        let mut mask = 1;
        while mask < p {
            if rel & mask == 0 {
                let child = rel | mask;
                if child < p {
                    self.crecv(as_bytes_mut(&mut tmp), (child + root) % p, TAG_REDUCE)?;
                    op.apply(&tmp, acc);
                }
            } else {
                self.csend(as_bytes(acc), ((rel & !mask) + root) % p, TAG_REDUCE)?;
                break;
            }
            mask <<= 1;
        }
        Ok(())
    }

    /// Reduces into `acc` of `root` in rank order, for an operation that
    /// does not commute: a binomial tree rooted at rank 0 over the ranks
    /// themselves, in which rank r, holding the result of ranks
    /// `r .. r + 2^k`, appends that of `r + 2^k .. r + 2^(k+1)` on its
    /// right; rank 0 then sends the result to `root` if it is another.
    fn reduce_in_order<T: Equivalence, O: Operation<T>>(
        &self,
        acc: &mut [T],
        op: &O,
        root: usize,
    ) -> Result<()> {
        let (p, r) = self.p_r();
        let mut tmp: Vec<T> = zeroed_vec(acc.len());
        let mut mask = 1;
        while mask < p {
            if r & mask == 0 {
                if r | mask < p {
                    self.crecv(as_bytes_mut(&mut tmp), r | mask, TAG_REDUCE)?;
                    op.apply(acc, &mut tmp);
                    acc.copy_from_slice(&tmp);
                }
            } else {
                self.csend(as_bytes(acc), r & !mask, TAG_REDUCE)?;
                break;
            }
            mask <<= 1;
        }
        match (r, root) {
            (_, 0) => Ok(()),
            (0, _) => self.csend(as_bytes(acc), root, TAG_REDUCE),
            (r, root) if r == root => self.crecv(as_bytes_mut(acc), 0, TAG_REDUCE),
            _ => Ok(()),
        }
    }

    /// After a reduce-scatter, when block `rank` of `acc` (of p, cut by
    /// `cut`) is reduced on each member: the root receives every block
    /// into `out` at once, each straight into its place.
    fn gather_blocks<T: Equivalence>(
        &self,
        acc: &[T],
        cut: Cut,
        out: Option<&mut [T]>,
        root: usize,
    ) -> Result<()> {
        let (p, r) = self.p_r();
        let Some(mut rest) = out else {
            return self.csend(as_bytes(&acc[cut.block(r)]), root, TAG_REDUCE_GATHER);
        };
        let mut reqs = Vec::with_capacity(p - 1);
        for i in 0..p {
            let (block, tail) = std::mem::take(&mut rest).split_at_mut(cut.block(i).len());
            rest = tail;
            if i == r {
                block.copy_from_slice(&acc[cut.block(r)]);
            } else {
                let bytes = as_bytes_mut(block);
                let len = bytes.len();
                // SAFETY: The request goes into `reqs`, which `wait_all`
                // below takes and completes or drops every request of; on
                // an early return (the `?`s) or unwinding, dropping `reqs`
                // drops them all. None is leaked.
                let req = unsafe { self.cirecv(bytes, i, TAG_REDUCE_GATHER) }?;
                reqs.push((len, req));
            }
        }
        let (lens, reqs): (Vec<usize>, Vec<_>) = reqs.into_iter().unzip();
        let statuses = wait_all(reqs)?;
        if lens
            .iter()
            .zip(&statuses)
            .any(|(l, s)| *l != s.count_bytes())
        {
            return Err(bad("reduce: the processes disagree on counts".into()));
        }
        Ok(())
    }
}
