# The C IS benchmark, class S on 2 ranks, under Debian's Open MPI and MPICH
# in this guest, each forced onto TCP by /etc/o2g/peers.sh. Fails if either
# does not verify, if too little data crossed lo for the keys to have gone
# over TCP, or if a rank is seen mapping shared memory.
# Needs O2G_GUEST_PEERS=1 and O2G_GUEST_BINS naming is-openmpi and is-mpich
# (bench/c/build.sh).
if [ ! -r /etc/o2g/peers.sh ]; then
    echo "peers-is: Open MPI/MPICH not in this initramfs (O2G_GUEST_PEERS=1)"
    exit 4
fi
. /etc/o2g/peers.sh
peers_setup
class=S
# Each iteration about half of every rank's 2^16/2 keys (4 bytes) cross to
# the other rank; 11 iterations move ~1.4 MB. Ask for half of that.
min_bytes=$((11 * 65536))
failed=0
for lib in openmpi mpich; do
    prog="is-$lib"
    if ! command -v "$prog" >/dev/null; then
        echo "peers-is: $prog missing from /bin (add it to O2G_GUEST_BINS)"
        failed=1
        continue
    fi
    echo "== $lib: $prog $class on 2 ranks"
    before="$(peers_if_rx_bytes)"
    # Bounded, so a hung run still reports what it printed.
    timeout 120 sh /etc/o2g/peers.sh "$lib" 2 "$prog" "$class" >"/tmp/peers-is-$lib.out" 2>&1 &
    job=$!
    # Sample the ranks' mappings while they run (a sample can miss, so
    # this only ever proves shared memory, never its absence).
    shm=0 samples=0
    while kill -0 "$job" 2>/dev/null; do
        pids="$(pidof "$prog")"
        if [ -n "$pids" ]; then
            samples=$((samples + 1))
            # shellcheck disable=SC2086 # one PID per word
            s="$(peers_shm_maps $pids)"
            [ "$s" -gt "$shm" ] && shm="$s"
        fi
        sleep 0.05
    done
    wait "$job"
    rc=$?
    moved=$(($(peers_if_rx_bytes) - before))
    cat "/tmp/peers-is-$lib.out"
    echo "$lib: exit $rc; $moved bytes over $O2G_PEERS_IF; $shm shm mappings in $samples samples"
    if [ "$rc" -ne 0 ] || ! grep -q 'Verification    =  SUCCESSFUL' "/tmp/peers-is-$lib.out"; then
        echo "FAIL $lib: IS did not verify"
        failed=1
    fi
    if [ "$moved" -lt "$min_bytes" ]; then
        echo "FAIL $lib: only $moved bytes crossed $O2G_PEERS_IF (keys need $min_bytes): not TCP"
        failed=1
    fi
    if [ "$shm" -ne 0 ]; then
        echo "FAIL $lib: ranks mapped shared memory"
        failed=1
    fi
done
exit "$failed"
