//! A cell's data cache: direct-mapped, copy-back, 16-byte lines (§3 L95),
//! holding real bytes, so that a line send can hit (the line comes from
//! the cache, newer than memory if dirty) or miss (memory is then current).
//!
//! The cache knows nothing of time: it reports what happened (a fill, a
//! write-back) and the caller charges the model.

use crate::LINE;

/// What one access did besides reading or writing the cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Access {
    /// The line was not cached and was filled from memory.
    pub fill: bool,
    /// A dirty victim was written back to memory first.
    pub writeback: bool,
}

/// A direct-mapped copy-back cache of `lines` lines over a memory.
#[derive(Clone, Debug)]
pub struct Cache {
    /// Line address (address / 16) cached in each entry.
    tags: Vec<Option<u32>>,
    dirty: Vec<bool>,
    data: Vec<[u8; LINE]>,
}

impl Cache {
    /// An empty cache of `bytes` (a power of two, at least one line).
    pub fn new(bytes: usize) -> Self {
        let lines = bytes / LINE;
        Self {
            tags: vec![None; lines],
            dirty: vec![false; lines],
            data: vec![[0; LINE]; lines],
        }
    }

    fn entry(&self, line: u32) -> usize {
        line as usize % self.tags.len()
    }

    /// The line holding `addr`, if cached; changes nothing (a line send
    /// neither fills nor invalidates, §3.1 L115).
    pub fn peek(&self, addr: u32) -> Option<&[u8; LINE]> {
        let line = addr / LINE as u32;
        let e = self.entry(line);
        (self.tags[e] == Some(line)).then(|| &self.data[e])
    }

    /// Makes the line of `addr` present (writing a dirty victim back into
    /// `memory`, filling from it) and returns its entry.
    fn present(&mut self, memory: &mut [u8], addr: u32) -> (usize, Access) {
        let line = addr / LINE as u32;
        let e = self.entry(line);
        let mut access = Access::default();
        if self.tags[e] != Some(line) {
            if let (Some(old), true) = (self.tags[e], self.dirty[e]) {
                let at = old as usize * LINE;
                memory[at..at + LINE].copy_from_slice(&self.data[e]);
                access.writeback = true;
            }
            let at = line as usize * LINE;
            self.data[e].copy_from_slice(&memory[at..at + LINE]);
            self.tags[e] = Some(line);
            self.dirty[e] = false;
            access.fill = true;
        }
        (e, access)
    }

    /// Reads the line of `addr` (line-aligned) through the cache, filling
    /// it on a miss.
    pub fn load_line(&mut self, memory: &mut [u8], addr: u32) -> ([u8; LINE], Access) {
        let (e, access) = self.present(memory, addr);
        (self.data[e], access)
    }

    /// Writes `bytes` at `addr` within one line: write-allocate, the line
    /// becomes dirty, memory is not touched (copy-back).
    pub fn store(&mut self, memory: &mut [u8], addr: u32, bytes: &[u8]) -> Access {
        let (e, access) = self.present(memory, addr);
        let off = addr as usize % LINE;
        self.data[e][off..off + bytes.len()].copy_from_slice(bytes);
        self.dirty[e] = true;
        access
    }

    /// Whether the line of `addr` is cached and newer than memory.
    pub fn is_dirty(&self, addr: u32) -> bool {
        let line = addr / LINE as u32;
        let e = self.entry(line);
        self.tags[e] == Some(line) && self.dirty[e]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_back_keeps_a_store_out_of_memory_until_the_line_is_evicted() {
        let mut mem = vec![0u8; 1024];
        let mut c = Cache::new(64); // 4 lines: 0x00 and 0x40 share an entry
        let a = c.store(&mut mem, 0x04, &[7, 7]);
        assert_eq!(
            a,
            Access {
                fill: true,
                writeback: false
            }
        );
        assert_eq!(mem[4], 0, "copy-back: memory is stale");
        assert_eq!(c.peek(0x00).unwrap()[4], 7);
        assert!(c.is_dirty(0x00));
        // 0x40 maps to the same entry: the dirty line goes back first.
        let (_, a) = c.load_line(&mut mem, 0x40);
        assert_eq!(
            a,
            Access {
                fill: true,
                writeback: true
            }
        );
        assert_eq!(mem[4..6], [7, 7]);
        assert!(c.peek(0x00).is_none());
        assert!(c.peek(0x40).is_some());
        // A hit does nothing else.
        assert_eq!(c.load_line(&mut mem, 0x40).1, Access::default());
    }
}
