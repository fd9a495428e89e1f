//! The PMI-1 conversation: `init`, the key-value space (`put`, `get`),
//! `barrier_in`/`barrier_out`, `finalize` and `abort`, one line each way;
//! and the `initack` handshake of a `PMI_PORT` connection, which opens a
//! PMI-2 conversation too.

use super::escape::escape;
use super::link::Link;
use crate::error::{Error, Result};

/// A PMI-1 session.
pub(super) struct Client {
    link: Link,
    kvsname: String,
}

/// A `PMI_PORT` connection's handshake (hydra's, which o2grun serves):
/// says which process this is, with the job's `secret` for o2grun (which
/// its ranks find in `O2G_JOB_SECRET`; without one the line is hydra's),
/// and returns the size and rank the server answers with, where it does.
pub(super) fn initack(
    link: &mut Link,
    id: &str,
    secret: Option<&str>,
) -> Result<(Option<u32>, Option<u32>)> {
    let proof = secret.map_or(String::new(), |s| format!(" secret={}", escape(s)));
    link.send_line(&format!("cmd=initack pmiid={id}{proof}"))?;
    link.expect_line("initack")?;
    let (mut size, mut rank) = (None, None);
    for _ in 0..3 {
        let r = link.expect_line("set")?;
        let num = |k: &str| r.get(k).and_then(|v| v.parse().ok());
        size = num("size").or(size);
        rank = num("rank").or(rank);
    }
    Ok((size, rank))
}

impl Client {
    /// `init` for PMI 1.1, then the server's limits and our key-value
    /// space's name.
    pub(super) fn start(mut link: Link) -> Result<Self> {
        let r = link.call_line(
            "cmd=init pmi_version=1 pmi_subversion=1",
            "response_to_init",
        )?;
        if r.get("pmi_version").map(String::as_str) != Some("1") {
            return Err(Error::Pmi(format!(
                "server speaks PMI {:?}, not 1",
                r.get("pmi_version")
            )));
        }
        link.call_line("cmd=get_maxes", "maxes")?;
        let r = link.call_line("cmd=get_my_kvsname", "my_kvsname")?;
        let kvsname = r
            .get("kvsname")
            .cloned()
            .ok_or_else(|| Error::Pmi("my_kvsname without kvsname".into()))?;
        Ok(Self { link, kvsname })
    }

    pub(super) fn put(&mut self, key: &str, value: &str) -> Result<()> {
        let line = format!("cmd=put kvsname={} key={key} value={value}", self.kvsname);
        self.link.call_line(&line, "put_result").map(drop)
    }

    pub(super) fn get(&mut self, key: &str) -> Result<String> {
        let line = format!("cmd=get kvsname={} key={key}", self.kvsname);
        let r = self.link.call_line(&line, "get_result")?;
        r.get("value")
            .cloned()
            .ok_or_else(|| Error::Pmi(format!("get {key}: no value")))
    }

    pub(super) fn barrier(&mut self) -> Result<()> {
        self.link
            .call_line("cmd=barrier_in", "barrier_out")
            .map(drop)
    }

    pub(super) fn finalize(&mut self) -> Result<()> {
        self.link
            .call_line("cmd=finalize", "finalize_ack")
            .map(drop)
    }

    /// Best effort: the message arrives as written (line breaks become
    /// spaces).
    pub(super) fn abort(&mut self, code: i32, msg: &str) {
        let _ = self.link.send_line(&format!(
            "cmd=abort exitcode={code} error_msg={}",
            escape(msg)
        ));
    }
}
