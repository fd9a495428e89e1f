# Open MPI and MPICH (Debian bookworm) forced onto TCP between every pair of
# ranks, also ranks on one node, so every library uses the network path
# O2G does. POSIX sh (busybox too); sourced by guest tests, which find it at
# /etc/o2g/peers.sh (make-initramfs.sh with O2G_GUEST_PEERS=1), and usable
# on the host the same way:
#
#   . qemu/guest-peers.sh; peers_run mpich 2 target/bench-c/is-mpich S
#   sh qemu/guest-peers.sh mpich 2 target/bench-c/is-mpich S
#
# Run as a program, the launcher replaces the shell, so a `timeout` around
# it signals the launcher, which then stops its ranks.
#
# Open MPI 4.1.4: pml ob1 with btl tcp,self only (no vader shared memory;
# ob1 rather than the UCX pml), on the interface $O2G_PEERS_IF; one-sided
# communication through osc pt2pt, which runs over that pml (osc sm would
# map windows of ranks on one node in shared memory, and osc rdma needs
# an RDMA-capable btl, which tcp is not).
# MPICH 4.0.2: Debian builds it with device ch4:ucx (see `mpichversion`).
# Two settings are needed, as either alone still leaves shared memory:
#   MPIR_CVAR_NOLOCAL=1  ch4 treats every rank as remote (no POSIX shm path),
#   UCX_TLS=tcp,self     UCX then uses only its tcp transport between ranks
#                        (no shm/cma); self, as in Open MPI, serves a rank's
#                        messages to itself. (With plain tcp those go over
#                        loopback TCP, and ~10% of 2-rank runs here hung in
#                        MPI_Finalize; with tcp,self 0 of 60 did, but UCX
#                        1.13's tcp can still hang there now and then.)
# and UCX_NET_DEVICES=$O2G_PEERS_IF picks the interface.
# O2G_PEERS_IF: lo (default; one node), or eth0 across VMs.
# O2G_PEERS_HOSTS: unset for ranks on this node only; across VMs, the node
# names, comma-separated, one rank each (o2g-node0,o2g-node1,...). Both
# launchers then start the other nodes' part of the job through the
# harness's remote shell /bin/o2g-rsh (those nodes run o2g-rsh --serve)
# where they would use ssh.

: "${O2G_PEERS_IF:=lo}"
_peers_exec=""

# Guest only (it edits /etc/hosts): name this node and make the name
# resolve, as both launchers look it up.
peers_setup() {
    # Across VMs every node needs its own name, which the others resolve
    # (MPICH's proxies connect back to the name of mpiexec's node).
    if [ "$(hostname)" = "(none)" ] || [ -z "$(hostname)" ] || [ "${O2G_NODES:-1}" -gt 1 ]; then
        hostname "o2g-node${O2G_NODE:-0}"
    fi
    if ! grep -qw "$(hostname)" /etc/hosts 2>/dev/null; then
        if [ "${O2G_NODES:-1}" -gt 1 ]; then
            i=0
            while [ "$i" -lt "$O2G_NODES" ]; do
                echo "${O2G_PEER_PREFIX:-198.18.0.}$((i + 1)) o2g-node$i"
                i=$((i + 1))
            done
        else
            echo "127.0.0.1 $(hostname)"
        fi >>/etc/hosts
        grep -qw localhost /etc/hosts || echo "127.0.0.1 localhost" >>/etc/hosts
    fi
    # UCX probes /dev/shm even when told to use only TCP, and logs errors
    # without it; it is there on any real host (tests check it stays unused).
    if [ ! -d /dev/shm ]; then
        mkdir -p /dev/shm && mount -t tmpfs -o mode=1777 tmpfs /dev/shm
    fi
}

