# SIGKILL a process with receives posted and data streaming into them.
o2g-vmtest recv-sigkill
