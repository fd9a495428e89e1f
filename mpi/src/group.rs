//! Process groups (MPI 5.0 §7.3): ordered sets of processes, named by
//! their `MPI_COMM_WORLD` ranks, and the set operations that make new ones
//! from old. A group is plain data (`Send + Sync`); it belongs to no
//! communicator, and a communicator is made from one with
//! [`crate::Communicator::create`] or [`crate::Communicator::create_group`].

use std::collections::HashSet;

use crate::error::{Error, Result};

/// A group: distinct processes in rank order, and the calling process,
/// which may or may not be one of them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    members: Vec<u32>,
    me: u32,
}

/// The result of [`Group::compare`] (`MPI_Group_compare`, §7.3.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Comparison {
    /// `MPI_IDENT`: the same members in the same order.
    Identical,
    /// `MPI_SIMILAR`: the same members in another order.
    Similar,
    /// `MPI_UNEQUAL`: different members.
    Unequal,
}

fn bad(msg: String) -> Error {
    Error::InvalidArgument(msg)
}

/// `⌊a / b⌋` for `b != 0`.
fn floor_div(a: i64, b: i64) -> i64 {
    let q = a / b;
    if a % b != 0 && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}

impl Group {
    /// The group of the processes with world ranks `members`, in that
    /// order, seen from the process with world rank `me`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] if a process appears twice.
    pub fn new(members: Vec<u32>, me: u32) -> Result<Self> {
        let mut seen = HashSet::with_capacity(members.len());
        if let Some(d) = members.iter().find(|&&m| !seen.insert(m)) {
            return Err(bad(format!("world rank {d} appears twice in a group")));
        }
        Ok(Self { members, me })
    }

    /// The group with no member (`MPI_GROUP_EMPTY`, §7.2.5) seen from the
    /// process with world rank `me`.
    pub fn empty(me: u32) -> Self {
        Self {
            members: Vec::new(),
            me,
        }
    }

    /// `MPI_Group_size` (§7.3.1).
    pub fn size(&self) -> i32 {
        self.members.len() as i32
    }

    /// `MPI_Group_rank` (§7.3.1): the calling process's rank, `None`
    /// (`MPI_UNDEFINED`) if it is not a member.
    pub fn rank(&self) -> Option<i32> {
        self.rank_of_world(self.me)
    }

    /// The `MPI_COMM_WORLD` rank of each member, in group rank order.
    pub fn world_ranks(&self) -> &[u32] {
        &self.members
    }

    /// The world rank of the calling process.
    pub fn me(&self) -> u32 {
        self.me
    }

    /// The rank in this group of the process with world rank `w`.
    pub fn rank_of_world(&self, w: u32) -> Option<i32> {
        self.members.iter().position(|&m| m == w).map(|r| r as i32)
    }

    fn world(&self, rank: i32) -> Result<u32> {
        usize::try_from(rank)
            .ok()
            .and_then(|r| self.members.get(r).copied())
            .ok_or_else(|| Error::InvalidRank {
                rank,
                size: self.size(),
            })
    }

    fn with(&self, members: Vec<u32>) -> Self {
        Self {
            members,
            me: self.me,
        }
    }

    /// `MPI_Group_translate_ranks` (§7.3.1): the rank in `other` of each
    /// process with rank `ranks[i]` here; `None` for a process `other`
    /// does not hold.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRank`] for a rank outside this group.
    pub fn translate_ranks(&self, ranks: &[i32], other: &Group) -> Result<Vec<Option<i32>>> {
        ranks
            .iter()
            .map(|&r| Ok(other.rank_of_world(self.world(r)?)))
            .collect()
    }

    /// `MPI_Group_compare` (§7.3.1).
    pub fn compare(&self, other: &Group) -> Comparison {
        if self.members == other.members {
            Comparison::Identical
        } else if self.members.len() == other.members.len()
            && self.members.iter().all(|m| other.members.contains(m))
        {
            Comparison::Similar
        } else {
            Comparison::Unequal
        }
    }

    /// `MPI_Group_union` (§7.3.2): this group's members, then those of
    /// `other` that are not in it, in `other`'s order.
    pub fn union(&self, other: &Group) -> Group {
        let mut m = self.members.clone();
        m.extend(other.members.iter().filter(|x| !self.members.contains(x)));
        self.with(m)
    }

    /// `MPI_Group_intersection` (§7.3.2): this group's members that are
    /// also in `other`, in this group's order.
    pub fn intersection(&self, other: &Group) -> Group {
        let m = self.members.iter().copied();
        self.with(m.filter(|x| other.members.contains(x)).collect())
    }

    /// `MPI_Group_difference` (§7.3.2): this group's members that are not
    /// in `other`, in this group's order.
    pub fn difference(&self, other: &Group) -> Group {
        let m = self.members.iter().copied();
        self.with(m.filter(|x| !other.members.contains(x)).collect())
    }

