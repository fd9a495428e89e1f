//! Inter-communicators (MPI 5.0 §7.6): two disjoint groups, the local one
//! this process belongs to and the remote one, where point-to-point ranks
//! name processes of the remote group.
//!
//! ```no_run
//! use mpi::Color;
//!
//! fn main() -> mpi::Result<()> {
//!     let universe = mpi::initialize()?;
//!     let world = universe.world();
//!     let color = world.rank() % 2;
//!     let local = world.split(Color::With(color as u32), 0)?.expect("a color");
//!     // Leaders: local rank 0 of each group, world ranks 0 and 1.
//!     let ic = local.intercomm_create(0, Some(&world), 1 - color, 99)?;
//!     // Rank 0 of the other group.
//!     ic.send(&[world.rank()], 0, 7)?;
//!     let mut got = [0];
//!     ic.recv(&mut got, mpi::ANY_SOURCE, 7)?;
//!     let all = ic.merge(color == 1)?; // evens first
//!     assert_eq!(all.size(), world.size());
//!     universe.finalize()
//! }
//! ```
//!
//! # Representation
//!
//! An inter-communicator is a [`Communicator`] whose `members` and `rank`
//! are its local group and this process's rank there (what
//! `MPI_Comm_size`, `MPI_Comm_rank` and `MPI_Comm_group` report), plus an
//! `Inter`: the remote group's world ranks, which point-to-point calls
//! map destinations and sources through (`Communicator::peers`), and an
//! intra-communicator of the local group with a context of its own, over
//! which the local group agrees on things (and runs the local halves of
//! collective algorithms).
//!
//! Both groups share the inter-communicator's contexts: `c` for
//! point-to-point messages and `c + 1` for the traffic between the
//! groups' leaders (and collectives between the groups); the local
//! intra-communicators of both groups use `c + 2`, which is safe as it is
//! for the groups of one split: a group only ever talks to itself there.
//! A process never sends on `c` to a member of its own group, so an
//! `MPI_ANY_SOURCE` receive only ever matches the remote group. On
//! `c + 1` only the nonblocking collectives' schedules do (their local
//! halves), each receive there naming its source and the schedule's own
//! tag.
//!
//! Traffic on `c + 1` goes through a *bridge* (`Communicator::bridge`):
//! an intra-communicator view of both groups, local group first, so that
//! remote rank `r` is bridge rank `local size + r`. Point-to-point code
//! refuses any context but `c` on the inter-communicator itself, so that
//! the collective algorithms written for intra-communicators fail there
//! instead of mixing up the groups.
//!
//! # Agreeing on contexts
//!
//! As for intra-communicators, a new context is one no participant has
//! used: the highest of everyone's lowest unused id. Each group finds its
//! own (an allreduce over its local communicator), the two leaders swap
//! theirs (and whatever else the call needs: group lists, colors), and
//! each leader broadcasts the larger, with the other side's data, over
//! its local communicator. Every constructor reserves two ids (`c` and
//! `c + 2`). A leader that fails broadcasts that it did, so its group
//! fails too instead of waiting.
//!
//! `MPI_Intercomm_create` swaps on the peer communicator's collective
//! context (never its point-to-point one, where a user's receive could
//! take the message), with the user's tag in the message: a message of
//! another call (two leaders calling in different orders) is an error,
//! never taken for this one's. `MPI_Intercomm_create_from_groups` has no
//! parent communicator: it makes the local group's communicator with
//! `MPI_Comm_create_group` over `MPI_COMM_WORLD` (whose processes every
//! group holds, there being no dynamic processes), then proceeds as
//! `MPI_Intercomm_create` with `MPI_COMM_WORLD` as the peer, its string
//! tag hashed to an integer one.
//!
//! The collectives barrier, bcast, reduce, allreduce, reduce_scatter(_block),
//! gather(v), scatter(v), allgather(v) and alltoall(v/w) work on
//! inter-communicators (§6.2.2), blocking (`collective/inter.rs`) and
//! nonblocking (`collective/inter_nonblocking.rs`), rooted ones with
//! [`ROOT`] and [`PROC_NULL`]; scan and exscan, blocking or not, are
//! undefined there and fail with `NOT_PROVIDED`, as do the neighborhood
//! collectives.

