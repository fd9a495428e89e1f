//! `o2g`: the kernel-module transport.
//!
//! Connections are made as for the socket transports (`bootstrap.rs`),
//! plus always a loopback connection to this process itself, and every
//! connection's socket is registered with this process's `/dev/o2g`
//! endpoint under the peer's world rank. From then on the module reads
//! them: in the socket's `sk_data_ready` it matches each arriving message
//! against the posted receives (o2g-core's engine, in the kernel) and
//! writes the payload straight into the posted buffer, or into the
//! endpoint's dump area when nothing matches yet.
//!
//! - **Receive:** the module announces each message it stores (no receive
//!   was posted for it) in the shared ring and hands it to this process;
//!   the same o2g-core engine the module matches with then matches those
//!   announcements against receives here (`announced.rs`). `post_recv`
//!   takes the oldest announcement it matches, copies it out of the dump
//!   area and gives the space back through the shared release ring: a
//!   receive of a message that arrived first makes no system call.
//!   Otherwise a small receive (up to [`WAIT_IN_RING_MAX`]) waits for its
//!   message's announcement, and a larger one is handed to the module
//!   (one `O2G_IOC_POST`; the module pins the buffer and writes the
//!   message straight into it). For a blocking receive that buffer is the
//!   caller's own (`post_recv_in_place`), so the payload is copied once,
//!   from the socket buffer to its destination; a nonblocking one gets a
//!   transport buffer, copied out on completion, because its request
//!   could be leaked while the module still writes. A receive posted
//!   while another one waits in the ring waits there too, so that
//!   receives still take messages in the order they were posted.
//! - **Completion:** read from the ring shared with the module, with no
//!   system call; `progress` sleeps in `O2G_IOC_POLL` only when there is
//!   nothing to do.
//! - **Send:** plain nonblocking writes of header + payload on the same
//!   sockets (`outbox.rs`), exactly as the socket transports send, so a
//!   comparison with them changes only the receive side, as in the paper.
//!   Eager messages go within the receiver's eager credit (taken from the
//!   module with `O2G_IOC_TAKE_CREDIT`); a message above
//!   `O2G_RNDV_THRESHOLD`, or one without credit, is offered to the module
//!   (`O2G_IOC_OFFER`) and only its request to send is written; the
//!   receiver's module asks for the data on the pair's control
//!   connection, which only the modules write, and this process's module
//!   sends it from the offered pages, without this process (see
//!   `docs/protocol.md`); to itself, the module copies the offer into the
//!   receive. An announced request is taken by posting the receive with
//!   exactly its envelope.
//! - **Self:** messages to oneself go through the loopback connection and
//!   the module too, so the module's engine orders every message.
//! - **Dead peers:** the module fails a connection that closes, resets or
//!   breaks the protocol, and completes the receives posted for that rank
//!   with an error; `progress` learns of failures from those completions
//!   and, when idle, from the endpoint's counters.
//!
//! - **Pins:** a receive buffer the module cannot pin (the process's
//!   `RLIMIT_MEMLOCK`, or `O2G_PIN_BUDGET`) waits in the ring instead, as a
//!   small receive does; this is said once on stderr.
//!
//! There is no fallback to another transport: without `/dev/o2g` the
//! transport refuses to start, so a benchmark measures what it names.

use std::collections::{HashMap, VecDeque};
use std::io::Read;
use std::net::{Shutdown, TcpStream};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use libo2g::{
    abi, Announced, CreditConfig, Device, Endpoint, EndpointConfig, Post, PostOutcome, Reaped,
    RecvError, RecvHandle, Sent,
};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use o2g_core::proto::credit::{Allowance, Credit};
use o2g_core::proto::envelope::{Envelope, Selector, SourceSel, TagSel};
use o2g_core::proto::matching::MsgId;
use o2g_core::proto::wire::{Encoder, Kind};

use super::announced::{Announcements, Wait};
use super::bootstrap::Link;
use super::outbox::{start_isend, Out, Sending, Sends};
use super::{ReceiveHalf, RecvOutcome, RecvToken, SendHalf, SendToken, Transport};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::request::NO_RANK;

/// Why a receive from any source failed over o2g: the module completes or
/// refuses it once every registered connection has failed.
const NO_LIVE_PEER: &str =
    "waiting for a message from any source, but no live peer is left that could send it";

/// Longest sleep in the module before the counters are checked for a
/// failed connection that no posted receive would report.
const IDLE_SLICE: Duration = Duration::from_millis(200);
/// Longest wait for room on a socket before completions are looked at.
const SEND_SLICE: Duration = Duration::from_millis(1);

/// How long an idle rank watches the completion ring before it sleeps in
/// the module: a completion within it costs no system call and no wake-up
/// (which dominates a small message's round trip). Only when the job has
/// a CPU per rank; otherwise spinning only delays the peer.
const SPIN: Duration = Duration::from_micros(100);
/// Largest receive that waits for its message's announcement instead of
/// posting a buffer to the module: copying it out of the dump area costs
/// less than pinning, unpinning and the system calls. At 16 KiB neither
/// wins clearly: through the ring, 284 and 527 us per half round trip in
/// two release boots (2026-11-23), posted in place 443 us in a third.
/// Under QEMU TCG the copy out of the dump area is slow because glibc's
/// memmove uses `rep movsb`, which TCG runs byte by byte (132 us instead
/// of 284 us with it switched off, same boot).
const WAIT_IN_RING_MAX: usize = 8 << 10;
/// Receives posted at once and unexpected messages stored at once (and
/// rendezvous sends offered at once).
const QUEUE: u32 = 1 << 14;
/// How long a blocking rendezvous send lends the caller's buffer to the
/// module before it hands over a copy instead, as the socket transports
/// do (see `docs/protocol.md`): two ranks that send large messages to
/// each other before receiving do not wait for each other.
const RNDV_WAIT: Duration = Duration::from_millis(20);
/// How long closing waits for the peers to close their control
/// connections too (see `Drop for O2g`).
const CLOSE_WAIT: Duration = Duration::from_secs(2);
/// Why a message that needs a pinned receive buffer cannot be received.
const NO_PINS_FOR_RENDEZVOUS: &str = "o2g: pinned memory for a rendezvous receive (a message \
     above O2G_RNDV_THRESHOLD lands only in a pinned buffer): raise `ulimit -l` or \
     O2G_PIN_BUDGET, or raise O2G_RNDV_THRESHOLD (and O2G_DUMP_BYTES) on every rank so that \
     such messages go eager";
/// Most bytes, and most buffers, kept for reuse by later receives.
const POOL_BYTES: usize = 64 << 20;
const POOL_BUFFERS: usize = 64;

