//! Raw TCP ping-pong, the physical reference for the MPI figures: the same
//! sizes and repetitions with no MPI layer at all, one blocking socket per
//! side, `TCP_NODELAY` as the MPI transports set it.
//!
//! By default both ends run in this process over loopback. Across hosts,
//! one runs `--listen ADDR` and echoes, the other `--connect ADDR` and
//! measures; the measuring end sends its plan first, so only it needs the
//! sweep options.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use clap::Parser;
use o2g_bench::tcp::{accept_one, connect_retrying, loopback_pair};
use o2g_bench::{median, print_pingpong_header, print_pingpong_row, PingPongRow, SweepArgs};

#[derive(Parser)]
#[command(
    about = "Raw TCP ping-pong (loopback, or between two hosts): half round trip and bandwidth per size"
)]
struct Args {
    #[command(flatten)]
    sweep: SweepArgs,
    /// Only echo, for one peer that connects to ADDR (host:port), then exit.
    #[arg(long, value_name = "ADDR", conflicts_with = "connect")]
    listen: Option<String>,
    /// Measure against a `--listen` peer at ADDR (host:port).
    #[arg(long, value_name = "ADDR")]
    connect: Option<String>,
    /// Longest wait, in seconds, for the peer to connect or accept, and
    /// for any one read.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    wait: u64,
}

/// Most sizes a plan may have, and the largest message the echoing end
/// accepts: a peer's plan beyond these is refused, not allocated.
const MAX_STEPS: u64 = 64;
const MAX_SIZE: u64 = 1 << 30;

/// One step of a plan as sent on the wire: message size and round trips.
type Step = (usize, u64);

fn send_plan(s: &mut TcpStream, plan: &[Step]) -> io::Result<()> {
    let mut header = Vec::with_capacity(8 + 16 * plan.len());
    header.extend_from_slice(&(plan.len() as u64).to_le_bytes());
    for &(size, rounds) in plan {
        header.extend_from_slice(&(size as u64).to_le_bytes());
        header.extend_from_slice(&rounds.to_le_bytes());
    }
    s.write_all(&header)
}

fn read_u64(s: &mut TcpStream) -> io::Result<u64> {
    let mut b = [0u8; 8];
    s.read_exact(&mut b)?;
    Ok(u64::from_le_bytes(b))
}

fn bad_plan(what: String) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("peer's plan refused: {what}"),
    )
}

fn recv_plan(s: &mut TcpStream) -> io::Result<Vec<Step>> {
    let steps = read_u64(s)?;
    if steps > MAX_STEPS {
        return Err(bad_plan(format!("{steps} sizes (at most {MAX_STEPS})")));
    }
    (0..steps)
        .map(|_| {
            let size = read_u64(s)?;
            if size > MAX_SIZE {
                return Err(bad_plan(format!(
                    "{size}-byte messages (at most {MAX_SIZE})"
                )));
            }
            Ok((size as usize, read_u64(s)?))
        })
        .collect()
}

/// Reads the peer's plan, then echoes every message back.
fn echo(mut s: TcpStream) -> io::Result<()> {
    let plan = recv_plan(&mut s)?;
    let mut buf = vec![0u8; plan.iter().map(|p| p.0).max().unwrap_or(0)];
    for (size, rounds) in plan {
        for _ in 0..rounds {
            s.read_exact(&mut buf[..size])?;
            s.write_all(&buf[..size])?;
        }
    }
    Ok(())
}

/// Runs the sweep against an echoing peer on `s`.
fn measure(mut s: TcpStream, sweep: &SweepArgs) -> io::Result<Vec<PingPongRow>> {
    let plan = sweep.plan();
    let reps = sweep.reps;
    let wire: Vec<Step> = plan
        .iter()
        .map(|&(size, iters)| (size, ((reps + 1) * iters) as u64))
        .collect();
    send_plan(&mut s, &wire)?;
    let mut buf = vec![0u8; plan.iter().map(|p| p.0).max().unwrap_or(0)];
    let mut rows = Vec::with_capacity(plan.len());
    for &(size, iters) in &plan {
        let mut samples = Vec::with_capacity(reps);
        for rep in 0..=reps {
            let t0 = Instant::now();
            for _ in 0..iters {
                s.write_all(&buf[..size])?;
                s.read_exact(&mut buf[..size])?;
            }
            if rep > 0 {
                samples.push(t0.elapsed() / (2 * iters as u32));
            }
        }
        let row = PingPongRow {
            size,
            half_rtt: median(&mut samples),
        };
        print_pingpong_row(&row);
        rows.push(row);
    }
    Ok(rows)
}

/// Sets what both ends of a measured connection need.
fn prepare(s: &TcpStream, wait: Duration) -> io::Result<()> {
    s.set_nodelay(true)?;
    s.set_read_timeout(Some(wait))
}

fn main() -> std::process::ExitCode {
    match run(Args::parse()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("o2g-tcp-pingpong: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let wait = Duration::from_secs(args.wait);
    if let Some(addr) = &args.listen {
        let s = accept_one("o2g-tcp-pingpong", addr, wait)?;
        prepare(&s, wait)?;
        return Ok(echo(s)?);
    }
    let rows = if let Some(addr) = &args.connect {
        let s = connect_retrying(addr, wait)?;
        prepare(&s, wait)?;
        print_pingpong_header(&format!("raw TCP ping-pong to {addr}"), args.sweep.reps);
        measure(s, &args.sweep)?
    } else {
        let (s, peer) = loopback_pair()?;
        prepare(&s, wait)?;
        prepare(&peer, wait)?;
        let echoer = std::thread::spawn(move || echo(peer));
        print_pingpong_header("raw TCP ping-pong over loopback", args.sweep.reps);
        let rows = measure(s, &args.sweep)?;
        echoer.join().map_err(|_| "echo thread panicked")??;
        rows
    };
    args.sweep.record("raw-tcp", &rows)?;
    Ok(())
}
