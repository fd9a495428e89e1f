//! Judges a sweep: for every x (message size, say) the median of each
//! series with its 95% interval, and for each of ours the ratio to the
//! best peer at that x with its interval and a verdict (faster, slower,
//! cannot tell).
//!
//! ```text
//! o2g-judge --csv bandwidth-runs.csv --ours o2g --ours o2g-C \
//!     --peer openmpi --peer mpich
//! ```
//!
//! The CSV is long-form with one line per repetition: `series,x,rep,value`
//! (a header line first). Prints a table; the figures come from the CSV
//! alone, so a reader can recompute them.

use std::collections::BTreeMap;
use std::process::ExitCode;

use clap::Parser;
use o2g_bench::stats::{median, Comparison, Sample};

#[derive(Parser)]
#[command(about = "Medians, intervals and verdicts of a sweep's repetitions")]
struct Args {
    /// The repetitions: `series,x,rep,value` per line after a header.
    #[arg(long)]
    csv: std::path::PathBuf,
    /// Series whose verdicts against the best peer are wanted.
    #[arg(long, required = true)]
    ours: Vec<String>,
    /// Series that are other MPI libraries.
    #[arg(long = "peer", required = true)]
    peers: Vec<String>,
    /// Smaller values are better (times), instead of larger (bandwidths).
    #[arg(long)]
    lower_is_better: bool,
}

/// Repetitions by x, then by series (in first-seen order).
type Runs = BTreeMap<u64, Vec<(String, Vec<f64>)>>;

fn parse(text: &str) -> Result<Runs, String> {
    let mut runs = Runs::new();
    for (n, line) in text.lines().enumerate().skip(1) {
        let bad = || format!("line {}: expected series,x,rep,value: {line:?}", n + 1);
        let fields: Vec<&str> = line.split(',').collect();
        let [series, x, _rep, value] = fields[..] else {
            return Err(bad());
        };
        let x: u64 = x.trim().parse().map_err(|_| bad())?;
        let value: f64 = value.trim().parse().map_err(|_| bad())?;
        let at = runs.entry(x).or_default();
        match at.iter_mut().find(|(s, _)| s == series) {
            Some((_, v)) => v.push(value),
            None => at.push((series.to_owned(), vec![value])),
        }
    }
    Ok(runs)
}

fn judge(runs: &Runs, args: &Args) -> String {
    use std::fmt::Write as _;
    let higher = !args.lower_is_better;
    let mut out = String::new();
    for (x, series) in runs {
        let peers: Vec<&(String, Vec<f64>)> = series
            .iter()
            .filter(|(s, _)| args.peers.contains(s))
            .collect();
        let best = peers.iter().copied().max_by(|a, b| {
            let (ma, mb) = (median(&a.1), median(&b.1));
            if higher {
                ma.total_cmp(&mb)
            } else {
                mb.total_cmp(&ma)
            }
        });
        let _ = writeln!(out, "x = {x}");
        for (name, values) in series {
            let s = Sample::new(values);
            let vs = match best {
                Some((peer, theirs)) if args.ours.contains(name) => {
                    let c = Comparison::new(values, theirs, higher);
                    format!(
                        "{:.2}x {peer} [{:.2}-{:.2}] {}",
                        c.ratio, c.low, c.high, c.verdict
                    )
                }
                _ => String::new(),
            };
            let _ = writeln!(
                out,
                "  {name:<16} {:>12.2} [{:.2}-{:.2}] n={}  {vs}",
                s.median, s.low, s.high, s.n
            );
        }
    }
    out
}

fn main() -> ExitCode {
    let args = Args::parse();
    match std::fs::read_to_string(&args.csv)
        .map_err(|e| e.to_string())
        .and_then(|t| parse(&t))
    {
        Ok(runs) => {
            print!("{}", judge(&runs, &args));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("o2g-judge: {}: {e}", args.csv.display());
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_size_gets_its_best_peer_and_a_verdict() {
        let mut csv = String::from("series,bytes,rep,MB/s\n");
        for rep in 0..10 {
            let wobble = f64::from(rep % 3);
            for (series, at_small, at_large) in [
                ("o2g", 100.0, 5000.0),
                ("openmpi", 150.0, 2000.0),
                ("mpich", 120.0, 4900.0),
            ] {
                csv += &format!("{series},8,{rep},{}\n", at_small + wobble);
                csv += &format!("{series},1048576,{rep},{}\n", at_large + wobble);
            }
        }
        let runs = parse(&csv).expect("csv");
        let args = Args::parse_from([
            "o2g-judge",
            "--csv",
            "-",
            "--ours",
            "o2g",
            "--peer",
            "openmpi",
            "--peer",
            "mpich",
        ]);
        let t = judge(&runs, &args);
        let small = t.split("x = 1048576").next().expect("small part");
        assert!(
            small.contains("openmpi [") && small.contains("slower"),
            "{t}"
        );
        let large = t.split("x = 1048576").nth(1).expect("large part");
        assert!(
            large.contains("1.02x mpich") && large.contains("faster"),
            "{t}"
        );
        assert!(parse("h\no2g,x,1,2\n").is_err());
    }
}
