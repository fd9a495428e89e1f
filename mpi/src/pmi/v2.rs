//! The PMI-2 conversation, as MPICH's client holds it with hydra, Slurm's
//! `pmi2` plugin and o2grun.
//!
//! It opens with a PMI-1 line, `cmd=init pmi_version=2 pmi_subversion=0`,
//! answered by `cmd=response_to_init pmi_version=2 ... rc=0`: that is how
//! the server learns which protocol follows (Slurm reads it in one 64-byte
//! read, so nothing may follow it before the answer). Then come frames
//! (`frame.rs`): `fullinit` (our `pmirank`, `PMI_JOBID` as `pmijobid`
//! where the launcher set it, as Slurm requires; the answer has rank and
//! size), `job-getid` (the job's key-value space), `kvs-put`,
//! `kvs-fence`, `kvs-get`, `finalize` and `abort`.
//!
//! A fence is not a barrier everywhere: hydra answers `kvs-fence` at once
//! and only holds back a `kvs-get` of a key that is not there until every
//! process has fenced as often. Callers of [`Client::barrier`] rely on a
//! barrier (`hyphenlink` unlinks its region past one), so it follows the
//! fence with a `kvs-get` of a key nobody puts: under hydra that waits for
//! the slowest process; where the fence waited (Slurm, o2grun) it is one
//! more round trip.

use super::frame::Command;
use super::link::Link;
use crate::error::{Error, Result};

/// A key no process puts: getting it after a fence waits for everyone.
const NOBODYS_KEY: &str = "o2g-pmi2-barrier";

/// A PMI-2 session.
pub(super) struct Client {
    link: Link,
    jobid: String,
}

/// What `fullinit` told us.
pub(super) struct Start {
    pub(super) client: Client,
    pub(super) rank: u32,
    pub(super) size: u32,
}

/// A number the server must have sent.
fn number(c: &Command, key: &str) -> Result<u32> {
    let v = c
        .get(key)
        .ok_or_else(|| Error::Pmi(format!("{} without {key}", c.cmd())))?;
    v.parse()
        .map_err(|_| Error::Pmi(format!("{} with {key}={v:?}, not a number", c.cmd())))
}

impl Client {
    /// Asks for PMI-2 and introduces this process as `pmirank` (with
    /// `jobid`, `PMI_JOBID`, where the launcher set one).
    pub(super) fn start(mut link: Link, pmirank: &str, jobid: Option<&str>) -> Result<Start> {
        let r = link.call_line(
            "cmd=init pmi_version=2 pmi_subversion=0",
            "response_to_init",
        )?;
        if r.get("pmi_version").map(String::as_str) != Some("2") {
            return Err(Error::Pmi(format!(
                "asked for PMI-2, the process manager answered with PMI version {:?} \
                 (O2G_PMI_VERSION=1 speaks PMI-1)",
                r.get("pmi_version")
            )));
        }
        let mut hello = Command::new("fullinit");
        if let Some(j) = jobid {
            hello = hello.with("pmijobid", j);
        }
        let hello = hello.with("pmirank", pmirank).with("threaded", "FALSE");
        let r = link.call(&hello, "fullinit-response")?;
        if let Some(v) = r.get("pmi-version").filter(|v| *v != "2") {
            return Err(Error::Pmi(format!(
                "fullinit-response with pmi-version={v:?}, not 2"
            )));
        }
        let (rank, size) = (number(&r, "rank")?, number(&r, "size")?);
        let r = link.call(&Command::new("job-getid"), "job-getid-response")?;
        let jobid = r
            .get("jobid")
            .ok_or_else(|| Error::Pmi("job-getid-response without jobid".into()))?
            .to_owned();
        Ok(Start {
            client: Self { link, jobid },
            rank,
            size,
        })
    }

    pub(super) fn put(&mut self, key: &str, value: &str) -> Result<()> {
        let c = Command::new("kvs-put")
            .with("key", key)
            .with("value", value);
        self.link.call(&c, "kvs-put-response").map(drop)
    }

