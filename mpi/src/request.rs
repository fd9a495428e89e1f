//! Nonblocking requests and their completion (MPI 4.1 §3.7, §3.8.4).
//!
//! A [`Request<'buf>`] borrows the buffer of the operation it stands for,
//! so the borrow checker forbids touching a receive buffer before the
//! request completes (what MPI can only ask for in prose, §3.7.2).
//! Received bytes are copied into the buffer when the request completes,
//! never earlier, which keeps leaking a request (`mem::forget`) harmless:
//! the library holds no pointer into user memory. The one exception is a
//! blocking receive ([`Communicator::recv`](crate::Communicator::recv)),
//! whose request never leaves the library: the transport may write its
//! payload straight into the buffer (`RecvBuf::InPlace`). A request dropped
//! before completion is released: a pending receive is cancelled (or its
//! data discarded), a pending send still goes out.

use std::cell::Cell;
use std::marker::PhantomData;
use std::rc::Rc;

use crate::collective::schedule::Pending;
use crate::environment::Runtime;
use crate::error::{Error, Result};
use crate::point_to_point::Status;
use crate::scope::{self, Lent, Scope};
use crate::transport::{RecvOutcome, RecvToken, SendToken};

/// The rank a [`RecvOutcome::Failed`] names when no single peer is to
/// blame: a receive from any source that no live peer is left to match.
pub(crate) const NO_RANK: u32 = u32::MAX;

/// Which peers a receive depends on, to fail it when they die, and the
/// communicator its status reports ranks in.
pub(crate) struct Watch {
    /// The communicator's members by world rank: messages carry world
    /// ranks, statuses report the sender's rank in the communicator.
    pub(crate) members: Rc<[u32]>,
    /// This process's world rank.
    pub(crate) me: u32,
    /// The source's world rank; `None` for `MPI_ANY_SOURCE`, which fails
    /// only when all members but this process are gone.
    pub(crate) source: Option<u32>,
}

impl Watch {
    /// The communicator rank of world rank `world` (`-1` if not a member,
    /// which the transports never deliver).
    pub(crate) fn comm_rank(members: &[u32], world: u32) -> i32 {
        members
            .iter()
            .position(|&m| m == world)
            .map_or(-1, |r| r as i32)
    }

    /// A dead peer this receive can no longer be satisfied without.
    fn dead_peer(&self, t: &dyn crate::transport::Transport) -> Option<(u32, String)> {
        if let Some(w) = self.source {
            return t.peer_failure(w).map(|r| (w, r));
        }
        let mut why = None;
        for &w in self.members.iter().filter(|&&w| w != self.me) {
            why = Some((w, t.peer_failure(w)?));
        }
        why
    }
}

/// Where a receive's bytes go.
pub(crate) enum RecvBuf<'buf> {
    /// Copied here when the receive completes.
    Copy(&'buf mut [u8]),
    /// The transport writes the `len` bytes of the caller's buffer itself
    /// (`post_recv_in_place`); only the borrow is kept, no reference, as
    /// the transport's contract asks. Dropping the request before it
    /// completes waits until the transport has let go.
    InPlace {
        len: usize,
        _borrow: PhantomData<&'buf mut [u8]>,
    },
}

impl<'buf> RecvBuf<'buf> {
    /// The destination of a receive posted with `post_recv_in_place`.
    pub(crate) fn in_place(len: usize) -> Self {
        Self::InPlace {
            len,
            _borrow: PhantomData,
        }
    }

    fn len(&self) -> usize {
        match self {
            Self::Copy(b) => b.len(),
            Self::InPlace { len, .. } => *len,
        }
    }
}

enum State<'buf> {
    Send(SendToken),
    Recv {
        token: RecvToken,
        buf: RecvBuf<'buf>,
        watch: Watch,
    },
    /// A synchronous-mode send: complete once its data went out and the
    /// receiver's acknowledgement arrived (see `synchronous.rs`).
    Sync {
        send: Box<Request<'buf>>,
        ack: Box<Request<'static>>,
    },
    /// A send and a receive together (`MPI_Isendrecv`): complete once
    /// both are, with the receive's status.
    SendRecv {
        send: Box<Request<'buf>>,
        recv: Box<Request<'buf>>,
    },
    /// A nonblocking collective (`collective/schedule.rs`).
    Collective(Box<dyn Pending + 'buf>),
    /// An operation with a continuation ([`Request::then`]): `then` runs
    /// once `inner` completes, with the bytes it received. `inner` is
    /// declared first so that it is dropped first: `then` may own the
    /// memory `inner` uses.
    Then {
        inner: Box<Request<'buf>>,
        then: Option<Box<dyn FnOnce(usize) + 'buf>>,
    },
    Done(Status),
}

