//! What each part of a HyphenLink costs, in one place: the parameters of
//! the timing model (the `clock` module does the arithmetic).
//!
//! **Every value here is assumed.** The HYPHEN paper
//! (`../shared/seeds/002_…`, summarised in `docs/papers.md`) is a design
//! report of an unfinished prototype: it gives no timing figure and no
//! measured result, so there is nothing to take a number from and nothing
//! to check the model against. What it does fix is the shape of the
//! machine, and the values below follow from that shape and its era
//! (2001-2002):
//!
//! - the board is a PCI card (§1: "拡張I/Oバスとして一般的なPCIバス"), in
//!   the prototype SHOKE2000, a general-purpose PCI card with an FPGA
//!   that holds the DIMM controller and the PCI interface (§4, its
//!   reference 11). The paper gives neither the bus width nor the clock;
//!   the model assumes the PCI of the era's PCs, 32 bits at 33 MHz (a
//!   30 ns cycle, 132 MB/s at most), and an FPGA clocked with it;
//! - the host is an x86 PC running Linux (§2); the model assumes a
//!   Pentium III of about 1 GHz and Linux 2.4 for the interrupt path;
//! - the primitives are started by uncached stores into the command
//!   registers (PCR) mapped into user space (§4.1, Table 1), and their
//!   completion is read from STATUSFLAG;
//! - CACHE and WB move 4 KB pages by DMA between the board and host memory
//!   (§3.1); WB diffs the page against its twin *on the board* and sends
//!   only the diff to the home (§3.1.2);
//! - the link (HR-net through SHOKE2000's external interface) was not
//!   implemented (§4.1); its speed is a guess of what that interface
//!   could carry;
//! - EXT either polls the FIFO or is woken by an interrupt the board
//!   raises when an id is queued (§4.3); which is better the paper left
//!   to be measured.
//!
//! Units: picoseconds, so that per-byte rates stay integers.

use crate::layout::PAGE;

/// Virtual time and durations, in picoseconds.
pub type Ps = u64;

/// One nanosecond.
pub const NS: Ps = 1_000;
/// One microsecond.
pub const US: Ps = 1_000_000;

/// The cost of every step the model charges. [`Costs::HYPHENLINK`] is the
/// prototype board as assumed here; tests build round numbers of their
/// own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Costs {
    /// Host time of one uncached store into the board's command registers
    /// (a PCR entry). Assumed: a posted single-beat PCI write, about 5
    /// cycles of the 33 MHz bus (address, data, turnaround, arbitration)
    /// once the host bridge's post buffer is busy with the previous one.
    pub pci_write: Ps,
    /// Host time of one uncached 32-bit load from the board (a poll of
    /// STATUSFLAG or of the FIFO). Assumed: a non-posted PCI read stalls
    /// the CPU through the host bridge, the bus and the FPGA's target wait
    /// states, about 25 bus cycles; the era's PCI devices took 0.5-1 us.
    pub pci_read: Ps,
    /// Stores that issue a PB: NODEID, TASKID and CTRLFLAG (Table 1).
    pub pb_stores: u32,
    /// Stores that issue CACHE, WB or DISCARD: node, DSM address and cache
    /// address (§3.1.1 (1), §3.1.2 (1)), then CTRLFLAG.
    pub command_stores: u32,
    /// The board decoding a command from its PCR and looking up its tables
    /// (the logical→physical node table of §3.2.1, the DSM table of §4.2).
    /// Assumed: 8 cycles of an FPGA clocked at 33 MHz.
    pub board_cmd: Ps,
    /// The receiving board decoding a packet from the link and acting on
    /// it (queuing a task id, starting a page read, an ACK). Assumed: 4
    /// FPGA cycles.
    pub board_rx: Ps,
    /// The board starting a bus-master DMA between its memory and host
    /// memory: bus arbitration, the address phase, the host bridge's first
    /// access. Assumed 1 us.
    pub dma_setup: Ps,
    /// DMA over PCI, per byte. Assumed: 100 MB/s, what 32-bit/33 MHz
    /// bus-master transfers reached on the era's chipsets (132 MB/s peak,
    /// bursts cut at the host bridge).
    pub dma_per_byte: Ps,
    /// The board's memory (a DIMM behind the FPGA's controller, §4), per
    /// byte read or written. Assumed: 64 bits at the FPGA's 33 MHz, 266
    /// MB/s, less refresh and row changes: 250 MB/s.
    pub mem_per_byte: Ps,
    /// The home board starting the write of one run of a diff into its DSM
    /// memory (an address and a length, like a DMA descriptor: §3.1.2 (4)).
    /// Assumed: 4 FPGA cycles.
    pub run_setup: Ps,
    /// Bytes of header every packet carries on the link (destination
    /// node, command, DSM address). Assumed 8.
    pub header: usize,
    /// Link serialisation per byte. HR-net was not implemented (§4.1);
    /// assumed: SHOKE2000's external interface carrying 32 bits per
    /// 33 MHz cycle, 7.5 ns per byte (133 MB/s).
    pub link_per_byte: Ps,
    /// Flight time from one board's link logic to another's: one HR-net
    /// switch (a prototype existed, §4.1; no figure) and the cables.
    /// Assumed 1 us.
    pub link_latency: Ps,
    /// Host time from the board raising its PCI interrupt to the kernel's
    /// handler running, plus the handler's own entry and exit. Assumed 2
    /// us (I/O APIC delivery and Linux 2.4's interrupt path on a ~1 GHz
    /// Pentium III).
    pub irq_entry: Ps,
    /// Host time for the handler to wake the process sleeping in EXT: the
    /// wake-up, the context switch and the return to user space. Assumed
    /// 5 us (lmbench-era context switches were a few microseconds).
    pub wakeup: Ps,
    /// Host time for an EXT that finds the FIFO empty to go to sleep: the
    /// system call that enables the interrupt and blocks. Assumed 1 us.
    pub sleep_entry: Ps,
}