/// Opens `/dev/o2g` and creates this process's endpoint, sized from the
/// configuration, granting eager credit to `connections` messages
/// connections (ranks below it). Fails with
/// [`Error::TransportUnavailable`] when the module is not loaded or
/// refuses.
pub(crate) fn open_endpoint(config: &Config, connections: u32) -> Result<(Endpoint, u64)> {
    let unavailable = |reason: String| Error::TransportUnavailable {
        name: "o2g".into(),
        reason,
    };
    let max_message = config.max_message.min(abi::O2G_MAX_MESSAGE);
    let cfg = EndpointConfig {
        max_posted: QUEUE,
        max_unexpected: QUEUE,
        dump_bytes: config.o2g_dump_bytes,
        max_message,
        pin_budget: config.o2g_pin_budget,
        notices: true,
        credit: Some(credit_for(config, connections, max_message)?),
    };
    let eager_limit = cfg.credit.map_or(0, |c| c.eager_limit);
    let dump = cfg.dump_bytes;
    Device::open()
        .map_err(|e| match e.raw_os_error() {
            Some(nix::libc::EMFILE) => unavailable(
                "this process already has the most o2g endpoints the module allows (16)".into(),
            ),
            _ => unavailable(e.to_string()),
        })?
        .init(cfg)
        .and_then(|ep| {
            let v = ep.version()?;
            if v.features & abi::feature::RENDEZVOUS == 0 {
                return Err(libo2g::Error::InvalidArgument(format!(
                    "the loaded o2g module (ABI {}.{}) has no rendezvous; load the o2g.ko \
                     built with this library (ABI {}.{})",
                    v.major,
                    v.minor,
                    abi::O2G_ABI_MAJOR,
                    abi::O2G_ABI_MINOR
                )));
            }
            Ok(ep)
        })
        .map_err(|e| match e.raw_os_error() {
            Some(nix::libc::ENOMEM) => unavailable(format!(
                "creating the endpoint: no memory for its {dump}-byte dump area \
                 (charged to this process's memory cgroup; lower O2G_DUMP_BYTES or \
                 raise the cgroup's memory.max): {e}"
            )),
            _ => unavailable(format!("creating the endpoint: {e}")),
        })
        .map(|ep| (ep, eager_limit))
}

/// The eager credit an endpoint grants: slots of the rendezvous
/// threshold's size (the longest eager message), divided among the
/// connections, at most `O2G_EAGER_CREDIT_MSGS` each. A dump area too
/// small for one such slot per connection gets slots of what it holds
/// per connection instead: a lower eager limit, which every rank of the
/// job computes alike from the same settings.
fn credit_for(config: &Config, connections: u32, max_message: u64) -> Result<CreditConfig> {
    let ranks = connections.max(1);
    let per_connection = config.o2g_dump_bytes / u64::from(ranks) / 64 * 64;
    if per_connection == 0 {
        return Err(Error::Config(format!(
            "o2g: the dump area (O2G_DUMP_BYTES={}) is too small for one eager message \
             slot for each of the {ranks} connections; raise O2G_DUMP_BYTES",
            config.o2g_dump_bytes
        )));
    }
    let eager_limit = config
        .rndv_threshold
        .min(max_message)
        .min(per_connection)
        .max(1);
    let probe = CreditConfig {
        eager_limit,
        window_msgs: 1,
        ranks,
    };
    let slots = probe.slots(config.o2g_dump_bytes, QUEUE) / u64::from(ranks);
    Ok(CreditConfig {
        // At least 1 (see above), at most the slots: a `u32` in the module.
        window_msgs: slots.clamp(1, u64::from(config.eager_credit.msgs)) as u32,
        ..probe
    })
}

fn lib_err(context: &str, e: libo2g::Error) -> Error {
    Error::io(context, std::io::Error::other(e))
}

/// The connection to one world rank.
struct Peer {
    /// The socket registered with the module (for oneself, the accepted
    /// end of the loopback connection).
    registered: TcpStream,
    /// For oneself, the connecting end, which is the one written to.
    writer: Option<TcpStream>,
    /// The control connection, which only the modules write (none for
    /// oneself); kept open while registered.
    control: Option<TcpStream>,
    tx: Encoder,
    out: VecDeque<Out>,
    dead: Option<String>,
}

impl Peer {
    fn wstream(&mut self) -> &mut TcpStream {
        self.writer.as_mut().unwrap_or(&mut self.registered)
    }
}

enum RecvState {
    /// Waiting for its message's announcement (in `O2g::waiting`).
    Waiting {
        /// Nobody will take the outcome: drop it when it comes.
        released: bool,
    },
    /// In the module.
    Posted {
        handle: RecvHandle,
        /// Nobody will take the outcome: drop it when it comes.
        released: bool,
    },
    /// In the module, which writes into the caller's memory
    /// (`post_recv_in_place`); released only by waiting for it.
    InPlace {
        recv_id: u64,
        cap: usize,
    },
    Done(RecvOutcome),
}

/// The `o2g` transport; see the module documentation.
pub(crate) struct O2g {
    ep: Endpoint,
    peers: Vec<Peer>,
    recvs: HashMap<RecvToken, RecvState>,
    next_recv: u64,
    sends: Sends,
    max_message: u64,
    /// The endpoint's failed-connection count when last looked at.
    failures_seen: u32,
    /// Said once that receive buffers cannot be pinned.
    warned_no_pins: bool,
    /// Idle connections (O2G_IDLE_CONNECTIONS), registered, never used.
    _idle: Vec<(TcpStream, TcpStream)>,
    /// Buffers of completed receives, kept so that a later receive finds
    /// its pages already mapped: neither faulted in nor zeroed again.
    pool: Vec<Vec<u8>>,
    pool_bytes: usize,
    /// Synchronous-mode messages matched, not yet acknowledged.
    sync_matched: Vec<Envelope>,
    /// Whether idle waits spin on the ring first ([`SPIN`]).
    spin: bool,
    /// Messages the module stored and announced that no receive has
    /// taken yet, and the receives waiting for an announcement, matched
    /// by o2g-core's engine.
    held: Announcements<Notice, WaitingRecv>,
    /// Waiting receives that an announced request to send matched, to be
    /// posted to the module once the ring is read.
    requested: VecDeque<(WaitingRecv, libo2g::Envelope)>,
    /// Messages above this many bytes go as a request to send: the
    /// threshold, or less if the dump area's slots are smaller.
    rndv_threshold: u64,
    /// Rendezvous sends the module holds, by offer user data.
    offers: HashMap<u64, Offered>,
    next_offer: u64,
    /// By rank: eager credit left for messages to it.
    credit: Vec<Allowance>,
}

/// An announcement from the module.
enum Notice {
    /// An eager message, now this process's.
    Stored(Announced),
    /// A request to send, which stays with the module: a receive takes it
    /// by posting with exactly its envelope.
    Request(libo2g::Envelope),
}

/// A rendezvous send the module holds until its `SENT` record.
struct Offered {
    dest: u32,
    /// The module's name for it.
    id: u32,
    /// The copy the module reads, for a nonblocking send (or a blocking
    /// one that stopped waiting); `None` while it reads the caller's.
    copy: Option<Vec<u8>>,
    /// The caller's memory the module reads (address and length), for a
    /// send started with `isend_in_place`, until a copy replaces it.
    lent: Option<(usize, usize)>,
    /// Set by its `SENT` record, for the sender to see.
    ended: Option<std::result::Result<(), RecvError>>,
}

/// Marks the tokens of sends started with `isend_in_place`; the rest is
/// the offer's user data.
const OFFER_TOKEN: u64 = 1 << 63;

/// What one attempt to post a receive to the module gave.
enum Attempt {
    Made(RecvState),
    /// Announcements came first, or the ring must be read: reap and retry.
    Retry,
    /// The module could not pin the buffer (`RLIMIT_MEMLOCK` or the pin
    /// budget): the receive waits in the ring, for its message to be
    /// stored and copied out, instead.
    NoPins,
}

/// A receive that was not posted to the module (see `RecvState::Waiting`).
#[derive(Clone, Copy)]
struct WaitingRecv {
    token: RecvToken,
    sel: Selector,
    cap: usize,
}

/// The envelope of an announced request to send; `None` for a stored
/// message.
fn request_of(n: &Notice) -> Option<libo2g::Envelope> {
    match n {
        Notice::Stored(_) => None,
        Notice::Request(e) => Some(*e),
    }
}

/// The status a blocking send's offer ended with (`None`: it ended and
/// was forgotten, which only a failure of its peer does).
fn status_of(
    ended: Option<Option<std::result::Result<(), RecvError>>>,
) -> std::result::Result<(), RecvError> {
    ended.flatten().unwrap_or(Err(RecvError::ConnectionFailed))
}

