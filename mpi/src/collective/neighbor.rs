//! The neighborhood collectives (MPI 5.0 §8.6) and their nonblocking
//! forms (§8.7): each process sends a block to each of its destinations
//! and receives a block from each of its sources, as a [`Neighborhood`]
//! (from the communicator's topology) lists them.
//!
//! The blocking ones post every receive (straight into the caller's
//! buffer), then every send (lent from it), and wait for all; the
//! nonblocking ones are one round of a schedule doing the same. Nothing
//! goes to or comes from `MPI_PROC_NULL` (`None`), whose receive blocks
//! are left as they are.
//!
//! Matching. Messages travel in the collective context, so user messages
//! never match them. A process may send several blocks to one neighbour
//! (repeated edges, or both neighbours of a periodic dimension of size 1
//! or 2): they go out in the order of the send buffer, and messages
//! between two processes with one tag and context match the receives in
//! the order these were posted (non-overtaking, §3.5). So the receives
//! are posted in [`Neighborhood::receive_order`], which pairs the k-th
//! block sent to a process with the block the standard says it lands in.
//! Consecutive neighborhood collectives do not mix either: each process
//! posts all of one's receives before the next one's, and sends in order.

use std::ops::Range;

use super::schedule::{NoOp, Plan};
use super::{bad, block, uniform, TAG_NEIGHBOR};
use crate::communicator::Communicator;
use crate::datatype::{as_bytes, as_bytes_mut, Equivalence};
use crate::error::Result;
use crate::request::{wait_all, Request};
use crate::topology::Neighborhood;

/// A collective's messages, each a block of the buffer and a rank: the
/// sends in the order they go out, the receives in the order they are
/// posted; `MPI_PROC_NULL` neighbours left out.
type Messages = (Vec<(Range<usize>, usize)>, Vec<(Range<usize>, usize)>);

impl Communicator {
    /// Checks a neighborhood collective's arguments (per-neighbour counts
    /// and displacements, in items) and lists its messages.
    #[allow(clippy::too_many_arguments)]
    fn neighbor_messages(
        &self,
        nbrs: &Neighborhood,
        send_len: usize,
        send_counts: &[usize],
        send_displs: &[usize],
        recv_len: usize,
        recv_counts: &[usize],
        recv_displs: &[usize],
    ) -> Result<Messages> {
        // Refused on an inter-communicator, which has no topology (§8.1),
        // before any message could go to a rank of the remote group (the
        // nonblocking forms come here too, ahead of `start_schedule`).
        self.intra_collective()?;
        let (p, _) = self.p_r();
        let (ins, outs) = (nbrs.sources.len(), nbrs.destinations.len());
        if send_counts.len() != outs || send_displs.len() != outs {
            return Err(bad(format!(
                "neighborhood collective: {outs} send counts and displacements needed"
            )));
        }
        if recv_counts.len() != ins || recv_displs.len() != ins {
            return Err(bad(format!(
                "neighborhood collective: {ins} receive counts and displacements needed"
            )));
        }
        let rank = |r: i32| {
            usize::try_from(r)
                .ok()
                .filter(|&r| r < p)
                .ok_or_else(|| bad(format!("neighborhood collective: neighbour {r} of {p}")))
        };
        let mut sends = Vec::with_capacity(outs);
        for (i, d) in nbrs.destinations.iter().enumerate() {
            if let Some(d) = d {
                let b = block(send_len, send_counts[i], send_displs[i], "neighbor send")?;
                sends.push((b, rank(*d)?));
            }
        }
        let mut recvs = Vec::with_capacity(ins);
        for i in nbrs.receive_order() {
            if let Some(s) = nbrs.sources[i] {
                let b = block(recv_len, recv_counts[i], recv_displs[i], "neighbor recv")?;
                recvs.push((b, rank(s)?));
            }
        }
        Ok((sends, recvs))
    }

