//! Asynchronous progress, measured: how much of a nonblocking transfer
//! goes on while the program computes and makes no MPI calls.
//!
//! ```text
//! O2G_TRANSPORT=o2g o2grun -n 2 o2g-overlap --max 16M
//! ```
//!
//! Rank 0 computes, rank 1 is its peer. For every size and side:
//!
//! 1. `t_comm`: after a barrier, rank 0 posts its operation (a scoped
//!    receive on the receiver side, a scoped send on the sender side) and
//!    waits for it at once; rank 1 posts the matching operation and waits.
//!    Rank 0 times from its post to the end of its wait; the median of the
//!    repetitions (after one untimed) is `t_comm`.
//! 2. `T = --factor × t_comm` (1.2 by default), so that the compute alone
//!    would cover the transfer.
//! 3. `t_total`: the same, but rank 0 spins on the clock for `T` between
//!    its post and its wait, with no MPI call; rank 1 still posts and
//!    waits at once.
//!
//! The overlap is `clamp((t_comm + T − t_total) / t_comm, 0, 1)`: the
//! share of the transfer hidden behind the compute. 100% means
//! `t_total ≈ T`, so the library moved the whole message while the
//! program did not call it (a kernel that places the data, or a progress
//! thread); 0% means nothing moved until the wait. The CPU time each
//! process used (`getrusage(RUSAGE_SELF)`, all its threads) in the
//! measured window shows what that progress costs: rank 0's includes the
//! compute `T` itself, and a progress thread adds to it.
//!
//! Rank 0 prints a table and, per size and side, the line
//!
//! ```text
//! csv,<side>,<label>,<bytes>,<overlap%>,<t_comm_us>,<t_total_us>,<cpu_us>,<peer_cpu_us>
//! ```
//!
//! (medians; `cpu_us` is rank 0's, `peer_cpu_us` rank 1's from its barrier
//! to the end of its wait), and the repetitions themselves as
//!
//! ```text
//! reps,<side>,<label>,<bytes>,<t_comm;...>,<t_total;...>,<cpu;...>,<peer_cpu;...>
//! ```
//!
//! `bench/c/overlap.c` is the same program in C, for Open MPI, MPICH and
//! our `libmpi_abi`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use clap::{Parser, ValueEnum};
use mpi::Communicator;
use o2g_bench::stats::Sample;
use o2g_bench::usage::Usage;
use o2g_bench::{parse_size, SizeList};

/// Tag of the measured messages.
const TAG: i32 = 7;
/// Tag of rank 1's CPU times, sent to rank 0 after each size.
const TAG_REPORT: i32 = 8;

/// Which rank computes while its operation is in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Side {
    /// Rank 0 receives and computes; rank 1 sends at once.
    Receiver,
    /// Rank 0 sends and computes; rank 1 receives at once.
    Sender,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Receiver => "receiver",
            Side::Sender => "sender",
        }
    }
}

#[derive(Parser)]
#[command(
    about = "Share of a nonblocking transfer done while the program computes without MPI calls"
)]
struct Args {
    /// Sizes to measure, e.g. "64K,1M" (default: powers of 4 from --min to --max).
    #[arg(long)]
    sizes: Option<SizeList>,
    /// Smallest size of the default sweep (K/M/G suffixes).
    #[arg(long, default_value = "64K", value_parser = parse_size)]
    min: usize,
    /// Largest size of the default sweep (K/M/G suffixes).
    #[arg(long, default_value = "64M", value_parser = parse_size)]
    max: usize,
    /// The side that computes (default: both, receiver first).
    #[arg(long, value_enum)]
    side: Option<Side>,
    /// Timed repetitions of each measurement (after one untimed).
    #[arg(long, default_value_t = 5)]
    reps: usize,
    /// Compute time as a multiple of t_comm.
    #[arg(long, default_value_t = 1.2)]
    factor: f64,
    /// Name of this run in the output (default: the transport's).
    #[arg(long)]
    label: Option<String>,
}

/// One repetition as one rank saw it.
#[derive(Clone, Copy)]
struct Measure {
    /// From the post to the end of the wait (rank 0), or from the barrier
    /// to the end of the wait (rank 1).
    wall: Duration,
    /// CPU time of the process over the same window.
    cpu: Duration,
}

/// Powers of 4 from `min` to `max`.
fn powers_of_four(min: usize, max: usize) -> Vec<usize> {
    std::iter::successors(Some(min.max(1)), |&s| s.checked_mul(4))
        .take_while(|&s| s <= max)
        .collect()
}

/// User plus system CPU time of this process, all its threads.
fn cpu_time() -> Duration {
    Usage::now().cpu
}

/// The compute: spins on the clock until `time` has passed, calling no
/// MPI function. Returns the turns taken, which the caller passes to
/// `black_box` so that the loop is not optimised away.
fn compute(time: Duration) -> u64 {
    let end = Instant::now() + time;
    let mut turns = 0u64;
    while Instant::now() < end {
        turns = black_box(turns.wrapping_add(1));
    }
    turns
}

/// One repetition: a barrier, then rank 0's operation (with `work` of
/// compute between post and wait) and rank 1's matching one.
fn exchange(
    world: &Communicator,
    side: Side,
    buf: &mut [u8],
    work: Duration,
) -> mpi::Result<Measure> {
    let rank = world.rank();
    let peer = 1 - rank;
    let receives = (rank == 0) == (side == Side::Receiver);
    world.barrier()?;
    let (cpu0, t0) = (cpu_time(), Instant::now());
    mpi::scope::scope(|s| -> mpi::Result<()> {
        // Scoped, so that the transport receives into `buf` and sends from
        // it in place, as a C program's MPI_Irecv and MPI_Isend do.
        let request = if receives {
            world.irecv_scoped(s, buf, peer, TAG)?
        } else {
            world.isend_scoped(s, &*buf, peer, TAG)?
        };
        if rank == 0 && !work.is_zero() {
            black_box(compute(work));
        }
        request.wait().map(drop)
    })?;
    Ok(Measure {
        wall: t0.elapsed(),
        cpu: cpu_time() - cpu0,
    })
}

