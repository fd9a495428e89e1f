//! Sending: line sending (§3.1, §4.1) and the normal DMA path (§2.1), and
//! what both share: a line's way over the link into the receiver.
//!
//! # Rules of the model
//!
//! - **Line send** at CPU time `s`: if the FIFO holds `fifo_lines` lines
//!   that have not left by `s`, the store traps: the CPU is busy until the
//!   later of `s + trap` and the oldest line's leaving, then retries.
//!   A hit then costs the CPU `ls_hit` and the line is ready at once; a
//!   miss costs `ls_miss` and the line is ready `mem_line` later (the DMA
//!   reads it from memory, which is current since the line is not cached).
//! - **DMA send**: `send_call`; a previous send DMA's completion interrupt
//!   (`interrupt + send_done`, not before that DMA ended); the header by
//!   uncached stores and the body copied into the staging area
//!   (`uc_copy_word` a word, plus fills); `dma_setup`. The CPU returns;
//!   the DMA reads line `i` from memory by `(i + 1) * mem_line`.
//! - **The link**: a line ready at `r` leaves at
//!   `max(r, link free, gate - net_delay) + line_time` and arrives
//!   `net_delay` later. The gate holds a line back: for a normal receiver,
//!   the body waits for the receive handler's DMA; for a ring, a line
//!   waits until the reader freed its place.
//! - **Normal receiver**: once both header lines are in (at `t_h`), the
//!   receiving CPU's handler runs `interrupt + rx_setup` from
//!   `max(t_h, previous handler)`; its end is the body's gate. The last
//!   line's arrival starts the completion handler, `interrupt + rx_done`.

use crate::config::ReceiveMode;
use crate::costs::{words, Ps};
use crate::error::{Error, Result};
use crate::header::{Header, HEADER, MAX_MESSAGE};
use crate::machine::{check_range, fill_cost, store, Cell, CellState, Receiver};
use crate::{command, LINE};

use std::sync::MutexGuard;
use std::time::Instant;

/// How `send()` moves a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendMode {
    /// Copy into a non-cacheable area and start a DMA (§2.2 L64).
    Dma,
    /// Line sending from the cache (§4.1).
    Line,
}

/// The message a cell is sending, line by line.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Outgoing {
    to: usize,
    /// Lines sent so far.
    sent: usize,
    /// Lines the header announces, its own two included.
    total: usize,
    /// Body lines may not arrive before this (normal receiver's DMA).
    gate: Ps,
}

type Guard<'a> = MutexGuard<'a, Vec<CellState>>;

/// Two different cells mutably.
fn pair(cells: &mut [CellState], a: usize, b: usize) -> (&mut CellState, &mut CellState) {
    assert_ne!(a, b, "a cell does not send to itself");
    if a < b {
        let (x, y) = cells.split_at_mut(b);
        (&mut x[a], &mut y[0])
    } else {
        let (x, y) = cells.split_at_mut(a);
        (&mut y[0], &mut x[b])
    }
}

impl Cell {
    /// `LSEND`: sends the line holding `addr` (§3.1).
    ///
    /// The first line of a message is the first half of its header, whose
    /// routing word names the destination; the header's length says how
    /// many lines follow.
    ///
    /// # Errors
    ///
    /// [`Error::BadAddress`], [`Error::BadMessage`] (a line past the
    /// announced length, a header for a cell that does not exist),
    /// [`Error::TooLarge`], [`Error::Timeout`] (the receiver's ring stayed
    /// full).
    pub fn lsend(&self, addr: u32) -> Result<()> {
        self.line_send(addr, false)
    }

    /// `LSENDE`: sends the line holding `addr` and ends the message.
    ///
    /// # Errors
    ///
    /// As [`Cell::lsend`]; also when this is not the message's last line.
    pub fn lsende(&self, addr: u32) -> Result<()> {
        self.line_send(addr, true)
    }

    /// A store to `store_addr` as the CPU issues it: the top 6 bits are the
    /// command (`LSEND` or `LSENDE`), the rest the line's address.
    ///
    /// # Errors
    ///
    /// [`Error::BadCommand`], then as [`Cell::lsend`].
    pub fn store_command(&self, store_addr: u32) -> Result<()> {
        let cmd = command::decode(store_addr)?;
        self.line_send(cmd.addr, cmd.end)
    }

