//! Draws a long-form CSV (`series,<x>,<y>`, as the sweep benchmarks write
//! with `--csv-dir`) as an SVG line chart, and prints its table.
//!
//! ```text
//! o2g-chart --csv results/<date>/pingpong-latency.csv --log-x \
//!     --title "8 B to 16 MiB ping-pong" --out pingpong-latency.svg
//! ```

use std::path::PathBuf;

use clap::Parser;
use o2g_bench::report::Report;

#[derive(Parser)]
#[command(about = "Line chart (SVG) of a benchmark's long-form CSV")]
struct Args {
    /// The CSV: a `series,<x>,<y>` header, then one point per line.
    #[arg(long)]
    csv: PathBuf,
    /// Chart title.
    #[arg(long)]
    title: String,
    /// Draw x on a log2 scale (message sizes).
    #[arg(long)]
    log_x: bool,
    /// Draw y on a log10 scale (latencies).
    #[arg(long)]
    log_y: bool,
    /// Where to write the SVG.
    #[arg(long)]
    out: PathBuf,
}

fn main() -> std::process::ExitCode {
    o2g_bench::finish("o2g-chart", run())
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let a = Args::parse();
    let text = std::fs::read_to_string(&a.csv)?;
    let mut report = Report::from_csv(&a.title, a.log_x, &text)
        .map_err(|e| format!("{}: {e}", a.csv.display()))?;
    report.log_y = a.log_y;
    print!("{}", report.table());
    report.draw(&a.out)?;
    println!("wrote {}", a.out.display());
    Ok(())
}
