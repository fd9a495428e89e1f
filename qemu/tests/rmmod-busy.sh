# While /dev/o2g is open the module is pinned: rmmod is refused, and the
# open file keeps working. Once it is closed the refcount is back to zero.
o2g-vmtest hold-open 8 &
holder=$!
trap 'kill "$holder" 2>/dev/null; wait "$holder" 2>/dev/null' EXIT
i=0
until [ "$(cat /sys/module/o2g/refcnt)" -gt 0 ]; do
    i=$((i + 1)); [ "$i" -lt 100 ] || { echo "holder never opened /dev/o2g"; exit 1; }
    sleep 0.1
done
if rmmod o2g 2>/tmp/rmmod.err; then
    echo "rmmod succeeded while /dev/o2g was open"
    exit 1
fi
# delete_module(O_NONBLOCK) answers EWOULDBLOCK for a module in use.
grep -qiE 'busy|in use|temporarily unavailable' /tmp/rmmod.err || { cat /tmp/rmmod.err; exit 1; }
grep -q '^o2g ' /proc/modules || { echo "module gone after refused rmmod"; exit 1; }
o2g-vmtest version-ioctl >/dev/null || { echo "device broken after refused rmmod"; exit 1; }
wait "$holder" || { echo "holder failed"; exit 1; }
trap - EXIT
[ "$(cat /sys/module/o2g/refcnt)" = 0 ] || { echo "refcnt $(cat /sys/module/o2g/refcnt) after close"; exit 1; }