    /// `None` if the key is not there.
    fn lookup(&mut self, key: &str) -> Result<Option<String>> {
        let c = Command::new("kvs-get")
            .with("jobid", &self.jobid)
            .with("srcid", -1)
            .with("key", key);
        let r = self.link.call(&c, "kvs-get-response")?;
        match r.get("found") {
            Some("TRUE") => r
                .get("value")
                .map(|v| Some(v.to_owned()))
                .ok_or_else(|| Error::Pmi(format!("kvs-get {key}: found, but without a value"))),
            Some("FALSE") => Ok(None),
            other => Err(Error::Pmi(format!(
                "kvs-get-response with found={other:?}, not TRUE or FALSE"
            ))),
        }
    }

    pub(super) fn get(&mut self, key: &str) -> Result<String> {
        self.lookup(key)?
            .ok_or_else(|| Error::Pmi(format!("no key {key}")))
    }

    /// The fence, made a barrier (see the module's docs).
    pub(super) fn barrier(&mut self) -> Result<()> {
        self.link
            .call(&Command::new("kvs-fence"), "kvs-fence-response")?;
        self.lookup(NOBODYS_KEY).map(drop)
    }

    pub(super) fn finalize(&mut self) -> Result<()> {
        self.link
            .call(&Command::new("finalize"), "finalize-response")
            .map(drop)
    }

