//! Point-to-point communication (MPI 4.1 chapter 3).
//!
//! Two styles, same semantics: MPI-style calls on the [`Communicator`]
//! with integer ranks and tags (`send`, `recv`, `isend`, `irecv`,
//! `sendrecv`, `probe`, `iprobe`), and rsmpi-style calls on a
//! [`Process`] (`world.process_at_rank(1)?.send(&x)`) or on
//! [`AnyProcess`] through the [`Destination`] and [`Source`] traits.
//! Sends are standard mode (§3.4): they return once the buffer may be
//! reused, which for o2g is once the bytes are in the kernel.
//!
//! On an inter-communicator (§7.6.1, [`crate::intercomm`]) destination
//! and source ranks, and the source a status reports, are ranks of the
//! remote group: every call maps them through `Communicator::peers`.

use o2g_core::proto::envelope::{Envelope, Selector, SourceSel, TagSel};

use crate::communicator::Communicator;
use crate::datatype::{as_bytes, as_bytes_mut, zeroed_vec, Equivalence};
use crate::error::{Error, Result};
use crate::request::{RecvBuf, Request, Watch};
use crate::scope::Scope;
use crate::synchronous;
use crate::transport::{RecvToken, SendToken, Transport};

/// `MPI_ANY_SOURCE` (§3.2.4): receive from any rank.
pub const ANY_SOURCE: i32 = -2;
/// `MPI_ANY_TAG` (§3.2.4): receive with any tag.
pub const ANY_TAG: i32 = -1;
/// `MPI_TAG_UB` (§9.1.2): the largest valid tag.
pub const TAG_UB: i32 = i32::MAX;

/// The outcome of a receive or probe (`MPI_Status`, §3.2.5).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Status {
    pub(crate) source: i32,
    pub(crate) tag: i32,
    pub(crate) bytes: usize,
    pub(crate) cancelled: bool,
}

impl Status {
    pub(crate) fn empty() -> Self {
        Self::default()
    }

    /// `MPI_SOURCE`: the sender's rank in the communicator (in the remote
    /// group of an inter-communicator, §7.6.1).
    pub fn source_rank(&self) -> i32 {
        self.source
    }

    /// `MPI_TAG`: the message's tag.
    pub fn tag(&self) -> i32 {
        self.tag
    }

    /// Bytes received (for a probe: bytes in the message).
    pub fn count_bytes(&self) -> usize {
        self.bytes
    }

    /// `MPI_Get_count` (§3.2.5): elements of type `T` received; `None`
    /// (`MPI_UNDEFINED`) if the bytes are not a whole number of `T`.
    pub fn count<T: Equivalence>(&self) -> Option<usize> {
        let size = size_of::<T>();
        match size {
            0 => Some(0),
            _ if self.bytes % size == 0 => Some(self.bytes / size),
            _ => None,
        }
    }

    /// `MPI_Test_cancelled` (§3.8.4): whether the receive was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled
    }
}

fn check_tag(tag: i32) -> Result<u32> {
    u32::try_from(tag).map_err(|_| Error::InvalidTag(tag))
}

impl Communicator {
    /// The envelope of a message from this process: the source is its world
    /// rank, so that a message names the connection it must come from
    /// whatever the communicator (the o2g module relies on that).
    pub(crate) fn envelope(&self, tag: u32, context: u32) -> Envelope {
        Envelope {
            source: self.me(),
            tag,
            context,
        }
    }

    /// Fails for traffic on an inter-communicator's context other than
    /// its point-to-point one: only `intercomm.rs` and
    /// `collective/inter.rs` talk on the others, through a view of it
    /// (`Communicator::bridge`), so what comes here is a collective
    /// algorithm for intra-communicators, which must not run on it.
    fn route(&self, context: u32) -> Result<()> {
        if self.inter.is_some() && context != self.context {
            return Err(Error::InvalidCommunicator(
                crate::intercomm::NOT_PROVIDED.to_owned(),
            ));
        }
        Ok(())
    }

    /// The selector of a receive or probe from `source` (a rank of the
    /// remote group on an inter-communicator, §7.6.1) and what it watches.
    fn selector(&self, source: i32, tag: i32, context: u32) -> Result<(Selector, Watch)> {
        self.route(context)?;
        let world = match source {
            ANY_SOURCE => None,
            r => Some(self.world_rank(r)?),
        };
        let watch = Watch {
            members: self.peers().clone(),
            me: self.me(),
            source: world,
        };
        let source = world.map_or(SourceSel::Any, SourceSel::Rank);
        let tag = match tag {
            ANY_TAG => TagSel::Any,
            t => TagSel::Tag(check_tag(t)?),
        };
        Ok((
            Selector {
                source,
                tag,
                context,
            },
            watch,
        ))
    }

