# Unregister and close with receives posted and data streaming.
o2g-vmtest recv-teardown
