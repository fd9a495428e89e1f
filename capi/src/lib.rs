//! o2g's C ABI: the MPI functions C programs call, exported from
//! `libmpi_abi.so.1` with the MPI 5.0 standard ABI (chapter 20: handle
//! types and values, `MPI_Status` layout, integer widths, constants), so
//! a program built against any standard-ABI `mpi.h` runs on o2g. The
//! header is `capi/include/mpi.h`, the compiler wrapper `capi/mpicc`.
//!
//! The layer is thin: it checks arguments, turns handles into the `mpi`
//! crate's objects and calls that crate; MPI semantics live there. Files:
//! - `handles.rs` holds handle values and the tables behind them,
//!   `handle_int.rs` their conversions to `int` and back;
//! - `error.rs` error classes, error handlers and the FFI boundary
//!   (`catch_unwind`: no panic crosses into C);
//! - `ffi.rs` turns raw pointers from C into references and slices (with
//!   `op.rs`'s call of user functions and `grequest.rs`'s of the
//!   generalized-request callbacks, the only `unsafe` dereferences);
//! - `table.rs` is the concurrent handle table of plain-data objects;
//! - `status.rs` is `MPI_Status`;
//! - `thread.rs` knows which thread may call MPI, and the little state
//!   any thread may ask about;
//! - `env.rs`, `comm.rs`, `p2p.rs`, `request.rs`, `coll.rs`,
//!   `datatype.rs` and `op.rs` hold the exported functions, one MPI
//!   chapter each; `group.rs` (groups), `attr.rs` (attribute caching),
//!   `info.rs` (info objects), `topo.rs` (topologies) and
//!   `errhandler.rs` (user error handlers, classes and codes) one
//!   concept each, so too `bsend.rs` (the buffer of buffered sends),
//!   `persistent.rs` (persistent requests), `mprobe.rs` (matched probe),
//!   `isendrecv.rs` (nonblocking send-receive), `grequest.rs`
//!   (generalized requests), `coll_stage.rs` (the buffers of collectives,
//!   any datatype, and their `int`/`_c` and blocking/nonblocking/
//!   persistent forms) and `pcoll.rs` (persistent collectives);
//! - `comm_from_group.rs` is `MPI_Comm_create_from_group`,
//!   `intercomm.rs` the inter-communicators (§7.6), `intercoll.rs` the
//!   blocking collectives on them (§6.2.2), and `neighbor.rs` the
//!   neighborhood collectives (§8.6–§8.8);
//! - `coll_reduce.rs` holds the reductions beyond reduce, `icoll.rs`
//!   the nonblocking collectives' starts, `op_types.rs` the reductions
//!   on pair, complex and `long double` types, `buffer.rs` the bytes of
//!   a (buffer, count, datatype) argument, `pack.rs` packing, and
//!   `typector.rs` the datatype constructors.
//!
//! Threads: up to `MPI_THREAD_MULTIPLE`; the handle state is used by
//! one thread at a time, which `thread.rs` enforces: under `MULTIPLE`
//! threads take turns (waits let the others in); under the lower levels
//! a call from a thread the level does not allow, or from a second
//! thread at once, ends the job with a message.

#![allow(non_snake_case)]

mod attr;
mod bsend;
mod buffer;
mod coll;
mod coll_reduce;
mod coll_stage;
mod comm;
mod comm_from_group;
mod datatype;
mod env;
mod errhandler;
mod error;
mod ffi;
mod fortran;
mod grequest;
mod group;
mod handle_int;
mod handles;
mod icoll;
mod info;
mod intercoll;
mod intercomm;
mod isendrecv;
mod mprobe;
mod neighbor;
mod op;
mod op_types;
mod p2p;
mod pack;
mod pcoll;
mod persistent;
mod request;
mod rma;
mod status;
mod table;
mod thread;
mod topo;
mod typector;
