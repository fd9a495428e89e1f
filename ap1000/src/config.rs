//! The sizes of an emulated cell, and how it receives.

use std::time::Duration;

use crate::costs::Costs;
use crate::error::{Error, Result};
use crate::header::HEADER;
use crate::LINE;

/// How a cell's message controller takes arriving messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReceiveMode {
    /// The normal path: an arriving header interrupts the CPU, whose
    /// handler allocates a buffer and programs the receive DMA; the body
    /// waits in the network until then (§2.1, §2.2 L80).
    Dma,
    /// Buffer receiving: the receive DMA is always on and writes every
    /// line into the cell's ring (§3.2).
    Ring,
}

/// Sizes of the cells of one machine (each field says where it comes from).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// What each step costs.
    pub costs: Costs,
    /// How every cell receives.
    pub receive: ReceiveMode,
    /// DRAM per cell. AP1000 hardware (outside this paper): 16 MiB.
    pub memory_bytes: usize,
    /// The direct-mapped, copy-back cache (§3 L95). AP1000 hardware
    /// (outside this paper): 128 KiB. A power of two.
    pub cache_bytes: usize,
    /// Lines the send FIFO (write buffer and the interface's FIFO) holds.
    /// The paper only says it must be deeper than one line (§3.1 L113).
    /// Assumed 4 (64 B).
    pub fifo_lines: usize,
    /// The receive ring (§3.2 L133: 64 KB to 512 KB). Default 512 KiB, the
    /// largest, which Table 1's 512 KB message limit comes from.
    pub ring_bytes: usize,
    /// Where `send()` builds the message header (buffer `q` of §4.1). The
    /// default is the last 32 bytes of memory.
    pub header_addr: u32,
    /// How long a real-time wait (a receive, ring space) may take before it
    /// fails: a dead or stuck peer, not a modelled delay.
    pub timeout: Duration,
}

impl Config {
    /// An AP1000 machine receiving as `receive` says.
    pub fn ap1000(receive: ReceiveMode) -> Self {
        let memory_bytes = 16 << 20;
        Self {
            costs: Costs::AP1000,
            receive,
            memory_bytes,
            cache_bytes: 128 << 10,
            fifo_lines: 4,
            ring_bytes: 512 << 10,
            header_addr: (memory_bytes - HEADER) as u32,
            timeout: Duration::from_secs(20),
        }
    }

    /// Checks that the sizes make sense together.
    ///
    /// # Errors
    ///
    /// [`Error::BadConfig`] naming the first size that does not.
    pub fn validate(&self) -> Result<()> {
        let bad = |what: String| Err(Error::BadConfig(what));
        if !self.cache_bytes.is_power_of_two() || self.cache_bytes < LINE {
            return bad(format!("cache of {} bytes", self.cache_bytes));
        }
        if self.fifo_lines < 2 {
            return bad("the send FIFO must be deeper than one line (§3.1)".into());
        }
        if self.ring_bytes % LINE != 0 || self.ring_bytes < 2 * HEADER {
            return bad(format!("ring of {} bytes", self.ring_bytes));
        }
        if self.memory_bytes % LINE != 0 || self.memory_bytes > 1 << 26 {
            return bad(format!(
                "memory of {} bytes (line multiple, 26-bit addresses)",
                self.memory_bytes
            ));
        }
        let q = self.header_addr as usize;
        if q % LINE != 0 || q + HEADER > self.memory_bytes {
            return bad(format!("header buffer at {q:#x}"));
        }
        Ok(())
    }
}
