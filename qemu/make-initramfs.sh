#!/usr/bin/env bash
# Build a guest initramfs: busybox, the guest init, o2g.ko, the host-built
# user-space test programs (with the shared libraries they link), and the
# test scripts of one run.
#
# usage: qemu/make-initramfs.sh OUT.cpio MODULE.ko TEST...
#   Each TEST is "NAME [ARGS...]" (a suite line, see qemu/vm.sh): the script
#   qemu/tests/NAME.sh (qemu/selftest/NAME.sh when O2G_SELFTEST=1), which
#   takes no ARGS, or else the check `o2g-vmtest NAME ARGS...`, which must be
#   one that `o2g-vmtest --list` names (o2g-vmtest is taken from
#   $O2G_GUEST_BINS). Programs the tests run are taken from $O2G_GUEST_BINS
#   (space-separated host paths); other files from $O2G_GUEST_FILES (host
#   paths, copied to the same paths in the guest).
#   O2G_GUEST_PYTHON=1 installs Debian's Python; O2G_GUEST_TREES copies
#   directories in (HOST[=GUEST] each); O2G_GUEST_CC=1 a C compiler and the
#   headers O2G_GUEST_CC_SOURCES include; O2G_GUEST_SLURM=1 Debian's Slurm
#   and MUNGE (scripts/fetch-slurm.sh).
#   O2G_GUEST_PEERS=1 also installs Debian's Open MPI and MPICH (launchers,
#   plugins, help and config files, the libraries they load) at their host
#   paths, and qemu/guest-peers.sh as /etc/o2g/peers.sh; off by default,
#   as it adds tens of MiB.
set -euo pipefail
source "$(dirname "$0")/../scripts/env.sh"

out="${1:?usage: make-initramfs.sh OUT.cpio MODULE.ko TEST...}"
module="${2:?missing module}"
shift 2

