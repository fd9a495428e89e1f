//! A rank's PMI-2 conversation: one frame each way (`wire2.rs`), as
//! hydra and Slurm's `pmi2` plugin answer MPICH's client.
//!
//! Served: `fullinit` (its `pmirank`, if sent, must be the connection's
//! rank), `job-getid` (the key-value space's name), `kvs-put`,
//! `kvs-fence` (a real barrier: it answers once every rank has fenced or
//! entered a PMI-1 barrier), `kvs-get` (`found=TRUE` with the value, or
//! `found=FALSE`), `info-getjobattr` (`PMI_process_mapping` for a job on
//! one o2grun, `universeSize`), `info-getnodeattr` (nothing is found),
//! `finalize` and `abort` (its `exitcode` and `msg`, or `message` as
//! newer MPICH writes it). A `thrid`, which a threaded client uses to
//! match answers, is echoed. Anything else is answered `rc=-1`. A frame
//! that is malformed or longer than [`MAX_FRAME`], or a `fullinit` for
//! another rank, breaks the protocol.

use std::io::{BufRead, Write};

use crate::pmi_server::{Server, Stop};
use crate::wire2::{read_frame, Command, FrameError, MAX_FRAME};

/// Sends `c`.
fn send(out: &mut impl Write, c: &Command) -> Result<(), Stop> {
    // Only a value can be long or odd, and they are bounded by MAX_FRAME.
    let bytes = c
        .encode()
        .map_err(|e| Stop::Broken(format!("cannot be answered: {e}")))?;
    out.write_all(&bytes)?;
    Ok(())
}

/// Answers `rank`'s frames from `input` on `out`.
pub(crate) fn converse(
    server: &Server,
    rank: u32,
    input: &mut impl BufRead,
    out: &mut impl Write,
) -> Result<Stop, Stop> {
    loop {
        let req = match read_frame(input, MAX_FRAME) {
            Ok(Some(c)) => c,
            Ok(None) | Err(FrameError::Truncated) => return Ok(Stop::Closed(None)),
            Err(FrameError::Io(e)) => return Ok(Stop::Closed(Some(e))),
            Err(e) => return Err(Stop::Broken(format!("sent {e}"))),
        };
        let answer = |name: &str| {
            let c = Command::new(name);
            match req.get("thrid") {
                Some(t) => c.with("thrid", t),
                None => c,
            }
        };
        if !server.serves(2) {
            let why = format!("this job serves {}", server.served());
            let reply = answer(&format!("{}-response", req.cmd()))
                .with("rc", -1)
                .with("errmsg", &why);
            send(out, &reply)?;
            return Err(Stop::Broken(format!("spoke PMI-2, but {why}")));
        }
        let reply = match req.cmd() {
            "fullinit" => {
                if let Some(r) = req.get("pmirank").filter(|r| r.parse::<u32>() != Ok(rank)) {
                    return Err(Stop::Broken(format!(
                        "sent fullinit for pmirank {r:?} on rank {rank}'s connection"
                    )));
                }
                answer("fullinit-response")
                    .with("rc", 0)
                    .with("pmi-version", 2)
                    .with("pmi-subversion", 0)
                    .with("rank", rank)
                    .with("size", server.np())
                    .with("appnum", 0)
                    .with("debugged", "FALSE")
                    .with("pmiverbose", "FALSE")
            }
            "job-getid" => answer("job-getid-response")
                .with("rc", 0)
                .with("jobid", server.kvsname()),
            "kvs-put" => {
                let (Some(k), Some(v)) = (req.get("key"), req.get("value")) else {
                    return Err(Stop::Broken("sent a kvs-put without key or value".into()));
                };
                server.put(k, v)?;
                answer("kvs-put-response").with("rc", 0)
            }
            "kvs-fence" => {
                server.barrier(rank)?;
                answer("kvs-fence-response").with("rc", 0)
            }
            "kvs-get" => {
                let Some(k) = req.get("key") else {
                    return Err(Stop::Broken("sent a kvs-get without key".into()));
                };
                found(answer("kvs-get-response"), server.get(k))
            }
            "info-getjobattr" => {
                let value = match req.get("key") {
                    Some("PMI_process_mapping") => server.process_mapping(),
                    Some("universeSize") => Some(server.np().to_string()),
                    _ => None,
                };
                found(answer("info-getjobattr-response"), value)
            }
            "info-getnodeattr" => found(answer("info-getnodeattr-response"), None),
            "finalize" => {
                server.finalized(rank);
                send(out, &answer("finalize-response").with("rc", 0))?;
                return Ok(Stop::Finalized);
            }
            "abort" => {
                return Ok(Stop::Aborted {
                    code: req
                        .get("exitcode")
                        .and_then(|c| c.parse().ok())
                        .unwrap_or(1),
                    msg: req
                        .get("msg")
                        .or_else(|| req.get("message"))
                        .unwrap_or("")
                        .to_owned(),
                })
            }
            other => answer(&format!("{other}-response"))
                .with("rc", -1)
                .with("errmsg", "unknown command"),
        };
        send(out, &reply)?;
    }
}

