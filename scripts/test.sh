#!/usr/bin/env bash
# The test command: set up what is missing, then run every test.
#   1. host: cargo fmt --check (and rustfmt on kmod/), clippy, cargo test --workspace, bounded
#      cargo-fuzz of o2g-core (no VM, no kernel), and a fixed subset of
#      mpi4py's test suite on the C ABI (scripts/mpi4py.sh)
#   2. debug guest kernel + o2g.ko (Kbuild: a Kbuild-only breakage fails here);
#      scripts/install.sh into a fresh prefix used as a user would (and
#      DKMS building o2g.ko from it), an external cargo project on the
#      mpi crate, cargo doc, rsmpi's examples over every host transport
#   3. one VM: the module suite (qemu/suites/module.suite)
#   4. three VMs on a private network: the cluster suite
#   5. two VMs with Open MPI and MPICH: their launchers across VMs
#   6. one VM: the MPI conformance suite over the o2g transport
#   7. the harness's self-test: injected failures must be caught
# Long runs take a bounded slice by default (fewer rank counts in the
# guests, shorter floods and races, fewer Slurm cases); `--full` (or
# O2G_FULL=1) runs all of them, and longer fuzzing (O2G_FUZZ_SECS=60).
# Reports in the harness's KTAP style (qemu/ktap.sh): a plan of one result
# per step, a VM suite's and the self-test's own KTAP output nested
# (indented) before their step's result, "# stage NAME: S s" as each stage
# ends. Ends with one line "N passed, N failed" over every test counted:
# each step, each host test cargo runs, each in-guest test and self-test
# case (a suite's or the self-test's failure to run at all counts as one).
set -uo pipefail
case "${1:-}" in
    --full) export O2G_FULL=1 ;;
    "") ;;
    *) echo "usage: scripts/test.sh [--full]" >&2; exit 2 ;;
esac
if [[ "${O2G_FULL:-0}" == 1 ]]; then export O2G_FUZZ_SECS="${O2G_FUZZ_SECS:-60}"; fi
source "$(dirname "$0")/env.sh"
source "$O2G_ROOT/qemu/ktap.sh"
cd "$O2G_ROOT"

"$O2G_ROOT/scripts/setup.sh" || die "setup failed"

passed=0 failed=0
logdir="$O2G_ROOT/target/test-logs"
mkdir -p "$logdir"

# The debug kernel (15 minutes from nothing) builds at the lowest priority
# while the host stages run: they leave a CPU idle for much of their time
# (one fuzz target at a time, mpi4py's C file, waiting ranks). Its stage
# waits for it; a cached kernel returns at once. A failure here shows in
# that stage, which builds again.
setsid nice -n 19 "$O2G_ROOT/qemu/build-kernel.sh" debug >"$logdir/kernel-early.log" 2>&1 &
kernel_pid=$!
trap 'kill -- -"$kernel_pid" 2>/dev/null' EXIT

# stage NAME: prints how long the previous stage took, then starts NAME.
stage_name="setup" stage_start=0
stage() {
    echo "# stage $stage_name: $((SECONDS - stage_start)) s"
    stage_name="$1" stage_start=$SECONDS
}

echo "KTAP version 1"
echo "1..14"
n=0

# result OK NAME [REASON]: this run's next result line (OK: 1 or 0).
result() {
    n=$((n + 1))
    if (($1)); then echo "ok $n - $2"; else echo "not ok $n - $2${3:+ ($3)}"; fi
}

# step NAME CMD...: a check that counts as one test.
step() {
    local name="$1"; shift
    if "$@"; then
        result 1 "$name"; passed=$((passed + 1))
    else
        result 0 "$name"; failed=$((failed + 1))
    fi
}

# nested NAME LOG RC: counts the KTAP output in LOG (a suite's, run with
# exit status RC) test by test, and reports it as one result.
nested() {
    local name="$1" log="$2" rc="$3" p f s
    read -r p f s < <(ktap_count "$log")
    # A harness that failed before its first result has no plan: that
    # counts as one failure already.
    if ((rc != 0 && f == 0)); then f=1; fi
    passed=$((passed + p)); failed=$((failed + f))
    result $((f == 0)) "$name" "$p passed, $f failed, $s skipped"
}

# counted NAME TAG CMD...: runs CMD, whose summary line is "TAG: N passed,
# M failed", and counts its N and M (a CMD that fails without a failure
# counted counts one).
counted() {
    local name="$1" tag="$2" log="$logdir/$2.log" rc p f
    shift 2
    "$@" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    read -r p f < <(awk -v t="$tag:" '$1 == t && $3 == "passed," {p = $2; f = $4} END {print p + 0, f + 0}' "$log")
    if ((rc != 0 && f == 0)); then f=1; fi
    passed=$((passed + p)); failed=$((failed + f))
    result $((f == 0)) "$name" "$p passed, $f failed"
}

