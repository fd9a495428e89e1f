//! Schedules: how a nonblocking collective (§6.12) runs without blocking.
//!
//! A schedule is a list of rounds. A round posts nonblocking receives and
//! sends, all at once, and when every one of them has completed runs its
//! local steps (combining with the operation, copying) in order; then the
//! next round starts. The first round is posted when the collective
//! starts, so its messages go out at once; later rounds start whenever
//! the schedule is advanced: when its request is tested or waited for, and
//! whenever the process waits for anything else (every wait loop of
//! `request.rs` advances every live schedule of the process first, see
//! `Runtime::advance_schedules`), so a process blocked in another call
//! still forwards what a nonblocking collective has to pass on.
//!
//! The schedule owns all its memory: the caller's input is copied in when
//! it starts, and its results are copied out into the caller's buffer by
//! the request ([`Outcome`]) when it completes, never earlier. So the
//! runtime may keep a schedule that its request no longer references (a
//! request freed before completion, or leaked): it runs to the end, and
//! the other members are not left waiting, but writes nothing that is not
//! its own.
//!
//! Messages travel in the communicator's collective context with one tag
//! per collective, from the communicator's count of nonblocking
//! collectives: every member starts its collectives in the same order
//! (§6.12), so the counts agree, and collectives outstanding together
//! never match each other's messages, nor those of blocking collectives
//! (whose tags are small constants). Within a schedule the rounds of one
//! member run in order, and a round's messages between a pair of members
//! (at most one in most collectives; several in a neighborhood
//! collective, whose neighbours may repeat) match in the order they are
//! posted, as the sender posts its sends and the receiver its receives
//! (non-overtaking, §3.5).
//!
//! A schedule's peers are ranks of the one communicator it runs on. The
//! collectives of an inter-communicator (§6.2.2, `inter_nonblocking.rs`)
//! run theirs on its bridge, where the local group's ranks come first
//! and the remote group's follow, so one schedule addresses both groups
//! on the collective context `c + 1`; `Communicator::start_schedule`
//! refuses an inter-communicator itself, where the intra-communicator
//! algorithms must not run.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::ops::Range;
use std::rc::Rc;

use super::bad;
use crate::communicator::Communicator;
use crate::datatype::{as_bytes, Equivalence};
use crate::error::Result;
use crate::operation::Operation;
use crate::request::Request;

/// Items `range` of the schedule's buffer number `.0`.
pub(crate) type Span = (usize, Range<usize>);

/// The first tag of nonblocking collectives; below are the blocking ones.
const TAG_NONBLOCKING: u32 = 0x4000_0000;

/// A local step, run once its round's messages have all completed.
pub(crate) enum Local {
    /// `dst = src ∘ dst` with the schedule's operation (`src` is the left
    /// operand, the result of lower ranks).
    Apply { src: Span, dst: Span },
    /// `dst = src`.
    Copy { src: Span, dst: Span },
}

/// One round: receives and sends (with the peer's rank), then local steps.
#[derive(Default)]
pub(crate) struct Round {
    pub(crate) recvs: Vec<(Span, usize)>,
    pub(crate) sends: Vec<(Span, usize)>,
    pub(crate) then: Vec<Local>,
}

/// What a collective's schedule is made of before it starts.
pub(crate) struct Plan<T> {
    pub(crate) bufs: Vec<Vec<T>>,
    pub(crate) rounds: Vec<Round>,
}

impl<T: Equivalence> Plan<T> {
    pub(crate) fn new() -> Self {
        Self {
            bufs: Vec::new(),
            rounds: Vec::new(),
        }
    }

    /// Adds a buffer holding `init`; returns its number.
    pub(crate) fn buf(&mut self, init: Vec<T>) -> usize {
        self.bufs.push(init);
        self.bufs.len() - 1
    }

    /// Adds a buffer of `n` zero items.
    pub(crate) fn zeroed(&mut self, n: usize) -> usize {
        self.buf(crate::datatype::zeroed_vec(n))
    }

