# Harness self-test: a guest that goes away mid-suite must not look finished.
reboot -f