    /// Blocking send of raw bytes on `context`.
    pub(crate) fn send_bytes(&self, data: &[u8], dest: i32, tag: u32, context: u32) -> Result<()> {
        self.route(context)?;
        let world = self.world_rank(dest)?;
        let env = self.envelope(tag, context);
        self.rt.with(|t| t.send(world, env, data))
    }

    /// Synchronous-mode blocking send of raw bytes on `context`: returns
    /// once a receive has matched the message (see `synchronous.rs`).
    pub(crate) fn ssend_bytes(&self, data: &[u8], dest: i32, tag: u32, context: u32) -> Result<()> {
        self.route(context)?;
        let world = self.world_rank(dest)?;
        let env = synchronous::marked(self.envelope(tag, context));
        let ack = self.post_ack(world, tag, context)?;
        self.rt.with(|t| t.send(world, env, data))?;
        ack.wait().map(drop)
    }

    /// Posts the receive of the acknowledgement of a synchronous-mode
    /// message with `tag` on `context` to world rank `world`.
    fn post_ack(&self, world: u32, tag: u32, context: u32) -> Result<Request<'static>> {
        let sel = synchronous::ack_selector(world, context, tag);
        let watch = Watch {
            members: self.peers().clone(),
            me: self.me(),
            source: Some(world),
        };
        let ack = self.rt.with(|t| t.post_recv(sel, 0))?;
        Ok(Request::recv(
            self.rt.clone(),
            ack,
            RecvBuf::Copy(&mut []),
            watch,
        ))
    }

    /// Nonblocking send of raw bytes on `context`.
    pub(crate) fn isend_bytes(
        &self,
        data: &[u8],
        dest: i32,
        tag: u32,
        context: u32,
    ) -> Result<Request<'static>> {
        self.route(context)?;
        let world = self.world_rank(dest)?;
        let env = self.envelope(tag, context);
        let token = self.rt.with(|t| t.isend(world, env, data))?;
        Ok(Request::send(self.rt.clone(), token))
    }

    /// Nonblocking send of raw bytes on `context` that the transport may
    /// read from `data` itself while the request lives (over `o2g`, a
    /// rendezvous message's pages go to the module, which sends from them:
    /// no copy). Dropping the request waits until the transport has let go
    /// of `data`; a leaked request may send what `data` holds later, but
    /// never makes the module read memory that is not this process's (it
    /// reads pinned pages).
    pub(crate) fn isend_borrowed<'b>(
        &self,
        data: &'b [u8],
        dest: i32,
        tag: u32,
        context: u32,
    ) -> Result<Request<'b>> {
        // SAFETY: The request borrows `data` for 'b, and it ends the token
        // by testing it to completion or releasing it in `Drop`, so `data`
        // stays allocated and unchanged (it is shared) until then.
        self.isend_lending(data, dest, tag, context, false, |t, world, env| unsafe {
            t.isend_in_place(world, env, data.as_ptr(), data.len())
        })
    }

    /// Synchronous-mode nonblocking send of raw bytes on `context`
    /// (`MPI_Issend`): as [`Communicator::isend_borrowed`], and the
    /// request completes only once a receive matched the message.
    pub(crate) fn issend_borrowed<'b>(
        &self,
        data: &'b [u8],
        dest: i32,
        tag: u32,
        context: u32,
    ) -> Result<Request<'b>> {
        // SAFETY: As in `isend_borrowed`.
        self.isend_lending(data, dest, tag, context, true, |t, world, env| unsafe {
            t.isend_in_place(world, env, data.as_ptr(), data.len())
        })
    }

    /// A nonblocking send that `start` may begin from `data` itself; if
    /// it declines (`None`), the transport's copying `isend`. In
    /// synchronous mode (`sync`) the message is marked and the request
    /// also waits for its acknowledgement (see `synchronous.rs`).
    fn isend_lending<'b>(
        &self,
        data: &[u8],
        dest: i32,
        tag: u32,
        context: u32,
        sync: bool,
        start: impl FnOnce(&mut dyn Transport, u32, Envelope) -> Result<Option<SendToken>>,
    ) -> Result<Request<'b>> {
        self.route(context)?;
        let world = self.world_rank(dest)?;
        let mut env = self.envelope(tag, context);
        // The acknowledgement's receive is posted before the message goes.
        let ack = if sync {
            env = synchronous::marked(env);
            Some(self.post_ack(world, tag, context)?)
        } else {
            None
        };
        let token = match self.rt.with(|t| start(t, world, env))? {
            Some(token) => token,
            None => self.rt.with(|t| t.isend(world, env, data))?,
        };
        let send = Request::send(self.rt.clone(), token);
        Ok(match ack {
            Some(ack) => Request::sync(send, ack),
            None => send,
        })
    }

    /// Nonblocking send of raw bytes on `context` from memory its caller
    /// lends until the request completes or is dropped: the transport may
    /// keep reading it (see [`SendHalf::isend_lent`]); dropping the
    /// request early copies what is left.
    ///
    /// # Safety
    ///
    /// `data` stays allocated and unchanged until the request completes or
    /// its drop returned, and the request is not leaked.
    ///
    /// [`SendHalf::isend_lent`]: crate::transport::SendHalf::isend_lent
    pub(crate) unsafe fn isend_bytes_lent(
        &self,
        data: &[u8],
        dest: i32,
        tag: u32,
        context: u32,
    ) -> Result<Request<'static>> {
        // SAFETY: This function's contract, which the request's drop (never
        // skipped) completes by releasing the token.
        self.isend_lending(data, dest, tag, context, false, |t, world, env| unsafe {
            t.isend_lent(world, env, data.as_ptr(), data.len())
        })
    }

    /// [`Communicator::isend_bytes_lent`] in synchronous mode
    /// (`MPI_Issend`): the request completes once a receive matched the
    /// message.
    ///
    /// # Safety
    ///
    /// As for [`Communicator::isend_bytes_lent`].
    pub(crate) unsafe fn issend_bytes_lent(
        &self,
        data: &[u8],
        dest: i32,
        tag: u32,
        context: u32,
    ) -> Result<Request<'static>> {
        // SAFETY: As in `isend_bytes_lent`.
        self.isend_lending(data, dest, tag, context, true, |t, world, env| unsafe {
            t.isend_lent(world, env, data.as_ptr(), data.len())
        })
    }

    /// Nonblocking receive of raw bytes on `context`.
    pub(crate) fn irecv_bytes<'b>(
        &self,
        buf: &'b mut [u8],
        source: i32,
        tag: i32,
        context: u32,
    ) -> Result<Request<'b>> {
        let (sel, watch) = self.selector(source, tag, context)?;
        let token = self.rt.with(|t| t.post_recv(sel, buf.len()))?;
        Ok(Request::recv(
            self.rt.clone(),
            token,
            RecvBuf::Copy(buf),
            watch,
        ))
    }

    /// Blocking receive of raw bytes on `context`, which the transport may
    /// write straight into `buf` (see [`Communicator::irecv_bytes_direct`]).
    pub(crate) fn recv_bytes(
        &self,
        buf: &mut [u8],
        source: i32,
        tag: i32,
        context: u32,
    ) -> Result<Status> {
        // SAFETY: `buf` is borrowed exclusively for this whole function and
        // not used in it after this point; the request is waited for here,
        // and dropping it (on every path out, errors and unwinding
        // included) releases the receive, which waits until the transport
        // has let go of the memory.
        unsafe { self.irecv_bytes_direct(buf.as_mut_ptr(), buf.len(), source, tag, context) }?
            .wait()
    }

    /// Nonblocking receive of raw bytes on `context` into `len` bytes at
    /// `ptr`, which the transport may write directly, as the message
    /// arrives (`post_recv_in_place`), instead of copying its own buffer
    /// there at completion. Dropping the request before it completes
    /// cancels the receive or, if the message is already arriving, waits
    /// for the rest of it.
    ///
    /// # Safety
    ///
    /// Unless `len` is 0, `ptr..ptr + len` is valid for writes and is
    /// neither read nor written through any other path, nor referenced,
    /// until the request completes or is dropped; and the request is not
    /// leaked (`mem::forget`) while pending.
    pub(crate) unsafe fn irecv_bytes_direct<'b>(
        &self,
        ptr: *mut u8,
        len: usize,
        source: i32,
        tag: i32,
        context: u32,
    ) -> Result<Request<'b>> {
        let (sel, watch) = self.selector(source, tag, context)?;
        // SAFETY: Forwarded from this function's contract, which the
        // request's drop (never skipped) completes.
        let direct = self
            .rt
            .with(|t| unsafe { t.post_recv_in_place(sel, ptr, len) })?;
        if let Some(token) = direct {
            let buf = RecvBuf::in_place(len);
            return Ok(Request::recv(self.rt.clone(), token, buf, watch));
        }
        let buf: &'b mut [u8] = if len == 0 {
            &mut []
        } else {
            // SAFETY: Valid and exclusively ours for the request's life
            // (this function's contract); nothing was posted with `ptr`.
            unsafe { std::slice::from_raw_parts_mut(ptr, len) }
        };
        let token = self.rt.with(|t| t.post_recv(sel, len))?;
        Ok(Request::recv(
            self.rt.clone(),
            token,
            RecvBuf::Copy(buf),
            watch,
        ))
    }

    /// A receive of the answer to a module window request from `source`
    /// with `tag`, into `len` bytes at `ptr`, posted in the module itself
    /// (never left waiting in the transport: the module places an answer
    /// only in a posted receive).
    ///
    /// # Safety
    ///
    /// As for [`Communicator::irecv_bytes_direct`].
    pub(crate) unsafe fn irecv_answer<'b>(
        &self,
        ptr: *mut u8,
        len: usize,
        source: i32,
        tag: i32,
    ) -> Result<Request<'b>> {
        let (sel, watch) = self.selector(source, tag, self.context)?;
        let token = self.rt.with(|t| match t.windows() {
            Some(w) => w.post_answer(sel, len),
            None => Err(Error::InvalidArgument(
                "this transport has no module windows".into(),
            )),
        })?;
        let buf: &'b mut [u8] = if len == 0 {
            &mut []
        } else {
            // SAFETY: Valid and exclusively ours for the request's life
            // (this function's contract).
            unsafe { std::slice::from_raw_parts_mut(ptr, len) }
        };
        Ok(Request::recv(
            self.rt.clone(),
            token,
            RecvBuf::Copy(buf),
            watch,
        ))
    }

    /// `MPI_Send` (§3.2.1): standard-mode blocking send to rank `dest`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRank`], [`Error::InvalidTag`], [`Error::PeerGone`].
    pub fn send<T: Equivalence>(&self, buf: &[T], dest: i32, tag: i32) -> Result<()> {
        self.send_bytes(as_bytes(buf), dest, check_tag(tag)?, self.context)
    }

    /// `MPI_Ssend` (§3.4): synchronous-mode blocking send; returns once
    /// rank `dest` has started a receive that matched the message.
    ///
    /// # Errors
    ///
    /// As for [`Communicator::send`]; [`Error::PeerGone`] if `dest` dies
    /// before it receives.
    pub fn ssend<T: Equivalence>(&self, buf: &[T], dest: i32, tag: i32) -> Result<()> {
        self.ssend_bytes(as_bytes(buf), dest, check_tag(tag)?, self.context)
    }

    /// `MPI_Issend` (§3.7.2): starts a synchronous-mode send; the request
    /// borrows `buf` and completes once rank `dest` has started a receive
    /// that matched the message.
    ///
    /// # Errors
    ///
    /// As for [`Communicator::send`].
    pub fn issend<'b, T: Equivalence>(
        &self,
        buf: &'b [T],
        dest: i32,
        tag: i32,
    ) -> Result<Request<'b>> {
        self.issend_borrowed(as_bytes(buf), dest, check_tag(tag)?, self.context)
    }

    /// `MPI_Recv` (§3.2.4): blocking receive from `source` (or
    /// [`ANY_SOURCE`]) with `tag` (or [`ANY_TAG`]).
    ///
    /// # Errors
    ///
    /// [`Error::Truncated`] if the message is longer than `buf` (the
    /// prefix that fits is received), invalid rank/tag, dead sender.
    pub fn recv<T: Equivalence>(&self, buf: &mut [T], source: i32, tag: i32) -> Result<Status> {
        self.recv_bytes(as_bytes_mut(buf), source, tag, self.context)
    }

    /// `MPI_Isend` (§3.7.2): starts a send; the request borrows `buf`.
    ///
    /// # Errors
    ///
    /// As for [`Communicator::send`].
    pub fn isend<'b, T: Equivalence>(
        &self,
        buf: &'b [T],
        dest: i32,
        tag: i32,
    ) -> Result<Request<'b>> {
        self.isend_borrowed(as_bytes(buf), dest, check_tag(tag)?, self.context)
    }

    /// `MPI_Irecv` (§3.7.2): starts a receive into `buf`, which stays
    /// borrowed until the request completes.
    ///
    /// # Errors
    ///
    /// Invalid rank or tag; a full posted-receive queue.
    pub fn irecv<'b, T: Equivalence>(
        &self,
        buf: &'b mut [T],
        source: i32,
        tag: i32,
    ) -> Result<Request<'b>> {
        self.irecv_bytes(as_bytes_mut(buf), source, tag, self.context)
    }

    /// `MPI_Isend` (§3.7.2) within a [`Scope`]: the transport may send
    /// straight from `buf` until the request completes, with no copy (see
    /// [`crate::scope`]).
    ///
    /// # Errors
    ///
    /// As for [`Communicator::send`].
    pub fn isend_scoped<'s, 'b: 's, T: Equivalence>(
        &self,
        scope: &'s Scope<'b>,
        buf: &'b [T],
        dest: i32,
        tag: i32,
    ) -> Result<Request<'s>> {
        let tag = check_tag(tag)?;
        // SAFETY: `buf` is borrowed for 'b, which outlives the whole
        // `scope` call, and the scope releases the request (copying what
        // has not gone out) before that call returns, also if the request
        // was leaked; it is shared, so nobody changes it meanwhile.
        let r = unsafe { self.isend_bytes_lent(as_bytes(buf), dest, tag, self.context) }?;
        Ok(r.in_scope(scope))
    }

    /// `MPI_Irecv` (§3.7.2) within a [`Scope`]: the transport may write
    /// the message straight into `buf` as it arrives, with no copy (see
    /// [`crate::scope`]).
    ///
    /// # Errors
    ///
    /// As for [`Communicator::irecv`].
    pub fn irecv_scoped<'s, 'b: 's, T: Equivalence>(
        &self,
        scope: &'s Scope<'b>,
        buf: &'b mut [T],
        source: i32,
        tag: i32,
    ) -> Result<Request<'s>> {
        let bytes = as_bytes_mut(buf);
        // SAFETY: `bytes` is borrowed exclusively for 'b, which outlives
        // the whole `scope` call, and is not used here after this point;
        // the scope releases the request before that call returns, also
        // if it was leaked, and a release waits until the transport has
        // let go of the memory.
        let r = unsafe {
            self.irecv_bytes_direct(bytes.as_mut_ptr(), bytes.len(), source, tag, self.context)
        }?;
        Ok(r.in_scope(scope))
    }

    /// `MPI_Sendrecv` (§3.10): sends `send` to `dest` and receives into
    /// `recv` from `source`, without deadlock whatever the peers do.
    ///
    /// # Errors
    ///
    /// Those of the send and of the receive.
    #[allow(clippy::too_many_arguments)]
    pub fn sendrecv<S: Equivalence, R: Equivalence>(
        &self,
        send: &[S],
        dest: i32,
        send_tag: i32,
        recv: &mut [R],
        source: i32,
        recv_tag: i32,
    ) -> Result<Status> {
        // Both requests end in this function, so the transport may read
        // the message straight into `recv` and send straight from `send`
        // (no copy into an outbox, none out of a scratch buffer).
        let recv = as_bytes_mut(recv);
        // SAFETY: `recv` is borrowed exclusively for this whole function
        // and not used in it after this point; the request is waited for
        // below, or dropped on every other path out (errors, unwinding),
        // and its drop releases the receive, waiting until the transport
        // has let go of the memory.
        let r = unsafe {
            self.irecv_bytes_direct(
                recv.as_mut_ptr(),
                recv.len(),
                source,
                recv_tag,
                self.context,
            )
        }?;
        let send_tag = check_tag(send_tag)?;
        // SAFETY: `send` is borrowed for this whole function; the request
        // is waited for below or dropped, never leaked.
        let s = unsafe { self.isend_bytes_lent(as_bytes(send), dest, send_tag, self.context) }?;
        let status = r.wait();
        s.wait()?;
        status
    }

    /// `MPI_Isendrecv` (§3.10): starts sending `send` to `dest` and
    /// receiving into `recv` from `source` as one request, which completes
    /// once both have, with the receive's status.
    ///
    /// # Errors
    ///
    /// Those of [`Communicator::isend`] and [`Communicator::irecv`].
    #[allow(clippy::too_many_arguments)]
    pub fn isendrecv<'b, S: Equivalence, R: Equivalence>(
        &self,
        send: &'b [S],
        dest: i32,
        send_tag: i32,
        recv: &'b mut [R],
        source: i32,
        recv_tag: i32,
    ) -> Result<Request<'b>> {
        let r = self.irecv(recv, source, recv_tag)?;
        let s = self.isend(send, dest, send_tag)?;
        Ok(Request::send_recv(s, r))
    }

    /// `MPI_Iprobe` (§3.8.1): the status of a matching message if one has
    /// arrived, without receiving it.
    ///
    /// # Errors
    ///
    /// Invalid rank or tag.
    pub fn iprobe(&self, source: i32, tag: i32) -> Result<Option<Status>> {
        let (sel, _) = self.selector(source, tag, self.context)?;
        self.rt.advance_schedules();
        let found = self.rt.with(|t| {
            if let Some(m) = t.iprobe(sel) {
                return Ok(Some(m));
            }
            t.progress(Some(std::time::Duration::ZERO))?;
            Ok(t.iprobe(sel))
        })?;
        Ok(found.map(|(env, len)| Status {
            source: Watch::comm_rank(self.peers(), env.source),
            tag: env.tag as i32,
            bytes: len as usize,
            cancelled: false,
        }))
    }

    /// `MPI_Probe` (§3.8.1): waits for a matching message and returns its
    /// status without receiving it.
    ///
    /// # Errors
    ///
    /// Invalid rank or tag; [`Error::PeerGone`] when the source died.
    pub fn probe(&self, source: i32, tag: i32) -> Result<Status> {
        self.wait_probed(source, tag, |c| c.iprobe(source, tag))
    }

    /// Repeats the nonblocking probe `attempt` until it finds a message,
    /// making progress in between: what [`Communicator::probe`] and
    /// [`Communicator::mprobe`] wait with. Fails with
    /// [`Error::PeerGone`] when a named source died.
    fn wait_probed<T>(
        &self,
        source: i32,
        tag: i32,
        attempt: impl Fn(&Self) -> Result<Option<T>>,
    ) -> Result<T> {
        let (_, watch) = self.selector(source, tag, self.context)?;
        loop {
            if let Some(found) = attempt(self)? {
                return Ok(found);
            }
            if let Some(w) = watch.source {
                if let Some(reason) = self.rt.with(|t| Ok(t.peer_failure(w)))? {
                    return Err(Error::PeerGone { rank: w, reason });
                }
            }
            self.rt.progress(None)?;
        }
    }

    /// `MPI_Improbe` (§3.8.2): if a matching message has arrived, takes it
    /// out of matching, so that no other receive or probe can see it, and
    /// returns it with its status; [`Message::recv`] or
    /// [`Message::irecv`] then receive it.
    ///
    /// The message is taken by a receive of its whole length, posted for
    /// exactly its source and tag at once: the first message matching
    /// those is the probed one (any earlier one would have matched the
    /// probe), so this works over every transport, the kernel-matched one
    /// included.
    ///
    /// # Errors
    ///
    /// Invalid rank or tag; a full posted-receive queue.
    pub fn improbe(&self, source: i32, tag: i32) -> Result<Option<Message>> {
        let (sel, watch) = self.selector(source, tag, self.context)?;
        let take = |t: &mut dyn Transport| -> Result<Option<(Envelope, u64, RecvToken)>> {
            let Some((env, len)) = t.iprobe(sel) else {
                return Ok(None);
            };
            let cap = usize::try_from(len)
                .map_err(|_| Error::ResourceExhausted("a message longer than memory"))?;
            let exact = Selector {
                source: SourceSel::Rank(env.source),
                tag: TagSel::Tag(env.tag),
                context: sel.context,
            };
            Ok(Some((env, len, t.post_recv(exact, cap)?)))
        };
        self.rt.advance_schedules();
        let found = self.rt.with(|t| {
            if let Some(m) = take(t)? {
                return Ok(Some(m));
            }
            t.progress(Some(std::time::Duration::ZERO))?;
            take(t)
        })?;
        Ok(found.map(|(env, len, token)| Message {
            rt: self.rt.clone(),
            token: Some(token),
            watch: Watch {
                source: Some(env.source),
                ..watch
            },
            status: Status {
                source: Watch::comm_rank(self.peers(), env.source),
                tag: env.tag as i32,
                bytes: len as usize,
                cancelled: false,
            },
        }))
    }

    /// `MPI_Mprobe` (§3.8.2): waits for a matching message and takes it
    /// out of matching (see [`Communicator::improbe`]).
    ///
    /// # Errors
    ///
    /// Invalid rank or tag; [`Error::PeerGone`] when the source died.
    pub fn mprobe(&self, source: i32, tag: i32) -> Result<Message> {
        self.wait_probed(source, tag, |c| c.improbe(source, tag))
    }

    /// Probes, then receives exactly the probed message into a new vector.
    ///
    /// # Errors
    ///
    /// As for [`Communicator::probe`]; [`Error::InvalidArgument`] if the
    /// message is not a whole number of `T`.
    pub fn recv_vec<T: Equivalence>(&self, source: i32, tag: i32) -> Result<(Vec<T>, Status)> {
        let probed = self.probe(source, tag)?;
        let n = probed.count::<T>().ok_or_else(|| {
            Error::InvalidArgument(format!(
                "a {}-byte message is not a whole number of {}-byte elements",
                probed.bytes,
                size_of::<T>()
            ))
        })?;
        let mut v = zeroed_vec(n);
        let status = self.recv(&mut v, probed.source, probed.tag)?;
        Ok((v, status))
    }
}