root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{bin,dev,proc,sys,tmp,etc/o2g,lib/o2g,tests}
# mktemp makes the root 0700: open it up, so that the checks that run as an
# unprivileged user can reach anything at all.
chmod 755 "$root"
chmod 1777 "$root/tmp"

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
        # A library from the build tree (our libmpi_abi.so.1) is found
        # through the program's RUNPATH, a host path that the guest may
        # hide (a checkout under /tmp, where the guest mounts a tmpfs):
        # put it in /lib too, where the loader always looks.
        case "$lib" in
            /lib/* | /lib64/* | /usr/lib/* | /usr/lib64/*) ;;
            *) cp -L "$lib" "$root/lib/" ;;
        esac
    done
}
for bin in ${O2G_GUEST_BINS:-}; do
    copy_with_libs "$bin"
done
for f in ${O2G_GUEST_FILES:-}; do
    mkdir -p "$root$(dirname "$f")"
    cp -L "$f" "$root$f"
done

# Copy host path(s) to the same place in the guest, symlinks kept as they are.
copy_same_path() {
    local p
    for p in "$@"; do
        [[ -e "$p" || -L "$p" ]] || die "peers: $p not found; install openmpi-bin and mpich"
        mkdir -p "$root$(dirname "$p")"
        cp -a "$p" "$root$(dirname "$p")/"
    done
}

# The shared libraries of every program and loadable module under guest
# directory DIR (already copied in), found at run time only by dlopen.
copy_libs_under() {
    local elf so
    while read -r elf; do
        # A module that needs no library gives grep nothing to print.
        { ldd "$elf" 2>/dev/null | grep -oE '/[^ ]+' || true; } | while read -r so; do
            [[ -e "$root$so" ]] && continue
            # Not our libmpi_abi from the build tree a RUNPATH names (a
            # debug build, maybe): the guest has the tests' own in /lib.
            case "$so" in /lib/* | /lib64/* | /usr/*) ;; *) continue ;; esac
            mkdir -p "$root$(dirname "$so")"
            cp -L "$so" "$root$so"
        done
    done < <(find "$1" -type f \( -perm -u+x -o -name '*.so*' \))
}

# Python for tests that run Python programs (mpi4py's test suite): Debian's
# interpreter and its standard library at their host paths, without what
# no test imports (the static libpython and the build configuration, 25 of
# its 54 MB, the GUI, the 2to3 converter, documentation data, ...).
if [[ "${O2G_GUEST_PYTHON:-0}" == 1 ]]; then
    py="$(readlink -f /usr/bin/python3)"
    pylib="/usr/lib/$(basename "$py")"
    [[ -x "$py" && -d "$pylib" ]] || die "no Debian Python at /usr/bin/python3 (scripts/setup.sh installs it)"
    mkdir -p "$root/usr/bin" "$root/usr/lib"
    cp -a /usr/bin/python3 "$py" "$root/usr/bin/"
    cp -a "$pylib" "$root/usr/lib/"
    for unused in config-* idlelib tkinter turtledemo lib2to3 pydoc_data ensurepip test distutils; do
        rm -rf "$root$pylib"/$unused
    done
    copy_libs_under "$root/usr/bin"
    copy_libs_under "$root$pylib/lib-dynload"
fi

# Trees the tests need, HOST[=GUEST] each: HOST copied to GUEST (default:
# the same path), symlinks kept, with the libraries of the programs and
# modules in it.
for tree in ${O2G_GUEST_TREES:-}; do
    host="${tree%%=*}" guest="${tree#*=}"
    [[ -e "$host" ]] || die "guest tree $host not found"
    mkdir -p "$root$(dirname "$guest")"
    cp -a "$host" "$root$guest"
    copy_libs_under "$root$guest"
done

# A C compiler for tests that build programs in the guest (install-prefix):
# Debian's gcc driver, cc1 and collect2, binutils' as and ld, glibc's
# start files and link script, at their host paths (about 45 MB), and the
# system headers that $O2G_GUEST_CC_SOURCES (C files) include, found by
# the host's gcc -M: the guest compiles those files and nothing else.
if [[ "${O2G_GUEST_CC:-0}" == 1 ]]; then
    gcc="$(readlink -f "$(command -v gcc)")" || die "no gcc on the host (scripts/setup.sh installs it)"
    gccdir="$(dirname "$(gcc -print-libgcc-file-name)")"
    triple="$(gcc -dumpmachine)"
    cc_files=("$gcc" "$(gcc -print-prog-name=cc1)" "$(gcc -print-prog-name=collect2)"
        "$gccdir"/{crtbegin.o,crtbeginS.o,crtend.o,crtendS.o,libgcc.a,libgcc_eh.a,libgcc_s.so,liblto_plugin.so}
        "/usr/lib/$triple"/{crt1.o,Scrt1.o,crti.o,crtn.o,libc.so,libc_nonshared.a}
        "/lib/$triple/libgcc_s.so.1")
    for f in "${cc_files[@]}"; do
        mkdir -p "$root$(dirname "$f")"
        cp -L "$f" "$root$f"
    done
    mkdir -p "$root/usr/bin"
    ln -sf "$gcc" "$root/usr/bin/cc"
    ln -sf "$gcc" "$root/usr/bin/gcc"
    cp -L "$(command -v as)" "$root/usr/bin/as"
    cp -L "$(command -v ld)" "$root/usr/bin/ld"
    # Optimizing includes more (glibc's inline bits/*.h): both levels.
    for src in ${O2G_GUEST_CC_SOURCES:-}; do
        { gcc -M -I "$O2G_ROOT/capi/include" "$src"
          gcc -M -O2 -I "$O2G_ROOT/capi/include" "$src"; } | tr -d '\\' | tr ' ' '\n' |
            grep -E '^/usr/(include|lib/gcc)/' | while read -r h; do
                mkdir -p "$root$(dirname "$h")"
                cp -L "$h" "$root$h"
            done
    done
    copy_libs_under "$root/usr/bin"
    copy_libs_under "$root$gccdir"
fi

# Slurm and MUNGE (O2G_GUEST_SLURM=1): Debian's packages as
# scripts/fetch-slurm.sh unpacked them, their plugins' libraries, and the
# users their daemons name.
if [[ "${O2G_GUEST_SLURM:-0}" == 1 ]]; then
    slurm_root="$("$O2G_ROOT/scripts/fetch-slurm.sh")" || die "fetching Slurm failed"
    cp -a "$slurm_root/usr" "$root/"
    copy_libs_under "$root/usr/sbin"
    copy_libs_under "$root/usr/bin"
    copy_libs_under "$root/usr/lib/x86_64-linux-gnu/slurm-wlm"
    mkdir -p "$root/etc"
    for u in 'root:x:0:0:root:/tmp:/bin/sh' 'munge:x:101:101:munge:/tmp:/bin/false' \
        'slurm:x:102:102:slurm:/tmp:/bin/false'; do
        grep -qs "^${u%%:*}:" "$root/etc/passwd" || echo "$u" >>"$root/etc/passwd"
    done
    for g in 'root:x:0:' 'munge:x:101:' 'slurm:x:102:'; do
        grep -qs "^${g%%:*}:" "$root/etc/group" || echo "$g" >>"$root/etc/group"
    done
    printf 'passwd: files\ngroup: files\nhosts: files\n' >"$root/etc/nsswitch.conf"
fi

# The MPI peers: what ldd shows for the programs is not enough. Their
# launchers, the plugins Open MPI and PMIx dlopen, help texts (error
# messages are looked up there) and config must be at the host's paths.
if [[ "${O2G_GUEST_PEERS:-0}" == 1 ]]; then
    lib=/usr/lib/x86_64-linux-gnu
    # Open MPI 4.1 (ORTE launcher; mpirun runs the local ranks itself,
    # orted serves other nodes), and PMIx which it speaks to its ranks.
    copy_same_path /usr/bin/orterun /usr/bin/orted /usr/bin/mpirun.openmpi \
        /usr/bin/mpiexec.openmpi "$lib/openmpi/lib" /usr/share/openmpi /etc/openmpi \
        "$lib/pmix2/lib/pmix" "$lib/pmix2/share"
    # MPICH 4.0 (hydra, PMI-1 to its ranks) and UCX's loadable transports.
    copy_same_path /usr/bin/mpiexec.hydra /usr/bin/mpiexec.mpich \
        /usr/bin/hydra_pmi_proxy "$lib/ucx"
    # Libraries of every program and plugin, found only by dlopen otherwise.
    copy_libs_under "$root/usr"
    mkdir -p "$root/etc"
    # Both look up the user and the host name; glibc reads these files.
    grep -qs '^root:' "$root/etc/passwd" || echo 'root:x:0:0:root:/tmp:/bin/sh' >>"$root/etc/passwd"
    grep -qs '^root:' "$root/etc/group" || echo 'root:x:0:' >>"$root/etc/group"
    printf 'passwd: files\ngroup: files\nhosts: files\n' >"$root/etc/nsswitch.conf"
    cp "$O2G_ROOT/qemu/guest-peers.sh" "$root/etc/o2g/peers.sh"
fi

cp "$O2G_ROOT/qemu/guest/init" "$root/init"
chmod +x "$root/init"
cp "$O2G_ROOT/qemu/guest/o2grun-cluster" "$O2G_ROOT/qemu/guest/emit-csv" "$O2G_ROOT/qemu/guest/o2g-trace" \
    "$O2G_ROOT/qemu/guest/with-rfs" "$root/bin/"
cp "$O2G_ROOT/qemu/splat-patterns.txt" "$root/etc/o2g/"
cp "$module" "$root/lib/o2g/o2g.ko"
: >"$root/tests/list"
tests_dir="$O2G_ROOT/qemu/tests"
[[ "${O2G_SELFTEST:-0}" == 1 ]] && tests_dir="$O2G_ROOT/qemu/selftest"
checks=""
for bin in ${O2G_GUEST_BINS:-}; do
    [[ "$(basename "$bin")" == o2g-vmtest ]] && checks="$("$bin" --list)"
done
for t in "$@"; do
    read -r name args <<<"$t"
    [[ -n "$name" ]] || die "an empty test name"
    src="$tests_dir/$name.sh"
    if [[ -f "$src" ]]; then
        [[ -z "$args" ]] || die "$name: a test script takes no arguments (got: $args)"
        cp "$src" "$root/tests/"
    elif ! grep -qxF -- "$name" <<<"$checks"; then
        die "no such guest test: neither $src nor an o2g-vmtest check named $name"
    fi
    echo "$name${args:+ $args}" >>"$root/tests/list"
done

(cd "$root" && find . -print0 | cpio --null -o -H newc --quiet) >"$out"