    /// Adds an empty round and returns it.
    pub(crate) fn round(&mut self) -> &mut Round {
        self.rounds.push(Round::default());
        self.rounds.last_mut().expect("just pushed")
    }
}

/// The buffers of a running schedule, as raw allocations: receives write
/// into them through the transport while sends and local steps read
/// other parts, so no reference to a whole buffer is ever made.
struct Buffers<T> {
    bufs: Vec<(*mut T, usize)>,
}

impl<T: Equivalence> Buffers<T> {
    fn new(bufs: Vec<Vec<T>>) -> Self {
        let bufs = bufs
            .into_iter()
            .map(|v| {
                let b = Box::into_raw(v.into_boxed_slice());
                (b.cast::<T>(), b.len())
            })
            .collect();
        Self { bufs }
    }

    /// The checked start and length of `span`.
    fn at(&self, span: &Span) -> Result<(*mut T, usize)> {
        let (ptr, len) = *self
            .bufs
            .get(span.0)
            .ok_or_else(|| bad(format!("schedule: no buffer {}", span.0)))?;
        if span.1.start > span.1.end || span.1.end > len {
            return Err(bad(format!("schedule: {:?} beyond {len} items", span.1)));
        }
        // SAFETY: `start <= len`, within (or one past) the allocation.
        Ok((unsafe { ptr.add(span.1.start) }, span.1.len()))
    }

    /// The items of `span`, to read.
    ///
    /// # Safety
    ///
    /// No receive pending into an overlapping span, and no `slice_mut`
    /// of one alive, while the slice lives.
    unsafe fn slice(&self, span: &Span) -> Result<&[T]> {
        let (p, n) = self.at(span)?;
        // SAFETY: within one live allocation of initialised items; no
        // writer meanwhile by this function's contract.
        Ok(unsafe { std::slice::from_raw_parts(p, n) })
    }

    /// The items of `span`, to write.
    ///
    /// # Safety
    ///
    /// No receive pending into an overlapping span, and no other slice of
    /// one alive, while the slice lives.
    #[allow(clippy::mut_from_ref)]
    unsafe fn slice_mut(&self, span: &Span) -> Result<&mut [T]> {
        let (p, n) = self.at(span)?;
        // SAFETY: as for `slice`, and exclusive by the contract.
        Ok(unsafe { std::slice::from_raw_parts_mut(p, n) })
    }
}

impl<T> Drop for Buffers<T> {
    fn drop(&mut self) {
        for &(p, n) in &self.bufs {
            // SAFETY: made by `Box::into_raw` of a boxed slice of `n`
            // items in `new`, freed only here, once.
            drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(p, n)) });
        }
    }
}

/// Whether two spans share an item.
fn overlap(a: &Span, b: &Span) -> bool {
    a.0 == b.0 && !a.1.is_empty() && !b.1.is_empty() && a.1.start < b.1.end && b.1.start < a.1.end
}

/// What the runtime advances: a schedule of any element type and
/// operation.
pub(crate) trait Advance {
    /// Advances as far as possible without waiting; `true` once finished
    /// (successfully or not).
    fn advance(&mut self) -> bool;
}

