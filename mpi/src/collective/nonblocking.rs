//! The nonblocking collectives (§6.12), each a schedule
//! (`schedule.rs`) of simple algorithms:
//!
//! - ibarrier: dissemination, ⌈log2 p⌉ rounds;
//! - ibcast: binomial tree from the root;
//! - ireduce, iallreduce, ireduce_scatter(_block): a binomial tree to
//!   rank 0 in which each member appends the result of the ranks above it
//!   on the right (rank order, for operations that do not commute), then
//!   a message to the root, a binomial broadcast, or a scatter of the
//!   blocks;
//! - igather(v), iscatter(v): the root posts every receive or send at
//!   once;
//! - iallgather(v), ialltoall(v): every member sends each block to its
//!   destination and receives every block, all in one round;
//! - iscan, iexscan: recursive doubling, as the blocking ones.
//!
//! On an inter-communicator each but iscan and iexscan (undefined there,
//! §6.2.2) runs its own schedule (`inter_nonblocking.rs`); those two fail
//! with `NOT_PROVIDED` (`start_schedule` refuses inter-communicators).
//!
//! The requests borrow their output buffer until they complete; the
//! input is copied when the collective starts, so the caller may reuse it
//! at once (MPI asks it to wait, which is harmless).

use std::ops::Range;

use super::schedule::{Local, NoOp, Plan, Span};
use super::{bad, block, uniform};
use crate::communicator::Communicator;
use crate::datatype::Equivalence;
use crate::error::Result;
use crate::operation::Operation;
use crate::request::Request;

/// The ranks a member of the binomial tree rooted at relative rank 0
/// sends to (children, nearest first): `rel + 2^j` below the lowest set
/// bit of `rel` (every power of two for `rel` = 0), within `p`.
fn children(rel: usize, p: usize) -> Vec<usize> {
    let limit = if rel == 0 {
        p.next_power_of_two()
    } else {
        1 << rel.trailing_zeros()
    };
    let mut out = Vec::new();
    let mut d = 1;
    while d < limit && rel + d < p {
        out.push(rel + d);
        d <<= 1;
    }
    out
}

/// The parent of relative rank `rel` > 0: `rel` without its lowest bit.
fn parent(rel: usize) -> usize {
    rel & (rel - 1)
}

/// Every item of a buffer of `n`.
pub(super) fn all(buf: usize, n: usize) -> Span {
    (buf, 0..n)
}

/// Adds to `plan` the reduction of buffer `acc` (`n` items) to rank 0
/// along the binomial tree of ranks `0..p`, this process being `r`, in
/// rank order. The ranks are those of the schedule's communicator: on an
/// inter-communicator's bridge, the local group's are its own.
pub(super) fn plan_reduce_to_zero<T: Equivalence>(
    plan: &mut Plan<T>,
    acc: usize,
    n: usize,
    (p, r): (usize, usize),
) {
    let kids = children(r, p);
    if !kids.is_empty() {
        let temps: Vec<usize> = kids.iter().map(|_| plan.zeroed(n)).collect();
        let round = plan.round();
        for (&k, &t) in kids.iter().zip(&temps) {
            round.recvs.push((all(t, n), k));
        }
        // acc ∘ t1 ∘ t2 ∘ …: the children, nearest first, hold ever
        // higher ranges of ranks.
        let mut left = acc;
        for &t in &temps {
            round.then.push(Local::Apply {
                src: all(left, n),
                dst: all(t, n),
            });
            left = t;
        }
        round.then.push(Local::Copy {
            src: all(left, n),
            dst: all(acc, n),
        });
    }
    if r != 0 {
        plan.round().sends.push((all(acc, n), parent(r)));
    }
}

/// Adds to `plan` a binomial broadcast of `span` from `root` over ranks
/// `0..p`, this process being `r` (as for [`plan_reduce_to_zero`]).
pub(super) fn plan_bcast<T: Equivalence>(
    plan: &mut Plan<T>,
    span: Span,
    root: usize,
    (p, r): (usize, usize),
) {
    let rel = (r + p - root) % p;
    if rel != 0 {
        plan.round()
            .recvs
            .push((span.clone(), (parent(rel) + root) % p));
    }
    let kids = children(rel, p);
    if !kids.is_empty() {
        let round = plan.round();
        for k in kids.into_iter().rev() {
            round.sends.push((span.clone(), (k + root) % p));
        }
    }
}

