# User-space instructions per call over the o2g transport, counted by
# callgrind (valgrind, which qemu/vm.sh copies in for this test): the
# guest side of scripts/bench-instructions.sh, the same operations of
# bench/c/calls.c through our libmpi_abi and the Rust o2g-pingpong, each
# at two call counts so that start-up and shutdown cancel out. Both ranks
# share one vCPU (taskset), so the library never spins and every
# instruction counted is work. The module's own work is kernel time and
# not counted. Figures only; CSV instructions-o2g (series,operation,
# bytes,instructions). O2G_INSTR_LIB=DIR (through O2G_GUEST_ENV, with the
# library copied in by O2G_GUEST_TREES=HOSTDIR=DIR, outside /tmp, which is
# a tmpfs in the guest) runs the C rows on the libmpi_abi.so.1 in DIR,
# another build, for an A/B.
set -e
if [ -n "${O2G_INSTR_LIB:-}" ] && [ ! -f "$O2G_INSTR_LIB/libmpi_abi.so.1" ]; then
    echo "bench-instructions: no libmpi_abi.so.1 in O2G_INSTR_LIB=$O2G_INSTR_LIB"
    exit 1
fi
lo="${O2G_INSTR_LO:-300}" hi="${O2G_INSTR_HI:-900}"
csv=/tmp/instructions-o2g.csv
echo "series,operation,bytes,instructions" >"$csv"
# total COMMAND...: rank 0's instructions (the larger of the two ranks').
total() {
    rm -f /tmp/cg.*
    LD_LIBRARY_PATH="${O2G_INSTR_LIB:-$LD_LIBRARY_PATH}" O2G_TRANSPORT=o2g taskset -c 0 o2grun -n 2 --timeout 900 \
        valgrind.bin --tool=callgrind --callgrind-out-file=/tmp/cg.%p "$@" >/tmp/instr.out 2>/tmp/instr.err ||
        { cat /tmp/instr.out /tmp/instr.err; echo "bench-instructions: $* failed"; exit 1; }
    grep -q ' ok$\|half-rtt' /tmp/instr.out || { cat /tmp/instr.out; echo "bench-instructions: $*: no result"; exit 1; }
    grep -h '^totals:' /tmp/cg.* | awk '{ print $2 }' | sort -n | tail -1
}
# per_call SERIES OP BYTES PER COMMAND...: COMMAND with @N@ for the count;
# PER calls per count.
per_call() {
    series="$1" op="$2" bytes="$3" per="$4"
    shift 4
    a="$(total $(echo "$@" | sed "s/@N@/$lo/"))"
    b="$(total $(echo "$@" | sed "s/@N@/$hi/"))"
    n=$(((b - a) / ((hi - lo) * per)))
    printf '%-10s %-10s %7s B %8d instructions per call\n' "$series" "$op" "$bytes" "$n"
    echo "$series,$op,$bytes,$n" >>"$csv"
}
echo "user-space instructions per call over o2g, rank 0 (callgrind, $lo and $hi calls)"
for op in pingpong sendrecv allreduce barrier; do
    per_call o2g-C "$op" 8 1 calls-o2g "$op" 8 @N@
done
per_call o2g-C pingpong 65536 1 calls-o2g pingpong 65536 @N@
# o2g-pingpong runs its plan twice (an untimed repetition, then --reps 1).
per_call o2g-Rust pingpong 8 2 o2g-pingpong --sizes 8 --reps 1 --max-iters @N@
emit-csv "$csv"
