//! Blocking collectives on inter-communicators (MPI 5.0 §6.2.2).
//!
//! Data goes from one group to the other. Each algorithm combines the
//! local group's own intra-communicator collectives (on its local
//! communicator, `Inter::local`) with messages between the groups on the
//! inter-communicator's collective context, through its bridge (see
//! [`crate::intercomm`]: remote rank `q` is bridge rank `local size +
//! q`), tagged with the collectives' usual tags, which nothing else uses
//! on that context.
//!
//! - barrier: a local barrier, the two leaders (local rank 0) exchange an
//!   empty message, then each leader broadcasts in its group: nobody
//!   leaves before everyone of both groups has entered.
//! - bcast: the root ([`ROOT`]) sends to the other group's leader, which
//!   broadcasts in its group; the rest of the root's group
//!   ([`PROC_NULL`]) does nothing.
//! - reduce: the other group reduces to its leader (in rank order, as on
//!   an intra-communicator), which sends the result to the root.
//! - allreduce: each group reduces to its leader, the leaders swap the
//!   results, and each broadcasts the other group's result in its group.
//! - reduce_scatter(_block) (§6.10): as allreduce, but each leader
//!   scatters the other group's result over its group by its `counts`
//!   (whose sum must be the same in both groups).
//! - gather(v) and scatter(v): the root receives from (sends to) every
//!   process of the other group at once.
//! - allgather(v) and alltoall(v): every process posts its receives from
//!   each process of the other group, then its sends to each; p·q
//!   messages in all, the simplest correct choice for these rarely used
//!   forms.
//!
//! Counts and displacements name the remote group's processes, as the
//! standard says; `MPI_IN_PLACE` has no meaning here (§6.2.2).

use super::{bad, block, uniform};
use super::{TAG_ALLGATHER, TAG_ALLREDUCE, TAG_ALLTOALL, TAG_BARRIER, TAG_BCAST};
use super::{TAG_GATHER, TAG_REDUCE, TAG_REDUCE_GATHER, TAG_SCATTER};
use crate::communicator::Communicator;
use crate::datatype::{as_bytes, as_bytes_mut, zeroed_vec, Equivalence};
use crate::error::{Error, Result};
use crate::intercomm::{PROC_NULL, ROOT};
use crate::operation::Operation;
use crate::request::wait_all;

/// What a process does in a rooted collective on an inter-communicator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Role {
    /// The root (it passed [`ROOT`]).
    Root,
    /// Another process of the root's group (it passed [`PROC_NULL`]).
    Idle,
    /// A process of the other group; the root is this remote rank.
    Leaf(usize),
}

/// The pieces an inter-communicator's collective works with.
pub(super) struct Parts<'c> {
    /// Both groups, local first, on the inter-communicator's contexts.
    pub(super) bridge: Communicator,
    /// The local group's communicator.
    pub(super) local: &'c Communicator,
    /// Local and remote group sizes.
    pub(super) ln: usize,
    pub(super) rn: usize,
}

impl Parts<'_> {
    /// The bridge rank of remote rank `q`.
    pub(super) fn remote(&self, q: usize) -> usize {
        self.ln + q
    }

    /// Whether this process leads its group (local rank 0).
    pub(super) fn leader(&self) -> bool {
        self.local.rank == 0
    }

    /// The local group's size and this process's rank there: its ranks
    /// are the bridge's first ones.
    pub(super) fn me(&self) -> (usize, usize) {
        (self.ln, self.local.rank as usize)
    }
}

