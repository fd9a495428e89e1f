//! The conformance suite: every case, over every transport, as real
//! processes on real loopback sockets.
//!
//! One binary plays two roles. Run by cargo (no `O2G_CONF_CASE` in the
//! environment) it is the driver: it runs each case of the matrix through
//! `o2grun -n N --timeout T` (so every run is bounded) with the transport
//! in `O2G_TRANSPORT`, and prints libtest-style lines and a
//! `test result:` summary. Started by o2grun (or bare, for a singleton)
//! with `O2G_CONF_CASE=<case>`, it is one rank of that case and exits
//! non-zero if any check fails.
//!
//! `O2G_CONF_FILTER=text` runs only the runs whose name contains `text`.
//! `O2G_CONF_MAX_NP=n` runs only the runs of at most `n` ranks (the QEMU
//! harness's guests run at most 4).
//!
//! `O2G_CONF_TRANSPORTS=a,b` runs the per-transport matrix for those
//! transports only and skips the transport-independent runs (launchers,
//! hydra, examples); the QEMU harness runs it that way for `o2g`, with
//! `O2G_CONF_LAUNCHER` naming the guest's copy of o2grun.

mod collectives;
mod p2p;
mod random;
mod reductions;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

/// Every run is killed after this many seconds (`O2G_CONF_TIMEOUT`
/// overrides it, for slow emulated guests).
fn run_timeout() -> String {
    std::env::var("O2G_CONF_TIMEOUT").unwrap_or_else(|_| "60".into())
}

