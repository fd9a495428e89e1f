# A peer's header naming another rank fails its own connection; the other
# rank's receive does not take the forged message.
o2g-vmtest trust-spoof