use std::rc::Rc;

use crate::communicator::Communicator;
use crate::datatype::{as_bytes, as_bytes_mut};
use crate::error::{Error, Result};
use crate::group::Group;

/// `MPI_ROOT` (§6.2.2): the root argument of the root of a rooted
/// collective on an inter-communicator (the other processes of its group
/// pass [`PROC_NULL`], those of the other group the root's rank).
pub const ROOT: i32 = -4;
/// `MPI_PROC_NULL` as the root argument of a rooted collective on an
/// inter-communicator: a process of the root's group other than the
/// root, which takes no part (§6.2.2).
pub const PROC_NULL: i32 = -3;

/// Why a collective on an inter-communicator fails.
pub(crate) const NOT_PROVIDED: &str =
    "this collective operation is not provided on inter-communicators";

/// The leaders' tags on collective contexts: above the collectives' small
/// ones (`collective/mod.rs`), below the nonblocking collectives' range
/// (bit 30) and the synchronous acknowledgements' (bit 31).
const TAG_INTERCOMM_CREATE: u32 = 0x2000_0001;
const TAG_AGREE: u32 = 0x2000_0002;

/// What an inter-communicator has beyond an intra-communicator.
pub(crate) struct Inter {
    /// World rank of each process of the remote group, by remote rank.
    pub(crate) remote: Rc<[u32]>,
    /// The local group, then the remote group: the bridge's members.
    both: Rc<[u32]>,
    /// The local group as an intra-communicator, context `c + 2`.
    pub(crate) local: Communicator,
}

/// A leader's word to the other leader, or to its group, that it failed.
const FAILED: u32 = u32::MAX;

fn bad(msg: String) -> Error {
    Error::InvalidArgument(msg)
}

/// A tag of `0..=i32::MAX` for the string tag of
/// `MPI_Intercomm_create_from_groups` or `MPI_Comm_create_from_group`
/// (§7.6.2, §7.4.2), as [`Communicator::create_group`] takes it: the
/// FNV-1a hash of its bytes, top bit cleared, so equal strings give
/// equal tags on every process.
pub fn string_tag(tag: &str) -> i32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in tag.bytes() {
        h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
    }
    (h & 0x7fff_ffff) as i32
}

/// Sends `out` to `peer` of `view` and receives at most `max` words from
/// it, both on `context` with `tag`.
fn swap(
    view: &Communicator,
    out: &[u32],
    peer: i32,
    tag: u32,
    context: u32,
    max: usize,
) -> Result<Vec<u32>> {
    let send = view.isend_bytes(as_bytes(out), peer, tag, context)?;
    let mut got = vec![0u32; max];
    let st = view.recv_bytes(as_bytes_mut(&mut got), peer, tag as i32, context)?;
    send.wait()?;
    let n = st.count_bytes();
    if n % 4 != 0 || n < 4 {
        return Err(bad(format!(
            "a {n}-byte message where the other leader's words were expected"
        )));
    }
    got.truncate(n / 4);
    Ok(got)
}

/// The words of a broadcast after a leader's exchange: `[FAILED]` or
/// `[context, len, payload...]`, padded to `2 + max`.
fn outcome(r: &Result<(u32, Vec<u32>)>, max: usize) -> Vec<u32> {
    let mut msg = vec![0u32; 2 + max];
    match r {
        Ok((ctx, payload)) => {
            msg[0] = *ctx;
            msg[1] = payload.len() as u32;
            msg[2..2 + payload.len()].copy_from_slice(payload);
        }
        Err(_) => msg[1] = FAILED,
    }
    msg
}

/// Reads what [`outcome`] wrote.
fn parse(msg: &[u32]) -> Result<(u32, Vec<u32>)> {
    match msg[1] {
        FAILED => Err(bad(
            "the group's leader failed to set up the inter-communicator".to_owned(),
        )),
        n => Ok((msg[0], msg[2..2 + n as usize].to_vec())),
    }
}

