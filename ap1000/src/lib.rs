//! Emulated AP1000 cells (Shimizu, Horie, Ishihata: line sending and
//! buffer receiving, `../shared/seeds/003_…`): message handling that
//! moves real bytes between cells and charges a deterministic timing
//! model for it.
//!
//! # The cell
//!
//! - a **memory** and a **direct-mapped copy-back cache** of 16-byte lines
//!   ([`cache`]), through which the program's loads and stores go
//!   ([`Cell::write`], [`Cell::read`]);
//! - **line sending** ([`Cell::lsend`], [`Cell::lsende`],
//!   [`Cell::store_command`]): a store sends one line to the network from
//!   the cache (hit) or by a DMA from memory (miss); a full send FIFO
//!   traps and the store is retried;
//! - the **normal DMA send**: the message is copied into a non-cacheable
//!   area and a DMA started;
//! - **receiving**, one of two ways per machine ([`ReceiveMode`]): buffer
//!   receiving into an always-on ring (the `ring` module), or the normal
//!   path, where an interrupt handler programs a DMA per message (`inbox`);
//! - `send()` and `recvs()` of the paper's §4 on top ([`Cell::send`],
//!   [`Cell::recv`]).
//!
//! # Time
//!
//! Per cell: the CPU's clock, the link's, the interrupt handlers'; per
//! ring unit, the arrival of the line in it. [`costs`] holds every cost,
//! each with its source or marked assumed; the rules are in the `send`
//! and `recv` modules' docs. Cells are threads of one process, or one
//! thread driving several handles; the modelled times do not depend on
//! how the threads interleave, as long as each receiver has one sender at
//! a time.
//!
//! # Example
//!
//! ```
//! use o2g_ap1000::{Config, Filter, Machine, ReceiveMode, SendMode};
//!
//! let m = Machine::new(2, Config { memory_bytes: 1 << 20, header_addr: (1 << 20) - 32,
//!     ..Config::ap1000(ReceiveMode::Ring) }).unwrap();
//! let (a, b) = (m.cell(0).unwrap(), m.cell(1).unwrap());
//! a.write(0x1000, b"ten bytes!").unwrap();
//! a.send(1, 7, 0x1000, 10, SendMode::Line).unwrap();
//! let mut got = Vec::new();
//! let info = b.recv(Filter::ANY, &mut got).unwrap();
//! assert_eq!((got.as_slice(), info.tag), (&b"ten bytes!"[..], 7));
//! assert!(b.now() > 0);
//! ```

pub mod cache;
mod clock;
pub mod command;
mod config;
pub mod costs;
mod error;
mod fifo;
pub mod header;
mod inbox;
mod machine;
mod recv;
mod ring;
mod send;
mod stats;

pub use config::{Config, ReceiveMode};
pub use costs::{Costs, Ps};
pub use error::{Error, Result};
pub use machine::{Cell, Machine};
pub use recv::{Filter, MsgInfo};
pub use send::SendMode;
pub use stats::Stats;

/// The cache line, the unit of line sending and of the ring (§3 L95).
pub const LINE: usize = 16;