impl Costs {
    /// The HyphenLink prototype as assumed here (see each field; none is
    /// from the paper).
    pub const HYPHENLINK: Self = Self {
        pci_write: 150 * NS,
        pci_read: 750 * NS,
        pb_stores: 3,
        command_stores: 4,
        board_cmd: 240 * NS,
        board_rx: 120 * NS,
        dma_setup: US,
        dma_per_byte: 10 * NS,
        mem_per_byte: 4 * NS,
        run_setup: 120 * NS,
        header: 8,
        link_per_byte: 7_500,
        link_latency: US,
        irq_entry: 2 * US,
        wakeup: 5 * US,
        sleep_entry: US,
    };

    /// Host time to issue a PB.
    pub fn pb_issue(&self) -> Ps {
        self.pci_write * Ps::from(self.pb_stores)
    }

    /// Host time to issue a CACHE, WB or DISCARD.
    pub fn command_issue(&self) -> Ps {
        self.pci_write * Ps::from(self.command_stores)
    }

    /// Time a packet with `payload` bytes occupies the link.
    pub fn serialise(&self, payload: usize) -> Ps {
        self.link_per_byte * (self.header + payload) as Ps
    }

    /// One DMA of `bytes` between the board and host memory.
    pub fn dma(&self, bytes: usize) -> Ps {
        self.dma_setup + self.dma_per_byte * bytes as Ps
    }

    /// The board copying a page within its memory (a read and a write of
    /// every byte): the twin of CACHE step (5).
    pub fn page_copy(&self) -> Ps {
        self.mem_per_byte * 2 * PAGE as Ps
    }

    /// The board diffing a page against its twin (reading both): WB step
    /// (3).
    pub fn page_diff(&self) -> Ps {
        self.mem_per_byte * 2 * PAGE as Ps
    }

    /// The home board writing `runs` runs of `bytes` changed bytes in all
    /// into its DSM memory.
    pub fn apply(&self, runs: usize, bytes: usize) -> Ps {
        self.run_setup * runs as Ps + self.mem_per_byte * bytes as Ps
    }

    /// Host time from the board's interrupt to the woken EXT holding the
    /// id: the handler's entry, its read of the FIFO (which takes the id)
    /// and its store that acknowledges the interrupt, and the wake-up.
    pub fn interrupt(&self) -> Ps {
        self.irq_entry + self.pci_read + self.pci_write + self.wakeup
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers_add_up() {
        let c = Costs::HYPHENLINK;
        assert_eq!(c.pb_issue(), 450 * NS);
        assert_eq!(c.command_issue(), 600 * NS);
        assert_eq!(c.serialise(4), 90 * NS);
        assert_eq!(c.dma(PAGE), US + 40_960 * NS);
        assert_eq!(c.page_copy(), 32_768 * NS);
        assert_eq!(c.apply(3, 10), 360 * NS + 40 * NS);
        assert_eq!(c.interrupt(), 7_900 * NS);
    }
}
