# Main job (for now): show what the module can do today.
set -e
insmod "$O2G_KO"
echo "kernel:  $(uname -r)"
echo "module:  $(grep '^o2g ' /proc/modules)"
echo "device:  $(ls -l /dev/o2g)"
echo "ioctl:   $(o2g-vmtest version)"
dmesg | grep 'o2g:' || true
rmmod o2g