/// A message taken out of matching by a matched probe (`MPI_Message`,
/// §3.8.2): only [`Message::recv`] or [`Message::irecv`] can receive it.
/// Dropping it without receiving discards it.
pub struct Message {
    rt: std::rc::Rc<crate::environment::Runtime>,
    /// The receive that takes the whole message; `None` once handed on.
    token: Option<RecvToken>,
    watch: Watch,
    status: Status,
}

impl Message {
    /// The message's status: source, tag and length in bytes.
    pub fn status(&self) -> Status {
        self.status
    }

    /// `MPI_Imrecv` (§3.8.3): starts receiving the message into `buf`,
    /// which stays borrowed until the request completes; a longer message
    /// completes with [`Error::Truncated`] and the part that fits.
    pub fn irecv<T: Equivalence>(self, buf: &mut [T]) -> Request<'_> {
        self.irecv_bytes(as_bytes_mut(buf))
    }

    /// `MPI_Mrecv` (§3.8.3): receives the message into `buf`.
    ///
    /// # Errors
    ///
    /// [`Error::Truncated`] if the message is longer than `buf` (the
    /// prefix that fits is received); [`Error::PeerGone`] if the sender
    /// died before all of it came.
    pub fn recv<T: Equivalence>(self, buf: &mut [T]) -> Result<Status> {
        self.irecv(buf).wait()
    }

    /// `MPI_Imrecv` of raw bytes.
    pub(crate) fn irecv_bytes(mut self, buf: &mut [u8]) -> Request<'_> {
        let watch = Watch {
            members: self.watch.members.clone(),
            me: self.watch.me,
            source: self.watch.source,
        };
        match self.token.take() {
            Some(token) => Request::recv(self.rt.clone(), token, RecvBuf::Copy(buf), watch),
            None => Request::done(self.rt.clone(), self.status),
        }
    }
}