/// A started schedule.
pub(crate) struct Schedule<T, O> {
    /// The messages in flight, with the bytes each receive must bring
    /// (dropped before the buffers they write: see `Drop`).
    pending: Vec<(Request<'static>, Option<usize>)>,
    comm: Communicator,
    tag: u32,
    rounds: VecDeque<Round>,
    /// The local steps of the round in flight.
    then: Vec<Local>,
    op: O,
    outcome: Option<Result<()>>,
    bufs: Buffers<T>,
}

impl<T, O> Drop for Schedule<T, O> {
    fn drop(&mut self) {
        // Receives in flight write into `bufs`: release them first (a
        // release returns once the transport has let go of the memory).
        self.pending.clear();
    }
}

impl<T: Equivalence, O: Operation<T>> Schedule<T, O> {
    /// Posts the round in front.
    fn post(&mut self, round: &Round) -> Result<()> {
        for (i, (a, _)) in round.recvs.iter().enumerate() {
            if round.recvs[..i].iter().any(|(b, _)| overlap(a, b)) {
                return Err(bad("schedule: overlapping receives in one round".into()));
            }
        }
        let coll = self.comm.coll();
        for (span, peer) in &round.recvs {
            let (ptr, n) = self.bufs.at(span)?;
            let len = n * size_of::<T>();
            // SAFETY: `ptr..ptr + len` is within a buffer the schedule
            // owns and frees only after dropping `pending` (its `Drop`).
            // Nothing reads or writes it until the request completes:
            // the receives of a round do not overlap (checked above), its
            // sends copy their bytes when posted, and local steps run only
            // once every request of the round has completed. The request
            // is never leaked apart from its buffer: a schedule that is
            // leaked whole leaks the buffer too, which then stays valid.
            let req = unsafe {
                self.comm.irecv_bytes_direct(
                    ptr.cast::<u8>(),
                    len,
                    *peer as i32,
                    self.tag as i32,
                    coll,
                )
            }?;
            self.pending.push((req, Some(len)));
        }
        for (span, peer) in &round.sends {
            if round.recvs.iter().any(|(r, _)| overlap(span, r)) {
                return Err(bad("schedule: a send overlaps a receive".into()));
            }
            // SAFETY: no receive pending into it (checked just above; the
            // earlier rounds' have completed) and no slice_mut alive.
            let data = unsafe { self.bufs.slice(span) }?;
            let req = self
                .comm
                .isend_bytes(as_bytes(data), *peer as i32, self.tag, coll)?;
            self.pending.push((req, None));
        }
        Ok(())
    }

    /// Runs the local steps of the round that completed.
    fn run_locals(&mut self) -> Result<()> {
        for step in std::mem::take(&mut self.then) {
            let (src, dst) = match &step {
                Local::Apply { src, dst } | Local::Copy { src, dst } => (src, dst),
            };
            if overlap(src, dst) || src.1.len() != dst.1.len() {
                return Err(bad("schedule: local step on overlapping spans".into()));
            }
            // SAFETY: nothing is pending (locals run between rounds), and
            // the two spans do not overlap (checked above).
            let (a, b) = unsafe { (self.bufs.slice(src)?, self.bufs.slice_mut(dst)?) };
            match step {
                Local::Apply { .. } => self.op.apply(a, b),
                Local::Copy { .. } => b.copy_from_slice(a),
            }
        }
        Ok(())
    }

    /// One step of [`Advance::advance`]: `Ok(true)` when finished.
    fn step(&mut self) -> Result<bool> {
        loop {
            let mut failed = None;
            self.pending.retain_mut(|(req, want)| match req.check() {
                Ok(None) => true,
                Ok(Some(st)) => {
                    if want.is_some_and(|w| w != st.count_bytes()) {
                        failed = Some(bad(format!(
                            "nonblocking collective: {} bytes from rank {}, {} expected: \
                             the processes disagree on counts",
                            st.count_bytes(),
                            st.source_rank(),
                            want.unwrap_or_default()
                        )));
                    }
                    false
                }
                Err(e) => {
                    failed = Some(e);
                    false
                }
            });
            if let Some(e) = failed {
                return Err(e);
            }
            if !self.pending.is_empty() {
                return Ok(false);
            }
            self.run_locals()?;
            let Some(mut round) = self.rounds.pop_front() else {
                return Ok(true);
            };
            self.then = std::mem::take(&mut round.then);
            self.post(&round)?;
        }
    }
}

impl<T: Equivalence, O: Operation<T>> Advance for Schedule<T, O> {
    fn advance(&mut self) -> bool {
        if self.outcome.is_some() {
            return true;
        }
        match self.step() {
            Ok(false) => false,
            Ok(true) => {
                self.outcome = Some(Ok(()));
                true
            }
            Err(e) => {
                // Release what is still in flight.
                self.pending.clear();
                self.outcome = Some(Err(e));
                true
            }
        }
    }
}

/// The part of a nonblocking collective's request that its caller's
/// output buffer belongs to: when the schedule has finished, copies its
/// results out (`copies`: a schedule span into a range of `out`).
pub(crate) struct Outcome<'b, T, O> {
    schedule: Rc<RefCell<Schedule<T, O>>>,
    out: Option<&'b mut [T]>,
    copies: Vec<(Span, Range<usize>)>,
}

