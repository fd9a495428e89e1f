#!/usr/bin/env bash
# Install everything a fresh machine of this kind lacks. Idempotent: a second
# run checks, finds everything present, and returns in seconds.
set -euo pipefail
source "$(dirname "$0")/env.sh"

DEB_PACKAGES=(
    # kernel build
    bc bison flex cpio libelf-dev libssl-dev make gcc xz-utils
    # Rust-enabled KASAN needs the kernel built with clang, so the whole
    # kernel (C and Rust) is built with one LLVM toolchain.
    "clang-$LLVM_VERSION" "libclang-$LLVM_VERSION-dev" "lld-$LLVM_VERSION" "llvm-$LLVM_VERSION"
    # private apt fetch of the kernel source
    debian-archive-keyring
    # VMs
    qemu-system-x86 busybox-static
    # MPICH's hydra mpiexec: the mpi crate's conformance suite also runs
    # under it (PMI-1 interoperability); Open MPI and MPICH with their
    # compilers are the peers the main job compares against
    mpich libmpich-dev openmpi-bin libopenmpi-dev
    # the C ABI's tests: C++ programs on mpi.h (mpicxx), and pkg-config
    # on o2g-mpi.pc; mpi4py built from source for its test suite
    # (scripts/mpi4py.sh)
    g++ pkg-config python3-dev python3-venv python3-pip
    # the Fortran bindings: capi/build.rs compiles the `mpi` module, and
    # mpifort's test programs (capi/tests/fortran)
    gfortran
    # system calls per received message, counted in the guest (bench suite)
    strace
    # user-space instructions per call (scripts/bench-instructions.sh, and
    # bench-instructions in the guest)
    valgrind
    # perf profiles in the guest (bench-profile; qemu/vm.sh copies perf in,
    # and glibc's symbols so that memcpy and the like have names)
    linux-perf libc6-dbg
    # the install test builds o2g.ko the way a node does (scripts/test-install.sh)
    dkms
    # applies examples/rsmpi/o2g.patch to rsmpi's examples (scripts/test-rsmpi-examples.sh)
    patch
    # the libraries of Slurm and MUNGE, whose daemons run only in the
    # guests (scripts/fetch-slurm.sh unpacks them without installing)
    libmunge2 libhwloc15 libjson-c5 liblua5.1-0 libyaml-0-2 libnuma1
    libdbus-1-3 liblz4-1 libpam0g libreadline8 libgcrypt20 libbz2-1.0 zlib1g
)

missing=()
for p in "${DEB_PACKAGES[@]}"; do
    [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" == *"install ok installed"* ]] || missing+=("$p")
done
if ((${#missing[@]})); then
    log "installing Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt_log="$(mktemp)"
    if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$apt_log" 2>&1; then
        cat "$apt_log" >&2
        die "apt-get failed"
    fi
    rm -f "$apt_log"
fi

# Each check greps captured output: `cmd | grep -q` under pipefail fails when
# grep's early exit hands cmd a SIGPIPE, and the step would rerun needlessly.
if ! grep -q '^rust-src' <<<"$(rustup component list --installed 2>/dev/null)"; then
    log "adding rust-src"
    rustup component add rust-src
fi

if ! grep -qF "$BINDGEN_VERSION" <<<"$(bindgen --version 2>/dev/null)"; then
    log "installing bindgen-cli $BINDGEN_VERSION"
    cargo install --locked --quiet bindgen-cli --version "$BINDGEN_VERSION"
fi

"$O2G_ROOT/scripts/fetch-kernel-source.sh"
# Slurm and MUNGE for the guests' cluster (unpacked, not installed)
"$O2G_ROOT/scripts/fetch-slurm.sh" >/dev/null
# MPICH 5.0 standard-ABI header and library for the capi binary-compatibility test
"$O2G_ROOT/scripts/fetch-mpi-abi.sh" >/dev/null
# --- cargo-fuzz, for scripts/fuzz.sh (begin) ---------------------------------
# cargo-fuzz builds with nightly-only flags, so it needs a nightly toolchain
# beside the stable one; the version is pinned like bindgen-cli's.
CARGO_FUZZ_VERSION=0.13.2
if ! grep -q '^nightly-' <<<"$(rustup toolchain list)"; then
    log "installing the nightly toolchain (for cargo-fuzz)"
    rustup toolchain install nightly --profile minimal
fi
if ! grep -qx "cargo-fuzz $CARGO_FUZZ_VERSION" <<<"$(cargo +nightly fuzz --version 2>/dev/null)"; then
    log "installing cargo-fuzz $CARGO_FUZZ_VERSION"
    cargo install --locked --quiet cargo-fuzz --version "$CARGO_FUZZ_VERSION"
fi
# --- cargo-fuzz (end) ----------------------------------------------------------
log "setup complete"
