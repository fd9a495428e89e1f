//! An initialised endpoint: posted receives, the completion ring, and
//! unexpected messages.

use std::collections::HashSet;
use std::fmt;
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use crate::completion::{Completed, RawCompleted, Reaped, RecvError, Sent};
use crate::mapping::Mapping;
use crate::poll::timeout_ns;
use crate::ring::RingConsumer;
use crate::selector::Encoded;
use crate::slab::{Key, Slab, OWNED_BIT};
use crate::{
    abi, raw, Announced, Device, EndpointConfig, EndpointListing, Envelope, Error, Layout,
    PollEvents, Post, PostError, PostOutcome, RecvHandle, Result, Selector, UnexpectedMessage,
};

/// A buffer the module may write into, held until its receive is settled.
struct PostedBuffer {
    buf: Vec<u8>,
    user_data: u64,
    recv_id: u64,
}

/// An o2g endpoint after `O2G_IOC_INIT`, with its shared mapping: posts
/// receives, reaps their completions, and takes unexpected messages.
///
/// Made by [`Device::init`]. Dropping it settles what is still posted (see
/// the [`Drop`] impl), unmaps the mapping and closes the device.
///
/// An `Endpoint` is `Send` and `Sync`: posting owned buffers, reaping and
/// cancelling take `&mut self` (one consumer of the ring), everything else
/// `&self`.
pub struct Endpoint {
    // Fields drop in declaration order, and the order matters: the mapping
    // goes first (its VMA holds a reference to the open file), then the file
    // itself, so that the module releases the endpoint, and only then the
    // buffers of `posted`. By then `Drop::drop` has left only buffers the
    // module no longer writes in `posted`; freeing them after the close is a
    // second line of defence.
    mapping: Mapping,
    device: Device,
    /// Buffers of receives posted with [`Endpoint::post`], keyed by the
    /// `user_data` the module echoes. No reference to their bytes is ever
    /// formed while they are here (and `Debug` does not print them).
    posted: Slab<PostedBuffer>,
    ring: RingConsumer,
    layout: Layout,
    /// Receives posted (owned or raw) whose completion was not reaped yet
    /// and which were not cancelled: never more than the ring holds.
    in_flight: AtomicU32,
}

impl Endpoint {
    /// Issues `O2G_IOC_INIT` for `cfg` on `device`, checks the layout the
    /// module answers and maps the shared area.
    pub(crate) fn init(device: Device, cfg: EndpointConfig) -> Result<Self> {
        cfg.validate()?;
        let mut args = cfg.to_init_args();
        raw::init(device.as_fd(), &mut args).map_err(|e| Error::io("O2G_IOC_INIT", e))?;
        let layout = Layout::from_init(&cfg, &args)?;
        let mapping = Mapping::map_device(device.as_fd(), layout.map_bytes)
            .map_err(|e| Error::io("mmap", e))?;
        Ok(Self::from_parts(device, mapping, layout))
    }

    fn from_parts(device: Device, mapping: Mapping, layout: Layout) -> Self {
        debug_assert!(mapping.len() >= layout.map_bytes);
        Self {
            ring: RingConsumer::new(layout, &mapping),
            mapping,
            device,
            posted: Slab::default(),
            layout,
            in_flight: AtomicU32::new(0),
        }
    }

    /// The shared mapping's layout.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The module's ABI version.
    pub fn version(&self) -> Result<abi::VersionInfo> {
        self.device.version()
    }

    /// Attaches a connected TCP socket as the connection to peer `rank`; see
    /// [`Device::register_socket`] for the errors.
    pub fn register_socket(&self, sock: &impl AsFd, rank: u32) -> Result<()> {
        self.device.register_socket(sock, rank)
    }

    /// Attaches a connected TCP socket as the control connection to peer
    /// `rank`; see [`Device::register_control`].
    pub fn register_control(&self, sock: &impl AsFd, rank: u32, local_rank: u32) -> Result<()> {
        self.device.register_control(sock, rank, local_rank)
    }