/// Checks that `theirs` has no process of `ours`: the groups of an
/// inter-communicator are disjoint (§7.6.2).
fn disjoint(ours: &[u32], theirs: &[u32]) -> Result<()> {
    match theirs.iter().find(|w| ours.contains(w)) {
        Some(w) => Err(bad(format!(
            "world rank {w} is in both groups of the inter-communicator"
        ))),
        None => Ok(()),
    }
}

impl Communicator {
    /// An inter-communicator of local group `local` (world ranks; this
    /// process has `rank` there) and remote group `remote`, on contexts
    /// `ctx` (and `ctx + 1`) and `ctx + 2` for the local communicator.
    fn new_inter(&self, ctx: u32, local: Vec<u32>, rank: u32, remote: Vec<u32>) -> Communicator {
        let both: Vec<u32> = local.iter().chain(&remote).copied().collect();
        let local = Communicator::new(self.rt.clone(), ctx + 2, local, rank);
        Communicator {
            rt: self.rt.clone(),
            context: ctx,
            members: local.members.clone(),
            rank,
            inter: Some(Rc::new(Inter {
                remote: remote.into(),
                both: both.into(),
                local,
            })),
        }
    }

    /// The inter-communicator part, or an error naming `what`.
    fn inter_part(&self, what: &str) -> Result<&Inter> {
        self.inter.as_deref().ok_or_else(|| {
            Error::InvalidCommunicator(format!(
                "{what} needs an inter-communicator, not an intra-communicator"
            ))
        })
    }

    /// An intra-communicator view of both groups of this
    /// inter-communicator, local group first, on its contexts: remote
    /// rank `r` is rank `size + r` there. For the traffic between the
    /// groups on the collective context `context + 1`.
    pub(crate) fn bridge(&self) -> Option<Communicator> {
        let inter = self.inter.as_ref()?;
        Some(Communicator {
            rt: self.rt.clone(),
            context: self.context,
            members: inter.both.clone(),
            rank: self.rank,
            inter: None,
        })
    }

    /// The view to talk to `rank` of this communicator on its collective
    /// context with, and `rank` there.
    fn view_of(&self, rank: i32) -> Result<(Communicator, i32)> {
        self.world_rank(rank)?;
        match self.bridge() {
            Some(b) => Ok((b, self.size() + rank)),
            None => Ok((self.handle(), rank)),
        }
    }

    /// Fails on an inter-communicator, where the collective algorithms
    /// written for intra-communicators must not run (§6.2.2).
    pub(crate) fn intra_collective(&self) -> Result<()> {
        match self.inter {
            None => Ok(()),
            Some(_) => Err(Error::InvalidCommunicator(NOT_PROVIDED.to_owned())),
        }
    }

    /// `MPI_Comm_test_inter` (§7.6.1): whether this is an
    /// inter-communicator.
    pub fn is_inter(&self) -> bool {
        self.inter.is_some()
    }

    /// `MPI_Comm_remote_size` (§7.6.1): the size of the remote group;
    /// `None` for an intra-communicator.
    pub fn remote_size(&self) -> Option<i32> {
        self.inter.as_ref().map(|i| i.remote.len() as i32)
    }

    /// `MPI_Comm_remote_group` (§7.6.1): the remote group; `None` for an
    /// intra-communicator.
    pub fn remote_group(&self) -> Option<Group> {
        let inter = self.inter.as_ref()?;
        Group::new(inter.remote.to_vec(), self.me()).ok()
    }

