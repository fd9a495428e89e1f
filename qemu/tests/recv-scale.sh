# One endpoint with 1000 registered loopback sockets, most idle: a message
# from each arrives, wildcard receives find the few busy ones.
o2g-vmtest recv-scale 1000
