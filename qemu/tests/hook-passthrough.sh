# The data_ready hook sees traffic on a registered socket; unregister, closing
# /dev/o2g and closing the socket first each leave things clean.
o2g-vmtest hook-passthrough
