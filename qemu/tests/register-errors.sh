# Non-sockets, non-TCP, unconnected and already-claimed sockets, duplicate and
# out-of-range ranks: each refused with its own errno.
o2g-vmtest register-errors
