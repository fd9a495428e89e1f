//! Connection setup for the socket transports: eager, all-to-all, once.
//!
//! Every process listens on an ephemeral port of `O2G_ADDR`, publishes
//! `ip:port` in the PMI key-value space under `o2g-addr-<rank>`, and after
//! one PMI barrier
//! - connects to every lower rank (and to itself when `O2G_SELF=0`, and
//!   always for the `o2g` transport),
//!   sending a hello that names its rank, then
//! - accepts one connection from every higher rank (and its own).
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

use crate::config::Config;
use crate::error::{Error, Result};
use crate::pmi::Pmi;

/// The hello a connecting process sends: magic, then its rank (LE u32).
const HELLO_MAGIC: [u8; 4] = *b"O2hi";

/// Applies the per-connection socket options (`TCP_NODELAY`, buffer
/// sizes) and makes the socket nonblocking.
pub(crate) fn tune(s: &TcpStream, config: &Config) -> Result<()> {
    let ctx = |what: &'static str| move |e| Error::io(what, e);
    s.set_nodelay(true).map_err(ctx("TCP_NODELAY"))?;
    if let Some(n) = config.sndbuf {
        setsockopt(&s.as_fd(), sockopt::SndBuf, &n).map_err(|e| ctx("SO_SNDBUF")(e.into()))?;
    }
    if let Some(n) = config.rcvbuf {
        setsockopt(&s.as_fd(), sockopt::RcvBuf, &n).map_err(|e| ctx("SO_RCVBUF")(e.into()))?;
    }
    s.set_nonblocking(true).map_err(ctx("O_NONBLOCK"))
}

/// One peer's connection: the socket, plus for the connection of a process
/// to itself (`O2G_SELF=0`) the connecting end, which is the one to write
/// to (the first socket is the accepted end, which reads).
pub(crate) type Link = (TcpStream, Option<TcpStream>);

/// Connects this process to every peer; entry `r` is the connection to
/// world rank `r`, and to itself only with `self_link` (`None` otherwise).
pub(crate) fn connect_all(
    config: &Config,
    pmi: &mut Pmi,
    self_link: bool,
) -> Result<Vec<Option<Link>>> {
    let (me, size) = (pmi.rank(), pmi.size());
    let deadline = Instant::now() + config.connect_timeout;
    let listener = TcpListener::bind(SocketAddr::new(config.addr, 0))
        .map_err(|e| Error::io(format!("listening on {}", config.addr), e))?;
    let addr = listener
        .local_addr()
        .map_err(|e| Error::io("listener address", e))?;
    pmi.put(&format!("o2g-addr-{me}"), &addr.to_string())?;
    pmi.barrier()?;

    let mut conns: Vec<Option<Link>> = (0..size).map(|_| None).collect();
    let mut self_writer = None;
    let with_self = self_link;
    for peer in (0..me).chain(with_self.then_some(me)) {
        let text = pmi.get(&format!("o2g-addr-{peer}"))?;
        let peer_addr: SocketAddr = text
            .parse()
            .map_err(|_| Error::Pmi(format!("rank {peer} published a bad address {text:?}")))?;
        let left = deadline.saturating_duration_since(Instant::now());
        let mut s = TcpStream::connect_timeout(&peer_addr, left.max(Duration::from_millis(1)))
            .map_err(|e| Error::io(format!("connecting to rank {peer} at {peer_addr}"), e))?;
        let mut hello = HELLO_MAGIC.to_vec();
        hello.extend_from_slice(&me.to_le_bytes());
        s.write_all(&hello)
            .map_err(|e| Error::io(format!("hello to rank {peer}"), e))?;
        if peer == me {
            self_writer = Some(s);
        } else {
            conns[peer as usize] = Some((s, None));
        }
    }

    let expected = (size - me - 1) as usize + usize::from(with_self);
    listener
        .set_nonblocking(true)
        .map_err(|e| Error::io("listener", e))?;
    let mut accepted = 0;
    while accepted < expected {
        match listener.accept() {
            Ok((s, from)) => {
                let peer = read_hello(&s, deadline)
                    .map_err(|e| Error::io(format!("hello from {from}"), e))?;
                let slot = conns.get_mut(peer as usize).filter(|_| peer >= me);
                match slot {
                    Some(slot @ None) if peer > me || with_self => {
                        let writer = if peer == me { self_writer.take() } else { None };
                        *slot = Some((s, writer));
                        accepted += 1;
                    }
                    _ => {
                        return Err(Error::Pmi(format!(
                            "unexpected hello from rank {peer} (this is rank {me} of {size})"
                        )))
                    }
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                if Instant::now() >= deadline {
                    return Err(Error::Timeout(format!(
                        "rank {me}: {accepted} of {expected} peers connected within {:?}",
                        config.connect_timeout
                    )));
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => return Err(Error::io("accept", e)),
        }
    }
    for (s, w) in conns.iter().flatten() {
        tune(s, config)?;
        if let Some(w) = w {
            tune(w, config)?;
        }
    }
    Ok(conns)
}

fn read_hello(s: &TcpStream, deadline: Instant) -> std::io::Result<u32> {
    s.set_nonblocking(false)?;
    let left = deadline.saturating_duration_since(Instant::now());
    s.set_read_timeout(Some(left.max(Duration::from_millis(1))))?;
    let mut buf = [0u8; 8];
    (&*s).read_exact(&mut buf)?;
    s.set_read_timeout(None)?;
    if buf[..4] != HELLO_MAGIC {
        return Err(std::io::Error::new(
            ErrorKind::InvalidData,
            "not an o2g hello",
        ));
    }
    Ok(u32::from_le_bytes([buf[4], buf[5], buf[6], buf[7]]))
}

/// `n` idle loopback connections: (the end a transport watches, the other
/// end, which only keeps it open). They stand for the idle connections of
/// the o2g paper's figure 6, where a third process holds them; nothing is
/// ever sent on them. The descriptor limit is raised as far as allowed.
pub(crate) fn idle_pairs(n: usize, config: &Config) -> Result<Vec<(TcpStream, TcpStream)>> {
    if n == 0 {
        return Ok(Vec::new());
    }
    raise_fd_limit(2 * n as u64 + 256)?;
    let listener = TcpListener::bind(SocketAddr::new([127, 0, 0, 1].into(), 0))
        .map_err(|e| Error::io("idle-connection listener", e))?;
    let addr = listener
        .local_addr()
        .map_err(|e| Error::io("idle-connection listener", e))?;
    let mut pairs = Vec::with_capacity(n);
    for i in 0..n {
        let far =
            TcpStream::connect(addr).map_err(|e| Error::io(format!("idle connection {i}"), e))?;
        let (near, _) = listener
            .accept()
            .map_err(|e| Error::io(format!("idle connection {i}"), e))?;
        tune(&near, config)?;
        pairs.push((near, far));
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
