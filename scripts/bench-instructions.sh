#!/usr/bin/env bash
# User-space instructions per call of the library, counted by callgrind:
# a cost no noise on the machine changes, so a change to the per-message
# path shows here exactly, where timings on these 2-core machines cannot
# tell it from noise (issue 22, part 1). Host only, socket transports.
#
# usage: scripts/bench-instructions.sh [--csv FILE] [--calls LO,HI]
#
# For each socket transport, rank 0 of bench/c/calls.c (through our
# libmpi_abi) and of the Rust o2g-pingpong runs under callgrind at LO and
# HI calls; the difference over HI - LO is one call's cost, start-up and
# shutdown cancelling out. Both ranks share one CPU (taskset), so the
# library never spins: every instruction counted is work, not waiting.
# Operations, 8 bytes each: pingpong (one round trip: a send and a
# receive), sendrecv, allreduce, barrier; and pingpong of 64 KiB (a
# rendezvous). The o2g transport runs in the guest (qemu/tests/
# bench-instructions.sh), since the host has no o2g.ko.
#
# Environment: O2G_INSTR_LIB=DIR runs the C program on the libmpi_abi.so.1
# in DIR instead (another build, for an A/B; the Rust rows then still
# show this tree).
set -euo pipefail
source "$(dirname "$0")/env.sh"

csv="" calls="1000,3000"
while (($#)); do
    case "$1" in
        --csv) csv="$2"; shift 2 ;;
        --calls) calls="$2"; shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument $1 (see --help)" ;;
    esac
done
lo="${calls%,*}" hi="${calls#*,}"
[[ "$lo" =~ ^[0-9]+$ && "$hi" =~ ^[0-9]+$ && "$hi" -gt "$lo" ]] || die "--calls wants LO,HI with HI > LO"
command -v valgrind >/dev/null || die "needs valgrind (scripts/setup.sh installs it)"

rel="$O2G_ROOT/target/release"
cargo build --quiet --release -p o2g-mpi-abi -p mpi -p o2g-bench --manifest-path "$O2G_ROOT/Cargo.toml"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
calls_bin="$("$O2G_ROOT/bench/c/build.sh" "$O2G_ROOT/capi/mpicc" "$work" calls calls)"

# total TRANSPORT COMMAND...: rank 0's instruction total under callgrind
# (the largest of the ranks' files that ran COMMAND's program: rank 0
# does the most in every operation here, and the ranks of pingpong the same).
total() {
    local t="$1"
    shift
    rm -f "$work"/cg.*
    LD_LIBRARY_PATH="${O2G_INSTR_LIB:-$rel}" O2G_TRANSPORT="$t" taskset -c 0 "$rel/o2grun" -n 2 --timeout 900 \
        valgrind --tool=callgrind --callgrind-out-file="$work/cg.%p" "$@" >"$work/out" 2>"$work/err" ||
        { cat "$work/out" "$work/err" >&2; die "$t: $* failed under callgrind"; }
    grep -q ' ok$\|half-rtt' "$work/out" || { cat "$work/out" >&2; die "$t: $* gave no result"; }
    local n
    n="$(grep -h '^totals:' "$work"/cg.* | awk '{ print $2 }' | sort -n | tail -1)"
    [[ -n "$n" ]] || die "$t: callgrind wrote no totals"
    echo "$n"
}

# per_call SERIES OP BYTES CALLS_PER_UNIT COMMAND_AT(COUNT)...: prints and
# records the instructions of one call.
results=()
per_call() {
    local series="$1" op="$2" bytes="$3" per="$4" t="$5"
    shift 5
    local a b
    a="$(total "$t" "${@/@N@/$lo}")"
    b="$(total "$t" "${@/@N@/$hi}")"
    local n=$(((b - a) / ((hi - lo) * per)))
    printf '%-16s %-10s %7s B %8d instructions per call\n' "$series" "$op" "$bytes" "$n"
    results+=("$series,$op,$bytes,$n")
}

echo "# user-space instructions per call, rank 0 (callgrind, $lo and $hi calls)"
for t in sockets-select sockets-poll sockets-epoll; do
    for op in pingpong sendrecv allreduce barrier; do
        per_call "$t-C" "$op" 8 1 "$t" "$calls_bin" "$op" 8 @N@
    done
    per_call "$t-C" pingpong 65536 1 "$t" "$calls_bin" pingpong 65536 @N@
    # o2g-pingpong runs its plan twice (an untimed repetition, then --reps 1).
    per_call "$t-Rust" pingpong 8 2 "$t" "$rel/o2g-pingpong" --sizes 8 --reps 1 --max-iters @N@
done
if [[ -n "$csv" ]]; then
    { echo "series,operation,bytes,instructions"; printf '%s\n' "${results[@]}"; } >"$csv"
    echo "wrote $csv"
fi
