# The main job in the guest: the NAS-IS-style sort over each transport,
# side by side, repetition after repetition. Progress and results go
# straight to the console ("# " lines, which the harness streams live);
# "# csv: " lines carry every measurement out to the host.
set -e -o pipefail
class="${O2G_MAIN_CLASS:-S}" reps="${O2G_MAIN_REPS:-5}" np="${O2G_MAIN_NP:-4}"
is="o2grun -n $np --timeout 1200 o2g-is $class"
echo "# NAS-IS-style class $class, $np ranks, $reps repetitions per transport" >/dev/console
o2g-compare --reps "$reps" --ours o2g --csv /tmp/is.csv \
    --run "sockets-select=O2G_TRANSPORT=sockets-select O2G_SELF=0 $is" \
    --run "sockets-epoll=O2G_TRANSPORT=sockets-epoll O2G_SELF=0 $is" \
    --run "o2g=O2G_TRANSPORT=o2g $is" 2>&1 |
    while IFS= read -r line; do echo "# $line"; done >/dev/console
sed 's/^/# csv: /' /tmp/is.csv >/dev/console