# peers_run openmpi|mpich N PROGRAM [ARGS...]: run N ranks on this node (or one
# on each node of O2G_PEERS_HOSTS).
peers_run() {
    _lib="$1" _n="$2"
    shift 2
    case "$_lib" in
    openmpi)
        # Open MPI refuses root unless told twice; the guest runs as root.
        # plm isolated: start ranks here, no ssh/rsh (the guest has none);
        # across VMs, plm rsh through o2g-rsh, every orted started from
        # here (no tree spawn).
        if [ -n "${O2G_PEERS_HOSTS:-}" ]; then
            set -- --mca plm rsh --mca plm_rsh_agent /bin/o2g-rsh \
                --mca plm_rsh_no_tree_spawn 1 --host "$O2G_PEERS_HOSTS" "$@"
        else
            set -- --mca plm isolated "$@"
        fi
        OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
            $_peers_exec /usr/bin/mpirun.openmpi --oversubscribe --bind-to none -n "$_n" \
            --mca pml ob1 --mca btl tcp,self --mca osc pt2pt \
            --mca btl_tcp_if_include "$O2G_PEERS_IF" \
            --mca oob_tcp_if_include "$O2G_PEERS_IF" "$@"
        ;;
    mpich)
        if [ -n "${O2G_PEERS_HOSTS:-}" ]; then
            set -- -launcher rsh -launcher-exec /bin/o2g-rsh -hosts "$O2G_PEERS_HOSTS" "$@"
        else
            set -- -launcher fork "$@"
        fi
        $_peers_exec /usr/bin/mpiexec.mpich -n "$_n" \
            -genv MPIR_CVAR_NOLOCAL 1 -genv UCX_TLS tcp,self \
            -genv UCX_NET_DEVICES "$O2G_PEERS_IF" "$@"
        ;;
    *)
        echo "peers_run: unknown library $_lib (openmpi or mpich)" >&2
        return 2
        ;;
    esac
}

# peers_across_nodes CMD [ARGS...]: a cluster run's peer jobs. Node 0 runs
# CMD with O2G_PEERS_HOSTS naming every node and O2G_PEERS_IF=eth0, so that
# peers_run spans the VMs; every other node serves o2g-rsh meanwhile, until
# node 0 is done (or O2G_RSH_SECONDS, 3000, pass). Returns CMD's status on
# node 0 and the server's elsewhere.
peers_across_nodes() {
    if [ "${O2G_NODE:-0}" != 0 ]; then
        o2g-rsh --serve "${O2G_RSH_PORT:-7100}" "${O2G_RSH_SECONDS:-3000}"
        return
    fi
    O2G_PEERS_HOSTS="" _i=0
    while [ "$_i" -lt "${O2G_NODES:-1}" ]; do
        O2G_PEERS_HOSTS="$O2G_PEERS_HOSTS${O2G_PEERS_HOSTS:+,}o2g-node$_i"
        _i=$((_i + 1))
    done
    export O2G_PEERS_HOSTS O2G_PEERS_IF=eth0
    _rc=0
    "$@" || _rc=$?
    _i=1
    while [ "$_i" -lt "${O2G_NODES:-1}" ]; do
        o2g-rsh --quit "o2g-node$_i" || { echo "o2g-node$_i did not take the quit"; _rc=1; }
        _i=$((_i + 1))
    done
    unset O2G_PEERS_HOSTS
    O2G_PEERS_IF=lo
    return "$_rc"
}

# peers_if_rx_bytes: bytes received so far on $O2G_PEERS_IF. Ranks that
# talk over TCP on one node move their data through lo; shared memory
# would leave it nearly still.
peers_if_rx_bytes() {
    cat "/sys/class/net/$O2G_PEERS_IF/statistics/rx_bytes"
}

# peers_shm_maps PID...: shared-memory segments these processes map
# (Open MPI vader, MPICH/UCX POSIX or SysV shm); a TCP-only run has none.
peers_shm_maps() {
    for _p in "$@"; do
        grep -E '/dev/shm/|SYSV' "/proc/$_p/maps" 2>/dev/null
    done | wc -l
}

if [ $# -gt 0 ] && { [ "${0##*/}" = peers.sh ] || [ "${0##*/}" = guest-peers.sh ]; }; then
    _peers_exec=exec
    peers_run "$@"
fi
