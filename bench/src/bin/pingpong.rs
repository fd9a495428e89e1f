//! MPI ping-pong between ranks 0 and 1: the median half round trip and the
//! bandwidth it implies, per message size, over whatever transport
//! `O2G_TRANSPORT` selects.
//!
//! ```text
//! O2G_TRANSPORT=o2g o2grun -n 2 o2g-pingpong --max 16M
//! ```

use std::time::Duration;

use clap::Parser;
use o2g_bench::{median, print_pingpong_header, print_pingpong_row, PingPongRow, SweepArgs};

#[derive(Parser)]
#[command(about = "MPI ping-pong: half round trip and bandwidth per size")]
struct Args {
    #[command(flatten)]
    sweep: SweepArgs,
}

fn main() -> std::process::ExitCode {
    o2g_bench::finish("o2g-pingpong", run())
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let universe = mpi::initialize()?;
    let world = universe.world();
    if world.size() < 2 {
        return Err("o2g-pingpong needs two ranks (o2grun -n 2)".into());
    }
    let rank = world.rank();
    let args = args.sweep;
    let plan = args.plan();
    if rank == 0 {
        print_pingpong_header(
            &format!("MPI ping-pong, transport {}", universe.transport_name()),
            args.reps,
        );
    }
    let mut buf = vec![0u8; plan.iter().map(|p| p.0).max().unwrap_or(0)];
    let mut rows = Vec::with_capacity(plan.len());
    for &(size, iters) in &plan {
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
            let row = PingPongRow {
                size,
                half_rtt: median(&mut samples),
            };
            print_pingpong_row(&row);
            rows.push(row);
        }
    }
    if rank == 0 {
        args.record(universe.transport_name(), &rows)?;
    }
    universe.finalize()?;
    Ok(())
}
