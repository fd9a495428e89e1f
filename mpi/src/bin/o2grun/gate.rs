//! Admission to the PMI server: which connections may speak for a rank.
//!
//! Anyone who can reach the PMI port can connect. A connection is served
//! (`pmi_server.rs`) only once its first line is
//! `cmd=initack pmiid=<rank> secret=<the job's secret>` for a rank that no
//! connection has held yet; until then it is a few bytes of buffer here,
//! and nothing it sends or withholds reaches the job. This is the proof
//! for either PMI version: over `PMI_PORT` both open with the `initack`
//! (hydra's handshake), and a PMI-2 client asks for its version after it
//! (`cmd=init pmi_version=2`), so the gate needs to know no version and
//! one secret check covers both. A connection that opens with a PMI-2
//! frame instead (told by its length field) is refused at once, not
//! after the timeout:
//! - the first line must come within [`INITACK_TIMEOUT`] and fit in
//!   [`MAX_FIRST_LINE`] bytes, and must be UTF-8;
//! - at most [`MAX_PENDING`] connections wait at once; when that many do,
//!   the oldest makes room for a newcomer once it has waited
//!   [`EVICT_AGE`] (a real rank sends its initack as soon as it is
//!   connected);
//! - a refused connection is closed, after an `rc=-1` answer if it asked
//!   for a rank, and the first [`MAX_REPORTED`] refusals are reported on
//!   stderr;
//! - accepting goes on, however many connections came and went, until
//!   every rank holds one; then the listener closes.
//!
//! One thread polls the listener and the waiting connections (poll(2),
//! non-blocking sockets); each admitted connection gets a blocking thread
//! of its own in the server.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use crate::pmi_server::Server;
use crate::secret::Secret;
use crate::wire;
use crate::wire2;

/// How long a new connection has to send its initack.
pub(crate) const INITACK_TIMEOUT: Duration = Duration::from_secs(5);

/// Most connections waiting for their initack at once.
pub(crate) const MAX_PENDING: usize = 128;

/// How long a connection waits before a newcomer may push it out.
const EVICT_AGE: Duration = Duration::from_millis(250);

/// Longest first line, newline excluded: an initack is under 100 bytes.
pub(crate) const MAX_FIRST_LINE: usize = 1024;

/// Refusals reported on stderr; later ones are only counted.
const MAX_REPORTED: u32 = 10;

/// How long accepting pauses when o2grun runs out of descriptors.
const FD_PAUSE: Duration = Duration::from_millis(100);

/// A connection that has not yet said who it is.
struct Pending {
    stream: TcpStream,
    peer: SocketAddr,
    since: Instant,
    buf: Vec<u8>,
}

/// Why a connection was not admitted.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    Closed,
    Failed(String),
    Silent,
    Evicted,
    TooLong,
    NotUtf8,
    NotInitack,
    /// Its first bytes are a PMI-2 length field.
    Pmi2Frame,
    NoSuchRank,
    WrongSecret,
    Taken(u32),
}

impl Refusal {
    /// What the connection is told, if it asked for a rank.
    fn answer(&self) -> Option<String> {
        let msg = match self {
            Refusal::NoSuchRank => "no_such_rank".to_owned(),
            Refusal::WrongSecret => "wrong_job_secret".to_owned(),
            Refusal::Taken(r) => format!("rank_{r}_already_connected"),
            _ => return None,
        };
        Some(format!("cmd=initack rc=-1 msg={msg}\n"))
    }

    fn describe(&self) -> String {
        match self {
            Refusal::Closed => "closed before its initack".into(),
            Refusal::Failed(e) => format!("failed before its initack: {e}"),
            Refusal::Silent => format!("sent no initack within {INITACK_TIMEOUT:?}"),
            Refusal::Evicted => "made room for newer connections before its initack".into(),
            Refusal::TooLong => format!("sent more than {MAX_FIRST_LINE} bytes without a newline"),
            Refusal::NotUtf8 => "sent a line that is not UTF-8".into(),
            Refusal::NotInitack => "did not open with an initack".into(),
            Refusal::Pmi2Frame => "opened with a PMI-2 frame, not an initack line (over PMI_PORT \
                                   both PMI versions begin with cmd=initack pmiid=<rank> \
                                   secret=<job secret>)"
                .into(),
            Refusal::NoSuchRank => "asked for a rank the job does not have".into(),
            Refusal::WrongSecret => "presented a wrong or no job secret".into(),
            Refusal::Taken(r) => format!("asked for rank {r}, which has its connection"),
        }
    }
}

