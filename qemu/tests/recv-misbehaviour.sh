# Malformed, oversize and truncated peers fail only their own connection.
o2g-vmtest recv-misbehaviour
