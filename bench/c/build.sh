#!/usr/bin/env bash
# Build a C benchmark (bench/c/SOURCE.c: is, the NAS-IS-style sort, or
# pingpong) with one MPI's compiler wrapper.
#
# usage: bench/c/build.sh MPICC OUTDIR [NAME [SOURCE]]
#   e.g. bench/c/build.sh mpicc.openmpi target/bench-c is-openmpi
#   Writes OUTDIR/NAME (default: is) from SOURCE.c (default: is.c).
#   Warnings are errors, so the source stays clean under every mpicc it is
#   meant for.
set -euo pipefail
mpicc="${1:?usage: build.sh MPICC OUTDIR [NAME]}"
outdir="${2:?usage: build.sh MPICC OUTDIR [NAME]}"
name="${3:-is}"
source="${4:-is}"
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$outdir"
"$mpicc" -std=c11 -O2 -Wall -Wextra -Werror -o "$outdir/$name" "$here/$source.c"
echo "$outdir/$name"
