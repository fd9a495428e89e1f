//! Windowed bandwidth between ranks 0 and 1, in the manner of OSU's
//! `osu_bw` and `osu_bibw`: rank 0 starts a window of nonblocking sends of
//! one size, rank 1 a window of nonblocking receives; both wait for all,
//! and rank 1 answers each window with an empty message. With
//! `--bidirectional` both ranks send and receive a window at once; with
//! `--sends-first` too, rank 1 posts its sends before its receives.
//!
//! ```text
//! O2G_TRANSPORT=o2g o2grun -n 2 o2g-bandwidth --max 16M
//! ```
//!
//! Each receive of a window has its own buffer (an MPI program may not
//! receive twice into one), so the window shrinks for large messages to
//! keep it within `--window-bytes`; `bench/c/bandwidth.c` does the same,
//! so both languages and every library move the same messages.
//!
//! Besides the rates, a `cost,...` line per size gives what the timed
//! repetitions cost both ranks together (getrusage): CPU microseconds per
//! MB moved and context switches per message.

use clap::Parser;
use mpi::request::wait_all;
use mpi::SystemOperation;
use o2g_bench::stats::Sample;
use o2g_bench::usage::Usage;
use o2g_bench::{parse_size, power_of_two_sizes, SizeList};

#[derive(Parser)]
#[command(about = "Windowed MPI bandwidth between ranks 0 and 1, per size")]
struct Args {
    /// Sizes to measure, e.g. "64K,1M" (default: powers of two 1 B to --max).
    #[arg(long)]
    sizes: Option<SizeList>,
    /// Largest size of the default sweep (K/M/G suffixes).
    #[arg(long, default_value = "16M", value_parser = parse_size)]
    max: usize,
    /// Messages in flight per window.
    #[arg(long, default_value_t = 64)]
    window: usize,
    /// Most bytes one window may hold (the window shrinks above it).
    #[arg(long, default_value = "64M", value_parser = parse_size)]
    window_bytes: usize,
    /// Bytes each repetition moves one way (sets the windows per repetition).
    #[arg(long, default_value = "64M", value_parser = parse_size)]
    budget: usize,
    /// Timed repetitions per size (after one untimed); the median and its
    /// 95% interval are reported.
    #[arg(long, default_value_t = 5)]
    reps: usize,
    /// Both ranks send and receive a window at once (`osu_bibw`).
    #[arg(long)]
    bidirectional: bool,
    /// With `--bidirectional`, rank 1 posts its sends before its receives,
    /// as one side of a shift exchange does (rank 0 receives first).
    #[arg(long, requires = "bidirectional")]
    sends_first: bool,
}

/// Messages per window and windows per repetition at `size`.
fn plan(args: &Args, size: usize) -> (usize, usize) {
    let window = (args.window_bytes / size.max(1)).clamp(1, args.window.max(1));
    let windows = (args.budget / (window * size.max(1))).clamp(2, 1000);
    (window, windows)
}

fn main() -> std::process::ExitCode {
    o2g_bench::finish("o2g-bandwidth", run())
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let universe = mpi::initialize()?;
    let world = universe.world();
    if world.size() != 2 {
        return Err("o2g-bandwidth needs exactly two ranks (o2grun -n 2)".into());
    }
    let rank = world.rank();
    let peer = 1 - rank;
    let sizes = args.sizes.clone().map_or_else(
        || power_of_two_sizes(args.max).into_iter().skip(1).collect(),
        |l| l.0,
    );
    let what = if args.bidirectional {
        "bidirectional"
    } else {
        "unidirectional"
    };
    if rank == 0 {
        println!(
            "# MPI windowed {what} bandwidth, transport {}: median of {} repetitions, 95% interval",
            universe.transport_name(),
            args.reps
        );
        println!(
            "{:>10} {:>7} {:>12} {:>12} {:>12}",
            "bytes", "window", "MB/s", "low", "high"
        );
    }
    let largest = sizes.iter().copied().max().unwrap_or(0);
    let most = sizes
        .iter()
        .map(|&s| plan(&args, s).0 * s)
        .max()
        .unwrap_or(0);
    let send = vec![0x5au8; largest];
    let mut recv = vec![0u8; most];
    for &size in &sizes {
        let (window, windows) = plan(&args, size);
        let mut rates = Vec::with_capacity(args.reps);
        let mut before = Usage::default();
        for rep in 0..=args.reps {
            if rep == 1 {
                before = Usage::now();
            }
            world.barrier()?;
            let t0 = mpi::time();
            for _ in 0..windows {
                let receives = rank == 1 || args.bidirectional;
                let sends = rank == 0 || args.bidirectional;
                // In a scope, so the transport sends from `send` and
                // receives into `recv` directly, as a C program's would.
                let sends_first = args.sends_first && rank == 1;
                mpi::scope::scope(|s| -> mpi::Result<()> {
                    let mut requests = Vec::with_capacity(2 * window);
                    if sends && sends_first {
                        for _ in 0..window {
                            requests.push(world.isend_scoped(s, &send[..size], peer, 1)?);
                        }
                    }
                    if receives {
                        for chunk in recv[..window * size].chunks_mut(size.max(1)) {
                            requests.push(world.irecv_scoped(s, chunk, peer, 1)?);
                        }
                    }
                    if sends && !sends_first {
                        for _ in 0..window {
                            requests.push(world.isend_scoped(s, &send[..size], peer, 1)?);
                        }
                    }
                    wait_all(requests).map(drop)
                })?;
                if rank == 0 {
                    world.recv::<u8>(&mut [], 1, 2)?;
                } else {
                    world.send::<u8>(&[], 0, 2)?;
                }
            }
            let secs = mpi::time() - t0;
            let moved =
                (windows * window * size) as f64 * if args.bidirectional { 2.0 } else { 1.0 };
            if rep > 0 {
                rates.push(moved / secs / 1e6);
            }
        }
        // What the timed repetitions cost both ranks together.
        let mine = Usage::now().since(&before);
        let mut both = [0.0; 2];
        let mine = [mine.cpu.as_secs_f64() * 1e6, mine.switches as f64];
        world.all_reduce_into(&mine, &mut both, &SystemOperation::Sum)?;
        if rank == 0 {
            let s = Sample::new(&rates);
            println!(
                "{size:>10} {window:>7} {:>12.1} {:>12.1} {:>12.1}",
                s.median, s.low, s.high
            );
            println!(
                "csv,{what},{},{size},{}",
                universe.transport_name(),
                rates
                    .iter()
                    .map(|r| format!("{r:.1}"))
                    .collect::<Vec<_>>()
                    .join(";")
            );
            let msgs =
                (args.reps * windows * window) as f64 * if args.bidirectional { 2.0 } else { 1.0 };
            println!(
                "cost,{what},{},{size},{:.1},{:.3}",
                universe.transport_name(),
                both[0] / (msgs * size as f64 / 1e6),
                both[1] / msgs
            );
        }
    }
    universe.finalize()?;
    Ok(())
}
