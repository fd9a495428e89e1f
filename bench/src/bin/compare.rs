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

use std::io::Write;
use std::process::{Command, ExitCode};
use std::time::Instant;

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
    /// Write every measurement here as CSV (label,rep,mops,seconds).
    #[arg(long)]
    csv: Option<std::path::PathBuf>,
}

struct Config {
    label: String,
    env: Vec<(String, String)>,
    argv: Vec<String>,
    mops: Vec<f64>,
    failures: usize,
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
    })
}

/// Runs one repetition; the Mop/s it reported if it verified.
fn measure(c: &Config) -> Result<f64, String> {
    let out = Command::new(&c.argv[0])
        .args(&c.argv[1..])
        .envs(c.env.iter().map(|(k, v)| (k, v)))
        .output()
        .map_err(|e| format!("{}: {e}", c.argv[0]))?;
    let text = String::from_utf8_lossy(&out.stdout);
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
    match (out.status.success() && verified, mops) {
        (true, Some(m)) => Ok(m),
        _ => Err(format!(
            "exit {:?}, verified {verified}\n{text}{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
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
    let mut csv = Vec::new();
    let total = args.reps * configs.len();
    let started = Instant::now();
    let mut done = 0;
    for rep in 1..=args.reps {
        for c in &mut configs {
            done += 1;
            let t = Instant::now();
            match measure(c) {
                Ok(m) => {
                    println!(
                        "[{done}/{total}] {} rep {rep}: {m:.2} Mop/s ({:.0} s, {:.0} s so far)",
                        c.label,
                        t.elapsed().as_secs_f64(),
                        started.elapsed().as_secs_f64()
                    );
                    csv.push(format!("{},{rep},{m}", c.label));
                    c.mops.push(m);
                }
                Err(e) => {
                    println!("[{done}/{total}] {} rep {rep}: FAILED", c.label);
                    eprintln!("{}: {e}", c.label);
                    c.failures += 1;
                }
            }
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
