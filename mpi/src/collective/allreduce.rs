//! `MPI_Allreduce` (§6.9.6), and the reduce-scatter steps `MPI_Reduce`
//! shares with it: recursive doubling for short vectors; for long ones,
//! Rabenseifner's algorithm when p is a power of two, a ring otherwise
//! (the module documentation says why and from which size).

use std::ops::Range;

use super::{bad, parts, REDUCE_LARGE, RING_MIN_BLOCK, TAG_ALLREDUCE};
use crate::communicator::Communicator;
use crate::datatype::{as_bytes, as_bytes_mut, zeroed_vec, Equivalence};
use crate::error::Result;
use crate::operation::Operation;

/// How a reduction of a vector spreads the work over the processes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Split {
    /// Whole vectors travel and every process combines all of them.
    Whole,
    /// Recursive halving into p blocks (p a power of two).
    Halving(Cut),
    /// A ring of p blocks.
    Ring(Cut),
}

impl Split {
    /// The split for `n` items of `size` bytes over `p` processes, with an
    /// operation whose elements are `grain` items each
    /// ([`Operation::grain`]): the same on every member, which all pass
    /// `n` items of one type and the same operation. A vector that is not
    /// whole elements is never cut.
    pub(super) fn of(p: usize, n: usize, size: usize, grain: usize) -> Split {
        let grain = grain.max(1);
        let bytes = n.saturating_mul(size);
        let elements = n / grain;
        let cut = Cut { elements, p, grain };
        if p < 2 || n % grain != 0 || elements < p || bytes < REDUCE_LARGE {
            Split::Whole
        } else if p.is_power_of_two() {
            Split::Halving(cut)
        } else if bytes >= p.saturating_mul(RING_MIN_BLOCK) {
            Split::Ring(cut)
        } else {
            Split::Whole
        }
    }

    /// [`Split::of`] for `n` items of `T` reduced with `op`: an operation
    /// that does not commute is never split (the split algorithms combine
    /// blocks in ring or bit order, not rank order).
    pub(super) fn for_op<T, O: Operation<T> + ?Sized>(p: usize, n: usize, op: &O) -> Split {
        if op.commutes() {
            Split::of(p, n, size_of::<T>(), op.grain())
        } else {
            Split::Whole
        }
    }
}

/// Where a split reduction cuts a vector of `elements` elements of
/// `grain` items each into p blocks: as equal as can be in whole
/// elements ([`parts`]), so no block boundary falls inside one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Cut {
    elements: usize,
    p: usize,
    grain: usize,
}

impl Cut {
    /// The items of blocks `blocks`, one range: they are contiguous.
    pub(super) fn blocks(self, blocks: Range<usize>) -> Range<usize> {
        let e = parts(self.elements, self.p, blocks);
        e.start * self.grain..e.end * self.grain
    }

    /// The items of block `i`.
    pub(super) fn block(self, i: usize) -> Range<usize> {
        self.blocks(i..i + 1)
    }
}

