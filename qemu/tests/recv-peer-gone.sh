# A peer that closes between messages and one that resets (RST) fail their
# connections; receives posted for them complete with an error.
o2g-vmtest recv-peer-gone