stage "host checks"
step "cargo fmt --check" cargo fmt --all --check
# The module is no workspace member: rustfmt follows its `mod` tree (the
# kernel's .rustfmt.toml asks for rustfmt's defaults, edition 2021).
step "rustfmt --check (kmod)" rustfmt --edition 2021 --check kmod/o2g_main.rs
step "cargo clippy" cargo clippy --workspace --all-targets --quiet -- -D warnings

# Host unit, property and integration tests: count each test (cargo's
# own summary lines).
cargo test --workspace 2>&1 | tee "$logdir/cargo-test.log"
cargo_rc=${PIPESTATUS[0]}
# Only whole summary lines count: a line that two processes' output
# interleaved is skipped (a real failure still fails cargo's exit status).
read -r p f < <(awk '/^test result: (ok|FAILED)\. [0-9]+ passed; [0-9]+ failed;/ {p += $4; f += $6}
    END {print p+0, f+0}' "$logdir/cargo-test.log")
passed=$((passed + p)); failed=$((failed + f))
if ((cargo_rc != 0 && f == 0)); then
    failed=$((failed + 1))
    result 0 "cargo test" "exit $cargo_rc before any test failed: build error?"
else
    result $((f == 0)) "cargo test" "$p passed, $f failed"
fi

# Bounded fuzzing of o2g-core: every core/fuzz target, O2G_FUZZ_SECS
# (default 10 here) seconds each, against its model.
stage "fuzz"
step "fuzz o2g-core (scripts/fuzz.sh)" env O2G_FUZZ_SECS="${O2G_FUZZ_SECS:-10}" "$O2G_ROOT/scripts/fuzz.sh"

# mpi4py's own tests (a fixed subset) on the C ABI, over every host
# transport and under MPICH's mpiexec: each test counted once per run.
stage "mpi4py"
counted "mpi4py's test suite (scripts/mpi4py.sh)" mpi4py "$O2G_ROOT/scripts/mpi4py.sh"

# In-guest suites: count each in-guest test, from vm.sh's KTAP output
# (shown nested).
vm_suite() {
    local out="$logdir/vm-$1.log"; shift
    "$O2G_ROOT/qemu/vm.sh" "$@" 2>&1 | tee "$out" | sed -u 's/^/    /'
    nested "vm $*" "$out" "${PIPESTATUS[0]}"
}
# The debug guest kernel (cached; built from nothing on a fresh machine)
# and o2g.ko: a Kbuild-only breakage fails here.
stage "debug kernel and o2g.ko"
wait "$kernel_pid" || tail -30 "$logdir/kernel-early.log" | sed 's/^/    # /'
trap - EXIT
step "build the debug kernel and o2g.ko" "$O2G_ROOT/qemu/build-module.sh" debug

# Installing as a user would, and the mpi crate as a user's dependency.
stage "install"
step "install into a fresh prefix, build and run from it, dkms (scripts/test-install.sh)" \
    "$O2G_ROOT/scripts/test-install.sh"
step "mpi crate from a project outside the workspace; cargo doc (scripts/test-external.sh)" \
    "$O2G_ROOT/scripts/test-external.sh"
# rsmpi's examples on our crate, over every host transport: each run counted.
counted "rsmpi's examples (scripts/test-rsmpi-examples.sh)" rsmpi-examples \
    "$O2G_ROOT/scripts/test-rsmpi-examples.sh"

stage "vm: module"
vm_suite module --timeout 300 module
stage "vm: cluster"
vm_suite cluster --nodes 3 --timeout 900 cluster
stage "vm: cluster-peers"
O2G_VM_MEM=2048 O2G_GUEST_PEERS=1 vm_suite cluster-peers --nodes 2 --timeout 900 cluster-peers
# The MPI conformance suite over the o2g transport (a 1 GiB message: 6 GiB guest).
stage "vm: mpi"
O2G_VM_MEM=6144 vm_suite mpi --timeout 900 mpi

# The harness must also be able to fail: injected reports, hangs, crashes.
stage "harness self-test"
"$O2G_ROOT/qemu/selftest.sh" >"$logdir/selftest.log" 2>&1
selftest_rc=$?
# Its results and what it says about them; the VM runs it made are in the log.
grep -E '^(not )?ok [0-9]+ - |^# |^1\.\.' "$logdir/selftest.log" | sed 's/^/    /'
if ((selftest_rc != 0)) && ! grep -q '^not ok ' "$logdir/selftest.log"; then
    tail -20 "$logdir/selftest.log" | sed 's/^/    # /'
fi
nested "harness self-test" "$logdir/selftest.log" "$selftest_rc"

stage "done"
echo "$passed passed, $failed failed"
((failed == 0))
