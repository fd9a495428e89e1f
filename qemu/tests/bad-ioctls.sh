# Unknown opcodes get ENOTTY, bad pointers EFAULT, and the device survives.
o2g-vmtest bad-ioctls
