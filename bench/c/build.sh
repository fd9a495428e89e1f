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
if [ "$source" = is ]; then
    # The sort's iteration must lie on one page of code (see is.c).
    read -r addr size < <(nm -S "$outdir/$name" | awk '$4 == "rank_keys" { print $1, $2 }')
    if [ -z "${addr:-}" ] || ((0x$addr % 4096 != 0 || 0x$size > 4096)); then
        echo "build.sh: $outdir/$name: rank_keys at ${addr:-?}, ${size:-?} bytes, is not within one page" >&2
        exit 1
    fi
fi
echo "$outdir/$name"
