#!/usr/bin/env bash
# Fetch Debian unstable's MPICH 5.0 packages that carry the MPI 5.0 standard
# ABI (libmpich-dev: the standard-ABI mpi.h under mpi_abi_mpich/include;
# libmpich12: libmpi_abi_mpich.so.1.0.0, SONAME libmpi_abi.so.1) with a
# *private* apt configuration (own sources list, lists and cache under
# $O2G_CACHE/apt, as fetch-kernel-source.sh does), and unpack them with
# dpkg-deb -x under $O2G_CACHE/mpi-abi/mpich-<version>. Nothing is installed
# on the system and the system's apt sources never name unstable.
#
# The capi tests compile a program against this header and link it against
# this library, then run it against o2g's libmpi_abi.so.1 (binary
# compatibility). Prints the unpacked directory. Idempotent.
set -euo pipefail
source "$(dirname "$0")/env.sh"

dest="$O2G_CACHE/mpi-abi"
header_rel="usr/lib/x86_64-linux-gnu/mpi_abi_mpich/include/mpi.h"
if [[ -f "$dest/current/$header_rel" && -f "$dest/current/.o2g-version" ]]; then
    echo "$dest/current"
    exit 0
fi

mkdir -p "$dest"
source "$(dirname "$0")/private-apt.sh"
log "refreshing private unstable package list"
apt-get "${apt_opts[@]}" update -qq
version="$(apt-cache "${apt_opts[@]}" show libmpich-dev 2>/dev/null | awk '/^Version:/ && !v {v = $2} END {print v}')"
[[ -n "$version" ]] || die "libmpich-dev is not in Debian unstable"
case "$version" in
    5.*) ;;
    *) die "libmpich-dev $version in unstable is not MPICH 5 (no standard ABI)" ;;
esac
tmp="$(mktemp -d "$dest/.unpack.XXXX")"
trap 'rm -rf "$tmp"' EXIT
log "downloading libmpich-dev and libmpich12 $version"
( cd "$tmp" && apt-get "${apt_opts[@]}" download -qq "libmpich-dev=$version" "libmpich12=$version" )
mkdir "$tmp/root"
for deb in "$tmp"/*.deb; do
    dpkg-deb -x "$deb" "$tmp/root"
done
[[ -f "$tmp/root/$header_rel" ]] || die "libmpich-dev $version has no $header_rel"
echo "$version" >"$tmp/root/.o2g-version"
tree="$dest/mpich-$version"
rm -rf "$tree"
mv "$tmp/root" "$tree"
ln -sfn "mpich-$version" "$dest/current"
log "MPICH $version standard-ABI files at $tree"
echo "$dest/current"
