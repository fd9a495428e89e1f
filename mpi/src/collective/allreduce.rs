//! `MPI_Allreduce` (§6.9.6).

use super::{bad, TAG_ALLREDUCE};
use crate::communicator::Communicator;
use crate::datatype::{as_bytes, as_bytes_mut, zeroed_vec, Equivalence};
use crate::error::Result;
use crate::operation::Operation;

impl Communicator {
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
}
