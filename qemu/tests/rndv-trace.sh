# The module's trace events (kmod/o2g_trace.h) show each step of a 1 MiB
# rendezvous message between two ranks over o2g: the offer, the request
# matched or stored, the clear-to-send written and received, the data
# started and ended, and the receive filled, with the message's length.
# The first offer comes before the first data, which ends after it
# starts. Needs a kernel with tracepoints (the debug guest): without
# tracefs it says so and fails. The threshold is set below the message:
# on one host the default sends 1 MiB eager.
set -u
o2g-trace on || exit 1
O2G_TRANSPORT=o2g O2G_SELF=0 O2G_RNDV_THRESHOLD=65536 o2grun -n 2 --timeout 300 \
    o2g-pingpong --sizes 1M --reps 1 --max-iters 2 >/tmp/rndv-trace.out 2>&1
rc=$?
o2g-trace off /tmp/rndv-trace.txt
[ "$rc" = 0 ] || { cat /tmp/rndv-trace.out; echo "rndv-trace: the ping-pong failed ($rc)"; exit 1; }
# line EVENT [LEN]: the number of the first trace line of EVENT (with
# len=LEN if given), or nothing.
line() { grep -n " $1: rank=[0-9]* len=${2:-[0-9]*} " /tmp/rndv-trace.txt | head -1 | cut -d: -f1; }
fail=0
for e in o2g_offer o2g_cts_received o2g_data_start o2g_data_end o2g_recv_end; do
    [ -n "$(line $e 1048576)" ] || { echo "rndv-trace: no $e of 1048576 bytes"; fail=1; }
done
[ -n "$(line o2g_cts_sent)" ] || { echo "rndv-trace: no o2g_cts_sent"; fail=1; }
[ -n "$(line o2g_rts_matched 1048576)$(line o2g_rts_stored 1048576)" ] ||
    { echo "rndv-trace: no request to send of 1048576 bytes"; fail=1; }
if [ "$fail" = 0 ]; then
    offer="$(line o2g_offer 1048576)" start="$(line o2g_data_start 1048576)" end="$(line o2g_data_end 1048576)"
    [ "$offer" -lt "$start" ] && [ "$start" -lt "$end" ] ||
        { echo "rndv-trace: out of order: offer at line $offer, data start $start, end $end"; fail=1; }
fi
if [ "$fail" != 0 ]; then
    head -40 /tmp/rndv-trace.txt
    exit 1
fi
echo "rndv-trace: $(grep -c ' o2g_' /tmp/rndv-trace.txt) events, every step of a 1 MiB rendezvous in order"
