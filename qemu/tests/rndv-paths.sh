# Rendezvous between two endpoints' modules: receive posted first or
# after the request, truncation, a replaced offer, and a transfer that
# completes with no system call on either side.
o2g-vmtest rndv-paths
