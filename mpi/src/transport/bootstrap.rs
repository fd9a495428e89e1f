//! Connection setup for the socket transports: eager, all-to-all, once.
//!
//! Every process listens on an ephemeral port of `O2G_ADDR`, publishes
//! `ip:port/v<version>` (PMI values carry no spaces) in the PMI
//! key-value space under
//! `o2g-addr-<rank>`, and after one PMI barrier
//! - connects to every lower rank (and to itself when `O2G_SELF=0`, and
//!   always for the `o2g` transport),
//!   sending a hello that names its rank and carries the job secret, then
//! - accepts one connection from every higher rank (and its own).
//!
//! The `o2g` transport then makes more sets the same way: a second
//! connection to each peer on this host (those that published this
//! process's address), under the keys `o2g-back-addr-<rank>` and
//! `o2g-back-secret`, so that each direction of such a pair has its own
//! ([`one_way_on_this_host`]); and the control connections its kernel
//! modules write (no connection to itself), under `o2g-ctl-addr-<rank>`
//! and `o2g-ctl-secret`, with a second one to each peer on this host under
//! `o2g-ctl-back-addr-<rank>` and `o2g-ctl-back-secret`.
//!
//! # The hello and the job secret
//!
//! Anyone who can reach the listening port can connect, so a hello must
//! prove that it comes from the job: it is `O2h`, the sender's wire
//! version (one byte), its rank (LE u32) and the job secret, 32 lowercase
//! hexadecimal digits. The
//! secret is `O2G_JOB_SECRET` when set (o2grun sets it, fresh for each
//! job); otherwise (MPICH's hydra, Slurm) rank 0 draws one from
//! `/dev/urandom` and publishes it under `o2g-secret` before the barrier,
//! and every other rank reads it after, as it reads the addresses. A
//! connection whose hello is malformed, carries another secret, names a
//! rank that does not connect to this one or one already connected, or
//! does not arrive within [`HELLO_TIMEOUT`], is closed with a line on
//! stderr, and setup goes on: hellos are read from all pending
//! connections at once, without blocking, so one silent connection delays
//! nobody. The secret travels in the clear: it keeps out whoever does
//! not know it, not whoever can watch the traffic (who could also inject
//! into the TCP streams).
//!
//! # Versions
//!
//! Ranks that speak different versions of the wire format
//! ([`o2g_core::proto::wire::VERSION`]) cannot talk: a connecting rank
//! reads the version beside each address and stops with an error naming
//! both versions, and an accepting rank refuses a hello of another
//! version the same way. o2g before version 2 published a bare address and
//! sent `O2hi`, which both read as version 1.
//!
//! A connect completes against the peer's listen backlog, so no process
//! waits for another to reach `accept` first and the order cannot
//! deadlock. Setting up everything eagerly makes the cost visible at
//! `initialize`, keeps the data path free of connection logic, and means a
//! dead peer shows up as a closed socket at once; for the 2–64 processes
//! this library aims at that is at most 63 sockets per process. The whole
//! setup is bounded by `O2G_CONNECT_TIMEOUT`.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use nix::sys::socket::{setsockopt, sockopt};

use o2g_core::proto::wire::VERSION;

use crate::config::{is_secret, Config, SECRET_LEN};
use crate::error::{Error, Result};
use crate::pmi::Pmi;

/// The hello a connecting process sends: magic, its wire version, its
/// rank (LE u32), the job secret.
const HELLO_MAGIC: [u8; 3] = *b"O2h";

/// The byte where o2g before wire version 2 sent `i` (of `O2hi`).
const OLD_HELLO_VERSION: u8 = b'i';

/// The wire version a hello's or an address's version field stands for.
fn wire_version(byte: u8) -> u8 {
    if byte == OLD_HELLO_VERSION {
        1
    } else {
        byte
    }
}

/// Why a peer of wire version `theirs` cannot talk to this process.
fn version_mismatch(peer: &str, theirs: u8) -> String {
    format!(
        "{peer} speaks o2g wire version {theirs} and this process speaks version {VERSION}: \
         every rank of a job must run the same o2g"
    )
}

/// What a rank publishes under `o2g-addr-<rank>`: no space or `=`, which
/// PMI's wire protocol would split at.
fn address_entry(addr: SocketAddr) -> String {
    format!("{addr}/v{VERSION}")
}

/// The address and wire version in an `o2g-addr-<rank>` entry (a bare
/// address is version 1).
fn parse_address_entry(text: &str) -> Option<(SocketAddr, u8)> {
    match text.split_once("/v") {
        Some((addr, version)) => Some((addr.parse().ok()?, version.parse().ok()?)),
        None => Some((text.parse().ok()?, 1)),
    }
}

/// Bytes of a hello.
const HELLO_LEN: usize = 8 + SECRET_LEN;

/// How long an accepted connection has to deliver its hello.
const HELLO_TIMEOUT: Duration = Duration::from_secs(10);

/// Most accepted connections whose hello is still incomplete; past it
/// the oldest is closed.
const MAX_PENDING: usize = 256;

