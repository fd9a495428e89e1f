//! `MPI_Gather(v)` (§6.5) and `MPI_Scatter(v)` (§6.6).

use super::{bad, block, uniform, TAG_GATHER, TAG_SCATTER};
use crate::communicator::Communicator;
use crate::datatype::{as_bytes, as_bytes_mut, zeroed_vec, Equivalence};
use crate::error::Result;
use crate::request::wait_all;

impl Communicator {
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
        if self.inter.is_some() {
            return self.inter_gather(send, recv, root);
        }
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
            // SAFETY: The request goes into `reqs`, which `wait_all` below
            // takes and completes or drops every request of; on an early
            // return (the `?`) or unwinding, dropping `reqs` drops them
            // all. None is leaked.
            reqs.push(unsafe { self.cirecv(as_bytes_mut(buf), i, TAG_GATHER) }?);
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
        if self.inter.is_some() {
            return self.inter_gather_uniform(send, recv, root);
        }
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
        if self.inter.is_some() {
            return self.inter_scatter(send, recv, root);
        }
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
            // SAFETY: The request goes into `reqs`, which `wait_all` below
            // takes and completes or drops every request of; on an early
            // return (the `?`s) or unwinding, dropping `reqs` drops them
            // all. None is leaked.
            reqs.push(unsafe { self.cisend(as_bytes(&send[range]), i, TAG_SCATTER) }?);
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
        if self.inter.is_some() {
            return self.inter_scatter_uniform(send, recv, root);
        }
        let (counts, displs) = uniform(self.members.len(), recv.len());
        self.scatter_varcount_into(send.map(|b| (b, &counts[..], &displs[..])), recv, root)
    }
}
