//! Runs benchmark commands side by side, repetition after repetition, and
//! prints each one's median with its 95% interval and, for ours against
//! the best peer (another MPI library), the ratio with its interval and a
//! verdict: faster, slower, or cannot tell at this noise.
//!
//! ```text
//! o2g-compare --reps 10 --ours o2g --peer openmpi \
//!     --run "o2g=O2G_TRANSPORT=o2g o2grun -n 2 o2g-is S" \
//!     --run "openmpi=sh /etc/o2g/peers.sh openmpi 2 is-openmpi S"
//! ```
//!
//! Labels that are neither `--ours` nor `--peer` (our other transports)
//! are measured and listed, and compared with the best peer too, but are
//! never the "best peer" themselves.
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
use o2g_bench::stats::{median, Comparison, Sample};
use std::fmt::Write as _;

#[derive(Parser)]
#[command(about = "Run benchmark commands side by side and compare their Mop/s")]
struct Args {
    /// `LABEL=COMMAND`: leading `VAR=value` words of COMMAND set its environment.
    #[arg(long = "run", required_unless_present = "from_csv")]
    runs: Vec<String>,
    /// Run nothing: judge the measurements of this CSV (label,rep,mops),
    /// as another harness wrote them (the cluster's IS).
    #[arg(long, conflicts_with = "runs")]
    from_csv: Option<std::path::PathBuf>,
    /// Repetitions of each command.
    #[arg(long, default_value_t = 10)]
    reps: usize,
    /// The label whose verdict against the best peer is the headline.
    #[arg(long)]
    ours: Option<String>,
    /// A label that is another MPI library, to compare ours with.
    #[arg(long = "peer")]
    peers: Vec<String>,
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

/// The measurements of a `label,rep,mops` CSV, labels in first-seen order.
fn from_csv(text: &str) -> Result<Vec<Config>, String> {
    let mut configs: Vec<Config> = Vec::new();
    for (n, line) in text.lines().enumerate().skip(1) {
        let fields: Vec<&str> = line.split(',').collect();
        let [label, _rep, mops] = fields[..] else {
            return Err(format!("line {}: expected label,rep,mops", n + 1));
        };
        let mops: f64 = mops
            .trim()
            .parse()
            .map_err(|_| format!("line {}: {mops:?} is not a number", n + 1))?;
        match configs.iter_mut().find(|c| c.label == label) {
            Some(c) => c.mops.push(mops),
            None => {
                let mut c = parse_run(&format!("{label}=-"))?;
                c.mops.push(mops);
                configs.push(c);
            }
        }
    }
    Ok(configs)
}

/// The peer with the highest median, if any peer measured anything.
fn best_peer<'a>(configs: &'a [Config], peers: &[String]) -> Option<&'a Config> {
    configs
        .iter()
        .filter(|c| peers.contains(&c.label) && !c.mops.is_empty())
        .max_by(|a, b| median(&a.mops).total_cmp(&median(&b.mops)))
}

