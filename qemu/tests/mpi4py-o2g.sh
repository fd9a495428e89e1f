# mpi4py's own tests, a slice, over the o2g transport on 2 ranks: mpi4py
# built on the host against o2g's mpi.h (scripts/mpi4py-build.sh) and run
# by Debian's Python, both installed at /opt/mpi4py and /usr by vm.sh.
# The slice is what moves data: point-to-point (buffers, matched probes),
# blocking and nonblocking collectives, inter-communicator collectives.
# unittest exits non-zero on a failure on either rank, and so does o2grun.
# Needs the module loaded.
set -e
cd /opt/mpi4py
PYTHONPATH=/opt/mpi4py/site O2G_TRANSPORT=o2g o2grun --timeout 600 -n 2 \
    /usr/bin/python3 test/main.py -q --no-builddir \
    test_p2p_buf test_p2p_buf_matched test_cco_buf test_cco_nb_buf test_cco_buf_inter