/// The rank a first line asks for, if its initack is in order (apart
/// from whether the rank is free).
pub(crate) fn judge(line: &[u8], np: u32, secret: Option<&Secret>) -> Result<u32, Refusal> {
    let line = std::str::from_utf8(line).map_err(|_| Refusal::NotUtf8)?;
    let kv = wire::parse(line);
    if kv.get("cmd").map(String::as_str) != Some("initack") {
        return Err(Refusal::NotInitack);
    }
    let rank = kv
        .get("pmiid")
        .and_then(|v| v.parse::<u32>().ok())
        .filter(|&r| r < np)
        .ok_or(Refusal::NoSuchRank)?;
    if let Some(s) = secret {
        if !kv.get("secret").is_some_and(|o| s.matches(o)) {
            return Err(Refusal::WrongSecret);
        }
    }
    Ok(rank)
}

/// What reading from a waiting connection came to.
enum Progress {
    Waiting,
    /// The first line, and what came after it.
    Line(Vec<u8>, Vec<u8>),
    Refused(Refusal),
}

fn read_first_line(p: &mut Pending) -> Progress {
    let mut chunk = [0u8; 512];
    loop {
        match p.stream.read(&mut chunk) {
            Ok(0) => return Progress::Refused(Refusal::Closed),
            Ok(n) => {
                p.buf.extend_from_slice(&chunk[..n]);
                let field = p.buf.get(..wire2::LEN_FIELD);
                if field.is_some_and(|f| wire2::parse_len(f).is_ok()) {
                    return Progress::Refused(Refusal::Pmi2Frame);
                }
                if let Some(i) = p.buf.iter().position(|&b| b == b'\n') {
                    let rest = p.buf.split_off(i + 1);
                    p.buf.pop();
                    if p.buf.len() > MAX_FIRST_LINE {
                        return Progress::Refused(Refusal::TooLong);
                    }
                    return Progress::Line(std::mem::take(&mut p.buf), rest);
                }
                if p.buf.len() > MAX_FIRST_LINE {
                    return Progress::Refused(Refusal::TooLong);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Progress::Waiting,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Progress::Refused(Refusal::Failed(e.to_string())),
        }
    }
}

struct Gate<'a> {
    server: &'a Arc<Server>,
    /// Oldest first.
    pending: VecDeque<Pending>,
    refused: u32,
    /// Accepting is paused until then (out of descriptors).
    paused: Option<Instant>,
}

impl Gate<'_> {
    fn refuse(&mut self, mut p: Pending, why: Refusal) {
        if let Some(a) = why.answer() {
            // Best effort: the answer is short and the socket's buffer
            // empty, so a non-blocking write goes through whole or not.
            let _ = p.stream.write(a.as_bytes());
        }
        self.refused += 1;
        if self.refused <= MAX_REPORTED {
            eprintln!(
                "o2grun: ignored a PMI connection from {}: it {}",
                p.peer,
                why.describe()
            );
            if self.refused == MAX_REPORTED {
                eprintln!("o2grun: further ignored PMI connections are not reported");
            }
        }
    }

    /// Hands a connection whose first line arrived to the server, or
    /// refuses it.
    fn decide(&mut self, p: Pending, line: &[u8], rest: Vec<u8>) {
        let server = self.server;
        let rank = judge(line, server.np(), server.secret()).and_then(|r| {
            if server.claim(r) {
                Ok(r)
            } else {
                Err(Refusal::Taken(r))
            }
        });
        match rank {
            Ok(r) => match p.stream.set_nonblocking(false) {
                Ok(()) => server.serve(r, p.stream, rest),
                Err(e) => {
                    // The rank is claimed and cannot be served: its
                    // client sees the connection close and fails.
                    eprintln!("o2grun: PMI connection of rank {r}: {e}");
                }
            },
            Err(why) => self.refuse(p, why),
        }
    }

    /// Reads what the connections at `ready` sent.
    fn read(&mut self, ready: &[usize]) {
        // From the back, so that removals keep the other indices valid.
        for &i in ready.iter().rev() {
            let Some(p) = self.pending.get_mut(i) else {
                continue;
            };
            match read_first_line(p) {
                Progress::Waiting => {}
                Progress::Line(line, rest) => {
                    if let Some(p) = self.pending.remove(i) {
                        self.decide(p, &line, rest);
                    }
                }
                Progress::Refused(why) => {
                    if let Some(p) = self.pending.remove(i) {
                        self.refuse(p, why);
                    }
                }
            }
        }
    }

    fn expire(&mut self, now: Instant) {
        while self
            .pending
            .front()
            .is_some_and(|p| now >= p.since + INITACK_TIMEOUT)
        {
            if let Some(p) = self.pending.pop_front() {
                self.refuse(p, Refusal::Silent);
            }
        }
    }

    /// Whether a newcomer could be taken now.
    fn can_accept(&self, now: Instant) -> bool {
        self.paused.is_none_or(|t| now >= t)
            && (self.pending.len() < MAX_PENDING
                || self
                    .pending
                    .front()
                    .is_some_and(|p| now >= p.since + EVICT_AGE))
    }

    /// Makes room for a newcomer, pushing out the oldest if it must;
    /// false if none can be taken now.
    fn room(&mut self, now: Instant) -> bool {
        if !self.can_accept(now) {
            return false;
        }
        self.paused = None;
        if self.pending.len() >= MAX_PENDING {
            if let Some(p) = self.pending.pop_front() {
                self.refuse(p, Refusal::Evicted);
            }
        }
        true
    }

    fn accept(&mut self, listener: &TcpListener) {
        loop {
            let now = Instant::now();
            if !self.room(now) {
                return;
            }
            match listener.accept() {
                Ok((stream, peer)) => {
                    if stream.set_nonblocking(true).is_ok() {
                        self.pending.push_back(Pending {
                            stream,
                            peer,
                            since: now,
                            buf: Vec::new(),
                        });
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e)
                    if matches!(
                        Errno::from_raw(e.raw_os_error().unwrap_or(0)),
                        Errno::EMFILE | Errno::ENFILE | Errno::ENOBUFS | Errno::ENOMEM
                    ) =>
                {
                    // Out of descriptors or memory: the oldest waiting
                    // connection goes, and accepting pauses briefly, or
                    // the listener would stay readable and spin.
                    if let Some(p) = self.pending.pop_front() {
                        self.refuse(p, Refusal::Evicted);
                    }
                    self.paused = Some(now + FD_PAUSE);
                    return;
                }
                // The connection died in the backlog, or a signal: next.
                Err(_) => {}
            }
        }
    }

    /// How long poll may sleep: until the oldest connection expires, may
    /// be pushed out, or accepting resumes.
    fn timeout(&self, now: Instant) -> PollTimeout {
        let mut at = self.pending.front().map(|p| p.since + INITACK_TIMEOUT);
        let mut earliest = |t: Instant| at = Some(at.map_or(t, |a| a.min(t)));
        if let Some(t) = self.paused {
            earliest(t);
        } else if self.pending.len() >= MAX_PENDING {
            if let Some(p) = self.pending.front() {
                earliest(p.since + EVICT_AGE);
            }
        }
        match at {
            None => PollTimeout::NONE,
            // Rounded up, so that poll does not return just before.
            Some(t) => {
                PollTimeout::try_from(t.saturating_duration_since(now) + Duration::from_millis(1))
                    .unwrap_or(PollTimeout::MAX)
            }
        }
    }
}

/// Admits the ranks' connections from `listener` until every rank has
/// one; runs on its own thread.
pub(crate) fn run(listener: TcpListener, server: &Arc<Server>) {
    if let Err(e) = listener.set_nonblocking(true) {
        eprintln!("o2grun: PMI listener: {e}");
        return;
    }
    let mut gate = Gate {
        server,
        pending: VecDeque::new(),
        refused: 0,
        paused: None,
    };
    while !server.all_claimed() {
        let now = Instant::now();
        gate.expire(now);
        let listening = gate.can_accept(now);
        let (ready, accept) = {
            let mut fds: Vec<PollFd<'_>> = gate
                .pending
                .iter()
                .map(|p| PollFd::new(p.stream.as_fd(), PollFlags::POLLIN))
                .collect();
            if listening {
                fds.push(PollFd::new(listener.as_fd(), PollFlags::POLLIN));
            }
            match poll(&mut fds, gate.timeout(now)) {
                Ok(_) => {}
                Err(Errno::EINTR) => continue,
                Err(e) => {
                    eprintln!("o2grun: PMI: poll: {e}");
                    return;
                }
            }
            let ready = |fd: &PollFd<'_>| fd.revents().is_some_and(|r| !r.is_empty());
            let accept = listening && fds.last().is_some_and(ready);
            let n = gate.pending.len();
            let waiting: Vec<usize> = (0..n).filter(|&i| ready(&fds[i])).collect();
            (waiting, accept)
        };
        gate.read(&ready);
        if accept {
            gate.accept(&listener);
        }
    }
    // Every rank has its connection: the strangers still waiting, and the
    // listener, go.
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret() -> Secret {
        Secret::parse(&"5a".repeat(16)).expect("valid")
    }

    #[test]
    fn an_initack_with_the_secret_gets_its_rank() {
        let line = format!("cmd=initack pmiid=2 secret={}", "5a".repeat(16));
        assert_eq!(judge(line.as_bytes(), 3, Some(&secret())), Ok(2));
        // Without a secret for the job (a split job not given one),
        // none is asked for.
        assert_eq!(judge(b"cmd=initack pmiid=2", 3, None), Ok(2));
    }

    #[test]
    fn anything_else_is_refused() {
        let s = secret();
        let good = "5a".repeat(16);
        for (line, why) in [
            (b"\xff\xfe\n".to_vec(), Refusal::NotUtf8),
            (b"cmd=abort exitcode=9".to_vec(), Refusal::NotInitack),
            (b"".to_vec(), Refusal::NotInitack),
            (
                format!("cmd=initack pmiid=3 secret={good}").into_bytes(),
                Refusal::NoSuchRank,
            ),
            (
                format!("cmd=initack pmiid=-1 secret={good}").into_bytes(),
                Refusal::NoSuchRank,
            ),
            (
                format!("cmd=initack secret={good}").into_bytes(),
                Refusal::NoSuchRank,
            ),
            (b"cmd=initack pmiid=1".to_vec(), Refusal::WrongSecret),
            (
                b"cmd=initack pmiid=1 secret=".to_vec(),
                Refusal::WrongSecret,
            ),
            (
                format!("cmd=initack pmiid=1 secret={}", "5b".repeat(16)).into_bytes(),
                Refusal::WrongSecret,
            ),
        ] {
            assert_eq!(judge(&line, 3, Some(&s)), Err(why), "{line:?}");
        }
    }

    /// What the gate makes of a connection that sent `bytes`.
    fn first_line_of(bytes: &[u8]) -> Result<(Vec<u8>, Vec<u8>), Refusal> {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let mut client = TcpStream::connect(listener.local_addr().expect("addr")).expect("connect");
        let (stream, peer) = listener.accept().expect("accept");
        client.write_all(bytes).expect("write");
        let mut p = Pending {
            stream,
            peer,
            since: Instant::now(),
            buf: Vec::new(),
        };
        // Blocking: the bytes are read as they come.
        loop {
            match read_first_line(&mut p) {
                Progress::Waiting => {}
                Progress::Line(line, rest) => return Ok((line, rest)),
                Progress::Refused(why) => return Err(why),
            }
        }
    }

    #[test]
    fn an_initack_line_is_read_whatever_follows_and_a_frame_is_refused() {
        let frame = b"    45cmd=fullinit;pmirank=0;threaded=FALSE;";
        assert_eq!(first_line_of(frame), Err(Refusal::Pmi2Frame));
        let hello = [
            &b"cmd=initack pmiid=0 secret=x\ncmd=init pmi_version=2\n"[..],
            &frame[..],
        ]
        .concat();
        let (line, rest) = first_line_of(&hello).expect("a line");
        assert_eq!(line, b"cmd=initack pmiid=0 secret=x");
        // The rest, or its start, stays for the conversation.
        let after = [&b"cmd=init pmi_version=2\n"[..], &frame[..]].concat();
        assert!(after.starts_with(&rest), "{rest:?}");
    }

    #[test]
    fn answers_tell_a_client_why_and_strangers_nothing() {
        assert_eq!(
            Refusal::Taken(0).answer().as_deref(),
            Some("cmd=initack rc=-1 msg=rank_0_already_connected\n")
        );
        assert!(Refusal::WrongSecret.answer().is_some());
        assert_eq!(Refusal::NotInitack.answer(), None);
        assert_eq!(Refusal::Pmi2Frame.answer(), None);
        assert_eq!(Refusal::Silent.answer(), None);
    }
}
