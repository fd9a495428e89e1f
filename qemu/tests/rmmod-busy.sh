# While /dev/o2g is open the module is pinned: rmmod fails with EBUSY, and the
# open file keeps working. Once it is closed the refcount is back to zero.
o2g-vmtest hold-open 8 &
holder=$!
i=0
until [ "$(cat /sys/module/o2g/refcnt)" -gt 0 ]; do
    i=$((i + 1)); [ "$i" -lt 100 ] || { echo "holder never opened /dev/o2g"; exit 1; }
    sleep 0.1
done
if rmmod o2g 2>/tmp/rmmod.err; then
    echo "rmmod succeeded while /dev/o2g was open"
    exit 1
fi
grep -qi 'busy\|in use' /tmp/rmmod.err || { cat /tmp/rmmod.err; exit 1; }
wait "$holder" || { echo "holder failed"; exit 1; }
[ "$(cat /sys/module/o2g/refcnt)" = 0 ] || { echo "refcnt $(cat /sys/module/o2g/refcnt) after close"; exit 1; }