    /// Attaches a connected TCP socket as the control connection peer
    /// `rank`'s module writes; see [`Device::register_control_in`].
    pub fn register_control_in(&self, sock: &impl AsFd, rank: u32, local_rank: u32) -> Result<()> {
        self.device.register_control_in(sock, rank, local_rank)
    }

    /// Attaches a connected TCP socket as this process's connection to
    /// itself; see [`Device::register_self`].
    pub fn register_self(&self, sock: &impl AsFd, rank: u32) -> Result<()> {
        self.device.register_self(sock, rank)
    }

    /// Detaches the sockets of peer `rank`. Receives in the middle of a
    /// message from it complete with [`crate::RecvError::Unregistered`];
    /// with a control connection, offers to it and receives waiting for
    /// its data end with a connection failure.
    pub fn unregister_socket(&self, rank: u32) -> Result<()> {
        self.device.unregister_socket(rank)
    }

    /// This endpoint's counters.
    pub fn stats(&self) -> Result<abi::EndpointStats> {
        self.device.stats()
    }

    /// This endpoint's rendezvous counters.
    pub fn rndv_stats(&self) -> Result<abi::RendezvousStats> {
        raw::rndv_stats(self.device.as_fd()).map_err(|e| Error::io("O2G_IOC_RNDV_STATS", e))
    }

    /// Takes the eager credit peer `rank` granted since the last call
    /// (see [`abi::O2G_IOC_TAKE_CREDIT`]): `(bytes, messages)` to add to
    /// what may still go to it eagerly.
    pub fn take_credit(&self, rank: u32) -> Result<(u64, u32)> {
        let mut args = abi::CreditArgs {
            rank,
            ..Default::default()
        };
        raw::take_credit(self.device.as_fd(), &mut args)
            .map_err(|e| Error::io("O2G_IOC_TAKE_CREDIT", e))?;
        Ok((args.bytes, args.msgs))
    }

    /// Eager messages the dump area holds at most, all peers together,
    /// with eager credit (0 without).
    pub fn eager_slots(&self) -> u32 {
        self.layout.eager_slots
    }

    /// The counters of the connection to peer `rank`.
    pub fn socket_stats(&self, rank: u32) -> Result<abi::SocketStats> {
        self.device.socket_stats(rank)
    }

    /// Every endpoint of the module (all processes), with its counters.
    pub fn list_endpoints(&self) -> Result<EndpointListing> {
        self.device.list_endpoints()
    }

    /// Waits until the ring holds unreaped completions or an unexpected
    /// message was stored since the previous poll, or until `timeout`
    /// (`None` waits without limit, `Some(Duration::ZERO)` does not wait).
    /// Returns empty events after a timeout.
    ///
    /// # Errors
    ///
    /// [`Error::Interrupted`] if a signal arrived first (`EINTR`): poll
    /// again. Others as [`Error::Io`].
    pub fn poll(&self, timeout: Option<Duration>) -> Result<PollEvents> {
        let mut args = abi::PollArgs {
            timeout_ns: timeout_ns(timeout),
            ..Default::default()
        };
        raw::poll(self.device.as_fd(), &mut args).map_err(|e| Error::io("O2G_IOC_POLL", e))?;
        Ok(PollEvents::from_bits(args.events))
    }

