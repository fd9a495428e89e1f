# Expected receives (0 B to 64 MiB) land in the posted buffers, unexpected
# messages are stored, taken and freed, truncation is reported.
o2g-vmtest recv-paths