    /// `MPI_Neighbor_alltoallv` (§8.6.2): block `i` of `send` (counts and
    /// displacements in items) goes to destination `i`, block `j` of
    /// `recv` comes from source `j`.
    ///
    /// # Errors
    ///
    /// Counts or displacements not one per neighbour, blocks outside the
    /// buffers, neighbours outside the communicator; counts that disagree
    /// between sender and receiver.
    #[allow(clippy::too_many_arguments)]
    pub fn neighbor_all_to_all_varcount_into<T: Equivalence>(
        &self,
        nbrs: &Neighborhood,
        send: &[T],
        send_counts: &[usize],
        send_displs: &[usize],
        recv: &mut [T],
        recv_counts: &[usize],
        recv_displs: &[usize],
    ) -> Result<()> {
        let (sends, recvs) = self.neighbor_messages(
            nbrs,
            send.len(),
            send_counts,
            send_displs,
            recv.len(),
            recv_counts,
            recv_displs,
        )?;
        let ranges: Vec<Range<usize>> = recvs.iter().map(|(r, _)| r.clone()).collect();
        let Some(views) = views(recv, &ranges) else {
            // Overlapping receive blocks (erroneous in MPI) cannot all be
            // posted at once: one at a time, in order, the later wins.
            let mut reqs = Vec::with_capacity(sends.len());
            for (range, dst) in &sends {
                // SAFETY: in `reqs`, which `wait_all` completes, or which
                // is dropped with its requests on an early return or
                // unwinding: never leaked.
                reqs.push(unsafe {
                    self.cisend(as_bytes(&send[range.clone()]), *dst, TAG_NEIGHBOR)
                }?);
            }
            for (range, src) in &recvs {
                self.crecv(as_bytes_mut(&mut recv[range.clone()]), *src, TAG_NEIGHBOR)?;
            }
            return wait_all(reqs).map(drop);
        };
        let mut reqs = Vec::with_capacity(sends.len() + recvs.len());
        let mut lens = Vec::with_capacity(recvs.len());
        // Every request goes into `reqs`, which `wait_all` below takes and
        // completes or drops every request of; on an early return (the
        // `?`s) or unwinding, dropping `reqs` drops them all.
        for (view, (_, src)) in views.into_iter().zip(&recvs) {
            let bytes = as_bytes_mut(view);
            lens.push(bytes.len());
            // SAFETY: in `reqs`, so never leaked (above).
            reqs.push(unsafe { self.cirecv(bytes, *src, TAG_NEIGHBOR) }?);
        }
        for (range, dst) in &sends {
            // SAFETY: in `reqs`, so never leaked (above).
            reqs.push(unsafe { self.cisend(as_bytes(&send[range.clone()]), *dst, TAG_NEIGHBOR) }?);
        }
        let statuses = wait_all(reqs)?;
        if lens
            .iter()
            .zip(&statuses)
            .any(|(l, s)| *l != s.count_bytes())
        {
            return Err(bad(
                "neighborhood collective: the processes disagree on counts".into(),
            ));
        }
        Ok(())
    }

