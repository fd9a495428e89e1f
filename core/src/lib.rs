//! o2g-core: the pure protocol core of o2g, shared by the kernel module and
//! the user-space transports.
//!
//! Everything lives in the [`proto`] module; this file is only the crate root
//! that cargo needs. See [`proto`] for the wire format, the stream
//! reassembler and the MPI matching engine.
//!
//! # One source, two builds
//!
//! Kbuild cannot use cargo crates, so the kernel module compiles the same
//! files as a plain module of its own crate:
//!
//! ```text
//! // kmod/o2g_main.rs
//! #[path = "../core/src/proto.rs"]
//! pub mod proto;
//! ```
//!
//! That is why this file is split from `proto.rs`:
//!
//! - Crate-level inner attributes (`no_std`, `forbid(unsafe_code)`, lint
//!   levels) are only valid at a crate root, so they live here and nowhere
//!   else. The kernel sets its own (`no_std` and its lint set) for its crate.
//! - `proto.rs` declares the submodules. Cargo loads it through `#[path]`
//!   exactly as the kernel does, so a file loaded with `#[path]` owns its
//!   directory in both builds and `mod wire;` resolves to `core/src/wire.rs`
//!   in both. Paths are therefore the same too: `o2g_core::proto::wire` here,
//!   `crate::proto::wire` in the module.
//! - Submodules name each other with `super::`, never `crate::`, so they do
//!   not care where `proto` is mounted.
//! - The kernel must mount it `pub`, or every public item would trip
//!   `unreachable_pub` there.
//!
//! # Tests
//!
//! - `cargo test -p o2g-core`: unit tests next to the code; proptest
//!   properties against a plain-vector model of MPI matching
//!   (`tests/matching_model.rs`) and against random splits of the stream
//!   (`tests/stream_split.rs`); the dump allocator against a byte-owner
//!   reference model, sizes up to the whole area (`tests/dump_model.rs`);
//!   a deterministic multi-endpoint simulation over the receive state
//!   machine and a real dump area (`tests/sim.rs`).
//! - `cargo bench -p o2g-core --bench matching`: ns per operation at 1,
//!   1 000 and 100 000 queued entries.
//! - Fuzzing against models, with cargo-fuzz: `scripts/fuzz.sh` runs every
//!   target for `O2G_FUZZ_SECS` seconds each (targets: `stream`,
//!   `stream_take`, `matching`, `dump`); the test command runs it briefly.
//!
//! The lint list below mirrors the kernel's `rust_common_flags` (Linux 7.2
//! top-level Makefile) so that `cargo clippy` catches what Kbuild would
//! reject, plus the panic-freedom lints that stand for "no panic reachable
//! from input" in the non-test build.

#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
#![deny(
    missing_docs,
    non_ascii_idents,
    rust_2018_idioms,
    unreachable_pub,
    unsafe_op_in_unsafe_fn,
    unused
)]
#![deny(
    clippy::all,
    clippy::as_underscore,
    clippy::cast_lossless,
    clippy::float_arithmetic,
    clippy::ignored_unit_patterns,
    clippy::mut_mut,
    clippy::needless_bitwise_bool,
    clippy::ptr_as_ptr,
    clippy::undocumented_unsafe_blocks
)]
#![cfg_attr(
    not(test),
    deny(
        clippy::arithmetic_side_effects,
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::panic,
        clippy::unwrap_used,
        clippy::unreachable,
        clippy::todo,
        clippy::unimplemented
    )
)]

#[path = "proto.rs"]
pub mod proto;
