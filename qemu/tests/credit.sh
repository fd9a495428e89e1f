# Eager credit: the first window and credit given back on the wire, what
# a peer may leave stored, a peer beyond its credit or the slot size
# failed, windows dividing the dump area, and credit taken by a sender.
o2g-vmtest credit