    /// `MPI_Ineighbor_alltoallv` (§8.7): as
    /// [`Communicator::neighbor_all_to_all_varcount_into`]; `recv` stays
    /// borrowed until the request completes (`send` is copied at once).
    ///
    /// # Errors
    ///
    /// As for [`Communicator::neighbor_all_to_all_varcount_into`];
    /// receive blocks that overlap.
    #[allow(clippy::too_many_arguments)]
    pub fn ineighbor_all_to_all_varcount_into<'b, T: Equivalence>(
        &self,
        nbrs: &Neighborhood,
        send: &[T],
        send_counts: &[usize],
        send_displs: &[usize],
        recv: &'b mut [T],
        recv_counts: &[usize],
        recv_displs: &[usize],
    ) -> Result<Request<'b>> {
        let (sends, recvs) = self.neighbor_messages(
            nbrs,
            send.len(),
            send_counts,
            send_displs,
            recv.len(),
            recv_counts,
            recv_displs,
        )?;
        let mut plan = Plan::new();
        let s = plan.buf(send.to_vec());
        let b = plan.zeroed(recv.len());
        let round = plan.round();
        // The schedule posts the receives, then the sends, in these
        // orders: the matching is the blocking form's.
        for (range, src) in &recvs {
            round.recvs.push(((b, range.clone()), *src));
        }
        for (range, dst) in &sends {
            round.sends.push(((s, range.clone()), *dst));
        }
        // Only the blocks received are written: `MPI_PROC_NULL`'s stay.
        let copies = recvs
            .iter()
            .map(|(range, _)| ((b, range.clone()), range.clone()))
            .collect();
        self.start_schedule(plan, NoOp, Some(recv), copies)
    }

    /// `MPI_Neighbor_alltoallw` (§8.6.2):
    /// [`Communicator::neighbor_all_to_all_varcount_into`] over bytes,
    /// counts and displacements in bytes (each block may be of its own
    /// datatype, which a binding turns into bytes).
    ///
    /// # Errors
    ///
    /// As for [`Communicator::neighbor_all_to_all_varcount_into`].
    #[allow(clippy::too_many_arguments)]
    pub fn neighbor_all_to_all_w_into(
        &self,
        nbrs: &Neighborhood,
        send: &[u8],
        send_bytes: &[usize],
        send_displs: &[usize],
        recv: &mut [u8],
        recv_bytes: &[usize],
        recv_displs: &[usize],
    ) -> Result<()> {
        self.neighbor_all_to_all_varcount_into(
            nbrs,
            send,
            send_bytes,
            send_displs,
            recv,
            recv_bytes,
            recv_displs,
        )
    }

    /// `MPI_Ineighbor_alltoallw` (§8.7): as
    /// [`Communicator::neighbor_all_to_all_w_into`].
    ///
    /// # Errors
    ///
    /// As for [`Communicator::ineighbor_all_to_all_varcount_into`].
    #[allow(clippy::too_many_arguments)]
    pub fn ineighbor_all_to_all_w_into<'b>(
        &self,
        nbrs: &Neighborhood,
        send: &[u8],
        send_bytes: &[usize],
        send_displs: &[usize],
        recv: &'b mut [u8],
        recv_bytes: &[usize],
        recv_displs: &[usize],
    ) -> Result<Request<'b>> {
        self.ineighbor_all_to_all_varcount_into(
            nbrs,
            send,
            send_bytes,
            send_displs,
            recv,
            recv_bytes,
            recv_displs,
        )
    }

    /// `MPI_Neighbor_alltoall` (§8.6.2): equal blocks, `send` one per
    /// destination, `recv` one per source.
    ///
    /// # Errors
    ///
    /// Buffers that are not a whole number of equal blocks, or whose
    /// blocks differ; as for
    /// [`Communicator::neighbor_all_to_all_varcount_into`].
    pub fn neighbor_all_to_all_into<T: Equivalence>(
        &self,
        nbrs: &Neighborhood,
        send: &[T],
        recv: &mut [T],
    ) -> Result<()> {
        let ((sc, sd), (rc, rd)) = equal_blocks(nbrs, send.len(), recv.len())?;
        self.neighbor_all_to_all_varcount_into(nbrs, send, &sc, &sd, recv, &rc, &rd)
    }

    /// `MPI_Ineighbor_alltoall` (§8.7): as
    /// [`Communicator::neighbor_all_to_all_into`].
    ///
    /// # Errors
    ///
    /// As for [`Communicator::neighbor_all_to_all_into`].
    pub fn ineighbor_all_to_all_into<'b, T: Equivalence>(
        &self,
        nbrs: &Neighborhood,
        send: &[T],
        recv: &'b mut [T],
    ) -> Result<Request<'b>> {
        let ((sc, sd), (rc, rd)) = equal_blocks(nbrs, send.len(), recv.len())?;
        self.ineighbor_all_to_all_varcount_into(nbrs, send, &sc, &sd, recv, &rc, &rd)
    }

    /// `MPI_Neighbor_allgatherv` (§8.6.1): all of `send` goes to every
    /// destination; block `j` of `recv` (`counts[j]` items at
    /// `displs[j]`) comes from source `j`.
    ///
    /// # Errors
    ///
    /// As for [`Communicator::neighbor_all_to_all_varcount_into`].
    pub fn neighbor_all_gather_varcount_into<T: Equivalence>(
        &self,
        nbrs: &Neighborhood,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        displs: &[usize],
    ) -> Result<()> {
        let (sc, sd) = whole(nbrs, send.len());
        self.neighbor_all_to_all_varcount_into(nbrs, send, &sc, &sd, recv, counts, displs)
    }

    /// `MPI_Ineighbor_allgatherv` (§8.7): as
    /// [`Communicator::neighbor_all_gather_varcount_into`].
    ///
    /// # Errors
    ///
    /// As for [`Communicator::ineighbor_all_to_all_varcount_into`].
    pub fn ineighbor_all_gather_varcount_into<'b, T: Equivalence>(
        &self,
        nbrs: &Neighborhood,
        send: &[T],
        recv: &'b mut [T],
        counts: &[usize],
        displs: &[usize],
    ) -> Result<Request<'b>> {
        let (sc, sd) = whole(nbrs, send.len());
        self.ineighbor_all_to_all_varcount_into(nbrs, send, &sc, &sd, recv, counts, displs)
    }

    /// `MPI_Neighbor_allgather` (§8.6.1): `send` to every destination,
    /// `recv` one block of its length per source.
    ///
    /// # Errors
    ///
    /// `recv` not one block of `send`'s length per source.
    pub fn neighbor_all_gather_into<T: Equivalence>(
        &self,
        nbrs: &Neighborhood,
        send: &[T],
        recv: &mut [T],
    ) -> Result<()> {
        let (rc, rd) = gathered(nbrs, send.len(), recv.len())?;
        self.neighbor_all_gather_varcount_into(nbrs, send, recv, &rc, &rd)
    }

    /// `MPI_Ineighbor_allgather` (§8.7): as
    /// [`Communicator::neighbor_all_gather_into`].
    ///
    /// # Errors
    ///
    /// As for [`Communicator::neighbor_all_gather_into`].
    pub fn ineighbor_all_gather_into<'b, T: Equivalence>(
        &self,
        nbrs: &Neighborhood,
        send: &[T],
        recv: &'b mut [T],
    ) -> Result<Request<'b>> {
        let (rc, rd) = gathered(nbrs, send.len(), recv.len())?;
        self.ineighbor_all_gather_varcount_into(nbrs, send, recv, &rc, &rd)
    }
}

