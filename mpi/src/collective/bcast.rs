//! `MPI_Bcast` (§6.4): a binomial tree for short buffers; for long ones,
//! van de Geijn's scatter and ring allgather (the module documentation
//! says why and from which size).

use std::ops::Range;

use super::{part, parts, BCAST_LARGE, RING_MIN_BLOCK, TAG_BCAST, TAG_BCAST_SCATTER};
use crate::communicator::Communicator;
use crate::datatype::{as_bytes_mut, Equivalence};
use crate::error::Result;

impl Communicator {
    /// `MPI_Bcast` (§6.4): `buf` of `root` is copied into `buf` of every
    /// member. Every member passes a buffer of the same length. On an
    /// inter-communicator `root` is [`crate::intercomm::ROOT`] at the
    /// root, [`crate::intercomm::PROC_NULL`] in the rest of its group and
    /// the root's rank in the other group, which receives (§6.2.2).
    ///
    /// # Errors
    ///
    /// Invalid root, length disagreement, dead peers.
    pub fn broadcast_into<T: Equivalence>(&self, buf: &mut [T], root: i32) -> Result<()> {
        if self.inter.is_some() {
            return self.inter_bcast(buf, root);
        }
        let root = self.check_root(root)?;
        let (p, _) = self.p_r();
        let bytes = as_bytes_mut(buf);
        let n = bytes.len();
        if p >= 3 && n >= BCAST_LARGE && n >= p.saturating_mul(RING_MIN_BLOCK) {
            self.bcast_scatter_allgather(bytes, root)
        } else {
            self.bcast_binomial(bytes, root)
        }
    }

    /// Binomial tree: a member receives from the one whose relative rank
    /// lacks its lowest set bit, then sends to those that add each lower
    /// bit, farthest first.
    fn bcast_binomial(&self, bytes: &mut [u8], root: usize) -> Result<()> {
        let (p, r) = self.p_r();
        let rel = (r + p - root) % p;
        let mut mask = 1;
        while mask < p {
            if rel & mask != 0 {
                self.crecv(bytes, (rel - mask + root) % p, TAG_BCAST)?;
                break;
            }
            mask <<= 1;
        }
        mask >>= 1;
        while mask > 0 {
            if rel + mask < p {
                self.csend(bytes, (rel + mask + root) % p, TAG_BCAST)?;
            }
            mask >>= 1;
        }
        Ok(())
    }

    /// Van de Geijn's broadcast: the bytes are cut into p blocks
    /// ([`part`]), block i for relative rank i. A binomial scatter (the
    /// tree of [`Communicator::bcast_binomial`]) hands each member the
    /// blocks of its subtree; a ring allgather in relative-rank order then
    /// completes every member, skipping the blocks the scatter left with
    /// it (all of them at the root).
    fn bcast_scatter_allgather(&self, bytes: &mut [u8], root: usize) -> Result<()> {
        let (p, r) = self.p_r();
        let n = bytes.len();
        let rel = (r + p - root) % p;
        // Relative rank i heads the subtree i .. i + (lowest set bit of
        // i): the blocks it receives in the scatter.
        let subtree = |i: usize| -> Range<usize> {
            match i {
                0 => 0..p,
                _ => i..(i + (1 << i.trailing_zeros())).min(p),
            }
        };
        if rel != 0 {
            let parent = rel & (rel - 1);
            let mine = parts(n, p, subtree(rel));
            self.crecv(&mut bytes[mine], (parent + root) % p, TAG_BCAST_SCATTER)?;
        }
        let mut d = subtree(rel).len().next_power_of_two() / 2;
        while d > 0 {
            if rel + d < p {
                let theirs = parts(n, p, subtree(rel + d));
                self.csend(&bytes[theirs], (rel + d + root) % p, TAG_BCAST_SCATTER)?;
            }
            d /= 2;
        }
        let held = |i: usize, block: usize| subtree(i).contains(&block);
        self.ring_allgather(bytes, |i| part(n, p, i), root, held, TAG_BCAST)
    }
}
