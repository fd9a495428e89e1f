# OFFER and control registrations refuse bad arguments.
o2g-vmtest rndv-errors