    /// Best effort; no answer comes. `isworld` is what Slurm reads, the
    /// code and message what o2grun reads (hydra 4.0 knows no PMI-2
    /// `abort`, and ends the job on the unknown command).
    pub(super) fn abort(&mut self, code: i32, msg: &str) {
        let c = Command::new("abort")
            .with("isworld", "TRUE")
            .with("exitcode", code)
            .with("msg", msg);
        let _ = self.link.send_frame(&c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Read, Write};
    use std::os::unix::net::UnixStream;
    use std::thread;

    /// A scripted process manager: answers each request in turn with the
    /// next of `answers` (raw bytes), after checking it starts with the
    /// expected text; returns the requests it saw.
    fn manager(answers: Vec<(&'static str, Vec<u8>)>) -> (Link, thread::JoinHandle<Vec<String>>) {
        let (ours, theirs) = UnixStream::pair().expect("socketpair");
        let reader = Box::new(ours.try_clone().expect("clone"));
        let h = thread::spawn(move || {
            let mut input = BufReader::new(theirs.try_clone().expect("clone"));
            let mut out = theirs;
            let mut seen = Vec::new();
            for (i, (want, answer)) in answers.into_iter().enumerate() {
                let got = if i == 0 {
                    let mut line = String::new();
                    let _ = input.read_line(&mut line);
                    line
                } else {
                    let mut field = [0u8; 6];
                    if input.read_exact(&mut field).is_err() {
                        break;
                    }
                    let len: usize = String::from_utf8_lossy(&field).trim().parse().expect("len");
                    let mut body = vec![0; len];
                    input.read_exact(&mut body).expect("body");
                    String::from_utf8(body).expect("utf-8")
                };
                assert!(got.starts_with(want), "expected {want:?}, got {got:?}");
                seen.push(got);
                if out.write_all(&answer).is_err() {
                    break;
                }
            }
            seen
        });
        (Link::new(reader, Box::new(ours)), h)
    }

    fn frame(body: &str) -> Vec<u8> {
        format!("{:>6}{body}", body.len()).into_bytes()
    }

    fn welcome() -> Vec<(&'static str, Vec<u8>)> {
        vec![
            (
                "cmd=init pmi_version=2 pmi_subversion=0\n",
                b"cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=0\n".to_vec(),
            ),
            (
                "cmd=fullinit;pmijobid=7.0;pmirank=1;threaded=FALSE;",
                frame(
                    "cmd=fullinit-response;pmi-version=2;pmi-subversion=0;rank=1;size=3;\
                     appnum=0;debugged=FALSE;pmiverbose=FALSE;rc=0;",
                ),
            ),
            (
                "cmd=job-getid;",
                frame("cmd=job-getid-response;jobid=kvs_1;rc=0;"),
            ),
        ]
    }

    #[test]
    fn a_session_from_init_to_finalize() {
        let mut script = welcome();
        script.extend([
            (
                "cmd=kvs-put;key=k;value=a;;b;",
                frame("cmd=kvs-put-response;rc=0;"),
            ),
            ("cmd=kvs-fence;", frame("cmd=kvs-fence-response;rc=0;")),
            (
                "cmd=kvs-get;jobid=kvs_1;srcid=-1;key=o2g-pmi2-barrier;",
                frame("cmd=kvs-get-response;found=FALSE;rc=0;"),
            ),
            (
                "cmd=kvs-get;jobid=kvs_1;srcid=-1;key=k;",
                frame("cmd=kvs-get-response;found=TRUE;value=a;;b;rc=0;"),
            ),
            (
                "cmd=kvs-get;jobid=kvs_1;srcid=-1;key=gone;",
                frame("cmd=kvs-get-response;found=FALSE;rc=0;"),
            ),
            ("cmd=finalize;", frame("cmd=finalize-response;rc=0;")),
        ]);
        let (link, server) = manager(script);
        let s = Client::start(link, "1", Some("7.0")).expect("start");
        assert_eq!((s.rank, s.size), (1, 3));
        let mut c = s.client;
        c.put("k", "a;b").expect("put");
        c.barrier().expect("barrier");
        assert_eq!(c.get("k").expect("get"), "a;b");
        let e = c.get("gone").expect_err("not there");
        assert!(e.to_string().contains("no key gone"), "{e}");
        c.finalize().expect("finalize");
        assert_eq!(server.join().expect("server").len(), 9);
    }

    #[test]
    fn an_abort_says_isworld_code_and_message() {
        let mut script = welcome();
        script.push((
            "cmd=abort;isworld=TRUE;exitcode=7;msg=bad;; very;",
            Vec::new(),
        ));
        let (link, server) = manager(script);
        let mut c = Client::start(link, "1", Some("7.0")).expect("start").client;
        c.abort(7, "bad; very");
        assert_eq!(server.join().expect("server").len(), 4);
    }

    /// Starts a client against `answer` as the fullinit response.
    fn start_with(answer: Vec<u8>) -> String {
        let mut script = welcome();
        script.truncate(1);
        script.push(("cmd=fullinit;", answer));
        let (link, server) = manager(script);
        let e = Client::start(link, "1", Some("7.0"))
            .err()
            .expect("refused")
            .to_string();
        let _ = server.join();
        e
    }

    #[test]
    fn broken_answers_are_clear_errors() {
        for (answer, want) in [
            (
                b"cmd=init".to_vec(),
                "the process manager sent a PMI-2 length field \"cmd=in\"",
            ),
            (
                b"  ab".to_vec(),
                "connection closed while waiting for fullinit-response",
            ),
            // A length far past what follows: read until the end, no panic.
            (b"999999".to_vec(), "connection closed while waiting"),
            (
                frame("cmd=fullinit-response;rc=0;size=3;"),
                "fullinit-response without rank",
            ),
            (
                frame("cmd=fullinit-response;rc=0;rank=x;size=3;"),
                "rank=\"x\", not a number",
            ),
            (
                frame("cmd=fullinit-response;rank=1;size=3;"),
                "fullinit-response without rc",
            ),
            (
                frame("cmd=fullinit-response;rc=-1;errmsg=nope;"),
                "fullinit-response failed: rc=-1 nope",
            ),
            (
                frame("cmd=kvs-fence-response;rc=0;"),
                "expected cmd=fullinit-response",
            ),
            (frame("value=1;"), "does not begin with cmd="),
            (
                Vec::new(),
                "connection closed while waiting for fullinit-response",
            ),
        ] {
            let e = start_with(answer);
            assert!(e.contains(want), "wanted {want:?}: {e}");
        }
    }

    #[test]
    fn a_server_that_answers_pmi_1_is_told_apart() {
        let (link, server) = manager(vec![(
            "cmd=init pmi_version=2",
            b"cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n".to_vec(),
        )]);
        let e = Client::start(link, "0", None).err().expect("refused");
        assert!(e.to_string().contains("O2G_PMI_VERSION=1"), "{e}");
        let _ = server.join();
    }
}
