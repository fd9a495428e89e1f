# The cost of one select/poll/epoll_wait call over N idle sockets plus one
# ready one (the o2g paper's figure 7; figures only).
set -e
rm -rf /tmp/csv-pollcost
o2g-pollcost --counts 1,10,100,250,500,1000 --csv-dir /tmp/csv-pollcost
emit-csv /tmp/csv-pollcost/pollcost.csv
