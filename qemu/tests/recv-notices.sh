# Announced messages: taken from the ring, given back through the release
# ring; a post with an unread announcement must rescan; the module stops
# announcing, rather than overwrite records, when the process stops reading.
set -e
o2g-vmtest recv-notices
o2g-vmtest recv-notices-ring-full
