//! What a frame costs in the HyphenLink timing model (`O2G_MODEL_TIME=1`).
//!
//! The rings are AP1000's buffer receiving carried on the HyphenLink board
//! by this transport, a pairing neither paper describes, so their timing
//! is ours, built from the board's assumed costs (`o2g_hyphen::Costs`,
//! every one of them assumed):
//!
//! - **sending** a frame of `b` bytes (ring header included): the host
//!   issues a command (`command_issue`), the board decodes it
//!   (`board_cmd`) and DMAs the frame from host memory (`dma(b)`); the
//!   host waits for that DMA, as its buffer is reused at once;
//! - **flight**: the frame on the link (`serialise(b)`, `link_latency`),
//!   then the receiving board takes it (`board_rx`) and writes it into the
//!   ring in its memory (`mem_per_byte` per byte);
//! - **receiving**: the host catches up with the arrival, reads the ring's
//!   write pointer (`pci_read`) and DMAs the frame out (`dma(b)`).
//!
//! The arrival time rides in the frame itself (8 bytes before its data),
//! so the receiver catches up with exactly that frame's arrival however
//! far ahead its sender has run. Frames the ring refuses (full) cost
//! nothing, so how often this host retried never shows.

use o2g_hyphen::{Costs, Node};

/// Bytes of the arrival time at the start of a timed frame's data.
pub(super) const STAMP: usize = 8;

/// One rank's frame timing: its node's clock and the board's costs.
pub(super) struct FrameClock {
    node: Node,
    costs: Costs,
}

impl FrameClock {
    /// The frame clock of `node`; `None` if the node is not modelled.
    pub(super) fn new(node: &Node) -> Option<Self> {
        Some(Self {
            costs: *node.costs()?,
            node: node.clone(),
        })
    }

    /// Host time to put a frame of `bytes` into a peer's ring.
    fn send_cost(&self, bytes: usize) -> u64 {
        let c = &self.costs;
        c.command_issue() + c.board_cmd + c.dma(bytes)
    }

    /// When a frame of `bytes` sent now would be in the peer's ring.
    pub(super) fn arrival(&self, bytes: usize) -> u64 {
        let c = &self.costs;
        let now = self.node.now().unwrap_or(0);
        now + self.send_cost(bytes)
            + c.serialise(bytes)
            + c.link_latency
            + c.board_rx
            + c.mem_per_byte * bytes as u64
    }

    /// Charges the sender for a frame of `bytes` the ring took.
    pub(super) fn sent(&self, bytes: usize) {
        // An unreadable model clock (a corrupt region) shows in the ring's
        // next operation; the clock just stops here.
        let _ = self.node.spend(self.send_cost(bytes));
    }

    /// Charges the receiver for taking a frame of `bytes` that arrived at
    /// `arrival`.
    pub(super) fn received(&self, arrival: u64, bytes: usize) {
        let c = &self.costs;
        let _ = self.node.advance_to(arrival);
        let _ = self.node.spend(c.pci_read + c.dma(bytes));
    }
}
