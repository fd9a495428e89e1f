//! The machine: cells and the network between them, and [`Cell`], the
//! handle a program (one thread per cell) works through.
//!
//! # Who does the hardware's work
//!
//! There is no thread per message controller. The thread that sends does
//! what the hardware of both ends would do with each line: the link, the
//! receiver's ring or its interrupt handlers and DMA. It writes the bytes
//! into the receiver and stamps them with their arrival in virtual time;
//! the receiver's thread finds them and its clock catches up with the
//! stamps. Arrival carries the sender's clock; nothing sleeps or spins to
//! imitate a delay. A thread waits in real time only for what the real
//! cell would wait for too: a message not sent yet, a full ring.
//!
//! # Lock
//!
//! All cells' state sits behind one mutex (a sender touches its own and
//! its receiver's state in one step, so per-cell locks would need an
//! order); its condition variable wakes waiting receivers and writers.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Instant;

use crate::cache::{Access, Cache};
use crate::clock::Clock;
use crate::config::{Config, ReceiveMode};
use crate::costs::{Costs, Ps};
use crate::error::{Error, Result};
use crate::fifo::SendFifo;
use crate::inbox::Inbox;
use crate::ring::Ring;
use crate::send::Outgoing;
use crate::stats::Stats;
use crate::LINE;

/// How a cell takes arriving messages, with the state of that path.
#[derive(Debug)]
pub(crate) enum Receiver {
    Dma(Inbox),
    Ring(Ring),
}

/// One cell: memory, cache, clocks, and its ends of the network.
#[derive(Debug)]
pub(crate) struct CellState {
    pub(crate) memory: Vec<u8>,
    pub(crate) cache: Cache,
    /// The CPU: the program and the library.
    pub(crate) cpu: Clock,
    /// The sending interface: when the link takes the next line.
    pub(crate) link: Clock,
    /// The CPU's interrupt handlers (normal receive path).
    pub(crate) irq: Clock,
    pub(crate) fifo: SendFifo,
    /// The message being sent, line by line.
    pub(crate) outgoing: Option<Outgoing>,
    /// A send DMA whose completion interrupt is not charged yet: when it
    /// ended.
    pub(crate) dma_pending: Option<Ps>,
    pub(crate) rx: Receiver,
    pub(crate) stats: Stats,
}

#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) config: Config,
    pub(crate) cells: Mutex<Vec<CellState>>,
    pub(crate) changed: Condvar,
}

/// Emulated AP1000 cells connected by the T-net.
#[derive(Clone, Debug)]
pub struct Machine {
    shared: Arc<Shared>,
}

impl Machine {
    /// `cells` cells as `config` describes them, all clocks at 0.
    ///
    /// # Errors
    ///
    /// [`Error::BadConfig`] from [`Config::validate`].
    pub fn new(cells: usize, config: Config) -> Result<Self> {
        config.validate()?;
        let cell = || CellState {
            memory: vec![0; config.memory_bytes],
            cache: Cache::new(config.cache_bytes),
            cpu: Clock::default(),
            link: Clock::default(),
            irq: Clock::default(),
            fifo: SendFifo::new(config.fifo_lines),
            outgoing: None,
            dma_pending: None,
            rx: match config.receive {
                ReceiveMode::Dma => Receiver::Dma(Inbox::default()),
                ReceiveMode::Ring => Receiver::Ring(Ring::new(config.ring_bytes)),
            },
            stats: Stats::default(),
        };
        Ok(Self {
            shared: Arc::new(Shared {
                config,
                cells: Mutex::new((0..cells).map(|_| cell()).collect()),
                changed: Condvar::new(),
            }),
        })
    }

    /// The handle of cell `id`.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchCell`].
    pub fn cell(&self, id: usize) -> Result<Cell> {
        let cells = self.shared.lock().len();
        if id >= cells {
            return Err(Error::NoSuchCell { cell: id, cells });
        }
        Ok(Cell {
            shared: Arc::clone(&self.shared),
            id,
        })
    }

    /// Moves every CPU clock to the latest of them (before a timed
    /// section) and returns that time.
    pub fn align(&self) -> Ps {
        let mut cells = self.shared.lock();
        let t = cells.iter().map(|c| c.cpu.now()).max().unwrap_or(0);
        for c in cells.iter_mut() {
            c.cpu.catch_up(t);
        }
        t
    }
}

