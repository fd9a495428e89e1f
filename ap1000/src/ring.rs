//! Buffer receiving's ring (§3.2, Fig. 5, Fig. 6): the receive DMA writes
//! every arriving 16-byte line at the write pointer, never into the cache;
//! the CPU reads messages where they lie and moves the read pointer over
//! the ones it has used.
//!
//! A ring of its own rather than `o2g_hyphen::ring`: there the sender
//! writes a whole message under a lock, while here the message controller
//! deposits line by line as lines arrive, each with its own arrival time,
//! so that a receiver can find a header before the body is in and wait
//! for the rest (recvs, §4.2 L214).
//!
//! The pointers are free-running byte counts (the hardware's WTP and RDP
//! modulo the ring), so full and empty differ; the hardware's RDP starts
//! at the limit and points at the byte being read, which is the same
//! condition one byte earlier. A message that runs past the end continues
//! at the start; [`Ring::take`] copies that part after the end (the slack)
//! so the message is contiguous, as the paper's library did.
//!
//! Time enters as data: each unit's arrival stamp, and the time of each
//! read-pointer advance (a writer blocked by a full ring resumes then).

use std::collections::VecDeque;

use crate::costs::Ps;
use crate::header::{Header, HEADER, USED_AT};
use crate::LINE;

/// One cell's receive ring.
#[derive(Clone, Debug)]
pub(crate) struct Ring {
    capacity: usize,
    /// The ring, then as much slack again for wrapped messages.
    bytes: Vec<u8>,
    /// Arrival time of the last line written into each unit.
    stamps: Vec<Ps>,
    write: u64,
    read: u64,
    /// Read-pointer advances not yet needed by the writer: (new read
    /// pointer, when).
    frees: VecDeque<(u64, Ps)>,
    /// Messages copied because they wrapped, and the bytes so copied.
    pub(crate) wrap_copies: u64,
    pub(crate) wrap_bytes: u64,
}

impl Ring {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            capacity,
            bytes: vec![0; 2 * capacity],
            stamps: vec![0; capacity / LINE],
            write: 0,
            read: 0,
            frees: VecDeque::new(),
            wrap_copies: 0,
            wrap_bytes: 0,
        }
    }

    pub(crate) fn write_pos(&self) -> u64 {
        self.write
    }

    pub(crate) fn read_pos(&self) -> u64 {
        self.read
    }

    fn at(&self, pos: u64) -> usize {
        (pos % self.capacity as u64) as usize
    }

    /// Whether a line can be written at the write pointer, and since when:
    /// `None` while the ring is full (the writer stops, §3.2 L131), else
    /// the virtual time the space was freed (0 if it always was).
    pub(crate) fn room(&mut self) -> Option<Ps> {
        let end = self.write + LINE as u64;
        let cap = self.capacity as u64;
        if end > self.read + cap {
            return None;
        }
        if end <= cap {
            return Some(0);
        }
        // The earliest advance that made room; older ones are never needed
        // again, since the write pointer only grows.
        while let Some(&(pos, t)) = self.frees.front() {
            if pos + cap >= end {
                return Some(t);
            }
            self.frees.pop_front();
        }
        Some(0)
    }

    /// The message controller writes a line that arrived at `at`.
    pub(crate) fn deposit(&mut self, line: &[u8; LINE], at: Ps) {
        let off = self.at(self.write);
        self.bytes[off..off + LINE].copy_from_slice(line);
        self.stamps[off / LINE] = at;
        self.write += LINE as u64;
    }

    fn read_wrapped(&self, pos: u64, out: &mut [u8]) {
        let off = self.at(pos);
        let first = out.len().min(self.capacity - off);
        out[..first].copy_from_slice(&self.bytes[off..off + first]);
        let rest = out.len() - first;
        out[first..].copy_from_slice(&self.bytes[..rest]);
    }

    /// The header of the message at `pos` (its two lines must be in).
    pub(crate) fn header(&self, pos: u64) -> Header {
        let mut b = [0u8; HEADER];
        self.read_wrapped(pos, &mut b);
        Header::from_bytes(&b)
    }

    /// When the line at `pos` arrived.
    pub(crate) fn stamp(&self, pos: u64) -> Ps {
        self.stamps[self.at(pos) / LINE]
    }

    /// Marks the message at `pos` USED (in its header's free word).
    pub(crate) fn mark_used(&mut self, pos: u64) {
        let off = self.at(pos + USED_AT as u64);
        self.bytes[off..off + 4].copy_from_slice(&1u32.to_le_bytes());
    }

    /// The read pointer moves to `to` at virtual time `t`.
    pub(crate) fn free_to(&mut self, to: u64, t: Ps) {
        self.read = to;
        self.frees.push_back((to, t));
    }

    /// The whole message at `pos` (in the ring) made contiguous: if it
    /// wrapped, its part at the ring's start is copied after the end.
    /// Returns the message's bytes and how many were copied.
    pub(crate) fn take(&mut self, pos: u64, h: &Header) -> (&[u8], usize) {
        let off = self.at(pos);
        let size = h.message_bytes();
        let mut copied = 0;
        if off + size > self.capacity {
            copied = off + size - self.capacity;
            self.bytes.copy_within(..copied, self.capacity);
            self.wrap_copies += 1;
            self.wrap_bytes += copied as u64;
        }
        (&self.bytes[off..off + size], copied)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(ring: &mut Ring, len: u32, fill: u8, at: Ps) -> u64 {
        let pos = ring.write_pos();
        let h = Header {
            len,
            ..Header::default()
        }
        .to_bytes();
        ring.deposit(h[..16].try_into().unwrap(), at);
        ring.deposit(h[16..].try_into().unwrap(), at);
        for _ in 0..(len as usize).div_ceil(LINE).max(1) {
            ring.deposit(&[fill; LINE], at + 1);
        }
        pos
    }

    #[test]
    fn a_wrapped_message_reads_back_whole_and_is_counted() {
        let mut r = Ring::new(128);
        let a = message(&mut r, 32, 1, 5); // 64 bytes at 0
        r.free_to(64, 9);
        let b = message(&mut r, 64, 2, 7); // 96 bytes at 64: wraps by 32
        assert_eq!(b, 64);
        assert_eq!(r.stamp(b + 16), 7);
        assert_eq!(r.stamp(b + 95), 8);
        let h = r.header(b);
        let (bytes, copied) = r.take(b, &h);
        assert_eq!(copied, 32);
        assert_eq!(&bytes[HEADER..], &[2; 64]);
        assert_eq!((r.wrap_copies, r.wrap_bytes), (1, 32));
        let _ = a;
    }

    #[test]
    fn a_full_ring_has_room_again_from_the_read_pointer_s_advance() {
        let mut r = Ring::new(64);
        for _ in 0..4 {
            assert_eq!(r.room(), Some(0));
            r.deposit(&[0; LINE], 1);
        }
        assert_eq!(r.room(), None);
        r.free_to(32, 100);
        assert_eq!(r.room(), Some(100));
        r.deposit(&[0; LINE], 1);
        r.deposit(&[0; LINE], 1);
        assert_eq!(r.room(), None);
        r.free_to(48, 200);
        assert_eq!(r.room(), Some(200));
    }
}
