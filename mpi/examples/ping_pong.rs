//! Ping-pong between ranks 0 and 1: half round-trip latency for a few
//! message sizes. Timing is printed, never asserted.
//!
//! ```text
//! target/debug/o2grun -n 2 target/release/examples/ping_pong [iterations]
//! ```

fn main() -> mpi::Result<()> {
    let universe = mpi::initialize()?;
    let world = universe.world();
    let iters: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100);
    if world.size() < 2 {
        eprintln!("ping_pong needs two ranks");
        return universe.finalize();
    }
    let rank = world.rank();
    for len in [0usize, 8, 1024, 64 << 10] {
        let mut buf = vec![0u8; len];
        world.barrier()?;
        let t0 = mpi::time();
        for i in 0..iters {
            if rank == 0 {
                buf.fill(i as u8);
                world.send(&buf, 1, 0)?;
                world.recv(&mut buf, 1, 0)?;
                assert!(buf.iter().all(|b| *b == i as u8));
            } else if rank == 1 {
                world.recv(&mut buf, 0, 0)?;
                world.send(&buf, 0, 0)?;
            }
        }
        let half_rtt_us = (mpi::time() - t0) / iters as f64 / 2.0 * 1e6;
        if rank == 0 {
            println!("{len:>8} bytes: {half_rtt_us:8.2} us half round trip");
        }
    }
    universe.finalize()
}