/// One run of a case.
struct Run {
    name: String,
    /// Program and its arguments; o2grun is prepended unless `bare`.
    program: PathBuf,
    args: Vec<String>,
    np: u32,
    bare: bool,
    /// Launch with MPICH's `mpiexec.hydra` instead of o2grun.
    hydra: bool,
    /// Launch as two o2gruns, as on two machines: the first serves PMI
    /// and starts the lower half of the ranks, the second the rest.
    split: bool,
    env: Vec<(&'static str, String)>,
    /// The exit status o2grun must end with.
    expect_code: i32,
    /// Text that must appear in the combined output.
    expect_output: Option<&'static str>,
}

fn case(name: &str, transport: &str, np: u32) -> Run {
    Run {
        name: format!("{name}/{transport}/np{np}"),
        program: std::env::current_exe().expect("current_exe"),
        args: Vec::new(),
        np,
        bare: false,
        hydra: false,
        split: false,
        env: vec![
            ("O2G_CONF_CASE", name.to_owned()),
            ("O2G_TRANSPORT", transport.to_owned()),
        ],
        expect_code: 0,
        expect_output: None,
    }
}

fn example(name: &str, transport: &str, np: u32) -> Run {
    let exe = std::env::current_exe().expect("current_exe");
    // target/<profile>/deps/conformance-* -> target/<profile>/examples/<name>
    let dir = exe.parent().and_then(Path::parent).expect("target dir");
    Run {
        name: format!("example-{name}/{transport}/np{np}"),
        program: dir.join("examples").join(name),
        env: vec![("O2G_TRANSPORT", transport.to_owned())],
        ..case(name, transport, np)
    }
}

/// The transports the per-transport matrix covers.
fn transports() -> Option<Vec<String>> {
    std::env::var("O2G_CONF_TRANSPORTS")
        .ok()
        .map(|v| v.split(',').map(str::to_owned).collect())
}

fn matrix() -> Vec<Run> {
    let mut runs = Vec::new();
    let chosen = transports();
    let all = vec![
        "sockets-epoll".to_owned(),
        "sockets-select".to_owned(),
        "sockets-poll".to_owned(),
        "dimmnet".to_owned(),
        "hyphenlink".to_owned(),
    ];
    for t in chosen.as_deref().unwrap_or(&all) {
        let t = t.as_str();
        runs.push(case("p2p", t, 4));
        runs.push(Run {
            env: vec![
                ("O2G_CONF_CASE", "p2p".into()),
                ("O2G_TRANSPORT", t.into()),
                ("O2G_SELF", "0".into()),
            ],
            name: format!("p2p/{t}/np3/self-over-network"),
            ..case("p2p", t, 3)
        });
        for np in [1, 2, 3, 4, 7, 16] {
            runs.push(case("collectives", t, np));
            runs.push(case("reductions", t, np));
        }
        runs.push(case("random", t, 4));
        runs.push(Run {
            env: vec![
                ("O2G_CONF_CASE", "random".into()),
                ("O2G_TRANSPORT", t.into()),
                ("O2G_SELF", "0".into()),
                ("O2G_SNDBUF", "16384".into()),
                ("O2G_RCVBUF", "16384".into()),
            ],
            name: format!("random/{t}/np3/self-over-network+small-buffers"),
            ..case("random", t, 3)
        });
        runs.push(case("big", t, 2));
        runs.push(case("large_recv", t, 2));
        if t == "o2g" {
            // Receives the module cannot pin (a pin budget below their
            // size, as RLIMIT_MEMLOCK would refuse them) wait in the dump
            // area instead, and say so once: messages up to the eager
            // limit, which a job without pins raises to its largest.
            runs.push(Run {
                env: vec![
                    ("O2G_CONF_CASE", "large_recv".into()),
                    ("O2G_TRANSPORT", t.into()),
                    ("O2G_PIN_BUDGET", (64 << 10).to_string()),
                    ("O2G_RNDV_THRESHOLD", p2p::LARGE.to_string()),
                ],
                name: format!("large_recv/{t}/np2/no-pins"),
                expect_output: Some("could not be pinned"),
                ..case("large_recv", t, 2)
            });
            // A rendezvous message needs pins at both ends: without them,
            // the job stops with an error that names the remedy.
            runs.push(Run {
                env: vec![
                    ("O2G_CONF_CASE", "large_recv".into()),
                    ("O2G_TRANSPORT", t.into()),
                    ("O2G_PIN_BUDGET", (64 << 10).to_string()),
                    // Below the message (256 KiB): it goes by rendezvous.
                    ("O2G_RNDV_THRESHOLD", (64 << 10).to_string()),
                ],
                name: format!("large_recv/{t}/np2/no-pins-rendezvous"),
                expect_code: 1,
                expect_output: Some("O2G_RNDV_THRESHOLD"),
                ..case("large_recv", t, 2)
            });
        }
        runs.push(case("dead_peer", t, 2));
        runs.push(Run {
            env: vec![
                ("O2G_CONF_CASE", "backlog".into()),
                ("O2G_TRANSPORT", t.into()),
                ("O2G_DUMP_BYTES", p2p::BACKLOG_AREA.to_string()),
            ],
            ..case("backlog", t, 2)
        });
        runs.push(case("head_to_head", t, 2));
        runs.push(case("exchange", t, 2));
        runs.push(Run {
            env: vec![
                ("O2G_CONF_CASE", "exchange".into()),
                ("O2G_TRANSPORT", t.into()),
                ("O2G_RNDV_THRESHOLD", (4 << 20).to_string()),
            ],
            name: format!("exchange/{t}/np2/eager"),
            ..case("exchange", t, 2)
        });
        // Issue 20's hang: a receive that matches a message behind more
        // large ones than the receiver can store.
        runs.push(case("late_tag", t, 2));
        runs.push(Run {
            name: format!("late_tag/{t}/np1/to-itself"),
            ..case("late_tag", t, 1)
        });
        runs.push(Run {
            env: vec![
                ("O2G_CONF_CASE", "late_tag".into()),
                ("O2G_TRANSPORT", t.into()),
                ("O2G_CONF_ONE_HUGE", "1".into()),
            ],
            name: format!("late_tag/{t}/np2/one-huge"),
            ..case("late_tag", t, 2)
        });
        runs.push(Run {
            env: vec![
                ("O2G_CONF_CASE", "late_tag".into()),
                ("O2G_TRANSPORT", t.into()),
                ("O2G_CONF_MANY_SMALL", "1".into()),
            ],
            name: format!("late_tag/{t}/np2/many-small"),
            ..case("late_tag", t, 2)
        });
        if t == "o2g" {
            // And with a dump area far below one message.
            runs.push(Run {
                env: vec![
                    ("O2G_CONF_CASE", "late_tag".into()),
                    ("O2G_TRANSPORT", t.into()),
                    ("O2G_DUMP_BYTES", p2p::BACKLOG_AREA.to_string()),
                ],
                name: format!("late_tag/{t}/np2/small-dump"),
                ..case("late_tag", t, 2)
            });
        }
        if chosen.is_none() {
            runs.push(example("hello", t, 4));
            runs.push(example("ping_pong", t, 2));
        }
    }
    if chosen.is_some() {
        return runs;
    }
    // A world of one without any process manager, over each transport.
    for t in ["self", "sockets-epoll"] {
        for name in ["collectives", "p2p_self"] {
            runs.push(Run {
                bare: true,
                name: format!("{name}/{t}/singleton"),
                ..case(name, t, 1)
            });
        }
    }
    runs.push(Run {
        bare: true,
        name: "big/self/singleton".into(),
        ..case("big_self", "self", 1)
    });
    // The same binaries under MPICH's hydra (PMI-1 over PMI_FD).
    for (name, np) in [("collectives", 7), ("p2p", 4)] {
        runs.push(Run {
            hydra: true,
            name: format!("{name}/sockets-epoll/np{np}/mpiexec.hydra"),
            ..case(name, "sockets-epoll", np)
        });
    }
    runs.push(Run {
        hydra: true,
        name: "example-hello/sockets-select/np3/mpiexec.hydra".into(),
        ..example("hello", "sockets-select", 3)
    });
    // One job from two o2gruns, as across two machines, sharing the job's
    // secret as a user would give it to both.
    runs.push(Run {
        split: true,
        name: "p2p/sockets-epoll/np4/two-launchers".into(),
        env: vec![
            ("O2G_CONF_CASE", "p2p".into()),
            ("O2G_TRANSPORT", "sockets-epoll".into()),
            ("O2G_JOB_SECRET", "0123456789abcdef0123456789abcdef".into()),
        ],
        ..case("p2p", "sockets-epoll", 4)
    });
    // The launcher's failure handling.
    runs.push(Run {
        expect_code: 3,
        expect_output: Some("rank 1 exited with status 3"),
        ..case("rank_fails", "sockets-epoll", 3)
    });
    runs.push(Run {
        expect_code: 7,
        expect_output: Some("rank 2 called MPI_Abort with code 7"),
        ..case("rank_aborts", "sockets-epoll", 3)
    });
    runs.push(Run {
        expect_code: 1,
        expect_output: Some("not available"),
        ..case("p2p_self", "o2g", 1)
    });
    // An unknown transport: initialize fails with an error naming the
    // value and the valid ones, and the job fails.
    for (bad, want) in [
        (
            "bogus",
            "O2G_TRANSPORT=\"bogus\": expected sockets-epoll, sockets-select",
        ),
        (
            "sockets_epoll",
            "O2G_TRANSPORT=\"sockets_epoll\": expected sockets-epoll, sockets-select",
        ),
    ] {
        runs.push(Run {
            expect_code: 1,
            expect_output: Some(want),
            name: format!("p2p/{bad}/np2/unknown-transport"),
            ..case("p2p", bad, 2)
        });
    }
    runs
}

/// o2grun for `run`, with launcher options `extra`.
fn o2grun(run: &Run, extra: &[String]) -> Command {
    let launcher = std::env::var("O2G_CONF_LAUNCHER")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_o2grun").to_owned());
    let mut c = Command::new(launcher);
    c.args([
        "-n",
        &run.np.to_string(),
        "--tag-output",
        "--timeout",
        &run_timeout(),
    ]);
    c.args(extra).arg(&run.program);
    c
}

/// The second launcher of a split run: ranks np/2.. with the first one's
/// PMI server on `port`.
fn second_launcher(run: &Run, port: u16) -> Result<std::process::Child, String> {
    let extra = [
        "--ranks".to_owned(),
        format!("{}-{}", run.np / 2, run.np - 1),
        "--pmi-server".to_owned(),
        format!("127.0.0.1:{port}"),
    ];
    o2grun(run, &extra)
        .args(&run.args)
        .envs(run.env.iter().map(|(k, v)| (k, v)))
        .env_remove("PMI_FD")
        .env_remove("PMI_PORT")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("spawn the second launcher: {e}"))
}

