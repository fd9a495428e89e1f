//! A rank's PMI-1 conversation: one line each way (`wire.rs`), until the
//! rank finalizes, aborts, breaks the protocol, goes away, or asks for
//! PMI-2 in its `init` (as MPICH's PMI-2 client opens), which hands the
//! connection to `pmi2.rs`.

use std::io::{BufRead, Write};

use crate::pmi_server::{shorten, Server, Stop};
use crate::wire::{self, LineError, MAX_LINE};

/// Where the conversation goes from here.
pub(crate) enum Next {
    Stop(Stop),
    /// The rank asked for PMI-2 and was answered: frames follow.
    Pmi2,
}

/// Answers `rank`'s lines from `input` on `out`.
pub(crate) fn converse(
    server: &Server,
    rank: u32,
    input: &mut impl BufRead,
    out: &mut impl Write,
) -> Result<Next, Stop> {
    let mut send = |line: &str| out.write_all(format!("{line}\n").as_bytes());
    loop {
        let line = match wire::read_line(input, MAX_LINE) {
            Ok(Some(line)) => line,
            Ok(None) => return Ok(Next::Stop(Stop::Closed(None))),
            Err(LineError::Io(e)) => return Ok(Next::Stop(Stop::Closed(Some(e)))),
            Err(e) => return Err(Stop::Broken(format!("sent {e}"))),
        };
        let kv = wire::parse(&line);
        let get = |k: &str| kv.get(k).map(String::as_str);
        match get("cmd").unwrap_or("") {
            "initack" => return Err(Stop::Broken("sent initack twice".into())),
            "init" => {
                let two = get("pmi_version") == Some("2");
                if two && server.serves(2) {
                    send("cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=0")?;
                    return Ok(Next::Pmi2);
                }
                if !two && server.serves(1) {
                    send("cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0")?;
                    continue;
                }
                let (v, sub) = if server.serves(1) { (1, 1) } else { (2, 0) };
                let why = format!("this job serves {}", server.served());
                send(&format!(
                    "cmd=response_to_init pmi_version={v} pmi_subversion={sub} rc=-1 msg={}",
                    wire::escape(&why)
                ))?;
                return Err(Stop::Broken(format!(
                    "asked for PMI version {}, but {why}",
                    get("pmi_version").unwrap_or("1")
                )));
            }
            "get_maxes" => send("cmd=maxes kvsname_max=256 keylen_max=256 vallen_max=1024 rc=0")?,
            "get_my_kvsname" => send(&format!("cmd=my_kvsname kvsname={} rc=0", server.kvsname()))?,
            "get_universe_size" => send(&format!("cmd=universe_size size={} rc=0", server.np()))?,
            "get_appnum" => send("cmd=appnum appnum=0 rc=0")?,
            "put" => {
                let (Some(k), Some(v)) = (get("key"), get("value")) else {
                    return Err(Stop::Broken(format!(
                        "sent a put without key or value: {}",
                        shorten(&line)
                    )));
                };
                server.put(k, v)?;
                send("cmd=put_result rc=0 msg=success")?;
            }
            "get" => {
                let v = server.get(get("key").unwrap_or(""));
                send(&match v {
                    Some(v) => {
                        format!("cmd=get_result rc=0 msg=success value={}", wire::escape(&v))
                    }
                    None => "cmd=get_result rc=-1 msg=key_not_found".into(),
                })?;
            }
            "barrier_in" => {
                server.barrier(rank)?;
                send("cmd=barrier_out")?;
            }
            "finalize" => {
                server.finalized(rank);
                send("cmd=finalize_ack rc=0")?;
                return Ok(Next::Stop(Stop::Finalized));
            }
            "abort" => {
                return Ok(Next::Stop(Stop::Aborted {
                    code: get("exitcode").and_then(|c| c.parse().ok()).unwrap_or(1),
                    msg: get("error_msg").unwrap_or("").to_owned(),
                }))
            }
            other => send(&format!(
                "cmd={}_result rc=-1 msg=unknown_command",
                wire::escape(other)
            ))?,
        }
    }
}
