# Under TCG the guest's CPU has no ERMS or FSRM, so that the kernel's and
# glibc's copies do not use `rep movsb`, which TCG runs one byte per
# iteration (qemu/vm.sh, qemu_cmd). Skipped (exit 4) under KVM or with
# O2G_VM_REP_MOVSB=1, where the CPU keeps what it has.
set -u
if [ "${O2G_VM_ACCEL:-}" != tcg ] || [ "${O2G_VM_REP_MOVSB:-0}" = 1 ]; then
    echo "tcg-cpu: accel ${O2G_VM_ACCEL:-unknown}, rep movsb ${O2G_VM_REP_MOVSB:-0}: nothing to check"
    exit 4
fi
flags="$(awk -F': ' '/^flags/ { print " " $2 " "; exit }' /proc/cpuinfo)"
[ -n "$flags" ] || { echo "tcg-cpu: no flags line in /proc/cpuinfo"; exit 1; }
for f in erms fsrm; do
    case "$flags" in
    *" $f "*) echo "tcg-cpu: the guest CPU has $f"; exit 1 ;;
    esac
done
# The copies take the paths the kernel picked at boot.
case "$flags" in *" rep_good "*) good="rep_good" ;; *) good="no rep_good" ;; esac
echo "tcg-cpu: no erms, no fsrm ($good)"
