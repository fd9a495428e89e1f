# Unloading removes the device node.
set -e
rmmod o2g
! grep -q '^o2g ' /proc/modules
[ ! -e /dev/o2g ]
