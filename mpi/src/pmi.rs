//! PMI-1 client: how a process learns its rank and finds its peers.
//!
//! The process manager (MPICH hydra's `mpiexec`, Slurm, or our `o2grun`)
//! starts each process with either
//! - `PMI_FD`: an inherited, connected socket (hydra on one node), or
//! - `PMI_PORT=host:port` and `PMI_ID`: a TCP address to connect to, with
//!   the `initack` handshake that tells the server which process this is
//!   (and, under o2grun, proves it with the job's secret, `O2G_JOB_SECRET`;
//!   hydra's `PMI_FD` needs no proof and never gets one),
//!
//! plus `PMI_RANK` and `PMI_SIZE`. Commands are newline-terminated lines
//! of space-separated `key=value` pairs (`cmd=init pmi_version=1
//! pmi_subversion=1`, `get_maxes`, `get_my_kvsname`, `put`, `get`,
//! `barrier_in`/`barrier_out`, `finalize`, `abort`); every request gets one
//! response line. A value may hold spaces and backslashes escaped with a
//! backslash, as MPICH writes them. Without any of this the process is a
//! singleton: a world of one, with a private key-value space (MPI 4.1
//! §11.8.2).
//!
//! `unsafe` here is only the adoption of the inherited `PMI_FD`.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use crate::error::{Error, Result};

mod escape;
use escape::{escape, parse};

/// How long one PMI response may take (a barrier waits for the slowest
/// process, so this is generous; it only keeps a dead manager from hanging
/// us forever).
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(600);

struct Wire {
    reader: BufReader<Box<dyn Read>>,
    writer: Box<dyn Write>,
}

/// A connection to the process manager (or a singleton's stand-in).
pub(crate) struct Pmi {
    wire: Option<Wire>,
    rank: u32,
    size: u32,
    kvsname: String,
    local: HashMap<String, String>,
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

impl Pmi {
    /// Connects as the environment says, or makes a singleton.
    pub(crate) fn connect() -> Result<Self> {
        let io = |what: &str| {
            let what = what.to_owned();
            move |e| Error::io(what, e)
        };
        // Only o2grun's PMI_PORT server asks for the secret.
        let mut secret = None;
        let (reader, writer): (Box<dyn Read>, Box<dyn Write>) = if let Some(fd) = env_u32("PMI_FD")?
        {
            let s = adopt_fd(fd as RawFd)?;
            s.set_read_timeout(Some(RESPONSE_TIMEOUT))
                .map_err(io("PMI_FD"))?;
            (Box::new(s.try_clone().map_err(io("PMI_FD"))?), Box::new(s))
        } else if let Ok(port) = std::env::var("PMI_PORT") {
            let s = connect_patiently(&port).map_err(io(&format!("PMI_PORT={port}")))?;
            s.set_read_timeout(Some(RESPONSE_TIMEOUT))
                .map_err(io("PMI_PORT"))?;
            let _ = s.set_nodelay(true);
            secret = std::env::var("O2G_JOB_SECRET").ok();
            (
                Box::new(s.try_clone().map_err(io("PMI_PORT"))?),
                Box::new(s),
            )
        } else {
            return Ok(Self {
                wire: None,
                rank: 0,
                size: 1,
                kvsname: "singleton".into(),
                local: HashMap::new(),
            });
        };
        let mut pmi = Self {
            wire: Some(Wire {
                reader: BufReader::new(reader),
                writer,
            }),
            rank: env_u32("PMI_RANK")?.unwrap_or(0),
            size: env_u32("PMI_SIZE")?.unwrap_or(1),
            kvsname: String::new(),
            local: HashMap::new(),
        };
        if let Ok(id) = std::env::var("PMI_ID") {
            pmi.initack(&id, secret.as_deref())?;
        }
        let r = pmi.call(
            "cmd=init pmi_version=1 pmi_subversion=1",
            "response_to_init",
        )?;
        if r.get("pmi_version").map(String::as_str) != Some("1") {
            return Err(Error::Pmi(format!(
                "server speaks PMI {:?}, not 1",
                r.get("pmi_version")
            )));
        }
        pmi.call("cmd=get_maxes", "maxes")?;
        let r = pmi.call("cmd=get_my_kvsname", "my_kvsname")?;
        pmi.kvsname = r
            .get("kvsname")
            .cloned()
            .ok_or_else(|| Error::Pmi("my_kvsname without kvsname".into()))?;
        if pmi.rank >= pmi.size {
            return Err(Error::Pmi(format!(
                "rank {} outside size {}",
                pmi.rank, pmi.size
            )));
        }
        Ok(pmi)
    }

