//! PMI-2 end to end (issue 25): real jobs whose ranks speak PMI-2 to
//! o2grun and to MPICH's hydra, and o2grun failing the job, naming the
//! rank, when one speaks it badly or speaks the version the job refuses.
//!
//! One binary plays two roles, as `o2grun_attacks.rs` does. Run by cargo,
//! each test starts a launcher running this same binary as the MPI
//! program: the arguments select the [`rank`] entry point (`--exact
//! rank`), and `O2G_TEST_ROLE` says what the rank does:
//! - `ring`: greets, passes its rank around a ring, and the world sums
//!   the ranks; the job's correct output;
//! - `mixed`: `ring`, even ranks asking for PMI-1 and odd ones for PMI-2
//!   (each sets its own `O2G_PMI_VERSION` before `MPI_Init`);
//! - `insist2`: `ring`, asking for PMI-2 whatever the launcher said;
//! - `late`: `ring`, rank 1 starting a second after the others (with the
//!   `hyphenlink` transport, whose set-up relies on PMI barriers being
//!   barriers: rank 0 unlinks the shared region past one);
//! - `bad_frame`: rank 1 speaks PMI-2 itself, over its own connection
//!   with the job's secret, and sends a frame with a malformed length
//!   field; the others wait in `MPI_Init`;
//! - `abort`: the last rank calls `MPI_Abort(7)`.
//!
//! Every job is bounded: o2grun runs with `--timeout`, hydra with
//! `MPIEXEC_TIMEOUT`.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::process::{Command, Output, Stdio};
use std::thread;
use std::time::Duration;

use mpi::traits::*;

/// Seconds a job may run before its launcher kills it.
const JOB_TIMEOUT: u64 = 30;

// ---------------------------------------------------------------------
// The rank side.

/// The ranks' entry point, not a test: the launcher starts this binary
/// with `--exact rank` and `O2G_TEST_ROLE`; run by cargo, there is
/// nothing to do.
#[test]
fn rank() {
    if let Ok(role) = std::env::var("O2G_TEST_ROLE") {
        let code = match run_rank(&role) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("rank failed: {e}");
                2
            }
        };
        std::process::exit(code);
    }
}

mod common;
use common::RankResult;

fn run_rank(role: &str) -> RankResult {
    // hydra's PMI_PORT mode sets PMI_ID, not PMI_RANK.
    let me: u32 = std::env::var("PMI_RANK")
        .or_else(|_| std::env::var("PMI_ID"))?
        .parse()?;
    match role {
        "ring" => ring(),
        "mixed" => {
            std::env::set_var("O2G_PMI_VERSION", if me % 2 == 0 { "1" } else { "2" });
            ring()
        }
        "insist2" => {
            std::env::set_var("O2G_PMI_VERSION", "2");
            ring()
        }
        "late" => {
            if me == 1 {
                thread::sleep(Duration::from_secs(1));
            }
            ring()
        }
        "bad_frame" if me == 1 => bad_frame(me),
        "bad_frame" => {
            let _universe = mpi::initialize()?;
            wait_for_teardown()
        }
        "abort" => abort(),
        other => Err(format!("unknown role {other}").into()),
    }
}

/// The `hello` example, saying which PMI version the rank asked for.
fn ring() -> RankResult {
    let asked = std::env::var("O2G_PMI_VERSION").unwrap_or_else(|_| "default".into());
    common::ring(&format!(", PMI {asked}"))
}

