# 256 MiB through a 1 MiB dump area, read only from the ring: stalls end
# only because giving messages back wakes the module. No loss, in order.
o2g-vmtest recv-notices-flood $((256 << 20))
