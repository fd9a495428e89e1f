//! Transports: how bytes move between the processes of a job.
//!
//! The MPI layer above (communicators, point-to-point, collectives) never
//! touches a socket. It talks to exactly one [`Transport`], chosen at
//! [`crate::initialize`] from the environment variable `O2G_TRANSPORT`:
//!
//! | value | file | what it is |
//! |---|---|---|
//! | `sockets-epoll` (default) | `epoll.rs` | TCP, readiness through epoll (mio) |
//! | `sockets-select` | `select.rs` | TCP, the classic `select` + nonblocking read loop (the YAMPII/Sock baseline of the o2g paper; deliberately not modernised) |
//! | `sockets-poll` | `poll.rs` | the `select` baseline with `poll` in its place: the same full rebuild and one call over every connection each round, without `FD_SETSIZE` (for the idle-connection figures past 1024 descriptors) |
//! | `self` | `self_loop.rs` | no network: a world of one process sending to itself |
//! | `o2g` | `o2g.rs` | the kernel module (`/dev/o2g`) matches and receives; sends are plain writes; no fallback when the module is missing |
//! | `dimmnet` | `dimmnet/` | the emulated DIMMnet-1 NIC (`o2g-dimmnet`) over a `/dev/shm` file or a QEMU ivshmem region; user-space matching, polling receive |
//! | `hyphenlink` | `hyphenlink/` | the emulated HyphenLink board (`o2g-hyphen`) over shared memory (`/dev/shm` or an ivshmem BAR across VMs): AP1000 receive rings per sender, PB/EXT wake-ups |
//!
//! # The contract every transport provides
//!
//! A transport serves one process of a world of `size` processes and
//! addresses peers by their *world* rank; communicators, and so context
//! ids and communicator-relative ranks, are already folded into the
//! [`Envelope`] the MPI layer hands down. A transport must:
//!
//! 1. **Send** a message (`send`, `isend`) to any world rank, itself
//!    included, as one o2g-core wire header plus payload, preserving the
//!    order of messages from this process to each destination (MPI
//!    non-overtaking, §3.5). `send` returns when the caller's buffer may be
//!    reused; `isend` returns at once with a token, copying whatever it
//!    could not hand to the system yet, so the token never refers to the
//!    caller's memory. While a send waits for room, the transport keeps
//!    receiving, so two processes sending to each other cannot deadlock.
//! 2. **Match** arriving messages against posted receives with MPI
//!    semantics: ANY_SOURCE/ANY_TAG, non-overtaking, no match across
//!    contexts, probe, cancel. The socket transports and `self` all use the
//!    matching engine of `o2g-core` (through `matcher.rs`), so there is one
//!    implementation of matching in user space; the `o2g` transport uses
//!    the same engine inside the kernel. Envelopes carry the sender's
//!    world rank, which a transport must not take on a peer's word: a
//!    message whose envelope names another rank than the peer it came
//!    from is a protocol error that fails that peer (5.), never a message
//!    from the rank it names (for `o2g` the module must check it). Peers
//!    prove they belong to the job when they connect (the hello of
//!    `bootstrap.rs` carries the job secret).
//! 3. **Complete** receives (`post_recv`, `test_recv`): a completed receive
//!    yields the envelope, the length the sender sent and the payload
//!    truncated to the posted capacity; the MPI layer turns a longer
//!    message into `MPI_ERR_TRUNCATE`.
//! 4. **Progress** (`progress`): move bytes in both directions, waiting at
//!    most the given time for something to happen. Every other method may
//!    only do work that needs no waiting.
//! 5. **Report dead peers** (`peer_failure`): a closed or broken connection
//!    marks the peer dead; receives that depend on it fail instead of
//!    hanging, sends to it fail.
//! 6. **Finish** (`flush`): deliver every queued byte before the process
//!    leaves MPI.
//!
//! Everything is single-threaded (`MPI_THREAD_SINGLE`, §11.2.3): the MPI
//! layer owns the transport behind a `RefCell`.

