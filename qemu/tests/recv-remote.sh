# Node 0 receives through the module from every other node over the
# virtual network: expected (0 B to 16 MiB), unexpected, and a 32 MiB flood
# from each sender into a 1 MiB dump area.
o2g-vmtest recv-remote $((32 << 20))
