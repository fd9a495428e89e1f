//! Shared pieces of the o2g benchmarks: message-size sweeps, repetition
//! statistics and the table every benchmark prints.
//!
//! Figures are printed, never asserted: these machines are noisy and the
//! guests are emulated, so only ratios measured in one run mean much.

use std::time::Duration;

pub mod is;
pub mod report;
pub mod stats;
pub mod tcp;
pub mod usage;

/// Ends a benchmark's `main` with `result`: an error goes to stderr in
/// words, after the program's `name`, and the exit status fails. (A
/// `main` that returns the error prints its `Debug` form instead.)
pub fn finish<E: std::fmt::Display>(name: &str, result: Result<(), E>) -> std::process::ExitCode {
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{name}: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Sizes `0, 1, 2, 4, ..., max` (powers of two up to `max`, with 0 first).
pub fn power_of_two_sizes(max: usize) -> Vec<usize> {
    std::iter::once(0)
        .chain(
            (0..usize::BITS)
                .map(|s| 1usize << s)
                .take_while(|&s| s <= max),
        )
        .collect()
}

/// Parses `"8,1024,1M,16M"`: numbers with an optional K/M/G suffix.
///
/// # Errors
///
/// The first item that is not such a number.
pub fn parse_sizes(list: &str) -> Result<Vec<usize>, String> {
    list.split(',')
        .map(|item| {
            let item = item.trim();
            let (digits, shift) = match item.chars().last() {
                Some('K' | 'k') => (&item[..item.len() - 1], 10),
                Some('M' | 'm') => (&item[..item.len() - 1], 20),
                Some('G' | 'g') => (&item[..item.len() - 1], 30),
                _ => (item, 0),
            };
            digits
                .parse::<usize>()
                .ok()
                .and_then(|n| n.checked_mul(1 << shift))
                .ok_or_else(|| format!("{item:?} is not a size"))
        })
        .collect()
}

/// A list of sizes as one command-line value (clap would take a bare
/// `Vec` for a repeated option).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SizeList(pub Vec<usize>);

impl std::str::FromStr for SizeList {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        parse_sizes(s).map(SizeList)
    }
}

/// Parses one size, as [`parse_sizes`] does each item.
///
/// # Errors
///
/// Not exactly one size.
pub fn parse_size(s: &str) -> Result<usize, String> {
    match parse_sizes(s)?.as_slice() {
        [one] => Ok(*one),
        _ => Err(format!("{s:?}: one size expected")),
    }
}

/// Round trips to time for one repetition at `size` bytes: many for small
/// messages, few for large ones, so each repetition moves about `budget`
/// bytes.
pub fn iterations(size: usize, max_iters: usize, budget: usize) -> usize {
    (budget / size.max(1)).clamp(2, max_iters.max(2))
}

/// The median of `samples` (which it sorts).
pub fn median(samples: &mut [Duration]) -> Duration {
    samples.sort_unstable();
    match samples.len() {
        0 => Duration::ZERO,
        n if n % 2 == 1 => samples[n / 2],
        n => (samples[n / 2 - 1] + samples[n / 2]) / 2,
    }
}

/// The sweep options both ping-pong programs take.
#[derive(Clone, Debug, clap::Args)]
pub struct SweepArgs {
    /// Sizes to measure, e.g. "8,1M" (default: 0 and powers of two to --max).
    #[arg(long)]
    pub sizes: Option<SizeList>,
    /// Largest size of the default sweep (K/M/G suffixes).
    #[arg(long, default_value = "16M", value_parser = parse_size)]
    pub max: usize,
    /// Repetitions per size; the median is reported.
    #[arg(long, default_value_t = 5)]
    pub reps: usize,
    /// Most round trips per repetition (small messages).
    #[arg(long, default_value_t = 1000)]
    pub max_iters: usize,
    /// Bytes each repetition moves one way, which sets the round trips of
    /// large messages (K/M/G suffixes).
    #[arg(long, default_value = "16M", value_parser = parse_size)]
    pub budget: usize,
    /// Also append the results to DIR/pingpong-latency.csv and
    /// DIR/pingpong-bandwidth.csv (long form: series,bytes,value).
    #[arg(long, value_name = "DIR")]
    pub csv_dir: Option<std::path::PathBuf>,
}