    fn line_send(&self, addr: u32, end: bool) -> Result<()> {
        let c = *self.costs();
        let base = addr & !(LINE as u32 - 1);
        let mut g = self.shared.lock();
        let me = self.id;
        check_range(&g[me], base, LINE)?;
        let (line, hit) = match g[me].cache.peek(base) {
            Some(l) => (*l, true),
            None => {
                let m = &g[me].memory;
                let at = base as usize;
                (m[at..at + LINE].try_into().expect("one line"), false)
            }
        };
        self.open(&mut g, &line, end)?;
        let st = &mut g[me];
        let s = st.cpu.now();
        if let Some(free) = st.fifo.slot(s) {
            st.stats.traps += 1;
            st.cpu.spend(c.trap);
            st.cpu.catch_up(free);
            st.fifo.slot(st.cpu.now());
        }
        st.stats.line_sends += 1;
        let ready = if hit {
            st.stats.hits += 1;
            st.cpu.spend(c.ls_hit)
        } else {
            st.stats.misses += 1;
            st.cpu.spend(c.ls_miss) + c.mem_line
        };
        let (mut g, left) = self.transmit(g, &line, ready)?;
        g[me].fifo.push(left);
        Ok(())
    }

    /// `send()` of §4.1 in the given mode: `len` bytes at `addr` to cell
    /// `to`, with message type `tag`.
    ///
    /// # Errors
    ///
    /// [`Error::BadAddress`], [`Error::TooLarge`], [`Error::NoSuchCell`],
    /// [`Error::BadMessage`] (another message is half sent),
    /// [`Error::Timeout`].
    pub fn send(&self, to: usize, tag: u32, addr: u32, len: usize, mode: SendMode) -> Result<()> {
        match mode {
            SendMode::Line => self.send_lines(to, tag, addr, len),
            SendMode::Dma => self.send_dma(to, tag, addr, len),
        }
    }

    fn header_for(&self, to: usize, tag: u32, addr: u32, len: usize) -> Result<Header> {
        if len > MAX_MESSAGE {
            return Err(Error::TooLarge {
                len,
                max: MAX_MESSAGE,
            });
        }
        Ok(Header {
            dest: to as u32,
            len: len as u32,
            align: addr % LINE as u32,
            src: self.id as u32,
            used: 0,
            id: 0,
            tag,
        })
    }

    fn send_lines(&self, to: usize, tag: u32, addr: u32, len: usize) -> Result<()> {
        let c = *self.costs();
        let h = self.header_for(to, tag, addr, len)?;
        let base = addr & !(LINE as u32 - 1);
        let lines = h.body_lines();
        let q = self.config().header_addr;
        {
            let mut g = self.shared.lock();
            let st = &mut g[self.id];
            check_range(st, base, lines * LINE)?;
            if st.outgoing.is_some() {
                return Err(Error::BadMessage("another message is half sent".into()));
            }
            st.cpu.spend(c.send_call);
            store(st, &c, q, &h.to_bytes())?;
        }
        self.lsend(q)?;
        self.lsend(q + LINE as u32)?;
        for i in 0..lines {
            let p = base + (i * LINE) as u32;
            if i + 1 < lines {
                self.spend(c.ls_loop);
                self.lsend(p)?;
            } else {
                self.lsende(p)?;
            }
        }
        Ok(())
    }

    fn send_dma(&self, to: usize, tag: u32, addr: u32, len: usize) -> Result<()> {
        let c = *self.costs();
        // The staging copy is line-aligned: the body starts right after
        // the header.
        let h = Header {
            align: 0,
            ..self.header_for(to, tag, addr, len)?
        };
        let mut g = self.shared.lock();
        let me = self.id;
        let st = &mut g[me];
        check_range(st, addr, len)?;
        if st.outgoing.is_some() {
            return Err(Error::BadMessage("another message is half sent".into()));
        }
        st.cpu.spend(c.send_call);
        if let Some(t) = st.dma_pending.take() {
            st.cpu.catch_up(t);
            st.cpu.spend(c.interrupt + c.send_done);
        }
        let mut staging = Vec::with_capacity(h.message_bytes());
        staging.extend_from_slice(&h.to_bytes());
        st.cpu.spend(c.uc_store * words(HEADER));
        let mut done = 0;
        while done < len {
            let a = addr + done as u32;
            let base = a & !(LINE as u32 - 1);
            let (line, access) = st.cache.load_line(&mut st.memory, base);
            let off = (a - base) as usize;
            let n = (LINE - off).min(len - done);
            staging.extend_from_slice(&line[off..off + n]);
            st.cpu
                .spend(c.uc_copy_word * words(n) + fill_cost(&c, access));
            done += n;
        }
        staging.resize(h.message_bytes(), 0);
        let start = st.cpu.spend(c.dma_setup);
        st.stats.dma_sends += 1;
        let n = staging.len() / LINE;
        let mut left = start;
        for (i, chunk) in staging.chunks_exact(LINE).enumerate() {
            let line: [u8; LINE] = chunk.try_into().expect("one line");
            self.open(&mut g, &line, i + 1 == n)?;
            let ready = start + (i as Ps + 1) * c.mem_line;
            (g, left) = self.transmit(g, &line, ready)?;
        }
        g[me].dma_pending = Some(left);
        Ok(())
    }

