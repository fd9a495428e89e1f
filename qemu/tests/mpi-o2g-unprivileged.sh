# An MPI job over o2g as an unprivileged user whose RLIMIT_MEMLOCK (128 KiB)
# is below its receives: the module refuses the pins (ENOMEM), the
# transport says so once and lets those receives wait in the dump area,
# and the job still passes, with its 256 KiB messages sent eager
# (O2G_RNDV_THRESHOLD set to them). With a threshold below them (64 KiB)
# they go by rendezvous, which needs pins at both ends: the job stops
# with an error naming the remedies.
set -e
out="$(O2G_TRANSPORT=o2g O2G_CONF_CASE=large_recv O2G_RNDV_THRESHOLD=262144 \
    o2g-vmtest as-user 128 /bin/o2grun -n 2 --timeout 240 /bin/mpi-conformance 2>&1)" ||
    { echo "$out"; exit 1; }
echo "$out" | grep -q "could not be pinned: RLIMIT_MEMLOCK" ||
    { echo "$out"; echo "no pin was refused: was the limit in force?"; exit 1; }
if out="$(O2G_TRANSPORT=o2g O2G_CONF_CASE=large_recv O2G_RNDV_THRESHOLD=65536 \
    o2g-vmtest as-user 128 /bin/o2grun -n 2 --timeout 240 /bin/mpi-conformance 2>&1)"; then
    echo "$out"; echo "rendezvous without pins passed: was the limit in force?"; exit 1
fi
echo "$out" | grep -q "raise \`ulimit -l\`" ||
    { echo "$out"; echo "the failure does not name the remedy"; exit 1; }
