# rndv-paths again with Receive Flow Steering on (with-rfs): large receives
# steer their connections, and the send work's own writes on the control
# connections put the steering back (kmod/flow_steering.rs). What goes
# wrong shows in dmesg, which the harness checks after the test.
set -e
with-rfs o2g-vmtest rndv-paths
