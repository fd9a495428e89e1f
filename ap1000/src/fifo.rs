//! The send FIFO between line sending and the link: the write buffer and
//! the interface's FIFO together, `depth` lines (§3.1 L113: deeper than a
//! line; a store finding it full traps).
//!
//! It holds, for each line still in it, the virtual time the line has
//! left for the network; a slot is free again from then.

use std::collections::VecDeque;

use crate::costs::Ps;

/// The lines in the FIFO, by the time each leaves.
#[derive(Clone, Debug)]
pub(crate) struct SendFifo {
    depth: usize,
    leaving: VecDeque<Ps>,
}

impl SendFifo {
    pub(crate) fn new(depth: usize) -> Self {
        Self {
            depth,
            leaving: VecDeque::with_capacity(depth),
        }
    }

    /// A store at `t` wants a slot: `None` if one is free at `t`, else the
    /// time the oldest line leaves (the store traps and is retried then).
    pub(crate) fn slot(&mut self, t: Ps) -> Option<Ps> {
        while self.leaving.front().is_some_and(|&l| l <= t) {
            self.leaving.pop_front();
        }
        (self.leaving.len() >= self.depth).then(|| self.leaving[0])
    }

    /// A line entered the FIFO and leaves it at `left`.
    pub(crate) fn push(&mut self, left: Ps) {
        if self.leaving.len() >= self.depth {
            self.leaving.pop_front();
        }
        self.leaving.push_back(left);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_fifo_frees_a_slot_when_its_oldest_line_leaves() {
        let mut f = SendFifo::new(2);
        assert_eq!(f.slot(0), None);
        f.push(10);
        f.push(20);
        assert_eq!(f.slot(5), Some(10));
        assert_eq!(f.slot(10), None, "the first line left at 10");
        f.push(30);
        assert_eq!(f.slot(12), Some(20));
    }
}
