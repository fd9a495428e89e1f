//! What the emulated-hardware microbenchmarks (`o2g-dimmnet-bench`,
//! `o2g-hyphen-bench`) share: their command line and the names of their
//! scratch regions.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

use clap::{CommandFactory, FromArgMatches, Subcommand};

// No doc comment: clap would make it the help's description, which
// `parse` sets per binary.
#[derive(clap::Parser)]
pub(crate) struct Args<C: Subcommand> {
    /// Write `<name>.csv` and `<name>.svg` into this directory.
    #[arg(long, global = true)]
    pub(crate) out: Option<PathBuf>,
    /// Few repetitions and sizes: finishes in seconds.
    #[arg(long, global = true)]
    pub(crate) quick: bool,
    #[command(subcommand)]
    pub(crate) cmd: C,
}

impl<C: Subcommand> Args<C> {
    /// This process's arguments, with `about` as the help's description;
    /// exits with clap's message when they are wrong.
    pub(crate) fn parse(about: &'static str) -> Self {
        let matches = Self::command().about(about).get_matches();
        Self::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
    }
}

/// A `/dev/shm` name no other region of this process has:
/// `o2g-<bench>-bench-<pid>-<n>`.
pub(crate) fn scratch_name(bench: &str) -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("o2g-{bench}-bench-{}-{n}", std::process::id())
}
