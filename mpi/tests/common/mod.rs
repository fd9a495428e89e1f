//! What the integration tests that launch real jobs share: the program
//! their ranks run.

use mpi::traits::*;
use mpi::SystemOperation;

/// A rank's outcome, as the tests' rank roles return it.
pub(crate) type RankResult = Result<(), Box<dyn std::error::Error>>;

/// The `hello` example: each rank greets (`hello from rank R of N`, then
/// `note`), passes its rank around a ring and checks what it got, and the
/// world agrees on the sum of ranks, which rank 0 prints. Its output is how
/// a test knows the job ran whole.
pub(crate) fn ring(note: &str) -> RankResult {
    let universe = mpi::initialize()?;
    let world = universe.world();
    let (rank, size) = (world.rank(), world.size());
    println!("hello from rank {rank} of {size}{note}");
    let next = world.process_at_rank((rank + 1) % size)?;
    let prev = world.process_at_rank((rank + size - 1) % size)?;
    let mut got = [0i32];
    let mine = [rank];
    let req = next.immediate_send(&mine)?;
    prev.receive_into(&mut got)?;
    req.wait()?;
    if got[0] != (rank + size - 1) % size {
        return Err(format!("got {} from the previous rank", got[0]).into());
    }
    let mut sum = [0i32];
    world.all_reduce_into(&[rank], &mut sum, &SystemOperation::Sum)?;
    if rank == 0 {
        println!("sum of ranks: {}", sum[0]);
    }
    universe.finalize()?;
    Ok(())
}
