//! Starting the ranks and supervising them until the job ends.
//!
//! The only `unsafe` of the launcher is here: the `pre_exec` hook that
//! asks the kernel to kill a rank when o2grun dies.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::ops::Range;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::pmi_server::{Event, Server};
use crate::secret::{self, Secret};

/// Where the ranks find the PMI server.
pub(crate) enum Pmi {
    /// This o2grun serves PMI on the address (port 0: any free port).
    Serve(SocketAddr),
    /// Another o2grun serves PMI at this `host:port`.
    Remote(String),
}

/// What to run.
pub(crate) struct JobConfig {
    /// Ranks in the whole job.
    pub(crate) np: u32,
    /// The ranks this o2grun starts.
    pub(crate) local: Range<u32>,
    pub(crate) pmi: Pmi,
    /// The PMI version the ranks must speak (`--pmi`); `None`: either.
    pub(crate) pmi_version: Option<u8>,
    pub(crate) program: PathBuf,
    pub(crate) args: Vec<String>,
    pub(crate) tag_output: bool,
    pub(crate) timeout: Option<Duration>,
    pub(crate) grace: Duration,
    /// The job's secret, for the ranks' environment and the PMI server
    /// (none: a split job not given one, whose PMI is open to anyone).
    pub(crate) secret: Option<Secret>,
}

/// How often the supervisor looks at the children.
const TICK: Duration = Duration::from_millis(20);

/// Copies `from` to our stdout or stderr, each line prefixed.
fn relay(from: impl Read + Send + 'static, rank: u32, to_stderr: bool) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        for line in BufReader::new(from)
            .split(b'\n')
            .map_while(std::io::Result::ok)
        {
            let mut out = format!("[{rank}] ").into_bytes();
            out.extend_from_slice(&line);
            out.push(b'\n');
            let _ = if to_stderr {
                std::io::stderr().lock().write_all(&out)
            } else {
                std::io::stdout().lock().write_all(&out)
            };
        }
    })
}

fn spawn(cfg: &JobConfig, rank: u32, pmi_port: &str) -> std::io::Result<Child> {
    let mut cmd = Command::new(&cfg.program);
    cmd.args(&cfg.args)
        .env("PMI_PORT", pmi_port)
        .env("PMI_ID", rank.to_string())
        .env("PMI_RANK", rank.to_string())
        .env("PMI_SIZE", cfg.np.to_string())
        .env_remove("PMI_FD")
        .stdin(Stdio::null());
    if let Some(v) = cfg.pmi_version {
        cmd.env("O2G_PMI_VERSION", v.to_string());
    }
    match &cfg.secret {
        Some(s) => cmd.env(secret::ENV, s.as_str()),
        None => cmd.env_remove(secret::ENV),
    };
    if cfg.tag_output {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    }
    // SAFETY: the hook runs in the forked child before exec and only
    // calls prctl(2), which is async-signal-safe and allocates nothing.
    unsafe {
        cmd.pre_exec(|| {
            nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(std::io::Error::from)
        });
    }
    cmd.spawn()
}

fn describe(status: ExitStatus) -> (String, u8) {
    match (status.code(), status.signal()) {
        (Some(c), _) => (format!("exited with status {c}"), c.clamp(0, 255) as u8),
        (None, Some(s)) => {
            let name =
                Signal::try_from(s).map_or_else(|_| s.to_string(), |s| s.as_str().to_owned());
            (
                format!("was killed by signal {name}"),
                128u8.saturating_add(s as u8),
            )
        }
        _ => ("ended".into(), 1),
    }
}

/// Why a job ends early.
struct Failure {
    why: String,
    /// o2grun's exit status.
    code: u8,
    /// The rank that failed, if one did.
    rank: Option<u32>,
}

impl Failure {
    fn abort(rank: u32, code: i32, msg: &str) -> Self {
        Self {
            why: format!("rank {rank} called MPI_Abort with code {code}: {msg}"),
            code: code.clamp(1, 255) as u8,
            rank: Some(rank),
        }
    }
}

/// Terminates every child still running: SIGTERM, then SIGKILL after
/// `grace`; waits for all of them (bounded by the SIGKILL).
fn teardown(children: &mut [Option<Child>], grace: Duration) {
    let signal_all = |children: &mut [Option<Child>], sig| {
        for c in children.iter_mut().flatten() {
            if let Ok(pid) = i32::try_from(c.id()) {
                let _ = kill(Pid::from_raw(pid), sig);
            }
        }
    };
    signal_all(children, Signal::SIGTERM);
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        for slot in children.iter_mut() {
            if let Some(c) = slot {
                if matches!(c.try_wait(), Ok(Some(_))) {
                    *slot = None;
                }
            }
        }
        if children.iter().all(Option::is_none) {
            return;
        }
        thread::sleep(TICK);
    }
    signal_all(children, Signal::SIGKILL);
    for c in children.iter_mut().flatten() {
        let _ = c.wait();
    }
}

