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

apt_dir="$O2G_CACHE/apt"
mkdir -p "$apt_dir"/{etc,lists/partial,cache/archives/partial} "$src"
cat >"$apt_dir/etc/sources.list" <<SOURCES
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian unstable main
SOURCES
apt_opts=(
    -o "Dir::Etc::SourceList=$apt_dir/etc/sources.list"
    -o Dir::Etc::SourceParts=/dev/null
    -o "Dir::State::Lists=$apt_dir/lists"
    -o "Dir::Cache=$apt_dir/cache"
    -o Dir::Etc::Preferences=/dev/null
    -o Dir::Etc::PreferencesParts=/dev/null
    -o APT::Sandbox::User=root
)
pkg="linux-source-$O2G_KERNEL_SERIES"
log "refreshing private unstable package list"
apt-get "${apt_opts[@]}" update -qq
version="$(apt-cache "${apt_opts[@]}" show "$pkg" 2>/dev/null | awk '/^Version:/{print $2; exit}')"
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