/// The selector that takes exactly the oldest message with `e`'s envelope.
fn exactly(e: &libo2g::Envelope) -> Selector {
    Selector {
        source: SourceSel::Rank(e.source),
        tag: TagSel::Tag(e.tag),
        context: e.context,
    }
}

/// Our envelope of a message the module stored.
fn stored_envelope(e: libo2g::Envelope) -> Envelope {
    Envelope {
        source: e.source,
        tag: e.tag,
        context: e.context,
    }
}

/// The envelope of stored message `e`, which a receive just took, added to
/// `sync_matched` if a synchronous send sent it (it is owed an
/// acknowledgement).
fn took_stored(sync_matched: &mut Vec<Envelope>, e: libo2g::Envelope) -> Envelope {
    let envelope = stored_envelope(e);
    if envelope.is_sync() {
        sync_matched.push(envelope);
    }
    envelope
}

impl O2g {
    /// Registers every connection of `links` (one per world rank, this
    /// process's own included) with `ep`, and the idle connections of
    /// `idle` under the ranks after them. Messages up to `eager_limit`
    /// bytes (the endpoints' slot size) may go eager.
    pub(crate) fn new(
        me: u32,
        ep: Endpoint,
        eager_limit: u64,
        links: Vec<Option<Link>>,
        controls: Vec<Option<Link>>,
        idle: Vec<(TcpStream, TcpStream)>,
        config: &Config,
    ) -> Result<Self> {
        let size = links.len();
        let mut peers = Vec::with_capacity(links.len());
        let mut controls = controls.into_iter();
        for (rank, link) in links.into_iter().enumerate() {
            let control = controls.next().flatten().map(|(s, _)| s);
            if let Some(c) = &control {
                ep.register_control(c, rank as u32, me).map_err(|e| {
                    lib_err(&format!("registering the control socket of rank {rank}"), e)
                })?;
            } else if rank as u32 != me {
                return Err(Error::Config(format!(
                    "rank {me}: no control connection to rank {rank}"
                )));
            }
            let Some((registered, writer)) = link else {
                return Err(Error::Config(format!(
                    "rank {me}: no connection to rank {rank}"
                )));
            };
            if rank as u32 == me {
                ep.register_self(&registered, me)
                    .map_err(|e| lib_err("registering the connection to itself", e))?;
            } else {
                ep.register_socket(&registered, rank as u32)
                    .map_err(|e| lib_err(&format!("registering the socket of rank {rank}"), e))?;
            }
            peers.push(Peer {
                registered,
                writer,
                control,
                tx: Encoder::new(),
                out: VecDeque::new(),
                dead: None,
            });
        }
        for (i, (near, _)) in idle.iter().enumerate() {
            let rank = (size + i) as u32;
            ep.register_socket(near, rank)
                .map_err(|e| lib_err(&format!("registering idle connection {i}"), e))?;
        }
        Ok(Self {
            ep,
            peers,
            _idle: idle,
            recvs: HashMap::new(),
            next_recv: 1,
            sends: Sends::new(),
            max_message: config.max_message.min(abi::O2G_MAX_MESSAGE),
            failures_seen: 0,
            warned_no_pins: false,
            pool: Vec::new(),
            pool_bytes: 0,
            sync_matched: Vec::new(),
            held: Announcements::new(QUEUE as usize),
            requested: VecDeque::new(),
            rndv_threshold: eager_limit,
            offers: HashMap::new(),
            next_offer: 1,
            credit: vec![Allowance::new(); size],
            spin: std::thread::available_parallelism().map_or(1, |n| n.get()) >= size,
        })
    }

    /// A receive buffer of exactly `len` bytes, from the pool if one fits.
    fn buffer(&mut self, len: usize) -> Vec<u8> {
        let best = (0..self.pool.len())
            .filter(|&i| self.pool[i].capacity() >= len)
            .min_by_key(|&i| self.pool[i].capacity());
        let Some(i) = best else {
            return vec![0u8; len];
        };
        let mut buf = self.pool.swap_remove(i);
        self.pool_bytes -= buf.capacity();
        // Only bytes past the old length get written (zeroed) here.
        buf.resize(len, 0);
        buf
    }

    fn peer(&mut self, dest: u32) -> Result<&mut Peer> {
        let size = self.peers.len() as i32;
        let p = self
            .peers
            .get_mut(dest as usize)
            .ok_or(Error::InvalidRank {
                rank: dest as i32,
                size,
            })?;
        match &p.dead {
            Some(reason) => Err(Error::PeerGone {
                rank: dest,
                reason: reason.clone(),
            }),
            None => Ok(p),
        }
    }

    /// Marks `rank` dead and fails its queued sends.
    fn kill(&mut self, rank: u32, reason: String) {
        let Some(p) = self.peers.get_mut(rank as usize) else {
            return;
        };
        if p.dead.is_some() {
            return;
        }
        for out in p.out.drain(..) {
            self.sends.fail(out.token, &reason);
        }
        p.dead = Some(reason.clone());
        // As the module does for posted receives: those naming exactly
        // this rank can never match now.
        for w in self.held.unwait_from(rank) {
            self.settle(
                w.token,
                RecvOutcome::Failed {
                    rank,
                    reason: reason.clone(),
                },
            );
        }
    }

    /// Records the outcome of a receive that was waiting or posted, unless
    /// nobody wants it any more.
    fn settle(&mut self, token: RecvToken, outcome: RecvOutcome) {
        match self.recvs.get(&token) {
            Some(
                RecvState::Posted { released: true, .. } | RecvState::Waiting { released: true },
            ) => {
                self.recvs.remove(&token);
            }
            Some(
                RecvState::Posted { .. } | RecvState::Waiting { .. } | RecvState::InPlace { .. },
            ) => {
                self.recvs.insert(token, RecvState::Done(outcome));
            }
            _ => {}
        }
    }

    /// Reaps for at most `limit` without a system call; whether a
    /// completion came.
    fn spin_on_ring(&mut self, limit: Duration) -> Result<bool> {
        let until = Instant::now() + limit;
        while Instant::now() < until {
            if self.reap()? {
                return Ok(true);
            }
            std::hint::spin_loop();
        }
        Ok(false)
    }

    /// Takes every completion from the shared ring; whether there was one.
    fn reap(&mut self) -> Result<bool> {
        let mut any = false;
        while let Some(r) = self.ep.reap().map_err(|e| lib_err("reaping", e))? {
            any = true;
            let c = match r {
                Reaped::Owned(c) => c,
                Reaped::Stored(msg) => {
                    let (env, len) = (stored_envelope(msg.envelope()), msg.envelope().len);
                    if let Some((w, n)) = self.held.announce(env, len, Notice::Stored(msg))? {
                        self.take_notice(w, n)?;
                    }
                    continue;
                }
                Reaped::Request(e) => {
                    let env = stored_envelope(e);
                    if let Some((w, n)) = self.held.announce(env, e.len, Notice::Request(e))? {
                        self.take_notice(w, n)?;
                    }
                    continue;
                }
                Reaped::Sent(sent) => {
                    self.sent(sent);
                    continue;
                }
                Reaped::Raw(c) => {
                    let token = RecvToken::from_handle(c.user_data);
                    let Some(&RecvState::InPlace { cap, .. }) = self.recvs.get(&token) else {
                        continue;
                    };
                    let envelope = Envelope {
                        source: c.source,
                        tag: c.tag,
                        context: c.context,
                    };
                    let outcome = self.outcome(envelope, c.status, || RecvOutcome::InPlace {
                        envelope,
                        len: c.len,
                        written: c.len.min(cap as u64) as usize,
                    });
                    self.recvs.insert(token, RecvState::Done(outcome));
                    continue;
                }
            };
            let token = RecvToken::from_handle(c.user_data);
            let envelope = Envelope {
                source: c.source,
                tag: c.tag,
                context: c.context,
            };
            let (len, mut data) = (c.len, c.buf);
            let outcome = self.outcome(envelope, c.status, || {
                data.truncate(c.written);
                RecvOutcome::Done {
                    envelope,
                    len,
                    data,
                }
            });
            self.settle(token, outcome);
        }
        if self.held.has_waiting() && self.ep.notices_stopped() {
            // Cannot happen: every post reads the ring first, so it never
            // holds more than a record per posted receive and stored message.
            return Err(Error::ResourceExhausted(
                "o2g ring (the module stopped announcing stored messages)",
            ));
        }
        self.post_requested()?;
        Ok(any)
    }