/// Runs the job; returns o2grun's exit code.
pub(crate) fn run(cfg: &JobConfig) -> Result<u8, String> {
    let (tx, rx) = mpsc::channel();
    let mut server: Option<Arc<Server>> = None;
    let pmi_port = match &cfg.pmi {
        Pmi::Serve(addr) => {
            let listener =
                TcpListener::bind(addr).map_err(|e| format!("PMI listener on {addr}: {e}"))?;
            let mut bound = listener.local_addr().map_err(|e| e.to_string())?;
            if bound.ip().is_unspecified() {
                bound.set_ip(Ipv4Addr::LOCALHOST.into());
            }
            server = Some(Server::start(
                listener,
                cfg.np,
                cfg.local.clone(),
                cfg.secret.clone(),
                cfg.pmi_version,
                tx.clone(),
            ));
            bound.to_string()
        }
        // `tx` stays alive, so waiting on `rx` still waits a tick.
        Pmi::Remote(addr) => addr.clone(),
    };

    let mut children: Vec<Option<Child>> = Vec::new();
    let mut relays = Vec::new();
    for rank in cfg.local.clone() {
        match spawn(cfg, rank, &pmi_port) {
            Ok(mut c) => {
                if let Some(o) = c.stdout.take() {
                    relays.push(relay(o, rank, false));
                }
                if let Some(e) = c.stderr.take() {
                    relays.push(relay(e, rank, true));
                }
                children.push(Some(c));
            }
            Err(e) => {
                teardown(&mut children, cfg.grace);
                return Err(format!(
                    "starting rank {rank} ({}): {e}",
                    cfg.program.display()
                ));
            }
        }
    }

    // A serving o2grun stays until every remote rank has finalized, so
    // that none is left without its finalize_ack.
    let mut remote_left = match cfg.pmi {
        Pmi::Serve(_) => cfg.np - cfg.local.len() as u32,
        Pmi::Remote(_) => 0,
    };
    let start = Instant::now();
    let outcome: Result<(), Failure> = loop {
        if let Ok(ev) = rx.recv_timeout(TICK) {
            break Err(match ev {
                Event::RemoteFinalized => {
                    remote_left = remote_left.saturating_sub(1);
                    continue;
                }
                Event::Abort { rank, code, msg } => Failure::abort(rank, code, &msg),
                Event::Protocol { rank, msg } => Failure {
                    why: format!("PMI error from rank {rank}: {msg}"),
                    code: 1,
                    rank: Some(rank),
                },
            });
        }
        let mut failed = None;
        for (rank, slot) in cfg.local.clone().zip(children.iter_mut()) {
            let Some(c) = slot else { continue };
            match c.try_wait() {
                Ok(Some(st)) => {
                    *slot = None;
                    let unfinished = st.success()
                        && server
                            .as_ref()
                            .is_some_and(|s| s.left_without_finalize(rank));
                    if !st.success() || unfinished {
                        let (why, code) = if unfinished {
                            // Its peers may wait for it forever.
                            (
                                "exited with status 0 without calling MPI_Finalize".into(),
                                1,
                            )
                        } else {
                            describe(st)
                        };
                        failed = Some(Failure {
                            why: format!("rank {rank} {why}"),
                            code,
                            rank: Some(rank),
                        });
                        break;
                    }
                }
                Ok(None) => {}
                Err(e) => {
                    failed = Some(Failure {
                        why: format!("waiting for rank {rank}: {e}"),
                        code: 1,
                        rank: None,
                    });
                    break;
                }
            }
        }
        if let Some(f) = failed {
            // A rank that called MPI_Abort exits right after telling us;
            // prefer its own explanation if it is on the way.
            if let Ok(Event::Abort { rank, code, msg }) =
                rx.recv_timeout(Duration::from_millis(200))
            {
                break Err(Failure::abort(rank, code, &msg));
            }
            break Err(f);
        }
        if children.iter().all(Option::is_none) && remote_left == 0 {
            break Ok(());
        }
        if cfg.timeout.is_some_and(|t| start.elapsed() > t) {
            break Err(Failure {
                why: format!("job timed out after {:?}", start.elapsed()),
                code: 124,
                rank: None,
            });
        }
    };
    let code = match outcome {
        Ok(()) => 0,
        Err(f) => {
            // The failed rank, if it is ours and still running (it may
            // linger after its abort), is not one of the others.
            let culprit = f.rank.filter(|r| cfg.local.contains(r));
            let others = cfg
                .local
                .clone()
                .zip(children.iter())
                .filter(|(r, c)| c.is_some() && Some(*r) != culprit)
                .count();
            let which = if f.rank.is_some() { "other " } else { "" };
            eprintln!("o2grun: {}; terminating {others} {which}rank(s)", f.why);
            teardown(&mut children, cfg.grace);
            f.code
        }
    };
    for r in relays {
        let _ = r.join();
    }
    Ok(code)
}
