#!/usr/bin/env bash
# Build o2g.ko against the cached guest kernel of one flavour and print the
# module's path. Sources stay in kmod/; output goes to target/kmod-<flavour>.
#
# usage: qemu/build-module.sh debug|release
set -euo pipefail
source "$(dirname "$0")/../scripts/env.sh"

flavour="${1:?usage: build-module.sh debug|release}"
kdir="$("$O2G_ROOT/qemu/build-kernel.sh" "$flavour")"
out="$O2G_ROOT/target/kmod-$flavour"
mkdir -p "$out"
log "building o2g.ko ($flavour)"
if ! make -C "$O2G_ROOT/kmod" KDIR="$kdir" MO="$out" LLVM="-$LLVM_VERSION" >"$out/build.log" 2>&1; then
    cat "$out/build.log" >&2
    die "module build failed"
fi
echo "$out/o2g.ko"
