#!/usr/bin/env bash
# Boot the o2g guest kernel in QEMU, run in-guest tests, report per test.
#
# usage: qemu/vm.sh [--flavour debug|release] [--nodes N] [--timeout SECS] [--verbose] TEST|SUITE...
#
#   SUITE names qemu/suites/SUITE.suite: one TEST per line; "#" lines are
#   comments (say there what each test checks). A TEST is "NAME [ARGS...]":
#   the script qemu/tests/NAME.sh if there is one (no ARGS), else the check
#   `o2g-vmtest NAME ARGS...` (`o2g-vmtest --list` names them; ARGS are
#   words of the guest's sh, so "recv-flood $((1 << 30))" works). On the
#   command line, quote a TEST with ARGS. With --nodes N > 1, N VMs boot on
#   a private bridge inside a network namespace made for this run (no route
#   out of it), each running the same tests with O2G_NODE=0..N-1; node i has
#   address 198.18.0.(i+1). A test's output is shown when it fails, or
#   always with --verbose.
#
# Reports in KTAP style (qemu/ktap.sh reads it): the plan "1..T" for T =
# nodes x tests, then "ok K - nodeI/NAME" or "not ok K - nodeI/NAME ..."
# per test as the guests report them, and for each test a guest never
# reported (it died, hung or hit the deadline) "not ok K - nodeI/NAME # no
# result". Host-side checks that fail add "not ok" lines after the plan
# (nodeI/finished: the guest did not end its run; nodeI/kernel-log-clean).
# Ends with "vm: P passed, F failed, S skipped (RUN_DIR)", counted by
# qemu/ktap.sh from all of that. Exit status 0 only if nothing failed,
# every guest finished, and no guest kernel log has a WARNING/BUG/lockdep/KASAN
# report (qemu/splat-patterns.txt). Console and dmesg of each node, and the
# KTAP output (results.ktap), are kept in target/vm/<run>/. Every wait is
# bounded and no QEMU process outlives the run.
#
# Environment (defaults): O2G_ACCEL=auto|tcg|kvm (auto: KVM only if a short
# smoke boot works on this machine), O2G_VM_MEM=1024 (MiB per VM),
# O2G_VM_SMP=2 (1 per VM in cluster mode; maxcpus is at least 2, see qemu_cmd),
# O2G_BOOT_TIMEOUT=240,
# O2G_GUEST_BINS (extra host programs to copy into the guest),
# O2G_GUEST_FILES (host files copied to the same paths), O2G_GUEST_ENV
# ("NAME=value ..." exported to the guest's tests; no spaces inside values),
# O2G_VM_IVSHMEM (a size such as 64M, the default for clusters; empty:
# none): every VM gets one ivshmem-plain PCI device backed by one shared
# file in /dev/shm, the emulated NICs' memory, removed after the run;
# O2G_VM_TLB_KEEPER=50 (release kernel only; 0: off): the period in ms of
# the guest's TLB keepers, one per vCPU (qemu/guest-tests/src/tlb_keeper.rs);
# O2G_VM_REP_MOVSB=0 (1: the TCG guest CPU keeps ERMS and FSRM, see qemu_cmd);
# O2G_FULL=0 (1: tests with a bounded default slice run all of it: every
# rank count, the longer floods and races; `scripts/test.sh --full`).
set -euo pipefail
source "$(dirname "$0")/../scripts/env.sh"
source "$O2G_ROOT/qemu/ktap.sh"

