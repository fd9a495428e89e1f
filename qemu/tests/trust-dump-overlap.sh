# A peer's choice of sizes and order (stored, empty, taken, wrapped,
# squeezed) never makes two stored messages share dump-area bytes.
o2g-vmtest trust-dump-overlap
