#!/usr/bin/env bash
# Builds mpi4py from its PyPI source against o2g's C ABI and caches it.
#
#   scripts/mpi4py-build.sh LIBDIR
#
# LIBDIR holds the libmpi_abi.so to build against (target/debug or
# target/release). mpi4py is built with capi/mpicc and
# MPI4PY_BUILD_CONFIGURE=1 (its build probes which functions the library
# exports, so a function o2g lacks raises NotImplementedError instead of
# failing the import), into a virtualenv under $O2G_CACHE/mpi4py, keyed by
# mpi4py's version, the hashes of mpi.h and mpicc, the Python version and
# the library's list of exported functions (the same for a debug and a
# release build). Prints two lines, "venv=DIR" (the virtualenv) and
# "src=DIR" (the unpacked source, with its test/ directory); logs go to
# stderr.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$O2G_ROOT"

libdir="${1:?usage: mpi4py-build.sh LIBDIR}"
: "${MPI4PY_VERSION:=4.1.2}"
# Debian's Python (scripts/setup.sh installs its headers, venv and pip),
# not whichever python3 comes first on the PATH.
: "${O2G_PYTHON:=/usr/bin/python3}"

lib="$libdir/libmpi_abi.so"
[[ -e "$lib" ]] || die "no $lib: build o2g-mpi-abi first"
[[ -e "$libdir/libmpi_abi.so.1" ]] || ln -sf libmpi_abi.so "$libdir/libmpi_abi.so.1"

key=$( { sha256sum capi/include/mpi.h capi/mpicc | cut -d' ' -f1
         "$O2G_PYTHON" --version
         nm -D --defined-only "$lib" | awk '$2 == "T" {print $3}' | sort; } |
       sha256sum | cut -c1-16)
cache="$O2G_CACHE/mpi4py"
src="$cache/mpi4py-$MPI4PY_VERSION"
venv="$cache/venv-$MPI4PY_VERSION-$key"
mkdir -p "$cache"

if [[ ! -d "$src/test" ]]; then
    log "fetching mpi4py $MPI4PY_VERSION's source from PyPI"
    "$O2G_PYTHON" -m pip download --quiet --no-binary :all: --no-deps -d "$cache" \
        "mpi4py==$MPI4PY_VERSION" >&2 || die "pip download of mpi4py failed"
    tar -xzf "$cache/mpi4py-$MPI4PY_VERSION.tar.gz" -C "$cache" || die "unpacking mpi4py failed"
fi
if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c 'import mpi4py' 2>/dev/null; then
    log "building mpi4py $MPI4PY_VERSION against o2g's mpi.h (cached as $venv)"
    rm -rf "$venv"
    "$O2G_PYTHON" -m venv "$venv" >&2 || die "$O2G_PYTHON -m venv failed (python3-venv missing?)"
    # -O0 -g0: mpi4py's MPI.c is one translation unit of generated C whose
    # optimised build took about 10 of the test command's minutes on a
    # fresh 2-core machine (unoptimised 188 s, its tests 190 s); the tests
    # exercise o2g's library, not mpi4py's own speed.
    if ! MPICC="$O2G_ROOT/capi/mpicc" O2G_MPI_LIBDIR="$libdir" MPI4PY_BUILD_CONFIGURE=1 \
        CFLAGS="-O0 -g0" \
        "$venv/bin/pip" install --quiet --no-cache-dir --no-binary mpi4py \
        "$cache/mpi4py-$MPI4PY_VERSION.tar.gz" \
        >"$cache/build-$key.log" 2>&1; then
        tail -n 30 "$cache/build-$key.log" >&2
        rm -rf "$venv"
        die "building mpi4py failed (log: $cache/build-$key.log)"
    fi
fi
echo "venv=$venv"
echo "src=$src"
