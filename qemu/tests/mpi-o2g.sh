# The MPI conformance suite over the o2g transport: ordering, wildcards,
# truncation, zero-length and 1 GiB messages, every collective at 1-16
# ranks, a randomized schedule, a dead peer. Needs the module loaded.
O2G_CONF_TRANSPORTS=o2g O2G_CONF_LAUNCHER=/bin/o2grun O2G_CONF_TIMEOUT=240 \
    mpi-conformance
