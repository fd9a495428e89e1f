//! The normal receive path's messages (§2.1, Table 2's "Normal" and "LS"):
//! the header interrupts the receiving CPU, whose handler finds the
//! message's place, allocates its buffer and programs the receive DMA;
//! the body waits in the network until then. A second interrupt marks the
//! message complete.
//!
//! The buffer is the handler's (the paper's receives return an address,
//! §5.1 L241), so it lives here, outside the program's memory; the
//! library hands the message to the program without a copy in the model.

use std::collections::VecDeque;

use crate::costs::Ps;
use crate::header::{Header, HEADER};

/// A message on its way into, or waiting in, a cell's receive buffers.
#[derive(Clone, Debug)]
pub(crate) struct Inbound {
    /// The sending cell.
    pub(crate) src: usize,
    /// Header lines so far, then the header.
    pub(crate) head: Vec<u8>,
    pub(crate) header: Option<Header>,
    /// The body as the DMA wrote it (alignment included).
    pub(crate) body: Vec<u8>,
    /// The last line is in and the completion handler has run.
    pub(crate) complete: bool,
    /// When the completion handler finished.
    pub(crate) done: Ps,
    /// The handlers' (start, end) on the receiving CPU.
    pub(crate) handlers: Vec<(Ps, Ps)>,
}

/// The messages the handlers have taken in, oldest first.
#[derive(Clone, Debug, Default)]
pub(crate) struct Inbox {
    pub(crate) msgs: VecDeque<Inbound>,
}

impl Inbox {
    /// A new message from `src` whose first line has arrived.
    pub(crate) fn begin(&mut self, src: usize) -> &mut Inbound {
        self.msgs.push_back(Inbound {
            src,
            head: Vec::with_capacity(HEADER),
            header: None,
            body: Vec::new(),
            complete: false,
            done: 0,
            handlers: Vec::new(),
        });
        self.msgs.back_mut().expect("just pushed")
    }

    /// The message `src` is still sending.
    pub(crate) fn open(&mut self, src: usize) -> Option<&mut Inbound> {
        self.msgs
            .iter_mut()
            .rev()
            .find(|m| m.src == src && !m.complete)
    }
}