    /// Waiting receive `w` took announcement `n`: a stored message is
    /// copied out now; a request to send is posted for exactly its
    /// envelope once the ring is read (a post refuses while records wait
    /// unread).
    fn take_notice(&mut self, w: WaitingRecv, n: Notice) -> Result<()> {
        match n {
            Notice::Stored(msg) => {
                let outcome = self.deliver(msg, w.cap)?;
                self.settle(w.token, outcome);
            }
            Notice::Request(e) => self.requested.push_back((w, e)),
        }
        Ok(())
    }

    /// Posts the waiting receives that announced requests to send matched,
    /// each for exactly its request; those the module refuses for now
    /// (records arrived since the ring was read) wait for the next reap.
    fn post_requested(&mut self) -> Result<()> {
        while let Some((w, e)) = self.requested.pop_front() {
            match self.try_post(exactly(&e), w.cap, w.token)? {
                Attempt::Made(state) => self.posted(w.token, state),
                Attempt::Retry => {
                    self.requested.push_front((w, e));
                    return Ok(());
                }
                Attempt::NoPins => return Err(Error::ResourceExhausted(NO_PINS_FOR_RENDEZVOUS)),
            }
        }
        Ok(())
    }

    /// Records what posting a receive that was waiting gave, unless
    /// nobody wants it any more.
    fn posted(&mut self, token: RecvToken, state: RecvState) {
        let released = matches!(
            self.recvs.get(&token),
            Some(RecvState::Waiting { released: true })
        );
        match state {
            RecvState::Posted { handle, .. } => {
                self.recvs
                    .insert(token, RecvState::Posted { handle, released });
            }
            _ if released => {
                self.recvs.remove(&token);
            }
            done => {
                self.recvs.insert(token, done);
            }
        }
    }

    /// An offer ended: a nonblocking send's copy is freed; a blocking send
    /// sees the status. A failure is its peer's.
    fn sent(&mut self, sent: Sent) {
        let Some(o) = self.offers.get_mut(&sent.user_data) else {
            return;
        };
        let dest = o.dest;
        if let Err(e) = sent.status {
            self.kill(dest, format!("a rendezvous send failed: {e}"));
        }
        // A send that lent the caller's memory learns of the end when it
        // asks; one the module read a copy of is done with.
        match self.offers.get_mut(&sent.user_data) {
            Some(o) if o.copy.is_none() || o.lent.is_some() => o.ended = Some(sent.status),
            _ => {
                self.offers.remove(&sent.user_data);
            }
        }
    }

    /// Records offer `id` to `dest` (user data `user_data`) until its
    /// `SENT` record. The module reads `copy` if there is one, else the
    /// caller's memory: `lent` names it for `isend_in_place`; a blocking
    /// send keeps the caller waiting instead.
    fn hold(
        &mut self,
        user_data: u64,
        dest: u32,
        id: u32,
        copy: Option<Vec<u8>>,
        lent: Option<(usize, usize)>,
    ) {
        let offer = Offered {
            dest,
            id,
            copy,
            lent,
            ended: None,
        };
        self.offers.insert(user_data, offer);
    }

    /// Waits for the end of blocking send `user_data` (offer `id` of the
    /// caller's `data` to `dest`), keeping everything moving. After
    /// [`RNDV_WAIT`] without a clear-to-send, the module gets a copy and
    /// the send returns.
    fn wait_sent(&mut self, dest: u32, user_data: u64, id: u32, data: &[u8]) -> Result<()> {
        let since = Instant::now();
        let mut lent = true;
        loop {
            self.reap()?;
            let ended = self.offers.get(&user_data).map(|o| o.ended);
            match ended {
                Some(Some(_)) | None => {
                    self.offers.remove(&user_data);
                    return match status_of(ended) {
                        Ok(()) => Ok(()),
                        Err(_) => self.peer(dest).map(drop),
                    };
                }
                Some(None) => {}
            }
            if lent && since.elapsed() >= RNDV_WAIT {
                let copy = data.to_vec();
                match self.ep.replace_offer(id, &copy, dest) {
                    Ok(true) => {
                        if let Some(o) = self.offers.get_mut(&user_data) {
                            o.copy = Some(copy);
                        }
                        return Ok(());
                    }
                    // Cleared already (its data goes out from `data`
                    // now), or even sent (its record is in the ring).
                    Ok(false) => lent = false,
                    Err(e) if e.raw_os_error() == Some(nix::libc::ENOENT) => lent = false,
                    Err(e) => return Err(lib_err("handing a send's copy to the module", e)),
                }
            }
            self.progress(Some(Duration::from_millis(1)))?;
        }
    }

    /// Whether a message of `len` bytes to `dest` goes eager: no longer
    /// than the threshold, and within the credit `dest` granted (taken
    /// from the module when what is left does not cover it), which it
    /// then spends. Otherwise it goes as a request to send (to oneself
    /// too: the module then copies the offer into the receive itself).
    fn eager(&mut self, dest: u32, len: usize) -> Result<bool> {
        let len = len as u64;
        if len > self.rndv_threshold {
            return Ok(false);
        }
        let Some(allowance) = self.credit.get_mut(dest as usize) else {
            return Ok(false);
        };
        if allowance.spend(len) {
            return Ok(true);
        }
        let (bytes, msgs) = self
            .ep
            .take_credit(dest)
            .map_err(|e| lib_err("taking eager credit from the module", e))?;
        let allowance = &mut self.credit[dest as usize];
        allowance.add(Credit { bytes, msgs });
        Ok(allowance.spend(len))
    }

    /// Offers `data` to the module for a rendezvous send to `dest`; the
    /// offer's user data and id. When the module cannot hold it now (pins,
    /// table), waits for earlier offers to end; with none left, that is
    /// an error: the message cannot go eager (the receiver takes no eager
    /// message beyond the threshold or its credit).
    fn offer(&mut self, dest: u32, data: &[u8]) -> Result<(u64, u32)> {
        let user_data = self.next_offer;
        loop {
            let error = match self.ep.offer(data, dest, user_data) {
                Ok(id) => {
                    self.next_offer += 1;
                    return Ok((user_data, id));
                }
                Err(e) => e,
            };
            match (&error, error.raw_os_error()) {
                (libo2g::Error::RingFull { .. }, _) => {
                    self.check_ring_full()?;
                    self.reap()?;
                }
                (_, Some(nix::libc::ENOTCONN)) => {
                    self.kill(dest, "its control connection failed".into());
                    self.peer(dest)?;
                    return Err(lib_err("offering a rendezvous send", error));
                }
                (_, Some(nix::libc::ENOSPC | nix::libc::ENOBUFS | nix::libc::ENOMEM))
                    if self.offers.values().any(|o| o.ended.is_none()) =>
                {
                    self.progress(Some(IDLE_SLICE))?;
                }
                (_, Some(nix::libc::ENOBUFS | nix::libc::ENOMEM)) => {
                    return Err(lib_err(
                        &format!(
                            "offering a {}-byte rendezvous send (it needs pinned memory: \
                             raise `ulimit -l` or O2G_PIN_BUDGET, or raise O2G_RNDV_THRESHOLD \
                             and O2G_DUMP_BYTES on every rank so that it goes eager)",
                            data.len()
                        ),
                        error,
                    ))
                }
                _ => return Err(lib_err("offering a rendezvous send", error)),
            }
        }
    }

