//! Receiving: `recvs()` over the ring (§4.2) and the normal path's receive,
//! both returning the message the program asked for.
//!
//! # Rules of the model
//!
//! Both start with `recv_call`. A wait for something that has not arrived
//! costs nothing: the CPU's clock catches up with the arrival, as if it had
//! polled until then.
//!
//! - **recvs**: for each header from the read pointer on, catch up with
//!   its arrival and pay `scan_header`. A USED message at the read pointer
//!   is invalidated (`invalidate_line` a line) and the read pointer passes
//!   it, freeing its place at this time. The wanted message is marked
//!   USED; the CPU catches up with its last line; a message that wrapped
//!   has its part at the ring's start copied after the end (`copy_word`
//!   a word).
//! - **Normal path**: handler time that started before the receive was
//!   called interrupted the program, and is charged now; then the CPU
//!   catches up with the completion handler's end and pays `scan_header`
//!   for the message's descriptor.

use std::time::Instant;

use crate::costs::{words, Ps};
use crate::error::Result;
use crate::header::HEADER;
use crate::machine::{Cell, Receiver};
use crate::LINE;

/// Which message a receive takes: the first that matches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    /// Only from this cell.
    pub src: Option<usize>,
    /// Only of this message type.
    pub tag: Option<u32>,
}

impl Filter {
    /// Any message.
    pub const ANY: Self = Self {
        src: None,
        tag: None,
    };

    fn matches(&self, src: usize, tag: u32) -> bool {
        self.src.is_none_or(|s| s == src) && self.tag.is_none_or(|t| t == tag)
    }
}

/// A received message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MsgInfo {
    /// The sender.
    pub src: usize,
    /// Its message type.
    pub tag: u32,
    /// Payload bytes.
    pub len: usize,
    /// When its last line arrived (virtual time).
    pub arrived: Ps,
    /// Bytes copied because it wrapped around the ring.
    pub wrap_copied: usize,
}

impl Cell {
    /// Waits for the first message `filter` accepts and puts its payload
    /// in `out`, receiving as the machine's [`crate::ReceiveMode`] says.
    /// The copy into `out` is the emulation's, not charged: the paper's
    /// receives return the message's address.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Timeout`] when no such message came.
    pub fn recv(&self, filter: Filter, out: &mut Vec<u8>) -> Result<MsgInfo> {
        let ring = matches!(self.shared.lock()[self.id].rx, Receiver::Ring(_));
        if ring {
            self.recvs(filter, out)
        } else {
            self.recv_dma(filter, out)
        }
    }

    fn recvs(&self, filter: Filter, out: &mut Vec<u8>) -> Result<MsgInfo> {
        let c = *self.costs();
        let me = self.id;
        let deadline = Instant::now() + self.config().timeout;
        let what = || format!("a message for cell {me} ({filter:?})");
        let mut g = self.shared.lock();
        g[me].cpu.spend(c.recv_call);
        let Receiver::Ring(r) = &g[me].rx else {
            unreachable!("checked by recv")
        };
        let mut pos = r.read_pos();
        loop {
            let st = &mut g[me];
            let Receiver::Ring(r) = &mut st.rx else {
                unreachable!("a cell's receive mode does not change")
            };
            if r.write_pos() < pos + HEADER as u64 {
                g = self.shared.wait(g, deadline, what)?;
                continue;
            }
            let h = r.header(pos);
            st.cpu.catch_up(r.stamp(pos + LINE as u64));
            st.cpu.spend(c.scan_header);
            let size = h.message_bytes() as u64;
            if h.used != 0 {
                if pos == r.read_pos() {
                    let t = st.cpu.spend(c.invalidate_line * size / LINE as u64);
                    r.free_to(pos + size, t);
                    self.shared.changed.notify_all();
                }
                pos += size;
                continue;
            }
            if !filter.matches(h.src as usize, h.tag) {
                pos += size;
                continue;
            }
            r.mark_used(pos);
            let last = pos + size - LINE as u64;
            while ring_write(&g[me]) < pos + size {
                g = self.shared.wait(g, deadline, what)?;
            }
            let st = &mut g[me];
            let Receiver::Ring(r) = &mut st.rx else {
                unreachable!("a cell's receive mode does not change")
            };
            let arrived = r.stamp(last);
            st.cpu.catch_up(arrived);
            let (bytes, copied) = r.take(pos, &h);
            let from = HEADER + h.align as usize;
            out.clear();
            out.extend_from_slice(&bytes[from..from + h.len as usize]);
            st.cpu.spend(c.copy_word * words(copied));
            st.stats.received += 1;
            return Ok(MsgInfo {
                src: h.src as usize,
                tag: h.tag,
                len: h.len as usize,
                arrived,
                wrap_copied: copied,
            });
        }
    }

    fn recv_dma(&self, filter: Filter, out: &mut Vec<u8>) -> Result<MsgInfo> {
        let c = *self.costs();
        let me = self.id;
        let deadline = Instant::now() + self.config().timeout;
        let what = || format!("a message for cell {me} ({filter:?})");
        let mut g = self.shared.lock();
        let entry = g[me].cpu.now();
        g[me].cpu.spend(c.recv_call);
        loop {
            let st = &mut g[me];
            let Receiver::Dma(inbox) = &mut st.rx else {
                unreachable!("checked by recv")
            };
            let found = inbox
                .msgs
                .iter()
                .position(|m| m.header.is_some_and(|h| filter.matches(m.src, h.tag)));
            let Some(i) = found.filter(|&i| inbox.msgs[i].complete) else {
                g = self.shared.wait(g, deadline, what)?;
                continue;
            };
            let m = inbox.msgs.remove(i).expect("found");
            let h = m.header.expect("complete");
            let stolen: Ps = m
                .handlers
                .iter()
                .filter(|(s, _)| *s < entry)
                .map(|(s, e)| e - s)
                .sum();
            st.cpu.spend(stolen);
            st.cpu.catch_up(m.done);
            st.cpu.spend(c.scan_header);
            out.clear();
            out.extend_from_slice(&m.body[h.align as usize..]);
            st.stats.received += 1;
            return Ok(MsgInfo {
                src: m.src,
                tag: h.tag,
                len: h.len as usize,
                arrived: m.done,
                wrap_copied: 0,
            });
        }
    }
}

fn ring_write(cell: &crate::machine::CellState) -> u64 {
    match &cell.rx {
        Receiver::Ring(r) => r.write_pos(),
        Receiver::Dma(_) => 0,
    }
}
