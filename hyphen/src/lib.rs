//! An emulated HyphenLink board (the HYPHEN cluster's NIC) with DSM, PB/EXT
//! task FIFOs and the PB task model, a release-consistent shared-memory
//! API in the manner of Fagus, and AP1000 buffer receiving — all over the
//! shared "NIC memory" of [`o2g_nicmem::Region`] (a `/dev/shm` file between
//! processes, an ivshmem BAR between QEMU guests).
//!
//! # The model
//!
//! Every node's board memory is one area of a single shared region that
//! all nodes map; "sending to node k" is writing into node k's area, as the
//! board's link would. The crate is the boards' logic: their registers,
//! queues, tables and the work their engines do.
//!
//! ## Memory map
//!
//! ```text
//! page 0      header: magic, version, node count, sizes (checked at
//!             attach: mismatched peers fail with Error::LayoutMismatch),
//!             logical->physical node table, barrier flags
//! page 1..    synchronisation variables (lock word with owner, last
//!             releaser, release count)
//! per node    command registers (PCR) | home lock, allocation counter |
//!             PB/EXT FIFO (255 x 32-bit ids) | DSM table | timing model
//!             (clocks and stamps) | diff staging |
//!             DSM home pages | cache pages | twin pages |
//!             AP1000 rings, one per sender (optional)
//! ```
//!
//! Exact offsets are in `layout.rs`; [`BoardConfig`] sets the sizes.
//! [`Board::create`] lays a board out and publishes it; [`Board::attach`]
//! waits (bounded) for it and validates the header against the region.
//!
//! ## Primitives
//!
//! - **PB** ([`Node::pb`]): put a 32-bit task id into the FIFO of a
//!   *logical* node, translated through the board's logical→physical table
//!   ([`Board::set_logical`]). A full FIFO (255 ids) makes the sender wait
//!   ([`Overflow::Wait`]) or fail ([`Overflow::Error`]); an id is never
//!   lost.
//! - **EXT** ([`Node::ext`], [`Node::try_ext`]): take the next id from the
//!   node's own FIFO, waiting when it is empty.
//! - **CACHE** ([`Node::cache`]): copy a DSM page from its home (local or
//!   remote) into the caller's cache memory and keep a twin; record it in
//!   the DSM table (node, DSM page, cache page, twin page, flags).
//! - **WB** ([`Node::write_back`]): diff the cached page against its twin,
//!   send only the diff (runs of changed bytes, see [`diff`]) to the home,
//!   apply it there, free twin and table entry. Two nodes writing disjoint
//!   bytes of one page and both writing back leave both writes at home.
//!
//! CACHE and WB go through the node's command registers (the PCR
//! analogue): the caller writes arguments and a command word, the board
//! executes, the status word reports. **The board's work runs on the
//! caller's thread** right after the command word is written, reading the
//! registers back as the board would; the caller makes no system call.
//! Abstracted away in real time: the board engine's own parallelism, link
//! latency and bandwidth, and remote boards (a remote home is reached by
//! copying from its area of the shared region); the timing model below
//! accounts for them in virtual time. PB and EXT, single register accesses
//! on the board, are lock-free queue operations on the FIFO words.
//!
//! ## Timing model
//!
//! Every [`Node`] also charges a deterministic model of what the board
//! would take ([`Costs`], every value **assumed**: the paper has no
//! figure): per node a host clock, a board engine, a stamp per FIFO slot
//! and per DSM home page, all in the shared region, advanced by the code
//! that moves the bytes. A PB's id carries its sender's time to the EXT
//! that takes it; a WB's diff carries it to the next CACHE of the page.
//! Nothing sleeps or spins to imitate a delay. [`Node::now`] reads a
//! node's virtual time, [`Node::with_costs`] charges other costs and
//! [`Node::unmodelled`] none; the rules are in `clock.rs`.
//!
//! ## Protocols built on them
//!
//! - [`Runtime`]: the PB task model. Handlers are registered by task kind
//!   ([`TaskId`]: kind in the high 16 bits, argument in the low 16); the
//!   EXT loop runs whatever arrives; [`Runtime::barrier`] is made of PB
//!   tasks (arrive at logical node 0, released by it), the paper's figure
//!   4. [`scatter_gather`] is the paper's scatter / compute / gather
//!   program on it (`examples/scatter_gather.rs` runs it, one process per
//!   node).
//! - [`Shared`]: shared ranges with acquire/release on synchronisation
//!   variables with owners (Fagus's release consistency, with optional
//!   entry-consistency scopes): acquire refreshes the pages from their
//!   homes so it sees what the last releaser wrote; release writes diffs
//!   back; a barrier of per-node flags (Fagus's AOTF barrier shape). Access
//!   is explicit ([`Shared::read`], [`Shared::write`], [`Shared::flush`]);
//!   there is no mprotect/SIGSEGV fault mode.
//! - [`ring`]: AP1000 buffer receiving, an always-on receive ring with a
//!   32-byte header per message in 16-byte units, `recvs` returning the
//!   message in place (copying to the slack after the ring only when the
//!   message wrapped around), USED marks, and a writer that stops while the
//!   ring is full. [`Board`] can reserve one ring per (receiver, sender)
//!   pair ([`Board::ring_writer`], [`Board::ring_reader`]).
//!
//! ## Waiting
//!
//! Every wait is bounded by a [`wait::WaitPolicy`] deadline and fails with
//! [`Error::Timeout`] naming what it waited for, so a dead peer cannot
//! wedge the others. [`wait::WaitMode::Poll`] spins (the polling EXT);
//! [`wait::WaitMode::Block`] sleeps in `futex(2)` on a shared doorbell
//! word the notifier bumps (the "interrupt" EXT). Shared futexes work
//! between processes mapping the same file; between QEMU guests no wake
//! crosses, so use polling there (blocking then degrades to a re-check
//! every [`wait::MAX_SLEEP`]). The futex calls are the crate's only system
//! calls and live in `futex.rs`.
//!
//! ## Liveness
//!
//! A node whose process dies leaves its words as they were; [`liveness`]
//! lets the processes that share a board tell at once a peer that left or
//! exited, and after a silence of the watcher's choosing one that was
//! killed or froze: a table of per-node state words and heartbeat counters
//! beside the board, a [`liveness::Heartbeat`] thread per node (with an
//! `atexit` hook, in `exit_hook.rs`, that marks the node exited) and a
//! [`liveness::PeerWatch`] over the others.
//!
//! ## Trust
//!
//! Everything read from shared memory (indices, lengths, node and page
//! numbers, diffs, ring headers) is validated before use and fails with
//! [`Error::Corrupt`]; every access also goes through the region's bounds
//! checks, so a faulty peer cannot make another node write outside its
//! mapping.
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use o2g_hyphen::{wait::WaitPolicy, Board, BoardConfig, GlobalPage, Overflow};
//! use o2g_nicmem::Region;
//!
//! let cfg = BoardConfig::default(); // two nodes
//! let name = format!("o2g-hyphen-doc-{}", std::process::id());
//! let region = Region::create_shm(&name, Board::required_len(&cfg)?)?;
//! Region::unlink_shm(&name)?;
//! let board = Board::create(Arc::new(region), cfg)?;
//! let policy = WaitPolicy::blocking(Duration::from_secs(5));
//! let (n0, n1) = (board.node(0, policy)?, board.node(1, policy)?);
//!
//! // Node 1 caches a page homed at node 0, writes, writes back the diff.
//! let page = GlobalPage { home: 0, page: 3 };
//! let e = n1.cache(page)?;
//! n1.cache_write(e, 10, b"hello")?;
//! assert_eq!(n1.write_back(e)?.dirty_bytes, 5);
//! let mut got = [0u8; 5];
//! n0.home_read(page, 10, &mut got)?;
//! assert_eq!(&got, b"hello");
//!
//! // PB a task id to node 0; node 0 EXTs it.
//! n1.pb(0, 0x0001_0002, Overflow::Error)?;
//! assert_eq!(n0.ext()?, 0x0001_0002);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod board;
mod clock;
mod consistency;
pub mod costs;
pub mod diff;
mod dsm;
mod error;
mod exit_hook;
mod fifo;
mod futex;
mod layout;
pub mod liveness;
mod pcr;
pub mod ring;
mod runtime;
pub mod scatter_gather;
mod task;
#[cfg(test)]
mod testutil;
pub mod wait;

pub use board::{Board, Node};
pub use consistency::{Shared, SharedRange, SyncVar};
pub use costs::{Costs, Ps};
pub use dsm::{CacheEntry, GlobalPage, TableEntry};
pub use error::{Error, Result};
pub use fifo::Overflow;
pub use layout::{BoardConfig, FIFO_DEPTH, MAX_NODES, PAGE, VERSION};
pub use runtime::{Handler, Runtime, TaskCtx};
pub use task::{TaskId, FIRST_RESERVED_KIND};
