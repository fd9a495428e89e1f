//! NAS-IS-style integer sort over the `mpi` crate (see `o2g_bench::is`).
//!
//! ```text
//! O2G_TRANSPORT=o2g o2grun -n 4 o2g-is S
//! ```
//!
//! Prints NPB's summary lines (`Mop/s total`, `Verification`) and exits
//! non-zero when verification fails. With a process count that is not a
//! power of two, the largest power of two below it works and the rest
//! wait, as NPB does.

use std::process::ExitCode;

use clap::Parser;
use mpi::Color;
use o2g_bench::is::class::{Class, ITERATIONS};
use o2g_bench::is::sort::IntegerSort;

#[derive(Parser)]
#[command(about = "NAS-IS-style integer sort (NPB 3.4 IS, MPI) on the o2g MPI library")]
struct Args {
    /// Problem class: S, W, A, B or C.
    class: Class,
    /// Print each iteration's number as NPB does (NPB: classes above S;
    /// here every class, which bench-profile uses to start sampling).
    #[arg(long)]
    progress: bool,
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("o2g-is: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<bool, Box<dyn std::error::Error>> {
    let args = Args::parse();
    let class = args.class;
    let universe = mpi::initialize()?;
    let world = universe.world();
    let total = world.size() as usize;
    let active = 1usize << total.ilog2();
    if class.total_keys() % active != 0 || class.total_keys() / active < 2 * ITERATIONS as usize {
        return Err(format!("class {class} cannot run on {active} processes").into());
    }
    let color = if (world.rank() as usize) < active {
        Color::With(0)
    } else {
        Color::Undefined
    };
    let Some(work) = world.split(color, world.rank())? else {
        universe.finalize()?;
        return Ok(true);
    };
    let root = work.rank() == 0;
    if root {
        if let Err(e) = o2g_bench::is::hot::check_placement() {
            eprintln!(
                "o2g-is: warning: {e}: under QEMU's TCG this run may take up to twice as long"
            );
        }
        println!("\n\n NAS Parallel Benchmarks 3.4 -- IS Benchmark (o2g, Rust)\n");
        println!(" Size:  {}  (class {class})", class.total_keys());
        println!(" Iterations:   {ITERATIONS}");
        println!(" Total number of processes:  {total}");
        if active != total {
            println!(" WARNING: Number of processes is not a power of two ({active} active)");
        }
        println!(" Transport:  {}", universe.transport_name());
    }
    let mut is = IntegerSort::new(&work, class);
    let show = args.progress && root;
    let report = is.run(|it| {
        if show {
            println!("        {it}");
        }
    })?;
    // Only rank 0 holds the reduced counts: every rank exits with its verdict.
    let mut verdict = [i32::from(report.verified())];
    work.broadcast_into(&mut verdict, 0)?;
    let ok = verdict[0] == 1;
    if root {
        println!("\n\n IS Benchmark Completed");
        println!(" Class           =  {class}");
        println!(" Size            =  {}", class.total_keys());
        println!(" Iterations      =  {ITERATIONS}");
        println!(" Time in seconds =  {:.2}", report.seconds);
        println!(" Total processes =  {total}");
        println!(" Active processes=  {active}");
        println!(" Mop/s total     =  {:.2}", class.mops(report.seconds));
        println!(
            " Mop/s/process   =  {:.2}",
            class.mops(report.seconds) / active as f64
        );
        println!(" Operation type  =  keys ranked");
        println!(
            " Verification    =  {}",
            if ok { "SUCCESSFUL" } else { "UNSUCCESSFUL" }
        );
        if !ok {
            println!(" ({} of {} checks passed)", report.passed, report.required);
        }
    }
    drop(work);
    universe.finalize()?;
    Ok(ok)
}