use std::time::Duration;

use o2g_core::proto::envelope::{Envelope, Selector};

use crate::config::{Config, TransportKind};
use crate::error::{Error, Result};
use crate::pmi::Pmi;

mod announced;
mod backoff;
pub(crate) mod bootstrap;
mod cgroup_cpus;
pub(crate) mod dimmnet;
mod emulated_region;
mod epoll;
mod host_cpus;
mod hyphenlink;
pub(crate) mod matcher;
mod model_time;
mod o2g;
mod outbox;
mod poll;
pub(crate) mod pool;
mod select;
pub(crate) mod self_loop;
mod sockets;
mod spin;
pub mod zerocopy;

pub(crate) use matcher::{RecvOutcome, RecvToken};

use matcher::Matcher;
use outbox::Sends;

/// Names an `isend` until it completes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct SendToken(pub(crate) u64);

/// What every transport provides (see the module documentation): its send
/// half, its receive half, and what ties the two together, moving bytes and
/// knowing who is alive.
pub(crate) trait Transport: SendHalf + ReceiveHalf {
    /// Moves bytes, waiting at most `timeout` (forever for `None`) when
    /// nothing can be done at once.
    fn progress(&mut self, timeout: Option<Duration>) -> Result<()>;

    /// Why world rank `rank` is dead, or `None` while it is alive.
    fn peer_failure(&self, rank: u32) -> Option<String>;

    /// Delivers every queued byte, waiting at most `timeout`.
    fn flush(&mut self, timeout: Duration) -> Result<()> {
        let deadline = std::time::Instant::now() + timeout;
        while self.has_queued_sends() {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return Err(Error::Timeout("flushing queued sends at finalize".into()));
            }
            self.progress(Some(left.min(Duration::from_millis(100))))?;
        }
        Ok(())
    }

    /// Enters a barrier of every world rank that the hardware runs (the
    /// Fagus AOTF barrier of `dimmnet`); `Ok(false)` when the transport has
    /// none, and the MPI layer then synchronises with messages.
    fn enter_world_barrier(&mut self) -> Result<bool> {
        Ok(false)
    }

    /// Whether the barrier entered last has completed; never waits.
    fn test_world_barrier(&mut self) -> Result<bool> {
        Ok(true)
    }

    /// The kernel module's memory windows, on a transport that has them
    /// (`o2g`, with a module that serves windows).
    fn windows(&mut self) -> Option<&mut dyn Windows> {
        None
    }
}

/// Memory windows the o2g module serves as the passive target's agent
/// (`kmod/window.rs`, `docs/protocol.md`, Windows): it keeps their locks,
/// places the lock holders' puts in the protocol handler and answers lock
/// requests on its own, while the target process computes.
pub(crate) trait Windows {
    /// Registers `len` bytes at `base` as this process's window for
    /// `context`; its id.
    ///
    /// # Safety
    ///
    /// The memory must stay valid until [`Windows::unregister_window`]:
    /// the module writes it whenever a lock holder's put arrives.
    unsafe fn register_window(&mut self, base: *mut u8, len: usize, context: u32) -> Result<u32>;

    /// Unregisters window `id`: no put lands in it after this returns.
    fn unregister_window(&mut self, id: u32) -> Result<()>;

    /// Puts window `id` placed so far.
    fn placed_puts(&mut self, id: u32) -> Result<u64>;

    /// This process has completed `epoch` fences on window `id`: lock
    /// requests made after as many may be granted.
    fn set_epoch(&mut self, id: u32, epoch: u64) -> Result<()>;

    /// Posts a receive of `capacity` bytes for `sel` in the module itself
    /// (a small receive otherwise waits in the transport for its message
    /// to be stored, which an answer never is).
    fn post_answer(&mut self, sel: Selector, capacity: usize) -> Result<RecvToken>;