    /// `MPI_Intercomm_create` (§7.6.2): the inter-communicator between
    /// this intra-communicator's group (the local group) and the group of
    /// another one, whose leader is `remote_leader` in `peer`. Collective
    /// over both groups; the processes of each pass the same
    /// `local_leader` (their own leader's rank here), and the leaders
    /// pass `peer`, a communicator holding both of them (others may pass
    /// `None`), the remote leader's rank in it, and the same `tag`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidCommunicator`] on an inter-communicator;
    /// [`Error::InvalidArgument`] for a group that shares a process with
    /// the other, or for a leader without `peer`; [`Error::InvalidRank`] for a leader out of range;
    /// [`Error::InvalidTag`]; those of the collectives and of the leaders'
    /// exchange (a tag that differs from the other leader's included).
    pub fn intercomm_create(
        &self,
        local_leader: i32,
        peer: Option<&Communicator>,
        remote_leader: i32,
        tag: i32,
    ) -> Result<Communicator> {
        self.intra_only("MPI_Intercomm_create's local communicator")?;
        if tag < 0 {
            return Err(Error::InvalidTag(tag));
        }
        if !(0..self.size()).contains(&local_leader) {
            return Err(Error::InvalidRank {
                rank: local_leader,
                size: self.size(),
            });
        }
        let proposal = self.max_next_context()?;
        let max = self.rt.size as usize;
        let mut msg = if self.rank() == local_leader {
            let swapped = peer
                .ok_or_else(|| bad("the local leader needs the peer communicator".to_owned()))
                .and_then(|p| self.leaders_swap(p, remote_leader, tag, proposal));
            let msg = outcome(&swapped, max);
            if let Err(e) = swapped {
                self.broadcast_into(&mut msg.clone(), local_leader)?;
                return Err(e);
            }
            msg
        } else {
            vec![0u32; 2 + max]
        };
        self.broadcast_into(&mut msg, local_leader)?;
        let (ctx, remote) = parse(&msg)?;
        disjoint(&self.members, &remote)?;
        self.claim_contexts(ctx, 2)?;
        Ok(self.new_inter(ctx, self.members.to_vec(), self.rank, remote))
    }

    /// The local leader's half of `MPI_Intercomm_create`: swaps `tag`,
    /// its group's context proposal and its group with the remote leader
    /// over `peer`; returns the context both will use and the remote
    /// group.
    fn leaders_swap(
        &self,
        peer: &Communicator,
        remote_leader: i32,
        tag: i32,
        proposal: u32,
    ) -> Result<(u32, Vec<u32>)> {
        let (view, dest) = peer.view_of(remote_leader)?;
        if view.world_rank(dest)? == self.me() {
            return Err(bad(
                "the remote leader is the local leader itself".to_owned()
            ));
        }
        let mut out = vec![tag as u32, proposal, self.members.len() as u32];
        out.extend_from_slice(&self.members);
        let max = 3 + self.rt.size as usize;
        let context = view.context + 1;
        let got = swap(&view, &out, dest, TAG_INTERCOMM_CREATE, context, max)?;
        if got.len() < 3 {
            return Err(bad("a short message from the remote leader".to_owned()));
        }
        let (theirs, their_proposal, n, list) = (got[0], got[1], got[2], &got[3..]);
        if theirs != tag as u32 {
            return Err(bad(format!(
                "MPI_Intercomm_create with tag {tag} met one with tag {theirs} from the \
                 remote leader: the leaders must call it in the same order"
            )));
        }
        if list.len() != n as usize || list.is_empty() {
            return Err(bad(format!(
                "the remote leader sent a group of {} processes, {n} announced",
                list.len()
            )));
        }
        Ok((proposal.max(their_proposal), list.to_vec()))
    }

    /// Agrees with both groups of this inter-communicator on two fresh
    /// contexts (`c` and `c + 2`) and swaps `mine`, significant at the
    /// local leader (local rank 0), for what the remote leader passed, of
    /// at most `max` words; returns `c` and those words. Collective over
    /// both groups.
    fn agree_across(&self, mine: &[u32], max: usize) -> Result<(u32, Vec<u32>)> {
        let inter = self.inter_part("an inter-communicator constructor")?;
        let local = &inter.local;
        let proposal = local.max_next_context()?;
        let mut msg = if local.rank == 0 {
            let swapped = self.leader_agree(mine, max, proposal);
            let msg = outcome(&swapped, max);
            if let Err(e) = swapped {
                local.broadcast_into(&mut msg.clone(), 0)?;
                return Err(e);
            }
            msg
        } else {
            vec![0u32; 2 + max]
        };
        local.broadcast_into(&mut msg, 0)?;
        let (ctx, theirs) = parse(&msg)?;
        self.claim_contexts(ctx, 2)?;
        Ok((ctx, theirs))
    }