/// What setup needs of the process manager: rank, size, and the PMI-1
/// key-value space with its barrier (tests provide their own).
pub(crate) trait Kvs {
    /// This process's rank.
    fn rank(&self) -> u32;
    /// Processes in the job.
    fn size(&self) -> u32;
    /// Publishes `key=value`.
    fn put(&mut self, key: &str, value: &str) -> Result<()>;
    /// A value some process published before the last barrier.
    fn get(&mut self, key: &str) -> Result<String>;
    /// Waits for every process; makes earlier puts visible.
    fn barrier(&mut self) -> Result<()>;
}

impl Kvs for Pmi {
    fn rank(&self) -> u32 {
        Pmi::rank(self)
    }
    fn size(&self) -> u32 {
        Pmi::size(self)
    }
    fn put(&mut self, key: &str, value: &str) -> Result<()> {
        Pmi::put(self, key, value)
    }
    fn get(&mut self, key: &str) -> Result<String> {
        Pmi::get(self, key)
    }
    fn barrier(&mut self) -> Result<()> {
        Pmi::barrier(self)
    }
}

/// 32 lowercase hexadecimal digits from `/dev/urandom`.
fn fresh_secret() -> Result<String> {
    let mut bytes = [0u8; SECRET_LEN / 2];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| Error::io("drawing the job secret from /dev/urandom", e))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Whether `offered` is `secret`, in a time that does not depend on where
/// they differ.
fn same_secret(secret: &[u8], offered: &[u8]) -> bool {
    secret.len() == offered.len()
        && secret
            .iter()
            .zip(offered)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

/// The hello of rank `me` with `secret`.
fn hello(me: u32, secret: &str) -> [u8; HELLO_LEN] {
    let mut h = [0u8; HELLO_LEN];
    h[..3].copy_from_slice(&HELLO_MAGIC);
    h[3] = VERSION;
    h[4..8].copy_from_slice(&me.to_le_bytes());
    h[8..].copy_from_slice(secret.as_bytes());
    h
}

/// The rank a complete hello names, if it is a hello of this job.
fn check_hello(h: &[u8; HELLO_LEN], secret: &str) -> std::result::Result<u32, String> {
    if h[..3] != HELLO_MAGIC {
        return Err("not an o2g hello".into());
    }
    if wire_version(h[3]) != VERSION {
        return Err(version_mismatch("its hello", wire_version(h[3])));
    }
    if !same_secret(secret.as_bytes(), &h[8..]) {
        return Err("its hello lacks this job's secret".into());
    }
    Ok(u32::from_le_bytes([h[4], h[5], h[6], h[7]]))
}

/// Applies the per-connection socket options (`TCP_NODELAY`, buffer
/// sizes, the peer timeout) and makes the socket nonblocking.
pub(crate) fn tune(s: &TcpStream, config: &Config) -> Result<()> {
    let ctx = |what: &'static str| move |e| Error::io(what, e);
    s.set_nodelay(true).map_err(ctx("TCP_NODELAY"))?;
    if let Some(n) = config.sndbuf {
        setsockopt(&s.as_fd(), sockopt::SndBuf, &n).map_err(|e| ctx("SO_SNDBUF")(e.into()))?;
    }
    if let Some(n) = config.rcvbuf {
        setsockopt(&s.as_fd(), sockopt::RcvBuf, &n).map_err(|e| ctx("SO_RCVBUF")(e.into()))?;
    }
    if let Some(t) = config.peer_timeout {
        set_peer_timeout(s, t)?;
    }
    s.set_nonblocking(true).map_err(ctx("O_NONBLOCK"))
}

/// Makes the connection fail (`ETIMEDOUT`) once the peer's host has been
/// silent for about `t`. `TCP_USER_TIMEOUT` bounds how long sent data may
/// stay unacknowledged (TCP's own bound is about 15 minutes of
/// retransmissions); keepalive probes after `t / 3` of quiet make a
/// connection with nothing to send notice too, since TCP ends a probed
/// connection once nothing was heard for the user timeout. A live peer's
/// kernel acknowledges and answers probes however busy its process is,
/// and a full receive window is probed and answered the same way.
pub(crate) fn set_peer_timeout(s: &TcpStream, t: Duration) -> Result<()> {
    let fd = s.as_fd();
    // The kernel's bounds: probe periods up to 32767 s, the user timeout
    // a non-negative int of milliseconds.
    const MAX_PROBE_SECS: u32 = 32767;
    let secs = u32::try_from(t.as_secs()).unwrap_or(u32::MAX).max(1);
    let millis = secs.saturating_mul(1000).min(i32::MAX as u32);
    let idle = (secs / 3).clamp(1, MAX_PROBE_SECS);
    let interval = (secs / 6).clamp(1, MAX_PROBE_SECS);
    let err = |what: &'static str| move |e: nix::Error| Error::io(what, e.into());
    setsockopt(&fd, sockopt::KeepAlive, &true).map_err(err("SO_KEEPALIVE"))?;
    setsockopt(&fd, sockopt::TcpKeepIdle, &idle).map_err(err("TCP_KEEPIDLE"))?;
    setsockopt(&fd, sockopt::TcpKeepInterval, &interval).map_err(err("TCP_KEEPINTVL"))?;
    setsockopt(&fd, sockopt::TcpUserTimeout, &millis).map_err(err("TCP_USER_TIMEOUT"))
}

/// A connection's error in words, for the reason a peer is dead: a
/// timeout, which `O2G_PEER_TIMEOUT` bounds, names the setting.
pub(crate) fn socket_error_in_words(e: &std::io::Error) -> String {
    if e.raw_os_error() == Some(nix::libc::ETIMEDOUT) {
        "the connection timed out (the peer's host was silent longer than O2G_PEER_TIMEOUT)"
            .to_owned()
    } else {
        e.to_string()
    }
}

/// One peer's connection: the socket, plus for the connection of a process
/// to itself (`O2G_SELF=0`) the connecting end, which is the one to write
/// to (the first socket is the accepted end, which reads).
pub(crate) type Link = (TcpStream, Option<TcpStream>);

/// Whether the far end of `s` runs on this host: a loopback connection, or
/// one whose two ends have the same address. A socket that cannot say
/// counts as local, the cautious answer for spinning (it can only stop it)
/// and for zero-copy sends (it keeps them off).
pub(crate) fn on_this_host(s: &TcpStream) -> bool {
    match (s.local_addr(), s.peer_addr()) {
        (Ok(near), Ok(far)) => far.ip().is_loopback() || far.ip() == near.ip(),
        _ => true,
    }
}

/// Connects this process to every peer; entry `r` is the connection to
/// world rank `r`, and to itself only with `self_link` (`None` otherwise).
pub(crate) fn connect_all(
    config: &Config,
    pmi: &mut impl Kvs,
    self_link: bool,
) -> Result<Vec<Option<Link>>> {
    connect_round(config, pmi, self_link, "", Pairs::All)
}

/// Which peers a round of connections reaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pairs {
    All,
    /// Only the peers that published the address this process did (or
    /// both a loopback one): those on this host, as both ends of a pair
    /// see alike from the same published addresses.
    OnThisHost,
    /// None: the process takes part in the round (its PMI barrier), and
    /// connects to nobody.
    Nobody,
}

