//! The o2g protocol core: no I/O, no allocation, no `unsafe`, no panics on
//! input.
//!
//! Bytes go in, events and decisions come out. The same files build into
//! the kernel module (`kmod/`, through `#[path]`) and into user space (the
//! `o2g-core` crate); see the crate root `core/src/lib.rs` for how.
//!
//! - [`envelope`]: the MPI message envelope and receive selectors.
//! - [`wire`]: the fixed 32-byte little-endian message header, its encoder
//!   and decoder.
//! - [`stream`]: the per-connection reassembler that turns any split of a
//!   TCP byte stream into "header", "payload piece at offset" and "end"
//!   events, buffering only header bytes.
//! - [`matching`]: the MPI matching engine (posted receives, unexpected
//!   messages, non-overtaking order, wildcards, probe, cancel) over storage
//!   the caller provides.
//! - [`credit`]: eager credit, the receiver's grant and the sender's
//!   allowance per connection.
//! - [`dump`]: the dump area's ring allocator, and [`sender_rings`]: the
//!   area as one such ring per sender, whose space follows eager credit.
//! - [`receive`]: the receive state machine over the engine, a payload
//!   store and each connection's reassembler: where each message goes,
//!   when a connection stalls, what completes and what fails. The module
//!   and every user-space transport decide through it.
//! - [`window_lock`]: a memory window's lock as its target keeps it
//!   (shared and exclusive holders, first-come waiting), for one-sided
//!   communication placed by the module.
//!
//! # Rules
//!
//! - Capacities are fixed when a value is built; storage is borrowed or
//!   owned through `DerefMut<Target = [T]>`, so the kernel can hand in a
//!   `KVec` and tests a `Vec`.
//! - Every index goes through `get`, every input-controlled sum is checked
//!   or wrapping, and nothing divides by input: no input reaches a panic.
//! - Nothing here locks. The caller serialises access to one engine (the
//!   kernel with the endpoint's BH-safe spinlock).

pub mod credit;
pub mod dump;
pub mod envelope;
mod list;
pub mod matching;
pub mod receive;
pub mod sender_rings;
pub mod stream;
pub mod window_lock;
pub mod wire;