fn execute(run: &Run) -> Result<(), String> {
    let mut second = None;
    let mut cmd = if run.split {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("finding a free port: {e}"))?
            .port();
        second = Some(second_launcher(run, port)?);
        o2grun(
            run,
            &[
                "--ranks".to_owned(),
                format!("0-{}", run.np / 2 - 1),
                "--pmi-listen".to_owned(),
                format!("127.0.0.1:{port}"),
            ],
        )
    } else if run.bare {
        Command::new(&run.program)
    } else if run.hydra {
        // Installed by scripts/setup.sh (Debian package mpich).
        let mut c = Command::new("mpiexec.hydra");
        c.args(["-n", &run.np.to_string()])
            .env("MPIEXEC_TIMEOUT", run_timeout());
        c.arg(&run.program);
        c
    } else {
        o2grun(run, &[])
    };
    cmd.args(&run.args)
        .envs(run.env.iter().map(|(k, v)| (k, v)))
        .env_remove("PMI_FD")
        .env_remove("PMI_PORT")
        .stdin(Stdio::null());
    let out = cmd.output().map_err(|e| format!("spawn: {e}"))?;
    let mut text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut code = out.status.code().unwrap_or(-1);
    if let Some(second) = second {
        let out2 = second
            .wait_with_output()
            .map_err(|e| format!("the second launcher: {e}"))?;
        text += &String::from_utf8_lossy(&out2.stdout);
        text += &String::from_utf8_lossy(&out2.stderr);
        let code2 = out2.status.code().unwrap_or(-1);
        if code2 != run.expect_code {
            code = code2;
        }
    }
    if code != run.expect_code {
        return Err(format!("exit {code}, expected {}\n{text}", run.expect_code));
    }
    if let Some(want) = run.expect_output {
        if !text.contains(want) {
            return Err(format!("output lacks {want:?}\n{text}"));
        }
    }
    Ok(())
}

