# Harness self-test: a report in the kernel log must fail this test.
echo "WARNING: o2g harness self-test, injected through /dev/kmsg" >/dev/kmsg
