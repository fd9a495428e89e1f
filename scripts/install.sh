#!/usr/bin/env bash
# Installs what a user of o2g needs into a prefix, and nothing else:
#
#   PREFIX/bin/o2grun, o2g-stat, mpicc, mpicxx and mpifort (links to mpicc)
#   PREFIX/lib/libmpi_abi.so.1 (the standard ABI's SONAME), libmpi_abi.so
#   PREFIX/lib/pkgconfig/o2g-mpi.pc
#   PREFIX/include/mpi.h, mpif.h, mpi.mod (the `mpi` module, compiled by
#                               the build's gfortran; left out without one)
#   PREFIX/src/o2g-VERSION/     the module's sources and its dkms.conf, for
#                               building o2g.ko on a node (docs/install.md)
#   PREFIX/lib/modules-load.d/o2g.conf       loads the module at boot
#   PREFIX/lib/udev/rules.d/60-o2g.rules     /dev/o2g for group GROUP
#
# The wrappers find mpi.h and the library through their own location
# (PREFIX/bin/../include, ../lib), so an installed tree needs neither the
# build tree nor any environment variable (pkg-config's file and the RUNPATH
# of the programs they link name PREFIX itself).
#
# usage: scripts/install.sh --prefix DIR [--destdir DIR] [--group NAME] [--no-build]
#   --destdir DIR  stage under DIR (DIR/PREFIX/...), as packagers do; the
#                  installed files still name PREFIX
#   --group NAME   the group the udev rule gives /dev/o2g to (default mpi)
#   --no-build     install what target/release already holds (no cargo)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
log() { printf '[o2g] %s\n' "$*" >&2; }
die() { printf '[o2g] error: %s\n' "$*" >&2; exit 1; }

prefix="" destdir="" group=mpi build=1
while (($#)); do
    case "$1" in
        --prefix) prefix="${2:-}"; shift 2 ;;
        --destdir) destdir="${2:-}"; shift 2 ;;
        --group) group="${2:-}"; shift 2 ;;
        --no-build) build=0; shift ;;
        -h | --help) sed -n '2,22p' "$0"; exit 0 ;;
        *) die "unknown option $1 (see --help)" ;;
    esac
done
[[ -n "$prefix" ]] || die "--prefix DIR is required (see --help)"
[[ "$prefix" == /* ]] || die "--prefix must be an absolute path, not '$prefix'"
[[ -z "$destdir" || "$destdir" == /* ]] || die "--destdir must be an absolute path, not '$destdir'"
[[ "$group" =~ ^[a-z_][a-z0-9_-]*$ ]] || die "--group: '$group' is not a group name"
prefix="${prefix%/}"

rel="$root/target/release"
if ((build)); then
    # shellcheck source=scripts/env.sh
    source "$root/scripts/env.sh"
    log "building the library, o2grun and o2g-stat (release)"
    # Two commands: a --bin filter would apply to every package named.
    (cd "$root" && cargo build --release --locked -q -p o2g-mpi-abi -p o2g-stat &&
        cargo build --release --locked -q -p mpi --bin o2grun)
fi
for f in "$rel/libmpi_abi.so" "$rel/o2grun" "$rel/o2g-stat" "$rel/fortran/mpif.h"; do
    [[ -f "$f" ]] || die "$f is missing: build first, or drop --no-build"
done
version="$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -1)"
[[ -n "$version" ]] || die "no version in $root/Cargo.toml"

top="$destdir$prefix"
# put MODE DIR FILE...: copies FILEs into DIR with MODE (cp and chmod, not
# install(1): a minimal system such as busybox may lack it).
put() {
    local mode="$1" dir="$2" f
    shift 2
    mkdir -p "$dir"
    for f in "$@"; do
        cp "$f" "$dir/"
        chmod "$mode" "$dir/$(basename "$f")"
    done
}
log "installing o2g $version into $top${destdir:+ (for $prefix)}"
mkdir -p "$top/lib/pkgconfig" "$top/lib/modules-load.d" "$top/lib/udev/rules.d"
put 0755 "$top/bin" "$rel/o2grun" "$rel/o2g-stat" "$root/capi/mpicc"
ln -sfn mpicc "$top/bin/mpicxx"
ln -sfn mpicc "$top/bin/mpifort"
cp "$rel/libmpi_abi.so" "$top/lib/libmpi_abi.so.1"
chmod 0755 "$top/lib/libmpi_abi.so.1"
ln -sfn libmpi_abi.so.1 "$top/lib/libmpi_abi.so"
put 0644 "$top/include" "$root/capi/include/mpi.h" "$rel/fortran/mpif.h"
if [[ -f "$rel/fortran/mpi.mod" ]]; then
    put 0644 "$top/include" "$rel/fortran/mpi.mod"
else
    log "no mpi.mod in $rel/fortran (the build had no gfortran): Fortran programs can include mpif.h, not use mpi"
fi
sed -e "s|@INCDIR@|$prefix/include|g" -e "s|@LIBDIR@|$prefix/lib|g" \
    "$root/capi/o2g-mpi.pc.in" >"$top/lib/pkgconfig/o2g-mpi.pc"
chmod 0644 "$top/lib/pkgconfig/o2g-mpi.pc"

# The module's sources keep the tree's shape: kmod/ includes uapi/abi.rs
# and core/src/proto.rs (with its modules) by relative path.
src="$top/src/o2g-$version"
rm -rf "$src"
put 0644 "$src/kmod" "$root"/kmod/*.rs "$root"/kmod/*.c "$root"/kmod/*.h \
    "$root/kmod/Kbuild" "$root/kmod/Makefile"
put 0644 "$src/uapi" "$root/uapi/abi.rs"
put 0644 "$src/core/src" "$root/core/src/proto.rs"
for m in $(sed -n 's/^\(pub \)\{0,1\}mod \([a-z_]*\);$/\2/p' "$root/core/src/proto.rs"); do
    put 0644 "$src/core/src" "$root/core/src/$m.rs"
done
sed "s/@VERSION@/$version/" "$root/kmod/dkms.conf.in" >"$src/dkms.conf"
chmod 0644 "$src/dkms.conf"

echo o2g >"$top/lib/modules-load.d/o2g.conf"
cat >"$top/lib/udev/rules.d/60-o2g.rules" <<EOF
# o2g.ko's device: MPI jobs of group $group may open it (installed by o2g $version).
KERNEL=="o2g", GROUP="$group", MODE="0660"
EOF
chmod 0644 "$top/lib/modules-load.d/o2g.conf" "$top/lib/udev/rules.d/60-o2g.rules"
log "done: add $prefix/bin to PATH; the module: docs/install.md"
