//! The PMI-1 server side, one thread per rank connection.
//!
//! Speaks the `PMI_PORT` dialect of hydra: the client opens with
//! `cmd=initack pmiid=<rank>`, is told its size and rank, then sends the
//! usual PMI-1 commands. Barriers and the key-value space are shared
//! under one mutex; `abort` and protocol errors are reported to the
//! supervisor through a channel.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::ops::Range;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Condvar, Mutex};
use std::thread;

/// What a rank told the server that the supervisor must act on.
#[derive(Debug)]
pub(crate) enum Event {
    /// `cmd=abort` from a rank.
    Abort { rank: u32, code: i32, msg: String },
    /// A rank broke the protocol.
    Protocol { rank: Option<u32>, msg: String },
    /// A rank on another machine finalized: the server may go away once
    /// every remote rank has.
    RemoteFinalized,
}

#[derive(Default)]
struct State {
    kvs: HashMap<String, String>,
    barrier_count: u32,
    barrier_gen: u64,
}

struct Shared {
    np: u32,
    /// Ranks the serving o2grun supervises; the others run elsewhere.
    local: Range<u32>,
    kvsname: String,
    state: Mutex<State>,
    cond: Condvar,
}

/// Accepts `np` connections on `listener` and serves each on a thread.
/// Ranks outside `local` run on other machines.
pub(crate) fn serve(listener: TcpListener, np: u32, local: Range<u32>, events: Sender<Event>) {
    let shared = Arc::new(Shared {
        np,
        local,
        kvsname: format!("o2grun_{}", std::process::id()),
        state: Mutex::new(State::default()),
        cond: Condvar::new(),
    });
    thread::spawn(move || {
        for stream in listener.incoming().take(np as usize) {
            let (shared, events) = (shared.clone(), events.clone());
            match stream {
                Ok(s) => {
                    thread::spawn(move || {
                        let result = client(s, &shared);
                        if let Ok(Some(r)) = result {
                            if !shared.local.contains(&r) {
                                let _ = events.send(Event::RemoteFinalized);
                            }
                        }
                        if let Err((rank, msg)) = result {
                            let _ = events.send(match msg.strip_prefix("abort:") {
                                Some(rest) => {
                                    let (code, msg) = rest.split_once(':').unwrap_or((rest, ""));
                                    Event::Abort {
                                        rank: rank.unwrap_or(u32::MAX),
                                        code: code.parse().unwrap_or(1),
                                        msg: msg.to_owned(),
                                    }
                                }
                                None => Event::Protocol { rank, msg },
                            });
                        }
                    });
                }
                Err(e) => {
                    let _ = events.send(Event::Protocol {
                        rank: None,
                        msg: format!("accept: {e}"),
                    });
                }
            }
        }
    });
}

fn parse(line: &str) -> HashMap<&str, &str> {
    line.split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .collect()
}

/// Serves one rank until it finalizes or disconnects.
/// Serves one rank's connection; the rank, once it finalized.
fn client(s: TcpStream, sh: &Shared) -> Result<Option<u32>, (Option<u32>, String)> {
    let mut rank = None;
    let err = |rank: Option<u32>, m: String| (rank, m);
    let mut out = s.try_clone().map_err(|e| err(None, e.to_string()))?;
    let mut send = |line: String| -> Result<(), (Option<u32>, String)> {
        out.write_all(format!("{line}\n").as_bytes())
            .map_err(|e| (None, format!("write: {e}")))
    };
    for line in BufReader::new(s).lines() {
        let line = line.map_err(|e| err(rank, format!("read: {e}")))?;
        let kv = parse(&line);
        let cmd = kv.get("cmd").copied().unwrap_or("");
        match cmd {
            "initack" => {
                let id: u32 = kv
                    .get("pmiid")
                    .and_then(|v| v.parse().ok())
                    .filter(|&r| r < sh.np)
                    .ok_or_else(|| err(None, format!("bad initack: {line}")))?;
                rank = Some(id);
                send("cmd=initack rc=0".into())?;
                send(format!("cmd=set size={}", sh.np))?;
                send(format!("cmd=set rank={id}"))?;
                send("cmd=set debug=0".into())?;
            }
            "init" => send("cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0".into())?,
            "get_maxes" => {
                send("cmd=maxes kvsname_max=256 keylen_max=256 vallen_max=1024 rc=0".into())?
            }
            "get_my_kvsname" => send(format!("cmd=my_kvsname kvsname={} rc=0", sh.kvsname))?,
            "get_universe_size" => send(format!("cmd=universe_size size={} rc=0", sh.np))?,
            "get_appnum" => send("cmd=appnum appnum=0 rc=0".into())?,
            "put" => {
                let (Some(k), Some(v)) = (kv.get("key"), kv.get("value")) else {
                    return Err(err(rank, format!("bad put: {line}")));
                };
                lock(sh).kvs.insert((*k).to_owned(), (*v).to_owned());
                send("cmd=put_result rc=0 msg=success".into())?;
            }
            "get" => {
                let k = kv.get("key").copied().unwrap_or("");
                let v = lock(sh).kvs.get(k).cloned();
                send(match v {
                    Some(v) => format!("cmd=get_result rc=0 msg=success value={v}"),
                    None => "cmd=get_result rc=-1 msg=key_not_found".into(),
                })?;
            }
            "barrier_in" => {
                let mut st = lock(sh);
                let gen = st.barrier_gen;
                st.barrier_count += 1;
                if st.barrier_count == sh.np {
                    st.barrier_count = 0;
                    st.barrier_gen += 1;
                    sh.cond.notify_all();
                } else {
                    // The supervisor ends the whole process if a rank dies,
                    // so this wait cannot outlive the job.
                    while st.barrier_gen == gen {
                        st = sh.cond.wait(st).unwrap_or_else(|p| p.into_inner());
                    }
                }
                drop(st);
                send("cmd=barrier_out".into())?;
            }
            "finalize" => {
                send("cmd=finalize_ack rc=0".into())?;
                return Ok(rank);
            }
            "abort" => {
                let code = kv.get("exitcode").copied().unwrap_or("1");
                let msg = kv.get("error_msg").copied().unwrap_or("").replace('_', " ");
                return Err(err(rank, format!("abort:{code}:{msg}")));
            }
            other => send(format!("cmd={other}_result rc=-1 msg=unknown_command"))?,
        }
    }
    // A local rank that leaves without finalizing is its supervisor's
    // business (its exit status decides); a remote one is only seen here.
    match rank {
        Some(r) if !sh.local.contains(&r) => Err(err(
            rank,
            format!("remote rank {r} closed its PMI connection without finalizing"),
        )),
        _ => Ok(None),
    }
}

fn lock(sh: &Shared) -> std::sync::MutexGuard<'_, State> {
    sh.state.lock().unwrap_or_else(|p| p.into_inner())
}
