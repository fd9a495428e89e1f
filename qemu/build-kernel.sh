#!/usr/bin/env bash
# Build the o2g guest kernel for one flavour (debug|release) and print the
# build directory on stdout. Builds are cached under $O2G_CACHE/kernel, keyed
# by kernel version + config fragment hash + toolchain versions; a cache hit
# returns at once.
#
# usage: qemu/build-kernel.sh debug|release
set -euo pipefail
source "$(dirname "$0")/../scripts/env.sh"

flavour="${1:?usage: build-kernel.sh debug|release}"
kconf="$O2G_ROOT/qemu/kernel"
[[ -f "$kconf/$flavour.config" ]] || die "unknown kernel flavour '$flavour'"

src="$(readlink -f "$O2G_CACHE/src/current")"
[[ -f "$src/Makefile" ]] || die "no kernel source; run scripts/setup.sh"
version="$(cat "$src/.o2g-version")"

toolchain="$(rustc --version; bindgen --version; "clang-$LLVM_VERSION" --version | head -1)"
key="$( { echo "$version"; cat "$kconf/base.config" "$kconf/$flavour.config"; echo "$toolchain"; } \
        | sha256sum | cut -c1-16)"
out="$O2G_CACHE/kernel/$flavour-$version-$key"
if [[ -f "$out/.o2g-built" ]]; then
    echo "$out"
    exit 0
fi

kmake=(make -C "$src" O="$out" LLVM="-$LLVM_VERSION" -j"$(nproc)")
rm -rf "$out"
mkdir -p "$out"
log "configuring $flavour kernel $version (key $key)"
"${kmake[@]}" -s allnoconfig >&2
KCONFIG_CONFIG="$out/.config" "$src/scripts/kconfig/merge_config.sh" -m -O "$out" \
    "$out/.config" "$kconf/base.config" "$kconf/$flavour.config" >"$out/merge.log" 2>&1
"${kmake[@]}" -s olddefconfig >&2

# merge_config only warns when Kconfig drops an option (an unmet dependency);
# for us that is an error, because the fragment is the contract.
missing=0
while IFS= read -r line; do
    case "$line" in
        CONFIG_*=n) opt="${line%%=*}"
            if grep -q "^$opt=" "$out/.config"; then log "wanted $line, got $(grep "^$opt=" "$out/.config")"; missing=1; fi ;;
        CONFIG_*=*)
            if ! grep -qxF "$line" "$out/.config"; then log "wanted $line, got $(grep "^${line%%=*}=" "$out/.config" || echo unset)"; missing=1; fi ;;
    esac
done < <(cat "$kconf/base.config" "$kconf/$flavour.config")
((missing == 0)) || die "kernel config fragment not honoured (see above); is the Rust toolchain available? try: make -C $src O=$out LLVM=-$LLVM_VERSION rustavailable"

log "building $flavour kernel in $out (log: $out/build.log)"
start=$SECONDS
"${kmake[@]}" >"$out/build.log" 2>&1 &
make_pid=$!
trap 'kill "$make_pid" 2>/dev/null || true' EXIT
while kill -0 "$make_pid" 2>/dev/null; do
    sleep 20
    objs="$(grep -cE '^\s+(CC|RUSTC|AS|LD)' "$out/build.log" || true)"
    log "kernel $flavour: $objs steps, $(( (SECONDS - start) / 60 ))m$(( (SECONDS - start) % 60 ))s"
done
trap - EXIT
if ! wait "$make_pid"; then
    tail -40 "$out/build.log" >&2
    die "kernel build failed (full log: $out/build.log)"
fi
echo "$version $flavour $key" >"$out/.o2g-built"
log "kernel $flavour built in $(( (SECONDS - start) / 60 )) min"
echo "$out"