    /// Starts a send to `dest`, eager (its credit spent) or as a request
    /// to send of a copy (the caller's buffer is free at once).
    fn start_send(
        &mut self,
        dest: u32,
        env: Envelope,
        data: &[u8],
        eager: bool,
    ) -> Result<SendToken> {
        let mut copy = None;
        let mut offer = None;
        if !eager {
            let owned = data.to_vec();
            offer = Some(self.offer(dest, &owned)?);
            copy = Some(owned);
        }
        let p = &mut self.peers[dest as usize];
        let (header, payload) = match offer {
            Some((_, id)) => (
                p.tx.encode_ref(Kind::Rts, env, data.len() as u64, id),
                &[][..],
            ),
            None => (p.tx.encode(Kind::Eager, env, data.len() as u64), data),
        };
        let w = p.writer.as_mut().unwrap_or(&mut p.registered);
        let started = start_isend(w, &mut p.out, &mut self.sends, header, payload);
        if let Some((user_data, id)) = offer {
            // Moving the vector does not move the bytes the module reads.
            self.hold(user_data, dest, id, copy, None);
        }
        match started {
            Ok(token) => Ok(token),
            Err(e) => {
                self.kill(dest, format!("write failed: {e}"));
                self.peer(dest).map(|_| SendToken(0))
            }
        }
    }

    /// The outcome of a receive the module completed with `status`:
    /// `matched()` if a message matched (noting a synchronous one), else a
    /// failure (and a failed connection kills its rank).
    fn outcome(
        &mut self,
        envelope: Envelope,
        status: std::result::Result<(), RecvError>,
        matched: impl FnOnce() -> RecvOutcome,
    ) -> RecvOutcome {
        match status {
            Ok(()) | Err(RecvError::Truncated) => {
                if envelope.is_sync() {
                    self.sync_matched.push(envelope);
                }
                matched()
            }
            // The module completes receives from any source this way when
            // every connection has failed.
            Err(RecvError::ConnectionFailed) if envelope.source == abi::O2G_ANY_SOURCE => {
                RecvOutcome::Failed {
                    rank: NO_RANK,
                    reason: NO_LIVE_PEER.into(),
                }
            }
            Err(e) => {
                let reason = e.to_string();
                if e == RecvError::ConnectionFailed {
                    self.kill(envelope.source, reason.clone());
                }
                RecvOutcome::Failed {
                    rank: envelope.source,
                    reason,
                }
            }
        }
    }

    /// Writes queued messages until each socket is full; whether any
    /// message went out.
    fn flush_queues(&mut self) -> bool {
        let mut any = false;
        for rank in 0..self.peers.len() {
            loop {
                let p = &mut self.peers[rank];
                if p.dead.is_some() {
                    break;
                }
                let Some(mut o) = p.out.pop_front() else {
                    break;
                };
                match o.write(p.wstream()) {
                    Ok(true) => {
                        any = true;
                        self.sends.finish(o.token);
                    }
                    Ok(false) => {
                        p.out.push_front(o);
                        break;
                    }
                    Err(e) => {
                        p.out.push_front(o);
                        self.kill(rank as u32, format!("write failed: {e}"));
                        break;
                    }
                }
            }
        }
        any
    }

    /// Waits at most `timeout` for room on the sockets in `ranks`.
    fn wait_writable(&self, ranks: &[usize], timeout: Duration) -> Result<()> {
        let mut fds: Vec<PollFd<'_>> = ranks
            .iter()
            .map(|&r| {
                let p = &self.peers[r];
                let s = p.writer.as_ref().unwrap_or(&p.registered);
                PollFd::new(s.as_fd(), PollFlags::POLLOUT)
            })
            .collect();
        let ms = timeout.as_millis().clamp(1, u128::from(u16::MAX)) as u16;
        match poll(&mut fds, PollTimeout::from(ms)) {
            Ok(_) | Err(nix::errno::Errno::EINTR) => Ok(()),
            Err(e) => Err(Error::io("poll for room to send", e.into())),
        }
    }

    /// Learns of connections the module failed that no completion reported
    /// (a peer that left while nothing was posted for it).
    fn check_failures(&mut self) -> Result<()> {
        let failed = self
            .ep
            .stats()
            .map_err(|e| lib_err("endpoint counters", e))?
            .failed_sockets;
        if failed == self.failures_seen {
            return Ok(());
        }
        self.failures_seen = failed;
        for rank in 0..self.peers.len() as u32 {
            if self.peers[rank as usize].dead.is_some() {
                continue;
            }
            let st = self
                .ep
                .socket_stats(rank)
                .map_err(|e| lib_err("socket counters", e))?;
            if st.state == abi::socket_state::FAILED {
                self.kill(
                    rank,
                    "the connection closed, was reset or broke the protocol".into(),
                );
            }
        }
        Ok(())
    }

    /// What posting a receive for announced request `id` gave: the
    /// receive's state once made (the announcement is then taken), or
    /// `None` to read the ring and try again.
    fn for_request(&mut self, id: MsgId, attempt: Attempt) -> Result<Option<RecvState>> {
        match attempt {
            Attempt::Made(state) => {
                self.held.take(id);
                Ok(Some(state))
            }
            Attempt::Retry => Ok(None),
            Attempt::NoPins => Err(Error::ResourceExhausted(NO_PINS_FOR_RENDEZVOUS)),
        }
    }

    /// Copies announced `msg` into a buffer of `cap` bytes and gives its
    /// space back.
    fn deliver(&mut self, msg: Announced, cap: usize) -> Result<RecvOutcome> {
        let mut buf = self.buffer(cap);
        let (envelope, len, n) = self.take_stored(msg, &mut buf)?;
        buf.truncate(n);
        Ok(RecvOutcome::Done {
            envelope,
            len,
            data: buf,
        })
    }

    /// Copies what fits of announced `msg` into `dst` and gives its space
    /// back; its envelope, length and the bytes copied.
    fn take_stored(&mut self, msg: Announced, dst: &mut [u8]) -> Result<(Envelope, u64, usize)> {
        let env = msg.envelope();
        let data = self.ep.announced_data(&msg);
        let n = data.len().min(dst.len());
        dst[..n].copy_from_slice(&data[..n]);
        self.ep
            .give_back(msg)
            .map_err(|e| lib_err("giving back a stored message", e))?;
        Ok((took_stored(&mut self.sync_matched, env), env.len, n))
    }

