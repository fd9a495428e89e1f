#!/usr/bin/env bash
# The main job: set up, build the release kernel, o2g.ko and the benchmarks,
# boot a VM with Open MPI and MPICH in it, load the module, and run the
# NAS-IS-style integer sort side by side (qemu/tests/main-is.sh): the Rust
# version over each of our transports, the C version on our libmpi_abi over
# o2g, and the same C program on Open MPI and MPICH, both forced onto TCP.
# Prints progress and the comparison table; every measurement is saved as
# CSV, with an SVG plot, under results/.
#
# usage: scripts/main.sh [--class S|W|A|B] [--reps N] [--np N] [--full]
#   Defaults: class B, 10 repetitions of each, interleaved, 2 ranks (one
#   per vCPU; about 30 minutes under TCG, in a 4 GiB guest); the table
#   gives medians with 95% intervals and o2g's verdict against the best
#   of Open MPI and MPICH. More ranks than vCPUs measures
#   oversubscription: MPICH over UCX spins and collapses there. --full runs
#   classes A and B, then the bench suite (ping-pong, system calls per
#   message, idle connections, poll cost, perf profiles), then IS class A
#   and ping-pong across a 4-VM cluster (our transports, and Open MPI and
#   MPICH launched through the harness's remote shell), each sweep as CSV +
#   SVG (profiles: CSV only): about an hour.
set -euo pipefail
source "$(dirname "$0")/env.sh"

classes=B reps=10 np=2 full=0
while (($#)); do
    case "$1" in
        --class) classes="$2"; shift 2 ;;
        --reps) reps="$2"; shift 2 ;;
        --np) np="$2"; shift 2 ;;
        --full) full=1; classes="A B"; shift ;;
        -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
        *) die "unknown option $1 (see --help)" ;;
    esac
done
for class in $classes; do
    [[ "$class" =~ ^[SWAB]$ ]] || die "--class must be S, W, A or B"
done
[[ "$reps" =~ ^[1-9][0-9]*$ && "$np" =~ ^[1-9][0-9]*$ ]] || die "--reps and --np take positive numbers"

"$O2G_ROOT/scripts/setup.sh"
results="$O2G_ROOT/results/$(date +%Y%m%d-%H%M%S)"
mkdir -p "$results"
{
    echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
    echo "host: $(nproc) cores, $(awk '/MemTotal/{print int($2/1048576)" GiB"}' /proc/meminfo), $(uname -r)"
    echo "guest: release kernel under QEMU $(qemu-system-x86_64 --version | head -1 | awk '{print $4}'), TCG"
    echo "job: classes $classes, $np ranks, $reps repetitions"
} >"$results/machine.txt"

for class in $classes; do
    log "NAS-IS-style class $class, $np ranks, $reps repetitions of each; results in $results"
    # A class B run takes about 25 s under TCG; allow plenty.
    O2G_VM_MEM="${O2G_VM_MEM:-4096}" O2G_GUEST_PEERS=1 \
        O2G_GUEST_ENV="O2G_MAIN_CLASS=$class O2G_MAIN_REPS=$reps O2G_MAIN_NP=$np" \
        "$O2G_ROOT/qemu/vm.sh" --flavour release --timeout 7200 --verbose main |
        tee "$results/console-is-$class.log" | grep --line-buffered -v '# node0: csv: '
    sed -n 's/^# node0: csv: //p' "$results/console-is-$class.log" >"$results/is-$class.csv"
    grep -q '^label,rep,mops' "$results/is-$class.csv" ||
        die "no measurements came back; see $results/console-is-$class.log"
    "$O2G_ROOT/target/release/o2g-plot" --csv "$results/is-$class.csv" \
        --title "NAS-IS-style class $class, $np ranks (QEMU TCG, release kernel)" \
        --out "$results/is-$class.svg"
done

# collect LOG PREFIX NAME...: for each NAME, the "# node0: csv:NAME: "
# lines of LOG as results/PREFIXNAME.csv; a NAME without any ends the job.
collect() {
    local log="$1" prefix="$2" name
    shift 2
    for name in "$@"; do
        sed -n "s/^# node0: csv:$name: //p" "$log" >"$results/$prefix$name.csv"
        [[ -s "$results/$prefix$name.csv" ]] || die "no $name measurements came back; see $log"
    done
}

# chart LOG PREFIX: for each "NAME AXES TITLE" line on stdin, collects
# NAME (as `collect` does) and draws it (AXES: "-", or o2g-chart's --log-x
# and --log-y joined by commas).
chart() {
    local log="$1" prefix="$2" name axes title
    while read -r name axes title; do
        collect "$log" "$prefix" "$name"
        [[ "$axes" == - ]] && axes=""
        # shellcheck disable=SC2046 # one word per option
        "$O2G_ROOT/target/release/o2g-chart" --csv "$results/$prefix$name.csv" $(tr , ' ' <<<"$axes") \
            --title "$title (QEMU TCG, release kernel)" --out "$results/$prefix$name.svg"
    done
}

