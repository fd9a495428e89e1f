#!/usr/bin/env bash
# Build the C NAS-IS-style benchmark with one MPI's compiler wrapper.
#
# usage: bench/c/build.sh MPICC OUTDIR [NAME]
#   e.g. bench/c/build.sh mpicc.openmpi target/bench-c is-openmpi
#   Writes OUTDIR/NAME (default: is). Warnings are errors, so the source
#   stays clean under every mpicc it is meant for.
set -euo pipefail
mpicc="${1:?usage: build.sh MPICC OUTDIR [NAME]}"
outdir="${2:?usage: build.sh MPICC OUTDIR [NAME]}"
name="${3:-is}"
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$outdir"
"$mpicc" -std=c11 -O2 -Wall -Wextra -Werror -o "$outdir/$name" "$here/is.c"
echo "$outdir/$name"
