# Where an 8-byte ping-pong's time goes on loopback, from the writev calls
# of both ranks on one clock (bench/c/writev_timeline.c, preloaded): the
# median writev (on loopback it carries the receive side, o2g's reader
# included) and the median reaction (from one rank's return to the other
# rank's next writev: spotting the message and answering it), for the
# Rust ping-pong over o2g and sockets-epoll and the C one over o2g.
# O2G_TIMELINE_ROUNDS rounds (3), interleaved. Figures, not assertions;
# CSV timeline (series,round,writev_us,reaction_us).
set -e
rounds="${O2G_TIMELINE_ROUNDS:-3}" csv=/tmp/timeline.csv dir=/tmp/timeline
echo "series,round,writev_us,reaction_us" >$csv
# median FILE: the median of the numbers in FILE, one per line.
median() { sort -n "$1" | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# measure SERIES TRANSPORT CMD...: one run under the preloaded timeline.
measure() {
    series="$1" transport="$2"
    shift 2
    rm -rf "$dir" && mkdir -p "$dir"
    O2G_TRANSPORT="$transport" O2G_SELF=0 O2G_TIMELINE_DIR="$dir" \
        o2grun -n 2 --timeout 600 env LD_PRELOAD=/bin/libo2g-timeline.so "$@" >/dev/null
    # Calls and gaps over 1 ms are start-up, barriers or sleeps, not the
    # ping-pong: left out.
    cat "$dir"/timeline.* | sort -n | awk -v d="$dir/durations" -v g="$dir/gaps" '
        { dur = ($2 - $1) / 1000; if (dur < 1000) print dur >d
          if (pid != "" && $3 != pid) { gap = ($1 - end) / 1000; if (gap >= 0 && gap < 1000) print gap >g }
          pid = $3; end = $2 }'
    [ -s "$dir/durations" ] && [ -s "$dir/gaps" ] || { echo "bench-timeline: $series recorded no calls"; exit 1; }
    w="$(median "$dir/durations")" r="$(median "$dir/gaps")"
    printf '%-14s round %s: writev %6.2f us, reaction %6.2f us, one way %6.2f us\n' \
        "$series" "$round" "$w" "$r" "$(echo "$w $r" | awk '{ print $1 + $2 }')"
    echo "$series,$round,$w,$r" >>$csv
}
for round in $(seq "$rounds"); do
    measure o2g-rust o2g o2g-pingpong --sizes 8 --reps 1 --max-iters 3000
    measure o2g-c o2g calls-o2g pingpong 8 3000
    measure epoll-rust sockets-epoll o2g-pingpong --sizes 8 --reps 1 --max-iters 3000
done
emit-csv $csv
