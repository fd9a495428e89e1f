# Harness self-test: a test that would pass, but comes after one that kills
# the guest: its result never arrives, and a missing result must fail.
exit 0
