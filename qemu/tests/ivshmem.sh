# Cluster with O2G_VM_IVSHMEM set: every node maps the one ivshmem BAR (the
# emulated NICs' memory) and sees every other node's store.
o2g-vmtest ivshmem
