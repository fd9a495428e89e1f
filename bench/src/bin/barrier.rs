//! `MPI_Barrier` cost on the current transport: the median over
//! repetitions of the mean time per barrier, printed by rank 0 and, with
//! `--csv-dir`, appended to DIR/barrier.csv as `series,ranks,us` — the
//! form `o2g-dimmnet-bench barrier --join` merges with the raw AOTF
//! barrier. Over `dimmnet` the MPI barrier is the Fagus AOTF barrier.
//!
//! ```text
//! for n in 2 4 8; do O2G_TRANSPORT=sockets-epoll o2grun -n $n o2g-barrier --csv-dir out; done
//! ```

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use o2g_bench::median;
use o2g_bench::report::Report;

#[derive(Parser)]
#[command(about = "MPI_Barrier cost per call on the current transport")]
struct Args {
    /// Barriers per repetition.
    #[arg(long, default_value_t = 1000)]
    iters: u32,
    /// Repetitions; the median is reported.
    #[arg(long, default_value_t = 5)]
    reps: usize,
    /// Also append the result to DIR/barrier.csv.
    #[arg(long, value_name = "DIR")]
    csv_dir: Option<PathBuf>,
}

fn main() -> std::process::ExitCode {
    o2g_bench::finish("o2g-barrier", run())
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let universe = mpi::initialize()?;
    let world = universe.world();
    let mut samples = Vec::with_capacity(args.reps);
    // One untimed repetition first.
    for rep in 0..=args.reps {
        world.barrier()?;
        let t0 = mpi::time();
        for _ in 0..args.iters {
            world.barrier()?;
        }
        if rep > 0 {
            samples.push(Duration::from_secs_f64(
                (mpi::time() - t0) / f64::from(args.iters.max(1)),
            ));
        }
    }
    if world.rank() == 0 {
        let us = median(&mut samples).as_secs_f64() * 1e6;
        let name = format!("MPI_Barrier ({})", universe.transport_name());
        println!("{name}: {} ranks, {us:.2} us per barrier", world.size());
        if let Some(dir) = &args.csv_dir {
            std::fs::create_dir_all(dir)?;
            let mut r = Report::new("barrier", "ranks", "us", false);
            r.push(&name, f64::from(world.size()), us);
            r.append_csv(&dir.join("barrier.csv"))?;
        }
    }
    universe.finalize()?;
    Ok(())
}