/// The interface of [`Outcome`] that a [`Request`] sees.
pub(crate) trait Pending {
    /// Advances the collective; `Ok(true)` once it has completed and its
    /// results are in the caller's buffer.
    fn poll(&mut self) -> Result<bool>;
}

impl<T: Equivalence, O: Operation<T>> Pending for Outcome<'_, T, O> {
    fn poll(&mut self) -> Result<bool> {
        let Ok(mut s) = self.schedule.try_borrow_mut() else {
            return Ok(false);
        };
        if !s.advance() {
            return Ok(false);
        }
        match s.outcome.take() {
            Some(Err(e)) => return Err(e),
            None => return Err(bad("nonblocking collective completed twice".into())),
            Some(Ok(())) => {}
        }
        let out = self.out.take();
        if let Some(out) = out {
            for (span, range) in &self.copies {
                let dst = out.get_mut(range.clone()).ok_or_else(|| {
                    bad(format!("nonblocking collective: {range:?} beyond output"))
                })?;
                // SAFETY: the schedule has finished: nothing is pending.
                let src = unsafe { s.bufs.slice(span) }?;
                if src.len() != dst.len() {
                    return Err(bad("nonblocking collective: output length".into()));
                }
                dst.copy_from_slice(src);
            }
        }
        Ok(true)
    }
}

impl Communicator {
    /// The tag of the next nonblocking collective on this communicator.
    fn next_nonblocking_tag(&self) -> u32 {
        let seq = self.rt.next_collective(self.context);
        TAG_NONBLOCKING | (seq & (TAG_NONBLOCKING - 1))
    }

    /// Starts `plan` with `op` as a request: posts its first round,
    /// hands the schedule to the runtime (which advances it whenever the
    /// process waits) and returns the request, which copies `copies` into
    /// `out` when the schedule finishes.
    pub(crate) fn start_schedule<'b, T: Equivalence, O: Operation<T> + 'static>(
        &self,
        plan: Plan<T>,
        op: O,
        out: Option<&'b mut [T]>,
        copies: Vec<(Span, Range<usize>)>,
    ) -> Result<Request<'b>> {
        self.intra_collective()?;
        let tag = self.next_nonblocking_tag();
        let mut s = Schedule {
            pending: Vec::new(),
            comm: self.handle(),
            tag,
            rounds: plan.rounds.into(),
            then: Vec::new(),
            op,
            outcome: None,
            bufs: Buffers::new(plan.bufs),
        };
        let finished = s.advance();
        if let Some(Err(e)) = s.outcome.take() {
            return Err(e);
        }
        if finished {
            s.outcome = Some(Ok(()));
        }
        let schedule = Rc::new(RefCell::new(s));
        if !finished {
            self.rt.add_schedule(schedule.clone());
        }
        let outcome = Outcome {
            schedule,
            out,
            copies,
        };
        Ok(Request::collective(self.rt.clone(), Box::new(outcome)))
    }
}

/// The operation of schedules that combine nothing.
pub(crate) struct NoOp;

impl<T> Operation<T> for NoOp {
    fn apply(&self, _: &[T], _: &mut [T]) {}
}
