#!/usr/bin/env bash
# Tests of the harness itself: the result reader (qemu/ktap.sh) must count
# every way a run can go wrong as a failure, and each VM case must make
# qemu/vm.sh fail, in the expected way, and leave no QEMU process behind.
#
# usage: qemu/selftest.sh   (KTAP: the plan, then "ok"/"not ok" per case;
#                            exit 0 if all hold)
set -uo pipefail
source "$(dirname "$0")/../scripts/env.sh"
source "$O2G_ROOT/qemu/ktap.sh"

failed=0 case=0
out="$(mktemp)"
trap 'rm -f "$out"' EXIT

# result NAME WHY: one case's result line (WHY empty: it held).
result() {
    case=$((case + 1))
    if [[ -z "$2" ]]; then
        echo "ok $case - harness: $1"
    else
        echo "not ok $case - harness: $1 ($2)"
        failed=$((failed + 1))
    fi
}

# counts NAME "P F S" KTAP_TEXT: the reader counts KTAP_TEXT as P passed,
# F failed, S skipped.
counts() {
    local got
    got="$(printf '%b' "$3" | ktap_count)"
    result "reader: $1" "$([[ "$got" == "$2" ]] || echo "counted '$got', want '$2'")"
}

# expect NAME RC PATTERN...: the last vm.sh run (RC, output in $out)
# failed, printed every PATTERN, and left no QEMU process running.
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
    result "$name" "$why"
    [[ -z "$why" ]] || sed 's/^/# /' "$out"
}

echo "KTAP version 1"
echo "1..9"

# The reader, on canned output (no VM).
counts "passes, skips and a serial console's carriage returns" "2 0 1" \
    '1..3\nok 1 - a\r\nok 2 - b # SKIP no device\r\nok 3 - c\n'
counts "a result missing from the plan is a failure" "1 2 0" \
    '1..3\nok 1 - a\n# the guest died here\n'
counts "output with no plan is a failure" "1 1 0" 'ok 1 - a\n'
counts "results outside the plan or twice are failures" "1 3 0" \
    '1..2\nok 1 - a\nok 1 - a again\nok 3 - beyond\n'
counts "nested (indented) results are not counted" "1 0 0" \
    '1..1\n    1..1\n    not ok 1 - inner\nok 1 - outer\n'
counts "a bail-out is a failure" "1 1 0" '1..1\nok 1 - a\nBail out! lost the guest\n'

# One boot: a kernel-log report, a per-test timeout, then a guest that dies
# before its last two tests: their missing results are failures by name.
O2G_SELFTEST=1 "$O2G_ROOT/qemu/vm.sh" --timeout 10 warn timeout die pass >"$out" 2>&1
expect "reports, timeouts, sudden death and missing results are failures" $? \
    '^1\.\.4$' \
    '^not ok 1 - node0/warn .*kernel log has a report' \
    '^not ok 2 - node0/timeout timed out' \
    '^not ok 3 - node0/die # no result' \
    '^not ok 4 - node0/pass # no result' \
    '^vm: 0 passed, 4 failed'

# One boot: a test that ignores its timeout; the host deadline must end it.
O2G_SELFTEST=1 O2G_BOOT_TIMEOUT=60 "$O2G_ROOT/qemu/vm.sh" --timeout 5 stuck >"$out" 2>&1
expect "a stuck guest is stopped at the deadline" $? \
    'deadline passed' \
    '^not ok 1 - node0/stuck # no result' \
    '^# node0: guest did not finish' \
    '^vm: 0 passed, 1 failed'

# The suite syntax: a name with no script that is no o2g-vmtest check is
# refused on the host, before any boot.
"$O2G_ROOT/qemu/vm.sh" --timeout 5 no-such-check >"$out" 2>&1
rc=$?
why=""
((rc != 0)) || why="vm.sh succeeded"
grep -q 'no such guest test' "$out" || why="${why:+$why; }no 'no such guest test' message"
! grep -q '^vm: ' "$out" || why="${why:+$why; }it booted"
result "an unknown test name is refused before booting" "$why"
[[ -z "$why" ]] || sed 's/^/# /' "$out"

((failed == 0))
