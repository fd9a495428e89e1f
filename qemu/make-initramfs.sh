#!/usr/bin/env bash
# Build a guest initramfs: busybox, the guest init, o2g.ko, the host-built
# user-space test programs (with the shared libraries they link), and the
# test scripts of one run.
#
# usage: qemu/make-initramfs.sh OUT.cpio MODULE.ko TEST...
#   Each TEST names qemu/tests/TEST.sh (qemu/selftest/TEST.sh when
#   O2G_SELFTEST=1). Programs the tests run are taken from $O2G_GUEST_BINS
#   (space-separated host paths).
set -euo pipefail
source "$(dirname "$0")/../scripts/env.sh"

out="${1:?usage: make-initramfs.sh OUT.cpio MODULE.ko TEST...}"
module="${2:?missing module}"
shift 2

root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{bin,dev,proc,sys,tmp,etc/o2g,lib/o2g,tests}

busybox="$(command -v busybox)" || die "busybox not found; run scripts/setup.sh"
cp "$busybox" "$root/bin/busybox"
for applet in $("$busybox" --list); do
    [[ -e "$root/bin/$applet" ]] || ln -s busybox "$root/bin/$applet"
done

# Copy a host binary and every shared library it needs, at the same paths.
copy_with_libs() {
    local bin="$1"
    cp "$bin" "$root/bin/"
    ldd "$bin" 2>/dev/null | grep -oE '/[^ ]+' | while read -r lib; do
        mkdir -p "$root$(dirname "$lib")"
        cp -L "$lib" "$root$lib"
    done
}
for bin in ${O2G_GUEST_BINS:-}; do
    copy_with_libs "$bin"
done

cp "$O2G_ROOT/qemu/guest/init" "$root/init"
chmod +x "$root/init"
cp "$O2G_ROOT/qemu/splat-patterns.txt" "$root/etc/o2g/"
cp "$module" "$root/lib/o2g/o2g.ko"
: >"$root/tests/list"
tests_dir="$O2G_ROOT/qemu/tests"
[[ "${O2G_SELFTEST:-0}" == 1 ]] && tests_dir="$O2G_ROOT/qemu/selftest"
for t in "$@"; do
    src="$tests_dir/$t.sh"
    [[ -f "$src" ]] || die "no such guest test: $src"
    cp "$src" "$root/tests/"
    echo "$t" >>"$root/tests/list"
done

(cd "$root" && find . -print0 | cpio --null -o -H newc --quiet) >"$out"
