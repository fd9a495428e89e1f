# Expected receives (0 B to 64 MiB) land in the posted buffers, unexpected
# messages are stored, taken and freed (or copied into a receive posted
# while they were being stored), truncation is reported.
o2g-vmtest recv-paths