    /// Posts a receive into `buf` (all `buf.len()` bytes of it; the spare
    /// capacity is not used) for messages matching `sel`.
    ///
    /// If no stored message matches, the receive is queued and the endpoint
    /// keeps `buf` until [`Endpoint::reap`] returns it in a [`Completed`]
    /// carrying `user_data`, or [`Endpoint::cancel`] returns it. If a stored
    /// unexpected message matches, `buf` comes straight back with the
    /// message.
    ///
    /// # Errors
    ///
    /// The buffer comes back in the [`PostError`]:
    /// [`Error::InvalidArgument`] for a bad selector or a buffer beyond
    /// [`abi::O2G_MAX_MESSAGE`]; [`Error::RingFull`] when as many receives are
    /// in flight as the ring holds; the module's errno as [`Error::Io`] (e.g.
    /// `ENOBUFS` beyond the pin budget).
    pub fn post(
        &mut self,
        buf: Vec<u8>,
        sel: Selector,
        user_data: u64,
    ) -> Result<Post<'_>, PostError> {
        let checks = crate::selector::encode(sel)
            .and_then(|enc| check_len(buf.len()).map(|()| enc))
            .and_then(|enc| self.reserve().map(|()| enc));
        let enc = match checks {
            Ok(enc) => enc,
            Err(error) => {
                return Err(PostError {
                    error,
                    buf: Some(buf),
                })
            }
        };
        let key = self.posted.insert(PostedBuffer {
            buf,
            user_data,
            recv_id: 0,
        });
        let (ptr, len) = match self.posted.get_mut(key) {
            Some(p) => (p.buf.as_mut_ptr(), p.buf.len()),
            None => unreachable!("a key just inserted names its value"),
        };
        // SAFETY: `ptr..ptr + len` is the heap buffer of a `Vec` that now
        // lives in `self.posted` under `key`. If the receive is queued, that
        // entry leaves the slab only when its completion is reaped (`reap`)
        // or a cancel returned 1 (`cancel`, or `settle` on drop, which leaks
        // the buffers it cannot settle). Moving the `Vec` within the slab
        // does not move its heap buffer, and this crate forms no reference to
        // the bytes while the entry is there. So the memory stays allocated
        // and untouched by the process for as long as the module may write it.
        let answer = unsafe { self.post_ioctl(ptr, len, enc, key.to_user_data()) };
        let args = match answer {
            Ok(args) => args,
            Err(error) => {
                self.release();
                return Err(PostError {
                    error,
                    buf: self.posted.remove(key).map(|p| p.buf),
                });
            }
        };
        match args.outcome {
            // A matched request to send: queued, but no longer cancellable
            // (its id is zero).
            abi::outcome::QUEUED | abi::outcome::CLEARED => {
                if let Some(p) = self.posted.get_mut(key) {
                    p.recv_id = args.recv_id;
                }
                Ok(Post::Queued(RecvHandle {
                    key,
                    recv_id: args.recv_id,
                }))
            }
            abi::outcome::RESCAN => {
                self.release();
                let buf = self.posted.remove(key).map(|p| p.buf).unwrap_or_default();
                Ok(Post::Rescan(buf))
            }
            abi::outcome::UNEXPECTED => {
                self.release();
                let buf = self.posted.remove(key).map(|p| p.buf).unwrap_or_default();
                match UnexpectedMessage::take(&self.device, &self.mapping, &self.layout, args.msg) {
                    Ok(msg) => Ok(Post::Unexpected { msg, buf }),
                    Err(error) => Err(PostError {
                        error,
                        buf: Some(buf),
                    }),
                }
            }
            other => Err(PostError {
                error: unknown_outcome("O2G_IOC_POST", other),
                buf: None,
            }),
        }
    }

    /// Posts a receive into `len` bytes at `buf`, with `user_data` echoed in
    /// its completion.
    ///
    /// # Safety
    ///
    /// If this returns [`PostOutcome::Queued`], the module writes into
    /// `buf..buf + len`, from softirq context, at any time until one of:
    ///
    /// - [`Endpoint::reap`] returned the receive's [`Reaped::Raw`] completion
    ///   (matched by `user_data`);
    /// - [`Endpoint::cancel_raw`] for its `recv_id` returned `Ok(true)`;
    /// - the endpoint's open file was released: this `Endpoint` was dropped
    ///   *and* no duplicate of its file descriptor (`dup`, a forked child,
    ///   `SCM_RIGHTS`) is still open.
    ///
    /// Until then the memory must stay allocated, mapped and writable, and the process
    /// must neither read nor write it, nor hold any Rust reference to it.
    /// The memory need not be initialised and may have any alignment.
    /// On any other result (an error, [`PostOutcome::Unexpected`]) the module
    /// did not keep the buffer, except after an [`Error::BadAnswer`] about an
    /// unknown outcome, after which the buffer must be treated as queued.
    ///
    /// `user_data` must have its top bit clear (it marks [`Endpoint::post`]'s
    /// receives); otherwise the post is refused with
    /// [`Error::InvalidArgument`].
    pub unsafe fn post_raw(
        &self,
        buf: *mut u8,
        len: usize,
        sel: Selector,
        user_data: u64,
    ) -> Result<PostOutcome<'_>> {
        if user_data & OWNED_BIT != 0 {
            return Err(Error::InvalidArgument(format!(
                "user_data {user_data:#x} has the top bit set, which marks receives posted with Endpoint::post"
            )));
        }
        let enc = crate::selector::encode(sel)?;
        check_len(len)?;
        self.reserve()?;
        // SAFETY: The caller upholds `post_raw`'s contract, which is
        // `post_ioctl`'s.
        let args = match unsafe { self.post_ioctl(buf, len, enc, user_data) } {
            Ok(args) => args,
            Err(e) => {
                self.release();
                return Err(e);
            }
        };
        match args.outcome {
            abi::outcome::QUEUED | abi::outcome::CLEARED => Ok(PostOutcome::Queued {
                recv_id: args.recv_id,
            }),
            abi::outcome::UNEXPECTED => {
                self.release();
                UnexpectedMessage::take(&self.device, &self.mapping, &self.layout, args.msg)
                    .map(PostOutcome::Unexpected)
            }
            abi::outcome::RESCAN => {
                self.release();
                Ok(PostOutcome::Rescan)
            }
            other => Err(unknown_outcome("O2G_IOC_POST", other)),
        }
    }

    /// Issues `O2G_IOC_POST`.
    ///
    /// # Safety
    ///
    /// As [`raw::post`]: if the outcome is `QUEUED`, `buf..buf + len` must
    /// stay allocated and unaccessed by the process until the receive is
    /// settled.
    unsafe fn post_ioctl(
        &self,
        buf: *mut u8,
        len: usize,
        enc: Encoded,
        user_data: u64,
    ) -> Result<abi::PostArgs> {
        let mut args = abi::PostArgs {
            buf: buf as u64,
            buf_len: len as u64,
            user_data,
            source: enc.source,
            tag: enc.tag,
            context: enc.context,
            ring_seen: self.ring.head(),
            ..Default::default()
        };
        // SAFETY: Forwarded from this function's contract.
        unsafe { raw::post(self.device.as_fd(), &mut args) }
            .map_err(|e| Error::io("O2G_IOC_POST", e))?;
        Ok(args)
    }

    /// Cancels a receive posted with [`Endpoint::post`]. Returns its buffer
    /// if it was cancelled, `None` if it was too late: the receive matched
    /// and its buffer comes (or already came) back through
    /// [`Endpoint::reap`]. A handle of a receive already reaped or cancelled
    /// gives `None` without asking the module.
    pub fn cancel(&mut self, handle: &RecvHandle) -> Result<Option<Vec<u8>>> {
        if self.posted.get(handle.key).is_none() {
            return Ok(None);
        }
        if self.cancel_ioctl(handle.recv_id)? {
            Ok(self.posted.remove(handle.key).map(|p| p.buf))
        } else {
            Ok(None)
        }
    }

    /// Cancels a receive posted with [`Endpoint::post_raw`]: `true` if it was
    /// cancelled (the module no longer writes its buffer and no completion
    /// will appear), `false` if it already matched (its completion will
    /// appear, or has). Do not pass the id of a receive posted with
    /// [`Endpoint::post`]: its buffer would then stay with the endpoint
    /// until drop, and be leaked.
    pub fn cancel_raw(&self, recv_id: u64) -> Result<bool> {
        self.cancel_ioctl(recv_id)
    }

    fn cancel_ioctl(&self, recv_id: u64) -> Result<bool> {
        // Id zero: a receive that matched a request to send when posted.
        if recv_id == 0 {
            return Ok(false);
        }
        let rc = raw::cancel(self.device.as_fd(), &abi::IdArg { id: recv_id })
            .map_err(|e| Error::io("O2G_IOC_CANCEL", e))?;
        match rc {
            1 => {
                self.release();
                Ok(true)
            }
            0 => Ok(false),
            n => Err(Error::bad_answer(
                "O2G_IOC_CANCEL",
                format!("returned {n}; only 1 (cancelled) and 0 (too late) are defined"),
            )),
        }
    }

    /// Takes the next completion from the ring, without waiting; see
    /// [`Endpoint::poll`] to wait.
    ///
    /// # Errors
    ///
    /// [`Error::RingOverrun`] if the module overwrote unread records (nothing
    /// is consumed); [`Error::BadAnswer`] for a record that names no buffer
    /// of [`Endpoint::post`] (it is consumed; reap again for the next one).
    pub fn reap(&mut self) -> Result<Option<Reaped>> {
        let Some(record) = self.ring.pop(&self.mapping)? else {
            return Ok(None);
        };
        if record.kind == abi::record_kind::STORED {
            let msg = abi::StoredMessage {
                id: record.msg_id,
                offset: record.offset,
                len: record.len,
                source: record.source,
                tag: record.tag,
                context: record.context,
                flags: 0,
            };
            return match Announced::new(&self.layout, &msg) {
                Ok(a) => Ok(Some(Reaped::Stored(a))),
                Err(e) => {
                    // Give the id back so that the module's accounting stays
                    // right; its answer was wrong already.
                    let _ = raw::free(self.device.as_fd(), &abi::IdArg { id: msg.id });
                    Err(e)
                }
            };
        }
        if record.kind == abi::record_kind::REQUEST {
            return Ok(Some(Reaped::Request {
                envelope: Envelope {
                    source: record.source,
                    tag: record.tag,
                    context: record.context,
                },
                len: record.len,
            }));
        }
        if record.kind == abi::record_kind::SENT {
            self.release();
            return Ok(Some(Reaped::Sent(Sent {
                user_data: record.user_data,
                len: record.len,
                status: RecvError::from_status(record.status),
            })));
        }
        if record.kind != abi::record_kind::COMPLETED {
            return Err(Error::bad_answer(
                "completion ring",
                format!("a record of unknown kind {}", record.kind),
            ));
        }
        self.release();
        let Some(key) = Key::from_user_data(record.user_data) else {
            return Ok(Some(Reaped::Raw(RawCompleted::from(&record))));
        };
        match self.posted.remove(key) {
            Some(p) => Ok(Some(Reaped::Owned(Completed::new(
                p.buf,
                p.user_data,
                &record,
            )))),
            None => Err(Error::bad_answer(
                "completion ring",
                format!(
                    "a record's user_data {:#x} names no posted buffer",
                    record.user_data
                ),
            )),
        }
    }

    /// The payload of an announced message, read in place.
    pub fn announced_data(&self, msg: &Announced) -> &[u8] {
        // SAFETY: `msg.range` was checked to lie in the dump area of this
        // endpoint's mapping, which lives as long as `&self`. The module
        // filled the bytes before announcing the message and does not touch
        // them until the message is given back, which `give_back` does by
        // value, so not while this borrow of `msg` lives; `Announced` is
        // neither `Clone` nor constructible outside this crate. This process
        // never writes the dump area.
        unsafe { self.mapping.bytes(msg.range.start, msg.range.len()) }
    }

    /// Gives an announced message's dump space back, through the release
    /// ring: no system call unless the ring is full or a connection waits
    /// for room ([`abi::O2G_STALLED`]).
    pub fn give_back(&mut self, msg: Announced) -> Result<()> {
        let prod = self.mapping.atomic_u32(abi::O2G_RELEASE_PROD);
        let cons = self.mapping.atomic_u32(abi::O2G_RELEASE_CONS);
        let p = prod.load(Ordering::Relaxed);
        if p.wrapping_sub(cons.load(Ordering::Acquire)) >= abi::O2G_RELEASE_ENTRIES {
            self.sync()?;
        }
        let slot = (p % abi::O2G_RELEASE_ENTRIES) as usize;
        self.mapping
            .atomic_u64(abi::O2G_RELEASE_RING + slot * 8)
            .store(msg.id, Ordering::Relaxed);
        prod.store(p.wrapping_add(1), Ordering::Release);
        // Pairs with the module's full barrier between publishing a stall
        // and its last look at the release ring: one of us sees the other.
        std::sync::atomic::fence(Ordering::SeqCst);
        if self
            .mapping
            .atomic_u32(abi::O2G_STALLED)
            .load(Ordering::Relaxed)
            != 0
        {
            self.sync()?;
        }
        Ok(())
    }

    /// Applies the release ring now and resumes stalled connections
    /// (`O2G_IOC_SYNC`).
    pub fn sync(&self) -> Result<()> {
        raw::sync(self.device.as_fd()).map_err(|e| Error::io("O2G_IOC_SYNC", e))
    }

    /// Connections the module stopped reading for want of room
    /// ([`abi::O2G_STALLED`]): a hint, it may change at once.
    pub fn stalled_connections(&self) -> u32 {
        self.mapping
            .atomic_u32(abi::O2G_STALLED)
            .load(Ordering::Acquire)
    }

    /// Whether the module stopped announcing stored messages because the
    /// ring was full (see [`abi::O2G_INIT_NOTICES`]): later messages are
    /// found by posts and probes only.
    pub fn notices_stopped(&self) -> bool {
        self.mapping
            .atomic_u32(abi::O2G_NOTICES_STOPPED)
            .load(Ordering::Acquire)
            != 0
    }

    /// Whether the ring holds nothing to reap: [`Endpoint::reap`] would
    /// return `None` (a cheap test for callers that poll).
    pub fn ring_is_empty(&self) -> bool {
        self.ring.is_empty(&self.mapping)
    }

    /// Completions in the ring not yet reaped.
    pub fn pending_completions(&self) -> Result<u32> {
        self.ring.pending(&self.mapping)
    }

    /// Receives posted and neither reaped nor cancelled, owned and raw.
    pub fn in_flight(&self) -> u32 {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// Looks for a stored unexpected message matching `sel` (`MPI_Iprobe`)
    /// and leaves it in place. Only its envelope is returned: its bytes are
    /// not this process's to read until a post or
    /// [`Endpoint::probe_claim`] takes it. Its envelope and length.
    pub fn probe(&self, sel: Selector) -> Result<Option<(Envelope, u64)>> {
        Ok(self
            .probe_ioctl(sel, 0)?
            .map(|m| (crate::unexpected::envelope_of(&m), m.len)))
    }

    /// Looks for a stored unexpected message matching `sel` and takes it out
    /// of matching (`MPI_Improbe`); it is this process's until the returned
    /// guard is freed or dropped.
    pub fn probe_claim(&self, sel: Selector) -> Result<Option<UnexpectedMessage<'_>>> {
        match self.probe_ioctl(sel, abi::O2G_PROBE_CLAIM)? {
            None => Ok(None),
            Some(msg) => {
                UnexpectedMessage::take(&self.device, &self.mapping, &self.layout, msg).map(Some)
            }
        }
    }

    fn probe_ioctl(&self, sel: Selector, flags: u32) -> Result<Option<abi::StoredMessage>> {
        let enc = crate::selector::encode(sel)?;
        let mut args = abi::ProbeArgs {
            source: enc.source,
            tag: enc.tag,
            context: enc.context,
            flags,
            ..Default::default()
        };
        raw::probe(self.device.as_fd(), &mut args).map_err(|e| Error::io("O2G_IOC_PROBE", e))?;
        match args.outcome {
            abi::outcome::NONE => Ok(None),
            abi::outcome::UNEXPECTED => Ok(Some(args.msg)),
            other => Err(unknown_outcome("O2G_IOC_PROBE", other)),
        }
    }

    /// Counts one more receive in flight, if the ring has room for its
    /// completion.
    fn reserve(&self) -> Result<()> {
        let entries = self.layout.ring_entries;
        self.in_flight
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < entries).then_some(n + 1)
            })
            .map(drop)
            .map_err(|in_flight| Error::RingFull { in_flight })
    }

    /// Counts one receive fewer in flight.
    fn release(&self) {
        let _ = self
            .in_flight
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                Some(n.saturating_sub(1))
            });
    }
}

