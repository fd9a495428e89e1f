# Installs o2g into a fresh prefix inside the guest, where no build tree
# exists: scripts/install.sh --no-build from the bundle qemu/vm.sh copies
# in (the install script, the built programs and library, the wrappers,
# header and module sources). The bundle is then deleted, and from an
# environment that knows only the prefix, its mpicc builds an MPI program
# with the guest's C compiler, which must load the prefix's library and
# run under the prefix's o2grun over the module.
set -e
bundle=/opt/o2g-bundle prefix=/tmp/o2g-prefix
fail() {
    echo "install-prefix: $*"
    exit 1
}
rm -rf "$prefix" /tmp/app
bash "$bundle/scripts/install.sh" --prefix "$prefix" --no-build
mkdir /tmp/app
cp "$bundle/capi/tests/c/hello.c" "$bundle/capi/tests/c/check.h" /tmp/app/
rm -rf "$bundle"
named="$(grep -rl "$bundle" "$prefix" || true)"
[ -z "$named" ] || fail "installed files name the bundle: $named"
cd /tmp/app
user="env -i PATH=$prefix/bin:/usr/bin:/bin HOME=/tmp"
$user mpicc -O1 -o hello hello.c || fail "mpicc hello.c failed"
# The loader's own answer (what ldd prints): the prefix's library, not the
# copy the harness keeps in /lib for its test programs.
loaded="$(LD_TRACE_LOADED_OBJECTS=1 ./hello | grep libmpi_abi)"
case "$loaded" in
    *"=> $prefix/lib/libmpi_abi.so.1 "*) ;;
    *) fail "hello loads '$loaded', not $prefix/lib/libmpi_abi.so.1" ;;
esac
$user O2G_TRANSPORT=o2g o2grun -n 2 --timeout 120 ./hello || fail "o2grun -n 2 ./hello over o2g failed"
echo "install-prefix: installed into $prefix; its mpicc built hello.c in the guest, its o2grun ran it over o2g on 2 ranks"
