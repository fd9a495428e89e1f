# The module never reads back its producer index from the shared mapping,
# and refuses a receive buffer inside that mapping.
o2g-vmtest trust-shared-state