/// Whether ranks that published `a` and `b` share a host for [`Pairs`].
fn same_host(a: SocketAddr, b: SocketAddr) -> bool {
    a.ip() == b.ip() || (a.ip().is_loopback() && b.ip().is_loopback())
}

/// As [`connect_all`], for a further set of connections to the peers
/// `pairs` names (the `o2g` transport's control connections, and its
/// second connections on this host): `round` keeps its PMI keys apart
/// (`o2g-<round>addr-<rank>`, `o2g-<round>secret`).
pub(crate) fn connect_round(
    config: &Config,
    pmi: &mut impl Kvs,
    self_link: bool,
    round: &str,
    pairs: Pairs,
) -> Result<Vec<Option<Link>>> {
    let (me, size) = (pmi.rank(), pmi.size());
    let secret_key = format!("o2g-{round}secret");
    let deadline = Instant::now() + config.connect_timeout;
    let listener = TcpListener::bind(SocketAddr::new(config.addr, 0))
        .map_err(|e| Error::io(format!("listening on {}", config.addr), e))?;
    let addr = listener
        .local_addr()
        .map_err(|e| Error::io("listener address", e))?;
    pmi.put(&format!("o2g-{round}addr-{me}"), &address_entry(addr))?;
    let mine = match (&config.job_secret, me) {
        (Some(s), _) => Some(s.clone()),
        (None, 0) => {
            let s = fresh_secret()?;
            pmi.put(&secret_key, &s)?;
            Some(s)
        }
        (None, _) => None,
    };
    pmi.barrier()?;
    let secret = match mine {
        Some(s) => s,
        None => {
            let s = pmi.get(&secret_key)?;
            if !is_secret(&s) {
                return Err(Error::Pmi(format!(
                    "rank 0 published a job secret that is not {SECRET_LEN} lowercase hexadecimal digits"
                )));
            }
            s
        }
    };

    let mut conns: Vec<Option<Link>> = (0..size).map(|_| None).collect();
    let mut self_writer = None;
    let with_self = self_link;
    // The addresses this process needs: those it connects to, and for
    // `OnThisHost` every peer's, to know who connects to it. (Each is a
    // PMI request; a full round needs only the lower ranks'.)
    let needed = |p: u32| match pairs {
        Pairs::All => p < me || (p == me && with_self),
        Pairs::OnThisHost => true,
        Pairs::Nobody => false,
    };
    let mut addrs = vec![None; size as usize];
    for peer in (0..size).filter(|&p| needed(p)) {
        let text = pmi.get(&format!("o2g-{round}addr-{peer}"))?;
        addrs[peer as usize] =
            Some(parse_address_entry(&text).ok_or_else(|| {
                Error::Pmi(format!("rank {peer} published a bad address {text:?}"))
            })?);
    }
    let reached = |peer: u32| match pairs {
        Pairs::All => true,
        Pairs::OnThisHost => addrs[peer as usize].is_some_and(|(a, _)| same_host(a, addr)),
        Pairs::Nobody => false,
    };
    for peer in (0..me)
        .filter(|&p| reached(p))
        .chain(with_self.then_some(me))
    {
        let Some((peer_addr, version)) = addrs[peer as usize] else {
            unreachable!("rank {peer}'s address was fetched above");
        };
        if version != VERSION {
            return Err(Error::Pmi(version_mismatch(
                &format!("rank {peer}"),
                version,
            )));
        }
        let left = deadline.saturating_duration_since(Instant::now());
        let mut s = TcpStream::connect_timeout(&peer_addr, left.max(Duration::from_millis(1)))
            .map_err(|e| Error::io(format!("connecting to rank {peer} at {peer_addr}"), e))?;
        s.write_all(&hello(me, &secret))
            .map_err(|e| Error::io(format!("hello to rank {peer}"), e))?;
        if peer == me {
            self_writer = Some(s);
        } else {
            conns[peer as usize] = Some((s, None));
        }
    }

    let expected = (me + 1..size).filter(|&p| reached(p)).count() + usize::from(with_self);
    let place = |peer: u32, s: TcpStream| {
        let slot = conns
            .get_mut(peer as usize)
            .filter(|_| (peer > me && reached(peer)) || (peer == me && with_self))
            .ok_or_else(|| {
                format!(
                    "its hello names rank {peer}, which does not connect to rank {me} of {size}"
                )
            })?;
        if slot.is_some() {
            return Err(format!(
                "its hello names rank {peer}, which is connected already"
            ));
        }
        let writer = if peer == me { self_writer.take() } else { None };
        *slot = Some((s, writer));
        Ok(())
    };
    accept_peers(&listener, &secret, me, expected, deadline, place)?;
    for (s, w) in conns.iter().flatten() {
        tune(s, config)?;
        if let Some(w) = w {
            tune(w, config)?;
        }
    }
    Ok(conns)
}