impl Communicator {
    /// `MPI_Ibarrier` (§6.12.1): completes once every member has started
    /// it.
    ///
    /// # Errors
    ///
    /// Transport errors.
    pub fn ibarrier(&self) -> Result<Request<'static>> {
        if self.inter.is_some() {
            return self.inter_ibarrier();
        }
        let (p, r) = self.p_r();
        let mut plan = Plan::<u8>::new();
        let b = plan.zeroed(0);
        let mut k = 1;
        while k < p {
            let round = plan.round();
            round.recvs.push(((b, 0..0), (r + p - k) % p));
            round.sends.push(((b, 0..0), (r + k) % p));
            k <<= 1;
        }
        self.start_schedule(plan, NoOp, None, Vec::new())
    }

    /// `MPI_Ibcast` (§6.12.2): as [`Communicator::broadcast_into`]; `buf`
    /// stays borrowed until the request completes.
    ///
    /// # Errors
    ///
    /// Invalid root; transport errors.
    pub fn ibroadcast_into<'b, T: Equivalence>(
        &self,
        buf: &'b mut [T],
        root: i32,
    ) -> Result<Request<'b>> {
        if self.inter.is_some() {
            return self.inter_ibcast(buf, root);
        }
        let root = self.check_root(root)?;
        let (_, r) = self.p_r();
        let n = buf.len();
        let mut plan = Plan::new();
        let b = if r == root {
            plan.buf(buf.to_vec())
        } else {
            plan.zeroed(n)
        };
        plan_bcast(&mut plan, all(b, n), root, self.p_r());
        let copies = if r == root {
            Vec::new()
        } else {
            vec![(all(b, n), 0..n)]
        };
        self.start_schedule(plan, NoOp, Some(buf), copies)
    }

    /// `MPI_Ireduce` (§6.12.4): as [`Communicator::reduce_into`], in rank
    /// order whatever the operation; `recv` (at the root) stays borrowed
    /// until the request completes.
    ///
    /// # Errors
    ///
    /// Invalid root; a root `recv` whose length differs from `send`.
    pub fn ireduce_into<'b, T: Equivalence, O: Operation<T> + 'static>(
        &self,
        send: &[T],
        recv: Option<&'b mut [T]>,
        op: O,
        root: i32,
    ) -> Result<Request<'b>> {
        if self.inter.is_some() {
            return self.inter_ireduce(send, recv, op, root);
        }
        let root = self.check_root(root)?;
        let (_, r) = self.p_r();
        let n = send.len();
        let out = match recv.filter(|_| r == root) {
            Some(out) if out.len() == n => Some(out),
            None if r != root => None,
            _ => {
                return Err(bad(format!(
                    "ireduce: the root needs a receive buffer of {n}"
                )))
            }
        };
        let mut plan = Plan::new();
        let acc = plan.buf(send.to_vec());
        plan_reduce_to_zero(&mut plan, acc, n, self.p_r());
        if root != 0 && r == 0 {
            plan.round().sends.push((all(acc, n), root));
        } else if root != 0 && r == root {
            plan.round().recvs.push((all(acc, n), 0));
        }
        let copies = if r == root {
            vec![(all(acc, n), 0..n)]
        } else {
            Vec::new()
        };
        self.start_schedule(plan, op, out, copies)
    }

    /// `MPI_Iallreduce` (§6.12.5): as [`Communicator::all_reduce_into`],
    /// in rank order whatever the operation (the same bits everywhere:
    /// rank 0 reduces and broadcasts).
    ///
    /// # Errors
    ///
    /// `recv` shorter or longer than `send`.
    pub fn iall_reduce_into<'b, T: Equivalence, O: Operation<T> + 'static>(
        &self,
        send: &[T],
        recv: &'b mut [T],
        op: O,
    ) -> Result<Request<'b>> {
        if self.inter.is_some() {
            return self.inter_iall_reduce(send, recv, op);
        }
        let n = send.len();
        if recv.len() != n {
            return Err(bad(format!(
                "iallreduce: {n} sent, {} received",
                recv.len()
            )));
        }
        let mut plan = Plan::new();
        let acc = plan.buf(send.to_vec());
        plan_reduce_to_zero(&mut plan, acc, n, self.p_r());
        plan_bcast(&mut plan, all(acc, n), 0, self.p_r());
        self.start_schedule(plan, op, Some(recv), vec![(all(acc, n), 0..n)])
    }

    /// `MPI_Ireduce_scatter` (§6.12.6): as
    /// [`Communicator::reduce_scatter_into`].
    ///
    /// # Errors
    ///
    /// As for [`Communicator::reduce_scatter_into`].
    pub fn ireduce_scatter_into<'b, T: Equivalence, O: Operation<T> + 'static>(
        &self,
        send: &[T],
        recv: &'b mut [T],
        counts: &[usize],
        op: O,
    ) -> Result<Request<'b>> {
        if self.inter.is_some() {
            return self.inter_ireduce_scatter(send, recv, counts, op);
        }
        let (p, r) = self.p_r();
        let total: usize = counts.iter().sum();
        if counts.len() != p || send.len() != total || recv.len() != counts[r] {
            return Err(bad(format!(
                "ireduce_scatter: {} sent and {} received for counts {counts:?}",
                send.len(),
                recv.len()
            )));
        }
        let mut plan = Plan::new();
        let acc = plan.buf(send.to_vec());
        plan_reduce_to_zero(&mut plan, acc, total, self.p_r());
        let n = counts[r];
        let mine = plan.zeroed(n);
        let round = plan.round();
        if r == 0 {
            let mut at = 0;
            for (i, &c) in counts.iter().enumerate() {
                if i == 0 {
                    round.then.push(Local::Copy {
                        src: (acc, 0..c),
                        dst: all(mine, c),
                    });
                } else {
                    round.sends.push(((acc, at..at + c), i));
                }
                at += c;
            }
        } else {
            round.recvs.push((all(mine, n), 0));
        }
        self.start_schedule(plan, op, Some(recv), vec![(all(mine, n), 0..n)])
    }

    /// `MPI_Ireduce_scatter_block` (§6.12.7): as
    /// [`Communicator::reduce_scatter_block_into`].
    ///
    /// # Errors
    ///
    /// As for [`Communicator::reduce_scatter_into`].
    pub fn ireduce_scatter_block_into<'b, T: Equivalence, O: Operation<T> + 'static>(
        &self,
        send: &[T],
        recv: &'b mut [T],
        op: O,
    ) -> Result<Request<'b>> {
        let (counts, _) = uniform(self.members.len(), recv.len());
        self.ireduce_scatter_into(send, recv, &counts, op)
    }

    /// `MPI_Igatherv` (§6.12.3): as [`Communicator::gather_varcount_into`].
    ///
    /// # Errors
    ///
    /// As for [`Communicator::gather_varcount_into`].
    pub fn igather_varcount_into<'b, T: Equivalence>(
        &self,
        send: &[T],
        recv: Option<(&'b mut [T], &[usize], &[usize])>,
        root: i32,
    ) -> Result<Request<'b>> {
        if self.inter.is_some() {
            return self.inter_igather(send, recv, root);
        }
        let root = self.check_root(root)?;
        let (p, r) = self.p_r();
        let mut plan = Plan::new();
        if r != root {
            let b = plan.buf(send.to_vec());
            plan.round().sends.push((all(b, send.len()), root));
            return self.start_schedule(plan, NoOp, None, Vec::new());
        }
        let Some((recv, counts, displs)) = recv else {
            return Err(bad("igather: the root needs a receive buffer".into()));
        };
        let blocks = blocks(recv.len(), counts, displs, p, "igather")?;
        if blocks[r].len() != send.len() {
            return Err(bad(format!(
                "igather: the root sends {} not {}",
                send.len(),
                counts[r]
            )));
        }
        let b = plan.zeroed(recv.len());
        let own = plan.buf(send.to_vec());
        let round = plan.round();
        for (i, blk) in blocks.iter().enumerate().filter(|(i, _)| *i != r) {
            round.recvs.push(((b, blk.clone()), i));
        }
        round.then.push(Local::Copy {
            src: all(own, send.len()),
            dst: (b, blocks[r].clone()),
        });
        let copies = blocks
            .iter()
            .map(|blk| ((b, blk.clone()), blk.clone()))
            .collect();
        self.start_schedule(plan, NoOp, Some(recv), copies)
    }

    /// `MPI_Igather` (§6.12.3): as [`Communicator::gather_into`].
    ///
    /// # Errors
    ///
    /// As for [`Communicator::gather_varcount_into`].
    pub fn igather_into<'b, T: Equivalence>(
        &self,
        send: &[T],
        recv: Option<&'b mut [T]>,
        root: i32,
    ) -> Result<Request<'b>> {
        if self.inter.is_some() {
            return self.inter_igather_uniform(send, recv, root);
        }
        let (counts, displs) = uniform(self.members.len(), send.len());
        self.igather_varcount_into(send, recv.map(|b| (b, &counts[..], &displs[..])), root)
    }

    /// `MPI_Iscatterv` (§6.12.3): as
    /// [`Communicator::scatter_varcount_into`].
    ///
    /// # Errors
    ///
    /// As for [`Communicator::scatter_varcount_into`].
    pub fn iscatter_varcount_into<'b, T: Equivalence>(
        &self,
        send: Option<(&[T], &[usize], &[usize])>,
        recv: &'b mut [T],
        root: i32,
    ) -> Result<Request<'b>> {
        if self.inter.is_some() {
            return self.inter_iscatter(send, recv, root);
        }
        let root = self.check_root(root)?;
        let (p, r) = self.p_r();
        let n = recv.len();
        let mut plan = Plan::new();
        let mine = plan.zeroed(n);
        if r != root {
            plan.round().recvs.push((all(mine, n), root));
            return self.start_schedule(plan, NoOp, Some(recv), vec![(all(mine, n), 0..n)]);
        }
        let Some((send, counts, displs)) = send else {
            return Err(bad("iscatter: the root needs a send buffer".into()));
        };
        let blocks = blocks(send.len(), counts, displs, p, "iscatter")?;
        if blocks[r].len() != n {
            return Err(bad(format!(
                "iscatter: root receives {n} not {}",
                counts[r]
            )));
        }
        let b = plan.buf(send.to_vec());
        let round = plan.round();
        for (i, blk) in blocks.iter().enumerate().filter(|(i, _)| *i != r) {
            round.sends.push(((b, blk.clone()), i));
        }
        round.then.push(Local::Copy {
            src: (b, blocks[r].clone()),
            dst: all(mine, n),
        });
        self.start_schedule(plan, NoOp, Some(recv), vec![(all(mine, n), 0..n)])
    }

    /// `MPI_Iscatter` (§6.12.3): as [`Communicator::scatter_into`].
    ///
    /// # Errors
    ///
    /// As for [`Communicator::scatter_varcount_into`].
    pub fn iscatter_into<'b, T: Equivalence>(
        &self,
        send: Option<&[T]>,
        recv: &'b mut [T],
        root: i32,
    ) -> Result<Request<'b>> {
        if self.inter.is_some() {
            return self.inter_iscatter_uniform(send, recv, root);
        }
        let (counts, displs) = uniform(self.members.len(), recv.len());
        self.iscatter_varcount_into(send.map(|b| (b, &counts[..], &displs[..])), recv, root)
    }

    /// `MPI_Iallgatherv` (§6.12.3): as
    /// [`Communicator::all_gather_varcount_into`].
    ///
    /// # Errors
    ///
    /// As for [`Communicator::all_gather_varcount_into`].
    pub fn iall_gather_varcount_into<'b, T: Equivalence>(
        &self,
        send: &[T],
        recv: &'b mut [T],
        counts: &[usize],
        displs: &[usize],
    ) -> Result<Request<'b>> {
        if self.inter.is_some() {
            return self.inter_iall_gather(send, recv, counts, displs);
        }
        let (p, r) = self.p_r();
        let blocks = blocks(recv.len(), counts, displs, p, "iallgather")?;
        if blocks[r].len() != send.len() {
            return Err(bad(format!("iallgather: count[{r}] = {}", send.len())));
        }
        let mut plan = Plan::new();
        let b = plan.zeroed(recv.len());
        let own = plan.buf(send.to_vec());
        let round = plan.round();
        for (i, blk) in blocks.iter().enumerate().filter(|(i, _)| *i != r) {
            round.recvs.push(((b, blk.clone()), i));
            round.sends.push((all(own, send.len()), i));
        }
        round.then.push(Local::Copy {
            src: all(own, send.len()),
            dst: (b, blocks[r].clone()),
        });
        let copies = blocks
            .iter()
            .map(|blk| ((b, blk.clone()), blk.clone()))
            .collect();
        self.start_schedule(plan, NoOp, Some(recv), copies)
    }

    /// `MPI_Iallgather` (§6.12.3): as [`Communicator::all_gather_into`].
    ///
    /// # Errors
    ///
    /// As for [`Communicator::all_gather_varcount_into`].
    pub fn iall_gather_into<'b, T: Equivalence>(
        &self,
        send: &[T],
        recv: &'b mut [T],
    ) -> Result<Request<'b>> {
        if self.inter.is_some() {
            return self.inter_iall_gather_uniform(send, recv);
        }
        let (counts, displs) = uniform(self.members.len(), send.len());
        self.iall_gather_varcount_into(send, recv, &counts, &displs)
    }

    /// `MPI_Ialltoallv` (§6.12.3): as
    /// [`Communicator::all_to_all_varcount_into`]; `MPI_Ialltoallw` is
    /// this over bytes, as for the blocking one.
    ///
    /// # Errors
    ///
    /// As for [`Communicator::all_to_all_varcount_into`]; receive blocks
    /// that overlap.
    #[allow(clippy::too_many_arguments)]
    pub fn iall_to_all_varcount_into<'b, T: Equivalence>(
        &self,
        send: &[T],
        send_counts: &[usize],
        send_displs: &[usize],
        recv: &'b mut [T],
        recv_counts: &[usize],
        recv_displs: &[usize],
    ) -> Result<Request<'b>> {
        if self.inter.is_some() {
            return self.inter_iall_to_all(
                send,
                send_counts,
                send_displs,
                recv,
                recv_counts,
                recv_displs,
            );
        }
        let (p, r) = self.p_r();
        let sends = blocks(send.len(), send_counts, send_displs, p, "ialltoall send")?;
        let recvs = blocks(recv.len(), recv_counts, recv_displs, p, "ialltoall recv")?;
        if sends[r].len() != recvs[r].len() {
            return Err(bad("ialltoall: own send and receive counts differ".into()));
        }
        let mut plan = Plan::new();
        let s = plan.buf(send.to_vec());
        let b = plan.zeroed(recv.len());
        let round = plan.round();
        for i in (0..p).filter(|&i| i != r) {
            round.recvs.push(((b, recvs[i].clone()), i));
        }
        for k in 1..p {
            let i = (r + k) % p;
            round.sends.push(((s, sends[i].clone()), i));
        }
        round.then.push(Local::Copy {
            src: (s, sends[r].clone()),
            dst: (b, recvs[r].clone()),
        });
        let copies = recvs
            .iter()
            .map(|blk| ((b, blk.clone()), blk.clone()))
            .collect();
        self.start_schedule(plan, NoOp, Some(recv), copies)
    }

    /// `MPI_Ialltoall` (§6.12.3): as [`Communicator::all_to_all_into`].
    ///
    /// # Errors
    ///
    /// As for [`Communicator::all_to_all_into`].
    pub fn iall_to_all_into<'b, T: Equivalence>(
        &self,
        send: &[T],
        recv: &'b mut [T],
    ) -> Result<Request<'b>> {
        if self.inter.is_some() {
            return self.inter_iall_to_all_uniform(send, recv);
        }
        let p = self.members.len();
        if send.len() % p != 0 || recv.len() != send.len() {
            return Err(bad(format!(
                "ialltoall: buffers of {} and {} for {p} ranks",
                send.len(),
                recv.len()
            )));
        }
        let (counts, displs) = uniform(p, send.len() / p);
        self.iall_to_all_varcount_into(send, &counts, &displs, recv, &counts, &displs)
    }

    /// `MPI_Iscan` (§6.12.8): as [`Communicator::scan_into`].
    ///
    /// # Errors
    ///
    /// As for [`Communicator::scan_into`].
    pub fn iscan_into<'b, T: Equivalence, O: Operation<T> + 'static>(
        &self,
        send: &[T],
        recv: &'b mut [T],
        op: O,
    ) -> Result<Request<'b>> {
        self.iscan_common(send, recv, op, true)
    }

    /// `MPI_Iexscan` (§6.12.9): as [`Communicator::exscan_into`] (member
    /// 0's `recv` is left as it is).
    ///
    /// # Errors
    ///
    /// As for [`Communicator::exscan_into`].
    pub fn iexscan_into<'b, T: Equivalence, O: Operation<T> + 'static>(
        &self,
        send: &[T],
        recv: &'b mut [T],
        op: O,
    ) -> Result<Request<'b>> {
        self.iscan_common(send, recv, op, false)
    }

    /// The recursive doubling of `scan_doubling` as a schedule.
    fn iscan_common<'b, T: Equivalence, O: Operation<T> + 'static>(
        &self,
        send: &[T],
        recv: &'b mut [T],
        op: O,
        inclusive: bool,
    ) -> Result<Request<'b>> {
        let n = send.len();
        if recv.len() != n {
            return Err(bad(format!("iscan: {n} sent, {} received", recv.len())));
        }
        let (p, r) = self.p_r();
        let mut plan = Plan::new();
        let partial = plan.buf(send.to_vec());
        let result = plan.buf(send.to_vec());
        let tmp = plan.zeroed(n);
        let mut defined = inclusive;
        let mut d = 1;
        while d < p {
            let partner = r ^ d;
            if partner < p {
                let round = plan.round();
                round.recvs.push((all(tmp, n), partner));
                round.sends.push((all(partial, n), partner));
                if partner < r {
                    round.then.push(if defined {
                        Local::Apply {
                            src: all(tmp, n),
                            dst: all(result, n),
                        }
                    } else {
                        Local::Copy {
                            src: all(tmp, n),
                            dst: all(result, n),
                        }
                    });
                    defined = true;
                    round.then.push(Local::Apply {
                        src: all(tmp, n),
                        dst: all(partial, n),
                    });
                } else {
                    round.then.push(Local::Apply {
                        src: all(partial, n),
                        dst: all(tmp, n),
                    });
                    round.then.push(Local::Copy {
                        src: all(tmp, n),
                        dst: all(partial, n),
                    });
                }
            }
            d <<= 1;
        }
        let copies = if defined {
            vec![(all(result, n), 0..n)]
        } else {
            Vec::new()
        };
        self.start_schedule(plan, op, Some(recv), copies)
    }
}

/// The `p` blocks of a buffer of `len` items, checked.
pub(super) fn blocks(
    len: usize,
    counts: &[usize],
    displs: &[usize],
    p: usize,
    what: &str,
) -> Result<Vec<Range<usize>>> {
    if counts.len() != p || displs.len() != p {
        return Err(bad(format!("{what}: {p} counts and displacements needed")));
    }
    (0..p)
        .map(|i| block(len, counts[i], displs[i], what))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{children, parent};

    #[test]
    fn binomial_tree_reaches_every_rank_once() {
        for p in 1..=17 {
            let mut seen = vec![0; p];
            seen[0] += 1;
            for r in 0..p {
                for c in children(r, p) {
                    assert_eq!(parent(c), r, "p {p}");
                    seen[c] += 1;
                }
            }
            assert!(seen.iter().all(|&s| s == 1), "p {p}: {seen:?}");
        }
    }
}
