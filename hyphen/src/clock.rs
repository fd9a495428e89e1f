//! The timing model: virtual clocks that the primitives advance by what
//! the board would take ([`Costs`]), so that a program learns what it
//! would do on a HyphenLink, not only what the emulation does on this
//! host. Every cost is assumed (see costs.rs): the paper has no figure.
//!
//! # Clocks
//!
//! Everything lives in the node's timing-model area of the shared region
//! (see layout.rs), so every handle and every process of a node shares
//! that node's clocks:
//!
//! - the **host clock**: the node's CPU. Only the node's own operations
//!   advance it: its stores into the command registers, its reads of
//!   STATUSFLAG and of the FIFO, an interrupt's handler and wake-up, and
//!   [`Node::spend`] for computation;
//! - the **board engine**: when the node's board has finished the work of
//!   the node's own commands (decoding, DMA, diffing, sending on the
//!   link). Commands of one node queue behind each other there;
//! - **FIFO stamps**, one per slot of the node's FIFO: when the id in the
//!   slot reached the board;
//! - **page stamps**, one per DSM home page: when the last WB was applied
//!   to it at home.
//!
//! # Rules
//!
//! - **PB** (§3.2.1): the host pays its stores ([`Costs::pb_issue`]) and
//!   goes on (PB is asynchronous, §2.2.1). The board decodes it
//!   (`board_cmd`) and, for another node, sends a packet of the header and
//!   the 4-byte id; the target board queues it `link_latency + board_rx`
//!   later, and the slot's stamp says so. A PB a full FIFO refuses
//!   ([`Overflow::Error`](crate::Overflow)) charges nothing, like a poll
//!   that finds nothing, so how often a program retries on this host
//!   never shows in the model; one that waits for room is charged once it
//!   has it, as if issued then.
//! - **EXT** (§3.2.2, §4.3): if the id was in the FIFO when EXT began (its
//!   stamp is not after the host clock), one read of the FIFO takes it.
//!   Otherwise a **polling** EXT reads it as it arrives: the host clock
//!   becomes the arrival plus one read (failed polls are not charged, so
//!   the model does not depend on how often this host spun). An
//!   **interrupt** EXT (the node's [`WaitMode::Block`]) first reads the
//!   FIFO empty and goes to sleep (`pci_read + sleep_entry`); the id's
//!   arrival raises the interrupt, whose handler takes the id and wakes
//!   the process ([`Costs::interrupt`]). [`Node::try_ext`] is one poll.
//! - **CACHE** (§3.1.1): the host pays its command stores, the board
//!   decodes. A local page is DMAed to the host; a remote one is asked for
//!   in a header-only packet, and the home board streams the page back
//!   (the processor there is not involved, as the paper stresses), which
//!   the requesting board then DMAs to the host. Then the board copies the
//!   page to its twin (step 5). The home sends the page no earlier than
//!   its page stamp. The host reads STATUSFLAG once the board is done.
//! - **WB** (§3.1.2): the host pays its stores; the board DMAs the whole
//!   page from the host (step 2: the diff is made on the board), diffs it
//!   against the twin, and sends the encoded diff (4 bytes per run plus
//!   the changed bytes, see diff.rs) to the home, whose board writes each
//!   run into its DSM memory (`run_setup` per run plus the bytes) and
//!   answers with a header-only ACK. The page stamp becomes the time the
//!   diff was applied. A local home skips the link. The host reads
//!   STATUSFLAG once the ACK is in.
//!
//! There is no sleeping or spinning to imitate a delay: the model is
//! arithmetic on these words, deterministic for a given program as long as
//! each FIFO has one consumer and each page's writers are ordered by the
//! program's synchronisation.
//!
//! # Approximations
//!
//! - A full FIFO does not hold its senders back in virtual time (the paper
//!   left overflow undecided, §3.3): with one consumer taking ids in
//!   order, a slot is always free again before that consumer reaches the
//!   id that reuses it, so the consumer's times would not change; the
//!   sending board's stall is what is left out.
//! - Boards serve other nodes' requests (a page for a remote CACHE, a diff
//!   to apply, an id to queue) at once: requests from different nodes do
//!   not contend at a board or on its link, and a board's service of
//!   others does not delay its own commands. (This keeps the model
//!   independent of the order in which this host happens to run the
//!   nodes' threads.)
//! - A poll that finds an id takes it even if, in virtual time, it had not
//!   arrived yet; it then takes it at its arrival time. A program that
//!   polls and does something else when nothing is there ([`Node::try_ext`]
//!   in a loop) can therefore take a branch the board would not have taken
//!   at that time.
//! - A page stamp is the time of the *last* WB to the page: a CACHE that
//!   copies a page a later WB (in virtual time) has already changed waits
//!   for that WB, as a program whose synchronisation ordered them would.
//! - Not charged: the host's reads and writes of its cache pages (host
//!   memory: charge computation with [`Node::spend`]), the set-up helpers
//!   [`Node::home_read`] and [`Node::home_write`], the lock words of
//!   [`Shared`](crate::Shared)'s synchronisation variables and its barrier
//!   flags (the paper has neither: the PB barrier of [`Runtime`](crate::Runtime)
//!   is charged, being PBs and EXTs), and the AP1000 rings.
//! - Handles made with [`Node::unmodelled`] charge nothing.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::board::Node;
use crate::costs::{Costs, Ps};
use crate::diff::DiffStats;
use crate::dsm::GlobalPage;
use crate::error::Result;
use crate::layout::{MODEL_ENGINE, MODEL_HOST};
use crate::wait::WaitMode;

