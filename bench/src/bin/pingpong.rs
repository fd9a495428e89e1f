//! MPI ping-pong between ranks 0 and 1: the median half round trip and the
//! bandwidth it implies, per message size, over whatever transport
//! `O2G_TRANSPORT` selects.
//!
//! ```text
//! O2G_TRANSPORT=o2g o2grun -n 2 o2g-pingpong --max 16M
//! ```

use std::time::Duration;

use clap::Parser;
use o2g_bench::{
    iterations, median, parse_size, power_of_two_sizes, print_pingpong_header, print_pingpong_row,
    PingPongRow, SizeList,
};

#[derive(Parser)]
#[command(about = "MPI ping-pong: half round trip and bandwidth per size")]
struct Args {
    /// Sizes to measure, e.g. "8,1M" (default: 0 and powers of two to --max).
    #[arg(long)]
    sizes: Option<SizeList>,
    /// Largest size of the default sweep (K/M/G suffixes).
    #[arg(long, default_value = "16M", value_parser = parse_size)]
    max: usize,
    /// Repetitions per size; the median is reported.
    #[arg(long, default_value_t = 5)]
    reps: usize,
    /// Most round trips per repetition (small messages).
    #[arg(long, default_value_t = 1000)]
    max_iters: usize,
    /// Bytes each repetition moves one way, which sets the round trips of
    /// large messages.
    #[arg(long, default_value = "16M", value_parser = parse_size)]
    budget: usize,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let universe = mpi::initialize()?;
    let world = universe.world();
    if world.size() < 2 {
        return Err("o2g-pingpong needs two ranks (o2grun -n 2)".into());
    }
    let rank = world.rank();
    let sizes = args
        .sizes
        .map(|l| l.0)
        .unwrap_or_else(|| power_of_two_sizes(args.max));
    if rank == 0 {
        print_pingpong_header(
            &format!("MPI ping-pong, transport {}", universe.transport_name()),
            args.reps,
        );
    }
    let mut buf = vec![0u8; sizes.iter().copied().max().unwrap_or(0)];
    for &size in &sizes {
        let iters = iterations(size, args.max_iters, args.budget);
        let msg = &mut buf[..size];
        let mut samples = Vec::with_capacity(args.reps);
        // One untimed repetition first: connections and buffers warm up.
        for rep in 0..=args.reps {
            world.barrier()?;
            let t0 = mpi::time();
            for _ in 0..iters {
                if rank == 0 {
                    world.send(msg, 1, 1)?;
                    world.recv(msg, 1, 1)?;
                } else if rank == 1 {
                    world.recv(msg, 0, 1)?;
                    world.send(msg, 0, 1)?;
                }
            }
            let half = (mpi::time() - t0) / iters as f64 / 2.0;
            if rep > 0 {
                samples.push(Duration::from_secs_f64(half));
            }
        }
        if rank == 0 {
            print_pingpong_row(&PingPongRow {
                size,
                half_rtt: median(&mut samples),
            });
        }
    }
    universe.finalize()?;
    Ok(())
}
