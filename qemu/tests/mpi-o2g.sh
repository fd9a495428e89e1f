# The MPI conformance suite over the o2g transport: ordering, wildcards,
# truncation, zero-length and 1 GiB messages, every collective at 1-4
# ranks (the guest's limit; the host runs 7 and 16 over the other
# transports), a randomized schedule, a dead peer. Needs the module loaded.
O2G_CONF_TRANSPORTS=o2g O2G_CONF_LAUNCHER=/bin/o2grun O2G_CONF_TIMEOUT=240 \
    O2G_CONF_MAX_NP=4 mpi-conformance
