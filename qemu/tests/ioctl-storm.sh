# 1e5 random ioctls (opcodes, sizes, pointers, fds, ranks) from 4 processes.
o2g-vmtest ioctl-storm 4 100000