/// A pending nonblocking operation (`MPI_Request`), borrowing its buffer
/// for `'buf`.
#[must_use = "a request must be waited for or tested to learn its outcome"]
pub struct Request<'buf> {
    rt: Rc<Runtime>,
    state: State<'buf>,
    /// For an operation of a [`crate::scope::Scope`]: set once the
    /// transport no longer holds its token.
    scoped: Option<Rc<Cell<bool>>>,
}

impl<'buf> Request<'buf> {
    pub(crate) fn send(rt: Rc<Runtime>, token: SendToken) -> Self {
        Self {
            rt,
            state: State::Send(token),
            scoped: None,
        }
    }

    pub(crate) fn recv(
        rt: Rc<Runtime>,
        token: RecvToken,
        buf: RecvBuf<'buf>,
        watch: Watch,
    ) -> Self {
        Self {
            rt,
            state: State::Recv { token, buf, watch },
            scoped: None,
        }
    }

    /// A synchronous-mode send: `send` carries the marked message, `ack`
    /// receives the acknowledgement.
    pub(crate) fn sync(send: Self, ack: Request<'static>) -> Self {
        Self {
            rt: send.rt.clone(),
            state: State::Sync {
                send: Box::new(send),
                ack: Box::new(ack),
            },
            scoped: None,
        }
    }

    /// A send and a receive as one request, with the receive's status.
    pub(crate) fn send_recv(send: Self, recv: Self) -> Self {
        Self {
            rt: send.rt.clone(),
            state: State::SendRecv {
                send: Box::new(send),
                recv: Box::new(recv),
            },
            scoped: None,
        }
    }

    /// A request that is already complete with `status`.
    pub(crate) fn done(rt: Rc<Runtime>, status: Status) -> Self {
        Self {
            rt,
            state: State::Done(status),
            scoped: None,
        }
    }

    pub(crate) fn collective(rt: Rc<Runtime>, c: Box<dyn Pending + 'buf>) -> Self {
        Self {
            rt,
            state: State::Collective(c),
            scoped: None,
        }
    }

    /// This request with `then` run when it completes, before the
    /// completion is reported, with the bytes received (the buffer's
    /// length for a truncated receive, 0 for a send, a failed or a
    /// cancelled operation). A request dropped before it completes drops
    /// `then` without running it, after releasing the operation: `then`
    /// may own the memory the operation uses (a packed send buffer, a
    /// staging buffer to unpack).
    pub fn then(self, then: Box<dyn FnOnce(usize) + 'buf>) -> Self {
        Self {
            rt: self.rt.clone(),
            state: State::Then {
                inner: Box::new(self),
                then: Some(then),
            },
            scoped: None,
        }
    }

    /// Makes this an operation of `scope`, which releases it if it is
    /// still pending when the scope ends.
    pub(crate) fn in_scope(mut self, scope: &Scope<'_>) -> Self {
        let op = match self.state {
            State::Send(token) => Lent::Send(token),
            State::Recv { token, .. } => Lent::Recv(token),
            // Only standard sends and receives are ever scoped.
            State::Sync { .. }
            | State::SendRecv { .. }
            | State::Done(_)
            | State::Then { .. }
            | State::Collective(_) => return self,
        };
        self.scoped = Some(scope.register(self.rt.clone(), op));
        self
    }

    fn finish(&mut self, status: Status) {
        self.state = State::Done(status);
        scope::settle(&self.scoped);
    }

