#!/usr/bin/env bash
# Tests of the VM harness itself: each case must make qemu/vm.sh fail, in the
# expected way, and leave no QEMU process behind.
#
# usage: qemu/selftest.sh   (prints "ok"/"not ok" per case; exit 0 if all hold)
set -uo pipefail
source "$(dirname "$0")/../scripts/env.sh"

failed=0
out="$(mktemp)"
trap 'rm -f "$out"' EXIT

# expect NAME PATTERN...: the last vm.sh run failed and printed every PATTERN.
expect() {
    local name="$1" rc="$2"; shift 2
    local why=""
    ((rc != 0)) || why="vm.sh succeeded"
    for pat in "$@"; do
        grep -qE -- "$pat" "$out" || why="${why:+$why; }missing /$pat/"
    done
    local run pid
    run="$(sed -nE 's/^vm: .*\((.*)\)$/\1/p' "$out")"
    if [[ -f "$run/qemu.pids" ]]; then
        while read -r pid; do
            kill -0 "$pid" 2>/dev/null && why="${why:+$why; }QEMU $pid still running"
        done <"$run/qemu.pids"
    else
        why="${why:+$why; }no qemu.pids in '$run'"
    fi
    if [[ -z "$why" ]]; then
        echo "ok - harness: $name"
    else
        echo "not ok - harness: $name ($why)"
        sed 's/^/# /' "$out"
        failed=$((failed + 1))
    fi
}

# One boot: a kernel-log report, a per-test timeout, then a guest that dies.
O2G_SELFTEST=1 "$O2G_ROOT/qemu/vm.sh" --timeout 10 warn timeout die >"$out" 2>&1
expect "reports, timeouts and sudden death are failures" $? \
    '^not ok 1 - node0/warn .*kernel log has a report' \
    '^not ok 2 - node0/timeout timed out' \
    '^not ok - node0/finished' \
    '^vm: 0 passed, [0-9]+ failed'

# One boot: a test that ignores its timeout; the host deadline must end it.
O2G_SELFTEST=1 O2G_BOOT_TIMEOUT=60 "$O2G_ROOT/qemu/vm.sh" --timeout 5 stuck >"$out" 2>&1
expect "a stuck guest is stopped at the deadline" $? \
    'deadline passed' \
    '^not ok - node0/finished'

# The suite syntax: a name with no script that is no o2g-vmtest check is
# refused on the host, before any boot.
"$O2G_ROOT/qemu/vm.sh" --timeout 5 no-such-check >"$out" 2>&1
rc=$?
why=""
((rc != 0)) || why="vm.sh succeeded"
grep -q 'no such guest test' "$out" || why="${why:+$why; }no 'no such guest test' message"
! grep -q '^vm: ' "$out" || why="${why:+$why; }it booted"
if [[ -z "$why" ]]; then
    echo "ok - harness: an unknown test name is refused before booting"
else
    echo "not ok - harness: an unknown test name is refused before booting ($why)"
    sed 's/^/# /' "$out"
    failed=$((failed + 1))
fi

((failed == 0))
