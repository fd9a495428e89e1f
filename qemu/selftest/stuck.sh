# Harness self-test: a guest that never finishes must be stopped by the host.
trap '' TERM
while :; do sleep 1; done
