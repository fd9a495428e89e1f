//! `o2g`: the kernel-module transport.
//!
//! Connections are made as for the socket transports (`bootstrap.rs`),
//! plus always a loopback connection to this process itself, and a
//! second one to each peer on this host, so that each direction of such
//! a pair has its own (`bootstrap::one_way_on_this_host` says why). The
//! socket each peer writes is registered with this process's `/dev/o2g`
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
//!   connection, which only the modules write (on one host, one per
//!   direction: `control_per_direction`), and this process's module
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

mod completion;
mod endpoint;
mod failure;
mod receive;
mod send;
mod window;

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

use foldhash::{HashMap, HashMapExt};

use libo2g::{abi, Endpoint};
use o2g_core::proto::credit::Allowance;
use o2g_core::proto::envelope::Envelope;

use crate::config::Config;
use crate::error::{Error, Result};

use super::announced::Announcements;
use super::bootstrap::{self, Link};
use super::outbox::{Outbox, Sends};
use super::spin;
use super::{RecvToken, Transport};
use completion::Notice;
use receive::{RecvState, WaitingRecv};
use send::{Offered, SEND_SLICE};

pub(crate) use endpoint::open_endpoint;

/// Longest sleep in the module before the counters are checked for a
/// failed connection that no posted receive would report.
const IDLE_SLICE: Duration = Duration::from_millis(200);

/// Receives posted at once and unexpected messages stored at once (and
/// rendezvous sends offered at once).
const QUEUE: u32 = 1 << 14;

/// How long closing waits for the peers to close their control
/// connections too (see `Drop for O2g`).
const CLOSE_WAIT: Duration = Duration::from_secs(2);

fn lib_err(context: &str, e: libo2g::Error) -> Error {
    Error::io(context, std::io::Error::other(e))
}

/// The connection to one world rank.
struct Peer {
    /// The socket registered with the module (for oneself, the accepted
    /// end of the loopback connection).
    registered: TcpStream,
    /// The socket this process writes when it is not `registered`: for
    /// oneself the connecting end, for a peer on this host the pair's
    /// other connection, which the peer's module reads
    /// (`bootstrap::one_way_on_this_host`).
    writer: Option<TcpStream>,
    /// The control connection, which only the modules write (none for
    /// oneself); kept open while registered. To a peer on this host, the
    /// one this process's module writes.
    control: Option<TcpStream>,
    /// To a peer on this host, the control connection its module writes
    /// (`control_per_direction`).
    control_in: Option<TcpStream>,
    outbox: Outbox,
    dead: Option<String>,
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
    _idle: Vec<(TcpStream, Option<TcpStream>)>,
    /// Synchronous-mode messages matched, not yet acknowledged.
    sync_matched: Vec<Envelope>,
    /// Whether idle waits spin on the ring first, and for how long.
    spin: spin::Spinner,
    /// Messages the module stored and announced that no receive has
    /// taken yet, and the receives waiting for an announcement, matched
    /// by o2g-core's engine.
    held: Announcements<Notice, WaitingRecv>,
    /// Waiting receives that an announced request to send matched, to be
    /// posted to the module once the ring is read.
    requested: VecDeque<(WaitingRecv, Envelope)>,
    /// By rank: messages to it above this many bytes go as a request to
    /// send (the eager limit for a peer on this host or on another, at
    /// most what the peers' dump areas take).
    eager_max: Vec<u64>,
    /// Rendezvous sends the module holds, by offer user data.
    offers: HashMap<u64, Offered>,
    next_offer: u64,
    /// By rank: eager credit left for messages to it.
    credit: Vec<Allowance>,
    /// Whether the module serves memory windows (ABI feature WINDOWS).
    windows: bool,
    /// This process's world rank.
    me: u32,
    /// `O2G_STATS=1`: print the endpoint's counters on closing.
    report_stats: bool,
    /// Bytes of rendezvous sends copied for the module to read (the
    /// outboxes count the eager ones).
    rndv_copied: u64,
}

/// Ends the process when the module may still write into memory the caller
/// is about to get back: returning would let it write into whatever that
/// memory holds next.
fn abort_holding_memory(why: &dyn std::fmt::Display) -> ! {
    eprintln!("o2g: cannot tell when the module lets go of a receive buffer ({why}); aborting");
    std::process::abort()
}