    /// Starts a window frame to `dest` on its messages connection, in
    /// order with the messages sent to it: a `Put` of `payload`, or a
    /// `Lock` or `Get` request (`kind`), with `env`, the length field
    /// `len` (the payload's length for a put) and `reference` as the
    /// wire format wants them. The payload is copied if it does not go
    /// out at once.
    fn window_frame(
        &mut self,
        dest: u32,
        kind: o2g_core::proto::wire::Kind,
        env: Envelope,
        len: u64,
        reference: u32,
        payload: &[u8],
    ) -> Result<SendToken>;
}

/// The send half of a [`Transport`]. A transport writes its own `send` and
/// `isend`; the bookkeeping of `isend` tokens ([`Sends`]) it inherits.
pub(crate) trait SendHalf {
    /// Sends `data` to world rank `dest` and returns when `data` may be
    /// reused, receiving meanwhile.
    fn send(&mut self, dest: u32, env: Envelope, data: &[u8]) -> Result<()>;

    /// Starts sending `data` to world rank `dest`; never keeps a reference
    /// to `data`.
    fn isend(&mut self, dest: u32, env: Envelope, data: &[u8]) -> Result<SendToken>;

    /// The `isend`s not yet completed or not yet asked about.
    fn sends(&mut self) -> &mut Sends;

    /// Whether the send completed; a completed token is forgotten.
    fn test_send(&mut self, token: SendToken) -> Result<bool> {
        self.sends().test(token)
    }

    /// The caller no longer cares about this send; it still goes out.
    /// For a send started with [`SendHalf::isend_in_place`], returns only
    /// once the transport no longer reads the caller's memory.
    fn release_send(&mut self, token: SendToken) {
        self.sends().release(token);
    }

    /// Starts sending the `len` bytes at `data` to world rank `dest`,
    /// reading them from the caller's memory until the send completes (no
    /// copy); `None` where the transport would copy anyway (then use
    /// [`SendHalf::isend`]).
    ///
    /// # Safety
    ///
    /// On `Some`, `data..data + len` stays allocated and unchanged until
    /// [`SendHalf::test_send`] returned true for the token or
    /// [`SendHalf::release_send`] returned for it.
    unsafe fn isend_in_place(
        &mut self,
        _dest: u32,
        _env: Envelope,
        _data: *const u8,
        _len: usize,
    ) -> Result<Option<SendToken>> {
        Ok(None)
    }

    /// Starts sending the `len` bytes at `data` to world rank `dest`,
    /// possibly reading them from the caller's memory until the send
    /// completes. Unlike [`SendHalf::isend_in_place`], the caller promises
    /// never to leak the send (`MPI_Isend` from C, whose caller owns the
    /// buffer until completion), so a transport that reads the memory from
    /// user space (the socket transports) may lend it too. `None`: use
    /// [`SendHalf::isend`].
    ///
    /// # Safety
    ///
    /// On `Some`, `data..data + len` stays allocated and unchanged until
    /// [`SendHalf::test_send`] returned true for the token or
    /// [`SendHalf::release_send`] returned for it, and one of the two
    /// always happens before the memory is reused or freed.
    unsafe fn isend_lent(
        &mut self,
        dest: u32,
        env: Envelope,
        data: *const u8,
        len: usize,
    ) -> Result<Option<SendToken>> {
        // SAFETY: This contract is stronger than `isend_in_place`'s.
        unsafe { self.isend_in_place(dest, env, data, len) }
    }

    /// Whether a send to a live peer still has bytes queued.
    fn has_queued_sends(&self) -> bool;
}

/// The receive half of a [`Transport`]. The user-space transports inherit
/// it whole from their [`Matcher`] ([`ReceivesThroughMatcher`]); `o2g`,
/// whose receives the kernel matches, writes its own.
pub(crate) trait ReceiveHalf {
    /// Posts a receive for at most `capacity` bytes.
    fn post_recv(&mut self, sel: Selector, capacity: usize) -> Result<RecvToken>;

