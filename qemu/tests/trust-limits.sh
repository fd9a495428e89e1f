# As an unprivileged user in the device's group: RLIMIT_MEMLOCK bounds
# pinned receives, 16 endpoints per process, kernel memory charged to the
# memory cgroup; each over-limit call gets its own errno.
o2g-vmtest trust-limits