/// What a PB charges once its id has a slot: the host's stores, the
/// board's work and the link.
pub(crate) struct PbModel<'a> {
    host: &'a AtomicU64,
    engine: &'a AtomicU64,
    costs: Costs,
    remote: bool,
}

impl PbModel<'_> {
    /// Charges the PB and returns when its id reaches the target board.
    pub(crate) fn arrival(&self) -> Ps {
        let c = &self.costs;
        let issued = occupy(self.host, 0, c.pb_issue());
        if self.remote {
            let left = occupy(self.engine, issued, c.board_cmd + c.serialise(4));
            left + c.link_latency + c.board_rx
        } else {
            occupy(self.engine, issued, c.board_cmd)
        }
    }
}

/// What an EXT charges once it has taken an id.
pub(crate) struct ExtModel<'a> {
    host: &'a AtomicU64,
    costs: Costs,
    interrupt: bool,
}

impl ExtModel<'_> {
    /// Charges taking an id that entered the FIFO at `arrival`; returns
    /// the new host clock.
    pub(crate) fn take(&self, arrival: Ps) -> Ps {
        let c = &self.costs;
        let step = |h: Ps| {
            if arrival <= h || !self.interrupt {
                h.max(arrival) + c.pci_read
            } else {
                (h + c.pci_read + c.sleep_entry).max(arrival + c.interrupt())
            }
        };
        match self
            .host
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |h| Some(step(h)))
        {
            Ok(h) | Err(h) => step(h),
        }
    }
}

/// When a WB's diff was applied at home and when its issuer's board knew.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WbTiming {
    /// The diff is in the home page.
    pub(crate) applied: Ps,
    /// The issuing board has the home's ACK (or applied it itself).
    pub(crate) done: Ps,
}

impl Node {
    /// The costs this handle charges, or `None` for an unmodelled handle.
    pub fn costs(&self) -> Option<&Costs> {
        self.costs.as_ref()
    }

    /// The same handle charging `costs` instead of
    /// [`Costs::HYPHENLINK`] (tests use round numbers; every handle of a
    /// board should use the same).
    pub fn with_costs(mut self, costs: Costs) -> Self {
        self.costs = Some(costs);
        self
    }

    /// The same handle charging nothing: for work that is the emulator's
    /// and not the program's.
    pub fn unmodelled(mut self) -> Self {
        self.costs = None;
        self
    }

    fn model_word(&self, node: u32, off: usize) -> Result<&AtomicU64> {
        self.board.u64_at(self.board.layout().model(node) + off)
    }

    /// This node's host clock: virtual picoseconds since the board was
    /// created (readable from an unmodelled handle too: the clock is
    /// shared, only charging is per handle).
    ///
    /// # Errors
    ///
    /// Shared-memory access failed.
    pub fn now(&self) -> Result<Ps> {
        Ok(self
            .model_word(self.id, MODEL_HOST)?
            .load(Ordering::Acquire))
    }

    /// When this node's board has finished the work of the node's last
    /// command (a PB's packet on the link, a CACHE's twin copy, ...).
    ///
    /// # Errors
    ///
    /// Shared-memory access failed.
    pub fn board_now(&self) -> Result<Ps> {
        Ok(self
            .model_word(self.id, MODEL_ENGINE)?
            .load(Ordering::Acquire))
    }

    /// Moves this node's host clock forward to `t` (no change if it is
    /// later already) and returns it: lines nodes up before a timed
    /// section.
    ///
    /// # Errors
    ///
    /// Shared-memory access failed.
    pub fn advance_to(&self, t: Ps) -> Result<Ps> {
        let w = self.model_word(self.id, MODEL_HOST)?;
        Ok(w.fetch_max(t, Ordering::AcqRel).max(t))
    }

    /// Charges `d` of host time (computation between primitives) and
    /// returns the new host clock.
    ///
    /// # Errors
    ///
    /// Shared-memory access failed.
    pub fn spend(&self, d: Ps) -> Result<Ps> {
        match self.costs {
            Some(_) => Ok(occupy(self.model_word(self.id, MODEL_HOST)?, 0, d)),
            None => self.now(),
        }
    }

    /// The host catches up with `at` and pays `cost(costs)`; returns the
    /// new host clock.
    fn host_after(&self, at: Ps, cost: impl FnOnce(&Costs) -> Ps) -> Result<Ps> {
        let Some(c) = self.costs else {
            return self.now();
        };
        Ok(occupy(self.model_word(self.id, MODEL_HOST)?, at, cost(&c)))
    }

