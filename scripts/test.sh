#!/usr/bin/env bash
# The test command: set up what is missing, then run every test.
#   1. host: cargo fmt --check, clippy, cargo test --workspace, bounded
#      cargo-fuzz of o2g-core (no VM, no kernel)
#   2. debug guest kernel + o2g.ko (Kbuild: a Kbuild-only breakage fails here)
#   3. one VM: the module suite (qemu/suites/module.suite)
#   4. three VMs on a private network: the cluster suite
#   5. two VMs with Open MPI and MPICH: their launchers across VMs
#   6. one VM: the MPI conformance suite over the o2g transport
#   7. the harness's self-test: injected failures must be caught
# Ends with one line "N passed, N failed" over all of it.
set -uo pipefail
source "$(dirname "$0")/env.sh"
cd "$O2G_ROOT"

"$O2G_ROOT/scripts/setup.sh" || die "setup failed"

passed=0 failed=0
logdir="$O2G_ROOT/target/test-logs"

# stage NAME: prints how long the previous stage took, then starts NAME.
stage_name="setup" stage_start=0
stage() {
    echo "# stage $stage_name: $((SECONDS - stage_start)) s"
    stage_name="$1" stage_start=$SECONDS
}
mkdir -p "$logdir"

# step NAME CMD...: a check that counts as one test.
step() {
    local name="$1"; shift
    if "$@"; then
        echo "ok - $name"; passed=$((passed + 1))
    else
        echo "not ok - $name"; failed=$((failed + 1))
    fi
}

stage "host checks"
step "cargo fmt --check" cargo fmt --all --check
step "cargo clippy" cargo clippy --workspace --all-targets --quiet -- -D warnings

# Host unit, property and integration tests: count each test.
cargo test --workspace 2>&1 | tee "$logdir/cargo-test.log"
cargo_rc=${PIPESTATUS[0]}
read -r p f < <(awk '/^test result:/ {p += $4; f += $6} END {print p+0, f+0}' "$logdir/cargo-test.log")
passed=$((passed + p)); failed=$((failed + f))
if ((cargo_rc != 0 && f == 0)); then
    echo "not ok - cargo test (exit $cargo_rc before any test failed: build error?)"
    failed=$((failed + 1))
fi

# Bounded fuzzing of o2g-core: every core/fuzz target, O2G_FUZZ_SECS
# (default 10 here) seconds each, against its model.
stage "fuzz"
step "fuzz o2g-core (scripts/fuzz.sh)" env O2G_FUZZ_SECS="${O2G_FUZZ_SECS:-10}" "$O2G_ROOT/scripts/fuzz.sh"

# In-guest suites: count each in-guest test.
vm_suite() {
    local out="$logdir/vm-$1.log"; shift
    "$O2G_ROOT/qemu/vm.sh" "$@" 2>&1 | tee "$out"
    local rc=${PIPESTATUS[0]} line p f
    line="$(grep -E '^vm: [0-9]+ passed, [0-9]+ failed' "$out" | tail -1)"
    if [[ -z "$line" ]]; then
        echo "not ok - vm $* (harness failed before running tests)"
        failed=$((failed + 1)); return
    fi
    read -r p f < <(sed -E 's/^vm: ([0-9]+) passed, ([0-9]+) failed.*/\1 \2/' <<<"$line")
    passed=$((passed + p)); failed=$((failed + f))
    if ((rc != 0 && f == 0)); then failed=$((failed + 1)); fi
}
# The debug guest kernel (cached; built from nothing on a fresh machine)
# and o2g.ko: a Kbuild-only breakage fails here.
stage "debug kernel and o2g.ko"
step "build the debug kernel and o2g.ko" "$O2G_ROOT/qemu/build-module.sh" debug

stage "vm: module"
vm_suite module --timeout 300 module
stage "vm: cluster"
vm_suite cluster --nodes 3 --timeout 600 cluster
stage "vm: cluster-peers"
O2G_VM_MEM=2048 O2G_GUEST_PEERS=1 vm_suite cluster-peers --nodes 2 --timeout 900 cluster-peers
# The MPI conformance suite over the o2g transport (a 1 GiB message: 6 GiB guest).
stage "vm: mpi"
O2G_VM_MEM=6144 vm_suite mpi --timeout 900 mpi

# The harness must also be able to fail: injected reports, hangs, crashes.
stage "harness self-test"
"$O2G_ROOT/qemu/selftest.sh" >"$logdir/selftest.log" 2>&1
selftest_rc=$?
grep -E '^(not )?ok - |^# ' "$logdir/selftest.log"
p="$(grep -c '^ok - ' "$logdir/selftest.log")"
f="$(grep -c '^not ok - ' "$logdir/selftest.log")"
passed=$((passed + p)); failed=$((failed + f))
if ((selftest_rc != 0 && f == 0)); then
    echo "not ok - harness self-test (exit $selftest_rc before reporting a failure)"
    tail -20 "$logdir/selftest.log" | sed 's/^/# /'
    failed=$((failed + 1))
fi

stage "done"
echo "$passed passed, $failed failed"
((failed == 0))