/// Rank `me` opens its PMI-2 conversation as a client would, then sends
/// a frame whose length field is not a number.
fn bad_frame(me: u32) -> RankResult {
    let port = std::env::var("PMI_PORT")?;
    let secret = std::env::var("O2G_JOB_SECRET")?;
    let mut s = TcpStream::connect(&port)?;
    let mut input = BufReader::new(s.try_clone()?);
    let mut line = String::new();
    s.write_all(format!("cmd=initack pmiid={me} secret={secret}\n").as_bytes())?;
    for _ in 0..4 {
        input.read_line(&mut line)?;
    }
    s.write_all(b"cmd=init pmi_version=2 pmi_subversion=0\n")?;
    input.read_line(&mut line)?;
    if !line.contains("cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=0") {
        return Err(format!("o2grun answered {line:?}").into());
    }
    s.write_all(b"abcdefcmd=fullinit;")?;
    wait_for_teardown()
}

/// The last rank calls `MPI_Abort(7)`; the others wait for it.
fn abort() -> RankResult {
    let universe = mpi::initialize()?;
    let world = universe.world();
    if world.rank() == world.size() - 1 {
        world.abort(7);
    }
    let _ = world
        .process_at_rank(world.size() - 1)?
        .receive_into(&mut [0u8]);
    wait_for_teardown()
}

/// Waits for the launcher to terminate this rank.
fn wait_for_teardown() -> RankResult {
    thread::sleep(Duration::from_secs(2 * JOB_TIMEOUT));
    Err("the launcher never terminated this rank".into())
}

// ---------------------------------------------------------------------
// The launcher side.

/// This binary as a rank playing `role`, after the launcher's `cmd`.
fn ranks(mut cmd: Command, role: &str, env: &[(&str, &str)]) -> Command {
    cmd.arg(std::env::current_exe().expect("current_exe"))
        .args(["--exact", "rank", "--nocapture", "--test-threads=1", "-q"])
        .env("O2G_TEST_ROLE", role)
        .env("O2G_TRANSPORT", "sockets-epoll")
        .env_remove("O2G_PMI_VERSION")
        .env_remove("PMI_FD")
        .env_remove("PMI_PORT")
        .env_remove("PMI_ID")
        .env_remove("PMI_JOBID")
        .env_remove("O2G_JOB_SECRET")
        .envs(env.iter().copied())
        .stdin(Stdio::null());
    cmd
}

/// `o2grun -n np` with launcher options `opts`.
fn o2grun(np: u32, opts: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_o2grun"));
    c.args(["-n", &np.to_string(), "--tag-output"])
        .args(["--timeout", &JOB_TIMEOUT.to_string(), "--grace", "1"])
        .args(opts);
    c
}

/// `mpiexec.hydra -n np` with launcher options `opts` (MPICH's hydra,
/// installed by scripts/setup.sh as Debian's `mpich`).
fn hydra(np: u32, opts: &[&str]) -> Command {
    let mut c = Command::new("mpiexec.hydra");
    c.args(opts)
        .args(["-n", &np.to_string()])
        .env("MPIEXEC_TIMEOUT", JOB_TIMEOUT.to_string());
    c
}

/// How a job ended: its exit code and its whole output.
fn run(mut cmd: Command) -> (Option<i32>, String) {
    let out: Output = cmd.output().expect("start the launcher");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}

/// Checks that the `ring` job of `np` ranks ran to its end, every rank
/// having asked for PMI `asked(rank)`; `tagged`: o2grun's `[r] ` prefixes.
fn assert_ring(
    ended: &(Option<i32>, String),
    np: u32,
    tagged: bool,
    asked: impl Fn(u32) -> String,
) {
    let (code, text) = ended;
    assert_eq!(*code, Some(0), "the job failed:\n{text}");
    let tag = |r: u32| {
        if tagged {
            format!("[{r}] ")
        } else {
            String::new()
        }
    };
    for r in 0..np {
        let line = format!("{}hello from rank {r} of {np}, PMI {}", tag(r), asked(r));
        assert!(text.contains(&line), "no {line:?} in:\n{text}");
    }
    let sum = format!("{}sum of ranks: {}", tag(0), np * (np - 1) / 2);
    assert!(text.contains(&sum), "no {sum:?} in:\n{text}");
}

