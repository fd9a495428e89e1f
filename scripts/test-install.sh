#!/usr/bin/env bash
# Installs o2g into a fresh prefix (scripts/install.sh) and uses it as a
# user would, from an environment that knows only that prefix:
#   - the prefix holds exactly the files a user needs;
#   - no installed text file names the build tree;
#   - mpicc builds an MPI program (capi/tests/c/hello.c, copied out) whose
#     RUNPATH is the prefix's lib/, and pkg-config finds o2g-mpi.pc there;
#   - the prefix's o2grun runs it on 3 ranks over sockets-epoll;
#   - DKMS builds o2g.ko from the prefix's module sources against a cached
#     guest kernel tree (KDIR, default the debug one), in trees of its own
#     (nothing under /usr/src or /var/lib/dkms is touched).
# Prints "install: ..." lines; exits non-zero at the first failure.
#
# usage: scripts/test-install.sh [KDIR]
set -euo pipefail
source "$(dirname "$0")/env.sh"

kdir="${1:-$("$O2G_ROOT/qemu/build-kernel.sh" debug)}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"
fail() {
    echo "install: FAILED: $*" >&2
    exit 1
}

"$O2G_ROOT/scripts/install.sh" --prefix "$prefix" >"$work/install.log" 2>&1 ||
    { cat "$work/install.log"; fail "scripts/install.sh"; }

version="$(sed -n 's/^version = "\(.*\)"/\1/p' "$O2G_ROOT/Cargo.toml" | head -1)"
want="bin/mpicc bin/mpicxx bin/mpifort bin/o2g-stat bin/o2grun include/mpi.h include/mpif.h include/mpi.mod
lib/libmpi_abi.so lib/libmpi_abi.so.1 lib/modules-load.d/o2g.conf
lib/pkgconfig/o2g-mpi.pc lib/udev/rules.d/60-o2g.rules
src/o2g-$version/dkms.conf src/o2g-$version/kmod/Kbuild src/o2g-$version/kmod/Makefile
src/o2g-$version/kmod/o2g_main.rs src/o2g-$version/uapi/abi.rs src/o2g-$version/core/src/proto.rs"
for f in $want; do
    [[ -e "$prefix/$f" ]] || fail "$f is not installed"
done
# Nothing but the module's sources beyond the list.
extra="$(cd "$prefix" && find . ! -type d | sed 's|^\./||' | grep -v "^src/o2g-$version/" |
    grep -vxF -f <(tr ' ' '\n' <<<"$want" | grep -v '^$') || true)"
[[ -z "$extra" ]] || fail "installed beyond what a user needs: $extra"
named="$(grep -rlI -- "$O2G_ROOT" "$prefix" || true)"
[[ -z "$named" ]] || fail "installed files name the build tree: $named"
echo "install: $(cd "$prefix" && find . ! -type d | wc -l) files under a fresh prefix, none naming the build tree"

# A user's shell: the prefix's bin/ and the system's, nothing of ours.
user_env=(env -i "PATH=$prefix/bin:/usr/bin:/bin" "HOME=$work" "LANG=C")
mkdir "$work/app"
cp "$O2G_ROOT/capi/tests/c/hello.c" "$O2G_ROOT/capi/tests/c/check.h" "$work/app/"
(cd "$work/app" && "${user_env[@]}" mpicc -O1 -o hello hello.c) || fail "mpicc hello.c"
runpath="$(readelf -d "$work/app/hello" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')"
[[ "$runpath" == "$prefix/lib" ]] || fail "hello's RUNPATH is '$runpath', not $prefix/lib"
# Captured first: `ldd | grep -q` under pipefail fails when grep's early exit
# hands ldd a SIGPIPE.
libs="$("${user_env[@]}" ldd "$work/app/hello")"
grep -qF "libmpi_abi.so.1 => $prefix/lib/libmpi_abi.so.1" <<<"$libs" ||
    fail "hello does not load the prefix's libmpi_abi.so.1: $libs"
flags="$("${user_env[@]}" PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs o2g-mpi | sed "s/ *$//")"
[[ "$flags" == "-I$prefix/include -L$prefix/lib -Wl,-rpath,$prefix/lib -lmpi_abi" ]] ||
    fail "pkg-config o2g-mpi: $flags"
# shellcheck disable=SC2086 # the flags are several words
(cd "$work/app" && "${user_env[@]}" cc -O1 -o hello-pc hello.c $flags) || fail "cc \$(pkg-config o2g-mpi)"
(cd "$work/app" && "${user_env[@]}" O2G_TRANSPORT=sockets-epoll o2grun -n 3 --timeout 60 ./hello) ||
    fail "o2grun -n 3 ./hello"
echo "install: mpicc and pkg-config build against the prefix; its o2grun runs the program on 3 ranks"
# Fortran: `use mpi` from the prefix's mpi.mod, through its mpifort.
cp "$O2G_ROOT/capi/tests/fortran/ring.f90" "$O2G_ROOT/capi/tests/fortran/check.inc" "$work/app/"
(cd "$work/app" && "${user_env[@]}" mpifort -O1 -o ring ring.f90) || fail "mpifort ring.f90"
(cd "$work/app" && "${user_env[@]}" O2G_TRANSPORT=sockets-epoll o2grun -n 3 --timeout 60 ./ring) ||
    fail "o2grun -n 3 ./ring"
echo "install: mpifort builds with the prefix's mpi module; the program runs on 3 ranks"

# DKMS, in trees of its own: the module's sources as installed, built
# against KDIR's kernel. Root only (dkms refuses otherwise).
kver="$(cat "$kdir/include/config/kernel.release")"
dkms=(dkms --sourcetree "$prefix/src" --dkmstree "$work/dkms" -m o2g -v "$version" -k "$kver" --kernelsourcedir "$kdir")
mkdir "$work/dkms"
"${dkms[@]}" add >"$work/dkms.log" 2>&1 && "${dkms[@]}" build >>"$work/dkms.log" 2>&1 ||
    { cat "$work/dkms.log" "$work"/dkms/o2g/"$version"/build/make.log 2>/dev/null; fail "dkms add/build"; }
ko="$(find "$work/dkms/o2g/$version" -name o2g.ko | head -1)"
[[ -n "$ko" ]] || fail "dkms built no o2g.ko: $(cat "$work/dkms.log")"
magic="$(modinfo -F vermagic "$ko")"
[[ "$magic" == "$kver "* ]] || fail "dkms's o2g.ko is for '$magic', not $kver"
echo "install: dkms built o2g.ko from $prefix/src/o2g-$version for $kver"
