#!/usr/bin/env bash
# The main job: set up, build the release kernel and o2g.ko, boot a VM, load
# the module and report.
#
# Today the module registers sockets and hooks them, but does not yet receive
# MPI messages itself, so the report is its state. The NAS-IS-style comparison across transports arrives
# with the benchmark issue and will replace this.
#
# usage: scripts/main.sh
set -euo pipefail
source "$(dirname "$0")/env.sh"

"$O2G_ROOT/scripts/setup.sh"
"$O2G_ROOT/qemu/vm.sh" --flavour release --verbose main
cat <<'TABLE'

o2g main job
  transport        NAS IS (Mop/s)
  sockets-select   not built yet
  sockets-epoll    not built yet
  o2g              not built yet (module: /dev/o2g, socket registration, data_ready hook)
TABLE
