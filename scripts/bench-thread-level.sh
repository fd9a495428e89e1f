#!/usr/bin/env bash
# What MPI_THREAD_MULTIPLE costs a single-threaded program (issue 24): the
# 8-byte ping-pong of bench/c/pingpong.c on the host, 2 ranks over
# O2G_TRANSPORT (default sockets-epoll), initialised with MPI_Init and with
# MPI_Init_thread(MPI_THREAD_MULTIPLE), REPS interleaved runs each (each
# run's figure is the median of its 5 repetitions), judged by o2g-judge:
# medians with 95% intervals, MULTIPLE's ratio to SINGLE and a verdict.
# "single" plays the peer in the judgement. Run it on an idle machine;
# figures only.
#
# usage: scripts/bench-thread-level.sh [REPS]   (default 10)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
reps="${1:-10}"
transport="${O2G_TRANSPORT:-sockets-epoll}"
cargo build --quiet --release -p o2g-mpi-abi -p mpi -p o2g-bench --manifest-path "$root/Cargo.toml"
out="$root/target/bench-c"
"$root/bench/c/build.sh" "$root/capi/mpicc" "$out" pingpong-o2g pingpong >/dev/null
csv="$(mktemp)"
trap 'rm -f "$csv"' EXIT
echo "series,x,rep,value" >"$csv"
for rep in $(seq 1 "$reps"); do
    for level in single multiple; do
        us="$(PINGPONG_THREADS="$level" O2G_TRANSPORT="$transport" \
            "$root/target/release/o2grun" -n 2 --timeout 120 "$out/pingpong-o2g" 8 |
            awk '$1 == 8 { print $2 }')"
        [[ -n "$us" ]] || { echo "bench-thread-level: no 8-byte figure ($level)" >&2; exit 1; }
        echo "$level,8,$rep,$us" >>"$csv"
        echo "$level run $rep: $us us"
    done
done
"$root/target/release/o2g-judge" --csv "$csv" --ours multiple --peer single --lower-is-better