    /// Checks that `line` may be sent next (`end`: with the end bit) and,
    /// for a message's first line, opens the message from its header.
    fn open(&self, cells: &mut [CellState], line: &[u8; LINE], end: bool) -> Result<()> {
        let ncells = cells.len();
        let ring_bytes = self.config().ring_bytes;
        let st = &mut cells[self.id];
        let o = match st.outgoing {
            Some(o) => o,
            None => {
                let mut b = [0u8; HEADER];
                b[..LINE].copy_from_slice(line);
                let h = Header::from_bytes(&b);
                h.check()?;
                let to = h.dest as usize;
                if to >= ncells || to == self.id {
                    return Err(Error::BadMessage(format!(
                        "routing header names cell {to} (cell {} of {ncells})",
                        self.id
                    )));
                }
                if self.config().receive == ReceiveMode::Ring && h.message_bytes() > ring_bytes {
                    return Err(Error::TooLarge {
                        len: h.len as usize,
                        max: ring_bytes - HEADER - LINE,
                    });
                }
                Outgoing {
                    to,
                    sent: 0,
                    total: 2 + h.body_lines(),
                    gate: 0,
                }
            }
        };
        let last = o.sent + 1 == o.total;
        if end != last {
            return Err(Error::BadMessage(format!(
                "line {} of {}: {} where {} belongs",
                o.sent + 1,
                o.total,
                if end { "LSENDE" } else { "LSEND" },
                if last { "LSENDE" } else { "LSEND" },
            )));
        }
        st.outgoing = Some(o);
        Ok(())
    }

    /// The next line of the open message, ready at `r`, over the link into
    /// its receiver. Returns when it left this cell.
    fn transmit<'a>(
        &'a self,
        mut g: Guard<'a>,
        line: &[u8; LINE],
        r: Ps,
    ) -> Result<(Guard<'a>, Ps)> {
        let c = *self.costs();
        let me = self.id;
        let mut o = g[me].outgoing.expect("open() ran");
        let k = o.sent;
        let last = k + 1 == o.total;
        let deadline = Instant::now() + self.config().timeout;
        let gate = loop {
            let room = match &mut g[o.to].rx {
                Receiver::Dma(_) => Some(if k < 2 { 0 } else { o.gate }),
                Receiver::Ring(ring) => ring.room(),
            };
            match room {
                Some(t) => break t,
                None => {
                    g = self.shared.wait(g, deadline, || {
                        format!("room in cell {}'s ring (cell {me} sending)", o.to)
                    })?;
                }
            }
        };
        let (src, dst) = pair(&mut g, me, o.to);
        let left = src
            .link
            .occupy(r.max(gate.saturating_sub(c.net_delay)), c.line_time());
        let arrive = left + c.net_delay;
        match &mut dst.rx {
            Receiver::Ring(ring) => ring.deposit(line, arrive),
            Receiver::Dma(inbox) => {
                let m = if k == 0 {
                    inbox.begin(me)
                } else {
                    inbox.open(me).expect("began at line 0")
                };
                if k < 2 {
                    m.head.extend_from_slice(line);
                } else {
                    m.body.extend_from_slice(line);
                }
                if k == 1 {
                    let h = Header::from_bytes(m.head[..].try_into().expect("two lines"));
                    let d = c.interrupt + c.rx_setup;
                    let end = dst.irq.occupy(arrive, d);
                    m.header = Some(h);
                    m.handlers.push((end - d, end));
                    dst.stats.interrupts += 1;
                    o.gate = end;
                }
                if last {
                    let h = m.header.expect("two lines in");
                    m.body.truncate(h.align as usize + h.len as usize);
                    let d = c.interrupt + c.rx_done;
                    m.done = dst.irq.occupy(arrive, d);
                    m.handlers.push((m.done - d, m.done));
                    m.complete = true;
                    dst.stats.interrupts += 1;
                }
            }
        }
        o.sent += 1;
        src.outgoing = (!last).then_some(o);
        if k == 1 || last {
            self.shared.changed.notify_all();
        }
        Ok((g, left))
    }
}