/// The comparison table: every label's median and interval, and for each
/// label that is not a peer, its ratio to the best peer with a verdict;
/// then the headline for `ours`.
fn table(configs: &[Config], peers: &[String], ours: Option<&str>) -> String {
    let best = best_peer(configs, peers);
    let mut out = format!(
        "{:<16} {:>9} {:>19} {:>6}   {}\n",
        "label",
        "Mop/s",
        "95% interval",
        "runs",
        best.map_or("(no peer measured)".to_owned(), |b| format!(
            "vs best peer ({}): ratio [95% interval] verdict",
            b.label
        ))
    );
    for c in configs {
        let s = Sample::new(&c.mops);
        let runs = format!("{}/{}", c.mops.len(), c.mops.len() + c.failures);
        let vs = match best {
            Some(b) if !peers.contains(&c.label) && !c.mops.is_empty() => {
                let v = Comparison::new(&c.mops, &b.mops, true);
                format!("{:.2}x [{:.2}-{:.2}] {}", v.ratio, v.low, v.high, v.verdict)
            }
            _ => "-".to_owned(),
        };
        let _ = writeln!(
            out,
            "{:<16} {:>9.2} {:>19} {:>6}   {vs}",
            c.label,
            s.median,
            format!("{:.2}-{:.2}", s.low, s.high),
            runs
        );
    }
    if let (Some(ours), Some(b)) = (ours, best) {
        if let Some(c) = configs
            .iter()
            .find(|c| c.label == ours && !c.mops.is_empty())
        {
            let v = Comparison::new(&c.mops, &b.mops, true);
            let _ = writeln!(
                out,
                "\n{ours}: {:.2}x the best peer ({}), 95% interval {:.2}-{:.2}: {}",
                v.ratio, b.label, v.low, v.high, v.verdict
            );
        }
    }
    out
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
    if let Some(path) = &args.from_csv {
        let configs = match std::fs::read_to_string(path)
            .map_err(|e| e.to_string())
            .and_then(|text| from_csv(&text))
        {
            Ok(c) => c,
            Err(e) => {
                eprintln!("o2g-compare: {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
        };
        print!("{}", table(&configs, &args.peers, args.ours.as_deref()));
        return ExitCode::SUCCESS;
    }
    let unknown = args
        .ours
        .iter()
        .chain(&args.peers)
        .find(|l| !configs.iter().any(|c| &&c.label == l));
    if let Some(label) = unknown {
        eprintln!("o2g-compare: --ours/--peer {label:?} names no --run label");
        return ExitCode::FAILURE;
    }
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
    print!("{}", table(&configs, &args.peers, args.ours.as_deref()));
    for c in configs.iter().filter(|c| c.hung > 0) {
        println!(
            "{}: {} repetition(s) verified, then hung and were killed after {} s (counted)",
            c.label, c.hung, args.timeout
        );
    }
    let _ = std::fs::remove_dir_all(&scratch);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn config(label: &str, mops: &[f64]) -> Config {
        let mut c = parse_run(&format!("{label}=true")).expect("spec");
        c.mops = mops.to_vec();
        c
    }

    #[test]
    fn ours_is_judged_against_the_best_peer_only() {
        let configs = [
            config(
                "o2g",
                &[20.0, 21.0, 20.5, 19.5, 20.2, 20.8, 19.9, 20.1, 20.4, 20.6],
            ),
            // Our other transport beats every peer, but is not a peer.
            config("sockets", &[40.0; 10]),
            config(
                "openmpi",
                &[10.0, 10.5, 9.5, 10.2, 9.8, 10.1, 9.9, 10.3, 10.0, 10.4],
            ),
            config("mpich", &[5.0; 10]),
        ];
        let peers = ["openmpi".to_owned(), "mpich".to_owned()];
        let t = table(&configs, &peers, Some("o2g"));
        assert!(t.contains("vs best peer (openmpi)"), "{t}");
        assert!(t.contains("o2g: 2.02x the best peer (openmpi)"), "{t}");
        assert!(
            t.lines().last().is_some_and(|l| l.ends_with("faster")),
            "{t}"
        );
        // Peers get no verdict of their own.
        let mpich = t.lines().find(|l| l.starts_with("mpich")).expect("row");
        assert!(mpich.ends_with(" -"), "{mpich}");
    }

    #[test]
    fn a_csv_is_read_back_by_label() {
        let c = from_csv("label,rep,mops\no2g,1,3.5\nmpich,1,2\no2g,2,4\n").expect("csv");
        assert_eq!(c.len(), 2);
        assert_eq!(
            (c[0].label.as_str(), &c[0].mops[..]),
            ("o2g", &[3.5, 4.0][..])
        );
        assert!(from_csv("label,rep,mops\no2g,1,x\n").is_err());
    }

    #[test]
    fn overlapping_runs_get_no_verdict() {
        let configs = [
            config(
                "o2g",
                &[10.0, 20.0, 10.5, 19.0, 11.0, 21.0, 10.2, 20.5, 9.8, 19.5],
            ),
            config(
                "openmpi",
                &[15.0, 14.0, 16.0, 15.5, 14.5, 15.2, 14.8, 15.1, 16.2, 13.9],
            ),
        ];
        let t = table(&configs, &["openmpi".to_owned()], Some("o2g"));
        assert!(t.trim_end().ends_with("cannot tell"), "{t}");
    }
}
