# The TLB keeper that release boots start on each vCPU
# (qemu/guest-tests/src/tlb_keeper.rs): it stays alive, pinned to the CPU
# it was given and asleep between its wake-ups; bad arguments and a CPU
# that does not exist are refused.
set -u
o2g-vmtest tlb-keeper 0 50 &
pid=$!
sleep 1
fail() { echo "tlb-keeper: $1"; kill "$pid" 2>/dev/null; exit 1; }
[ -r "/proc/$pid/status" ] || fail "exited at once"
cpus="$(awk '/^Cpus_allowed_list:/ { print $2 }' "/proc/$pid/status")"
[ "$cpus" = 0 ] || fail "allowed on CPUs $cpus, want 0"
state="$(awk '/^State:/ { print $2 }' "/proc/$pid/status")"
[ "$state" = S ] || fail "state $state, want S (asleep)"
# Its CPU time after a second of 50 ms naps: well under 100 ms (ticks of 10 ms).
ticks="$(awk '{ print $14 + $15 }' "/proc/$pid/stat")"
[ "$ticks" -lt 10 ] || fail "used $ticks ticks of CPU in 1 s"
kill "$pid"
for bad in "" "0" "0 0" "x 50" "4096 50" "64 50"; do
    # shellcheck disable=SC2086 # $bad is the words to pass
    if o2g-vmtest tlb-keeper $bad >/tmp/keeper.out 2>&1; then
        fail "accepted '$bad'"
    fi
    grep -q 'tlb-keeper' /tmp/keeper.out || fail "no message for '$bad': $(cat /tmp/keeper.out)"
done
echo "tlb-keeper: pinned, asleep, $ticks ticks; bad arguments refused"
