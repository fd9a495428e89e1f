//! `MPI_Allgather(v)` (§6.7).

use super::{bad, block, uniform, TAG_ALLGATHER};
use crate::communicator::Communicator;
use crate::datatype::Equivalence;
use crate::error::Result;

impl Communicator {
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
        if self.inter.is_some() {
            return self.inter_all_gather(send, recv, counts, displs);
        }
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
        self.ring_allgather(recv, |i| blocks[i].clone(), 0, |_, _| false, TAG_ALLGATHER)
    }

    /// `MPI_Allgather` (§6.7): every member gets every member's `send`, in
    /// rank order.
    ///
    /// # Errors
    ///
    /// `recv` not `size` times `send`.
    pub fn all_gather_into<T: Equivalence>(&self, send: &[T], recv: &mut [T]) -> Result<()> {
        if self.inter.is_some() {
            return self.inter_all_gather_uniform(send, recv);
        }
        let (counts, displs) = uniform(self.members.len(), send.len());
        self.all_gather_varcount_into(send, recv, &counts, &displs)
    }
}
