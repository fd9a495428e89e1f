//! PMI: how a process learns its rank and finds its peers, over PMI-1 or
//! PMI-2.
//!
//! # The connection
//!
//! The process manager (MPICH hydra's `mpiexec`, Slurm's `srun`, or our
//! `o2grun`) starts each process with either
//! - `PMI_FD`: an inherited, connected socket (hydra on one node, Slurm's
//!   `pmi2` plugin), or
//! - `PMI_PORT=host:port` and `PMI_ID`: a TCP address to connect to, with
//!   the `initack` handshake that tells the server which process this is
//!   (and, under o2grun, proves it with the job's secret,
//!   `O2G_JOB_SECRET`; hydra's `PMI_FD` needs no proof and never gets
//!   one),
//!
//! plus `PMI_RANK` and `PMI_SIZE`. Without any of this the process is a
//! singleton: a world of one, with a private key-value space (MPI 4.1
//! §11.8.2).
//!
//! # The protocol
//!
//! Both versions open with the same PMI-1 line, `cmd=init pmi_version=V`,
//! after the `initack` where there is one; the server answers in the
//! version asked for, and so hydra, Slurm's `pmi2` plugin and o2grun serve
//! either, per connection. What follows is
//! - PMI-1 (`v1.rs`): newline-terminated lines of space-separated
//!   `key=value` words, a value's spaces and backslashes escaped with a
//!   backslash (`escape.rs`); `put`, `get`, `barrier_in`, `finalize`,
//!   `abort`;
//! - PMI-2 (`v2.rs`): frames of `key=value;` pairs behind a 6-byte length
//!   (`frame.rs`); `fullinit`, `kvs-put`, `kvs-fence`, `kvs-get`,
//!   `finalize`, `abort`. A fence is made a barrier where the server's is
//!   not one (hydra's).
//!
//! Which one this process speaks:
//! 1. `O2G_PMI_VERSION=1` or `2`, if set (`o2grun --pmi N` sets it for its
//!    ranks);
//! 2. otherwise 2 under Slurm's `pmi2` plugin, which PMI-2 is native to,
//!    known by `PMI_JOBID` beside `PMI_FD` (the plugin sets `PMI_FD`,
//!    `PMI_JOBID`, `PMI_RANK` and `PMI_SIZE`; hydra sets `PMI_FD`,
//!    `PMI_RANK` and `PMI_SIZE` only, and nothing that names a version,
//!    not even in its PMI-2 mode, which is the client's choice);
//! 3. otherwise 1.
//!
//! `unsafe` here is only the adoption of the inherited `PMI_FD`.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use crate::error::{Error, Result};

mod escape;
mod frame;
mod link;
mod v1;
mod v2;

use link::Link;

/// How long one PMI response may take (a barrier waits for the slowest
/// process, so this is generous; it only keeps a dead manager from hanging
/// us forever).
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(600);

/// The variable that overrides the choice of version.
const VERSION_ENV: &str = "O2G_PMI_VERSION";

/// The PMI versions this client speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Version {
    One,
    Two,
}

/// Who answers this process's PMI calls.
enum Session {
    /// No process manager: the key-value space is this process's own.
    Singleton(HashMap<String, String>),
    One(v1::Client),
    Two(v2::Client),
    /// After `finalize`.
    Done,
}

/// A connection to the process manager (or a singleton's stand-in).
pub(crate) struct Pmi {
    session: Session,
    rank: u32,
    size: u32,
}

fn env_u32(name: &str) -> Result<Option<u32>> {
    match std::env::var(name) {
        Err(_) => Ok(None),
        Ok(v) => v
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| Error::Pmi(format!("{name}={v:?} is not a number"))),
    }
}

/// The version to speak: `O2G_PMI_VERSION` (its value as given), else
/// what the launcher is (`slurm_pmi2`: `PMI_FD` and `PMI_JOBID` set).
fn choose_version(given: Option<&str>, slurm_pmi2: bool) -> Result<Version> {
    match given.map(str::trim) {
        Some("1") => Ok(Version::One),
        Some("2") => Ok(Version::Two),
        Some(other) => Err(Error::Pmi(format!(
            "{VERSION_ENV}={other:?}: expected 1 or 2"
        ))),
        None if slurm_pmi2 => Ok(Version::Two),
        None => Ok(Version::One),
    }
}