impl Drop for Message {
    fn drop(&mut self) {
        if let Some(token) = self.token.take() {
            let _ = self.rt.with(|t| {
                t.release_recv(token);
                Ok(())
            });
        }
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A process at one rank of a communicator (rsmpi's `Process`).
pub struct Process<'c> {
    comm: &'c Communicator,
    rank: i32,
}

impl<'c> Process<'c> {
    pub(crate) fn new(comm: &'c Communicator, rank: i32) -> Self {
        Self { comm, rank }
    }

    /// The rank in its communicator.
    pub fn rank(&self) -> i32 {
        self.rank
    }

    /// The communicator.
    pub fn communicator(&self) -> &'c Communicator {
        self.comm
    }
}

/// `MPI_ANY_SOURCE` of a communicator (rsmpi's `AnyProcess`).
pub struct AnyProcess<'c> {
    comm: &'c Communicator,
}

impl<'c> AnyProcess<'c> {
    pub(crate) fn new(comm: &'c Communicator) -> Self {
        Self { comm }
    }
}

impl sealed::Sealed for Process<'_> {}
impl sealed::Sealed for AnyProcess<'_> {}

/// Something a message can be sent to: a [`Process`].
pub trait Destination: sealed::Sealed {
    #[doc(hidden)]
    fn target(&self) -> (&Communicator, i32);

