//! What each step of an AP1000 cell's message handling costs: the
//! parameters of the timing model, in one place.
//!
//! The paper (`../shared/seeds/003_…`, summarised with line numbers in
//! `docs/papers.md`) gives **no clock and no per-operation cost**. The
//! values here are of two kinds:
//!
//! - **AP1000 hardware (outside this paper)**, publicly documented facts
//!   about the machine: a cell's 25 MHz SPARC, its 128 KiB direct-mapped
//!   cache, the 25 MB/s links of the T-net torus;
//! - **assumed**: an instruction or cycle count reasoned from that
//!   hardware and from what the paper says each step does, stated in
//!   cycles of the 25 MHz clock (40 ns).
//!
//! The paper's end-to-end results (Table 2, Fig. 7) were not used to set
//! any value: they are what the model is checked against
//! (`docs/emulated.md`).
//!
//! Units: picoseconds, as in the other emulated NICs.

/// Virtual time and durations, in picoseconds.
pub type Ps = u64;

/// One nanosecond.
pub const NS: Ps = 1_000;
/// One microsecond.
pub const US: Ps = 1_000_000;
/// One cycle of a cell's 25 MHz SPARC (AP1000 hardware, outside this
/// paper).
pub const CYCLE: Ps = 40 * NS;

/// The cost of every step the model charges. [`Costs::AP1000`] is the
/// machine of the paper; tests build round numbers of their own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Costs {
    /// Library entry of `send()` in any mode: arguments, the destination's
    /// routing header, the message info; not the header's 8 stores, which
    /// are charged as stores. Assumed 200 cycles (about 130 instructions at
    /// 1.5 cycles each: a C call with SPARC register windows and the
    /// "normal mode user interface" the paper's footnote (L272) says the
    /// measured modes kept).
    pub send_call: Ps,
    /// Library entry of `recvs()` / the DMA-mode receive: arguments, the
    /// poll of the write pointer (or the message list), return. Assumed 150
    /// cycles (about 100 instructions).
    pub recv_call: Ps,
    /// Reading and checking one message header: two 16 B line fills from
    /// memory (ring lines are never cached, §3.2 L135) and about 10 cycles
    /// of compares. Assumed 2 x `mem_line` + 10 cycles.
    pub scan_header: Ps,
    /// A cached store of one word. Assumed 3 cycles (a SPARC `st` on the
    /// MB86901 integer unit).
    pub store_word: Ps,
    /// A cached load of one word. Assumed 2 cycles (`ld`).
    pub load_word: Ps,
    /// Reading or writing one 16 B line of DRAM over the local bus: a
    /// cache fill, a write-back, the line a line-send miss DMAs from
    /// memory. Assumed 8 cycles (row access plus four words).
    pub mem_line: Ps,
    /// CPU time of a line send that hits: the store, the tag check and the
    /// line's four words into the write buffer (§3.1 L111-113: the CPU
    /// waits only for that). Assumed 6 cycles.
    pub ls_hit: Ps,
    /// CPU time of a line send that misses: the tag check and starting the
    /// DMA of the line (§3.1 L113). Assumed 3 cycles; the line reaches the
    /// FIFO `mem_line` later.
    pub ls_miss: Ps,
    /// The `send()` loop around each line send of the body (add, compare,
    /// branch; §4.1 L178-181). Assumed 3 cycles.
    pub ls_loop: Ps,
    /// A full send FIFO's data-access exception (§3.1 L113): trap entry,
    /// the handler reading the MSC status, return. The handler then waits
    /// for a free slot and the store is retried. Assumed 100 cycles.
    pub trap: Ps,
    /// An uncached store of one word over the local bus (the DMA path's
    /// header into the non-cacheable staging area, §2.2 L64). Assumed 6
    /// cycles (the paper: "very slow", L66).
    pub uc_store: Ps,
    /// Copying one word from the cached message into the non-cacheable
    /// staging area before a send DMA (§2.2 L64-66): `ld` (2) + uncached
    /// `st` (6) + loop overhead (1). Assumed 9 cycles.
    pub uc_copy_word: Ps,
    /// Starting a send DMA: a system call (trap in and out of the cell
    /// OS), translating the staging address, programming the DMA
    /// registers. Assumed 200 cycles.
    pub dma_setup: Ps,
    /// Interrupt entry and exit (register windows saved and restored).
    /// Assumed 100 cycles.
    pub interrupt: Ps,
    /// The send DMA's completion handler (marks the staging area free),
    /// after `interrupt`. Assumed 50 cycles.
    pub send_done: Ps,
    /// The receive interrupt's handler on the normal path (§2.1 L50, §2.2
    /// L80): read the 32 B header from the network interface (8 uncached
    /// loads), find the message's place and allocate its buffer, program
    /// the receive DMA. Assumed 250 cycles, after `interrupt`.
    pub rx_setup: Ps,
    /// The receive DMA's completion handler (queues the message for the
    /// library), after `interrupt`. Assumed 50 cycles.
    pub rx_done: Ps,
    /// Invalidating one cache line of a used ring message before the read
    /// pointer passes it (recvs, §4.2 L210-211): one store to the cache
    /// control space. Assumed 3 cycles.
    pub invalidate_line: Ps,
    /// Copying one word of a message that wrapped around the ring to the
    /// ring's end (§4.2 L215, Fig. 6): a cached load and store, the source
    /// lines filled from memory. Assumed 6 cycles.
    pub copy_word: Ps,
    /// Time on the T-net link per byte: 25 MB/s (AP1000 hardware, outside
    /// this paper).
    pub link_per_byte: Ps,
    /// A line's way from the sending cell's interface to the receiving
    /// one's: the wormhole routers of one or two hops (distance hardly
    /// matters, §5.1 L239). Assumed 500 ns.
    pub net_delay: Ps,
}

impl Costs {
    /// The AP1000 as the paper and the machine's public description give
    /// it (see each field).
    pub const AP1000: Self = Self {
        send_call: 200 * CYCLE,
        recv_call: 150 * CYCLE,
        scan_header: 2 * 8 * CYCLE + 10 * CYCLE,
        store_word: 3 * CYCLE,
        load_word: 2 * CYCLE,
        mem_line: 8 * CYCLE,
        ls_hit: 6 * CYCLE,
        ls_miss: 3 * CYCLE,
        ls_loop: 3 * CYCLE,
        trap: 100 * CYCLE,
        uc_store: 6 * CYCLE,
        uc_copy_word: 9 * CYCLE,
        dma_setup: 200 * CYCLE,
        interrupt: 100 * CYCLE,
        send_done: 50 * CYCLE,
        rx_setup: 250 * CYCLE,
        rx_done: 50 * CYCLE,
        invalidate_line: 3 * CYCLE,
        copy_word: 6 * CYCLE,
        link_per_byte: 40 * NS,
        net_delay: 500 * NS,
    };

    /// Time one 16 B line occupies the link.
    pub fn line_time(&self) -> Ps {
        self.link_per_byte * crate::LINE as Ps
    }
}

/// Words (4 bytes) in `bytes`, rounded up.
pub(crate) fn words(bytes: usize) -> Ps {
    bytes.div_ceil(4) as Ps
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ap1000_figures_in_microseconds() {
        let c = Costs::AP1000;
        assert_eq!(c.line_time(), 640 * NS);
        assert_eq!(c.send_call, 8 * US);
        assert_eq!(c.scan_header, 1_040 * NS);
        assert_eq!(c.interrupt + c.rx_setup, 14 * US);
        assert_eq!(words(10), 3);
    }
}
