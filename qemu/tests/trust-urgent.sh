# Urgent data (MSG_OOB) fails the connection instead of stalling it forever.
o2g-vmtest trust-urgent
