# A registered socket cannot listen, so no child inherits o2g's hooks
# (KASAN would report the child's use of a freed connection); after
# unregister it listens and its child is a plain socket.
o2g-vmtest trust-listen-child
