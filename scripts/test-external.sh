#!/usr/bin/env bash
# The mpi crate as a user's dependency, and its documentation:
#   - examples/external-app, a cargo project outside o2g's workspace that
#     depends on `mpi` by path, builds (--locked: its Cargo.lock is
#     committed) and runs under o2grun on 3 ranks over sockets-epoll;
#   - `cargo doc` of the public crates (mpi, libo2g, o2g-core) builds with
#     warnings as errors.
# Prints "external: ..." lines; exits non-zero at the first failure.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$O2G_ROOT"

app=examples/external-app
apptarget="$O2G_ROOT/target/external-app"
cargo build --release --locked --quiet -p mpi --bin o2grun
RUSTFLAGS="-D warnings" CARGO_TARGET_DIR="$apptarget" cargo build --release --locked --quiet --manifest-path "$app/Cargo.toml"
out="$(O2G_TRANSPORT=sockets-epoll target/release/o2grun -n 3 --timeout 60 "$apptarget/release/o2g-external-app")"
echo "$out"
grep -q '^external-app: 3 ranks over sockets-epoll, sum 1..1000000 = 500000500000, ranks \[0, 1, 2\]$' <<<"$out" ||
    { echo "external: the app's report is not what 3 ranks give" >&2; exit 1; }
echo "external: examples/external-app built outside the workspace and ran on 3 ranks"

RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --quiet -p mpi -p libo2g -p o2g-core
echo "external: cargo doc of mpi, libo2g and o2g-core has no warnings"
