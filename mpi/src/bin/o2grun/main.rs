//! `o2grun`: start an MPI job of N processes on this machine.
//!
//! ```text
//! o2grun -n 4 [--tag-output] [--timeout 60] [--pmi 1|2] prog [args...]
//! ```
//!
//! o2grun is a PMI server (`pmi_server.rs`) for PMI-1 (`pmi1.rs`) and
//! PMI-2 (`pmi2.rs`): each rank gets `PMI_PORT`, `PMI_ID`, `PMI_RANK`,
//! `PMI_SIZE` and `O2G_JOB_SECRET` and connects back, speaking whichever
//! version it chose (its `O2G_PMI_VERSION`, 1 by default). With
//! `--pmi N` the ranks are told to speak version N (o2grun sets their
//! `O2G_PMI_VERSION`) and a rank that speaks the other is refused, which
//! fails the job naming it. It then supervises the job (`job.rs`):
//! - exit status 0 when every rank exits 0;
//! - if a rank exits non-zero, is killed by a signal, calls `MPI_Abort`,
//!   or exits 0 without `MPI_Finalize` after connecting to PMI (its peers
//!   would wait for it forever), every other rank is terminated (SIGTERM,
//!   then SIGKILL after a grace period), o2grun says which rank and why,
//!   and exits with that rank's code (128 + signal for a signal, 1 for a
//!   missing `MPI_Finalize`);
//! - with `--timeout`, a job running longer is killed and o2grun exits
//!   124;
//! - ranks get `PR_SET_PDEATHSIG`, so they die with o2grun: no orphans.
//!
//! # Several machines
//!
//! One job can span machines (or VMs) with one o2grun per machine, each
//! starting its share of the ranks; the first also serves PMI:
//!
//! ```text
//! node0$ o2grun -n 4 --ranks 0-1 --pmi-listen 10.0.0.1:7000 prog
//! node1$ o2grun -n 4 --ranks 2-3 --pmi-server 10.0.0.1:7000 prog
//! ```
//!
//! Each o2grun supervises its own ranks as above. The serving one also
//! fails the job when a remote rank drops its PMI connection without
//! finalizing (its own o2grun says why); ranks set `O2G_ADDR` to the
//! address their peers reach them at.
//!
//! # The job's secret
//!
//! Anyone who can reach the PMI port can connect to it, so o2grun gives
//! each job a secret: 32 lowercase hexadecimal digits from
//! `/dev/urandom`, fresh for every job, in every rank's environment as
//! `O2G_JOB_SECRET` (`secret.rs`). A rank's PMI client sends it with its
//! `initack`; the transports authenticate the ranks' connections to each
//! other with it. The PMI server (`gate.rs`) serves only a connection that
//! presents it for a rank no other connection has held; anything else
//! (garbage, a wrong secret, silence past a few seconds, a line without
//! end) is closed, reported on stderr, and cannot end or stall the job.
//! A job split across o2gruns shares one secret, which the user gives
//! each of them in `O2G_JOB_SECRET`:
//!
//! ```text
//! $ export O2G_JOB_SECRET=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
//! ```
//!
//! Without it a split job runs as before, unauthenticated, with a warning;
//! a job on one o2grun ignores the variable and makes its own. The secret
//! travels in the clear: it keeps out whoever can connect, not whoever
//! can watch the network.

mod gate;
mod job;
mod pmi1;
mod pmi2;
mod pmi_server;
mod secret;
mod wire;
mod wire2;

use std::net::SocketAddr;
use std::ops::Range;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

use secret::Secret;

/// Run an MPI program as N local processes.
#[derive(Parser, Debug)]
#[command(name = "o2grun", version, about)]
struct Args {
    /// Number of processes.
    #[arg(short = 'n', long = "np", value_parser = clap::value_parser!(u32).range(1..=4096))]
    np: u32,
    /// Prefix every output line with its rank in brackets and a space.
    #[arg(long)]
    tag_output: bool,
    /// Kill the job after this many seconds (0: no limit).
    #[arg(long, default_value_t = 0)]
    timeout: u64,
    /// Seconds between SIGTERM and SIGKILL when the job is torn down.
    #[arg(long, default_value_t = 3)]
    grace: u64,
    /// The ranks this o2grun starts, "A-B" or "A" (default: all).
    #[arg(long, value_parser = parse_ranks)]
    ranks: Option<Range<u32>>,
    /// Serve PMI on this address, for ranks on other machines too
    /// (default: a free port on 127.0.0.1).
    #[arg(long, conflicts_with = "pmi_server")]
    pmi_listen: Option<SocketAddr>,
    /// Serve no PMI: the ranks connect to this o2grun's PMI server.
    #[arg(long)]
    pmi_server: Option<String>,
    /// The PMI version the ranks speak, 1 or 2, set as their
    /// O2G_PMI_VERSION; the server refuses the other (default: each rank's
    /// own choice, either served).
    #[arg(long = "pmi", value_name = "VERSION", value_parser = clap::value_parser!(u8).range(1..=2))]
    pmi_version: Option<u8>,
    /// The program.
    program: PathBuf,
    /// Its arguments.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<String>,
}

/// Parses "A-B" (inclusive) or "A" into a range of ranks.
fn parse_ranks(s: &str) -> Result<Range<u32>, String> {
    let num = |t: &str| {
        t.trim()
            .parse::<u32>()
            .map_err(|_| format!("{t:?} is not a rank"))
    };
    let (a, b) = match s.split_once('-') {
        Some((a, b)) => (num(a)?, num(b)?),
        None => (num(s)?, num(s)?),
    };
    if a > b {
        return Err(format!("{s:?}: the first rank is above the last"));
    }
    Ok(a..b + 1)
}

fn main() -> ExitCode {
    let a = Args::parse();
    let local = a.ranks.unwrap_or(0..a.np);
    if local.end > a.np {
        eprintln!(
            "o2grun: --ranks {local:?} goes past the {} ranks of the job",
            a.np
        );
        return ExitCode::from(2);
    }
    let split = a.pmi_server.is_some() || local != (0..a.np);
    let secret = match (split, std::env::var(secret::ENV)) {
        (false, _) => match Secret::generate() {
            Ok(s) => Some(s),
            Err(e) => {
                eprintln!("o2grun: reading /dev/urandom for the job's secret: {e}");
                return ExitCode::from(1);
            }
        },
        (true, Ok(v)) => match Secret::parse(&v) {
            Ok(s) => Some(s),
            Err(e) => {
                eprintln!("o2grun: {e}");
                return ExitCode::from(2);
            }
        },
        (true, Err(_)) => None,
    };
    let pmi = match a.pmi_server {
        Some(addr) => job::Pmi::Remote(addr),
        None => {
            if secret.is_none() {
                eprintln!(
                    "o2grun: warning: {} is not set, so this job's PMI server admits anyone \
                     who names a rank: give every o2grun of the job the same secret",
                    secret::ENV
                );
            }
            job::Pmi::Serve(
                a.pmi_listen
                    .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 0))),
            )
        }
    };
    let cfg = job::JobConfig {
        np: a.np,
        local,
        pmi,
        pmi_version: a.pmi_version,
        program: a.program,
        args: a.args,
        tag_output: a.tag_output,
        timeout: (a.timeout > 0).then(|| Duration::from_secs(a.timeout)),
        grace: Duration::from_secs(a.grace),
        secret,
    };
    match job::run(&cfg) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("o2grun: {e}");
            ExitCode::from(1)
        }
    }
}