    /// One completion check without waiting; `Some` once complete.
    pub(crate) fn check(&mut self) -> Result<Option<Status>> {
        let done = match &mut self.state {
            State::Done(s) => return Ok(Some(*s)),
            State::Then { inner, then } => {
                let r = inner.check();
                let bytes = match &r {
                    Ok(None) => return Ok(None),
                    Ok(Some(s)) => s.count_bytes(),
                    Err(Error::Truncated { capacity, .. }) => *capacity,
                    Err(_) => 0,
                };
                if let Some(f) = then.take() {
                    f(bytes);
                }
                match r {
                    Ok(Some(s)) => s,
                    Ok(None) => unreachable!("returned above"),
                    Err(e) => {
                        self.finish(Status::empty());
                        return Err(e);
                    }
                }
            }
            State::Collective(c) => match c.poll() {
                Ok(false) => return Ok(None),
                Ok(true) => Status::empty(),
                Err(e) => {
                    self.finish(Status::empty());
                    return Err(e);
                }
            },
            State::Send(token) => {
                let token = *token;
                if !self.rt.with(|t| t.test_send(token))? {
                    return Ok(None);
                }
                Status::empty()
            }
            State::SendRecv { send, recv } => {
                let both = send.check().and_then(|s| Ok((s, recv.check()?)));
                match both {
                    Ok((Some(_), Some(status))) => status,
                    Ok(_) => return Ok(None),
                    Err(e) => {
                        self.finish(Status::empty());
                        return Err(e);
                    }
                }
            }
            State::Sync { send, ack } => {
                let both = send.check().and_then(|s| Ok((s, ack.check()?)));
                match both {
                    Ok((Some(_), Some(_))) => Status::empty(),
                    Ok(_) => return Ok(None),
                    Err(e) => {
                        self.finish(Status::empty());
                        return Err(e);
                    }
                }
            }
            State::Recv { token, buf, watch } => {
                let token = *token;
                let outcome = self.rt.with(|t| {
                    if let Some(o) = t.test_recv(token) {
                        return Ok(Some(o));
                    }
                    // Nothing more can arrive from dead peers.
                    match watch.dead_peer(t) {
                        Some((rank, reason)) if t.cancel_recv(token) => {
                            let _ = t.test_recv(token);
                            Err(Error::PeerGone { rank, reason })
                        }
                        _ => Ok(None),
                    }
                });
                let outcome = match outcome {
                    Ok(Some(o)) => o,
                    Ok(None) => return Ok(None),
                    Err(e) => {
                        self.finish(Status::empty());
                        return Err(e);
                    }
                };
                let (finished, spent) = finish_recv(outcome, buf, &watch.members);
                if let Some(spent) = spent {
                    // The transport may reuse the buffer for a later receive.
                    let _ = self.rt.with(|t| {
                        t.recycle(spent);
                        Ok(())
                    });
                }
                self.finish(Status::empty());
                finished?
            }
        };
        self.finish(done);
        Ok(Some(done))
    }

    /// `MPI_Test` (§3.7.3): the status if the operation has completed,
    /// `None` if not, after one round of progress without waiting.
    ///
    /// # Errors
    ///
    /// [`Error::Truncated`], [`Error::PeerGone`] and transport errors; the
    /// request is then complete.
    pub fn test(&mut self) -> Result<Option<Status>> {
        if let Some(s) = self.check()? {
            return Ok(Some(s));
        }
        self.rt.progress(Some(std::time::Duration::ZERO))?;
        self.check()
    }

    /// `MPI_Wait` (§3.7.3): blocks until the operation completes.
    ///
    /// # Errors
    ///
    /// As for [`Request::test`]; a receive whose sender died fails instead
    /// of waiting forever.
    pub fn wait(mut self) -> Result<Status> {
        loop {
            if let Some(s) = self.check()? {
                return Ok(s);
            }
            self.rt.progress(None)?;
        }
    }

    /// `MPI_Cancel` (§3.8.4) of a receive: if it has not matched yet it
    /// completes with [`Status::is_cancelled`]; otherwise it completes
    /// normally. Sends are not cancelled (MPI 4.1 deprecates that).
    ///
    /// # Errors
    ///
    /// Only after finalize.
    pub fn cancel(&mut self) -> Result<()> {
        if let State::Then { inner, .. } = &mut self.state {
            inner.cancel()?;
            self.check()?;
            return Ok(());
        }
        if let State::Recv { token, .. } = self.state {
            if self.rt.with(|t| Ok(t.cancel_recv(token)))? {
                self.check()?;
            }
        }
        Ok(())
    }
}

