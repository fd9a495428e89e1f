//! What each part of a DIMMnet-1 costs, in one place: the parameters of
//! the timing model (the `vclock` module does the arithmetic).
//!
//! Every value says where it comes from. The papers (`../shared/seeds/`,
//! summarised with line numbers in `docs/papers.md`) state few component
//! costs: the host (Pentium III 850 MHz on a 100 MHz front-side bus,
//! DIMMnet-1 paper Table 1), the switch's 240 ns pass-through (Table 1),
//! the 8 Gbit/s port of RHiNET-2/SW (its reference 3), the 512-byte BOTF
//! window with 464 bytes of payload (§2.3) and the PC66/PC100/PC133 slot
//! (Fagus §2). The rest — Martini's packet generation, DMA set-up, the
//! receiver's per-packet interval, the core PU's interrupt, the host's
//! bus transactions — the papers name without a number; the values here
//! are **assumptions** from the era's hardware, marked as such. The
//! papers' end-to-end results (AOTF round trip 2.91 us, the BOTF/PUSH
//! crossover near 464-800 B, ...) are never used to set a value: they are
//! what the model is checked against (`docs/emulated.md`).
//!
//! Units: picoseconds, so that per-byte rates stay integers.

/// Virtual time and durations, in picoseconds.
pub type Ps = u64;

/// One nanosecond.
pub const NS: Ps = 1_000;
/// One microsecond.
pub const US: Ps = 1_000_000;

/// The cost of every step the model charges. [`Costs::DIMMNET1`] is the
/// card of the paper; tests build round numbers of their own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Costs {
    /// Host time of one uncached store to the card: an AOTF, a BOTF kick,
    /// one word of a PUSH/PULL command. Assumed: 6 cycles of the 100 MHz
    /// bus (Table 1) for a single-beat write the CPU does not combine.
    pub uc_store: Ps,
    /// Host time per 32-byte line written through a write-combining
    /// window (BOTF windows, §2.7 L95; the host-facing bank). Assumed: a
    /// 4-beat burst plus 4 cycles of command and turnaround on the 100 MHz
    /// bus, 80 ns (400 MB/s).
    pub wc_line: Ps,
    /// Host time of one uncached 8-byte load from the LLCM (a poll of a
    /// flag). Assumed: 15 bus cycles, what a Pentium III load that misses
    /// to PC100 SDRAM takes; the card answers as an SDRAM in that slot.
    pub uc_load: Ps,
    /// Host time per 32-byte line read from the host-facing SO-DIMM bank.
    /// Assumed: cacheable streaming reads at 320 MB/s, a Pentium III on
    /// PC100.
    pub dimm_line_read: Ps,
    /// Martini's time to form a packet: the HTLB lookup of an AOTF's
    /// header seed, or reading a BOTF window's header (§2.2, §2.3; Fig. 1
    /// and 3 have no timing). Assumed: 8 cycles of a 66 MHz chip.
    pub pkt_gen: Ps,
    /// Bytes of header every packet carries on the link. From §2.3: the
    /// host writes the whole packet, header included, into a 512-byte
    /// window that carries at most 464 bytes of payload.
    pub header: usize,
    /// Link serialisation per byte: RHiNET-2/SW's 8 Gbit/s port (the
    /// DIMMnet-1 paper's reference 3), 1 ns per byte.
    pub link_per_byte: Ps,
    /// Flight time on the link: serialiser, optical module and a few
    /// metres of fibre (Table 1 names the optical module, no figure).
    /// Assumed 100 ns.
    pub wire: Ps,
    /// The switch's pass-through delay: RHiNET2/SW2, 240 ns (Table 1).
    pub switch: Ps,
    /// The receiver's interval between two packets of one stream: §2.5 L80
    /// says the receive unit reused from RHiNET needs a large one, so that
    /// short BOTF packets cannot reach full bandwidth, but gives no figure.
    /// Assumed 400 ns.
    pub rx_per_packet: Ps,
    /// Martini writing a received payload into the LLCM or the SO-DIMM,
    /// per byte: a PC100 SO-DIMM's 800 MB/s (Fagus §2: PC66/PC100/PC133).
    pub mem_per_byte: Ps,
    /// Martini starting a PUSH or PULL: decode the command, translate,
    /// start the DMA engine (§2.5, no figure). Assumed 500 ns.
    pub dma_setup: Ps,
    /// Uncached stores that write one PUSH/PULL command (the PUSH window is
    /// uncached, §2.7 L97). Assumed: a 32-byte command, 4 stores of 8 B.
    pub command_stores: u32,
    /// Most payload one RDMA packet carries. Assumed 2 KiB (RHiNET-class
    /// packets; the papers give no limit for PUSH).
    pub rdma_packet: usize,
    /// The core PU taking an interrupt AOTF (an undefined command, §5.1
    /// L211): interrupt entry, the handler that appends the data to a list
    /// in the LLCM, and return. No figure in the paper (its 9.55 us is
    /// derived from round trips and is what this is checked against).
    /// Assumed: about 200 cycles at 66 MHz, 3 us.
    pub core_interrupt: Ps,
    /// Host time of a bank switch (§2.6; Fagus §2 L175-191: FET bus
    /// switches): an uncached store to the bank-select register, and
    /// invalidating the host's cached copy of the bank, which a Pentium III
    /// (no CLFLUSH) can only do with WBINVD over its 256 KiB L2. Assumed
    /// 20 us.
    pub bank_switch: Ps,
    /// Fagus's detection thread handing an arrival to the receiving
    /// thread (Fagus §4.1, Fig. 2 (7): a signal to `dimmnet_recvfrom`): a
    /// wake-up and a context switch under Linux on the Pentium III of its
    /// evaluation. Assumed 5 us, a few times lmbench's context switch on
    /// such a machine.
    pub thread_handoff: Ps,
}