    /// Hydra's `PMI_PORT` handshake: the server answers with our size and
    /// rank. o2grun's server also wants the job's `secret`, which its
    /// ranks find in `O2G_JOB_SECRET`; without one the line is hydra's.
    fn initack(&mut self, id: &str, secret: Option<&str>) -> Result<()> {
        let proof = secret.map_or(String::new(), |s| format!(" secret={}", escape(s)));
        self.send(&format!("cmd=initack pmiid={id}{proof}"))?;
        self.expect("initack")?;
        for _ in 0..3 {
            let r = self.expect("set")?;
            let num = |k: &str| r.get(k).and_then(|v| v.parse().ok());
            if let Some(n) = num("size") {
                self.size = n;
            }
            if let Some(n) = num("rank") {
                self.rank = n;
            }
        }
        Ok(())
    }

    fn send(&mut self, line: &str) -> Result<()> {
        let w = self
            .wire
            .as_mut()
            .ok_or(Error::Pmi("no process manager".into()))?;
        w.writer
            .write_all(format!("{line}\n").as_bytes())
            .and_then(|()| w.writer.flush())
            .map_err(|e| Error::io("writing to the process manager", e))
    }

    fn expect(&mut self, cmd: &str) -> Result<HashMap<String, String>> {
        let w = self
            .wire
            .as_mut()
            .ok_or(Error::Pmi("no process manager".into()))?;
        let mut line = String::new();
        let n = w
            .reader
            .read_line(&mut line)
            .map_err(|e| Error::io("reading from the process manager", e))?;
        if n == 0 {
            return Err(Error::Pmi(format!(
                "connection closed while waiting for {cmd}"
            )));
        }
        let r = parse(&line);
        if r.get("cmd").map(String::as_str) != Some(cmd) {
            return Err(Error::Pmi(format!(
                "expected cmd={cmd}, got {:?}",
                line.trim()
            )));
        }
        if let Some(rc) = r.get("rc").filter(|rc| *rc != "0") {
            return Err(Error::Pmi(format!(
                "{cmd} failed: rc={rc} {}",
                r.get("msg").map_or("", String::as_str)
            )));
        }
        Ok(r)
    }

    fn call(&mut self, line: &str, reply: &str) -> Result<HashMap<String, String>> {
        self.send(line)?;
        self.expect(reply)
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
        if self.wire.is_none() {
            self.local.insert(key.into(), value.into());
            return Ok(());
        }
        let line = format!("cmd=put kvsname={} key={key} value={value}", self.kvsname);
        self.call(&line, "put_result").map(drop)
    }

    /// Reads a key another process published before the last barrier.
    pub(crate) fn get(&mut self, key: &str) -> Result<String> {
        if self.wire.is_none() {
            return self
                .local
                .get(key)
                .cloned()
                .ok_or_else(|| Error::Pmi(format!("no key {key}")));
        }
        let line = format!("cmd=get kvsname={} key={key}", self.kvsname);
        let r = self.call(&line, "get_result")?;
        r.get("value")
            .cloned()
            .ok_or_else(|| Error::Pmi(format!("get {key}: no value")))
    }

    /// Waits until every process has reached the barrier; makes earlier
    /// puts visible to every process.
    pub(crate) fn barrier(&mut self) -> Result<()> {
        if self.wire.is_none() {
            return Ok(());
        }
        self.call("cmd=barrier_in", "barrier_out").map(drop)
    }

    /// Tells the manager this process is done with PMI.
    pub(crate) fn finalize(&mut self) -> Result<()> {
        if self.wire.is_none() {
            return Ok(());
        }
        let r = self.call("cmd=finalize", "finalize_ack").map(drop);
        self.wire = None;
        r
    }

    /// Asks the manager to end the whole job with `code`
    /// (`MPI_Abort`, §9.5); best effort. The message arrives as written
    /// (line breaks become spaces).
    pub(crate) fn abort(&mut self, code: i32, msg: &str) {
        let _ = self.send(&format!(
            "cmd=abort exitcode={code} error_msg={}",
            escape(msg)
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::{escape, parse};

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
}
