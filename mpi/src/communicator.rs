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
//!
//! An inter-communicator (§7.6) is a `Communicator` too, whose point-to-
//! point ranks name its remote group: see [`crate::intercomm`] for its
//! representation and how its contexts are agreed on.

use o2g_core::proto::envelope::{Selector, SourceSel, TagSel, SYNC_FLAG};
use std::rc::Rc;

use crate::environment::Runtime;
use crate::error::{Error, Result};
use crate::group::Group;
use crate::intercomm::Inter;
use crate::operation::SystemOperation;
use crate::point_to_point::{AnyProcess, Process};
use crate::request::{RecvBuf, Request, Watch};

/// A communicator: `MPI_COMM_WORLD` from [`crate::Universe::world`], or one
/// derived from it with [`Communicator::dup`] / [`Communicator::split`].
///
/// An inter-communicator (§7.6) is one too: see [`crate::intercomm`].
///
/// Not `Send`: MPI runs in `MPI_THREAD_SINGLE` mode here.
pub struct Communicator {
    pub(crate) rt: Rc<Runtime>,
    /// The point-to-point context id (even); collectives use `context + 1`.
    pub(crate) context: u32,
    /// World rank of each member, indexed by rank in this communicator
    /// (of an inter-communicator: its local group).
    pub(crate) members: Rc<[u32]>,
    pub(crate) rank: u32,
    /// The remote group and the local intra-communicator of an
    /// inter-communicator; `None` for an intra-communicator.
    pub(crate) inter: Option<Rc<Inter>>,
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
            inter: None,
        }
    }

    /// Another handle to the same communicator (same context).
    pub(crate) fn handle(&self) -> Self {
        Self {
            rt: self.rt.clone(),
            context: self.context,
            members: self.members.clone(),
            rank: self.rank,
            inter: self.inter.clone(),
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

    /// The world rank of each process that point-to-point ranks name: the
    /// members, or the remote group of an inter-communicator (§7.6.1).
    pub(crate) fn peers(&self) -> &Rc<[u32]> {
        match &self.inter {
            Some(i) => &i.remote,
            None => &self.members,
        }
    }

    /// This process's world rank.
    pub(crate) fn me(&self) -> u32 {
        self.members[self.rank as usize]
    }

    /// How many processes point-to-point ranks may name: [`Self::size`],
    /// or the remote group's size on an inter-communicator (§7.6.1).
    pub fn target_size(&self) -> i32 {
        self.peers().len() as i32
    }

    /// The world rank of the process that point-to-point rank `rank`
    /// names (in the remote group of an inter-communicator), checked.
    pub(crate) fn world_rank(&self, rank: i32) -> Result<u32> {
        usize::try_from(rank)
            .ok()
            .and_then(|r| self.peers().get(r).copied())
            .ok_or_else(|| Error::InvalidRank {
                rank,
                size: self.target_size(),
            })
    }

    /// Fails on an inter-communicator: `what` is defined for
    /// intra-communicators only.
    pub(crate) fn intra_only(&self, what: &str) -> Result<()> {
        match self.inter {
            None => Ok(()),
            Some(_) => Err(Error::InvalidCommunicator(format!(
                "{what} needs an intra-communicator, not an inter-communicator"
            ))),
        }
    }

    /// Marks the `count` context ids from `first` (every other one: `first`,
    /// `first + 2`, ...) used, so this process proposes none of them again.
    pub(crate) fn claim_contexts(&self, first: u32, count: u32) -> Result<()> {
        // Bit 31 of a context is the synchronous-send mark (SYNC_FLAG).
        let next = count
            .checked_mul(2)
            .and_then(|n| first.checked_add(n))
            .filter(|n| n & SYNC_FLAG == 0)
            .ok_or(Error::ResourceExhausted("communicator context ids"))?;
        self.rt.next_context.set(next);
        Ok(())
    }

    /// The highest of the members' lowest unused context ids (an
    /// allreduce): one that none of them has used.
    pub(crate) fn max_next_context(&self) -> Result<u32> {
        let mine = [self.rt.next_context.get()];
        let mut agreed = [0u32];
        self.all_reduce_into(&mine, &mut agreed, &SystemOperation::Max)?;
        Ok(agreed[0])
    }

    /// The process with `rank` in this communicator (in the remote group
    /// of an inter-communicator), for point-to-point and rooted
    /// collective calls.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRank`] outside `0..size` (`0..remote size`).
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
        let ctx = self.max_next_context()?;
        self.claim_contexts(ctx, 1)?;
        Ok(ctx)
    }

    /// `MPI_Comm_dup` (§7.4.2): the same group with a new context, so its
    /// traffic cannot mix with this one's. Collective. On an
    /// inter-communicator, the same local and remote groups (§7.6.2).
    ///
    /// # Errors
    ///
    /// Those of the allreduce that agrees on the context.
    pub fn dup(&self) -> Result<Communicator> {
        if self.inter.is_some() {
            return self.inter_dup();
        }
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
    /// [`Color::Undefined`]. On an inter-communicator, one new
    /// inter-communicator per color, of the processes of that color on
    /// each side; `None` too for a color only one side has (§7.6.2).
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
        if self.inter.is_some() {
            return self.inter_split(c, key);
        }
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

    /// `MPI_Comm_group` (§7.3.1): this communicator's group (the local
    /// group of an inter-communicator).
    pub fn group(&self) -> Group {
        Group::new(self.members.to_vec(), self.members[self.rank as usize])
            .unwrap_or_else(|_| Group::empty(self.members[self.rank as usize]))
    }

    /// The members of `group`, checked to be members of this communicator
    /// (of its local group).
    pub(crate) fn subgroup(&self, group: &Group) -> Result<()> {
        match group
            .world_ranks()
            .iter()
            .find(|w| !self.members.contains(w))
        {
            Some(w) => Err(Error::InvalidArgument(format!(
                "world rank {w} of the group is not in the communicator"
            ))),
            None => Ok(()),
        }
    }

    /// A communicator of `members` (world ranks) with context `ctx`, if
    /// this process is one of them.
    fn of_members(&self, ctx: u32, members: &[u32]) -> Option<Communicator> {
        let me = self.me();
        let rank = members.iter().position(|&m| m == me)? as u32;
        Some(Communicator::new(
            self.rt.clone(),
            ctx,
            members.to_vec(),
            rank,
        ))
    }

    /// `MPI_Comm_create` (§7.4.2): a communicator of the processes of
    /// `group`, which must be members of this one; `None` for the other
    /// processes. Collective over this communicator; each process may pass
    /// a different group, as long as the groups of different processes
    /// are the same or disjoint (MPI 2.2's rule). On an
    /// inter-communicator, `group` is a subgroup of the local group, the
    /// same on all its processes, and the result an inter-communicator
    /// with the groups both sides passed; `None` for all if either is
    /// empty (§7.4.2).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a group with a process outside this
    /// communicator; those of the allreduce that agrees on the context.
    pub fn create(&self, group: &Group) -> Result<Option<Communicator>> {
        self.subgroup(group)?;
        if self.inter.is_some() {
            return self.inter_create(group);
        }
        let ctx = self.new_context()?;
        Ok(self.of_members(ctx, group.world_ranks()))
    }

    /// `MPI_Comm_create_group` (§7.4.2): as [`Communicator::create`], but
    /// collective only over the members of `group`: the others do not
    /// call it. Calls of overlapping groups that may run at the same time
    /// are told apart by `tag` (`0..=TAG_UB`). A process outside `group`
    /// gets `None` without communicating.
    ///
    /// The members agree on a context id by a reduction (maximum) to the
    /// group's first member and a broadcast back, both binomial trees, on
    /// this communicator's collective context under a tag of its own;
    /// each message carries `tag` next to the context id, and a message
    /// of another call (overlapping groups called in different orders)
    /// is an error, never taken for this one's.
    ///
    /// # Errors
    ///
    /// As for [`Communicator::create`]; [`Error::InvalidTag`];
    /// [`Error::InvalidCommunicator`] on an inter-communicator.
    pub fn create_group(&self, group: &Group, tag: i32) -> Result<Option<Communicator>> {
        self.intra_only("MPI_Comm_create_group")?;
        self.subgroup(group)?;
        if tag < 0 {
            return Err(Error::InvalidTag(tag));
        }
        let wire = crate::collective::TAG_CREATE_GROUP;
        let word = |ctx: u32| {
            let mut m = [0u8; 8];
            m[..4].copy_from_slice(&(tag as u32).to_le_bytes());
            m[4..].copy_from_slice(&ctx.to_le_bytes());
            m
        };
        let Some(sub) = self.of_members(self.context, group.world_ranks()) else {
            return Ok(None);
        };
        let (p, r) = (sub.members.len(), sub.rank as usize);
        let coll = self.context + 1;
        let mut best = self.rt.next_context.get();
        // Binomial reduce (max) to group rank 0.
        let mut mask = 1;
        while mask < p {
            if r & mask != 0 {
                sub.send_bytes(&word(best), (r - mask) as i32, wire, coll)?;
                break;
            }
            if r + mask < p {
                best = best.max(sub.recv_agreement(r + mask, tag as u32, coll)?);
            }
            mask <<= 1;
        }
        // Binomial broadcast back from group rank 0.
        let mut mask = p.next_power_of_two();
        if r != 0 {
            let low = 1 << r.trailing_zeros();
            best = sub.recv_agreement(r - low, tag as u32, coll)?;
            mask = low;
        }
        while mask > 1 {
            mask >>= 1;
            if r + mask < p {
                sub.send_bytes(&word(best), (r + mask) as i32, wire, coll)?;
            }
        }
        self.claim_contexts(best, 1)?;
        Ok(self.of_members(best, group.world_ranks()))
    }

    /// Receives `create_group`'s message from `rank` on `context`: the
    /// user's tag `tag` and a context id, which it returns.
    fn recv_agreement(&self, rank: usize, tag: u32, context: u32) -> Result<u32> {
        let world = self.world_rank(rank as i32)?;
        let sel = Selector {
            source: SourceSel::Rank(world),
            tag: TagSel::Tag(crate::collective::TAG_CREATE_GROUP),
            context,
        };
        let watch = Watch {
            members: self.members.clone(),
            me: self.me(),
            source: Some(world),
        };
        let mut b = [0u8; 8];
        let token = self.rt.with(|t| t.post_recv(sel, b.len()))?;
        let st = Request::recv(self.rt.clone(), token, RecvBuf::Copy(&mut b), watch).wait()?;
        if st.count_bytes() != b.len() {
            return Err(Error::InvalidArgument(format!(
                "a {}-byte message where a context id was expected",
                st.count_bytes()
            )));
        }
        let [t0, t1, t2, t3, c0, c1, c2, c3] = b;
        let theirs = u32::from_le_bytes([t0, t1, t2, t3]);
        if theirs != tag {
            return Err(Error::InvalidArgument(format!(
                "MPI_Comm_create_group with tag {tag} met one with tag {theirs} from rank \
                 {rank}: overlapping groups must call it in the same order"
            )));
        }
        Ok(u32::from_le_bytes([c0, c1, c2, c3]))
    }

    /// The first `n` members, in order, as a new communicator (`None` on
    /// the others): what `MPI_Cart_create` and `MPI_Graph_create` make
    /// (§8.5.1, §8.5.3) when they do not reorder. Collective.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidCommunicator`] on an inter-communicator (§8.1);
    /// [`Error::InvalidArgument`] if `n` is above the size; those of the
    /// allreduce that agrees on the context.
    pub fn create_first(&self, n: usize) -> Result<Option<Communicator>> {
        self.intra_only("a virtual topology")?;
        if n > self.members.len() {
            return Err(Error::InvalidArgument(format!(
                "{n} processes asked of a communicator of {}",
                self.members.len()
            )));
        }
        let ctx = self.new_context()?;
        Ok(self.of_members(ctx, &self.members[..n]))
    }

    /// `MPI_Comm_split_type` with `MPI_COMM_TYPE_SHARED` (§7.4.2): one
    /// communicator per host, the processes whose `host` (the host name)
    /// is the same, ordered by `key` then rank; `None` for a process that
    /// passes no host (`MPI_UNDEFINED`). Collective.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidCommunicator`] on an inter-communicator;
    /// [`Error::InvalidArgument`] for a host name of 256 bytes or more;
    /// those of the collectives.
    pub fn split_by_host(&self, host: Option<&str>, key: i32) -> Result<Option<Communicator>> {
        self.intra_only("MPI_Comm_split_type")?;
        const LEN: usize = 256;
        let mut mine = [0u8; LEN + 1];
        if let Some(h) = host {
            if h.len() >= LEN {
                return Err(Error::InvalidArgument(format!("host name {h:?} too long")));
            }
            mine[0] = 1;
            mine[1..=h.len()].copy_from_slice(h.as_bytes());
        }
        let mut all = vec![[0u8; LEN + 1]; self.members.len()];
        self.all_gather_into(&[mine], &mut all)?;
        let color = match host {
            None => Color::Undefined,
            Some(_) => Color::With(all.iter().position(|h| *h == mine).unwrap_or(0) as u32),
        };
        self.split(color, key)
    }

    /// Lets the library make progress (receive, send, advance nonblocking
    /// collectives), waiting at most `max_wait` for something to happen:
    /// what every wait does, for a caller that waits for something outside
    /// MPI, such as a generalized request (§13.2) another thread completes.
    ///
    /// # Errors
    ///
    /// Failures of the transport.
    pub fn poll(&self, max_wait: std::time::Duration) -> Result<()> {
        self.rt.progress(Some(max_wait))
    }

    /// `MPI_Abort` (§9.5): ends every process of the job with `code`.
    pub fn abort(&self, code: i32) -> ! {
        self.rt.abort(code, "MPI_Abort called")
    }
}
