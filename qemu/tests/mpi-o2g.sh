# The MPI conformance suite over the o2g transport: ordering, wildcards,
# truncation, zero-length and 1 GiB messages, every collective at 1-4
# ranks (the guest's limit; the host runs 7 and 16 over the other
# transports), a randomized schedule, a dead peer. Needs the module loaded.
# Then O2G_STATS=1: each rank of a ping-pong of 8 B (stored in the dump
# area: small receives are matched from the ring) and 2 MiB (rendezvous
# on one host) prints its counters as it closes, and both counts are
# there, with the bytes its sends copied.
O2G_CONF_TRANSPORTS=o2g O2G_CONF_LAUNCHER=/bin/o2grun O2G_CONF_TIMEOUT=240 \
    O2G_CONF_MAX_NP=4 mpi-conformance
rc=$?
out="$(O2G_STATS=1 O2G_TRANSPORT=o2g o2grun -n 2 --timeout 120 o2g-pingpong --sizes 8,2097152 --reps 1 2>&1)"
echo "$out" | grep "o2g: rank"
lines="$(echo "$out" | grep -cE 'o2g: rank [01]: eager .* through the dump area [1-9][0-9]* .*; rendezvous data [1-9][0-9]* \([0-9]+ bytes\); sends copied [0-9]+ bytes$')"
if [ "$lines" != 2 ]; then
    echo "O2G_STATS=1: expected one line per rank with stored messages, rendezvous data and send copies, got $lines:"
    echo "$out"
    rc=1
fi
exit $rc