/// Copies a completed receive into the caller's buffer (unless it is
/// there already); also hands back the transport's buffer the data came in.
fn finish_recv(
    outcome: RecvOutcome,
    buf: &mut RecvBuf<'_>,
    members: &[u32],
) -> (Result<Status>, Option<Vec<u8>>) {
    match outcome {
        RecvOutcome::Cancelled => (
            Ok(Status {
                cancelled: true,
                ..Status::empty()
            }),
            None,
        ),
        // A receive from any source that no live peer can match.
        RecvOutcome::Failed {
            rank: NO_RANK,
            reason,
        } => (Err(Error::Deadlock(reason)), None),
        RecvOutcome::Failed { rank, reason } => (Err(Error::PeerGone { rank, reason }), None),
        RecvOutcome::Done {
            envelope,
            len,
            data,
        } => {
            // A matched probe's receive takes the whole message, which
            // may not fit the buffer its `Message` is received into.
            let n = data.len().min(buf.len());
            if let RecvBuf::Copy(b) = buf {
                b[..n].copy_from_slice(&data[..n]);
            }
            let status = received(envelope, len, n, buf.len(), members);
            (status, Some(data))
        }
        RecvOutcome::InPlace {
            envelope,
            len,
            written,
        } => (received(envelope, len, written, buf.len(), members), None),
    }
}

/// The status of a matched receive of `bytes` of a `len`-byte message
/// into `capacity` bytes.
fn received(
    envelope: o2g_core::proto::envelope::Envelope,
    len: u64,
    bytes: usize,
    capacity: usize,
    members: &[u32],
) -> Result<Status> {
    let source = Watch::comm_rank(members, envelope.source);
    let tag = envelope.tag as i32;
    if len > capacity as u64 {
        Err(Error::Truncated {
            len,
            capacity,
            source_rank: source,
            tag,
        })
    } else {
        Ok(Status {
            source,
            tag,
            bytes,
            cancelled: false,
        })
    }
}

impl Drop for Request<'_> {
    fn drop(&mut self) {
        if let State::Sync { ack, .. } = &mut self.state {
            // The acknowledgement must still be taken when it comes, or it
            // would answer a later synchronous send to the same peer.
            if let State::Recv { token, .. } = ack.state {
                ack.state = State::Done(Status::empty());
                self.rt.orphan(token);
            }
        }
        let _ = match self.state {
            State::Send(token) => self.rt.with(|t| {
                t.release_send(token);
                Ok(())
            }),
            State::Recv { token, .. } => self.rt.with(|t| {
                t.release_recv(token);
                Ok(())
            }),
            State::Sync { .. }
            | State::SendRecv { .. }
            | State::Done(_)
            | State::Then { .. }
            | State::Collective(_) => Ok(()),
        };
        scope::settle(&self.scoped);
    }
}

/// `MPI_Waitall` (§3.7.5): waits for every request; statuses in order.
///
/// # Errors
///
/// The first error any request completes with (all are still completed
/// or released).
pub fn wait_all(requests: Vec<Request<'_>>) -> Result<Vec<Status>> {
    wait_each(requests)?.into_iter().collect()
}

/// `MPI_Waitall` with one outcome per request, in order (what C's
/// `MPI_ERR_IN_STATUS` reports). The requests progress together: one
/// round of progress, then every pending request is checked, so none
/// waits behind another's completion.
///
/// # Errors
///
/// Only failures of the progress itself (after finalize, a transport
/// error); each request's own error is in its slot.
pub fn wait_each(mut requests: Vec<Request<'_>>) -> Result<Vec<Result<Status>>> {
    let mut out: Vec<Option<Result<Status>>> = (0..requests.len()).map(|_| None).collect();
    loop {
        let mut pending = false;
        for (r, slot) in requests.iter_mut().zip(out.iter_mut()) {
            if slot.is_some() {
                continue;
            }
            match r.check() {
                Ok(Some(s)) => *slot = Some(Ok(s)),
                Ok(None) => pending = true,
                Err(e) => *slot = Some(Err(e)),
            }
        }
        if !pending {
            break;
        }
        let Some(r) = requests.first() else { break };
        r.rt.progress(None)?;
    }
    Ok(out
        .into_iter()
        .map(|s| s.unwrap_or_else(|| Ok(Status::empty())))
        .collect())
}

