// SPDX-License-Identifier: GPL-2.0

//! An endpoint's eager credit (`abi::O2G_INIT_CREDIT`): the window each
//! peer gets (what its ring in the dump area has room for), the credit it
//! owes each peer, and the credit each peer granted it.
//!
//! Each messages connection's `Inbound` keeps its peer's `Grant` (what
//! the peer may still send, what it holds here); the dump area counts
//! what each sender's ring reclaimed. The connection's reader joins the
//! two (`ConnReader::settle_credit`) and hands what is due here, from
//! where the send work writes it as a `Credit` message on the control
//! connection to that peer. Credit from a peer arrives on the control
//! connection and waits here until the process takes it
//! (`abi::O2G_IOC_TAKE_CREDIT`) before sending eagerly.
//!
//! Everything here runs under the endpoint's rx lock and never allocates
//! after INIT.

use kernel::{alloc::KVVec, prelude::*};

use crate::proto::credit::{Credit, Window};

/// Credit owed to one peer, not yet written.
#[derive(Clone, Copy, Default)]
struct Owed {
    credit: Credit,
    /// An `Outgoing::Credit` for this peer is in the send queue.
    queued: bool,
}

/// See the module documentation.
pub(crate) struct CreditBook {
    window: Window,
    /// By rank: credit to send.
    owed: KVVec<Owed>,
    /// By rank: credit granted to this endpoint and not taken yet.
    granted: KVVec<Credit>,
}

impl CreditBook {
    /// A book for peers below `ranks`, each granted `window`.
    ///
    /// Context: process context, may sleep.
    pub(crate) fn new(window: Window, ranks: u32) -> Result<Self> {
        let n = ranks as usize;
        let mut owed = KVVec::with_capacity(n, GFP_KERNEL_ACCOUNT)?;
        let mut granted = KVVec::with_capacity(n, GFP_KERNEL_ACCOUNT)?;
        for _ in 0..n {
            owed.push(Owed::default(), GFP_KERNEL_ACCOUNT)?;
            granted.push(Credit::default(), GFP_KERNEL_ACCOUNT)?;
        }
        Ok(Self {
            window,
            owed,
            granted,
        })
    }

    /// The window each peer gets.
    pub(crate) fn window(&self) -> Window {
        self.window
    }

    /// Whether a messages connection from `rank` may get a window: each
    /// rank below the table has a ring of its own. `EINVAL` beyond it.
    ///
    /// A connection registered again for a rank starts with a whole
    /// window while the ring may still hold what the last one sent; a
    /// message that finds no room then stalls its connection until the
    /// process takes the old ones (`receive.rs`), as without credit.
    pub(crate) fn check_rank(&self, rank: u32) -> Result {
        if rank as usize >= self.owed.len() {
            return Err(EINVAL);
        }
        Ok(())
    }

    /// `credit` is due to `rank`; returns whether an `Outgoing::Credit`
    /// must be queued for it (none is yet).
    pub(crate) fn owe(&mut self, rank: u32, credit: Credit) -> bool {
        let Some(o) = self.owed.get_mut(rank as usize) else {
            return false;
        };
        add(&mut o.credit, credit);
        !core::mem::replace(&mut o.queued, true)
    }

    /// The credit to write to `rank` now; its queued send is done.
    pub(crate) fn take_owed(&mut self, rank: u32) -> Credit {
        self.owed
            .get_mut(rank as usize)
            .map_or_else(Credit::default, |o| {
                o.queued = false;
                core::mem::take(&mut o.credit)
            })
    }

    /// `rank`'s queued send found no control connection: the credit
    /// waits for one ([`CreditBook::requeue`]).
    pub(crate) fn unqueue(&mut self, rank: u32) {
        if let Some(o) = self.owed.get_mut(rank as usize) {
            o.queued = false;
        }
    }

    /// A control connection to `rank` arrived: returns whether credit
    /// waits for it (its send is then queued).
    pub(crate) fn requeue(&mut self, rank: u32) -> bool {
        let Some(o) = self.owed.get_mut(rank as usize) else {
            return false;
        };
        let waits = o.credit != Credit::default() && !o.queued;
        o.queued |= waits;
        waits
    }

    /// `rank` granted this endpoint `credit` (ignored beyond the table).
    pub(crate) fn grant(&mut self, rank: u32, credit: Credit) {
        if let Some(g) = self.granted.get_mut(rank as usize) {
            add(g, credit);
        }
    }

    /// Takes what `rank` granted since the last call. `EINVAL` beyond
    /// the table.
    pub(crate) fn take_granted(&mut self, rank: u32) -> Result<Credit> {
        self.granted
            .get_mut(rank as usize)
            .map(core::mem::take)
            .ok_or(EINVAL)
    }
}

fn add(to: &mut Credit, c: Credit) {
    to.bytes = to.bytes.saturating_add(c.bytes);
    to.msgs = to.msgs.saturating_add(c.msgs);
}