impl Communicator {
    /// `MPI_Allreduce` (§6.9.6): every member gets `op` over all `send`s,
    /// the same bits on every member.
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
        if self.inter.is_some() {
            return self.inter_all_reduce(send, recv, op);
        }
        let n = send.len();
        if recv.len() != n {
            return Err(bad(format!(
                "allreduce: {} elements sent, {} received",
                n,
                recv.len()
            )));
        }
        let (p, _) = self.p_r();
        match Split::for_op::<T, O>(p, n, op) {
            Split::Whole => self.allreduce_doubling(send, recv, op),
            Split::Halving(cut) => {
                recv.copy_from_slice(send);
                self.reduce_scatter_halving(recv, cut, op, TAG_ALLREDUCE)?;
                self.allgather_doubling(recv, cut, TAG_ALLREDUCE)
            }
            Split::Ring(cut) => {
                recv.copy_from_slice(send);
                self.reduce_scatter_ring(recv, cut, op, TAG_ALLREDUCE)?;
                let block = |i| cut.block(i);
                self.ring_allgather(recv, block, 0, |_, _| false, TAG_ALLREDUCE)
            }
        }
    }

    /// Allreduce by recursive doubling. With p not a power of two, the
    /// first 2·rem ranks (rem = p − 2^⌊log2 p⌋) pair up: each even one
    /// hands its vector to the odd one above it, which stands for both in
    /// the doubling and sends the result back at the end.
    ///
    /// In each exchange both partners compute op(lower, upper), `lower`
    /// being the vector of the partner with the lower doubling rank, so
    /// they end with the same bits whatever `op` does with its operands'
    /// order (floating-point `Max` keeps the zero it holds of +0.0 and
    /// −0.0). Each vector is the result of a contiguous range of ranks
    /// (a pair folded in stands for two neighbours, and doubling ranks
    /// keep the order of ranks), the lower partner's just below the
    /// upper's: the combination is in rank order, as an operation that
    /// does not commute needs.
    fn allreduce_doubling<T: Equivalence, O: Operation<T>>(
        &self,
        send: &[T],
        recv: &mut [T],
        op: &O,
    ) -> Result<()> {
        let (p, r) = self.p_r();
        // The running result lives in `recv` (one allocation fewer per
        // call, which counts for the short vectors this serves).
        recv.copy_from_slice(send);
        let acc = recv;
        let mut tmp: Vec<T> = zeroed_vec(send.len());
        let pof2 = 1usize << p.ilog2();
        let rem = p - pof2;
        let newrank = if r < 2 * rem {
            if r % 2 == 0 {
                self.csend(as_bytes(acc), r + 1, TAG_ALLREDUCE)?;
                None
            } else {
                self.crecv(as_bytes_mut(&mut tmp), r - 1, TAG_ALLREDUCE)?;
                op.apply(&tmp, acc);
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
                    as_bytes(acc),
                    dst,
                    as_bytes_mut(&mut tmp),
                    dst,
                    TAG_ALLREDUCE,
                )?;
                if nr < partner {
                    op.apply(acc, &mut tmp);
                    acc.copy_from_slice(&tmp);
                } else {
                    op.apply(&tmp, acc);
                }
                mask <<= 1;
            }
        }
        if r < 2 * rem && r % 2 == 0 {
            return self.crecv(as_bytes_mut(acc), r + 1, TAG_ALLREDUCE);
        }
        if r < 2 * rem {
            self.csend(as_bytes(acc), r - 1, TAG_ALLREDUCE)?;
        }
        Ok(())
    }

    /// Reduce-scatter by recursive halving, for p a power of two: `buf`
    /// is this member's vector, cut into p blocks by `cut`; afterwards
    /// its block `rank` holds `op` over every member's block `rank`, and
    /// the rest of `buf` is scratch.
    ///
    /// Step by step, from the highest bit of the rank down, partners that
    /// differ in that bit split the blocks both still work on: the one
    /// whose bit is clear keeps the lower half, sends the upper half and
    /// combines the partner's lower half into its own. Every block is
    /// combined by one process only, so its bits do not depend on who
    /// later receives it. log2 p steps, (p − 1)/p·n elements sent.
    pub(super) fn reduce_scatter_halving<T: Equivalence, O: Operation<T>>(
        &self,
        buf: &mut [T],
        cut: Cut,
        op: &O,
        tag: u32,
    ) -> Result<()> {
        let (p, r) = self.p_r();
        let mut tmp: Vec<T> = zeroed_vec(cut.blocks(0..p / 2).len());
        let mut blocks = 0..p;
        let mut half = p / 2;
        while half > 0 {
            let partner = r ^ half;
            let mid = blocks.start + half;
            let (keep, give) = if r & half == 0 {
                (blocks.start..mid, mid..blocks.end)
            } else {
                (mid..blocks.end, blocks.start..mid)
            };
            let mine = cut.blocks(keep.clone());
            let theirs = &mut tmp[..mine.len()];
            self.cexchange(
                as_bytes(&buf[cut.blocks(give)]),
                partner,
                as_bytes_mut(theirs),
                partner,
                tag,
            )?;
            op.apply(theirs, &mut buf[mine]);
            blocks = keep;
            half /= 2;
        }
        Ok(())
    }

    /// Allgather by recursive doubling, for p a power of two, after
    /// [`Communicator::reduce_scatter_halving`]: each member holds block
    /// `rank` of `buf` and ends with all of them. In the step with
    /// distance d, partners `rank ^ d` swap the d blocks each has
    /// gathered.
    fn allgather_doubling<T: Equivalence>(&self, buf: &mut [T], cut: Cut, tag: u32) -> Result<()> {
        let (p, r) = self.p_r();
        let gathered = |who: usize, d: usize| -> Range<usize> {
            let first = who & !(d - 1);
            cut.blocks(first..first + d)
        };
        let mut d = 1;
        while d < p {
            let partner = r ^ d;
            let (out, inn) = (gathered(r, d), gathered(partner, d));
            self.cexchange_within(buf, Some((out, partner)), Some((inn, partner)), tag)?;
            d <<= 1;
        }
        Ok(())
    }

    /// Reduce-scatter around the ring, for any p: `buf` is this member's
    /// vector, cut into p blocks by `cut`; afterwards its block `rank`
    /// holds `op` over every member's block `rank`, and the rest of `buf`
    /// is scratch.
    ///
    /// In step s (of p − 1) each member sends block rank − s − 1 to its
    /// right and combines the one its left sends, block rank − s − 2,
    /// into its own: block b starts at member b + 1 and gathers one
    /// contribution per member on its way round to b. Every block is
    /// combined along one path, so its bits do not depend on who later
    /// receives it. (p − 1)/p·n elements sent.
    pub(super) fn reduce_scatter_ring<T: Equivalence, O: Operation<T>>(
        &self,
        buf: &mut [T],
        cut: Cut,
        op: &O,
        tag: u32,
    ) -> Result<()> {
        let (p, r) = self.p_r();
        let (right, left) = ((r + 1) % p, (r + p - 1) % p);
        let mut tmp: Vec<T> = zeroed_vec(cut.block(0).len());
        for s in 0..p - 1 {
            let out = cut.block((r + 2 * p - s - 1) % p);
            let inn = cut.block((r + 2 * p - s - 2) % p);
            let theirs = &mut tmp[..inn.len()];
            self.cexchange(as_bytes(&buf[out]), right, as_bytes_mut(theirs), left, tag)?;
            op.apply(theirs, &mut buf[inn]);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::Split;

    #[test]
    fn splits_cut_only_between_whole_elements() {
        // 9001 doubles as bytes (the C ABI's view): 72008 bytes, whose
        // byte-wise thirds and quarters would fall inside doubles.
        let n = 9001 * 8;
        for p in [2, 3, 4, 7, 8, 16] {
            let (Split::Halving(cut) | Split::Ring(cut)) = Split::of(p, n, 1, 8) else {
                panic!("{n} bytes of doubles on {p} are not split");
            };
            assert_eq!(cut.blocks(0..p), 0..n);
            assert!((0..p).all(|i| cut.block(i).start % 8 == 0), "p {p}");
            assert!(matches!(
                Split::of(p, n, 1, 1),
                Split::Halving(_) | Split::Ring(_)
            ));
        }
        assert!(matches!(Split::of(4, n, 1, 8), Split::Halving(_)));
        assert!(matches!(Split::of(3, n, 1, 8), Split::Ring(_)));
        // Three doubles (24 bytes) per element; 0 counts as 1.
        let Split::Ring(cut) = Split::of(3, 3001 * 24, 1, 24) else {
            panic!("not split");
        };
        assert!((0..3).all(|i| cut.block(i).start % 24 == 0));
        assert_eq!(cut.blocks(0..3).end, 3001 * 24);
        assert_eq!(Split::of(4, n, 1, 0), Split::of(4, n, 1, 1));
        // Not whole elements, or fewer elements than processes: whole.
        assert_eq!(Split::of(4, n + 1, 1, 8), Split::Whole);
        assert_eq!(Split::of(4, 3 * (64 << 10), 1, 64 << 10), Split::Whole);
        assert_eq!(Split::of(4, (64 << 10) - 8, 1, 8), Split::Whole);
    }
}
