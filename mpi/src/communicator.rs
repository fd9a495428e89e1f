//! Communicators (MPI 4.1 chapter 7): groups of processes with a private
//! message space.
//!
//! Each communicator owns two context ids, an even one for point-to-point
//! traffic and the next odd one for its collectives, so that user messages
//! and collective traffic never match each other (§7.1, "contexts"). New
//! ids are agreed on collectively: every member proposes the lowest id it
//! has not used, and the maximum wins (one allreduce). Processes in
//! different groups of one `split` share the new id, which is safe because
//! a group only ever talks to itself.

use o2g_core::proto::envelope::SYNC_FLAG;
use std::rc::Rc;

use crate::environment::Runtime;
use crate::error::{Error, Result};
use crate::operation::SystemOperation;
use crate::point_to_point::{AnyProcess, Process};

/// A communicator: `MPI_COMM_WORLD` from [`crate::Universe::world`], or one
/// derived from it with [`Communicator::dup`] / [`Communicator::split`].
///
/// Not `Send`: MPI runs in `MPI_THREAD_SINGLE` mode here.
pub struct Communicator {
    pub(crate) rt: Rc<Runtime>,
    /// The point-to-point context id (even); collectives use `context + 1`.
    pub(crate) context: u32,
    /// World rank of each member, indexed by rank in this communicator.
    pub(crate) members: Rc<[u32]>,
    pub(crate) rank: u32,
}

/// The color argument of [`Communicator::split`] (`MPI_Comm_split`, §7.4.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Color {
    /// Join the group of processes with this (non-negative) color.
    With(u32),
    /// `MPI_UNDEFINED`: join no group.
    Undefined,
}

impl Communicator {
    pub(crate) fn new(rt: Rc<Runtime>, context: u32, members: Vec<u32>, rank: u32) -> Self {
        Self {
            rt,
            context,
            members: members.into(),
            rank,
        }
    }

    /// Another handle to the same communicator (same context).
    pub(crate) fn handle(&self) -> Self {
        Self {
            rt: self.rt.clone(),
            context: self.context,
            members: self.members.clone(),
            rank: self.rank,
        }
    }

    /// This process's rank (`MPI_Comm_rank`, §7.4.1).
    pub fn rank(&self) -> i32 {
        self.rank as i32
    }

    /// Number of processes (`MPI_Comm_size`, §7.4.1).
    pub fn size(&self) -> i32 {
        self.members.len() as i32
    }

    /// The world rank of member `rank`, checked.
    pub(crate) fn world_rank(&self, rank: i32) -> Result<u32> {
        usize::try_from(rank)
            .ok()
            .and_then(|r| self.members.get(r).copied())
            .ok_or(Error::InvalidRank {
                rank,
                size: self.size(),
            })
    }

    /// The process with `rank` in this communicator, for point-to-point
    /// and rooted collective calls.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRank`] outside `0..size`.
    pub fn process_at_rank(&self, rank: i32) -> Result<Process<'_>> {
        self.world_rank(rank)?;
        Ok(Process::new(self, rank))
    }

    /// `MPI_ANY_SOURCE` as a receive source.
    pub fn any_process(&self) -> AnyProcess<'_> {
        AnyProcess::new(self)
    }

    /// Agrees on a fresh context id with every member (collective).
    fn new_context(&self) -> Result<u32> {
        let mine = [self.rt.next_context.get()];
        let mut agreed = [0u32];
        self.all_reduce_into(&mine, &mut agreed, &SystemOperation::Max)?;
        let ctx = agreed[0];
        // Bit 31 of a context is the synchronous-send mark (SYNC_FLAG).
        let next = ctx
            .checked_add(2)
            .filter(|n| n & SYNC_FLAG == 0)
            .ok_or(Error::ResourceExhausted("communicator context ids"))?;
        self.rt.next_context.set(next);
        Ok(ctx)
    }

    /// `MPI_Comm_dup` (§7.4.2): the same group with a new context, so its
    /// traffic cannot mix with this one's. Collective.
    ///
    /// # Errors
    ///
    /// Those of the allreduce that agrees on the context.
    pub fn dup(&self) -> Result<Communicator> {
        let ctx = self.new_context()?;
        Ok(Communicator::new(
            self.rt.clone(),
            ctx,
            self.members.to_vec(),
            self.rank,
        ))
    }

    /// `MPI_Comm_split` (§7.4.2): one new communicator per color; members
    /// ordered by `key`, ties by rank here. Collective; `None` for
    /// [`Color::Undefined`].
    ///
    /// # Errors
    ///
    /// Those of the underlying collectives; a color above `i32::MAX` is
    /// [`Error::InvalidArgument`].
    pub fn split(&self, color: Color, key: i32) -> Result<Option<Communicator>> {
        let c = match color {
            Color::With(c) if c <= i32::MAX as u32 => c as i64,
            Color::With(c) => {
                return Err(Error::InvalidArgument(format!(
                    "split color {c} above i32::MAX"
                )))
            }
            Color::Undefined => -1,
        };
        let mine = [[c, i64::from(key)]];
        let mut all = vec![[0i64; 2]; self.members.len()];
        self.all_gather_into(&mine, &mut all)?;
        let ctx = self.new_context()?;
        if c < 0 {
            return Ok(None);
        }
        let mut group: Vec<(i64, usize)> = all
            .iter()
            .enumerate()
            .filter(|(_, e)| e[0] == c)
            .map(|(r, e)| (e[1], r))
            .collect();
        group.sort_unstable();
        let members: Vec<u32> = group.iter().map(|&(_, r)| self.members[r]).collect();
        let rank = group
            .iter()
            .position(|&(_, r)| r == self.rank as usize)
            .unwrap_or_default() as u32;
        Ok(Some(Communicator::new(self.rt.clone(), ctx, members, rank)))
    }

    /// `MPI_Abort` (§9.5): ends every process of the job with `code`.
    pub fn abort(&self, code: i32) -> ! {
        self.rt.abort(code, "MPI_Abort called")
    }
}
