# Cluster: every node reaches node 0 over TCP on the harness's private network.
o2g-vmtest tcp-mesh