impl Communicator {
    pub(super) fn parts(&self) -> Result<Parts<'_>> {
        let inter = self.inter.as_deref().ok_or_else(|| {
            bad("an inter-communicator collective on an intra-communicator".into())
        })?;
        let bridge = self.bridge().ok_or_else(|| bad("no bridge".into()))?;
        Ok(Parts {
            bridge,
            local: &inter.local,
            ln: self.members.len(),
            rn: inter.remote.len(),
        })
    }

    pub(super) fn role(&self, root: i32, rn: usize) -> Result<Role> {
        match root {
            ROOT => Ok(Role::Root),
            PROC_NULL => Ok(Role::Idle),
            r if usize::try_from(r).is_ok_and(|r| r < rn) => Ok(Role::Leaf(r as usize)),
            rank => Err(Error::InvalidRank {
                rank,
                size: rn as i32,
            }),
        }
    }

    /// `MPI_Barrier` on an inter-communicator.
    pub(super) fn inter_barrier(&self) -> Result<()> {
        let p = self.parts()?;
        p.local.barrier()?;
        if p.leader() {
            let peer = p.remote(0);
            p.bridge.cexchange(&[], peer, &mut [], peer, TAG_BARRIER)?;
        }
        p.local.broadcast_into::<u8>(&mut [], 0)
    }

    /// `MPI_Bcast` on an inter-communicator: `buf` of the root ([`ROOT`])
    /// to every process of the other group, which names the root by its
    /// rank; [`PROC_NULL`] for the rest of the root's group.
    pub(super) fn inter_bcast<T: Equivalence>(&self, buf: &mut [T], root: i32) -> Result<()> {
        let p = self.parts()?;
        match self.role(root, p.rn)? {
            Role::Root => p.bridge.csend(as_bytes(buf), p.remote(0), TAG_BCAST),
            Role::Idle => Ok(()),
            Role::Leaf(r) => {
                if p.leader() {
                    p.bridge.crecv(as_bytes_mut(buf), p.remote(r), TAG_BCAST)?;
                }
                p.local.broadcast_into(buf, 0)
            }
        }
    }

    /// `MPI_Reduce` on an inter-communicator: `op` over the `send` of
    /// every process of the other group into `recv` of the root.
    pub(super) fn inter_reduce<T: Equivalence, O: Operation<T>>(
        &self,
        send: &[T],
        recv: Option<&mut [T]>,
        op: &O,
        root: i32,
    ) -> Result<()> {
        let p = self.parts()?;
        match self.role(root, p.rn)? {
            Role::Root => {
                let recv = recv.ok_or_else(|| bad("reduce: the root needs a buffer".into()))?;
                p.bridge.crecv(as_bytes_mut(recv), p.remote(0), TAG_REDUCE)
            }
            Role::Idle => Ok(()),
            Role::Leaf(r) => {
                if !p.leader() {
                    return p.local.reduce_into(send, None, op, 0);
                }
                let mut acc = zeroed_vec(send.len());
                p.local.reduce_into(send, Some(&mut acc), op, 0)?;
                p.bridge.csend(as_bytes(&acc), p.remote(r), TAG_REDUCE)
            }
        }
    }

    /// `MPI_Allreduce` on an inter-communicator: every process gets `op`
    /// over the `send` of every process of the other group.
    pub(super) fn inter_all_reduce<T: Equivalence, O: Operation<T>>(
        &self,
        send: &[T],
        recv: &mut [T],
        op: &O,
    ) -> Result<()> {
        let p = self.parts()?;
        if recv.len() != send.len() {
            return Err(bad(format!(
                "allreduce: {} elements sent, {} received",
                send.len(),
                recv.len()
            )));
        }
        if p.leader() {
            let mut acc = zeroed_vec(send.len());
            p.local.reduce_into(send, Some(&mut acc), op, 0)?;
            let peer = p.remote(0);
            p.bridge.cexchange(
                as_bytes(&acc),
                peer,
                as_bytes_mut(recv),
                peer,
                TAG_ALLREDUCE,
            )?;
        } else {
            p.local.reduce_into(send, None, op, 0)?;
        }
        p.local.broadcast_into(recv, 0)
    }

    /// `MPI_Reduce_scatter` on an inter-communicator (§6.10.1): `op` over
    /// the `send` of every process of the other group, of which local
    /// rank i gets block i (`counts[i]` items, after the lower ranks').
    pub(super) fn inter_reduce_scatter<T: Equivalence, O: Operation<T>>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        op: &O,
    ) -> Result<()> {
        let p = self.parts()?;
        let (ln, r) = p.me();
        let total: usize = counts.iter().sum();
        if counts.len() != ln || send.len() != total || recv.len() != counts[r] {
            return Err(bad(format!(
                "reduce_scatter: {} sent and {} received for counts {counts:?}",
                send.len(),
                recv.len()
            )));
        }
        let displs: Vec<usize> = counts
            .iter()
            .scan(0, |at, &c| {
                *at += c;
                Some(*at - c)
            })
            .collect();
        if !p.leader() {
            p.local.reduce_into(send, None, op, 0)?;
            return p.local.scatter_varcount_into(None, recv, 0);
        }
        let mut acc = zeroed_vec(total);
        p.local.reduce_into(send, Some(&mut acc), op, 0)?;
        let mut theirs = zeroed_vec(total);
        let peer = p.remote(0);
        // A message of the other leader's size: the sums must agree.
        p.bridge.cexchange(
            as_bytes(&acc),
            peer,
            as_bytes_mut(&mut theirs),
            peer,
            TAG_REDUCE_GATHER,
        )?;
        p.local
            .scatter_varcount_into(Some((&theirs, counts, &displs)), recv, 0)
    }

    /// Receives block `q` of `recv` (`counts`, `displs`) from every remote
    /// rank `q` and, if `send` is given, sends it to each, all posted at
    /// once; blocks go through staging buffers, so they may be laid out
    /// in any way.
    fn inter_exchange<'s, T: Equivalence>(
        &self,
        p: &Parts<'_>,
        send: Option<&dyn Fn(usize) -> Result<&'s [T]>>,
        recv: (&mut [T], &[usize], &[usize]),
        tag: u32,
        what: &str,
    ) -> Result<()> {
        let (recv, counts, displs) = recv;
        if counts.len() != p.rn || displs.len() != p.rn {
            return Err(bad(format!(
                "{what}: {} counts and displacements needed (the remote group's size)",
                p.rn
            )));
        }
        let blocks = (0..p.rn)
            .map(|q| block(recv.len(), counts[q], displs[q], what))
            .collect::<Result<Vec<_>>>()?;
        let mut staging: Vec<Vec<T>> = counts.iter().map(|&n| zeroed_vec(n)).collect();
        let mut reqs = Vec::with_capacity(2 * p.rn);
        for (q, buf) in staging.iter_mut().enumerate() {
            // SAFETY: The request goes into `reqs`, which `wait_all` below
            // takes and completes or drops every request of; on an early
            // return (the `?`) or unwinding, dropping `reqs` drops them
            // all. None is leaked.
            reqs.push(unsafe { p.bridge.cirecv(as_bytes_mut(buf), p.remote(q), tag) }?);
        }
        if let Some(send) = send {
            for q in 0..p.rn {
                let data = as_bytes(send(q)?);
                // SAFETY: As above.
                reqs.push(unsafe { p.bridge.cisend(data, p.remote(q), tag) }?);
            }
        }
        let statuses = wait_all(reqs)?;
        for (q, st) in statuses.iter().take(p.rn).enumerate() {
            if st.count_bytes() != counts[q] * size_of::<T>() {
                return Err(bad(format!(
                    "{what}: remote rank {q} sent {} bytes, {} expected",
                    st.count_bytes(),
                    counts[q] * size_of::<T>()
                )));
            }
        }
        for (q, data) in staging.iter().enumerate() {
            recv[blocks[q].clone()].copy_from_slice(data);
        }
        Ok(())
    }

    /// `MPI_Gatherv` on an inter-communicator: the `send` of remote rank
    /// `q` lands at `displs[q]` of the root's `recv`.
    pub(super) fn inter_gather<T: Equivalence>(
        &self,
        send: &[T],
        recv: Option<(&mut [T], &[usize], &[usize])>,
        root: i32,
    ) -> Result<()> {
        let p = self.parts()?;
        match self.role(root, p.rn)? {
            Role::Root => {
                let recv = recv.ok_or_else(|| bad("gather: the root needs a buffer".into()))?;
                self.inter_exchange(&p, None, recv, TAG_GATHER, "gather")
            }
            Role::Idle => Ok(()),
            Role::Leaf(r) => p.bridge.csend(as_bytes(send), p.remote(r), TAG_GATHER),
        }
    }

    /// `MPI_Gather` on an inter-communicator: at the root, `recv` holds
    /// one equal block per remote process.
    pub(super) fn inter_gather_uniform<T: Equivalence>(
        &self,
        send: &[T],
        recv: Option<&mut [T]>,
        root: i32,
    ) -> Result<()> {
        let rn = self.target_size() as usize;
        let n = recv.as_ref().map_or(0, |b| b.len() / rn.max(1));
        let (counts, displs) = uniform(rn, n);
        self.inter_gather(send, recv.map(|b| (b, &counts[..], &displs[..])), root)
    }

    /// `MPI_Scatterv` on an inter-communicator: block `q` of the root's
    /// `send` goes to remote rank `q`'s `recv`.
    pub(super) fn inter_scatter<T: Equivalence>(
        &self,
        send: Option<(&[T], &[usize], &[usize])>,
        recv: &mut [T],
        root: i32,
    ) -> Result<()> {
        let p = self.parts()?;
        match self.role(root, p.rn)? {
            Role::Root => {
                let (send, counts, displs) =
                    send.ok_or_else(|| bad("scatter: the root needs a buffer".into()))?;
                if counts.len() != p.rn || displs.len() != p.rn {
                    return Err(bad(format!(
                        "scatter: {} counts and displacements needed (the remote group's size)",
                        p.rn
                    )));
                }
                let mut reqs = Vec::with_capacity(p.rn);
                for q in 0..p.rn {
                    let range = block(send.len(), counts[q], displs[q], "scatter")?;
                    let data = as_bytes(&send[range]);
                    // SAFETY: The request goes into `reqs`, which
                    // `wait_all` takes and completes or drops every
                    // request of; on an early return or unwinding,
                    // dropping `reqs` drops them all. None is leaked.
                    reqs.push(unsafe { p.bridge.cisend(data, p.remote(q), TAG_SCATTER) }?);
                }
                wait_all(reqs).map(drop)
            }
            Role::Idle => Ok(()),
            Role::Leaf(r) => p.bridge.crecv(as_bytes_mut(recv), p.remote(r), TAG_SCATTER),
        }
    }

    /// `MPI_Scatter` on an inter-communicator: the root's `send` holds
    /// one equal block per remote process.
    pub(super) fn inter_scatter_uniform<T: Equivalence>(
        &self,
        send: Option<&[T]>,
        recv: &mut [T],
        root: i32,
    ) -> Result<()> {
        let rn = self.target_size() as usize;
        let n = send.map_or(0, |b| b.len() / rn.max(1));
        let (counts, displs) = uniform(rn, n);
        self.inter_scatter(send.map(|b| (b, &counts[..], &displs[..])), recv, root)
    }

    /// `MPI_Allgatherv` on an inter-communicator: the `send` of remote
    /// rank `q` lands at `displs[q]` of every local process's `recv`.
    pub(super) fn inter_all_gather<T: Equivalence>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        displs: &[usize],
    ) -> Result<()> {
        let p = self.parts()?;
        let same = |_: usize| Ok(send);
        self.inter_exchange(
            &p,
            Some(&same),
            (recv, counts, displs),
            TAG_ALLGATHER,
            "allgather",
        )
    }

    /// `MPI_Allgather` on an inter-communicator: `recv` holds one equal
    /// block per remote process (whose count may differ from this
    /// group's).
    pub(super) fn inter_all_gather_uniform<T: Equivalence>(
        &self,
        send: &[T],
        recv: &mut [T],
    ) -> Result<()> {
        let rn = self.target_size() as usize;
        if rn == 0 || recv.len() % rn != 0 {
            return Err(bad(format!(
                "allgather: a buffer of {} for {rn} remote processes",
                recv.len()
            )));
        }
        let (counts, displs) = uniform(rn, recv.len() / rn);
        self.inter_all_gather(send, recv, &counts, &displs)
    }

    /// `MPI_Alltoallv` on an inter-communicator: block `q` of `send` goes
    /// to remote rank `q`, whose block for this process lands as block
    /// `q` of `recv`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn inter_all_to_all<T: Equivalence>(
        &self,
        send: &[T],
        send_counts: &[usize],
        send_displs: &[usize],
        recv: &mut [T],
        recv_counts: &[usize],
        recv_displs: &[usize],
    ) -> Result<()> {
        let p = self.parts()?;
        if send_counts.len() != p.rn || send_displs.len() != p.rn {
            return Err(bad(format!(
                "alltoall: {} send counts and displacements needed (the remote group's size)",
                p.rn
            )));
        }
        let blocks = (0..p.rn)
            .map(|q| block(send.len(), send_counts[q], send_displs[q], "alltoall send"))
            .collect::<Result<Vec<_>>>()?;
        let of = |q: usize| Ok(&send[blocks[q].clone()]);
        let recv = (recv, recv_counts, recv_displs);
        self.inter_exchange(&p, Some(&of), recv, TAG_ALLTOALL, "alltoall")
    }

    /// `MPI_Alltoall` on an inter-communicator: one equal block per
    /// remote process each way.
    pub(super) fn inter_all_to_all_uniform<T: Equivalence>(
        &self,
        send: &[T],
        recv: &mut [T],
    ) -> Result<()> {
        let rn = self.target_size() as usize;
        if rn == 0 || send.len() % rn != 0 || recv.len() % rn != 0 {
            return Err(bad(format!(
                "alltoall: buffers of {} and {} for {rn} remote processes",
                send.len(),
                recv.len()
            )));
        }
        let (sc, sd) = uniform(rn, send.len() / rn);
        let (rc, rd) = uniform(rn, recv.len() / rn);
        self.inter_all_to_all(send, &sc, &sd, recv, &rc, &rd)
    }
}