#[test]
fn o2grun_with_pmi_2_runs_a_job_over_pmi_2() {
    // o2grun tells its ranks to speak PMI-2 and refuses PMI-1: the job
    // runs only if every rank spoke PMI-2.
    let ended = run(ranks(o2grun(4, &["--pmi", "2"]), "ring", &[]));
    assert_ring(&ended, 4, true, |_| "2".into());
}

#[test]
fn o2grun_serves_pmi_2_to_ranks_that_ask_for_it() {
    let env = [("O2G_PMI_VERSION", "2")];
    let ended = run(ranks(o2grun(3, &[]), "ring", &env));
    assert_ring(&ended, 3, true, |_| "2".into());
}

#[test]
fn one_job_may_speak_both_versions() {
    let ended = run(ranks(o2grun(4, &[]), "mixed", &[]));
    assert_ring(&ended, 4, true, |r| {
        if r % 2 == 0 { "1" } else { "2" }.into()
    });
}

#[test]
fn a_job_split_across_two_o2gruns_speaks_pmi_2() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let addr = format!("127.0.0.1:{port}");
    let env = [("O2G_JOB_SECRET", "0123456789abcdef0123456789abcdef")];
    let second = ranks(
        o2grun(4, &["--pmi", "2", "--ranks", "2-3", "--pmi-server", &addr]),
        "ring",
        &env,
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("start the second o2grun");
    let first = run(ranks(
        o2grun(4, &["--pmi", "2", "--ranks", "0-1", "--pmi-listen", &addr]),
        "ring",
        &env,
    ));
    let out = second.wait_with_output().expect("the second o2grun");
    let text = format!(
        "{}{}{}",
        first.1,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "the second o2grun failed:\n{text}"
    );
    assert_ring(&(first.0, text), 4, true, |_| "2".into());
}

#[test]
fn a_rank_speaking_the_refused_version_fails_the_job_with_a_reason() {
    let (code, text) = run(ranks(o2grun(3, &["--pmi", "1"]), "insist2", &[]));
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("asked for PMI version 2, but this job serves PMI-1 only (o2grun --pmi 1)"),
        "{text}"
    );
}

#[test]
fn a_malformed_frame_fails_the_job_naming_its_rank() {
    let (code, text) = run(ranks(o2grun(3, &["--pmi", "2"]), "bad_frame", &[]));
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("PMI error from rank 1: sent a PMI-2 length field \"abcdef\""),
        "{text}"
    );
}

#[test]
fn an_abort_over_pmi_2_ends_the_job_with_its_code() {
    let (code, text) = run(ranks(o2grun(3, &["--pmi", "2"]), "abort", &[]));
    assert_eq!(code, Some(7), "{text}");
    assert!(
        text.contains("rank 2 called MPI_Abort with code 7: MPI_Abort called"),
        "{text}"
    );
}

#[test]
fn hydra_serves_pmi_2_over_pmi_fd() {
    let env = [("O2G_PMI_VERSION", "2")];
    let ended = run(ranks(hydra(3, &[]), "ring", &env));
    assert_ring(&ended, 3, false, |_| "2".into());
}

#[test]
fn hydra_serves_pmi_2_over_pmi_port() {
    let env = [("O2G_PMI_VERSION", "2")];
    let ended = run(ranks(hydra(3, &["-pmi-port"]), "ring", &env));
    assert_ring(&ended, 3, false, |_| "2".into());
}

#[test]
fn under_hydra_a_pmi_2_barrier_waits_for_the_slowest_rank() {
    // hydra answers kvs-fence at once; hyphenlink's rank 0 unlinks the
    // region past a barrier, before a late rank 1 could map it, unless
    // the barrier waits.
    let env = [("O2G_PMI_VERSION", "2"), ("O2G_TRANSPORT", "hyphenlink")];
    let ended = run(ranks(hydra(3, &[]), "late", &env));
    assert_ring(&ended, 3, false, |_| "2".into());
}
