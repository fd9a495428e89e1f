#!/usr/bin/env bash
# mpi4py's own test suite on o2g's C ABI (issue 23).
#
# Builds mpi4py against this tree's libmpi_abi.so, or takes it from the
# cache (scripts/mpi4py-build.sh), then runs a fixed subset of its test
# modules on 2 ranks: under o2grun over sockets-epoll and under MPICH's
# mpiexec (hydra, PMI-1), and a core slice of it (point-to-point,
# collectives, inter-communicators) over each other host transport. The
# tests always use this tree's libmpi_abi.so (LD_LIBRARY_PATH overrides the
# cached build's RUNPATH). qemu/tests/mpi4py-o2g.sh runs a slice over the
# o2g transport in the guest.
#
#   scripts/mpi4py.sh            the fixed subset and slices (under two minutes)
#   O2G_MPI4PY_ALL=1 scripts/mpi4py.sh
#                                the whole suite, over sockets-epoll only
#
# Prints unittest's summaries and, last, "mpi4py: P passed, F failed, S
# skipped" (each test counted once per run; a test fails if it fails on
# any rank). Exits non-zero if any test failed or a run did not finish.
set -uo pipefail
source "$(dirname "$0")/env.sh"
cd "$O2G_ROOT"

target="$O2G_ROOT/target/debug"

# The test modules of the default run: point-to-point, collectives
# (blocking, nonblocking, persistent, neighborhood; buffers, objects,
# vectors), datatypes, packing, communicators, inter-communicators,
# groups, topologies, requests, statuses, errors, info, attributes,
# operations, matched probes, message specifications, pickle-5, buffers,
# the environment. The modules left out test what o2g does not provide
# (one-sided communication, MPI-IO, dynamic processes, sessions: see
# capi/README.md's function table) or only call the library through
# other languages (cffi, ctypes, DLPack).
SUBSET=(
    test_p2p_buf test_p2p_obj test_p2p_buf_matched test_p2p_obj_matched
    test_cco_buf test_cco_obj test_cco_vec test_cco_nb_buf test_cco_nb_vec
    test_cco_pr_buf test_cco_pr_vec test_cco_ngh_buf test_cco_ngh_obj
    test_cco_pr_ngh_buf test_cco_buf_inter test_cco_obj_inter
    test_cco_vec_inter test_comm_inter
    test_datatype test_pack test_comm test_group test_comm_topo
    test_request test_status test_grequest test_errorcode test_errhandler
    test_exceptions test_info test_attributes test_op test_msgspec
    test_msgzero test_util_pkl5 test_util_dtlib test_address test_buffer
    test_environ
)
# The slice run over the other transports: what moves data.
CORE=(
    test_p2p_buf test_p2p_obj test_p2p_buf_matched test_cco_buf
    test_cco_nb_buf test_cco_pr_buf test_cco_vec test_cco_ngh_buf
    test_cco_buf_inter test_comm_inter
)

fail() { echo "mpi4py: $*" >&2; echo "mpi4py: 0 passed, 1 failed, 0 skipped"; exit 1; }

# Two commands: with --bins, cargo would build no library at all.
{ cargo build --quiet -p o2g-mpi-abi && cargo build --quiet -p mpi --bins; } ||
    fail "building the library and o2grun failed"
built="$("$O2G_ROOT/scripts/mpi4py-build.sh" "$target")" || fail "building mpi4py failed"
venv="$(sed -n 's/^venv=//p' <<<"$built")"
src="$(sed -n 's/^src=//p' <<<"$built")"

passed=0 failed=0 skipped=0
# The ranks' Python, each writing its unittest output to a file of its
# own: two ranks writing one stream interleave their summaries mid-line
# ("OKRan 490 tests"), and the counts below read whole lines.
python=(bash -c 'exec "$@" >"$O2G_MPI4PY_LOGS/rank.${PMI_RANK:-0}" 2>&1' per-rank "$venv/bin/python")
# run NAME CMD...: one run of the tests; adds its counts.
run() {
    local name="$1"; shift
    local logs
    logs="$(mktemp -d)"
    echo "# mpi4py on 2 ranks: $name"
    (cd "$src" && LD_LIBRARY_PATH="$target" O2G_MPI4PY_LOGS="$logs" timeout 900 "$@") \
        >"$logs/launcher" 2>&1
    local rc=$?
    # Each rank prints its own summary: the test count once, the worst
    # rank's failures and errors.
    read -r n f s < <(awk '
        /^Ran [0-9]+ tests/ { if ($2 > n) n = $2 }
        /^(OK|FAILED)/ {
            f = 0; s = 0
            if (match($0, /failures=[0-9]+/)) f += substr($0, RSTART + 9, RLENGTH - 9)
            if (match($0, /errors=[0-9]+/)) f += substr($0, RSTART + 7, RLENGTH - 7)
            if (match($0, /skipped=[0-9]+/)) s = substr($0, RSTART + 8, RLENGTH - 8)
            if (f > fmax) fmax = f
            if (s > smax) smax = s
        }
        END { print n + 0, fmax + 0, smax + 0 }' "$logs"/*)
    echo "    $n tests: $((n - f - s)) passed, $f failed, $s skipped"
    cat "$logs"/* | grep -E '^(ERROR|FAIL):' | sort -u | sed 's/^/    /'
    if ((n == 0 || (rc != 0 && f == 0))); then
        echo "    $name did not finish (exit $rc):"
        local log
        for log in "$logs"/*; do
            echo "    | ${log##*/}:"
            tail -n 20 "$log" | sed 's/^/    | /'
        done
        f=$((f + 1))
    fi
    passed=$((passed + n - f - s)); failed=$((failed + f)); skipped=$((skipped + s))
    rm -rf "$logs"
}

# --no-builddir: test the virtualenv's mpi4py, never a build directory
# in the source tree.
tests=(test/main.py -q --no-builddir "${SUBSET[@]}")
if [[ -n "${O2G_MPI4PY_ALL:-}" ]]; then
    run "the whole suite, sockets-epoll" env O2G_TRANSPORT=sockets-epoll \
        "$target/o2grun" --timeout 850 -n 2 "${python[@]}" test/main.py -q --no-builddir
else
    run "o2grun, sockets-epoll" env O2G_TRANSPORT=sockets-epoll \
        "$target/o2grun" --timeout 600 -n 2 "${python[@]}" "${tests[@]}"
    run "MPICH's mpiexec (hydra), sockets-epoll" env O2G_TRANSPORT=sockets-epoll \
        mpiexec.mpich -n 2 "${python[@]}" "${tests[@]}"
    for t in sockets-select sockets-poll dimmnet hyphenlink; do
        run "o2grun, $t, core slice" env O2G_TRANSPORT=$t \
            "$target/o2grun" --timeout 600 -n 2 "${python[@]}" test/main.py -q --no-builddir "${CORE[@]}"
    done
fi
echo "mpi4py: $passed passed, $failed failed, $skipped skipped"
((failed == 0))