impl Shared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, Vec<CellState>> {
        // A thread that panicked holding the lock left a half-sent line at
        // worst; the tests that could see it have failed already.
        self.cells.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits for another thread to change the machine, until `deadline`.
    pub(crate) fn wait<'a>(
        &'a self,
        guard: MutexGuard<'a, Vec<CellState>>,
        deadline: Instant,
        what: impl FnOnce() -> String,
    ) -> Result<MutexGuard<'a, Vec<CellState>>> {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Error::Timeout {
                what: what(),
                after: self.config.timeout,
            });
        }
        let (g, _) = self
            .changed
            .wait_timeout(guard, left)
            .unwrap_or_else(|e| e.into_inner());
        Ok(g)
    }
}

/// One cell's handle: what its program calls. Cheap to clone; every
/// clone is the same cell.
#[derive(Clone, Debug)]
pub struct Cell {
    pub(crate) shared: Arc<Shared>,
    pub(crate) id: usize,
}

impl Cell {
    /// This cell's number.
    pub fn id(&self) -> usize {
        self.id
    }

    /// The machine's configuration.
    pub fn config(&self) -> &Config {
        &self.shared.config
    }

    pub(crate) fn costs(&self) -> &Costs {
        &self.shared.config.costs
    }

    /// The CPU's clock: virtual picoseconds since the machine was made.
    pub fn now(&self) -> Ps {
        self.shared.lock()[self.id].cpu.now()
    }

    /// Charges `d` of computation; returns the new clock.
    pub fn spend(&self, d: Ps) -> Ps {
        self.shared.lock()[self.id].cpu.spend(d)
    }

    /// Moves the clock forward to `t` (no change if later already).
    pub fn advance_to(&self, t: Ps) -> Ps {
        self.shared.lock()[self.id].cpu.catch_up(t)
    }

    /// The cell's counters.
    pub fn stats(&self) -> Stats {
        let cells = self.shared.lock();
        let mut s = cells[self.id].stats;
        if let Receiver::Ring(r) = &cells[self.id].rx {
            s.wrap_copies = r.wrap_copies;
            s.wrap_bytes = r.wrap_bytes;
        }
        s
    }

    /// The CPU stores `data` at `addr` through the cache (write-allocate,
    /// copy-back), charged per word and per fill and write-back.
    ///
    /// # Errors
    ///
    /// [`Error::BadAddress`].
    pub fn write(&self, addr: u32, data: &[u8]) -> Result<()> {
        let mut cells = self.shared.lock();
        store(&mut cells[self.id], self.costs(), addr, data)
    }

    /// The CPU loads `out.len()` bytes at `addr` through the cache.
    ///
    /// # Errors
    ///
    /// [`Error::BadAddress`].
    pub fn read(&self, addr: u32, out: &mut [u8]) -> Result<()> {
        let c = *self.costs();
        let mut cells = self.shared.lock();
        let cell = &mut cells[self.id];
        check_range(cell, addr, out.len())?;
        let mut done = 0;
        while done < out.len() {
            let a = addr + done as u32;
            let base = a & !(LINE as u32 - 1);
            let (line, access) = cell.cache.load_line(&mut cell.memory, base);
            let off = (a - base) as usize;
            let n = (LINE - off).min(out.len() - done);
            out[done..done + n].copy_from_slice(&line[off..off + n]);
            let d = c.load_word * crate::costs::words(n) + fill_cost(&c, access);
            cell.cpu.spend(d);
            done += n;
        }
        Ok(())
    }

    /// Whether the line holding `addr` is in the cache (tests, and
    /// benchmarks that want to know what a line send will find).
    pub fn cached(&self, addr: u32) -> bool {
        self.shared.lock()[self.id].cache.peek(addr).is_some()
    }
}

/// Checks that `[addr, addr + len)` lies in the cell's memory.
pub(crate) fn check_range(cell: &CellState, addr: u32, len: usize) -> Result<()> {
    let size = cell.memory.len();
    if addr as usize + len > size {
        return Err(Error::BadAddress { addr, len, size });
    }
    Ok(())
}

/// What a cache access costs beyond the word itself.
pub(crate) fn fill_cost(c: &Costs, a: Access) -> Ps {
    c.mem_line * (Ps::from(a.fill) + Ps::from(a.writeback))
}

/// CPU stores through the cache, charged.
pub(crate) fn store(cell: &mut CellState, c: &Costs, addr: u32, data: &[u8]) -> Result<()> {
    check_range(cell, addr, data.len())?;
    let mut done = 0;
    while done < data.len() {
        let a = addr + done as u32;
        let n = (LINE - a as usize % LINE).min(data.len() - done);
        let access = cell.cache.store(&mut cell.memory, a, &data[done..done + n]);
        let d = c.store_word * crate::costs::words(n) + fill_cost(c, access);
        cell.cpu.spend(d);
        done += n;
    }
    Ok(())
}