    /// Posts a receive whose payload the transport writes straight into
    /// `capacity` bytes at `dst`, saving the copy out of its own buffer;
    /// it completes with [`RecvOutcome::InPlace`]. `None`: the transport
    /// has no such path for this receive (use [`ReceiveHalf::post_recv`]).
    ///
    /// # Safety
    ///
    /// On `Some`, `dst..dst + capacity` stays allocated and writable, and
    /// the caller neither reads nor writes it nor holds a reference to it,
    /// until [`ReceiveHalf::test_recv`] returned this token's outcome or
    /// [`ReceiveHalf::release_recv`] returned for it (which then waits for
    /// the transport to let go of the memory).
    unsafe fn post_recv_in_place(
        &mut self,
        _sel: Selector,
        _dst: *mut u8,
        _capacity: usize,
    ) -> Result<Option<RecvToken>> {
        Ok(None)
    }

    /// Takes the outcome of a completed receive; `None` while pending.
    fn test_recv(&mut self, token: RecvToken) -> Option<RecvOutcome>;

    /// Cancels a receive that has not matched yet (§3.8.4); `false` if it
    /// already matched, in which case it completes normally.
    fn cancel_recv(&mut self, token: RecvToken) -> bool;

    /// The caller no longer cares about this receive: cancel it, or drop
    /// its data when it completes.
    fn release_recv(&mut self, token: RecvToken);

    /// The envelope and length of the message a receive with `sel` would
    /// take now, without taking it (§3.8.1).
    fn iprobe(&mut self, sel: Selector) -> Option<(Envelope, u64)>;

    /// Envelopes of the synchronous-mode messages ([`Envelope::is_sync`])
    /// that matched a receive since the last call, so the MPI layer can
    /// acknowledge them (see `synchronous.rs`).
    fn take_sync_matches(&mut self) -> Vec<Envelope>;

    /// Whether [`ReceiveHalf::take_sync_matches`] has any: the cheap test
    /// made after every call into the transport.
    fn has_sync_matches(&mut self) -> bool;

    /// Takes back the buffer of a completed receive's data once the MPI
    /// layer has copied it out, to reuse it; dropping it is fine too.
    fn recycle(&mut self, _buf: Vec<u8>) {}
}

/// A transport whose arrivals all go through one [`Matcher`]: its whole
/// receive half is the matcher's.
pub(crate) trait ReceivesThroughMatcher {
    /// The matcher every arrival goes through.
    fn matcher(&mut self) -> &mut Matcher;
}

impl<T: ReceivesThroughMatcher> ReceiveHalf for T {
    fn post_recv(&mut self, sel: Selector, capacity: usize) -> Result<RecvToken> {
        self.matcher().post(sel, capacity)
    }

    unsafe fn post_recv_in_place(
        &mut self,
        sel: Selector,
        dst: *mut u8,
        capacity: usize,
    ) -> Result<Option<RecvToken>> {
        // SAFETY: The trait's contract is the matcher's.
        unsafe { self.matcher().post_in_place(sel, dst, capacity) }.map(Some)
    }

    fn test_recv(&mut self, token: RecvToken) -> Option<RecvOutcome> {
        self.matcher().test(token)
    }

    fn cancel_recv(&mut self, token: RecvToken) -> bool {
        self.matcher().cancel(token)
    }

    fn release_recv(&mut self, token: RecvToken) {
        self.matcher().release(token);
    }

    fn iprobe(&mut self, sel: Selector) -> Option<(Envelope, u64)> {
        self.matcher().probe(sel)
    }

    fn recycle(&mut self, buf: Vec<u8>) {
        pool::give(buf);
    }

    fn take_sync_matches(&mut self) -> Vec<Envelope> {
        self.matcher().take_sync_matches()
    }

