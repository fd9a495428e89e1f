//! Runs benchmark commands side by side, repetition after repetition, and
//! prints the medians and each one's ratio to the best of the others.
//!
//! ```text
//! o2g-compare --reps 5 --ours o2g \
//!     --run "sockets-epoll=O2G_TRANSPORT=sockets-epoll o2grun -n 4 o2g-is S" \
//!     --run "o2g=O2G_TRANSPORT=o2g o2grun -n 4 o2g-is S"
//! ```
//!
//! Each command must print NPB's ` Mop/s total     =  <number>` line and
//! ` Verification    =  SUCCESSFUL`; a run that does not verify counts as
//! a failure. Repetitions are interleaved (one of each, then the next
//! round) so slow drifts of the machine spread over all of them.
//! With `--csv FILE` every measurement is also written as CSV.
//!
//! Each repetition runs in its own process group, killed after
//! `--timeout` seconds. One that had already verified and printed its
//! Mop/s counts (MPICH 4.0.2 over UCX's TCP transport sometimes hangs in
//! `MPI_Finalize` after the timed part); the table says how often.

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use clap::Parser;

#[derive(Parser)]
#[command(about = "Run benchmark commands side by side and compare their Mop/s")]
struct Args {
    /// `LABEL=COMMAND`: leading `VAR=value` words of COMMAND set its environment.
    #[arg(long = "run", required = true)]
    runs: Vec<String>,
    /// Repetitions of each command.
    #[arg(long, default_value_t = 5)]
    reps: usize,
    /// The label whose ratio to the best other label is the headline.
    #[arg(long)]
    ours: Option<String>,
    /// Write every measurement here as CSV (label,rep,mops).
    #[arg(long)]
    csv: Option<std::path::PathBuf>,
    /// Seconds a repetition may take before its process group is killed.
    #[arg(long, default_value_t = 1800)]
    timeout: u64,
}

struct Config {
    label: String,
    env: Vec<(String, String)>,
    argv: Vec<String>,
    mops: Vec<f64>,
    failures: usize,
    /// Repetitions that verified, then hung and were killed.
    hung: usize,
}

fn parse_run(spec: &str) -> Result<Config, String> {
    let (label, command) = spec
        .split_once('=')
        .ok_or_else(|| format!("{spec:?}: expected LABEL=COMMAND"))?;
    let mut env = Vec::new();
    let mut argv = Vec::new();
    for word in command.split_whitespace() {
        match word.split_once('=') {
            Some((k, v)) if argv.is_empty() && !k.contains('/') => {
                env.push((k.to_owned(), v.to_owned()));
            }
            _ => argv.push(word.to_owned()),
        }
    }
    if argv.is_empty() {
        return Err(format!("{spec:?}: no command"));
    }
    Ok(Config {
        label: label.to_owned(),
        env,
        argv,
        mops: Vec::new(),
        failures: 0,
        hung: 0,
    })
}

/// What one repetition gave.
enum Outcome {
    /// It verified and reported this many Mop/s.
    Measured(f64),
    /// It verified and reported its Mop/s, then did not exit in time (a
    /// launcher or library stuck in finalize) and was killed.
    MeasuredThenHung(f64),
    /// Why it gave nothing.
    Failed(String),
}

/// Runs one repetition, killing its whole process group after `limit`.
fn measure(c: &Config, limit: Duration, scratch: &Path) -> Outcome {
    let (out_path, err_path) = (scratch.join("stdout"), scratch.join("stderr"));
    let files =
        std::fs::File::create(&out_path).and_then(|o| Ok((o, std::fs::File::create(&err_path)?)));
    let (out, err) = match files {
        Ok(f) => f,
        Err(e) => return Outcome::Failed(format!("{}: {e}", scratch.display())),
    };
    let child = Command::new(&c.argv[0])
        .args(&c.argv[1..])
        .envs(c.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0)
        .spawn();
    let mut child = match child {
        Ok(ch) => ch,
        Err(e) => return Outcome::Failed(format!("{}: {e}", c.argv[0])),
    };
    let deadline = Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(100)),
            _ => {
                // SAFETY: kill(2) on the process group this function
                // created for the child; it touches no memory.
                unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
                let _ = child.wait();
                break None;
            }
        }
    };
    let text = std::fs::read_to_string(&out_path).unwrap_or_default();
    let verified = text.contains("Verification    =  SUCCESSFUL");
    let mops = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Mop/s total"))
        .and_then(|rest| {
            rest.trim()
                .trim_start_matches('=')
                .trim()
                .parse::<f64>()
                .ok()
        });
    match (status, verified, mops) {
        (Some(st), true, Some(m)) if st.success() => Outcome::Measured(m),
        (None, true, Some(m)) => Outcome::MeasuredThenHung(m),
        _ => Outcome::Failed(format!(
            "{}, verified {verified}\n{text}{}",
            status.map_or(format!("killed after {limit:?}"), |s| s.to_string()),
            std::fs::read_to_string(&err_path).unwrap_or_default()
        )),
    }
}

