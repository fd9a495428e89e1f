//! `MPI_Alltoall(v)` (§6.8).

use super::{bad, block, uniform, TAG_ALLTOALL};
use crate::communicator::Communicator;
use crate::datatype::{as_bytes, as_bytes_mut, Equivalence};
use crate::error::Result;

impl Communicator {
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
