#!/usr/bin/env bash
# Fetch Debian's (bookworm, the system's own sources) Slurm and MUNGE
# daemons, tools and plugins for the guests' cluster (qemu/tests/slurm.sh)
# and unpack them with dpkg-deb -x under $O2G_CACHE/slurm/<version>/root.
# Nothing is installed on the host: the daemons would start there. The
# libraries they link are ordinary host packages (scripts/setup.sh installs
# them), which qemu/make-initramfs.sh copies in as it does for every
# program. Prints the unpacked root. Idempotent.
set -euo pipefail
source "$(dirname "$0")/env.sh"

packages=(slurmd slurmctld slurm-client slurm-wlm-basic-plugins munge)
version="$(apt-cache policy slurmd | awk '/Candidate:/ { print $2 }')"
[[ -n "$version" && "$version" != "(none)" ]] || die "no slurmd package in the system's apt sources (apt-get update?)"
dest="$O2G_CACHE/slurm/$version"
if [[ -f "$dest/.o2g-complete" ]]; then
    echo "$dest/root"
    exit 0
fi
log "fetching Slurm $version and MUNGE (${packages[*]})"
rm -rf "$dest"
mkdir -p "$dest/debs" "$dest/root"
(cd "$dest/debs" && apt-get download -qq -o APT::Sandbox::User=root "${packages[@]}") || die "apt-get download ${packages[*]} failed"
for deb in "$dest"/debs/*.deb; do
    dpkg-deb -x "$deb" "$dest/root"
done
# What the packages' maintainer scripts would do: the alternatives the
# daemons are run by (slurmd starts slurmstepd by this path).
for d in slurmd slurmctld slurmstepd; do
    ln -sf "$d-wlm" "$dest/root/usr/sbin/$d"
done
touch "$dest/.o2g-complete"
echo "$dest/root"
