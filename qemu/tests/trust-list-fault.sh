# A LIST stuck in a page fault (userfaultfd) does not block other opens.
o2g-vmtest trust-list-fault