impl Drop for Endpoint {
    /// Settles the receives still posted before any buffer is freed.
    ///
    /// Closing the file would make the module stop writing and unpin, but
    /// only once the *last* reference to the open file goes: a duplicated
    /// descriptor (through [`AsFd`]) or a forked child keeps it alive. So
    /// every receive is cancelled first; those that were too late and whose
    /// completion is not in the ring yet (a message arriving right now) have
    /// their buffers leaked, never freed. Then the fields drop in order:
    /// unmap, close, free the settled buffers. Receives posted with
    /// [`Endpoint::post_raw`] are the caller's to settle.
    fn drop(&mut self) {
        if self.posted.is_empty() {
            return;
        }
        let fd = self.device.as_fd();
        let unsettled = settle(&mut self.posted, &mut self.ring, &self.mapping, |id| {
            matches!(raw::cancel(fd, &abi::IdArg { id }), Ok(1))
        });
        for buf in unsettled {
            std::mem::forget(buf);
        }
    }
}

impl AsFd for Endpoint {
    /// The device's descriptor, for `poll(2)`-style integration and tests.
    /// A duplicate of it keeps the endpoint alive after this `Endpoint` is
    /// dropped; see the [`Drop`] impl.
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.device.as_fd()
    }
}

impl fmt::Debug for Endpoint {
    // Never prints buffer contents: the module may be writing them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Endpoint")
            .field("device", &self.device)
            .field("layout", &self.layout)
            .field("posted_buffers", &self.posted.len())
            .field("in_flight", &self.in_flight())
            .finish_non_exhaustive()
    }
}

