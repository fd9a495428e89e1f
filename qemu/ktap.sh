# The harness's one reader of test results (sourced by qemu/vm.sh,
# qemu/selftest.sh and scripts/test.sh; bash).
#
# Every layer of the harness reports in one KTAP-style dialect: a plan line
# "1..N" before its results, then one line per result,
#   ok N - name
#   ok N - name # SKIP reason
#   not ok N - name [reason]
# with diagnostics on lines starting "# ". Only unindented lines count: a
# layer that shows another's output nests it, indented (KTAP subtests), and
# counts it separately. Carriage returns (a serial console's) are ignored.
#
# Counting, by these rules (a result that cannot be trusted is a failure):
#   - "ok" is a pass, "ok ... # SKIP" a skip, "not ok" a failure;
#   - every number of the plan without a result is a failure (a test that
#     never reported: its guest died, hung or was stopped);
#   - a result outside the plan, or a second result for one number, is a
#     failure whatever it says (vm.sh reports its own host-side checks,
#     which fail only, after its plan);
#   - no plan line at all is one failure, each plan line after the first
#     is one, and "Bail out!" is one.

# The counting itself; MODE "count" prints "PASSED FAILED SKIPPED", MODE
# "missing" the plan's numbers without a result, one per line. DEFAULT_PLAN
# stands for a plan line the stream lacks (0: none).
_ktap_awk() {
    local mode="$1" default_plan="$2"
    shift 2
    awk -v mode="$mode" -v default_plan="$default_plan" '
        { sub(/\r$/, "") }
        /^1\.\.[0-9]+[ \t]*$/ {
            plans++
            if (plans == 1) plan = substr($0, 4) + 0
            next
        }
        /^Bail out!/ { bailed++; next }
        /^(not )?ok [0-9]+([ \t]|$)/ {
            ok = ($1 == "ok")
            num = (ok ? $2 : $3) + 0
            n++
            res_num[n] = num
            res_ok[n] = ok
            res_skip[n] = ok && $0 ~ /#[ \t]*[Ss][Kk][Ii][Pp]/
            next
        }
        END {
            if (plans == 0 && default_plan > 0) { plan = default_plan; plans = 1 }
            passed = failed = skipped = 0
            for (i = 1; i <= n; i++) {
                num = res_num[i]
                if (plans > 0 && (num < 1 || num > plan || (num in seen))) {
                    failed++
                    continue
                }
                seen[num] = 1
                if (!res_ok[i]) failed++
                else if (res_skip[i]) skipped++
                else passed++
            }
            missing = 0
            for (num = 1; num <= plan; num++) {
                if (num in seen) continue
                missing++
                if (mode == "missing") print num
            }
            failed += missing + bailed + (plans == 0) + (plans > 1 ? plans - 1 : 0)
            if (mode == "count") print passed, failed, skipped
        }' "$@"
}

# ktap_count [FILE...]: prints "PASSED FAILED SKIPPED" for the KTAP output
# in FILE (stdin if none).
ktap_count() {
    _ktap_awk count 0 "$@"
}

# ktap_missing PLAN FILE: the numbers of FILE's plan (PLAN if FILE has no
# plan line) that have no result, one per line.
ktap_missing() {
    _ktap_awk missing "$1" "$2"
}
