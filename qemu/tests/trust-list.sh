# An unprivileged user, in the device's group, lists only its own endpoints.
o2g-vmtest trust-list