/// Makes sure the module no longer writes into any buffer left in `posted`:
/// cancels every receive (`cancel` reports whether the module answered 1),
/// then takes the completions already in the ring. Returns, removed from
/// `posted`, the buffers of receives that were too late to cancel and have
/// not completed yet: the module may still be writing them.
fn settle(
    posted: &mut Slab<PostedBuffer>,
    ring: &mut RingConsumer,
    mapping: &Mapping,
    mut cancel: impl FnMut(u64) -> bool,
) -> Vec<Vec<u8>> {
    let mut unsettled = HashSet::new();
    for key in posted.keys() {
        if let Some(p) = posted.get(key) {
            if !cancel(p.recv_id) {
                unsettled.insert(key);
            }
        }
    }
    // A completion means the module is done with that buffer. A broken ring
    // ends the drain; what it did not settle stays unsettled.
    while let Ok(Some(record)) = ring.pop(mapping) {
        if let Some(key) = Key::from_user_data(record.user_data) {
            unsettled.remove(&key);
        }
    }
    unsettled
        .into_iter()
        .filter_map(|key| posted.remove(key).map(|p| p.buf))
        .collect()
}

fn check_len(len: usize) -> Result<()> {
    if len as u64 > abi::O2G_MAX_MESSAGE {
        return Err(Error::InvalidArgument(format!(
            "receive buffer of {len} bytes is larger than the maximum message, {} bytes",
            abi::O2G_MAX_MESSAGE
        )));
    }
    Ok(())
}

fn unknown_outcome(op: &'static str, outcome: u32) -> Error {
    Error::bad_answer(op, format!("unknown outcome {outcome}"))
}

mod offer;
#[cfg(test)]
mod tests;
mod window;
