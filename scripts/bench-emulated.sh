#!/usr/bin/env bash
# The emulated NICs' benchmarks, natively on this host (the emulations are
# shared memory, so a VM adds nothing but noise): DIMMnet-1 (AOTF round
# trip, BOTF vs PUSH, DIMM_Send/DIMM_Recv, the Fagus barrier, bank
# switching), HyphenLink (PB->EXT, CACHE/WB, AP1000 ring ping-pong), AP1000
# line sending and buffer receiving against DMA (the paper's Table 2 and
# Fig. 7), and the same MPI programs over the emulated transports beside
# the socket ones: MPI_Barrier at 2-8 ranks and ping-pong bandwidth. Every
# table is also a CSV and an SVG chart under results/<date>-emulated/.
#
# usage: scripts/bench-emulated.sh [--quick]
set -euo pipefail
source "$(dirname "$0")/env.sh"
quick=""
[[ "${1:-}" == --quick ]] && quick=--quick
out="$O2G_ROOT/results/$(date +%Y-%m-%d)-emulated"
mkdir -p "$out/mpi"
rm -f "$out/mpi/"*.csv
cargo build --release --quiet -p mpi -p o2g-bench --bins --manifest-path "$O2G_ROOT/Cargo.toml"
bin="$O2G_ROOT/target/release"
transports="sockets-epoll sockets-select dimmnet hyphenlink"

log "HyphenLink and AP1000"
"$bin/o2g-hyphen-bench" $quick --out "$out" all

log "AP1000: line sending and buffer receiving against DMA"
"$bin/o2g-ap1000-bench" $quick --out "$out" all

log "MPI_Barrier per transport, 2-8 ranks"
iters=1000
[[ -n "$quick" ]] && iters=100
for n in 2 3 4 5 6 7 8; do
    for t in $transports; do
        O2G_TRANSPORT=$t "$bin/o2grun" -n "$n" --timeout 300 \
            "$bin/o2g-barrier" --iters "$iters" --csv-dir "$out/mpi"
    done
done

log "DIMMnet-1, with the MPI barriers beside the raw AOTF barrier"
"$bin/o2g-dimmnet-bench" $quick --out "$out" all
"$bin/o2g-dimmnet-bench" $quick --out "$out" barrier --join "$out/mpi/barrier.csv"

log "ping-pong per transport, beside DIMM_Send/DIMM_Recv streaming"
sizes=8,64,512,4K,32K,256K,1M
[[ -n "$quick" ]] && sizes=8,4K,1M
"$bin/o2g-tcp-pingpong" --sizes "$sizes" --reps 3 --csv-dir "$out/mpi"
for t in $transports; do
    O2G_TRANSPORT=$t O2G_SELF=0 "$bin/o2grun" -n 2 --timeout 600 \
        "$bin/o2g-pingpong" --sizes "$sizes" --reps 3 --csv-dir "$out/mpi"
done
{
    cat "$out/mpi/pingpong-bandwidth.csv"
    tail -n +2 "$out/sendrecv.csv"
} >"$out/sendrecv-vs-mpi.csv"
"$bin/o2g-chart" --csv "$out/sendrecv-vs-mpi.csv" --log-x \
    --title "DIMM_Send/DIMM_Recv streaming vs MPI ping-pong (host)" --out "$out/sendrecv-vs-mpi.svg"
"$bin/o2g-chart" --csv "$out/mpi/pingpong-latency.csv" --log-x \
    --title "MPI ping-pong half round trip per transport (host)" --out "$out/pingpong-latency.svg"
log "results: $out"