    /// One `O2G_IOC_POST` of a receive for `sel` into `cap` bytes.
    fn try_post(&mut self, sel: Selector, cap: usize, token: RecvToken) -> Result<Attempt> {
        let buf = self.buffer(cap);
        let refused = match self.ep.post(buf, lib_selector(sel), token.to_handle()) {
            // Rare: the buffer is not worth keeping.
            Ok(Post::Rescan(_)) => return Ok(Attempt::Retry),
            Ok(Post::Queued(handle)) => {
                return Ok(Attempt::Made(RecvState::Posted {
                    handle,
                    released: false,
                }))
            }
            Ok(Post::Unexpected { msg, mut buf }) => {
                let env = msg.envelope();
                let n = msg.copy_to(&mut buf);
                buf.truncate(n);
                msg.free()
                    .map_err(|e| lib_err("freeing a stored message", e))?;
                let envelope = took_stored(&mut self.sync_matched, env);
                return Ok(Attempt::Made(RecvState::Done(RecvOutcome::Done {
                    envelope,
                    len: env.len,
                    data: buf,
                })));
            }
            Err(refused) => refused,
        };
        if let Some(buf) = refused.buf {
            self.recycle(buf);
        }
        self.refused(sel, refused.error)
    }

    /// The ring has no record to spare: fine if completions wait there
    /// (reaping frees them), an error if everything in flight is owed
    /// one (too many receives and sends at once).
    fn check_ring_full(&self) -> Result<()> {
        // Completions not yet taken count as in flight.
        let pending = self
            .ep
            .pending_completions()
            .map_err(|e| lib_err("reading the ring", e))?;
        if pending == 0 {
            return Err(Error::ResourceExhausted(
                "o2g completion ring (too many receives and sends in flight)",
            ));
        }
        Ok(())
    }

    /// What a post the module refused with `error` means: retry, a failed
    /// receive, or an error for the caller.
    fn refused(&mut self, sel: Selector, error: libo2g::Error) -> Result<Attempt> {
        let errno = error.raw_os_error();
        match (&error, errno) {
            (libo2g::Error::RingFull { .. }, _) => {
                self.check_ring_full()?;
                Ok(Attempt::Retry)
            }
            (_, Some(nix::libc::ECONNRESET)) => {
                let (rank, reason) = match sel.source {
                    SourceSel::Rank(r) => {
                        (r, "the connection failed before the receive was posted")
                    }
                    SourceSel::Any => (NO_RANK, NO_LIVE_PEER),
                };
                self.kill(rank, reason.into());
                Ok(Attempt::Made(RecvState::Done(RecvOutcome::Failed {
                    rank,
                    reason: reason.into(),
                })))
            }
            (_, Some(errno @ (nix::libc::ENOBUFS | nix::libc::ENOMEM))) => {
                if !self.warned_no_pins {
                    self.warned_no_pins = true;
                    let limit = if errno == nix::libc::ENOMEM {
                        "RLIMIT_MEMLOCK (raise `ulimit -l`)"
                    } else {
                        "the o2g pin budget (raise O2G_PIN_BUDGET)"
                    };
                    eprintln!(
                        "o2g: a receive buffer could not be pinned: {limit}; such receives \
                         wait for their message in the dump area and are copied out of it \
                         (a message larger than O2G_DUMP_BYTES cannot be received that way)"
                    );
                }
                Ok(Attempt::NoPins)
            }
            (_, Some(nix::libc::ENOSPC)) => {
                Err(Error::ResourceExhausted("o2g posted-receive queue"))
            }
            _ => Err(lib_err("posting a receive", error)),
        }
    }

    /// One `O2G_IOC_POST` of a receive for `sel` straight into `cap` bytes
    /// at `dst`.
    ///
    /// # Safety
    ///
    /// As [`Transport::post_recv_in_place`], for `dst..dst + cap`.
    unsafe fn try_post_in_place(
        &mut self,
        sel: Selector,
        dst: *mut u8,
        cap: usize,
        token: RecvToken,
    ) -> Result<Attempt> {
        // SAFETY: Forwarded from this function's contract; a queued receive
        // becomes `RecvState::InPlace`, which `release_recv` waits out.
        let error = match unsafe {
            self.ep
                .post_raw(dst, cap, lib_selector(sel), token.to_handle())
        } {
            Ok(PostOutcome::Queued { recv_id }) => {
                return Ok(Attempt::Made(RecvState::InPlace { recv_id, cap }))
            }
            Ok(PostOutcome::Unexpected(msg)) => {
                // SAFETY: The module did not take the buffer, which the
                // caller lends us exclusively.
                let dst = unsafe { std::slice::from_raw_parts_mut(dst, cap) };
                let written = msg.copy_to(dst);
                let env = msg.envelope();
                msg.free()
                    .map_err(|e| lib_err("freeing a stored message", e))?;
                let envelope = took_stored(&mut self.sync_matched, env);
                return Ok(Attempt::Made(RecvState::Done(RecvOutcome::InPlace {
                    envelope,
                    len: env.len,
                    written,
                })));
            }
            Ok(PostOutcome::Rescan) => return Ok(Attempt::Retry),
            // An answer this library cannot read may mean the module kept
            // the buffer, and nothing would tell when it lets go of it.
            Err(e @ libo2g::Error::BadAnswer { .. }) => abort_holding_memory(&e),
            Err(e) => e,
        };
        self.refused(sel, error)
    }

    /// Receive `token` for `sel` into `cap` bytes waits in the ring for
    /// an announcement, unless one that arrived meanwhile matches it.
    fn wait(&mut self, sel: Selector, cap: usize, token: RecvToken) -> Result<RecvState> {
        let w = WaitingRecv { token, sel, cap };
        match self.held.wait(sel, token.to_handle(), w)? {
            Wait::Queued => Ok(RecvState::Waiting { released: false }),
            Wait::Matched(n) => {
                // Settled (or posted, for a request) like one that waited.
                self.recvs
                    .insert(token, RecvState::Waiting { released: false });
                self.take_notice(w, n)?;
                self.post_requested()?;
                Ok(self
                    .recvs
                    .remove(&token)
                    .unwrap_or(RecvState::Waiting { released: false }))
            }
        }
    }

    /// Hands every receive waiting in the ring to the module, oldest first:
    /// before a large receive (whose message may not fit the dump area),
    /// and when a connection is stalled (its next message may be one of
    /// theirs, which the module can then write straight into its buffer).
    ///
    /// Returns false, leaving the rest waiting, when the module cannot pin
    /// a buffer (see [`Attempt::NoPins`]).
    fn promote_waiting(&mut self) -> Result<bool> {
        while let Some(&w) = self.held.oldest_waiting() {
            match self.try_post(w.sel, w.cap, w.token)? {
                Attempt::Made(state) => {
                    self.held.unwait(w.token.to_handle());
                    self.posted(w.token, state);
                }
                // It keeps its place: what the ring holds is matched in
                // posting order, maybe to this very receive.
                Attempt::Retry => {
                    self.reap()?;
                }
                Attempt::NoPins => return Ok(false),
            }
        }
        Ok(true)
    }

    fn queued(&self) -> Vec<usize> {
        (0..self.peers.len())
            .filter(|&r| self.peers[r].dead.is_none() && !self.peers[r].out.is_empty())
            .collect()
    }

    fn check_size(&self, len: usize) -> Result<()> {
        if len as u64 > self.max_message {
            return Err(Error::InvalidArgument(format!(
                "a {len}-byte message exceeds the o2g transport's largest, {} bytes",
                self.max_message
            )));
        }
        Ok(())
    }
}

/// Ends the process when the module may still write into memory the caller
/// is about to get back: returning would let it write into whatever that
/// memory holds next.
fn abort_holding_memory(why: &dyn std::fmt::Display) -> ! {
    eprintln!("o2g: cannot tell when the module lets go of a receive buffer ({why}); aborting");
    std::process::abort()
}

fn lib_selector(sel: Selector) -> libo2g::Selector {
    libo2g::Selector {
        source: match sel.source {
            SourceSel::Rank(r) => Some(r),
            SourceSel::Any => None,
        },
        tag: match sel.tag {
            TagSel::Tag(t) => Some(t),
            TagSel::Any => None,
        },
        context: sel.context,
    }
}

