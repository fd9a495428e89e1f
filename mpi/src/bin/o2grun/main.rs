//! `o2grun`: start an MPI job of N processes on this machine.
//!
//! ```text
//! o2grun -n 4 [--tag-output] [--timeout 60] prog [args...]
//! ```
//!
//! o2grun is a PMI-1 server (`pmi_server.rs`): each rank gets
//! `PMI_PORT`, `PMI_ID`, `PMI_RANK` and `PMI_SIZE` and connects back.
//! It then supervises the job (`job.rs`):
//! - exit status 0 when every rank exits 0;
//! - if a rank exits non-zero, is killed by a signal, or calls
//!   `MPI_Abort`, every other rank is terminated (SIGTERM, then SIGKILL
//!   after a grace period), o2grun says which rank and why, and exits with
//!   that rank's code (128 + signal for a signal);
//! - with `--timeout`, a job running longer is killed and o2grun exits
//!   124;
//! - ranks get `PR_SET_PDEATHSIG`, so they die with o2grun: no orphans.

mod job;
mod pmi_server;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

/// Run an MPI program as N local processes.
#[derive(Parser, Debug)]
#[command(name = "o2grun", version, about)]
struct Args {
    /// Number of processes.
    #[arg(short = 'n', long = "np", value_parser = clap::value_parser!(u32).range(1..=4096))]
    np: u32,
    /// Prefix every output line with "[rank] ".
    #[arg(long)]
    tag_output: bool,
    /// Kill the job after this many seconds (0: no limit).
    #[arg(long, default_value_t = 0)]
    timeout: u64,
    /// Seconds between SIGTERM and SIGKILL when the job is torn down.
    #[arg(long, default_value_t = 3)]
    grace: u64,
    /// The program.
    program: PathBuf,
    /// Its arguments.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<String>,
}

fn main() -> ExitCode {
    let a = Args::parse();
    let cfg = job::JobConfig {
        np: a.np,
        program: a.program,
        args: a.args,
        tag_output: a.tag_output,
        timeout: (a.timeout > 0).then(|| Duration::from_secs(a.timeout)),
        grace: Duration::from_secs(a.grace),
    };
    match job::run(&cfg) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("o2grun: {e}");
            ExitCode::from(1)
        }
    }
}
