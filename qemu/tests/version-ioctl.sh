# A Rust user-space program opens /dev/o2g, reads the ABI version, closes.
o2g-vmtest version