    /// This node's board engine takes work that can start at `at` and
    /// lasts `cost(costs)`; returns when it is done (0 when unmodelled).
    fn board_step(&self, at: Ps, cost: impl FnOnce(&Costs) -> Ps) -> Result<Ps> {
        let Some(c) = self.costs else {
            return Ok(0);
        };
        Ok(occupy(
            self.model_word(self.id, MODEL_ENGINE)?,
            at,
            cost(&c),
        ))
    }

    /// The model of a PB to physical node `to`, `None` when unmodelled.
    pub(crate) fn pb_model(&self, to: u32) -> Result<Option<PbModel<'_>>> {
        let Some(costs) = self.costs else {
            return Ok(None);
        };
        Ok(Some(PbModel {
            host: self.model_word(self.id, MODEL_HOST)?,
            engine: self.model_word(self.id, MODEL_ENGINE)?,
            costs,
            remote: to != self.id,
        }))
    }

    /// The model of an EXT of this node: `waiting` for one that may sleep
    /// ([`Node::ext`]), which it does with an interrupt when the node's
    /// policy blocks. `None` when unmodelled.
    pub(crate) fn ext_model(&self, waiting: bool) -> Result<Option<ExtModel<'_>>> {
        let Some(costs) = self.costs else {
            return Ok(None);
        };
        Ok(Some(ExtModel {
            host: self.model_word(self.id, MODEL_HOST)?,
            costs,
            interrupt: waiting && self.policy.mode == WaitMode::Block,
        }))
    }

    /// The stamp word of a DSM home page (`page` already validated).
    pub(crate) fn page_stamp(&self, page: GlobalPage) -> Result<&AtomicU64> {
        self.board
            .u64_at(self.board.layout().page_stamp(page.home, page.page))
    }

    /// The host writes a command into its PCR: returns when the board sees
    /// it.
    pub(crate) fn command_issued(&self) -> Result<Ps> {
        self.host_after(0, Costs::command_issue)
    }

    /// The board only decodes the command (a CACHE hit, a DISCARD, a
    /// failed command): returns when it is done.
    pub(crate) fn command_decoded(&self, issued: Ps) -> Result<Ps> {
        self.board_step(issued, |c| c.board_cmd)
    }

    /// The host reads STATUSFLAG once the board is done at `done`.
    pub(crate) fn command_done(&self, done: Ps) -> Result<Ps> {
        self.host_after(done, |c| c.pci_read)
    }

    /// The board's side of a CACHE of a page homed at `home`, issued at
    /// `issued`, whose home copy is ready (last WB applied) at `ready`:
    /// returns when the page is in the host's cache and twinned.
    pub(crate) fn cache_timing(&self, home: u32, issued: Ps, ready: Ps) -> Result<Ps> {
        let Some(c) = self.costs else {
            return Ok(0);
        };
        let fetched = if home == self.id {
            self.board_step(issued, |c| c.board_cmd)?.max(ready)
        } else {
            let asked = self.board_step(issued, |c| c.board_cmd + c.serialise(0))?;
            let at_home = asked + c.link_latency + c.board_rx;
            let sent = at_home.max(ready) + c.serialise(crate::PAGE);
            sent + c.link_latency + c.board_rx
        };
        self.board_step(fetched, |c| c.dma(crate::PAGE) + c.page_copy())
    }

    /// The board's side of a WB of a page homed at `home`, issued at
    /// `issued`, whose diff is `stats`.
    pub(crate) fn wb_timing(&self, home: u32, issued: Ps, stats: &DiffStats) -> Result<WbTiming> {
        let Some(c) = self.costs else {
            return Ok(WbTiming {
                applied: 0,
                done: 0,
            });
        };
        let fetch_and_diff = c.board_cmd + c.dma(crate::PAGE) + c.page_diff();
        let apply = c.apply(stats.runs, stats.dirty_bytes);
        if home == self.id {
            let applied = self.board_step(issued, |_| fetch_and_diff + apply)?;
            return Ok(WbTiming {
                applied,
                done: applied,
            });
        }
        let left = self.board_step(issued, |c| {
            fetch_and_diff + c.serialise(stats.encoded_bytes)
        })?;
        let applied = left + c.link_latency + c.board_rx + apply;
        let done = applied + c.serialise(0) + c.link_latency + c.board_rx;
        Ok(WbTiming { applied, done })
    }
}

/// A resource whose clock is `busy` (a host, a board engine) takes work
/// that can start at `at` and lasts `d`: it starts at the later of the
/// two, and the clock becomes its end, which is returned. Atomic, as
/// several threads may charge one resource.
fn occupy(busy: &AtomicU64, at: Ps, d: Ps) -> Ps {
    let step = |b: Ps| b.max(at) + d;
    match busy.fetch_update(Ordering::AcqRel, Ordering::Acquire, |b| Some(step(b))) {
        Ok(b) | Err(b) => step(b),
    }
}
