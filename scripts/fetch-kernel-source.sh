#!/usr/bin/env bash
# Fetch Debian's linux-source-$O2G_KERNEL_SERIES from the unstable suite with a
# *private* apt configuration (own sources list, lists and cache under
# $O2G_CACHE/apt), so the system's apt sources never name unstable. Unpacks the
# tree to $O2G_CACHE/src/linux-<version> and points $O2G_CACHE/src/current at it.
set -euo pipefail
source "$(dirname "$0")/env.sh"

src="$O2G_CACHE/src"
if [[ -e "$src/current/Makefile" && -f "$src/current/.o2g-version" ]]; then
    exit 0
fi

mkdir -p "$src"
source "$(dirname "$0")/private-apt.sh"
pkg="linux-source-$O2G_KERNEL_SERIES"
log "refreshing private unstable package list"
apt-get "${apt_opts[@]}" update -qq
version="$(apt-cache "${apt_opts[@]}" show "$pkg" 2>/dev/null | awk '/^Version:/ && !v {v = $2} END {print v}')"
if [[ -z "$version" ]]; then
    avail="$(apt-cache "${apt_opts[@]}" pkgnames linux-source- 2>/dev/null | sort | tr '\n' ' ')"
    die "$pkg is not in Debian unstable any more; available: ${avail:-none}"
fi
log "downloading $pkg $version"
( cd "$apt_dir" && apt-get "${apt_opts[@]}" download -qq "$pkg=$version" )
deb="$(ls "$apt_dir"/"${pkg}"_*.deb | head -1)"
tmp="$(mktemp -d "$src/.unpack.XXXX")"
trap 'rm -rf "$tmp"' EXIT
dpkg-deb -x "$deb" "$tmp"
log "unpacking kernel source"
tar -C "$tmp" -xf "$tmp/usr/src/linux-source-$O2G_KERNEL_SERIES.tar.xz"
tree="$src/linux-$version"
rm -rf "$tree"
mv "$tmp/linux-source-$O2G_KERNEL_SERIES" "$tree"
echo "$version" >"$tree/.o2g-version"
ln -sfn "linux-$version" "$src/current"
rm -f "$deb"
log "kernel source $version at $tree"
