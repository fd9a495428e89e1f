//! `MPI_Reduce_scatter` and `MPI_Reduce_scatter_block` (§6.10): a reduce
//! to rank 0 (in rank order for operations that do not commute), then a
//! scatter of the blocks.

use super::{bad, uniform};
use crate::communicator::Communicator;
use crate::datatype::{zeroed_vec, Equivalence};
use crate::error::Result;
use crate::operation::Operation;

impl Communicator {
    /// `MPI_Reduce_scatter` (§6.10.1): `op` over every member's `send`
    /// (the sum of `counts` items), then member i gets block i, `counts[i]`
    /// items after the blocks of lower ranks, in `recv`. On an
    /// inter-communicator (§6.10.1) `op` is over the other group's `send`,
    /// and `counts` has one count per process of the local group, whose
    /// sum both groups must agree on.
    ///
    /// # Errors
    ///
    /// `counts` not one per member, `send` not their sum, `recv` not this
    /// member's count; dead peers.
    pub fn reduce_scatter_into<T: Equivalence, O: Operation<T>>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        op: &O,
    ) -> Result<()> {
        if self.inter.is_some() {
            return self.inter_reduce_scatter(send, recv, counts, op);
        }
        let (p, r) = self.p_r();
        if counts.len() != p {
            return Err(bad(format!("reduce_scatter: {p} counts needed")));
        }
        let total: usize = counts.iter().sum();
        if send.len() != total || recv.len() != counts[r] {
            return Err(bad(format!(
                "reduce_scatter: {} sent and {} received for counts {counts:?}",
                send.len(),
                recv.len()
            )));
        }
        let mut displs = Vec::with_capacity(p);
        let mut at = 0;
        for &c in counts {
            displs.push(at);
            at += c;
        }
        if r == 0 {
            let mut all: Vec<T> = zeroed_vec(total);
            self.reduce_into(send, Some(&mut all), op, 0)?;
            self.scatter_varcount_into(Some((&all, counts, &displs)), recv, 0)
        } else {
            self.reduce_into(send, None, op, 0)?;
            self.scatter_varcount_into(None, recv, 0)
        }
    }

    /// `MPI_Reduce_scatter_block` (§6.10.2): as
    /// [`Communicator::reduce_scatter_into`] with `recv.len()` items for
    /// every member (`send` holds p times as many).
    ///
    /// # Errors
    ///
    /// As for [`Communicator::reduce_scatter_into`].
    pub fn reduce_scatter_block_into<T: Equivalence, O: Operation<T>>(
        &self,
        send: &[T],
        recv: &mut [T],
        op: &O,
    ) -> Result<()> {
        // The local group's blocks on an inter-communicator too (§6.10.2).
        let (counts, _) = uniform(self.members.len(), recv.len());
        self.reduce_scatter_into(send, recv, &counts, op)
    }
}
