# A peer whose host goes silent mid-stream, with no reset (its link goes
# down): node 0's rank streams 8 MiB messages to node 1's, first over o2g,
# then over sockets-epoll. Over o2g, node 1 goes silent once a zero-copy
# send has been acknowledged (the trace event o2g_data_acked; needs
# tracepoints, the debug guest), so that more of them wait for TCP; over
# sockets-epoll, once node 0 has unacknowledged data on a connection to
# it. With O2G_PEER_TIMEOUT=10 each side's TCP gives up on the other after
# about 10 s (node 0 with data unacknowledged, node 1 with its keepalive
# probes unanswered): each job must end within 45 s of the silence, with
# an error that says the connection timed out (node 1: or that its
# network is unreachable), and not wait for its
# launcher's timeout or for its process manager behind the dead link.
# Node 1 brings its link back up after that. Over o2g, the module's
# references on both nodes (open endpoints, zero-copy sends TCP held) then
# drop to 0 within 60 s, so rmmod would succeed. Nodes past 1 check
# nothing.
set -u
[ "$O2G_NODE" -le 1 ] || { echo "silent-peer: node $O2G_NODE takes no part"; exit 0; }
fail() { cat /tmp/silent-peer.out; echo "silent-peer ($transport): $*"; exit 1; }

# Seconds until the job ends, at most $1.
job_ends_within() {
    t=0
    while [ ! -s /tmp/silent-peer.rc ] && [ "$t" -lt "$1" ]; do sleep 1; t=$((t + 1)); done
    echo "$t"
}

# Node 0: whether a connection to node 1 holds data it has not acknowledged
# (/proc/net/tcp: remote 198.18.0.2, established, a non-zero tx_queue).
unacked_to_node1() {
    awk '$3 ~ /^020012C6:/ && $4 == "01" && substr($5, 1, 8) != "00000000" { n++ } END { exit n == 0 }' \
        /proc/net/tcp
}

# One round: $1 the transport, $2 a port base for PMI and the signal.
silence() {
    transport="$1"
    port="$2"
    signal_port=$(($2 + 1))
    if [ "$O2G_NODE" = 0 ]; then pmi="--pmi-listen 0.0.0.0:$port"; else pmi="--pmi-server 198.18.0.1:$port"; fi
    rm -f /tmp/silent-peer.rc
    # The job's exit status lands in a file: a shell's `kill -0` cannot
    # tell an exited job from a running one until `wait` reaps it.
    # shellcheck disable=SC2086 # $pmi is two words on purpose
    (
        O2G_ADDR="198.18.0.$((O2G_NODE + 1))" O2G_TRANSPORT="$transport" O2G_SELF=0 \
            O2G_PEER_TIMEOUT=10 o2grun -n 2 --ranks "$O2G_NODE-$O2G_NODE" $pmi --timeout 240 \
            o2g-bandwidth --sizes 8M --reps 1000 >/tmp/silent-peer.out 2>&1
        echo $? >/tmp/silent-peer.rc
    ) &
    job=$!
    if [ "$O2G_NODE" = 0 ]; then
        if [ "$transport" = o2g ]; then
            o2g-trace on o2g_data_acked || exit 1
            for _ in $(seq 120); do o2g-trace show | grep -q ' o2g_data_acked:' && break; sleep 1; done
            o2g-trace off /tmp/silent-peer.txt
            grep -q ' o2g_data_acked:' /tmp/silent-peer.txt || fail "no zero-copy send completed in 120 s"
        else
            for _ in $(seq 120); do unacked_to_node1 && break; sleep 1; done
            unacked_to_node1 || fail "no data in flight to node 1 in 120 s"
        fi
        # Tell node 1 to go silent (a side channel: its listener may still
        # be starting, so try a few times).
        for _ in $(seq 30); do nc 198.18.0.2 "$signal_port" </dev/null && break; sleep 1; done ||
            fail "node 1 never took the signal to go silent"
        took="$(job_ends_within 45)"
    else
        timeout 180 nc -l -p "$signal_port" >/dev/null || fail "no signal from node 0 in 180 s"
        ip link set eth0 down
        took="$(job_ends_within 45)"
        ip link set eth0 up
    fi
    wait "$job"
    rc="$(cat /tmp/silent-peer.rc)"
    [ "$rc" != 0 ] || fail "the job exited 0 although its peer went silent"
    [ "$took" -lt 45 ] || fail "the job still ran 45 s into the silence, far past its peer timeout of 10 s"
    # Node 1 took its own link down: when TCP gives up there, it reports
    # the network unreachable if it tried to resend while the link was
    # down (the route's error, kept as the socket's soft error), else the
    # timeout.
    cause='timed out'
    [ "$O2G_NODE" = 0 ] || cause='timed out|network is unreachable'
    grep -qiE "$cause" /tmp/silent-peer.out || fail "the job's error does not say: $cause"
    echo "silent-peer ($transport): node $O2G_NODE's job failed ${took}s after the silence began (exit $rc):"
    grep -iE "$cause" /tmp/silent-peer.out | head -3
}

silence o2g $((7000 + 42))
for _ in $(seq 60); do
    [ "$(cat /sys/module/o2g/refcnt)" = 0 ] && break
    sleep 1
done
refs="$(cat /sys/module/o2g/refcnt)"
[ "$refs" = 0 ] || fail "o2g still has $refs reference(s) 60 s after the job"
echo "# silent-peer: node $O2G_NODE's o2g references are back to 0" >/dev/console
silence sockets-epoll $((7000 + 44))
