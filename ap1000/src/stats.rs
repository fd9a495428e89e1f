//! What a cell counts: the figures the paper's Tables 3 and 4 report
//! (line-send hit and trap rates) and the events behind the model's times.

/// Counters of one cell.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Line sends (LSEND and LSENDE), header lines included.
    pub line_sends: u64,
    /// Line sends that found their line in the cache.
    pub hits: u64,
    /// Line sends that fell back to a DMA of the line from memory.
    pub misses: u64,
    /// Line sends that found the send FIFO full, trapped and were retried.
    pub traps: u64,
    /// Messages sent through the normal DMA path.
    pub dma_sends: u64,
    /// Messages received.
    pub received: u64,
    /// Interrupts the normal receive path took (two per message).
    pub interrupts: u64,
    /// Received messages copied because they wrapped around the ring.
    pub wrap_copies: u64,
    /// Bytes so copied.
    pub wrap_bytes: u64,
}

impl Stats {
    /// Fraction of line sends that hit, as Table 3's first figure (0 if
    /// none was made).
    pub fn hit_rate(&self) -> f64 {
        ratio(self.hits, self.line_sends)
    }

    /// Fraction of line sends that trapped, as Table 3's second figure
    /// (the paper does not say per what it counts; here per line send).
    pub fn trap_rate(&self) -> f64 {
        ratio(self.traps, self.line_sends)
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}
