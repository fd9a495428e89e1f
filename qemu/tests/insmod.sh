# Loading the module creates /dev/o2g, root-only (0600), as documented.
set -e
insmod "$O2G_KO"
grep -q '^o2g ' /proc/modules
[ -c /dev/o2g ]
mode="$(stat -c %a /dev/o2g)"
[ "$mode" = 600 ] || { echo "/dev/o2g has mode $mode, want 600"; exit 1; }
dmesg | grep -q 'o2g: loading: ABI' || { echo 'no load message in dmesg'; exit 1; }
