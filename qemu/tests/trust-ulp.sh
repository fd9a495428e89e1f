# No upper-layer protocol (kTLS) attaches over o2g's hooks, and a socket
# with one is not registered.
o2g-vmtest trust-ulp