impl O2g {
    /// Registers every connection of `links` (one per world rank, this
    /// process's own included) with `ep`, and the idle connections of
    /// `idle` under the ranks after them. Messages up to `eager_limit`
    /// bytes (what the endpoints take) may go eager: up to
    /// `O2G_RNDV_THRESHOLD`, or by default more on this host than to
    /// another (`config::EAGER_ON_THIS_HOST`).
    pub(crate) fn new(
        me: u32,
        ep: Endpoint,
        eager_limit: u64,
        links: Vec<Option<Link>>,
        controls: Vec<Option<Link>>,
        idle: Vec<(TcpStream, Option<TcpStream>)>,
        config: &Config,
    ) -> Result<Self> {
        let size = links.len();
        let ep_serves_windows = ep
            .version()
            .is_ok_and(|v| v.features & abi::feature::WINDOWS != 0);
        let mut peers = Vec::with_capacity(links.len());
        let mut controls = controls.into_iter();
        for (rank, link) in links.into_iter().enumerate() {
            // With a connection per direction, the one this end writes
            // comes second, and is registered first.
            let (control, control_in) = match controls.next().flatten() {
                Some((read, Some(write))) => (Some(write), Some(read)),
                Some((both, None)) => (Some(both), None),
                None => (None, None),
            };
            if let Some(c) = &control {
                ep.register_control(c, rank as u32, me).map_err(|e| {
                    lib_err(&format!("registering the control socket of rank {rank}"), e)
                })?;
                if let Some(c) = &control_in {
                    ep.register_control_in(c, rank as u32, me).map_err(|e| {
                        lib_err(
                            &format!("registering the incoming control socket of rank {rank}"),
                            e,
                        )
                    })?;
                }
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
                control_in,
                outbox: Outbox::new(),
                dead: None,
            });
        }
        for (i, (near, _)) in idle.iter().enumerate() {
            let rank = (size + i) as u32;
            ep.register_socket(near, rank)
                .map_err(|e| lib_err(&format!("registering idle connection {i}"), e))?;
        }
        let eager_max = (peers.iter().enumerate())
            .map(|(rank, p)| {
                let local = rank as u32 == me || bootstrap::on_this_host(&p.registered);
                let limit = if local {
                    config.o2g.eager_local
                } else {
                    config.o2g.eager_remote
                };
                limit.min(eager_limit)
            })
            .collect();
        let spin = spin::decide(
            config.spin,
            (peers.iter().enumerate())
                .filter(|&(rank, _)| rank as u32 != me)
                .map(|(_, p)| &p.registered),
        );
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
            sync_matched: Vec::new(),
            held: Announcements::new(QUEUE as usize),
            requested: VecDeque::new(),
            eager_max,
            offers: HashMap::new(),
            next_offer: 1,
            credit: vec![Allowance::new(); size],
            spin,
            windows: ep_serves_windows,
            me,
            report_stats: config.o2g.report_stats,
            rndv_copied: 0,
        })
    }

    /// `O2G_STATS=1`: one line on stderr with how the module delivered
    /// this endpoint's messages, straight into a posted receive or
    /// through the dump area (one more copy), its rendezvous data, and
    /// how many bytes its sends copied out of the callers' buffers.
    fn report_stats(&self) {
        let me = self.me;
        let (s, r) = match (self.ep.stats(), self.ep.rndv_stats()) {
            (Ok(s), Ok(r)) => (s, r),
            (Err(e), _) | (_, Err(e)) => {
                eprintln!("o2g: rank {me}: the module gave no counters: {e}");
                return;
            }
        };
        let eager = s.matched_bytes + s.unexpected_bytes;
        let share = if eager == 0 {
            "-".to_string()
        } else {
            format!("{:.1}%", 100.0 * s.matched_bytes as f64 / eager as f64)
        };
        let eager_copied: u64 = self.peers.iter().map(|p| p.outbox.copied).sum();
        let line = format!(
            "o2g: rank {me}: eager messages placed straight into receives {} ({} bytes), \
             through the dump area {} ({} bytes), {share} of the bytes placed; \
             rendezvous data {} ({} bytes); sends copied {} bytes\n",
            s.matched_msgs,
            s.matched_bytes,
            s.unexpected_msgs,
            s.unexpected_bytes,
            r.data_msgs,
            r.data_bytes,
            eager_copied + self.rndv_copied
        );
        // One write, not eprintln's one per piece: the ranks of a job
        // share a stderr, and their lines must not interleave.
        let _ = std::io::stderr().write_all(line.as_bytes());
    }
}

impl Peer {
    fn wstream(&mut self) -> &mut TcpStream {
        self.writer.as_mut().unwrap_or(&mut self.registered)
    }

    /// The control connections to this peer: one, or one per direction.
    fn controls(&self) -> impl Iterator<Item = &TcpStream> {
        self.control.iter().chain(self.control_in.iter())
    }
}

/// Whether the modules of two ranks on this host split their control
/// traffic by direction (`abi::O2G_REGISTER_CONTROL_IN`): on loopback the
/// receiving socket's work runs in the sender's `sendmsg` under that
/// socket's lock, so two modules writing both ends of one connection at
/// once wait on each other. Both ends decide alike: they load one module.
pub(crate) fn control_per_direction(ep: &Endpoint) -> bool {
    ep.version()
        .is_ok_and(|v| v.features & abi::feature::CONTROL_IN != 0)
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
        if self.report_stats {
            self.report_stats();
        }
        for (rank, p) in self.peers.iter().enumerate() {
            if p.control.is_some() {
                let _ = self.ep.unregister_socket(rank as u32);
            }
            for c in p.controls() {
                let _ = c.shutdown(Shutdown::Write);
            }
        }
        let deadline = Instant::now() + CLOSE_WAIT;
        let mut scratch = [0u8; 4096];
        for mut c in self.peers.iter().flat_map(Peer::controls) {
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
        let began = Instant::now();
        if queued.is_empty() {
            if let Some(window) = self.spin.begin() {
                let limit = slice.min(window);
                let found = self.spin_on_ring(limit)?;
                self.spin.ended(found, limit);
                if found {
                    self.spin.waited(began.elapsed());
                    return Ok(());
                }
            }
            match self.ep.poll(Some(slice)) {
                Ok(_) | Err(libo2g::Error::Interrupted { .. }) => {}
                Err(e) => return Err(lib_err("waiting for a completion", e)),
            }
        } else {
            self.wait_writable(&queued, slice.min(SEND_SLICE))?;
        }
        if self.reap()? | self.flush_queues() {
            if queued.is_empty() {
                self.spin.waited(began.elapsed());
            }
        } else {
            self.check_failures()?;
        }
        Ok(())
    }

    fn peer_failure(&self, rank: u32) -> Option<String> {
        self.peers.get(rank as usize)?.dead.clone()
    }

    fn windows(&mut self) -> Option<&mut dyn super::Windows> {
        if self.windows {
            Some(self)
        } else {
            None
        }
    }
}