    fn has_sync_matches(&mut self) -> bool {
        self.matcher().has_sync_matches()
    }
}

/// Builds the transport the configuration selects, connecting to every
/// peer of the world (through `pmi` when the world has more than one
/// process).
pub(crate) fn open(config: &Config, pmi: &mut Pmi) -> Result<Box<dyn Transport>> {
    let (rank, size) = (pmi.rank(), pmi.size());
    match config.transport {
        TransportKind::SelfLoop => {
            if size != 1 {
                return Err(Error::Config(format!(
                    "O2G_TRANSPORT=self serves a world of one process, this one has {size}"
                )));
            }
            if !config.self_path {
                return Err(Error::Config(
                    "O2G_TRANSPORT=self with O2G_SELF=0 leaves no way to send".into(),
                ));
            }
            Ok(Box::new(self_loop::SelfLoop::new(config)?))
        }
        TransportKind::SocketsSelect => over_sockets(config, pmi, select::Select::new()),
        TransportKind::SocketsPoll => over_sockets(config, pmi, poll::Poll::new()),
        TransportKind::SocketsEpoll => {
            let poller = epoll::Epoll::new().map_err(|e| Error::io("epoll_create", e))?;
            over_sockets(config, pmi, poller)
        }
        TransportKind::O2g => {
            // Open the device first: a missing module fails before any
            // peer is contacted.
            let (ep, eager_limit) =
                o2g::open_endpoint(config, size + config.idle_connections as u32)?;
            let mut conns = bootstrap::connect_all(config, pmi, true)?;
            let on_this_host = bootstrap::Pairs::OnThisHost;
            bootstrap::one_way_on_this_host(&mut conns, config, pmi, "back-", on_this_host)?;
            let mut controls =
                bootstrap::connect_round(config, pmi, false, "ctl-", bootstrap::Pairs::All)?;
            // Every rank takes part; ranks on one host load one module.
            let pairs = if o2g::control_per_direction(&ep) {
                on_this_host
            } else {
                bootstrap::Pairs::Nobody
            };
            bootstrap::one_way_on_this_host(&mut controls, config, pmi, "ctl-back-", pairs)?;
            let idle = bootstrap::idle_pairs(config.idle_connections, config)?;
            Ok(Box::new(o2g::O2g::new(
                rank,
                ep,
                eager_limit,
                conns,
                controls,
                idle,
                config,
            )?))
        }
        TransportKind::Dimmnet => Ok(Box::new(dimmnet::Dimmnet::open(config, pmi)?)),
        TransportKind::HyphenLink => Ok(Box::new(hyphenlink::HyphenLink::open(config, pmi)?)),
    }
}

/// A socket transport waiting with `poller`, connected to every peer, with
/// the configured idle connections.
fn over_sockets<P: sockets::Poller + 'static>(
    config: &Config,
    pmi: &mut Pmi,
    poller: P,
) -> Result<Box<dyn Transport>> {
    let (rank, size) = (pmi.rank(), pmi.size());
    let mut conns = bootstrap::connect_all(config, pmi, !config.self_path)?;
    let idle = with_idle(&mut conns, config)?;
    Ok(Box::new(sockets::Sockets::new(
        rank, size, conns, poller, config, idle,
    )?))
}

/// Adds `O2G_IDLE_CONNECTIONS` idle connections to a socket transport's
/// links, after the real ones (pseudo-ranks `size..`), so that it watches
/// them every round as it would real peers; returns the far ends, which
/// must stay open.
fn with_idle(
    links: &mut Vec<Option<bootstrap::Link>>,
    config: &Config,
) -> Result<Vec<std::net::TcpStream>> {
    let pairs = bootstrap::idle_pairs(config.idle_connections, config)?;
    let mut far_ends = Vec::with_capacity(pairs.len());
    for (near, far) in pairs {
        links.push(Some((near, None)));
        far_ends.extend(far);
    }
    Ok(far_ends)
}