/// Connects to a PMI server, retrying while it refuses: across machines
/// (`o2grun --pmi-server`) the ranks may start before the server listens.
fn connect_patiently(addr: &str) -> std::io::Result<TcpStream> {
    let deadline = std::time::Instant::now() + RESPONSE_TIMEOUT;
    loop {
        match TcpStream::connect(addr) {
            Err(e)
                if e.kind() == std::io::ErrorKind::ConnectionRefused
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            other => return other,
        }
    }
}

/// Adopts the socket the process manager left open as `PMI_FD`.
fn adopt_fd(fd: RawFd) -> Result<UnixStream> {
    // Refuse numbers that name no open descriptor before taking ownership.
    let flags = nix::fcntl::fcntl(
        // SAFETY: the descriptor is only borrowed for this one fcntl call.
        unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) },
        nix::fcntl::FcntlArg::F_GETFD,
    );
    if flags.is_err() || fd < 0 {
        return Err(Error::Pmi(format!("PMI_FD={fd} is not an open descriptor")));
    }
    // SAFETY: PMI_FD is a descriptor the process manager passed to this
    // process for exactly this purpose; nothing else in the process owns
    // it, and it is adopted once (initialize runs once per process).
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    Ok(UnixStream::from(owned))
}

/// The connection the environment names, and whether it is a `PMI_PORT`
/// one (which wants the `initack`); `None` for a singleton.
fn open(peer_timeout: Option<Duration>) -> Result<Option<(Link, bool)>> {
    let io = |what: &str| {
        let what = what.to_owned();
        move |e| Error::io(what, e)
    };
    let (reader, writer, port): (Box<dyn Read>, Box<dyn Write>, bool) =
        if let Some(fd) = env_u32("PMI_FD")? {
            let s = adopt_fd(fd as RawFd)?;
            s.set_read_timeout(Some(RESPONSE_TIMEOUT))
                .map_err(io("PMI_FD"))?;
            (
                Box::new(s.try_clone().map_err(io("PMI_FD"))?),
                Box::new(s),
                false,
            )
        } else if let Ok(port) = std::env::var("PMI_PORT") {
            let s = connect_patiently(&port).map_err(io(&format!("PMI_PORT={port}")))?;
            s.set_read_timeout(Some(RESPONSE_TIMEOUT))
                .map_err(io("PMI_PORT"))?;
            let _ = s.set_nodelay(true);
            // A manager on a host gone silent would otherwise hold this
            // process for RESPONSE_TIMEOUT, even after its peers are lost.
            if let Some(t) = peer_timeout {
                crate::transport::bootstrap::set_peer_timeout(&s, t)?;
            }
            (
                Box::new(s.try_clone().map_err(io("PMI_PORT"))?),
                Box::new(s),
                true,
            )
        } else {
            return Ok(None);
        };
    Ok(Some((Link::new(reader, writer), port)))
}

impl Pmi {
    /// Connects as the environment says, or makes a singleton. A TCP
    /// connection (`PMI_PORT`) fails once the manager's host was silent
    /// for `peer_timeout` (`O2G_PEER_TIMEOUT`).
    pub(crate) fn connect(peer_timeout: Option<Duration>) -> Result<Self> {
        let given = std::env::var(VERSION_ENV).ok();
        let slurm_pmi2 =
            std::env::var_os("PMI_FD").is_some() && std::env::var_os("PMI_JOBID").is_some();
        let version = choose_version(given.as_deref(), slurm_pmi2)?;
        let Some((mut link, port)) = open(peer_timeout)? else {
            return Ok(Self {
                session: Session::Singleton(HashMap::new()),
                rank: 0,
                size: 1,
            });
        };
        let mut rank = env_u32("PMI_RANK")?.unwrap_or(0);
        let mut size = env_u32("PMI_SIZE")?.unwrap_or(1);
        let id = std::env::var("PMI_ID").ok();
        if let Some(id) = id.as_deref().filter(|_| port) {
            // Only o2grun's PMI_PORT server asks for the secret.
            let secret = std::env::var("O2G_JOB_SECRET").ok();
            let (s, r) = v1::initack(&mut link, id, secret.as_deref())?;
            size = s.unwrap_or(size);
            rank = r.unwrap_or(rank);
        }
        let session = match version {
            Version::One => Session::One(v1::Client::start(link)?),
            Version::Two => {
                // As MPICH's client names itself: PMI_ID, else PMI_RANK.
                let pmirank = id.unwrap_or_else(|| rank.to_string());
                let jobid = std::env::var("PMI_JOBID").ok();
                let s = v2::Client::start(link, &pmirank, jobid.as_deref())?;
                (rank, size) = (s.rank, s.size);
                Session::Two(s.client)
            }
        };
        if rank >= size {
            return Err(Error::Pmi(format!("rank {rank} outside size {size}")));
        }
        Ok(Self {
            session,
            rank,
            size,
        })
    }

