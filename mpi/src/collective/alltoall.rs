//! `MPI_Alltoall(v)` (§6.8): everything posted at once for short
//! exchanges, pairwise exchange for long ones (the module documentation
//! says why and from which size).

use std::ops::Range;

use super::{bad, block, uniform, ALLTOALL_EAGER, TAG_ALLTOALL};
use crate::communicator::Communicator;
use crate::datatype::{as_bytes, as_bytes_mut, Equivalence};
use crate::error::Result;
use crate::request::wait_all;

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
        if self.inter.is_some() {
            return self.inter_all_to_all(
                send,
                send_counts,
                send_displs,
                recv,
                recv_counts,
                recv_displs,
            );
        }
        let (p, r) = self.p_r();
        if [send_counts, send_displs, recv_counts, recv_displs]
            .iter()
            .any(|v| v.len() != p)
        {
            return Err(bad(format!(
                "alltoall: {p} counts and displacements needed"
            )));
        }
        let sends = (0..p)
            .map(|i| block(send.len(), send_counts[i], send_displs[i], "alltoall send"))
            .collect::<Result<Vec<_>>>()?;
        let recvs = (0..p)
            .map(|i| block(recv.len(), recv_counts[i], recv_displs[i], "alltoall recv"))
            .collect::<Result<Vec<_>>>()?;
        if sends[r].len() != recvs[r].len() {
            return Err(bad("alltoall: own send and receive counts differ".into()));
        }
        recv[recvs[r].clone()].copy_from_slice(&send[sends[r].clone()]);
        let moved = (0..p)
            .filter(|&i| i != r)
            .map(|i| sends[i].len() + recvs[i].len())
            .sum::<usize>()
            .saturating_mul(size_of::<T>());
        if moved <= ALLTOALL_EAGER {
            // Overlapping receive blocks (erroneous in MPI) cannot all be
            // posted at once; pairwise, the later block wins.
            if let Some(views) = disjoint_mut(recv, &recvs) {
                return self.alltoall_eager(send, &sends, views);
            }
        }
        self.alltoall_pairwise(send, &sends, recv, &recvs)
    }

    /// Posts a receive into each of `views` (but this member's), then a
    /// send of each of `sends`, and waits for all.
    fn alltoall_eager<T: Equivalence>(
        &self,
        send: &[T],
        sends: &[Range<usize>],
        views: Vec<&mut [T]>,
    ) -> Result<()> {
        let (p, r) = self.p_r();
        let mut reqs = Vec::with_capacity(2 * (p - 1));
        let mut lens = Vec::with_capacity(p - 1);
        // Every request goes into `reqs`, which `wait_all` below takes and
        // completes or drops every request of; on an early return (the
        // `?`s) or unwinding, dropping `reqs` drops them all.
        for (i, view) in views.into_iter().enumerate().filter(|(i, _)| *i != r) {
            let bytes = as_bytes_mut(view);
            lens.push(bytes.len());
            // SAFETY: In `reqs`, so never leaked (above).
            reqs.push(unsafe { self.cirecv(bytes, i, TAG_ALLTOALL) }?);
        }
        for s in 1..p {
            let dst = (r + s) % p;
            let data = as_bytes(&send[sends[dst].clone()]);
            // SAFETY: In `reqs`, so never leaked (above).
            reqs.push(unsafe { self.cisend(data, dst, TAG_ALLTOALL) }?);
        }
        let statuses = wait_all(reqs)?;
        if lens
            .iter()
            .zip(&statuses)
            .any(|(l, s)| *l != s.count_bytes())
        {
            return Err(bad("alltoall: the processes disagree on counts".into()));
        }
        Ok(())
    }

    /// Pairwise exchange: in step s (of p − 1), send to rank + s and
    /// receive from rank − s.
    fn alltoall_pairwise<T: Equivalence>(
        &self,
        send: &[T],
        sends: &[Range<usize>],
        recv: &mut [T],
        recvs: &[Range<usize>],
    ) -> Result<()> {
        let (p, r) = self.p_r();
        for s in 1..p {
            let (dst, src) = ((r + s) % p, (r + p - s) % p);
            self.cexchange(
                as_bytes(&send[sends[dst].clone()]),
                dst,
                as_bytes_mut(&mut recv[recvs[src].clone()]),
                src,
                TAG_ALLTOALL,
            )?;
        }
        Ok(())
    }

    /// `MPI_Alltoallw` (§6.8): [`Communicator::all_to_all_varcount_into`]
    /// over bytes, counts and displacements in bytes. Each block may be of
    /// its own datatype; a binding passes the bytes of each block (count
    /// times the type's extent) and the displacement in bytes that
    /// alltoallw takes.
    ///
    /// # Errors
    ///
    /// As for [`Communicator::all_to_all_varcount_into`].
    #[allow(clippy::too_many_arguments)]
    pub fn all_to_all_w_into(
        &self,
        send: &[u8],
        send_bytes: &[usize],
        send_displs: &[usize],
        recv: &mut [u8],
        recv_bytes: &[usize],
        recv_displs: &[usize],
    ) -> Result<()> {
        self.all_to_all_varcount_into(send, send_bytes, send_displs, recv, recv_bytes, recv_displs)
    }

    /// `MPI_Alltoall` (§6.8): equal blocks, block `j` of member `i` to
    /// block `i` of member `j`.
    ///
    /// # Errors
    ///
    /// Buffers that are not a multiple of `size` or differ in length.
    pub fn all_to_all_into<T: Equivalence>(&self, send: &[T], recv: &mut [T]) -> Result<()> {
        if self.inter.is_some() {
            return self.inter_all_to_all_uniform(send, recv);
        }
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

/// Mutable views of `buf` at `ranges` (each within `buf`), in their
/// order; `None` if two non-empty ranges overlap.
fn disjoint_mut<'a, T>(buf: &'a mut [T], ranges: &[Range<usize>]) -> Option<Vec<&'a mut [T]>> {
    let mut order: Vec<usize> = (0..ranges.len()).collect();
    order.sort_by_key(|&i| ranges[i].start);
    let mut views: Vec<&'a mut [T]> = ranges.iter().map(|_| Default::default()).collect();
    let (mut rest, mut at) = (buf, 0);
    for i in order.into_iter().filter(|&i| !ranges[i].is_empty()) {
        let gap = ranges[i].start.checked_sub(at)?;
        let (_, tail) = std::mem::take(&mut rest).split_at_mut(gap);
        let (view, tail) = tail.split_at_mut(ranges[i].len());
        views[i] = view;
        rest = tail;
        at = ranges[i].end;
    }
    Some(views)
}

#[cfg(test)]
mod tests {
    use super::disjoint_mut;

    #[test]
    fn views_in_the_order_asked_and_none_on_overlap() {
        let mut buf = [0u8, 1, 2, 3, 4, 5, 6, 7];
        let views = disjoint_mut(&mut buf, &[5..8, 0..2, 3..3, 2..5]).unwrap();
        let got: Vec<Vec<u8>> = views.iter().map(|v| v.to_vec()).collect();
        assert_eq!(got, [vec![5, 6, 7], vec![0, 1], vec![], vec![2, 3, 4]]);
        assert!(disjoint_mut(&mut buf, &[0..3, 2..4]).is_none());
        assert!(disjoint_mut(&mut buf, &[1..1, 0..8]).is_some());
    }
}
