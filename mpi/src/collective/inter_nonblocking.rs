//! Nonblocking collectives on inter-communicators (MPI 5.0 §6.12, as
//! §6.2.2 defines them): the algorithms of the blocking ones
//! (`inter.rs`) as schedules (`schedule.rs`).
//!
//! A schedule runs on one communicator, its peers ranks of it. Here that
//! is the inter-communicator's bridge (both groups, local group first:
//! local rank i is bridge rank i, remote rank q bridge rank `local size +
//! q`), so that one schedule addresses both groups: the local halves of
//! the algorithms (a binomial reduce to the leader, a binomial broadcast
//! from it) go to the first ranks, the messages between the groups to
//! the others. All travel on the inter-communicator's collective context
//! `c + 1` with the schedule's tag, which every process of both groups
//! draws from the same count (that of context `c`, the bridge's): the
//! processes of both groups start the inter-communicator's collectives in
//! the same order (§6.12), so the tags agree, and a message is told from
//! another of the same tag by its source, as within one group. The
//! idle processes of a rooted collective ([`crate::intercomm::PROC_NULL`])
//! start an empty schedule, which keeps their count in step.
//!
//! - ibarrier: a local reduce of nothing to the leader, the leaders swap
//!   empty messages, a local broadcast of nothing;
//! - ibcast: the root sends to the other group's leader, which broadcasts
//!   in its group;
//! - ireduce: the other group reduces to its leader, which sends to the
//!   root;
//! - iallreduce: each group reduces to its leader, the leaders swap, each
//!   broadcasts the other group's result in its group;
//! - ireduce_scatter(_block): as iallreduce, but each leader scatters the
//!   other group's result over its group;
//! - igather(v), iscatter(v): the root receives from (sends to) every
//!   process of the other group in one round;
//! - iallgather(v), ialltoall(v): every process receives from and sends
//!   to every process of the other group in one round.

use super::inter::Role;
use super::nonblocking::{all, blocks, plan_bcast, plan_reduce_to_zero};
use super::schedule::{Local, NoOp, Plan};
use super::{bad, uniform};
use crate::communicator::Communicator;
use crate::datatype::Equivalence;
use crate::error::Result;
use crate::operation::Operation;
use crate::request::Request;

/// The counts and displacements of per-process blocks.
type Layout<'a> = (&'a [usize], &'a [usize]);