fn driver() -> ExitCode {
    let filter = std::env::var("O2G_CONF_FILTER").unwrap_or_default();
    let max_np = match std::env::var("O2G_CONF_MAX_NP") {
        Ok(v) => match v.parse::<u32>() {
            Ok(n) if n > 0 => n,
            _ => {
                eprintln!("O2G_CONF_MAX_NP={v:?}: expected a count of ranks above 0");
                return ExitCode::FAILURE;
            }
        },
        Err(_) => u32::MAX,
    };
    let runs: Vec<Run> = matrix()
        .into_iter()
        .filter(|r| r.name.contains(&filter) && r.np <= max_np)
        .collect();
    println!("\nrunning {} tests", runs.len());
    let start = Instant::now();
    let mut failed = Vec::new();
    for run in &runs {
        let t = Instant::now();
        match execute(run) {
            Ok(()) => println!(
                "test {} ... ok ({:.1}s)",
                run.name,
                t.elapsed().as_secs_f64()
            ),
            Err(e) => {
                println!("test {} ... FAILED", run.name);
                failed.push((run.name.clone(), e));
            }
        }
    }
    for (name, e) in &failed {
        println!("\n---- {name} ----\n{e}");
    }
    let ok = failed.is_empty();
    println!(
        "\ntest result: {}. {} passed; {} failed; 0 ignored; 0 measured; 0 filtered out; finished in {:.2}s\n",
        if ok { "ok" } else { "FAILED" },
        runs.len() - failed.len(),
        failed.len(),
        start.elapsed().as_secs_f64()
    );
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// A failed check inside a rank.
pub(crate) type Check = Result<(), Box<dyn std::error::Error>>;

/// Fails the rank with a message when `cond` is false.
#[macro_export]
macro_rules! ensure {
    ($cond:expr, $($fmt:tt)*) => {
        if !$cond {
            return Err(format!($($fmt)*).into());
        }
    };
}

fn rank_main(case: &str) -> ExitCode {
    let result: Check = match case {
        "p2p" => p2p::run(),
        "p2p_self" => p2p::run_self(),
        "big" => p2p::big(),
        "big_self" => p2p::big_self(),
        "dead_peer" => p2p::dead_peer(),
        "backlog" => p2p::backlog(),
        "late_tag" => p2p::late_tag(),
        "head_to_head" => p2p::head_to_head(),
        "exchange" => p2p::exchange(),
        "large_recv" => p2p::large_recv(),
        "rank_fails" => p2p::rank_fails(),
        "rank_aborts" => p2p::rank_aborts(),
        "collectives" => collectives::run(),
        "reductions" => reductions::run(),
        "random" => random::run(),
        other => Err(format!("unknown case {other}").into()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("case {case} failed: {e}");
            ExitCode::FAILURE
        }
    }
}

fn main() -> ExitCode {
    match std::env::var("O2G_CONF_CASE") {
        Ok(case) => rank_main(&case),
        Err(_) => driver(),
    }
}