    /// `MPI_Send` (§3.2.1) with tag 0.
    ///
    /// # Errors
    ///
    /// As for [`Communicator::send`].
    fn send<T: Equivalence>(&self, buf: &[T]) -> Result<()> {
        self.send_with_tag(buf, 0)
    }

    /// `MPI_Send` (§3.2.1).
    ///
    /// # Errors
    ///
    /// As for [`Communicator::send`].
    fn send_with_tag<T: Equivalence>(&self, buf: &[T], tag: i32) -> Result<()> {
        let (c, r) = self.target();
        c.send(buf, r, tag)
    }

    /// `MPI_Isend` (§3.7.2) with tag 0.
    ///
    /// # Errors
    ///
    /// As for [`Communicator::isend`].
    fn immediate_send<'b, T: Equivalence>(&self, buf: &'b [T]) -> Result<Request<'b>> {
        self.immediate_send_with_tag(buf, 0)
    }

    /// `MPI_Isend` (§3.7.2).
    ///
    /// # Errors
    ///
    /// As for [`Communicator::isend`].
    fn immediate_send_with_tag<'b, T: Equivalence>(
        &self,
        buf: &'b [T],
        tag: i32,
    ) -> Result<Request<'b>> {
        let (c, r) = self.target();
        c.isend(buf, r, tag)
    }
}

