//! `MPI_Scan` (§6.11.1) and `MPI_Exscan` (§6.11.2): recursive doubling,
//! ⌈log2 p⌉ exchanges of the whole vector, in rank order for operations
//! that do not commute.

use super::{bad, TAG_SCAN};
use crate::communicator::Communicator;
use crate::datatype::{as_bytes, as_bytes_mut, zeroed_vec, Equivalence};
use crate::error::Result;
use crate::operation::Operation;

impl Communicator {
    /// `MPI_Scan` (§6.11.1): member r gets `op` over the `send`s of
    /// members 0 to r, in rank order.
    ///
    /// # Errors
    ///
    /// `recv` of another length than `send`; dead peers.
    pub fn scan_into<T: Equivalence, O: Operation<T>>(
        &self,
        send: &[T],
        recv: &mut [T],
        op: &O,
    ) -> Result<()> {
        self.intra_collective()?;
        if recv.len() != send.len() {
            return Err(bad(format!(
                "scan: {} elements sent, {} received",
                send.len(),
                recv.len()
            )));
        }
        recv.copy_from_slice(send);
        self.scan_doubling(send, recv, true, op)
    }

    /// `MPI_Exscan` (§6.11.2): member r > 0 gets `op` over the `send`s of
    /// members 0 to r − 1, in rank order; member 0's `recv` is left as it
    /// is (MPI leaves it undefined).
    ///
    /// # Errors
    ///
    /// As for [`Communicator::scan_into`].
    pub fn exscan_into<T: Equivalence, O: Operation<T>>(
        &self,
        send: &[T],
        recv: &mut [T],
        op: &O,
    ) -> Result<()> {
        self.intra_collective()?;
        if recv.len() != send.len() {
            return Err(bad(format!(
                "exscan: {} elements sent, {} received",
                send.len(),
                recv.len()
            )));
        }
        self.scan_doubling(send, recv, false, op)
    }

    /// Recursive doubling: in the step of distance d, partners `r ^ d`
    /// swap `partial`, the result of the (up to) d consecutive ranks each
    /// one stands for so far, the lower partner's just below the higher
    /// one's; the higher partner puts
    /// the lower one's on the left of its `partial` and of its result, the
    /// lower one puts the higher one's on the right of its `partial`.
    /// `result` starts as `send` for an inclusive scan, as nothing for an
    /// exclusive one.
    fn scan_doubling<T: Equivalence, O: Operation<T>>(
        &self,
        send: &[T],
        result: &mut [T],
        inclusive: bool,
        op: &O,
    ) -> Result<()> {
        let (p, r) = self.p_r();
        let mut partial = send.to_vec();
        let mut tmp: Vec<T> = zeroed_vec(send.len());
        let mut defined = inclusive;
        let mut d = 1;
        while d < p {
            let partner = r ^ d;
            if partner < p {
                self.cexchange(
                    as_bytes(&partial),
                    partner,
                    as_bytes_mut(&mut tmp),
                    partner,
                    TAG_SCAN,
                )?;
                if partner < r {
                    if defined {
                        op.apply(&tmp, result);
                    } else {
                        result.copy_from_slice(&tmp);
                        defined = true;
                    }
                    op.apply(&tmp, &mut partial);
                } else {
                    op.apply(&partial, &mut tmp);
                    std::mem::swap(&mut partial, &mut tmp);
                }
            }
            d <<= 1;
        }
        Ok(())
    }
}
