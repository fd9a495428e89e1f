//! o2g's MPI library: the subset of MPI 4.1 that real TCP codes (NAS IS,
//! ping-pong and bandwidth benchmarks) use, in the shape of rsmpi with
//! every result checked.
//!
//! ```no_run
//! use mpi::traits::*;
//!
//! fn main() -> mpi::Result<()> {
//!     let universe = mpi::initialize()?;
//!     let world = universe.world();
//!     let (rank, size) = (world.rank(), world.size());
//!     let next = world.process_at_rank((rank + 1) % size)?;
//!     let prev = world.process_at_rank((rank + size - 1) % size)?;
//!     let mut got = [0i32; 1];
//!     let req = next.immediate_send(std::slice::from_ref(&rank))?;
//!     prev.receive_into(&mut got)?;
//!     req.wait()?;
//!     let mut sum = 0;
//!     world.all_reduce_into(&[rank], std::slice::from_mut(&mut sum), &mpi::SystemOperation::Sum)?;
//!     universe.finalize()
//! }
//! ```
//!
//! # Chapters (one file each)
//! - [`environment`]: `initialize`, [`Universe`], `finalize`, `time` (§11.2, §9.6).
//! - [`communicator`]: world, rank/size, `dup`, `split` (chapter 7).
//! - [`point_to_point`] and [`request`]: send/recv, ssend/issend,
//!   sendrecv/isendrecv, isend/irecv, wait/test families (some, any,
//!   all), probe, matched probe ([`Message`]), cancel, status (chapter 3).
//! - [`collective`] with [`operation`]: barrier, bcast, reduce, allreduce,
//!   gather(v), scatter(v), allgather(v), alltoall(v) (chapter 6).
//! - [`datatype`]: [`Equivalence`] (chapter 5, §3.2.2).
//! - [`typemap`]: derived datatypes as type maps, pack/unpack and
//!   `external32` (chapter 5, §14.5.2).
//! - [`group`]: [`Group`] and its set operations (§7.3); communicators
//!   from groups are [`Communicator::create`] and `create_group`.
//! - [`intercomm`]: inter-communicators (§7.6): `intercomm_create`,
//!   `merge`, point-to-point to the remote group.
//! - [`topology`]: Cartesian, graph and distributed-graph topologies and
//!   `dims_create` (chapter 8).
//!
//! # Running
//! Start programs with `o2grun -n N prog` (this crate's launcher), MPICH's
//! `mpiexec -n N prog`, or Slurm's `srun --mpi=pmi2` (PMI-1 or PMI-2).
//! Without a process manager a program is a world of one. The environment
//! selects the transport and its knobs: see `config.rs` (`O2G_TRANSPORT`,
//! `O2G_SELF`, `O2G_SNDBUF`, `O2G_RCVBUF`, `O2G_MAX_MESSAGE`, `O2G_ADDR`,
//! `O2G_CONNECT_TIMEOUT`) and the transport contract in `transport/mod.rs`.
//!
//! # Threads and `unsafe`
//! The Rust API is single-threaded: [`Universe`], [`Communicator`],
//! [`Request`] and the rest are neither `Send` nor `Sync`, because they
//! share the process's runtime (transport, matching state, schedules)
//! through `Rc` and `RefCell`, which only one thread may touch. A Rust
//! program calls MPI from one thread. The C ABI (`capi`) provides
//! `MPI_THREAD_MULTIPLE` over this crate by letting one thread in at a
//! time, with a lock of its own, and [`raw::set_turns`] makes every wait
//! here let the other threads have their turn. `unsafe` lives only in:
//! - `point_to_point.rs` and `transport/o2g/` (`receive.rs`, `send.rs`):
//!   the most delicate, because the kernel module writes a blocking
//!   receive's payload straight into the caller's buffer and reads a large
//!   send from it, so the transport must not let go of either before the
//!   module has (the contracts of `post_recv_in_place`, `isend_in_place`
//!   and `isend_lent` in `transport/mod.rs`);
//! - the socket transports' `transport/matcher.rs` (receives written in
//!   place), `transport/outbox.rs` and `transport/sockets.rs` (sends
//!   from lent memory), under the same contracts, and the collectives
//!   (`collective/`), which lend their own buffers that way; [`scope`]
//!   is what makes lending safe from the Rust API;
//! - [`raw`]: sends from and receives into caller-owned memory, for the
//!   C ABI;
//! - `datatype.rs`: byte views of [`Equivalence`] slices;
//! - `pmi.rs`: adopting the inherited `PMI_FD`;
//! - the launcher `bin/o2grun/job.rs`: its `pre_exec` hook.

pub mod collective;
pub mod communicator;
mod config;
pub mod datatype;
pub mod environment;
mod error;
pub mod group;
pub mod intercomm;
mod listen_addr;
pub mod operation;
mod pmi;
pub mod point_to_point;
pub mod raw;
pub mod request;
pub mod scope;
mod synchronous;
pub mod topology;
mod transport;
pub mod typemap;

/// `MSG_ZEROCOPY` bookkeeping of one TCP socket, as the socket transports
/// keep it; for `o2g-tcp-stream`, not part of the MPI interface.
#[doc(hidden)]
pub use transport::zerocopy;

pub use communicator::{Color, Communicator};
pub use datatype::Equivalence;
pub use environment::{initialize, time, time_resolution, Universe};
pub use error::{Error, Result};
pub use group::{Comparison, Group};
pub use operation::{Operation, SystemOperation, UserOperation};
pub use point_to_point::{AnyProcess, Message, Process, Status, ANY_SOURCE, ANY_TAG, TAG_UB};
pub use request::Request;

/// `MPI_Wtime` under its MPI name; see [`time`].
pub use environment::time as wtime;
/// `MPI_Wtick` under its MPI name; see [`time_resolution`].
pub use environment::time_resolution as wtick;

/// The traits to bring into scope: `use mpi::traits::*;`.
pub mod traits {
    pub use crate::datatype::Equivalence;
    pub use crate::operation::Operation;
    pub use crate::point_to_point::{Destination, Source};
}
