# insmod, use, rmmod 50 times; then kmemleak must find nothing unreferenced
# left by any test of this boot (the guest init cleared it after boot).
kml=/sys/kernel/debug/kmemleak
[ -w "$kml" ] || { echo "kmemleak not available"; exit 1; }
i=0
while [ "$i" -lt 50 ]; do
    insmod "$O2G_KO" || { echo "insmod #$i failed"; exit 1; }
    o2g-vmtest version-ioctl >/dev/null || { echo "version ioctl #$i failed"; exit 1; }
    rmmod o2g || { echo "rmmod #$i failed"; exit 1; }
    i=$((i + 1))
done
# Unreferenced objects are reported only once they are old enough (5 s) and
# seen unreferenced by a scan; two scans a few seconds apart settle it.
echo scan >"$kml"; sleep 6; echo scan >"$kml"
leaks="$(cat "$kml")"
if [ -n "$leaks" ]; then
    echo "$leaks" | head -60
    exit 1
fi