    /// The local leader's half of [`Communicator::agree_across`].
    fn leader_agree(&self, mine: &[u32], max: usize, proposal: u32) -> Result<(u32, Vec<u32>)> {
        let bridge = self
            .bridge()
            .ok_or_else(|| Error::InvalidCommunicator(NOT_PROVIDED.to_owned()))?;
        let mut out = vec![proposal];
        out.extend_from_slice(mine);
        let context = bridge.context + 1;
        let got = swap(&bridge, &out, self.size(), TAG_AGREE, context, 1 + max)?;
        Ok((proposal.max(got[0]), got[1..].to_vec()))
    }

    /// `MPI_Comm_dup` of an inter-communicator (§7.6.2).
    pub(crate) fn inter_dup(&self) -> Result<Communicator> {
        let inter = self.inter_part("inter_dup")?;
        let (ctx, _) = self.agree_across(&[], 0)?;
        let remote = inter.remote.to_vec();
        Ok(self.new_inter(ctx, self.members.to_vec(), self.rank, remote))
    }

    /// `MPI_Comm_split` of an inter-communicator (§7.6.2): `color` −1 is
    /// `MPI_UNDEFINED`.
    pub(crate) fn inter_split(&self, color: i64, key: i32) -> Result<Option<Communicator>> {
        let inter = self.inter_part("inter_split")?;
        // (color, key) of every local process, as words: color u32::MAX
        // for MPI_UNDEFINED.
        let word = |c: i64| if c < 0 { u32::MAX } else { c as u32 };
        let mut all = vec![[0u32; 2]; self.members.len()];
        inter
            .local
            .all_gather_into(&[[word(color), key as u32]], &mut all)?;
        let mine: Vec<u32> = all.iter().flatten().copied().collect();
        let (ctx, theirs) = self.agree_across(&mine, 2 * inter.remote.len())?;
        if theirs.len() != 2 * inter.remote.len() {
            return Err(bad(format!(
                "the remote group sent {} split words, {} expected",
                theirs.len(),
                2 * inter.remote.len()
            )));
        }
        if color < 0 {
            return Ok(None);
        }
        // The processes of `table` with this color, by key then rank.
        let pick = |table: &[u32], words: &[u32]| -> Vec<u32> {
            let mut chosen: Vec<(i32, usize)> = words
                .chunks_exact(2)
                .enumerate()
                .filter(|(_, w)| w[0] == word(color))
                .map(|(r, w)| (w[1] as i32, r))
                .collect();
            chosen.sort_unstable();
            chosen.iter().map(|&(_, r)| table[r]).collect()
        };
        let local = pick(&self.members, &mine);
        let remote = pick(&inter.remote, &theirs);
        if remote.is_empty() {
            return Ok(None);
        }
        let me = self.me();
        let rank = local.iter().position(|&w| w == me).unwrap_or_default() as u32;
        Ok(Some(self.new_inter(ctx, local, rank, remote)))
    }

    /// `MPI_Comm_create` of an inter-communicator (§7.4.2): `group` is a
    /// subgroup of the local group, checked by the caller.
    pub(crate) fn inter_create(&self, group: &Group) -> Result<Option<Communicator>> {
        let inter = self.inter_part("inter_create")?;
        let (ctx, theirs) = self.agree_across(group.world_ranks(), inter.remote.len())?;
        if let Some(w) = theirs.iter().find(|w| !inter.remote.contains(w)) {
            return Err(bad(format!(
                "the remote group's MPI_Comm_create group holds world rank {w}, \
                 not a member of it"
            )));
        }
        let me = self.me();
        let Some(rank) = group.world_ranks().iter().position(|&w| w == me) else {
            return Ok(None);
        };
        if theirs.is_empty() {
            return Ok(None);
        }
        let local = group.world_ranks().to_vec();
        Ok(Some(self.new_inter(ctx, local, rank as u32, theirs)))
    }