flavour=debug nodes=1 timeout=120 verbose=0
tests=()
while (($#)); do
    case "$1" in
        --flavour) flavour="$2"; shift 2 ;;
        --nodes) nodes="$2"; shift 2 ;;
        --timeout) timeout="$2"; shift 2 ;;
        --verbose) verbose=1; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        -*) die "unknown option $1" ;;
        *)
            if [[ -f "$O2G_ROOT/qemu/suites/$1.suite" ]]; then
                while read -r t; do [[ -z "$t" || "$t" == \#* ]] || tests+=("$t"); done \
                    <"$O2G_ROOT/qemu/suites/$1.suite"
            else
                tests+=("$1")
            fi
            shift ;;
    esac
done
((${#tests[@]})) || die "no tests given (see --help)"
[[ "$nodes" =~ ^[1-9][0-9]?$ ]] || die "--nodes must be 1..99"

: "${O2G_ACCEL:=auto}"
: "${O2G_VM_MEM:=1024}"
: "${O2G_BOOT_TIMEOUT:=240}"
if ((nodes > 1)); then : "${O2G_VM_SMP:=1}"; else : "${O2G_VM_SMP:=2}"; fi
# Clusters share emulated NIC memory unless told otherwise (O2G_VM_IVSHMEM=).
((nodes > 1)) && : "${O2G_VM_IVSHMEM=64M}"

run="$O2G_ROOT/target/vm/$(date +%Y%m%d-%H%M%S)-$$"
mkdir -p "$run"

kdir="$("$O2G_ROOT/qemu/build-kernel.sh" "$flavour")"
module="$("$O2G_ROOT/qemu/build-module.sh" "$flavour")"
log "building guest test programs"
manifest=(--manifest-path "$O2G_ROOT/Cargo.toml")
cargo build --quiet --release -p o2g-guest-tests -p mpi -p o2g-bench -p o2g-stat --bins "${manifest[@]}"
# The MPI conformance binary (a test target), copied in as /bin/mpi-conformance.
conformance="$(cargo test --quiet --release -p mpi --test conformance --no-run \
    --message-format=json "${manifest[@]}" |
    grep -o '"executable":"[^"]*conformance[^"]*"' | tail -1 | cut -d'"' -f4)"
[[ -x "$conformance" ]] || die "could not build the MPI conformance binary"
ln -f "$conformance" "$run/mpi-conformance"
rel="$O2G_ROOT/target/release"
# The C NAS-IS-style sort (bench/c), built with our mpicc over libmpi_abi.so.1
# and, for guests with the MPI peers (O2G_GUEST_PEERS=1), with theirs.
cargo build --quiet --release -p o2g-mpi-abi "${manifest[@]}"
cdir="$O2G_ROOT/target/bench-c"
c_bins="$("$O2G_ROOT/bench/c/build.sh" "$O2G_ROOT/capi/mpicc" "$cdir" is-o2g)"
c_bins+=" $("$O2G_ROOT/bench/c/build.sh" "$O2G_ROOT/capi/mpicc" "$cdir" calls-o2g calls)"
# The C ABI's own test programs, for tests that run them over o2g: the
# first four, a slice of each family issue 23 added, one-sided
# communication and MPI_THREAD_MULTIPLE.
for prog in env p2p coll is datatype coll2 icoll group topo p2p_modes persistent mprobe waitsome neighbor intercomm serialized \
    rma rma_sync rma_dynamic rma_shared rma_errors rma_module multiple; do
    "$O2G_ROOT/capi/mpicc" -Wall -Werror -O1 -o "$cdir/capi-$prog" "$O2G_ROOT/capi/tests/c/$prog.c"
    c_bins+=" $cdir/capi-$prog"
done
# The Fortran bindings' test programs (capi/tests/fortran), built with our
# mpifort, for mpi-fortran-o2g (their gfortran runtime comes with them).
if [[ " ${tests[*]} " == *" mpi-fortran-o2g "* ]]; then
    fdir="$O2G_ROOT/capi/tests/fortran"
    "$O2G_ROOT/capi/mpicc" -Wall -Werror -O1 -c -o "$cdir/interop_c.o" "$fdir/interop_c.c"
    for src in ring.f90 reduce.f90 alltoallv.f90 stencil.f90 ddt.f90 cg.f90 legacy.f interop.f90 caching.f90 rma.f90; do
        prog="fortran-${src%.*}"
        extra=()
        [[ "$src" == interop.f90 ]] && extra=("$cdir/interop_c.o")
        (cd "$cdir" && "$O2G_ROOT/capi/mpifort" -Wall -Werror -O1 -I "$fdir" -o "$prog" "$fdir/$src" "${extra[@]}")
        c_bins+=" $cdir/$prog"
    done
fi
if [[ "${O2G_GUEST_PEERS:-0}" == 1 ]]; then
    c_bins+=" $("$O2G_ROOT/bench/c/build.sh" mpicc.openmpi "$cdir" is-openmpi)"
    c_bins+=" $("$O2G_ROOT/bench/c/build.sh" mpicc.mpich "$cdir" is-mpich)"
    c_bins+=" $("$O2G_ROOT/bench/c/build.sh" "$O2G_ROOT/capi/mpicc" "$cdir" pingpong-o2g pingpong)"
    c_bins+=" $("$O2G_ROOT/bench/c/build.sh" mpicc.openmpi "$cdir" pingpong-openmpi pingpong)"
    c_bins+=" $("$O2G_ROOT/bench/c/build.sh" mpicc.mpich "$cdir" pingpong-mpich pingpong)"
    for lib in o2g openmpi mpich; do
        cc="mpicc.$lib"
        [[ "$lib" == o2g ]] && cc="$O2G_ROOT/capi/mpicc"
        c_bins+=" $("$O2G_ROOT/bench/c/build.sh" "$cc" "$cdir" "bandwidth-$lib" bandwidth)"
        c_bins+=" $("$O2G_ROOT/bench/c/build.sh" "$cc" "$cdir" "collectives-$lib" collectives)"
        c_bins+=" $("$O2G_ROOT/bench/c/build.sh" "$cc" "$cdir" "overlap-$lib" overlap)"
        c_bins+=" $("$O2G_ROOT/bench/c/build.sh" "$cc" "$cdir" "rma-$lib" rma)"
    done
fi
# perf for bench-profile (Debian's linux-perf), only when a test needs it: with
# its libraries (Python, Perl, ...) it adds about 40 MB to the initramfs.
# /usr/bin/perf is perf itself in bookworm's linux-perf 6.1, a wrapper
# script running perf_<version> in other Debian releases: take the ELF
# binary, as /bin/perf in the guest.
perf_bin="" guest_files=""
if [[ " ${tests[*]} " == *" bench-profile "* ]]; then
    perf_bin="$(command -v perf)" || die "bench-profile needs perf: install linux-perf (scripts/setup.sh does)"
    perf_bin="$(readlink -f "$perf_bin")"
    if [[ "$(head -c4 "$perf_bin" | tail -c3)" != ELF ]]; then
        perf_bin="$(ls -v /usr/bin/perf_[0-9]* 2>/dev/null | tail -1)"
        [[ -n "$perf_bin" && "$(head -c4 "$perf_bin" | tail -c3)" == ELF ]] ||
            die "$(command -v perf) is not an ELF program and no /usr/bin/perf_<version> is: cannot copy perf into the guest"
    fi
    cp "$perf_bin" "$run/perf"
    perf_bin="$run/perf"
    # glibc's own symbols (memcpy and the like are not exported), from
    # Debian's libc6-dbg, which perf finds by build ID.
    libc="$(ldd "$perf_bin" | grep -o '/[^ ]*/libc\.so\.6' | head -1)"
    build_id="$(readelf -n "$libc" | awk '/Build ID:/ { print $3 }')"
    libc_debug="/usr/lib/debug/.build-id/${build_id:0:2}/${build_id:2}.debug"
    if [[ -n "$build_id" && -f "$libc_debug" ]]; then
        guest_files="$libc_debug"
    else
        log "no $libc_debug (libc6-dbg): profiles will not name glibc's internal functions"
    fi
fi
# valgrind's callgrind for bench-instructions: Debian's /usr/bin/valgrind
# is a shell wrapper around valgrind.bin, which finds its tool and
# preload library in /usr/libexec/valgrind.
vg_bin=""
if [[ " ${tests[*]} " == *" bench-instructions "* ]]; then
    vg_bin="$(command -v valgrind.bin || true)"
    vg_lib=/usr/libexec/valgrind
    [[ -x "$vg_bin" && -f "$vg_lib/callgrind-amd64-linux" ]] ||
        die "bench-instructions needs valgrind (valgrind.bin and $vg_lib): scripts/setup.sh installs it"
    guest_files+=" $vg_lib/callgrind-amd64-linux $vg_lib/vgpreload_core-amd64-linux.so $vg_lib/default.supp"
fi
# The writev timeline for bench-timeline: a preload library, in /bin.
if [[ " ${tests[*]} " == *" bench-timeline "* ]]; then
    cc -O2 -Wall -Werror -shared -fPIC -o "$run/libo2g-timeline.so" \
        "$O2G_ROOT/bench/c/writev_timeline.c" -ldl || die "building bench/c/writev_timeline.c failed"
    c_bins+=" $run/libo2g-timeline.so"
fi
# mpi4py's test suite for mpi4py-o2g: Debian's Python, mpi4py built against
# our mpi.h (scripts/mpi4py-build.sh, cached) and its tests, at /opt/mpi4py.
guest_trees=""
if [[ " ${tests[*]} " == *" mpi4py-o2g "* ]]; then
    built="$("$O2G_ROOT/scripts/mpi4py-build.sh" "$rel")" || die "building mpi4py failed"
    venv="$(sed -n 's/^venv=//p' <<<"$built")"
    src="$(sed -n 's/^src=//p' <<<"$built")"
    site=("$venv"/lib/python3*/site-packages/mpi4py)
    [[ -d "${site[0]}" ]] || die "no mpi4py package in $venv"
    guest_trees="${site[0]}=/opt/mpi4py/site/mpi4py $src/test=/opt/mpi4py/test"
    export O2G_GUEST_PYTHON=1
fi
# install-prefix: what scripts/install.sh --no-build reads from a build,
# as a tree of its own (the guest has no build tree), bash to run it, and
# a C compiler for the prefix's mpicc.
bash_bin=""
if [[ " ${tests[*]} " == *" install-prefix "* ]]; then
    bundle="$run/o2g-bundle"
    mkdir -p "$bundle"/{scripts,capi/include,capi/tests/c,kmod,uapi,core/src,target/release}
    cp "$O2G_ROOT/Cargo.toml" "$bundle/"
    cp "$O2G_ROOT/scripts/install.sh" "$bundle/scripts/"
    cp "$O2G_ROOT/capi/mpicc" "$O2G_ROOT/capi/o2g-mpi.pc.in" "$bundle/capi/"
    cp "$O2G_ROOT/capi/include/mpi.h" "$bundle/capi/include/"
    cp "$O2G_ROOT/capi/tests/c/hello.c" "$O2G_ROOT/capi/tests/c/check.h" "$bundle/capi/tests/c/"
    cp "$O2G_ROOT"/kmod/*.rs "$O2G_ROOT"/kmod/*.[ch] "$O2G_ROOT"/kmod/{Kbuild,Makefile,dkms.conf.in} "$bundle/kmod/"
    cp "$O2G_ROOT/uapi/abi.rs" "$bundle/uapi/"
    cp "$O2G_ROOT"/core/src/*.rs "$bundle/core/src/"
    cp "$rel/o2grun" "$rel/o2g-stat" "$rel/libmpi_abi.so" "$bundle/target/release/"
    cp -r "$rel/fortran" "$bundle/target/release/"
    guest_trees+=" $bundle=/opt/o2g-bundle"
    export O2G_GUEST_CC=1 O2G_GUEST_CC_SOURCES="$O2G_ROOT/capi/tests/c/hello.c"
    bash_bin="$(command -v bash)"
fi
# slurm: Debian's Slurm and MUNGE in every guest, and one MUNGE key for
# this run's nodes.
if [[ " ${tests[*]} " == *" slurm "* ]]; then
    export O2G_GUEST_SLURM=1
    head -c 1024 /dev/urandom >"$run/munge.key"
    guest_trees+=" $run/munge.key=/etc/o2g/munge.key"
fi
guest_bins="$c_bins $bash_bin $perf_bin $vg_bin $rel/o2g-vmtest $rel/o2g-rsh $rel/o2g-demangle $rel/o2grun $run/mpi-conformance $rel/o2g-pingpong $rel/o2g-bandwidth $rel/o2g-overlap $rel/o2g-tcp-pingpong $rel/o2g-tcp-stream $rel/o2g-idle-holder $rel/o2g-is $rel/o2g-compare $rel/o2g-judge $rel/o2g-stream $rel/o2g-pollcost $rel/o2g-stat $(command -v strace || true) ${O2G_GUEST_BINS:-}"
O2G_GUEST_BINS="$guest_bins" O2G_GUEST_FILES="$guest_files ${O2G_GUEST_FILES:-}" \
    O2G_GUEST_TREES="$guest_trees ${O2G_GUEST_TREES:-}" "$O2G_ROOT/qemu/make-initramfs.sh" "$run/initramfs.cpio" "$module" "${tests[@]}"

qemu_pids=()
netns=""
ivshmem=""
if [[ -n "${O2G_VM_IVSHMEM:-}" ]]; then
    ivshmem="/dev/shm/o2g-ivshmem-$$"
    truncate -s "$O2G_VM_IVSHMEM" "$ivshmem"
fi
cleanup() {
    local pid
    for pid in "${qemu_pids[@]}"; do
        kill -TERM "$pid" 2>/dev/null || true
    done
    sleep 0.5
    for pid in "${qemu_pids[@]}"; do
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    [[ -z "$netns" ]] || ip netns del "$netns" 2>/dev/null || true
    [[ -z "$ivshmem" ]] || rm -f "$ivshmem"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# qemu_cmd NODE ACCEL CONSOLE EXTRA_APPEND: the QEMU command line for one node.
qemu_cmd() {
    local node="$1" accel="$2" console="$3" extra="$4"
    # No 5-level paging: with LA57 (in TCG's "max" CPU) the debug kernel's
    # KASAN reports a wild access in an interrupt during early boot, which
    # also switches lockdep off for the rest of the run.
    local cpu=max,la57=off
    # No ERMS or FSRM under TCG: with them the kernel's copies between user
    # and kernel memory, and glibc's large memcpy, use `rep movsb`, which
    # TCG runs one byte per iteration. A one-way TCP stream between two
    # VMs moved 144-180 MB/s with them and 453-545 without, its sender
    # spending 4.5-6.6 ms of CPU per MiB against 1.1-1.5 (o2g-tcp-stream);
    # on real CPUs that have them `rep movsb` is the fast copy.
    [[ "${O2G_VM_REP_MOVSB:-0}" == 1 ]] || cpu+=,erms=off,fsrm=off
    [[ "$accel" == kvm ]] && cpu=host,la57=off
    # maxcpus of at least 2: QEMU 7.2's TCG translates a guest that can
    # never have a second vCPU without host atomics or barriers, so atomic
    # updates of the ivshmem memory that the VMs share would be lost (the
    # `ivshmem` test lost half of them). The second vCPU is never plugged.
    local smp="$O2G_VM_SMP,maxcpus=$((O2G_VM_SMP > 2 ? O2G_VM_SMP : 2))"
    # tsc=reliable: under TCG on a busy host the clocksource watchdog
    # sometimes finds the TSC "skewed" (0.05%) mid-run and switches the
    # guest to the HPET, after which every clock read is a trap into QEMU
    # and a benchmark's later figures are not comparable with its earlier.
    # TCG reads the host's own TSC for the guest's, so it is monotonic.
    # acpi=noirq: PCI interrupt routing from the BIOS's table, not ACPI's.
    # The i440fx's _PRT method builds its 128 entries in an AML loop, which
    # the debug kernel's interpreter under TCG took 16 s to run for one
    # device, and over 30 s with two VMs on the host, where ACPICA gives up
    # (AE_AML_LOOP_TIMEOUT) per device: a minute of every cluster boot.
    printf '%s\0' qemu-system-x86_64 -accel "$accel" -cpu "$cpu" -smp "$smp" \
        -m "$O2G_VM_MEM" -nodefaults -display none -no-reboot \
        -serial "file:$console" -device virtio-rng-pci \
        -kernel "$kdir/arch/x86/boot/bzImage" -initrd "$run/initramfs.cpio" \
        -append "console=ttyS0 loglevel=5 panic=-1 tsc=reliable acpi=noirq o2g.node=$node o2g.nodes=$nodes o2g.timeout=$timeout o2g.verbose=$verbose $extra"
    if [[ -n "$ivshmem" ]]; then
        printf '%s\0' -object "memory-backend-file,id=nicmem,share=on,mem-path=$ivshmem,size=$O2G_VM_IVSHMEM" \
            -device ivshmem-plain,memdev=nicmem
    fi
    if ((nodes > 1)); then
        printf '%s\0' -netdev "tap,id=net0,ifname=tap$node,script=no,downscript=no" \
            -device "virtio-net-pci,netdev=net0,mac=52:54:00:00:01:$(printf %02x "$node")"
    fi
}

# Under nested virtualisation KVM guests can hang at boot: use KVM only after
# a short smoke boot succeeds, and remember the answer until the host reboots.
# Sets `accel`; runs in this shell (not a $(...) subshell) so that the smoke
# QEMU is in `qemu_pids` and the EXIT trap stops it if we are interrupted.
pick_accel() {
    case "$O2G_ACCEL" in tcg|kvm) accel="$O2G_ACCEL"; return ;; esac
    accel=tcg
    [[ -r /dev/kvm && -w /dev/kvm ]] || return 0
    local memo
    memo="$O2G_CACHE/accel-$(cat /proc/sys/kernel/random/boot_id)"
    if [[ -f "$memo" ]]; then accel="$(cat "$memo")"; return; fi
    log "checking whether KVM guests boot here (once per host boot)"
    local console="$run/kvm-smoke.log" pid args=()
    mapfile -d '' args < <(qemu_cmd 0 kvm "$console" o2g.smoke=1)
    "${args[@]}" >/dev/null 2>&1 &
    pid=$!
    qemu_pids+=("$pid")
    local t
    for ((t = 0; t < 30; t++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 1
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    grep -q "o2g-guest: done" "$console" 2>/dev/null && accel=kvm
    echo "$accel" >"$memo"
}
pick_accel

if ((nodes > 1)); then
    netns="o2g-vm-$$"
    ip netns add "$netns"
    ip -n "$netns" link set lo up
    ip -n "$netns" link add br0 type bridge
    ip -n "$netns" link set br0 up
    for ((i = 0; i < nodes; i++)); do
        ip -n "$netns" tuntap add dev "tap$i" mode tap
        ip -n "$netns" link set "tap$i" master br0
        ip -n "$netns" link set "tap$i" up
    done
fi

cluster_secret="$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
log "booting $nodes VM(s): $flavour kernel, $accel, ${#tests[@]} test(s), ${timeout}s each; logs in $run"
# Benchmarks (release kernel): a process on each vCPU that wakes every
# O2G_VM_TLB_KEEPER ms, so that TCG's software TLB gets the flushes it
# resizes at (qemu/guest-tests/src/tlb_keeper.rs); 0 switches it off.
keeper_arg=""
if [[ "$flavour" == release && "${O2G_VM_TLB_KEEPER:-50}" != 0 ]]; then
    keeper_arg="o2g.tlbkeeper=${O2G_VM_TLB_KEEPER:-50}"
fi
for ((i = 0; i < nodes; i++)); do
    args=()
    guest_env=""
    for kv in ${O2G_GUEST_ENV:-}; do guest_env+=" o2g.env=$kv"; done
    # One secret for the whole cluster run, so that the o2grun of every node
    # (qemu/guest/o2grun-cluster) authenticates the same job's ranks.
    if ((nodes > 1)); then guest_env+=" o2g.env=O2G_JOB_SECRET=$cluster_secret"; fi
    if [[ -n "$keeper_arg" ]]; then guest_env+=" $keeper_arg"; fi
    # For the tcg-cpu test: what CPU the guest should see.
    guest_env+=" o2g.env=O2G_VM_ACCEL=$accel o2g.env=O2G_VM_REP_MOVSB=${O2G_VM_REP_MOVSB:-0}"
    guest_env+=" o2g.env=O2G_FULL=${O2G_FULL:-0}"
    mapfile -d '' args < <(qemu_cmd "$i" "$accel" "$run/console-$i.log" "$guest_env")
    if [[ -n "$netns" ]]; then
        ip netns exec "$netns" "${args[@]}" >"$run/qemu-$i.log" 2>&1 &
    else
        "${args[@]}" >"$run/qemu-$i.log" 2>&1 &
    fi
    qemu_pids+=("$!")
    echo "$!" >>"$run/qemu.pids"
done

# The KTAP output, shown and kept: emit LINE.
ktap="$run/results.ktap"
emit() {
    printf '%s\n' "$1"
    printf '%s\n' "$1" >>"$ktap"
}
emit "KTAP version 1"
emit "1..$((nodes * ${#tests[@]}))"
results=0

# Stream results while the guests run; give up at the deadline. A guest's
# results are numbered again, in the order they arrive, across all nodes.
deadline=$((SECONDS + O2G_BOOT_TIMEOUT + ${#tests[@]} * timeout + 30))
declare -A shown
show_new_results() {
    local i total line
    for ((i = 0; i < nodes; i++)); do
        [[ -f "$run/console-$i.log" ]] || continue
        total="$(wc -l <"$run/console-$i.log")"
        ((total > ${shown[$i]:-0})) || continue
        while IFS= read -r line; do
            line="${line%$'\r'}"
            if [[ "$line" =~ ^(not )?ok\ [0-9]+\ -\ (.*)$ ]]; then
                results=$((results + 1))
                emit "${BASH_REMATCH[1]}ok $results - node$i/${BASH_REMATCH[2]}"
            elif [[ "$line" == "# "* ]]; then
                emit "# node$i: ${line#\# }"
            fi
        done < <(sed -n "$((${shown[$i]:-0} + 1)),${total}p" "$run/console-$i.log")
        shown[$i]="$total"
    done
}
while :; do
    alive=0
    for pid in "${qemu_pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    show_new_results
    ((alive)) || break
    if ((SECONDS > deadline)); then
        log "deadline passed: stopping the guests"
        break
    fi
    sleep 1
done
cleanup
qemu_pids=()

patterns="$(grep -v '^#' "$O2G_ROOT/qemu/splat-patterns.txt")"
for ((i = 0; i < nodes; i++)); do
    console="$run/console-$i.log"
    touch "$console"
    sed -n '/^o2g-guest: dmesg begin/,/^o2g-guest: dmesg end/p' "$console" >"$run/dmesg-$i.log" 2>/dev/null || true
    # Every test of the guest's plan that never reported fails by name.
    missing=0
    while read -r num; do
        results=$((results + 1)) missing=$((missing + 1))
        emit "not ok $results - node$i/${tests[num - 1]%% *} # no result: the guest did not get to report it"
    done < <(ktap_missing "${#tests[@]}" "$console")
    if ! grep -aq '^o2g-guest: done' "$console"; then
        emit "# node$i: guest did not finish (hang, panic or timeout); last console lines:"
        tail -n 30 "$console" | tr -d '\r' | sed 's/^/# /'
        if ((missing == 0)); then
            results=$((results + 1))
            emit "not ok $results - node$i/finished"
        fi
    elif grep -aEq -e "$patterns" "$console"; then
        # Backstop: the guest checks after each test, but a report can also
        # land before the first test, between tests or on the way down.
        results=$((results + 1))
        emit "not ok $results - node$i/kernel-log-clean"
        grep -aE -m 20 -e "$patterns" "$console" | tr -d '\r' | sed 's/^/# /'
    fi
done
read -r passed failed skipped < <(ktap_count "$ktap")
echo "vm: $passed passed, $failed failed, $skipped skipped ($run)"
((failed == 0))
