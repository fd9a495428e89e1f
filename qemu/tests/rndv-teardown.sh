# Endpoints closed mid-send and with offers pending release every pin.
o2g-vmtest rndv-teardown