fn median(v: &[f64]) -> Option<f64> {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => None,
        n if n % 2 == 1 => Some(s[n / 2]),
        n => Some((s[n / 2 - 1] + s[n / 2]) / 2.0),
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    let mut configs = match args
        .runs
        .iter()
        .map(|r| parse_run(r))
        .collect::<Result<Vec<_>, _>>()
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("o2g-compare: {e}");
            return ExitCode::FAILURE;
        }
    };
    let scratch = std::env::temp_dir().join(format!("o2g-compare-{}", std::process::id()));
    if let Err(e) = std::fs::create_dir_all(&scratch) {
        eprintln!("o2g-compare: {}: {e}", scratch.display());
        return ExitCode::FAILURE;
    }
    let mut csv = Vec::new();
    let total = args.reps * configs.len();
    let started = Instant::now();
    let mut done = 0;
    for rep in 1..=args.reps {
        for c in &mut configs {
            done += 1;
            let t = Instant::now();
            let outcome = measure(c, Duration::from_secs(args.timeout), &scratch);
            let (m, note) = match outcome {
                Outcome::Measured(m) => (m, ""),
                Outcome::MeasuredThenHung(m) => {
                    c.hung += 1;
                    (m, ", then hung and was killed")
                }
                Outcome::Failed(e) => {
                    println!("[{done}/{total}] {} rep {rep}: FAILED", c.label);
                    eprintln!("{}: {e}", c.label);
                    c.failures += 1;
                    let _ = std::io::stdout().flush();
                    continue;
                }
            };
            println!(
                "[{done}/{total}] {} rep {rep}: {m:.2} Mop/s ({:.0} s, {:.0} s so far{note})",
                c.label,
                t.elapsed().as_secs_f64(),
                started.elapsed().as_secs_f64()
            );
            csv.push(format!("{},{rep},{m}", c.label));
            c.mops.push(m);
            let _ = std::io::stdout().flush();
        }
    }
    println!();
    println!(
        "{:<16} {:>12} {:>10} {:>10} {:>6} {:>14}",
        "label", "median Mop/s", "min", "max", "runs", "vs best other"
    );
    let medians: Vec<Option<f64>> = configs.iter().map(|c| median(&c.mops)).collect();
    for (i, c) in configs.iter().enumerate() {
        let best_other = medians
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .filter_map(|(_, m)| *m)
            .fold(None, |acc: Option<f64>, m| {
                Some(acc.map_or(m, |a| a.max(m)))
            });
        let fmt = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.2}"));
        let ratio = match (medians[i], best_other) {
            (Some(m), Some(b)) if b > 0.0 => format!("{:.2}x", m / b),
            _ => "-".to_owned(),
        };
        let min = c.mops.iter().copied().reduce(f64::min);
        let max = c.mops.iter().copied().reduce(f64::max);
        println!(
            "{:<16} {:>12} {:>10} {:>10} {:>6} {:>14}",
            c.label,
            fmt(medians[i]),
            fmt(min),
            fmt(max),
            format!("{}/{}", c.mops.len(), c.mops.len() + c.failures),
            ratio
        );
    }
    for c in configs.iter().filter(|c| c.hung > 0) {
        println!(
            "{}: {} repetition(s) verified, then hung and were killed after {} s (counted)",
            c.label, c.hung, args.timeout
        );
    }
    let _ = std::fs::remove_dir_all(&scratch);
    if let Some(ours) = &args.ours {
        if let Some(i) = configs.iter().position(|c| &c.label == ours) {
            let best = configs
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .filter_map(|(j, c)| medians[j].map(|m| (m, &c.label)))
                .max_by(|a, b| a.0.total_cmp(&b.0));
            if let (Some(m), Some((b, label))) = (medians[i], best) {
                println!("\n{ours}: {:.2}x the best other ({label})", m / b);
            }
        }
    }
    if let Some(path) = &args.csv {
        let body = format!("label,rep,mops\n{}\n", csv.join("\n"));
        if let Err(e) = std::fs::write(path, body) {
            eprintln!("o2g-compare: writing {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    if configs.iter().any(|c| c.failures > 0) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