impl Drop for O2g {
    /// Closes the control connections without a reset. The peers'
    /// modules write on them whenever they like (eager credit comes back
    /// as their processes take messages), so one may still hold bytes
    /// nobody will read, and closing a socket with unread bytes resets
    /// the connection: the peer's module would see the reset and fail a
    /// receive still waiting for this process's last data on it. So each
    /// end takes its sockets back from the module, shuts its sending half
    /// (the peer reads everything before that end of stream), and reads
    /// until the peer does the same, for at most [`CLOSE_WAIT`].
    fn drop(&mut self) {
        for (rank, p) in self.peers.iter().enumerate() {
            if let Some(c) = &p.control {
                let _ = self.ep.unregister_socket(rank as u32);
                let _ = c.shutdown(Shutdown::Write);
            }
        }
        let deadline = Instant::now() + CLOSE_WAIT;
        let mut scratch = [0u8; 4096];
        for c in self.peers.iter_mut().filter_map(|p| p.control.as_mut()) {
            loop {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() || c.set_read_timeout(Some(left)).is_err() {
                    break;
                }
                match c.read(&mut scratch) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
            }
        }
    }
}

impl Transport for O2g {
    fn progress(&mut self, timeout: Option<Duration>) -> Result<()> {
        let worked = self.reap()? | self.flush_queues();
        if worked || timeout == Some(Duration::ZERO) {
            return Ok(());
        }
        let slice = timeout.map_or(IDLE_SLICE, |t| t.min(IDLE_SLICE));
        // Without pins the receives stay waiting: sleep below instead.
        if self.held.has_waiting()
            && self.ep.stalled_connections() != 0
            && self.promote_waiting()?
        {
            return Ok(());
        }
        let queued = self.queued();
        if queued.is_empty() && self.spin && self.spin_on_ring(slice.min(SPIN))? {
            return Ok(());
        }
        if queued.is_empty() {
            match self.ep.poll(Some(slice)) {
                Ok(_) | Err(libo2g::Error::Interrupted { .. }) => {}
                Err(e) => return Err(lib_err("waiting for a completion", e)),
            }
        } else {
            self.wait_writable(&queued, slice.min(SEND_SLICE))?;
        }
        if !(self.reap()? | self.flush_queues()) {
            self.check_failures()?;
        }
        Ok(())
    }

    fn peer_failure(&self, rank: u32) -> Option<String> {
        self.peers.get(rank as usize)?.dead.clone()
    }
}

impl SendHalf for O2g {
    fn send(&mut self, dest: u32, env: Envelope, data: &[u8]) -> Result<()> {
        self.check_size(data.len())?;
        // Earlier isends to `dest` leave first.
        while !self.peer(dest)?.out.is_empty() {
            self.progress(None)?;
        }
        let eager = self.eager(dest, data.len())?;
        if !eager && data.len() as u64 <= self.rndv_threshold {
            // Out of credit: a short message goes as a request to send
            // of a copy, and the caller goes on at once.
            let token = self.start_send(dest, env, data, false)?;
            self.release_send(token);
            return Ok(());
        }
        let offer = if eager {
            None
        } else {
            Some(self.offer(dest, data)?)
        };
        let p = self.peer(dest)?;
        let header = match offer {
            Some((_, id)) => p.tx.encode_ref(Kind::Rts, env, data.len() as u64, id),
            None => p.tx.encode(Kind::Eager, env, data.len() as u64),
        };
        if let Some((user_data, id)) = offer {
            self.hold(user_data, dest, id, None, None);
        }
        let payload = if offer.is_some() { &[][..] } else { data };
        let mut sending = Sending::new(header);
        loop {
            let p = self.peer(dest)?;
            match sending.write(p.wstream(), payload) {
                Ok(true) => break,
                Ok(false) => {}
                Err(e) => {
                    self.kill(dest, format!("write failed: {e}"));
                    return self.peer(dest).map(drop);
                }
            }
            // The receiver holds back (its dump area is full, or it reads
            // slower): wait for room, keeping completions moving.
            self.wait_writable(&[dest as usize], IDLE_SLICE)?;
            self.reap()?;
        }
        match offer {
            Some((user_data, id)) => self.wait_sent(dest, user_data, id, data),
            None => Ok(()),
        }
    }

    fn isend(&mut self, dest: u32, env: Envelope, data: &[u8]) -> Result<SendToken> {
        self.check_size(data.len())?;
        self.peer(dest)?;
        let eager = self.eager(dest, data.len())?;
        self.start_send(dest, env, data, eager)
    }

    fn sends(&mut self) -> &mut Sends {
        &mut self.sends
    }

    fn test_send(&mut self, token: SendToken) -> Result<bool> {
        if token.0 & OFFER_TOKEN == 0 {
            return self.sends.test(token);
        }
        let user_data = token.0 & !OFFER_TOKEN;
        self.reap()?;
        let Some(o) = self.offers.get(&user_data) else {
            return Ok(true);
        };
        let (dest, ended) = (o.dest, o.ended);
        match ended {
            None => self.peer(dest).map(|_| false),
            Some(status) => {
                self.offers.remove(&user_data);
                match status {
                    Ok(()) => Ok(true),
                    Err(_) => self.peer(dest).map(|_| true),
                }
            }
        }
    }

    fn release_send(&mut self, token: SendToken) {
        if token.0 & OFFER_TOKEN == 0 {
            self.sends.release(token);
            return;
        }
        let user_data = token.0 & !OFFER_TOKEN;
        let Some(o) = self.offers.get(&user_data) else {
            return;
        };
        let (dest, id, lent) = (o.dest, o.id, o.lent);
        if o.ended.is_some() {
            self.offers.remove(&user_data);
            return;
        }
        // The caller's memory is about to be theirs again: the module gets
        // a copy if its receiver has not asked yet; otherwise the data is
        // going out from it, and that ends soon.
        if let Some((addr, len)) = lent {
            // SAFETY: `isend_in_place`'s contract keeps the memory valid
            // and unchanged until this call returns.
            let copy = unsafe { std::slice::from_raw_parts(addr as *const u8, len) }.to_vec();
            if let Ok(true) = self.ep.replace_offer(id, &copy, dest) {
                if let Some(o) = self.offers.get_mut(&user_data) {
                    o.copy = Some(copy);
                    o.lent = None;
                }
                return;
            }
        }
        loop {
            match self.offers.get(&user_data) {
                Some(o) if o.ended.is_none() => {}
                _ => break,
            }
            // The send still reads the caller's memory: only its end (or
            // its connection's failure, which ends it too) lets go.
            if let Err(e) = self.progress(Some(IDLE_SLICE)) {
                abort_holding_memory(&e);
            }
        }
        self.offers.remove(&user_data);
    }

    unsafe fn isend_in_place(
        &mut self,
        dest: u32,
        env: Envelope,
        data: *const u8,
        len: usize,
    ) -> Result<Option<SendToken>> {
        self.check_size(len)?;
        self.peer(dest)?;
        if len as u64 <= self.rndv_threshold {
            return Ok(None);
        }
        // SAFETY: The caller keeps the memory valid and unchanged until
        // the token ends (this function's contract).
        let lent = unsafe { std::slice::from_raw_parts(data, len) };
        let (user_data, id) = self.offer(dest, lent)?;
        self.hold(user_data, dest, id, None, Some((data as usize, len)));
        let p = &mut self.peers[dest as usize];
        let header = p.tx.encode_ref(Kind::Rts, env, len as u64, id);
        let w = p.writer.as_mut().unwrap_or(&mut p.registered);
        // The request is the offer's: the header goes out on its own.
        match start_isend(w, &mut p.out, &mut self.sends, header, &[]) {
            Ok(t) => self.sends.release(t),
            Err(e) => self.kill(dest, format!("write failed: {e}")),
        }
        Ok(Some(SendToken(OFFER_TOKEN | user_data)))
    }

