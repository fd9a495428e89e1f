# A peer that breaks the rendezvous rules fails its own connection; the
# module's clear-to-send is what the wire format says.
o2g-vmtest rndv-misbehaviour
