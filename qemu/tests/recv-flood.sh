# 1 GiB of unexpected messages into a 1 MiB dump area: back-pressure, no loss.
o2g-vmtest recv-flood $((1 << 30))
