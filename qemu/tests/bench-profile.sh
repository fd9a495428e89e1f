# Where the time goes (the benchmark issue asks for perf profiles in the
# guest for each missed target): perf samples cpu-clock (a software event:
# TCG has no PMU) on every CPU, user space, kernel and o2g.ko alike, during
#   pingpong-o2g, pingpong-tcp  8 B ping-pong over o2g, and over raw TCP
#   pingpong-o2g-1m,            the same at 1 MiB (the bandwidth target)
#   pingpong-tcp-1m
#   is-idle-0, is-idle-998      NAS-IS-style sort over o2g while each rank
#                               holds 0 or 998 idle connections (registered
#                               with o2g.ko like the real ones)
#   stream-o2g                  a streaming receive over o2g
# Only the measured part is sampled: perf starts with its events off and
# is told (its control FIFO) to switch them on and off at lines the
# programs print, so start-up (seconds with 998 connections) stays out.
# For each: the program's result (and for the ping-pongs the same run
# without perf, to see what sampling costs), the share of samples per DSO,
# the top symbols by self time as a percentage of all samples (idle
# included) as text and as CSV profile-NAME (scripts/main.sh --full keeps
# them), every o2g.ko function sampled, and the hottest call chains of the
# busiest kernel functions (perf records kernel call chains: frame pointers).
# Samples cannot land where interrupts are off: such time is charged to
# where they come back on (_raw_spin_unlock_irqrestore, finish_task_switch).
# Figures, not assertions; fails if perf cannot sample or name kernel
# symbols in this guest.
#
# Environment: O2G_PROFILE_FREQ (samples per second per CPU, 1000),
# O2G_PROFILE_TOP (symbols shown, 15), O2G_PROFILE_IS_CLASS (S),
# O2G_PROFILE_IS_RUNS (IS runs per case, 10), O2G_PROFILE_CASES (the cases
# above, comma-separated; default all).

# sh bench-profile.sh --run START STOP CTL RC CMD...: runs CMD and copies
# its output; at each line matching the glob START it enables perf's
# sampling event (writes to the FIFO CTL), at each line matching STOP it
# disables it; CMD's exit status goes to the file RC. This is what perf
# starts. The commands name the event: a bare "disable" would also stop
# perf's dummy event, which records the mappings of programs started
# later (perf 6.1), and their samples would have no symbols.
if [ "${1:-}" = --run ]; then
    start="$2" stop="$3" ctl="$4" rc="$5"
    shift 5
    # perf holds the FIFO open (read-write) before it starts us, so this
    # open does not block, and each command is one write, without a fork.
    exec 3>"$ctl"
    { "$@" 2>&1; echo "$?" >"$rc"; } | while IFS= read -r line; do
        printf '%s\n' "$line"
        # shellcheck disable=SC2254 # the markers are globs
        case "$line" in
            $start) echo 'enable cpu-clock' >&3 && echo on >>"$ctl.on" ;;
            $stop) echo 'disable cpu-clock' >&3 ;;
        esac
    done
    exit 0
fi

set -e
freq="${O2G_PROFILE_FREQ:-1000}" top="${O2G_PROFILE_TOP:-15}"
class="${O2G_PROFILE_IS_CLASS:-S}" is_runs="${O2G_PROFILE_IS_RUNS:-10}"
cases="${O2G_PROFILE_CASES:-pingpong-o2g,pingpong-tcp,pingpong-o2g-1m,pingpong-tcp-1m,is-idle-0,is-idle-998,stream-o2g}"
callers=3 depth=8
fail() {
    echo "bench-profile: $*"
    exit 1
}

command -v perf >/dev/null ||
    fail "no perf in the guest (qemu/vm.sh copies the host's: Debian package linux-perf, which scripts/setup.sh installs)"
[ -c /dev/o2g ] || fail "/dev/o2g is missing: run insmod first"
echo "$(perf --version); kernel.perf_event_paranoid was $(cat /proc/sys/kernel/perf_event_paranoid)," \
    "kernel.kptr_restrict was $(cat /proc/sys/kernel/kptr_restrict): setting -1 and 0"
echo -1 >/proc/sys/kernel/perf_event_paranoid
echo 0 >/proc/sys/kernel/kptr_restrict
# perf names kernel samples from /proc/kallsyms: it must show addresses,
# the module's functions included.
awk '$3 == "tcp_sendmsg" { found = 1; if ($1 ~ /^0+$/) zero = 1 } END { exit !(found && !zero) }' \
    /proc/kallsyms || fail "/proc/kallsyms has no address for tcp_sendmsg (kptr_restrict?)"
grep -q '\[o2g\]$' /proc/kallsyms || fail "/proc/kallsyms lists no o2g functions"
if ! perf record -e cpu-clock -a -N -B -q -o /tmp/perf.check -- sleep 0.2 >/tmp/perf.check.log 2>&1; then
    cat /tmp/perf.check.log
    fail "perf cannot sample cpu-clock on every CPU in this guest"