/// Something a message can be received from: a [`Process`] or
/// [`AnyProcess`].
pub trait Source: sealed::Sealed {
    #[doc(hidden)]
    fn origin(&self) -> (&Communicator, i32);

    /// `MPI_Recv` (§3.2.4) with `MPI_ANY_TAG`.
    ///
    /// # Errors
    ///
    /// As for [`Communicator::recv`].
    fn receive_into<T: Equivalence>(&self, buf: &mut [T]) -> Result<Status> {
        self.receive_into_with_tag(buf, ANY_TAG)
    }

    /// `MPI_Recv` (§3.2.4).
    ///
    /// # Errors
    ///
    /// As for [`Communicator::recv`].
    fn receive_into_with_tag<T: Equivalence>(&self, buf: &mut [T], tag: i32) -> Result<Status> {
        let (c, r) = self.origin();
        c.recv(buf, r, tag)
    }

    /// `MPI_Irecv` (§3.7.2) with `MPI_ANY_TAG`.
    ///
    /// # Errors
    ///
    /// As for [`Communicator::irecv`].
    fn immediate_receive_into<'b, T: Equivalence>(&self, buf: &'b mut [T]) -> Result<Request<'b>> {
        self.immediate_receive_into_with_tag(buf, ANY_TAG)
    }

    /// `MPI_Irecv` (§3.7.2).
    ///
    /// # Errors
    ///
    /// As for [`Communicator::irecv`].
    fn immediate_receive_into_with_tag<'b, T: Equivalence>(
        &self,
        buf: &'b mut [T],
        tag: i32,
    ) -> Result<Request<'b>> {
        let (c, r) = self.origin();
        c.irecv(buf, r, tag)
    }

    /// Probe and receive a message of any length with `MPI_ANY_TAG`.
    ///
    /// # Errors
    ///
    /// As for [`Communicator::recv_vec`].
    fn receive_vec<T: Equivalence>(&self) -> Result<(Vec<T>, Status)> {
        let (c, r) = self.origin();
        c.recv_vec(r, ANY_TAG)
    }

    /// `MPI_Probe` (§3.8.1) with `MPI_ANY_TAG`.
    ///
    /// # Errors
    ///
    /// As for [`Communicator::probe`].
    fn probe(&self) -> Result<Status> {
        self.probe_with_tag(ANY_TAG)
    }

    /// `MPI_Probe` (§3.8.1).
    ///
    /// # Errors
    ///
    /// As for [`Communicator::probe`].
    fn probe_with_tag(&self, tag: i32) -> Result<Status> {
        let (c, r) = self.origin();
        c.probe(r, tag)
    }

    /// `MPI_Iprobe` (§3.8.1).
    ///
    /// # Errors
    ///
    /// As for [`Communicator::iprobe`].
    fn immediate_probe_with_tag(&self, tag: i32) -> Result<Option<Status>> {
        let (c, r) = self.origin();
        c.iprobe(r, tag)
    }
}

impl Destination for Process<'_> {
    fn target(&self) -> (&Communicator, i32) {
        (self.comm, self.rank)
    }
}

impl Source for Process<'_> {
    fn origin(&self) -> (&Communicator, i32) {
        (self.comm, self.rank)
    }
}

impl Source for AnyProcess<'_> {
    fn origin(&self) -> (&Communicator, i32) {
        (self.comm, ANY_SOURCE)
    }
}
