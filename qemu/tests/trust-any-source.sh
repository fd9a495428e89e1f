# Once every peer is gone, receives from any source complete with an error
# and new ones are refused.
o2g-vmtest trust-any-source