impl SweepArgs {
    /// Appends `rows` as the series `name` to the CSV files of `--csv-dir`,
    /// if given.
    ///
    /// # Errors
    ///
    /// Writing a file failed.
    pub fn record(&self, name: &str, rows: &[PingPongRow]) -> std::io::Result<()> {
        let Some(dir) = &self.csv_dir else {
            return Ok(());
        };
        std::fs::create_dir_all(dir)?;
        let mut latency = report::Report::new("ping-pong", "bytes", "half round trip (us)", true);
        let mut bandwidth = report::Report::new("ping-pong", "bytes", "MB/s", true);
        for r in rows {
            latency.push(name, r.size as f64, r.half_rtt.as_secs_f64() * 1e6);
            if r.size > 0 {
                bandwidth.push(name, r.size as f64, r.mb_per_s());
            }
        }
        latency.append_csv(&dir.join("pingpong-latency.csv"))?;
        bandwidth.append_csv(&dir.join("pingpong-bandwidth.csv"))
    }

    /// (size, round trips per repetition) for every size of the sweep.
    pub fn plan(&self) -> Vec<(usize, usize)> {
        let sizes = self
            .sizes
            .clone()
            .map_or_else(|| power_of_two_sizes(self.max), |l| l.0);
        sizes
            .into_iter()
            .map(|s| (s, iterations(s, self.max_iters, self.budget)))
            .collect()
    }
}

/// One row of a ping-pong table.
#[derive(Clone, Copy, Debug)]
pub struct PingPongRow {
    /// Message size in bytes.
    pub size: usize,
    /// Median half round trip.
    pub half_rtt: Duration,
}

impl PingPongRow {
    /// Bandwidth in MB/s (10^6 bytes per second) that the half round trip
    /// implies.
    pub fn mb_per_s(&self) -> f64 {
        let secs = self.half_rtt.as_secs_f64();
        if secs > 0.0 {
            self.size as f64 / secs / 1e6
        } else {
            0.0
        }
    }
}

/// Prints the header of a ping-pong table for `what`.
pub fn print_pingpong_header(what: &str, reps: usize) {
    println!("# {what}: median of {reps} repetitions");
    println!("{:>10} {:>14} {:>12}", "bytes", "half-rtt(us)", "MB/s");
}

/// Prints one row of a ping-pong table.
pub fn print_pingpong_row(row: &PingPongRow) {
    println!(
        "{:>10} {:>14.2} {:>12.2}",
        row.size,
        row.half_rtt.as_secs_f64() * 1e6,
        row.mb_per_s()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_powers_of_two_after_zero() {
        assert_eq!(power_of_two_sizes(8), vec![0, 1, 2, 4, 8]);
        assert_eq!(power_of_two_sizes(0), vec![0]);
        assert_eq!(power_of_two_sizes(16 << 20).len(), 26);
    }

    #[test]
    fn size_lists_take_suffixes() {
        assert_eq!(
            parse_sizes("8,1K,1M,2G"),
            Ok(vec![8, 1024, 1 << 20, 2 << 30])
        );
        assert!(parse_sizes("8,x").is_err());
        assert!(parse_sizes("").is_err());
    }

    #[test]
    fn median_of_odd_and_even() {
        let ms = Duration::from_millis;
        assert_eq!(median(&mut [ms(3), ms(1), ms(2)]), ms(2));
        assert_eq!(
            median(&mut [ms(4), ms(1), ms(2), ms(3)]),
            Duration::from_micros(2500)
        );
        assert_eq!(median(&mut []), Duration::ZERO);
    }

    #[test]
    fn iterations_shrink_with_size() {
        assert_eq!(iterations(0, 1000, 1 << 20), 1000);
        assert_eq!(iterations(1 << 20, 1000, 4 << 20), 4);
        assert_eq!(iterations(64 << 20, 1000, 4 << 20), 2);
    }

    #[test]
    fn bandwidth_from_half_round_trip() {
        let row = PingPongRow {
            size: 1_000_000,
            half_rtt: Duration::from_millis(10),
        };
        assert!((row.mb_per_s() - 100.0).abs() < 1e-9);
    }
}