# peers_boot SUITE: one release boot of SUITE with Open MPI and MPICH in
# the guest; its console goes to results/SUITE.log, shown without the CSV.
peers_boot() {
    O2G_VM_MEM="${O2G_VM_MEM:-4096}" O2G_GUEST_PEERS=1 \
        "$O2G_ROOT/qemu/vm.sh" --flavour release --timeout 3600 --verbose "$1" |
        tee "$results/$1.log" | grep --line-buffered -v '# node0: csv:'
}

if ((full)); then
    log "the sweeps: ping-pong, system calls per message, idle connections, poll cost"
    "$O2G_ROOT/qemu/vm.sh" --flavour release --timeout 3600 --verbose bench |
        tee "$results/bench.log" | grep --line-buffered -v '# node0: csv:'
    chart "$results/bench.log" "" <<'CHARTS'
pingpong-latency --log-x,--log-y Ping-pong half round trip, 2 ranks
pingpong-bandwidth --log-x Ping-pong bandwidth, 2 ranks
idle-latency - 8 B half round trip vs idle connections
idle-bandwidth - 1 MiB bandwidth vs idle connections
is-idle - NAS-IS-style class S vs idle connections, 2 ranks
pollcost --log-y Readiness call cost vs watched sockets
syscalls --log-x System calls per received message, streaming
CHARTS
    # bench-profile's perf profiles: one CSV per profiled run, no chart.
    profiles="$(sed -n 's/^# node0: csv:\(profile-[A-Za-z0-9_-]*\): .*/\1/p' "$results/bench.log" | sort -u)"
    [[ -n "$profiles" ]] || die "no profiles came back; see $results/bench.log"
    # shellcheck disable=SC2086 # one name per word
    collect "$results/bench.log" "" $profiles
    # bench-instructions: user-space instructions per call over o2g, CSV only.
    collect "$results/bench.log" "" instructions-o2g
    # bench-timeline: median writev and reaction per 8 B message, CSV only.
    collect "$results/bench.log" "" timeline
    log "ping-pong on every MPI in one boot: raw TCP, o2g (Rust and C), Open MPI, MPICH"
    peers_boot peers
    chart "$results/peers.log" "" <<'CHARTS'
peers-latency --log-x,--log-y Ping-pong half round trip per MPI, 2 ranks
peers-bandwidth --log-x Ping-pong bandwidth per MPI, 2 ranks
CHARTS
    log "windowed bandwidth on every MPI in one boot: o2g (Rust and C), sockets-epoll, Open MPI, MPICH"
    peers_boot bandwidth
    collect "$results/bandwidth.log" "" windowed-bandwidth-runs windowed-bandwidth-costs
    log "asynchronous progress: overlap of a transfer with compute on every MPI, with and without progress threads"
    peers_boot bench-overlap
    chart "$results/bench-overlap.log" "" <<'CHARTS'
overlap-receiver --log-x Share of a receive done during compute without MPI calls, 2 ranks
overlap-sender --log-x Share of a send done during compute without MPI calls, 2 ranks
overlap-cpu --log-x CPU per wall time of the computing rank (1 = compute alone), receiver side
CHARTS
    # Every median and every repetition, as CSV only.
    collect "$results/bench-overlap.log" "" overlap-runs overlap-reps
    log "collectives on every MPI in one boot: allreduce, bcast, alltoall, 8 B to 4 MiB, 2 ranks"
    peers_boot collectives
    collect "$results/collectives.log" "" collective-allreduce-runs collective-bcast-runs \
        collective-alltoall-runs
    log "the 4-VM cluster: IS class A and ping-pong, one rank per VM"
    O2G_GUEST_PEERS=1 O2G_GUEST_ENV="O2G_MAIN_CLASS=A O2G_MAIN_REPS=$reps" \
        "$O2G_ROOT/qemu/vm.sh" --flavour release --nodes 4 --timeout 7200 --verbose cluster-bench |
        tee "$results/cluster-bench.log" | grep --line-buffered -v 'csv:'
    sed -n 's/^# node0: csv:cluster-is: //p' "$results/cluster-bench.log" >"$results/cluster-is-A.csv"
    "$O2G_ROOT/target/release/o2g-plot" --csv "$results/cluster-is-A.csv" \
        --title "NAS-IS-style class A, 4 VMs, one rank each (QEMU TCG)" \
        --out "$results/cluster-is-A.svg"
    chart "$results/cluster-bench.log" cluster- <<'CHARTS'
pingpong-latency --log-x,--log-y Ping-pong half round trip between two VMs
pingpong-bandwidth --log-x Ping-pong bandwidth between two VMs
CHARTS
fi
log "results: $results"
