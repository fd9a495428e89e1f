# The TLB keeper that release boots start on each vCPU
# (qemu/guest-tests/src/tlb_keeper.rs): it stays alive, pinned to the CPU
# it was given, and wakes and sleeps again on its period without using the
# CPU; bad arguments and a CPU that does not exist are refused.
#
# Counts are taken over a window after start-up (exec under a debug kernel
# in TCG costs ticks of its own), never from one sample of its state (it
# may be caught awake).
set -u
o2g-vmtest tlb-keeper 0 50 &
pid=$!
fail() { echo "tlb-keeper: $1"; kill "$pid" 2>/dev/null; exit 1; }
field() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$pid/status"; }
ticks() { awk '{ print $14 + $15 }' "/proc/$pid/stat"; }
# Pinned within 10 s of starting.
for _ in $(seq 100); do
    [ -r "/proc/$pid/status" ] || fail "exited at once"
    [ "$(field Cpus_allowed_list)" = 0 ] && break
    sleep 0.1
done
cpus="$(field Cpus_allowed_list)"
[ "$cpus" = 0 ] || fail "allowed on CPUs $cpus after 10 s, want 0"
# Over 2 s of 50 ms naps (40 wake-ups): it wakes, and it uses well under
# 10% of a CPU (ticks of 10 ms).
switches0="$(field voluntary_ctxt_switches)" ticks0="$(ticks)"
sleep 2
[ -r "/proc/$pid/status" ] || fail "exited while napping"
switches=$(($(field voluntary_ctxt_switches) - switches0))
used=$(($(ticks) - ticks0))
[ "$switches" -ge 10 ] || fail "woke $switches times in 2 s, want about 40"
[ "$used" -lt 20 ] || fail "used $used ticks of CPU in 2 s"
kill "$pid"
for bad in "" "0" "0 0" "x 50" "4096 50" "64 50"; do
    # shellcheck disable=SC2086 # $bad is the words to pass
    if o2g-vmtest tlb-keeper $bad >/tmp/keeper.out 2>&1; then
        fail "accepted '$bad'"
    fi
    grep -q 'tlb-keeper' /tmp/keeper.out || fail "no message for '$bad': $(cat /tmp/keeper.out)"
done
echo "tlb-keeper: pinned, woke $switches times in 2 s using $used ticks; bad arguments refused"
