//! A streaming receive: rank 0 sends `--count` messages of `--size` bytes
//! to rank 1, which receives them one by one; rank 1 prints the message
//! rate. The harness runs it under `strace -c` to count the system calls
//! each received message costs on every transport, and under perf
//! (bench-profile).

use clap::Parser;
use o2g_bench::parse_size;

#[derive(Parser)]
#[command(about = "Rank 0 streams messages to rank 1; rank 1 reports the rate")]
struct Args {
    /// Messages to send.
    #[arg(long, default_value_t = 1000)]
    count: usize,
    /// Bytes per message (K/M/G suffixes).
    #[arg(long, default_value = "1K", value_parser = parse_size)]
    size: usize,
}

fn main() -> std::process::ExitCode {
    o2g_bench::finish("o2g-stream", run())
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let universe = mpi::initialize()?;
    let world = universe.world();
    if world.size() != 2 {
        return Err("o2g-stream needs exactly two ranks".into());
    }
    let mut buf = vec![0u8; args.size];
    if world.rank() == 1 {
        // Set up: bench-profile starts sampling at this line.
        println!("stream: receiving {} x {} B", args.count, args.size);
    }
    world.barrier()?;
    let t0 = mpi::time();
    if world.rank() == 0 {
        for i in 0..args.count {
            buf.fill(i as u8);
            world.send(&buf, 1, 7)?;
        }
        world.recv::<u8>(&mut [], 1, 8)?;
    } else {
        for i in 0..args.count {
            let st = world.recv(&mut buf, 0, 7)?;
            if st.count_bytes() != args.size || buf.iter().any(|&b| b != i as u8) {
                return Err(format!("message {i} arrived wrong").into());
            }
        }
        world.send::<u8>(&[], 0, 8)?;
        let secs = mpi::time() - t0;
        println!(
            "stream {} x {} B over {}: {:.0} messages/s, {:.2} MB/s",
            args.count,
            args.size,
            universe.transport_name(),
            args.count as f64 / secs,
            (args.count * args.size) as f64 / secs / 1e6
        );
    }
    universe.finalize()?;
    Ok(())
}