    /// `MPI_Intercomm_merge` (§7.6.2): the intra-communicator of both
    /// groups, the group whose processes pass `high` false first (the
    /// processes of a group pass the same value); if both pass the same,
    /// the group whose first process has the lower world rank first.
    /// Collective over both groups.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidCommunicator`] on an intra-communicator; those of
    /// the collectives and of the leaders' exchange.
    pub fn merge(&self, high: bool) -> Result<Communicator> {
        let inter = self.inter_part("MPI_Intercomm_merge")?;
        let (ctx, theirs) = self.agree_across(&[u32::from(high)], 1)?;
        let their_high = theirs.first().is_some_and(|&h| h != 0);
        let local_first = if high == their_high {
            self.members[0] < inter.remote[0]
        } else {
            !high
        };
        let (first, second) = if local_first {
            (&self.members, &inter.remote)
        } else {
            (&inter.remote, &self.members)
        };
        let all: Vec<u32> = first.iter().chain(second.iter()).copied().collect();
        let rank = all.iter().position(|&w| w == self.me()).unwrap_or_default() as u32;
        Ok(Communicator::new(self.rt.clone(), ctx, all, rank))
    }

    /// `MPI_Intercomm_create_from_groups` (§7.6.2) without the Sessions
    /// model: the inter-communicator between `local` (this process's
    /// group, leader `local_leader` there) and `remote` (leader
    /// `remote_leader` there), which must both be groups of processes of
    /// this communicator (`MPI_COMM_WORLD`, which holds every process).
    /// Collective over both groups, which pass the same `tag`; nothing is
    /// sent to the other processes of this communicator.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] if this process is not in `local`, or
    /// as for [`Communicator::create_group`] and
    /// [`Communicator::intercomm_create`].
    pub fn intercomm_create_from_groups(
        &self,
        local: &Group,
        local_leader: i32,
        remote: &Group,
        remote_leader: i32,
        tag: &str,
    ) -> Result<Communicator> {
        self.intra_only("MPI_Intercomm_create_from_groups")?;
        self.subgroup(remote)?;
        let tag = string_tag(tag);
        let lc = self
            .create_group(local, tag)?
            .ok_or_else(|| bad("the calling process is not in the local group".to_owned()))?;
        let leader_world = usize::try_from(remote_leader)
            .ok()
            .and_then(|r| remote.world_ranks().get(r).copied())
            .ok_or_else(|| Error::InvalidRank {
                rank: remote_leader,
                size: remote.size(),
            })?;
        // In this communicator: `subgroup` checked it is there.
        let leader = self
            .members
            .iter()
            .position(|&w| w == leader_world)
            .map_or(-1, |r| r as i32);
        lc.intercomm_create(local_leader, Some(self), leader, tag)
    }
}

#[cfg(test)]
mod tests {
    use super::{outcome, parse, string_tag, FAILED};

    #[test]
    fn string_tags_are_stable_and_non_negative() {
        assert_eq!(string_tag("a"), string_tag("a"));
        assert_ne!(string_tag("left"), string_tag("right"));
        assert!((0..100).all(|i| string_tag(&i.to_string()) >= 0));
        assert!(["", "x", "\u{ff}"].iter().all(|s| string_tag(s) >= 0));
        // FNV-1a of the empty string, top bit cleared.
        assert_eq!(string_tag(""), 0x011c_9dc5);
    }

    #[test]
    fn a_leaders_outcome_reads_back() {
        let msg = outcome(&Ok((42, vec![7, 8, 9])), 5);
        assert_eq!(msg.len(), 7);
        assert_eq!(parse(&msg).unwrap(), (42, vec![7, 8, 9]));
        let failed = outcome(&Err(super::bad("x".into())), 3);
        assert_eq!(failed[1], FAILED);
        assert!(parse(&failed).is_err());
    }
}