/// Gives each pair of ranks on this host a connection per direction, for
/// the `o2g` transport: a second round of connections to those peers
/// (under PMI keys of `round`), and each link of `links` becomes the
/// connection the peer writes (read here, by the module) and the one this
/// end writes. Of a pair, the higher rank writes the first round's
/// connection, the lower one the second's. Used for the messages
/// connections and for the modules' control connections alike.
///
/// With `pairs` [`Pairs::Nobody`] the process takes part in the round
/// and changes nothing, so that a rank that wants no second connections
/// cannot leave the others waiting at the round's barrier (ranks on one
/// host decide alike).
///
/// Why: on loopback the receiver's whole work runs in the sender's
/// `writev` (TCP's softirq), the module's reader included, under the
/// receiving socket's lock. Over one connection a rank that answers or
/// sends at the same moment writes that very socket and waits for the
/// lock; over two it does not. Between hosts the second connection only
/// adds acknowledgements that no data carries (see `docs/results.md`).
pub(crate) fn one_way_on_this_host(
    links: &mut [Option<Link>],
    config: &Config,
    pmi: &mut impl Kvs,
    round: &str,
    pairs: Pairs,
) -> Result<()> {
    let me = pmi.rank();
    let back = connect_round(config, pmi, false, round, pairs)?;
    for (peer, back) in back.into_iter().enumerate() {
        let Some((second, _)) = back else {
            continue;
        };
        let Some((first, _)) = links.get_mut(peer).and_then(Option::take) else {
            return Err(Error::Pmi(format!(
                "rank {me}: a second connection to rank {peer}, but no first"
            )));
        };
        links[peer] = Some(if (peer as u32) < me {
            (second, Some(first))
        } else {
            (first, Some(second))
        });
    }
    Ok(())
}