fn micros(d: &[Duration]) -> Vec<f64> {
    d.iter().map(|d| d.as_secs_f64() * 1e6).collect()
}

fn list(values: &[f64]) -> String {
    values
        .iter()
        .map(|v| format!("{v:.1}"))
        .collect::<Vec<_>>()
        .join(";")
}

/// `(t_comm + T − t_total) / t_comm`, clamped to 0..=1, in percent.
fn overlap(t_comm: f64, work: f64, t_total: f64) -> f64 {
    ((t_comm + work - t_total) / t_comm).clamp(0.0, 1.0) * 100.0
}

fn main() -> std::process::ExitCode {
    o2g_bench::finish("o2g-overlap", run())
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    if !args.factor.is_finite() || args.factor <= 0.0 || args.reps == 0 {
        return Err("--factor must be positive and --reps at least 1".into());
    }
    let universe = mpi::initialize()?;
    let world = universe.world();
    if world.size() != 2 {
        return Err("o2g-overlap needs exactly two ranks (o2grun -n 2)".into());
    }
    let rank = world.rank();
    let label = args
        .label
        .clone()
        .unwrap_or_else(|| universe.transport_name().to_string());
    let sizes = args
        .sizes
        .clone()
        .map_or_else(|| powers_of_four(args.min, args.max), |l| l.0);
    let sides = args
        .side
        .map_or(vec![Side::Receiver, Side::Sender], |s| vec![s]);
    if rank == 0 {
        println!(
            "# overlap of a nonblocking transfer with {}x its time of compute (no MPI calls), {label} (transport {}): medians of {} repetitions, 95% interval",
            args.factor,
            universe.transport_name(),
            args.reps
        );
        println!(
            "{:>8} {:>10} {:>11} {:>11} {:>11} {:>11} {:>11} {:>8} {:>11} {:>11}",
            "side",
            "bytes",
            "t_comm(us)",
            "compute(us)",
            "t_total(us)",
            "low",
            "high",
            "overlap%",
            "cpu(us)",
            "peer-cpu"
        );
    }
    let mut buf = vec![0x5au8; sizes.iter().copied().max().unwrap_or(0)];
    for &side in &sides {
        for &size in &sizes {
            let msg = &mut buf[..size];
            // 1. The transfer alone.
            let mut comm = Vec::with_capacity(args.reps);
            for rep in 0..=args.reps {
                let m = exchange(&world, side, msg, Duration::ZERO)?;
                if rep > 0 {
                    comm.push(m.wall);
                }
            }
            let comm = micros(&comm);
            let t_comm = Sample::new(&comm).median;
            // 2. The compute that would cover it; only rank 0 uses it.
            let work = Duration::from_secs_f64(t_comm * args.factor / 1e6);
            // 3. The transfer behind the compute.
            let (mut total, mut cpu) = (Vec::new(), Vec::new());
            for _ in 0..args.reps {
                let m = exchange(&world, side, msg, work)?;
                total.push(m.wall);
                cpu.push(m.cpu);
            }
            let (total, cpu) = (micros(&total), micros(&cpu));
            let mut peer_cpu = vec![0f64; args.reps];
            if rank == 1 {
                world.send(&cpu, 0, TAG_REPORT)?;
                continue;
            }
            world.recv(&mut peer_cpu, 1, TAG_REPORT)?;
            let t = Sample::new(&total);
            let work_us = work.as_secs_f64() * 1e6;
            let (c, pc) = (Sample::new(&cpu).median, Sample::new(&peer_cpu).median);
            let o = overlap(t_comm, work_us, t.median);
            println!(
                "{:>8} {size:>10} {t_comm:>11.1} {work_us:>11.1} {:>11.1} {:>11.1} {:>11.1} {o:>8.1} {c:>11.1} {pc:>11.1}",
                side.name(),
                t.median,
                t.low,
                t.high,
            );
            println!(
                "csv,{},{label},{size},{o:.1},{t_comm:.1},{:.1},{c:.1},{pc:.1}",
                side.name(),
                t.median
            );
            println!(
                "reps,{},{label},{size},{},{},{},{}",
                side.name(),
                list(&comm),
                list(&total),
                list(&cpu),
                list(&peer_cpu)
            );
        }
    }
    universe.finalize()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_sweep_is_powers_of_four() {
        assert_eq!(
            powers_of_four(64 << 10, 64 << 20),
            [64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20]
        );
        assert_eq!(powers_of_four(64 << 10, 16 << 20).last(), Some(&(16 << 20)));
    }

    #[test]
    fn overlap_is_the_hidden_share_of_the_transfer() {
        // Finished with the compute: all of it hidden.
        assert_eq!(overlap(100.0, 120.0, 120.0), 100.0);
        // Nothing moved before the wait: compute plus transfer.
        assert_eq!(overlap(100.0, 120.0, 220.0), 0.0);
        assert_eq!(overlap(100.0, 120.0, 170.0), 50.0);
        // Noise beyond either end is clamped.
        assert_eq!(overlap(100.0, 120.0, 300.0), 0.0);
        assert_eq!(overlap(100.0, 120.0, 100.0), 100.0);
    }

    #[test]
    fn compute_spins_for_its_time() {
        let t0 = Instant::now();
        assert!(compute(Duration::from_millis(2)) > 0);
        assert!(t0.elapsed() >= Duration::from_millis(2));
    }
}
