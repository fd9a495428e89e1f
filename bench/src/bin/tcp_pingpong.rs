//! Raw TCP ping-pong over loopback, the physical reference for the MPI
//! figures: the same sizes and repetitions with no MPI layer at all, one
//! blocking socket per side, `TCP_NODELAY` as the MPI transports set it.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Instant;

use clap::Parser;
use o2g_bench::{median, print_pingpong_header, print_pingpong_row, PingPongRow, SweepArgs};

#[derive(Parser)]
#[command(about = "Raw TCP ping-pong over loopback: half round trip and bandwidth per size")]
struct Args {
    #[command(flatten)]
    sweep: SweepArgs,
}

/// Echoes every message back, following the same plan.
fn echo(mut s: TcpStream, plan: Vec<(usize, usize)>, reps: usize) -> std::io::Result<()> {
    let mut buf = vec![0u8; plan.iter().map(|p| p.0).max().unwrap_or(0)];
    for (size, iters) in plan {
        for _ in 0..(reps + 1) * iters {
            s.read_exact(&mut buf[..size])?;
            s.write_all(&buf[..size])?;
        }
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let args = args.sweep;
    let plan = args.plan();
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let mut s = TcpStream::connect(listener.local_addr()?)?;
    let (peer, _) = listener.accept()?;
    s.set_nodelay(true)?;
    peer.set_nodelay(true)?;
    let echoer = std::thread::spawn({
        let plan = plan.clone();
        let reps = args.reps;
        move || echo(peer, plan, reps)
    });
    print_pingpong_header("raw TCP ping-pong over loopback", args.reps);
    let mut buf = vec![0u8; plan.iter().map(|p| p.0).max().unwrap_or(0)];
    let mut rows = Vec::with_capacity(plan.len());
    for &(size, iters) in &plan {
        let mut samples = Vec::with_capacity(args.reps);
        for rep in 0..=args.reps {
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
    echoer.join().map_err(|_| "echo thread panicked")??;
    args.record("raw-tcp", &rows)?;
    Ok(())
}