/// Counts and displacements for sending all `n` items to every
/// destination.
fn whole(nbrs: &Neighborhood, n: usize) -> (Vec<usize>, Vec<usize>) {
    let k = nbrs.destinations.len();
    (vec![n; k], vec![0; k])
}

/// The receive blocks of an allgather of `n` items into `len`.
fn gathered(nbrs: &Neighborhood, n: usize, len: usize) -> Result<(Vec<usize>, Vec<usize>)> {
    let k = nbrs.sources.len();
    if n.checked_mul(k) != Some(len) {
        return Err(bad(format!(
            "neighbor allgather: {n} items from each of {k} sources into {len}"
        )));
    }
    Ok(uniform(k, n))
}

/// The blocks of an alltoall whose buffers of `send` and `recv` items are
/// one equal block per destination and per source.
#[allow(clippy::type_complexity)]
fn equal_blocks(
    nbrs: &Neighborhood,
    send: usize,
    recv: usize,
) -> Result<((Vec<usize>, Vec<usize>), (Vec<usize>, Vec<usize>))> {
    let (outs, ins) = (nbrs.destinations.len(), nbrs.sources.len());
    let n = match (outs, ins) {
        (0, 0) => 0,
        (0, k) => recv / k,
        (k, _) => send / k,
    };
    if n.checked_mul(outs) != Some(send) || n.checked_mul(ins) != Some(recv) {
        return Err(bad(format!(
            "neighbor alltoall: buffers of {send} and {recv} for {outs} destinations \
             and {ins} sources"
        )));
    }
    Ok((uniform(outs, n), uniform(ins, n)))
}

/// Mutable views of `buf` at `ranges` (each within `buf`), in their
/// order; `None` if two non-empty ranges overlap.
fn views<'a, T>(buf: &'a mut [T], ranges: &[Range<usize>]) -> Option<Vec<&'a mut [T]>> {
    let mut order: Vec<usize> = (0..ranges.len()).collect();
    order.sort_by_key(|&i| ranges[i].start);
    let mut out: Vec<&'a mut [T]> = ranges.iter().map(|_| Default::default()).collect();
    let (mut rest, mut at) = (buf, 0);
    for i in order.into_iter().filter(|&i| !ranges[i].is_empty()) {
        let gap = ranges[i].start.checked_sub(at)?;
        let (_, tail) = std::mem::take(&mut rest).split_at_mut(gap);
        let (view, tail) = tail.split_at_mut(ranges[i].len());
        out[i] = view;
        rest = tail;
        at = ranges[i].end;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::{equal_blocks, views};
    use crate::topology::Neighborhood;

    #[test]
    fn views_in_the_order_asked_and_none_on_overlap() {
        let mut buf = [0u8, 1, 2, 3, 4, 5, 6, 7];
        let v = views(&mut buf, &[5..8, 0..2, 3..3, 2..5]).unwrap();
        let got: Vec<Vec<u8>> = v.iter().map(|v| v.to_vec()).collect();
        assert_eq!(got, [vec![5, 6, 7], vec![0, 1], vec![], vec![2, 3, 4]]);
        assert!(views(&mut buf, &[0..3, 2..4]).is_none());
    }

    #[test]
    fn alltoall_blocks_from_either_side() {
        let n = Neighborhood::graph(vec![Some(0); 3], vec![]);
        let ((sc, _), (rc, rd)) = equal_blocks(&n, 0, 6).unwrap();
        assert_eq!((sc.len(), rc, rd), (0, vec![2; 3], vec![0, 2, 4]));
        assert!(equal_blocks(&n, 0, 7).is_err());
        let n = Neighborhood::graph(vec![Some(0)], vec![Some(1); 2]);
        assert!(equal_blocks(&n, 4, 3).is_err());
        assert!(equal_blocks(&n, 4, 2).is_ok());
        assert!(equal_blocks(&Neighborhood::default(), 0, 0).is_ok());
    }
}