/// Accepts connections on `listener` until `expected` of them presented a
/// hello of this job (carrying `secret`) that `place` took; refuses the
/// others (see the module documentation). Past `deadline`, fails saying
/// how many were taken and how many refused.
fn accept_peers(
    listener: &TcpListener,
    secret: &str,
    me: u32,
    expected: usize,
    deadline: Instant,
    mut place: impl FnMut(u32, TcpStream) -> std::result::Result<(), String>,
) -> Result<()> {
    listener
        .set_nonblocking(true)
        .map_err(|e| Error::io("listener", e))?;
    let mut pending: Vec<Pending> = Vec::new();
    let (mut accepted, mut refused) = (0, 0);
    let mut refuse = |from: SocketAddr, why: &str| {
        refused += 1;
        eprintln!("o2g: rank {me}: refused a connection from {from}: {why}");
    };
    while accepted < expected {
        if Instant::now() >= deadline {
            return Err(Error::Timeout(format!(
                "rank {me}: {accepted} of {expected} peers connected before \
                 O2G_CONNECT_TIMEOUT ran out ({refused} connections refused)"
            )));
        }
        let mut busy = false;
        loop {
            match listener.accept() {
                Ok((s, from)) => {
                    busy = true;
                    if let Err(e) = s.set_nonblocking(true) {
                        refuse(from, &format!("O_NONBLOCK: {e}"));
                        continue;
                    }
                    if pending.len() == MAX_PENDING {
                        let old = pending.remove(0);
                        refuse(old.from, "too many connections without a hello");
                    }
                    pending.push(Pending {
                        s,
                        from,
                        hello: [0; HELLO_LEN],
                        got: 0,
                        since: Instant::now(),
                    });
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                // Interrupted, or a connection reset before it was
                // accepted: the next one may be fine.
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::Interrupted | ErrorKind::ConnectionAborted
                    ) => {}
                Err(e) => return Err(Error::io("accept", e)),
            }
        }
        let mut i = 0;
        while i < pending.len() {
            let p = &mut pending[i];
            let verdict = match (&p.s).read(&mut p.hello[p.got..]) {
                Ok(0) => Some(Err("closed before its hello was complete".to_owned())),
                Ok(n) => {
                    busy = true;
                    p.got += n;
                    (p.got == HELLO_LEN).then(|| check_hello(&p.hello, secret))
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {
                    (p.since.elapsed() >= HELLO_TIMEOUT)
                        .then(|| Err(format!("no hello within {HELLO_TIMEOUT:?}")))
                }
                Err(e) => Some(Err(format!("reading its hello: {e}"))),
            };
            let Some(verdict) = verdict else {
                i += 1;
                continue;
            };
            let p = pending.swap_remove(i);
            match verdict.and_then(|peer| place(peer, p.s)) {
                Ok(()) => accepted += 1,
                Err(why) => refuse(p.from, &why),
            }
        }
        if !busy && accepted < expected {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    Ok(())
}

/// An accepted connection whose hello is not complete yet.
struct Pending {
    s: TcpStream,
    from: SocketAddr,
    hello: [u8; HELLO_LEN],
    got: usize,
    since: Instant,
}

/// `n` idle connections: (the end a transport watches, the other end if
/// it is in this process). They stand for the idle connections of the o2g
/// paper's figure 6; nothing is ever sent on them. With `O2G_IDLE_HOLDER`
/// they go to that holder (a third node, as in the paper) and there is no
/// other end here; without it they are loopback pairs. The descriptor
/// limit is raised as far as allowed.
pub(crate) fn idle_pairs(n: usize, config: &Config) -> Result<Vec<(TcpStream, Option<TcpStream>)>> {
    if n == 0 {
        return Ok(Vec::new());
    }
    raise_fd_limit(2 * n as u64 + 256)?;
    let mut pairs = Vec::with_capacity(n);
    if let Some(holder) = config.idle_holder {
        for i in 0..n {
            let near =
                TcpStream::connect_timeout(&holder, config.connect_timeout).map_err(|e| {
                    Error::io(format!("idle connection {i} to the holder at {holder}"), e)
                })?;
            tune(&near, config)?;
            pairs.push((near, None));
        }
        return Ok(pairs);
    }
    let listener = TcpListener::bind(SocketAddr::new([127, 0, 0, 1].into(), 0))
        .map_err(|e| Error::io("idle-connection listener", e))?;
    let addr = listener
        .local_addr()
        .map_err(|e| Error::io("idle-connection listener", e))?;
    for i in 0..n {
        let far =
            TcpStream::connect(addr).map_err(|e| Error::io(format!("idle connection {i}"), e))?;
        let (near, _) = listener
            .accept()
            .map_err(|e| Error::io(format!("idle connection {i}"), e))?;
        tune(&near, config)?;
        pairs.push((near, Some(far)));
    }
    Ok(pairs)
}

/// Lets this process hold at least `want` descriptors, if the hard limit
/// allows; otherwise as many as it allows.
fn raise_fd_limit(want: u64) -> Result<()> {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (soft, hard) =
        getrlimit(Resource::RLIMIT_NOFILE).map_err(|e| Error::io("getrlimit", e.into()))?;
    if soft < want {
        setrlimit(Resource::RLIMIT_NOFILE, want.min(hard), hard)
            .map_err(|e| Error::io("setrlimit NOFILE", e.into()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    //! Threads play the ranks of a job, with an in-memory key-value space
    //! for PMI, over real loopback sockets; another thread plays a
    //! stranger that reached the listening port.

    use std::collections::HashMap;
    use std::sync::{Arc, Barrier, Mutex};
    use std::thread;

    use o2g_core::proto::envelope::{Envelope, Selector};

    use super::super::poll::Poll;
    use super::super::sockets::Sockets;
    use super::super::{ReceiveHalf, SendHalf};
    use super::super::{RecvOutcome, Transport};
    use super::*;

    const SECRET: &str = "0123456789abcdef0123456789abcdef";

    /// Every wait in these tests ends after this long.
    const PATIENCE: Duration = Duration::from_secs(20);

    /// A job's key-value space and barrier.
    struct Job {
        kv: Mutex<HashMap<String, String>>,
        barrier: Barrier,
    }

    impl Job {
        /// A job whose barrier `parties` threads enter.
        fn new(parties: usize) -> Arc<Self> {
            Arc::new(Self {
                kv: Mutex::new(HashMap::new()),
                barrier: Barrier::new(parties),
            })
        }

        /// The value of `key` once some thread published it.
        fn published(&self, key: &str) -> String {
            let end = Instant::now() + PATIENCE;
            loop {
                if let Some(v) = self.kv.lock().expect("kv").get(key) {
                    return v.clone();
                }
                assert!(Instant::now() < end, "{key} was never published");
                thread::sleep(Duration::from_millis(1));
            }
        }
    }

    /// One rank's view of the job.
    struct Member {
        job: Arc<Job>,
        rank: u32,
        size: u32,
    }

    impl Kvs for Member {
        fn rank(&self) -> u32 {
            self.rank
        }
        fn size(&self) -> u32 {
            self.size
        }
        fn put(&mut self, key: &str, value: &str) -> Result<()> {
            self.job
                .kv
                .lock()
                .expect("kv")
                .insert(key.into(), value.into());
            Ok(())
        }
        fn get(&mut self, key: &str) -> Result<String> {
            let kv = self.job.kv.lock().expect("kv");
            kv.get(key)
                .cloned()
                .ok_or_else(|| Error::Pmi(format!("no key {key}")))
        }
        fn barrier(&mut self) -> Result<()> {
            self.job.barrier.wait();
            Ok(())
        }
    }

    fn config(secret: Option<&str>) -> Config {
        Config::from_lookup(|name| match name {
            "O2G_JOB_SECRET" => secret.map(str::to_owned),
            "O2G_CONNECT_TIMEOUT" => Some("20".into()),
            _ => None,
        })
        .expect("test configuration")
    }

    /// A hello as a stranger might send it.
    fn raw_hello(rank: u32, secret: &[u8]) -> Vec<u8> {
        let mut h = HELLO_MAGIC.to_vec();
        h.push(VERSION);
        h.extend_from_slice(&rank.to_le_bytes());
        h.extend_from_slice(secret);
        h
    }

    /// Whether the other end closed `s` (within [`PATIENCE`]).
    fn closed(s: &mut TcpStream) -> bool {
        s.set_read_timeout(Some(PATIENCE)).expect("timeout");
        let mut buf = [0u8; 1];
        match s.read(&mut buf) {
            Ok(0) => true,
            Err(e) => e.kind() == ErrorKind::ConnectionReset,
            Ok(_) => false,
        }
    }

    /// Runs ranks `0..size` of a job as threads (with `stranger` as one
    /// more party of the barrier, given the job, before it enters it); each
    /// rank connects, then ranks 1.. send rank 0 a message that rank 0
    /// receives. Returns how long rank 0's setup took and the stranger's
    /// result.
    fn job<T: Send + 'static>(
        size: u32,
        secret: Option<&'static str>,
        stranger: impl FnOnce(&Job) -> T + Send + 'static,
    ) -> (Duration, T, Arc<Job>) {
        let job = Job::new(size as usize + 1);
        let s = {
            let job = job.clone();
            thread::spawn(move || {
                let out = stranger(&job);
                job.barrier.wait();
                out
            })
        };
        let ranks: Vec<_> = (0..size)
            .map(|rank| {
                let job = job.clone();
                thread::spawn(move || {
                    let cfg = config(secret);
                    let mut me = Member { job, rank, size };
                    let start = Instant::now();
                    let links = connect_all(&cfg, &mut me, false)
                        .unwrap_or_else(|e| panic!("rank {rank}: {e}"));
                    let took = start.elapsed();
                    let mut t = Sockets::new(rank, size, links, Poll::new(), &cfg, Vec::new())
                        .expect("transport");
                    let env = |source| Envelope {
                        source,
                        tag: 3,
                        context: 0,
                    };
                    if rank == 0 {
                        for from in 1..size {
                            let r = t.post_recv(Selector::exact(env(from)), 8).expect("post");
                            let end = Instant::now() + PATIENCE;
                            loop {
                                match t.test_recv(r) {
                                    Some(RecvOutcome::Done { data, .. }) => {
                                        assert_eq!(data, from.to_le_bytes());
                                        break;
                                    }
                                    Some(other) => panic!("from rank {from}: {other:?}"),
                                    None => {}
                                }
                                assert!(Instant::now() < end, "nothing from rank {from}");
                                t.progress(Some(Duration::from_millis(10)))
                                    .expect("progress");
                            }
                        }
                    } else {
                        t.send(0, env(rank), &rank.to_le_bytes()).expect("send");
                        t.flush(PATIENCE).expect("flush");
                    }
                    took
                })
            })
            .collect();
        let took: Vec<Duration> = ranks
            .into_iter()
            .map(|h| h.join().expect("a rank failed"))
            .collect();
        (took[0], s.join().expect("the stranger failed"), job)
    }

    /// Strangers reach rank 0's port before the real ranks: wrong secret,
    /// a hello without one, a wrong rank with the right secret, garbage,
    /// silence. Each is closed, and the job connects and runs at once.
    #[test]
    fn bad_hellos_are_refused_and_the_job_goes_on() {
        let (took, mut strangers, _) = job(3, Some(SECRET), |job| {
            let (addr, _) = parse_address_entry(&job.published("o2g-addr-0")).expect("address");
            let wrong = "fedcba9876543210fedcba9876543210";
            let hellos: Vec<Vec<u8>> = vec![
                raw_hello(1, wrong.as_bytes()),
                raw_hello(2, b""),
                raw_hello(7, SECRET.as_bytes()),
                raw_hello(0, SECRET.as_bytes()),
                vec![b'x'; HELLO_LEN],
                Vec::new(),
            ];
            hellos
                .iter()
                .map(|h| {
                    let mut s = TcpStream::connect(addr).expect("connect");
                    s.write_all(h).expect("hello");
                    s
                })
                .collect::<Vec<_>>()
        });
        assert!(
            took < HELLO_TIMEOUT,
            "setup waited {took:?} for the strangers"
        );
        for (i, s) in strangers.iter_mut().enumerate() {
            assert!(closed(s), "stranger {i} was not refused");
        }
    }

    /// Without `O2G_JOB_SECRET` (hydra), rank 0 publishes a fresh secret
    /// that the other ranks use, and a stranger with another is refused.
    #[test]
    fn without_o2g_job_secret_rank_0_publishes_one() {
        let (_, mut stranger, job) = job(3, None, |job| {
            let (addr, _) = parse_address_entry(&job.published("o2g-addr-0")).expect("address");
            let mut s = TcpStream::connect(addr).expect("connect");
            s.write_all(&raw_hello(2, SECRET.as_bytes()))
                .expect("hello");
            s
        });
        let published = job.kv.lock().expect("kv").get("o2g-secret").cloned();
        let published = published.expect("rank 0 published no secret");
        assert!(is_secret(&published), "{published:?}");
        assert_ne!(published, SECRET);
        assert!(closed(&mut stranger), "the stranger was not refused");
    }

    #[test]
    fn an_address_carries_the_wire_version() {
        let addr: SocketAddr = "127.0.0.1:4000".parse().expect("address");
        assert_eq!(
            parse_address_entry(&address_entry(addr)),
            Some((addr, VERSION))
        );
        assert_eq!(parse_address_entry("127.0.0.1:4000"), Some((addr, 1)));
        assert_eq!(parse_address_entry("127.0.0.1:4000/vx"), None);
    }

    /// A rank that publishes another wire version stops the others with
    /// an error that names both versions.
    /// Ranks on one host get a connection per direction: what one writes
    /// on its writer arrives on the other's registered (read) socket, and
    /// a rank's two sockets to a peer are not the same connection.
    #[test]
    fn peers_on_this_host_get_a_connection_per_direction() {
        on_three_ranks(|rank, cfg, mut me| {
            let mut links = connect_all(&cfg, &mut me, true).expect("connect");
            one_way_on_this_host(&mut links, &cfg, &mut me, "back-", Pairs::OnThisHost)
                .expect("second round");
            for (peer, link) in links.iter_mut().enumerate() {
                let (read, write) = link.as_mut().expect("a link to every rank");
                let write = write.as_mut().expect("a separate writer");
                assert_ne!(read.local_addr().unwrap(), write.local_addr().unwrap());
                // To itself: the two ends of one connection.
                if peer as u32 != rank {
                    write.write_all(&[rank as u8]).expect("write");
                }
            }
            me.barrier().expect("barrier");
            for (peer, link) in links.iter_mut().enumerate() {
                if peer as u32 == rank {
                    continue;
                }
                let (read, _) = link.as_mut().expect("link");
                read.set_read_timeout(Some(PATIENCE)).expect("timeout");
                let mut b = [0u8; 1];
                read.read_exact(&mut b).expect("read");
                assert_eq!(u32::from(b[0]), peer as u32, "rank {rank} read");
            }
        });
    }

    /// Runs `rank` on three ranks of one job (threads, on loopback), each
    /// with its rank, configuration and PMI member; panics if one did.
    fn on_three_ranks(rank: impl Fn(u32, Config, Member) + Clone + Send + 'static) {
        const SIZE: u32 = 3;
        let job = Job::new(SIZE as usize);
        let ranks: Vec<_> = (0..SIZE)
            .map(|r| {
                let (job, run) = (job.clone(), rank.clone());
                thread::spawn(move || {
                    let me = Member {
                        job,
                        rank: r,
                        size: SIZE,
                    };
                    run(r, config(Some(SECRET)), me)
                })
            })
            .collect();
        for r in ranks {
            r.join().expect("a rank failed");
        }
    }

    /// A round that connects nobody still completes in every rank (its
    /// barrier), leaves the links as they were, and lets the next round
    /// run.
    #[test]
    fn a_round_for_nobody_completes_and_changes_nothing() {
        on_three_ranks(|rank, cfg, mut me| {
            let mut links =
                connect_round(&cfg, &mut me, false, "ctl-", Pairs::All).expect("first round");
            one_way_on_this_host(&mut links, &cfg, &mut me, "ctl-back-", Pairs::Nobody)
                .expect("a round for nobody");
            for (peer, link) in links.iter().enumerate() {
                match link {
                    None => assert_eq!(peer as u32, rank, "rank {rank}: no link to {peer}"),
                    Some((_, writer)) => assert!(writer.is_none(), "rank {rank}: a writer"),
                }
            }
            one_way_on_this_host(&mut links, &cfg, &mut me, "back-", Pairs::OnThisHost)
                .expect("the next round");
            assert!(links.iter().flatten().all(|(_, w)| w.is_some()));
        });
    }

    #[test]
    fn published_addresses_tell_who_shares_the_host() {
        let at = |s: &str| s.parse::<SocketAddr>().expect("address");
        assert!(same_host(at("198.18.0.1:7000"), at("198.18.0.1:7001")));
        assert!(same_host(at("127.0.0.1:7000"), at("127.0.0.2:7001")));
        assert!(!same_host(at("198.18.0.1:7000"), at("198.18.0.2:7000")));
        assert!(!same_host(at("127.0.0.1:7000"), at("198.18.0.2:7000")));
    }

    #[test]
    fn a_peer_of_another_wire_version_is_refused_at_setup() {
        let job = Job::new(1);
        job.kv
            .lock()
            .expect("kv")
            .insert("o2g-addr-0".into(), "127.0.0.1:9/v1".into());
        let mut rank1 = Member {
            job,
            rank: 1,
            size: 2,
        };
        match connect_all(&config(Some(SECRET)), &mut rank1, false) {
            Err(e) => {
                let why = e.to_string();
                assert!(
                    why.contains("rank 0")
                        && why.contains("version 1")
                        && why.contains("version 2"),
                    "{why}"
                );
            }
            Ok(_) => panic!("connected to a peer of another version"),
        }
    }

    #[test]
    fn hellos_are_checked_whole() {
        let h = hello(5, SECRET);
        assert_eq!(check_hello(&h, SECRET), Ok(5));
        let mut bad = h;
        bad[HELLO_LEN - 1] ^= 1;
        assert!(check_hello(&bad, SECRET).unwrap_err().contains("secret"));
        let mut bad = h;
        bad[0] = b'X';
        assert!(check_hello(&bad, SECRET)
            .unwrap_err()
            .contains("not an o2g hello"));
        // o2g before rendezvous sent `O2hi`: version 1, named as such.
        let mut old = h;
        old[3] = b'i';
        let why = check_hello(&old, SECRET).unwrap_err();
        assert!(
            why.contains("version 1") && why.contains("version 2"),
            "{why}"
        );
        assert_ne!(
            fresh_secret().expect("secret"),
            fresh_secret().expect("secret")
        );
        assert!(is_secret(&fresh_secret().expect("secret")));
    }

    /// `O2G_PEER_TIMEOUT` reaches every tuned connection as TCP's user
    /// timeout and keepalive probing; `0` leaves TCP's defaults.
    #[test]
    fn the_peer_timeout_sets_the_user_timeout_and_keepalive() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("listener");
        let s = TcpStream::connect(listener.local_addr().expect("addr")).expect("connect");
        let fd = s.as_fd();
        use nix::sys::socket::getsockopt as get;
        let off = Config::from_lookup(|name| (name == "O2G_PEER_TIMEOUT").then(|| "0".into()))
            .expect("config");
        tune(&s, &off).expect("tune");
        assert!(!get(&fd, sockopt::KeepAlive).expect("keepalive"));
        assert_eq!(get(&fd, sockopt::TcpUserTimeout).expect("user timeout"), 0);
        for (value, secs) in [(None, 60), (Some("9"), 9)] {
            let c = Config::from_lookup(|name| {
                (name == "O2G_PEER_TIMEOUT")
                    .then(|| value.map(str::to_owned))
                    .flatten()
            })
            .expect("config");
            tune(&s, &c).expect("tune");
            assert!(get(&fd, sockopt::KeepAlive).expect("keepalive"));
            assert_eq!(
                get(&fd, sockopt::TcpUserTimeout).expect("user timeout"),
                secs * 1000
            );
            assert_eq!(get(&fd, sockopt::TcpKeepIdle).expect("idle"), secs / 3);
            assert_eq!(
                get(&fd, sockopt::TcpKeepInterval).expect("interval"),
                secs / 6
            );
        }
        // Past the kernel's bounds: clamped, not refused.
        let huge =
            Config::from_lookup(|name| (name == "O2G_PEER_TIMEOUT").then(|| u32::MAX.to_string()))
                .expect("config");
        tune(&s, &huge).expect("tune with the longest timeout");
        assert_eq!(
            get(&fd, sockopt::TcpUserTimeout).expect("user timeout"),
            i32::MAX as u32
        );
        assert_eq!(get(&fd, sockopt::TcpKeepIdle).expect("idle"), 32767);
        let e = Config::from_lookup(|name| (name == "O2G_PEER_TIMEOUT").then(|| "soon".into()))
            .expect_err("not a number")
            .to_string();
        assert!(e.contains("O2G_PEER_TIMEOUT"), "{e}");
    }

    #[test]
    fn a_timeout_names_the_setting_and_other_errors_read_as_the_system_says() {
        let timeout = std::io::Error::from_raw_os_error(nix::libc::ETIMEDOUT);
        assert!(super::socket_error_in_words(&timeout).contains("O2G_PEER_TIMEOUT"));
        let reset = std::io::Error::from_raw_os_error(nix::libc::ECONNRESET);
        assert_eq!(super::socket_error_in_words(&reset), reset.to_string());
    }
}