    /// This process's rank in the world.
    pub(crate) fn rank(&self) -> u32 {
        self.rank
    }

    /// Number of processes in the world.
    pub(crate) fn size(&self) -> u32 {
        self.size
    }

    /// Publishes `key=value` in the job's key-value space.
    pub(crate) fn put(&mut self, key: &str, value: &str) -> Result<()> {
        match &mut self.session {
            Session::Singleton(local) => {
                local.insert(key.into(), value.into());
                Ok(())
            }
            Session::One(c) => c.put(key, value),
            Session::Two(c) => c.put(key, value),
            Session::Done => Err(finalized()),
        }
    }

    /// Reads a key another process published before the last barrier.
    pub(crate) fn get(&mut self, key: &str) -> Result<String> {
        match &mut self.session {
            Session::Singleton(local) => local
                .get(key)
                .cloned()
                .ok_or_else(|| Error::Pmi(format!("no key {key}"))),
            Session::One(c) => c.get(key),
            Session::Two(c) => c.get(key),
            Session::Done => Err(finalized()),
        }
    }

    /// Waits until every process has reached the barrier; makes earlier
    /// puts visible to every process.
    pub(crate) fn barrier(&mut self) -> Result<()> {
        match &mut self.session {
            Session::Singleton(_) => Ok(()),
            Session::One(c) => c.barrier(),
            Session::Two(c) => c.barrier(),
            Session::Done => Err(finalized()),
        }
    }

    /// Tells the manager this process is done with PMI.
    pub(crate) fn finalize(&mut self) -> Result<()> {
        match std::mem::replace(&mut self.session, Session::Done) {
            Session::Singleton(_) | Session::Done => Ok(()),
            Session::One(mut c) => c.finalize(),
            Session::Two(mut c) => c.finalize(),
        }
    }

    /// Asks the manager to end the whole job with `code`
    /// (`MPI_Abort`, §9.5); best effort.
    pub(crate) fn abort(&mut self, code: i32, msg: &str) {
        match &mut self.session {
            Session::One(c) => c.abort(code, msg),
            Session::Two(c) => c.abort(code, msg),
            Session::Singleton(_) | Session::Done => {}
        }
    }
}

fn finalized() -> Error {
    Error::Pmi("PMI is finalized".into())
}

#[cfg(test)]
mod tests {
    use super::escape::{escape, parse};
    use super::{choose_version, Version};

    #[test]
    fn a_value_with_spaces_and_backslashes_reaches_the_client_intact() {
        // As o2grun or hydra answers a `get` of such a value.
        let value = "shm name with spaces \\ and a backslash";
        let line = format!("cmd=get_result rc=0 value={}\n", escape(value));
        let words = parse(&line);
        assert_eq!(words["value"], value, "a line arrives with its newline");
        assert_eq!(
            (words["cmd"].as_str(), words["rc"].as_str()),
            ("get_result", "0")
        );
    }

    #[test]
    fn escaping_keeps_underscores_and_marks_spaces_and_backslashes() {
        assert_eq!(
            escape("rank 2: O2G_TRANSPORT=self  a\\b"),
            "rank\\ 2:\\ O2G_TRANSPORT=self\\ \\ a\\\\b"
        );
        assert_eq!(escape("two\nlines"), "two\\ lines");
        assert_eq!(escape(""), "");
    }

    #[test]
    fn the_version_is_the_one_asked_for_else_the_launchers() {
        assert_eq!(choose_version(Some("1"), true).ok(), Some(Version::One));
        assert_eq!(choose_version(Some(" 2 "), false).ok(), Some(Version::Two));
        assert_eq!(choose_version(None, true).ok(), Some(Version::Two));
        assert_eq!(choose_version(None, false).ok(), Some(Version::One));
        for bad in ["3", "", "two", "1.1"] {
            let e = choose_version(Some(bad), false)
                .err()
                .map(|e| e.to_string());
            assert!(
                e.as_deref().is_some_and(|e| e.contains("expected 1 or 2")),
                "{bad:?}: {e:?}"
            );
        }
    }
}