/// `MPI_Waitany` (§3.7.5): waits until one of the requests completes,
/// takes it out of its slot and returns its index and status; `None` if
/// every slot is empty (all `MPI_REQUEST_NULL`).
///
/// # Errors
///
/// The error of the request that completed with one; its slot is emptied.
pub fn wait_any(requests: &mut [Option<Request<'_>>]) -> Result<Option<(usize, Status)>> {
    loop {
        let mut rt = None;
        for (i, slot) in requests.iter_mut().enumerate() {
            let Some(r) = slot else { continue };
            match r.check() {
                Ok(Some(s)) => {
                    *slot = None;
                    return Ok(Some((i, s)));
                }
                Ok(None) => rt = Some(r.rt.clone()),
                Err(e) => {
                    *slot = None;
                    return Err(e);
                }
            }
        }
        match rt {
            None => return Ok(None),
            Some(rt) => rt.progress(None)?,
        }
    }
}

/// `MPI_Testall` (§3.7.5): after one round of progress, every status if
/// all requests are complete, `None` otherwise (none is consumed then).
///
/// # Errors
///
/// The first error a request completed with.
pub fn test_all(requests: &mut [Request<'_>]) -> Result<Option<Vec<Status>>> {
    if let Some(r) = requests.first() {
        r.rt.progress(Some(std::time::Duration::ZERO))?;
    }
    let mut out = Vec::with_capacity(requests.len());
    for r in requests.iter_mut() {
        match r.check()? {
            Some(s) => out.push(s),
            None => return Ok(None),
        }
    }
    Ok(Some(out))
}

/// Requests that completed, taken out of their slots: each one's index
/// and outcome, in index order.
pub type Completions = Vec<(usize, Result<Status>)>;

/// Checks every request once without progress; takes the completed ones
/// out of their slots. Also returns the runtime of one still pending.
fn take_completed(requests: &mut [Option<Request<'_>>]) -> (Completions, Option<Rc<Runtime>>) {
    let mut done = Vec::new();
    let mut pending = None;
    for (i, slot) in requests.iter_mut().enumerate() {
        let Some(r) = slot else { continue };
        match r.check() {
            Ok(None) => pending = Some(r.rt.clone()),
            outcome => {
                *slot = None;
                done.push((i, outcome.map(|s| s.unwrap_or_default())));
            }
        }
    }
    (done, pending)
}

/// `MPI_Testsome` (§3.7.5) that may wait: one round of progress, waiting
/// at most `max_wait` for something to happen, then every completed
/// request is taken out of its slot and returned with its index and
/// outcome (in index order); none may be.
///
/// # Errors
///
/// Only failures of the progress itself; each request's own error is in
/// its outcome.
pub fn test_some_waiting(
    requests: &mut [Option<Request<'_>>],
    max_wait: std::time::Duration,
) -> Result<Completions> {
    let (done, pending) = take_completed(requests);
    if !done.is_empty() {
        return Ok(done);
    }
    match pending {
        Some(rt) => rt.progress(Some(max_wait))?,
        None => return Ok(done),
    }
    Ok(take_completed(requests).0)
}

/// `MPI_Testsome` (§3.7.5): after one round of progress without waiting,
/// takes every completed request out of its slot and returns its index
/// and outcome, in index order.
///
/// # Errors
///
/// As for [`test_some_waiting`].
pub fn test_some(requests: &mut [Option<Request<'_>>]) -> Result<Completions> {
    test_some_waiting(requests, std::time::Duration::ZERO)
}

/// `MPI_Waitsome` (§3.7.5): waits until at least one request completes,
/// then takes every completed one out of its slot and returns its index
/// and outcome, in index order; empty if every slot is empty.
///
/// # Errors
///
/// As for [`test_some_waiting`].
pub fn wait_some(requests: &mut [Option<Request<'_>>]) -> Result<Completions> {
    loop {
        let (done, pending) = take_completed(requests);
        match pending {
            Some(rt) if done.is_empty() => rt.progress(None)?,
            _ => return Ok(done),
        }
    }
}
