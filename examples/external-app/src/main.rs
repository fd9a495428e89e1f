//! A user's MPI program built outside o2g's workspace: each rank computes
//! a slice of a sum, the slices are combined with `all_reduce_into`, and
//! rank 0 gathers every rank's name for its report.
//!
//! ```text
//! cargo build --release --manifest-path examples/external-app/Cargo.toml
//! o2grun -n 3 examples/external-app/target/release/o2g-external-app
//! ```

use mpi::SystemOperation;

/// Terms of the series 1 + 2 + ... + N summed across the ranks.
const N: u64 = 1_000_000;

fn main() -> mpi::Result<()> {
    let universe = mpi::initialize()?;
    let world = universe.world();
    let (rank, size) = (world.rank() as u64, world.size() as u64);
    let mine: u64 = (1..=N).filter(|i| i % size == rank).sum();
    let mut total = [0u64];
    world.all_reduce_into(&[mine], &mut total, &SystemOperation::Sum)?;
    if total[0] != N * (N + 1) / 2 {
        eprintln!("rank {rank}: sum {} is wrong", total[0]);
        std::process::exit(1);
    }
    let root = world.process_at_rank(0)?;
    if rank == 0 {
        let mut ranks = vec![0u64; size as usize];
        root.gather_into_root(&[rank], &mut ranks)?;
        println!(
            "external-app: {size} ranks over {}, sum 1..{N} = {}, ranks {ranks:?}",
            universe.transport_name(),
            total[0]
        );
    } else {
        root.gather_into(&[rank])?;
    }
    universe.finalize()
}