impl Communicator {
    /// `MPI_Ibarrier` on an inter-communicator.
    pub(super) fn inter_ibarrier(&self) -> Result<Request<'static>> {
        let p = self.parts()?;
        let mut plan = Plan::<u8>::new();
        let b = plan.zeroed(0);
        plan_reduce_to_zero(&mut plan, b, 0, p.me());
        if p.leader() {
            let round = plan.round();
            round.recvs.push((all(b, 0), p.remote(0)));
            round.sends.push((all(b, 0), p.remote(0)));
        }
        plan_bcast(&mut plan, all(b, 0), 0, p.me());
        p.bridge.start_schedule(plan, NoOp, None, Vec::new())
    }

    /// `MPI_Ibcast` on an inter-communicator.
    pub(super) fn inter_ibcast<'b, T: Equivalence>(
        &self,
        buf: &'b mut [T],
        root: i32,
    ) -> Result<Request<'b>> {
        let p = self.parts()?;
        let n = buf.len();
        let mut plan = Plan::<T>::new();
        match self.role(root, p.rn)? {
            Role::Root => {
                let b = plan.buf(buf.to_vec());
                plan.round().sends.push((all(b, n), p.remote(0)));
                p.bridge.start_schedule(plan, NoOp, None, Vec::new())
            }
            Role::Idle => p.bridge.start_schedule(plan, NoOp, None, Vec::new()),
            Role::Leaf(r) => {
                let b = plan.zeroed(n);
                if p.leader() {
                    plan.round().recvs.push((all(b, n), p.remote(r)));
                }
                plan_bcast(&mut plan, all(b, n), 0, p.me());
                let copies = vec![(all(b, n), 0..n)];
                p.bridge.start_schedule(plan, NoOp, Some(buf), copies)
            }
        }
    }

    /// `MPI_Ireduce` on an inter-communicator: the root's `recv` sets the
    /// count (it sends nothing).
    pub(super) fn inter_ireduce<'b, T: Equivalence, O: Operation<T> + 'static>(
        &self,
        send: &[T],
        recv: Option<&'b mut [T]>,
        op: O,
        root: i32,
    ) -> Result<Request<'b>> {
        let p = self.parts()?;
        let mut plan = Plan::<T>::new();
        match self.role(root, p.rn)? {
            Role::Root => {
                let recv = recv.ok_or_else(|| bad("ireduce: the root needs a buffer".into()))?;
                let n = recv.len();
                let b = plan.zeroed(n);
                plan.round().recvs.push((all(b, n), p.remote(0)));
                let copies = vec![(all(b, n), 0..n)];
                p.bridge.start_schedule(plan, op, Some(recv), copies)
            }
            Role::Idle => p.bridge.start_schedule(plan, op, None, Vec::new()),
            Role::Leaf(r) => {
                let n = send.len();
                let acc = plan.buf(send.to_vec());
                plan_reduce_to_zero(&mut plan, acc, n, p.me());
                if p.leader() {
                    plan.round().sends.push((all(acc, n), p.remote(r)));
                }
                p.bridge.start_schedule(plan, op, None, Vec::new())
            }
        }
    }

    /// Adds to `plan` the reduction of `send` in the local group and the
    /// leaders' swap: returns the buffer (of `theirs` items) that holds
    /// the other group's result at the leader.
    fn plan_inter_reduce<T: Equivalence>(
        &self,
        plan: &mut Plan<T>,
        send: &[T],
        theirs: usize,
    ) -> Result<usize> {
        let p = self.parts()?;
        let n = send.len();
        let acc = plan.buf(send.to_vec());
        let got = plan.zeroed(theirs);
        plan_reduce_to_zero(plan, acc, n, p.me());
        if p.leader() {
            let round = plan.round();
            round.recvs.push((all(got, theirs), p.remote(0)));
            round.sends.push((all(acc, n), p.remote(0)));
        }
        Ok(got)
    }

    /// `MPI_Iallreduce` on an inter-communicator.
    pub(super) fn inter_iall_reduce<'b, T: Equivalence, O: Operation<T> + 'static>(
        &self,
        send: &[T],
        recv: &'b mut [T],
        op: O,
    ) -> Result<Request<'b>> {
        let p = self.parts()?;
        let n = send.len();
        if recv.len() != n {
            return Err(bad(format!(
                "iallreduce: {n} sent, {} received",
                recv.len()
            )));
        }
        let mut plan = Plan::new();
        let got = self.plan_inter_reduce(&mut plan, send, n)?;
        plan_bcast(&mut plan, all(got, n), 0, p.me());
        let copies = vec![(all(got, n), 0..n)];
        p.bridge.start_schedule(plan, op, Some(recv), copies)
    }

    /// `MPI_Ireduce_scatter` on an inter-communicator (§6.10.1): `counts`
    /// has one count per local process.
    pub(super) fn inter_ireduce_scatter<'b, T: Equivalence, O: Operation<T> + 'static>(
        &self,
        send: &[T],
        recv: &'b mut [T],
        counts: &[usize],
        op: O,
    ) -> Result<Request<'b>> {
        let p = self.parts()?;
        let (ln, r) = p.me();
        let total: usize = counts.iter().sum();
        if counts.len() != ln || send.len() != total || recv.len() != counts[r] {
            return Err(bad(format!(
                "ireduce_scatter: {} sent and {} received for counts {counts:?}",
                send.len(),
                recv.len()
            )));
        }
        let mut plan = Plan::new();
        // The other group's total is this one's (§6.10.1).
        let got = self.plan_inter_reduce(&mut plan, send, total)?;
        let n = counts[r];
        let mine = plan.zeroed(n);
        let round = plan.round();
        if p.leader() {
            let mut at = 0;
            for (i, &c) in counts.iter().enumerate() {
                if i == 0 {
                    round.then.push(Local::Copy {
                        src: (got, 0..c),
                        dst: all(mine, c),
                    });
                } else {
                    round.sends.push(((got, at..at + c), i));
                }
                at += c;
            }
        } else {
            round.recvs.push((all(mine, n), 0));
        }
        let copies = vec![(all(mine, n), 0..n)];
        p.bridge.start_schedule(plan, op, Some(recv), copies)
    }

    /// `MPI_Igatherv` on an inter-communicator: the root's blocks are the
    /// remote processes'.
    pub(super) fn inter_igather<'b, T: Equivalence>(
        &self,
        send: &[T],
        recv: Option<(&'b mut [T], &[usize], &[usize])>,
        root: i32,
    ) -> Result<Request<'b>> {
        let p = self.parts()?;
        let mut plan = Plan::<T>::new();
        match self.role(root, p.rn)? {
            Role::Root => {
                let (recv, counts, displs) =
                    recv.ok_or_else(|| bad("igather: the root needs a buffer".into()))?;
                let blocks = blocks(recv.len(), counts, displs, p.rn, "igather")?;
                let b = plan.zeroed(recv.len());
                let round = plan.round();
                for (q, blk) in blocks.iter().enumerate() {
                    round.recvs.push(((b, blk.clone()), p.remote(q)));
                }
                let copies = blocks.iter().map(|k| ((b, k.clone()), k.clone())).collect();
                p.bridge.start_schedule(plan, NoOp, Some(recv), copies)
            }
            Role::Idle => p.bridge.start_schedule(plan, NoOp, None, Vec::new()),
            Role::Leaf(r) => {
                let b = plan.buf(send.to_vec());
                plan.round().sends.push((all(b, send.len()), p.remote(r)));
                p.bridge.start_schedule(plan, NoOp, None, Vec::new())
            }
        }
    }

    /// `MPI_Igather` on an inter-communicator: the root's `recv` holds
    /// one equal block per remote process.
    pub(super) fn inter_igather_uniform<'b, T: Equivalence>(
        &self,
        send: &[T],
        recv: Option<&'b mut [T]>,
        root: i32,
    ) -> Result<Request<'b>> {
        let rn = self.target_size() as usize;
        let n = recv.as_ref().map_or(0, |b| b.len() / rn.max(1));
        let (counts, displs) = uniform(rn, n);
        self.inter_igather(send, recv.map(|b| (b, &counts[..], &displs[..])), root)
    }

    /// `MPI_Iscatterv` on an inter-communicator: the root's blocks are
    /// the remote processes'.
    pub(super) fn inter_iscatter<'b, T: Equivalence>(
        &self,
        send: Option<(&[T], &[usize], &[usize])>,
        recv: &'b mut [T],
        root: i32,
    ) -> Result<Request<'b>> {
        let p = self.parts()?;
        let mut plan = Plan::<T>::new();
        match self.role(root, p.rn)? {
            Role::Root => {
                let (send, counts, displs) =
                    send.ok_or_else(|| bad("iscatter: the root needs a buffer".into()))?;
                let blocks = blocks(send.len(), counts, displs, p.rn, "iscatter")?;
                let b = plan.buf(send.to_vec());
                let round = plan.round();
                for (q, blk) in blocks.iter().enumerate() {
                    round.sends.push(((b, blk.clone()), p.remote(q)));
                }
                p.bridge.start_schedule(plan, NoOp, None, Vec::new())
            }
            Role::Idle => p.bridge.start_schedule(plan, NoOp, None, Vec::new()),
            Role::Leaf(r) => {
                let n = recv.len();
                let b = plan.zeroed(n);
                plan.round().recvs.push((all(b, n), p.remote(r)));
                let copies = vec![(all(b, n), 0..n)];
                p.bridge.start_schedule(plan, NoOp, Some(recv), copies)
            }
        }
    }

    /// `MPI_Iscatter` on an inter-communicator: the root's `send` holds
    /// one equal block per remote process.
    pub(super) fn inter_iscatter_uniform<'b, T: Equivalence>(
        &self,
        send: Option<&[T]>,
        recv: &'b mut [T],
        root: i32,
    ) -> Result<Request<'b>> {
        let rn = self.target_size() as usize;
        let n = send.map_or(0, |b| b.len() / rn.max(1));
        let (counts, displs) = uniform(rn, n);
        self.inter_iscatter(send.map(|b| (b, &counts[..], &displs[..])), recv, root)
    }

    /// `MPI_Iallgatherv` and `MPI_Ialltoallv` on an inter-communicator:
    /// block `q` of `recv` comes from remote rank `q`, which gets block
    /// `q` of `send` (`sends`; the whole of it for `None`).
    fn inter_iexchange<'b, T: Equivalence>(
        &self,
        send: (&[T], Option<Layout<'_>>),
        recv: (&'b mut [T], &[usize], &[usize]),
        what: &str,
    ) -> Result<Request<'b>> {
        let p = self.parts()?;
        let (recv, counts, displs) = recv;
        let recvs = blocks(recv.len(), counts, displs, p.rn, what)?;
        let sends = match send.1 {
            Some((sc, sd)) => blocks(send.0.len(), sc, sd, p.rn, what)?,
            None => vec![0..send.0.len(); p.rn],
        };
        let mut plan = Plan::new();
        let s = plan.buf(send.0.to_vec());
        let b = plan.zeroed(recv.len());
        let round = plan.round();
        for (q, blk) in recvs.iter().enumerate() {
            round.recvs.push(((b, blk.clone()), p.remote(q)));
        }
        // Starting from a different remote process in each: spread out.
        let first = p.local.rank as usize;
        for k in 0..p.rn {
            let q = (first + k) % p.rn;
            round.sends.push(((s, sends[q].clone()), p.remote(q)));
        }
        let copies = recvs.iter().map(|k| ((b, k.clone()), k.clone())).collect();
        p.bridge.start_schedule(plan, NoOp, Some(recv), copies)
    }

    /// `MPI_Iallgatherv` on an inter-communicator.
    pub(super) fn inter_iall_gather<'b, T: Equivalence>(
        &self,
        send: &[T],
        recv: &'b mut [T],
        counts: &[usize],
        displs: &[usize],
    ) -> Result<Request<'b>> {
        self.inter_iexchange((send, None), (recv, counts, displs), "iallgather")
    }

    /// `MPI_Iallgather` on an inter-communicator: `recv` holds one equal
    /// block per remote process.
    pub(super) fn inter_iall_gather_uniform<'b, T: Equivalence>(
        &self,
        send: &[T],
        recv: &'b mut [T],
    ) -> Result<Request<'b>> {
        let rn = self.target_size() as usize;
        if rn == 0 || recv.len() % rn != 0 {
            return Err(bad(format!(
                "iallgather: a buffer of {} for {rn} remote processes",
                recv.len()
            )));
        }
        let (counts, displs) = uniform(rn, recv.len() / rn);
        self.inter_iall_gather(send, recv, &counts, &displs)
    }

    /// `MPI_Ialltoallv` on an inter-communicator.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn inter_iall_to_all<'b, T: Equivalence>(
        &self,
        send: &[T],
        send_counts: &[usize],
        send_displs: &[usize],
        recv: &'b mut [T],
        recv_counts: &[usize],
        recv_displs: &[usize],
    ) -> Result<Request<'b>> {
        let sends = Some((send_counts, send_displs));
        let recv = (recv, recv_counts, recv_displs);
        self.inter_iexchange((send, sends), recv, "ialltoall")
    }

    /// `MPI_Ialltoall` on an inter-communicator: one equal block per
    /// remote process each way.
    pub(super) fn inter_iall_to_all_uniform<'b, T: Equivalence>(
        &self,
        send: &[T],
        recv: &'b mut [T],
    ) -> Result<Request<'b>> {
        let rn = self.target_size() as usize;
        if rn == 0 || send.len() % rn != 0 || recv.len() % rn != 0 {
            return Err(bad(format!(
                "ialltoall: buffers of {} and {} for {rn} remote processes",
                send.len(),
                recv.len()
            )));
        }
        let (sc, sd) = uniform(rn, send.len() / rn);
        let (rc, rd) = uniform(rn, recv.len() / rn);
        self.inter_iall_to_all(send, &sc, &sd, recv, &rc, &rd)
    }
}
