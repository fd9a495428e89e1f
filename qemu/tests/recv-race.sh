# Two threads posting while a peer sends at full speed: exactly once, in order.
# (1e5 messages pass too, in about 8.5 min under TCG with KASAN: too slow for CI.)
o2g-vmtest recv-race 10000
