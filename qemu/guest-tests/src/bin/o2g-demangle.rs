//! `o2g-demangle`: a stdin-to-stdout filter that demangles Rust symbol
//! names, like `rustfilt`. The kernel and `o2g.ko` name their Rust
//! functions with v0 mangling (`_RNv...`), which perf 6.1 prints as is;
//! bench-profile passes perf's reports through this. Hashes are left out;
//! every other text is copied unchanged.

use std::io::{BufWriter, Write};
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut out = BufWriter::new(std::io::stdout().lock());
    match rustc_demangle::demangle_stream(&mut std::io::stdin().lock(), &mut out, false)
        .and_then(|()| out.flush())
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("o2g-demangle: {e}");
            ExitCode::FAILURE
        }
    }
}