fi

# shorten: Rust generic arguments on stdin shortened for display
# (Engine<Vec<Slot, KVmalloc>, ...> -> Engine<_>); the CSV keeps them.
shorten() {
    awk '{ while (match($0, /[A-Za-z0-9_]<[^<>]*>/))
               $0 = substr($0, 1, RSTART) "`" substr($0, RSTART + RLENGTH)
           gsub(/`/, "<_>"); print }'
}

# profile NAME START STOP SHOW CMD...: runs CMD under perf, sampling between
# the lines START and STOP (globs); prints CMD's lines that match the
# extended regex SHOW, then the profile; emits profile-NAME.csv.
profile() {
    name="$1" start="$2" stop="$3" show="$4"
    shift 4
    data="/tmp/perf.$name" ctl="/tmp/perf.$name.ctl" rc="/tmp/perf.$name.rc"
    rm -f "$ctl" "$ctl.on" "$rc"
    mkfifo "$ctl"
    echo
    echo "== $name: $*"
    t0="$(date +%s)"
    prc=0
    perf record -e cpu-clock -F "$freq" -a -g -N -B -q -D -1 --control "fifo:$ctl" -o "$data" -- \
        sh "$0" --run "$start" "$stop" "$ctl" "$rc" "$@" >"$data.out" 2>"$data.log" || prc=$?
    if [ "$(cat "$rc" 2>/dev/null)" != 0 ]; then
        cat "$data.out" "$data.log"
        fail "$name: the program failed (exit status $(cat "$rc" 2>/dev/null || echo unknown))"
    fi
    if [ "$prc" != 0 ]; then
        cat "$data.log"
        fail "$name: perf record failed (exit status $prc)"
    fi
    [ -s "$ctl.on" ] || { cat "$data.out"; fail "$name: no line matched '$start', so nothing was sampled"; }
    grep -E "$show" "$data.out" || { cat "$data.out"; fail "$name: no result line ($show)"; }

    perf report -i "$data" --stdio --no-children --sort dso -g none >"$data.dso" 2>"$data.rlog" ||
        { cat "$data.rlog"; fail "$name: perf report failed"; }
    samples="$(sed -n 's/^# Samples: *\([^ ]*\) .*/\1/p' "$data.dso" | head -1)"
    [ -n "$samples" ] || { cat "$data.dso" "$data.rlog"; fail "$name: perf recorded no samples"; }
    echo "samples: $samples in $(wc -l <"$ctl.on") window(s), ${freq} Hz per CPU; by DSO:" \
        "$(awk '!/^#/ && NF >= 2 { printf "%s%s %s", sep, $2, $1; sep = ", " }' "$data.dso" | cut -c1-200)"
    # Per CPU, busy and idle shares of all samples: work that one CPU does
    # while the other waits shows here.
    echo "by CPU: $(perf report -i "$data" --stdio --no-children --sort cpu,sym -g none -q 2>>"$data.rlog" |
        awk '$1 ~ /%$/ { p = $1; sub(/%$/, "", p)
                         if ($0 ~ /safe_halt|default_idle|cpu_idle/) idle[$2] += p; else busy[$2] += p
                         cpus[$2] = 1 }
             END { for (c in cpus) { printf "%scpu %d busy %.1f%% idle %.1f%%", sep, c, busy[c], idle[c]; sep = ", " } }')"
    perf report -i "$data" --stdio --no-children --sort dso,sym -g none -q -t '|' 2>>"$data.rlog" |
        head -n "$top" >"$data.raw"
    o2g-demangle <"$data.raw" >"$data.top"
    # shellcheck disable=SC2016 # awk's $ fields
    awk -F'|' -v csv="/tmp/profile-$name.csv" '
        function trim(s) { gsub(/^[ \t]+|[ \t]+$/, "", s); return s }
        BEGIN { print "rank,percent,dso,symbol" >csv }
        NF >= 3 {
            pct = trim($1); dso = trim($2); sym = $3
            for (i = 4; i <= NF; i++) sym = sym "|" $i
            sym = trim(sym); sub(/^\[.\] /, "", sym)
            printf "%7s  %-18s %s\n", pct, dso, sym
            sub(/%$/, "", pct); gsub(/"/, "\"\"", sym)
            printf "%d,%s,%s,\"%s\"\n", ++n, pct, dso, sym >csv
        }' "$data.top" | shorten
    grep -q '|\[k\] [A-Za-z_]' "$data.top" ||
        { cat "$data.rlog"; fail "$name: no kernel symbol named in the profile"; }
    # Every o2g.ko function that was sampled, however rarely.
    echo "in o2g.ko: $(perf report -i "$data" --stdio --no-children --sort sym -g none -q \
        --dsos '[o2g]' --percentage absolute 2>>"$data.rlog" | o2g-demangle |
        awk '$1 ~ /%$/ { $2 = ""; sub(/^ +/, "", $0); s = $0; sub(/^[^ ]+ +/, "", s)
                         printf "%s%s %s", sep, s, $1; sep = ", " }' | shorten | cut -c1-600)"
    # The kernel's busiest functions apart from idle: their callers, as
    # the hottest call chains (share of all samples; innermost caller first).
    for sym in $(awk -F'|' '$3 ~ /^\[k\] [A-Za-z_]/ && $3 !~ /safe_halt|default_idle|cpu_idle/ {
            sub(/^\[k\] /, "", $3); gsub(/ /, "", $3); print $3 }' "$data.raw" | head -n "$callers"); do
        echo "$sym called from:"
        perf report -i "$data" --stdio --no-children --sort sym -q -S "$sym" \
            -g folded,0,callee,function,percent --max-stack "$depth" 2>>"$data.rlog" |
            awk 'NF >= 2 && $1 ~ /%$/ && $2 ~ /;/' | head -n 3 | o2g-demangle |
            shorten | awk '{ c = substr($0, index($0, $2)); sub(/^[^;]*;/, "", c)
                             gsub(/;/, " < ", c); printf "%9s  %s\n", $1, c }' | cut -c1-200
    done
    emit-csv "/tmp/profile-$name.csv"
    rm -f "$data" "$data.old"
    echo "($name took $(($(date +%s) - t0)) s)"
}

# unprofiled SHOW CMD...: runs CMD without perf and prints its lines that
# match SHOW, to see how much sampling slows it down.
unprofiled() {
    show="$1"
    shift
    "$@" >/tmp/unprofiled.out 2>&1 || { cat /tmp/unprofiled.out; fail "failed without perf: $*"; }
    grep -E "$show" /tmp/unprofiled.out | sed 's/^/without perf: /'
}

o2g="env O2G_TRANSPORT=o2g O2G_SELF=0"
pp="--sizes 8 --reps 10 --max-iters 1000" pp1m="--sizes 1M --reps 5 --max-iters 100"
want() { case ",$cases," in *",$1,"*) return 0 ;; esac; return 1; }
for c in $(echo "$cases" | tr , ' '); do
    case "$c" in
        pingpong-o2g | pingpong-tcp | pingpong-o2g-1m | pingpong-tcp-1m) ;;
        is-idle-0 | is-idle-998 | stream-o2g) ;;
        *) fail "O2G_PROFILE_CASES: no case '$c'" ;;
    esac
done
if want pingpong-o2g; then
    # shellcheck disable=SC2086 # $o2g and $pp are several words
    profile pingpong-o2g '*half-rtt(us)*' '*[0-9].[0-9][0-9]' '^ *8 ' \
        $o2g o2grun -n 2 --timeout 60 o2g-pingpong $pp
    # shellcheck disable=SC2086
    unprofiled '^ *8 ' $o2g o2grun -n 2 --timeout 60 o2g-pingpong $pp
fi
if want pingpong-tcp; then
    # shellcheck disable=SC2086
    profile pingpong-tcp '*half-rtt(us)*' '*[0-9].[0-9][0-9]' '^ *8 ' \
        timeout 60 o2g-tcp-pingpong $pp
    # shellcheck disable=SC2086
    unprofiled '^ *8 ' timeout 60 o2g-tcp-pingpong $pp
fi
if want pingpong-o2g-1m; then
    # shellcheck disable=SC2086
    profile pingpong-o2g-1m '*half-rtt(us)*' '*[0-9].[0-9][0-9]' '^ *1048576 ' \
        $o2g o2grun -n 2 --timeout 120 o2g-pingpong $pp1m
    # shellcheck disable=SC2086
    unprofiled '^ *1048576 ' $o2g o2grun -n 2 --timeout 120 o2g-pingpong $pp1m
fi
if want pingpong-tcp-1m; then
    # shellcheck disable=SC2086
    profile pingpong-tcp-1m '*half-rtt(us)*' '*[0-9].[0-9][0-9]' '^ *1048576 ' \
        timeout 120 o2g-tcp-pingpong $pp1m
    # shellcheck disable=SC2086
    unprofiled '^ *1048576 ' timeout 120 o2g-tcp-pingpong $pp1m
fi
# Sampled from the first timed iteration (o2g-is --progress), after key
# generation, to the end of the verification, before the ranks shut down.
for n in 0 998; do
    want "is-idle-$n" || continue
    profile "is-idle-$n" '        1' '*IS Benchmark Completed*' 'Mop/s total|Verification' \
        sh -c "for r in \$(seq $is_runs); do
            $o2g O2G_IDLE_CONNECTIONS=$n o2grun -n 2 --timeout 60 o2g-is $class --progress || exit 1
        done"
done
if want stream-o2g; then
    # shellcheck disable=SC2086
    profile stream-o2g 'stream: receiving*' 'stream *messages/s*' 'messages/s' \
        $o2g o2grun -n 2 --timeout 60 o2g-stream --count 10000 --size 1K
fi