/// `reply` with `rc=0` and `found=TRUE` and the value, or `found=FALSE`.
fn found(reply: Command, value: Option<String>) -> Command {
    let reply = reply.with("rc", 0);
    match value {
        Some(v) => reply.with("found", "TRUE").with("value", v),
        None => reply.with("found", "FALSE"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pmi_server::tests::server;
    use crate::wire2::{parse_len, LEN_FIELD};

    /// Runs a one-rank conversation on `frames` (bodies); returns the
    /// answers' bodies and how it ended.
    fn talk(version: Option<u8>, frames: &[&str]) -> (Vec<String>, Result<String, String>) {
        let server = server(1, version);
        let mut input = Vec::new();
        for body in frames {
            input.extend(format!("{:<6}{body}", body.len()).into_bytes());
        }
        let mut out = Vec::new();
        let end = converse(&server, 0, &mut input.as_slice(), &mut out);
        // The answers as they went on the wire.
        let mut answers = Vec::new();
        let mut rest = out.as_slice();
        while rest.len() >= LEN_FIELD {
            let len = parse_len(&rest[..LEN_FIELD]).expect("a length field");
            let body = &rest[LEN_FIELD..LEN_FIELD + len];
            answers.push(String::from_utf8(body.to_vec()).expect("utf-8"));
            rest = &rest[LEN_FIELD + len..];
        }
        let end = match end {
            Ok(s) | Err(s) => s,
        };
        let end = match end {
            Stop::Finalized => Ok("finalized".to_owned()),
            Stop::Closed(_) => Ok("closed".to_owned()),
            Stop::Aborted { code, msg } => Ok(format!("aborted {code}: {msg}")),
            Stop::Broken(why) => Err(why),
        };
        (answers, end)
    }

    #[test]
    fn a_session_is_answered_as_hydra_and_slurm_answer() {
        let (answers, end) = talk(
            None,
            &[
                "cmd=fullinit;pmijobid=1;pmirank=0;threaded=FALSE;",
                "cmd=job-getid;thrid=0x1;",
                "cmd=kvs-put;key=k;value=a;;b;",
                "cmd=kvs-fence;",
                "cmd=kvs-get;jobid=j;srcid=-1;key=k;",
                "cmd=kvs-get;key=none;",
                "cmd=info-getjobattr;key=PMI_process_mapping;",
                "cmd=info-getjobattr;key=universeSize;",
                "cmd=info-getjobattr;key=other;",
                "cmd=name-publish;name=x;port=y;",
                "cmd=finalize;",
            ],
        );
        assert_eq!(end, Ok("finalized".into()));
        let jobid = format!("o2grun_{}", std::process::id());
        assert_eq!(
            answers,
            [
                "cmd=fullinit-response;rc=0;pmi-version=2;pmi-subversion=0;rank=0;size=1;\
                 appnum=0;debugged=FALSE;pmiverbose=FALSE;"
                    .to_owned(),
                format!("cmd=job-getid-response;thrid=0x1;rc=0;jobid={jobid};"),
                "cmd=kvs-put-response;rc=0;".into(),
                "cmd=kvs-fence-response;rc=0;".into(),
                "cmd=kvs-get-response;rc=0;found=TRUE;value=a;;b;".into(),
                "cmd=kvs-get-response;rc=0;found=FALSE;".into(),
                "cmd=info-getjobattr-response;rc=0;found=TRUE;value=(vector,(0,1,1));".into(),
                "cmd=info-getjobattr-response;rc=0;found=TRUE;value=1;".into(),
                "cmd=info-getjobattr-response;rc=0;found=FALSE;".into(),
                "cmd=name-publish-response;rc=-1;errmsg=unknown command;".into(),
                "cmd=finalize-response;rc=0;".into(),
            ]
        );
    }

    #[test]
    fn abort_brings_its_code_and_message() {
        let (_, end) = talk(None, &["cmd=abort;isworld=TRUE;exitcode=7;msg=a;; b;"]);
        assert_eq!(end, Ok("aborted 7: a; b".into()));
        let (_, end) = talk(None, &["cmd=abort;exitcode=x;message=newer;"]);
        assert_eq!(end, Ok("aborted 1: newer".into()));
    }

    #[test]
    fn broken_frames_and_wrong_ranks_break_the_protocol() {
        for (frames, want) in [
            (
                &["cmd=fullinit;pmirank=1;threaded=FALSE;"][..],
                "pmirank \"1\"",
            ),
            (&["cmd=kvs-put;key=k;"], "kvs-put without key or value"),
            (&["cmd=kvs-get;"], "kvs-get without key"),
            (&["key=v;"], "does not begin with cmd="),
            (&["cmd=x;junk"], "malformed pair"),
        ] {
            let (_, end) = talk(None, frames);
            assert!(
                end.as_ref().is_err_and(|e| e.contains(want)),
                "{frames:?}: {end:?}"
            );
        }
        let server = server(1, None);
        for (input, want) in [
            (&b"abcdefcmd=x;"[..], "length field \"abcdef\""),
            (b"70000 ", "more than 65536"),
        ] {
            let end = converse(&server, 0, &mut &input[..], &mut Vec::new());
            assert!(
                matches!(&end, Err(Stop::Broken(e)) if e.contains(want)),
                "{input:?}"
            );
        }
        // A frame cut short is a rank gone, not a broken one.
        let end = converse(&server, 0, &mut &b"20    cmd=fin"[..], &mut Vec::new());
        assert!(matches!(end, Ok(Stop::Closed(_))));
    }

    #[test]
    fn a_job_that_serves_pmi_1_only_refuses_frames() {
        let (answers, end) = talk(Some(1), &["cmd=fullinit;pmirank=0;"]);
        assert_eq!(
            answers,
            ["cmd=fullinit-response;rc=-1;errmsg=this job serves PMI-1 only (o2grun --pmi 1);"]
        );
        assert!(end.is_err_and(|e| e.contains("spoke PMI-2")));
    }
}