    /// Checks that `ranks` are distinct ranks of this group.
    fn distinct(&self, ranks: &[i32]) -> Result<Vec<u32>> {
        let mut seen = HashSet::with_capacity(ranks.len());
        ranks
            .iter()
            .map(|&r| {
                let w = self.world(r)?;
                if !seen.insert(r) {
                    return Err(bad(format!("rank {r} given twice")));
                }
                Ok(w)
            })
            .collect()
    }

    /// `MPI_Group_incl` (§7.3.2): the members with ranks `ranks`, in that
    /// order.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRank`] for a rank outside the group,
    /// [`Error::InvalidArgument`] for one given twice.
    pub fn incl(&self, ranks: &[i32]) -> Result<Group> {
        Ok(self.with(self.distinct(ranks)?))
    }

    /// `MPI_Group_excl` (§7.3.2): the members without those with ranks
    /// `ranks`, in group order.
    ///
    /// # Errors
    ///
    /// As for [`Group::incl`].
    pub fn excl(&self, ranks: &[i32]) -> Result<Group> {
        let out = self.distinct(ranks)?;
        let m = self.members.iter().copied();
        Ok(self.with(m.filter(|x| !out.contains(x)).collect()))
    }

    /// The ranks `ranges` (`[first, last, stride]` triplets, §7.3.2) stand
    /// for: `first, first + stride, …` as far as `last`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a zero stride.
    pub fn expand_ranges(ranges: &[[i32; 3]]) -> Result<Vec<i32>> {
        let mut out = Vec::new();
        for &[first, last, stride] in ranges {
            if stride == 0 {
                return Err(bad("a rank range with stride 0".into()));
            }
            let (f, l, s) = (i64::from(first), i64::from(last), i64::from(stride));
            let n = floor_div(l - f, s) + 1;
            let n = usize::try_from(n.max(0)).unwrap_or(0);
            out.extend((0..n as i64).map(|i| (f + i * s) as i32));
        }
        Ok(out)
    }

    /// `MPI_Group_range_incl` (§7.3.2).
    ///
    /// # Errors
    ///
    /// As for [`Group::incl`]; a zero stride.
    pub fn range_incl(&self, ranges: &[[i32; 3]]) -> Result<Group> {
        self.incl(&Self::expand_ranges(ranges)?)
    }

    /// `MPI_Group_range_excl` (§7.3.2).
    ///
    /// # Errors
    ///
    /// As for [`Group::excl`]; a zero stride.
    pub fn range_excl(&self, ranges: &[[i32; 3]]) -> Result<Group> {
        self.excl(&Self::expand_ranges(ranges)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(m: &[u32], me: u32) -> Group {
        Group::new(m.to_vec(), me).unwrap()
    }

    #[test]
    fn set_operations_keep_the_standard_orders() {
        let a = g(&[5, 1, 3, 7], 3);
        let b = g(&[7, 2, 5], 3);
        assert_eq!(a.union(&b).world_ranks(), &[5, 1, 3, 7, 2]);
        assert_eq!(a.intersection(&b).world_ranks(), &[5, 7]);
        assert_eq!(a.difference(&b).world_ranks(), &[1, 3]);
        assert_eq!(b.difference(&a).world_ranks(), &[2]);
        assert_eq!(a.rank(), Some(2));
        assert_eq!(b.rank(), None);
        assert_eq!(a.intersection(&b).rank(), None);
        assert_eq!(a.compare(&a.clone()), Comparison::Identical);
        assert_eq!(a.compare(&g(&[1, 3, 5, 7], 0)), Comparison::Similar);
        assert_eq!(a.compare(&b), Comparison::Unequal);
        assert!(Group::new(vec![1, 2, 1], 0).is_err());
    }

    #[test]
    fn incl_excl_and_ranges() {
        let a = g(&[10, 11, 12, 13, 14, 15, 16], 12);
        assert_eq!(a.incl(&[3, 0]).unwrap().world_ranks(), &[13, 10]);
        assert!(a.incl(&[1, 1]).is_err());
        assert!(a.incl(&[7]).is_err());
        assert_eq!(a.excl(&[0, 6, 2]).unwrap().world_ranks(), &[11, 13, 14, 15]);
        assert_eq!(
            Group::expand_ranges(&[[0, 6, 3], [5, 4, -1], [2, 1, 1]]).unwrap(),
            vec![0, 3, 6, 5, 4]
        );
        assert_eq!(Group::expand_ranges(&[[6, 0, -4]]).unwrap(), vec![6, 2]);
        assert!(Group::expand_ranges(&[[0, 1, 0]]).is_err());
        let r = a.range_incl(&[[1, 5, 2]]).unwrap();
        assert_eq!(r.world_ranks(), &[11, 13, 15]);
        let r = a.range_excl(&[[1, 5, 2]]).unwrap();
        assert_eq!(r.world_ranks(), &[10, 12, 14, 16]);
        assert_eq!(r.rank(), Some(1));
        let t = a.translate_ranks(&[0, 2, 6], &r).unwrap();
        assert_eq!(t, vec![Some(0), Some(1), Some(3)]);
        let t = r.translate_ranks(&[0], &g(&[11], 0)).unwrap();
        assert_eq!(t, vec![None]);
        assert_eq!(Group::empty(3).size(), 0);
    }
}