    fn has_queued_sends(&self) -> bool {
        // An offer the module still holds is a send not yet done: closing
        // the endpoint now would end it unsent.
        !self.queued().is_empty() || self.offers.values().any(|o| o.ended.is_none())
    }
}

impl ReceiveHalf for O2g {
    fn post_recv(&mut self, sel: Selector, capacity: usize) -> Result<RecvToken> {
        // No message can be longer than `max_message`, so a larger buffer
        // would only pin memory for nothing.
        let cap = capacity.min(self.max_message as usize);
        let token = RecvToken::from_handle(self.next_recv);
        self.next_recv += 1;
        let state = loop {
            // Every announcement read first: the module refuses a post
            // (Rescan) while an older one may match.
            self.reap()?;
            match self.held.find(sel).map(|(id, n)| (id, request_of(n))) {
                Some((id, None)) => {
                    if let Some(Notice::Stored(msg)) = self.held.take(id) {
                        break RecvState::Done(self.deliver(msg, cap)?);
                    }
                }
                Some((id, Some(e))) => {
                    let attempt = self.try_post(exactly(&e), cap, token)?;
                    match self.for_request(id, attempt)? {
                        Some(state) => break state,
                        None => continue,
                    }
                }
                None => {}
            }
            // A large message may not fit the dump area: this receive goes
            // to the module, after the ones waiting before it (unless the
            // module cannot pin them).
            if cap > WAIT_IN_RING_MAX && self.held.has_waiting() && self.promote_waiting()? {
                continue;
            }
            if cap > WAIT_IN_RING_MAX && !self.held.has_waiting() {
                match self.try_post(sel, cap, token)? {
                    Attempt::Made(state) => break state,
                    Attempt::Retry => continue,
                    Attempt::NoPins => {}
                }
            }
            break self.wait(sel, cap, token)?;
        };
        self.recvs.insert(token, state);
        Ok(token)
    }

    /// Only for receives larger than [`WAIT_IN_RING_MAX`], which go to the
    /// module anyway: the module pins the caller's pages instead of a pool
    /// buffer's, and the copy out of that buffer is saved. Smaller ones wait
    /// in the ring, whose copy out of the dump area is the only one.
    unsafe fn post_recv_in_place(
        &mut self,
        sel: Selector,
        dst: *mut u8,
        capacity: usize,
    ) -> Result<Option<RecvToken>> {
        let cap = capacity.min(self.max_message as usize);
        if cap <= WAIT_IN_RING_MAX {
            return Ok(None);
        }
        let token = RecvToken::from_handle(self.next_recv);
        self.next_recv += 1;
        let state = loop {
            // As in `post_recv`: announcements first, then the receives
            // waiting before this one.
            self.reap()?;
            match self.held.find(sel).map(|(id, n)| (id, request_of(n))) {
                Some((id, None)) => {
                    if let Some(Notice::Stored(msg)) = self.held.take(id) {
                        // SAFETY: Nothing was posted yet; the caller lends
                        // `dst` exclusively.
                        let dst = unsafe { std::slice::from_raw_parts_mut(dst, cap) };
                        let (envelope, len, written) = self.take_stored(msg, dst)?;
                        break RecvState::Done(RecvOutcome::InPlace {
                            envelope,
                            len,
                            written,
                        });
                    }
                }
                Some((id, Some(e))) => {
                    // SAFETY: Forwarded from this function's contract.
                    let attempt = unsafe { self.try_post_in_place(exactly(&e), dst, cap, token) }?;
                    match self.for_request(id, attempt)? {
                        Some(state) => break state,
                        None => continue,
                    }
                }
                None => {}
            }
            if self.held.has_waiting() {
                if self.promote_waiting()? {
                    continue;
                }
                // It waits in the ring behind the others (`post_recv`).
                return Ok(None);
            }
            // SAFETY: Forwarded from this function's contract.
            match unsafe { self.try_post_in_place(sel, dst, cap, token) }? {
                Attempt::Made(state) => break state,
                Attempt::Retry => continue,
                Attempt::NoPins => return Ok(None),
            }
        };
        self.recvs.insert(token, state);
        Ok(Some(token))
    }

    fn test_recv(&mut self, token: RecvToken) -> Option<RecvOutcome> {
        if matches!(
            self.recvs.get(&token),
            Some(RecvState::Posted { .. } | RecvState::Waiting { .. } | RecvState::InPlace { .. })
        ) {
            // An error here shows up again in `progress`.
            let _ = self.reap();
        }
        match self.recvs.remove(&token)? {
            RecvState::Done(o) => Some(o),
            posted => {
                self.recvs.insert(token, posted);
                None
            }
        }
    }

    fn cancel_recv(&mut self, token: RecvToken) -> bool {
        if self.held.unwait(token.to_handle()).is_some() {
            self.recvs
                .insert(token, RecvState::Done(RecvOutcome::Cancelled));
            return true;
        }
        if let Some(&RecvState::InPlace { recv_id, .. }) = self.recvs.get(&token) {
            // A refusal (an error) leaves it posted: it completes normally.
            if !self.ep.cancel_raw(recv_id).unwrap_or(false) {
                return false;
            }
            self.recvs
                .insert(token, RecvState::Done(RecvOutcome::Cancelled));
            return true;
        }
        let Some(RecvState::Posted { handle, .. }) = self.recvs.get(&token) else {
            return false;
        };
        let handle = *handle;
        match self.ep.cancel(&handle) {
            Ok(Some(_buf)) => {
                self.recvs
                    .insert(token, RecvState::Done(RecvOutcome::Cancelled));
                true
            }
            // Too late (or the module refused): it completes normally.
            Ok(None) | Err(_) => false,
        }
    }

    fn release_recv(&mut self, token: RecvToken) {
        if self.cancel_recv(token) {
            self.recvs.remove(&token);
            return;
        }
        // Matched and being written: the caller gets its memory back only
        // once the module has finished with it (the message arrived, or the
        // connection failed, which completes it too).
        while let Some(RecvState::InPlace { .. }) = self.recvs.get(&token) {
            if let Err(e) = self.progress(Some(IDLE_SLICE)) {
                abort_holding_memory(&e);
            }
        }
        match self.recvs.get_mut(&token) {
            Some(RecvState::Posted { released, .. } | RecvState::Waiting { released }) => {
                *released = true
            }
            _ => {
                self.recvs.remove(&token);
            }
        }
    }

    fn take_sync_matches(&mut self) -> Vec<Envelope> {
        std::mem::take(&mut self.sync_matched)
    }

    fn iprobe(&mut self, sel: Selector) -> Option<(Envelope, u64)> {
        // An error here shows up again in `progress`.
        let _ = self.reap();
        if let Some(announced) = self.held.peek(sel) {
            return Some(announced);
        }
        let env = self.ep.probe(lib_selector(sel)).ok()??;
        Some((
            Envelope {
                source: env.source,
                tag: env.tag,
                context: env.context,
            },
            env.len,
        ))
    }

    fn recycle(&mut self, buf: Vec<u8>) {
        let size = buf.capacity();
        if size > 0 && self.pool.len() < POOL_BUFFERS && self.pool_bytes + size <= POOL_BYTES {
            self.pool_bytes += size;
            self.pool.push(buf);
        }
    }
}
