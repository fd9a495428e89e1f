//! Every rank greets, passes its rank around a ring, and the world agrees
//! on the sum of ranks.
//!
//! ```text
//! cargo build -p mpi --examples --bins
//! target/debug/o2grun -n 4 --tag-output target/debug/examples/hello
//! ```

use mpi::traits::*;
use mpi::SystemOperation;

fn main() -> mpi::Result<()> {
    let universe = mpi::initialize()?;
    let world = universe.world();
    let (rank, size) = (world.rank(), world.size());
    println!(
        "hello from rank {rank} of {size} over {}",
        universe.transport_name()
    );

    let next = world.process_at_rank((rank + 1) % size)?;
    let prev = world.process_at_rank((rank + size - 1) % size)?;
    let mut got = [0i32];
    let mine = [rank];
    let req = next.immediate_send(&mine)?;
    let status = prev.receive_into(&mut got)?;
    req.wait()?;
    assert_eq!(got[0], (rank + size - 1) % size);
    assert_eq!(status.source_rank(), prev.rank());

    let mut sum = [0i32];
    world.all_reduce_into(&[rank], &mut sum, &SystemOperation::Sum)?;
    assert_eq!(sum[0], size * (size - 1) / 2);
    if rank == 0 {
        println!("sum of ranks: {}", sum[0]);
    }
    universe.finalize()
}
