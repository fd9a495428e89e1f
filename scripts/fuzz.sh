#!/usr/bin/env bash
# Fuzz o2g-core for a bounded time: build every cargo-fuzz target of
# core/fuzz, run each for O2G_FUZZ_SECS seconds, print its executions, and
# exit non-zero if any target crashed, hung or did not build.
#
#   scripts/fuzz.sh                      # every target, 20 s each
#   scripts/fuzz.sh dump stream_take     # only these targets
#   O2G_FUZZ_SECS=1800 O2G_FUZZ_DIR=/tmp/o2g-fuzz-long nice -n 19 scripts/fuzz.sh
#
# Everything a run writes goes under O2G_FUZZ_DIR (default target/fuzz,
# outside git): corpus/<target>/ (kept, so a later run starts from what
# earlier ones found), artifacts/<target>/ (the input that crashed) and
# <target>.log (libFuzzer's output). A crash replays with
#   core/fuzz/target/<host>/release/<target> <artifact>
# Needs the nightly toolchain and cargo-fuzz (scripts/setup.sh installs both).
set -uo pipefail
source "$(dirname "$0")/env.sh"

secs="${O2G_FUZZ_SECS:-20}"
dir="${O2G_FUZZ_DIR:-$O2G_ROOT/target/fuzz}"
fuzz="$O2G_ROOT/core/fuzz"
[[ "$secs" =~ ^[0-9]+$ ]] || die "O2G_FUZZ_SECS must be a number of seconds"

# No sanitizer: the crate and the targets have no unsafe code, so
# AddressSanitizer finds nothing safe Rust does not already rule out, and
# builds and runs take about half the time without it. Debug assertions and
# overflow checks stay on (cargo-fuzz's default).
log "building the fuzz targets (cargo +nightly fuzz build)"
cargo +nightly fuzz build --fuzz-dir "$fuzz" --sanitizer none ||
    die "the fuzz targets did not build"

if (($#)); then
    targets=("$@")
else
    mapfile -t targets < <(cargo +nightly fuzz list --fuzz-dir "$fuzz")
fi
((${#targets[@]})) || die "no fuzz targets"
host="$(rustc +nightly -vV | sed -n 's/^host: //p')"
bin="$fuzz/target/$host/release"

# A single file (log, crash input) may not grow past 1 GiB.
ulimit -f $((1024 * 1024))
failed=0
for t in "${targets[@]}"; do
    [[ -x "$bin/$t" ]] || { echo "fuzz $t: no such target"; failed=$((failed + 1)); continue; }
    mkdir -p "$dir/corpus/$t" "$dir/artifacts/$t"
    out="$dir/$t.log"
    # libFuzzer stops itself after max_total_time; `timeout` is for a
    # harness that would not. -timeout fails one input that runs 30 s.
    timeout --kill-after=30 $((secs + 120)) \
        "$bin/$t" "$dir/corpus/$t" \
        -max_total_time="$secs" -timeout=30 -rss_limit_mb=2048 -max_len=4096 \
        -print_final_stats=1 -artifact_prefix="$dir/artifacts/$t/" \
        >"$out" 2>&1
    rc=$?
    execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$out" | tail -1)"
    corpus="$(find "$dir/corpus/$t" -type f | wc -l)"
    if ((rc == 0)); then
        printf 'fuzz %-12s ok: %s executions in %ss, corpus %s inputs\n' \
            "$t" "${execs:-?}" "$secs" "$corpus"
    else
        failed=$((failed + 1))
        printf 'fuzz %-12s FAILED (exit %s) after %s executions; log %s\n' \
            "$t" "$rc" "${execs:-?}" "$out"
        grep -E -m1 -A3 'panicked at|ERROR: libFuzzer|SUMMARY' "$out" | sed 's/^/#   /'
        grep -E 'Test unit written to' "$out" | sed 's/^/#   /'
    fi
done
echo "fuzz: ${#targets[@]} targets, $failed failed"
((failed == 0))