impl Costs {
    /// DIMMnet-1 as the papers describe it (see each field).
    pub const DIMMNET1: Self = Self {
        uc_store: 60 * NS,
        wc_line: 80 * NS,
        uc_load: 150 * NS,
        dimm_line_read: 100 * NS,
        pkt_gen: 120 * NS,
        header: 48,
        link_per_byte: NS,
        wire: 100 * NS,
        switch: 240 * NS,
        rx_per_packet: 400 * NS,
        mem_per_byte: 1_250,
        dma_setup: 500 * NS,
        command_stores: 4,
        rdma_packet: 2048,
        core_interrupt: 3 * US,
        bank_switch: 20 * US,
        thread_handoff: 5 * US,
    };

    /// Host time to write `bytes` through a write-combining window.
    pub fn wc_write(&self, bytes: usize) -> Ps {
        self.wc_line * lines(bytes)
    }

    /// Host time to read `bytes` of the LLCM with uncached 8-byte loads.
    pub fn uc_read(&self, bytes: usize) -> Ps {
        self.uc_load * bytes.div_ceil(8).max(1) as Ps
    }

    /// Host time to read `bytes` of the host-facing bank.
    pub fn dimm_read(&self, bytes: usize) -> Ps {
        self.dimm_line_read * lines(bytes)
    }

    /// Time a packet of `payload` bytes occupies the link.
    pub fn serialise(&self, payload: usize) -> Ps {
        self.link_per_byte * (self.header + payload) as Ps
    }

    /// Time the receiver spends putting a packet of `payload` bytes into
    /// its memory.
    pub fn deposit(&self, payload: usize) -> Ps {
        self.rx_per_packet + self.mem_per_byte * payload as Ps
    }

    /// Host time to issue one PUSH or PULL command.
    pub fn command(&self) -> Ps {
        self.uc_store * Ps::from(self.command_stores)
    }
}

fn lines(bytes: usize) -> Ps {
    bytes.div_ceil(32) as Ps
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers_round_up_to_whole_transactions() {
        let c = Costs::DIMMNET1;
        assert_eq!(c.wc_write(1), 80 * NS);
        assert_eq!(c.wc_write(512), 16 * 80 * NS);
        assert_eq!(c.uc_read(9), 2 * 150 * NS);
        assert_eq!(c.serialise(464), 512 * NS);
        assert_eq!(c.deposit(8), 400 * NS + 10 * NS);
        assert_eq!(c.command(), 240 * NS);
    }
}
