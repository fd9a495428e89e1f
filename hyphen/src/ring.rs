//! AP1000 buffer receiving: an always-on receive ring in the receiver's
//! memory that writers fill without the receiver taking part.
//!
//! # Memory map (one ring, at a 64-aligned `base` of the region)
//!
//! ```text
//! base + 0    control block (128 bytes)
//!             0 magic u32 | 4 capacity u32 | 8 max payload u32 | 12 writer lock u32
//!             16 write pointer u64 | 24 arrivals doorbell u32 | 28 reader sleepers u32
//!             64 read pointer u64  | 72 freed doorbell u32    | 76 writer sleepers u32
//!             80 wrap-around copies u64 | 88 bytes so copied u64
//!             (statistics, reader-written)
//! base + 128  ring: `capacity` bytes, a multiple of 16
//! then        slack: `round16(32 + max payload)` bytes, where a message that
//!             wrapped around the ring's end is made contiguous
//! ```
//!
//! The write and read pointers are free-running byte counts (never reduced
//! modulo the capacity), so `write - read` is the number of bytes in use and
//! full and empty differ. The writer alone moves `write`, the reader alone
//! moves `read`.
//!
//! # Messages
//!
//! A message occupies a whole number of 16-byte units: a 32-byte header,
//! then the payload, padded to the next unit. Header:
//!
//! ```text
//! 0 state u32 (reader's marks: 1 TAKEN, 2 USED) | 4 magic u32 | 8 payload length u32
//! 12 source u32 | 16 tag u32 | 20 sequence u32 (the message's position / 16)
//! 24 user word u64
//! ```
//!
//! A message may run past the ring's end and continue at its start
//! (a header may even be split between its two units). The state word is
//! the first word of the first unit, so it is never split.
//!
//! # Protocol
//!
//! - **Send** (the sender's "line send", which the AP1000 MSC carried out):
//!   take the ring's writer lock; wait until `capacity - (write - read)`
//!   holds the message (overflow stops the writer, it never overwrites);
//!   copy header and payload at `write`, splitting at the end; publish with
//!   a release store of `write + size`; ring the arrivals doorbell.
//! - **`recvs`** scans from `read` to `write`, skipping messages marked
//!   TAKEN or USED and those the filter rejects, marks the match TAKEN and
//!   returns its address: no copy, unless the message wrapped around, in
//!   which case the part at the ring's start is copied after the ring's end
//!   (into the slack) so the message is contiguous, as the paper's library
//!   did.
//! - **USED**: dropping (or [`Message::done`]) a message marks it USED.
//!   When it is the oldest one, `read` advances over every leading USED
//!   message and the freed doorbell wakes a writer waiting for room.
//!
//! Multiple writers are serialised by the writer lock (a lock word in the
//! control block, owner-tagged so a timeout names the holder). There is one
//! reader: [`RingReader`] is not `Sync`, and one process must hold the only
//! one. A writer stuck while holding the lock makes other writers fail with
//! [`Error::Timeout`], never hang.
//!
//! Everything read from the ring is validated (magic, the sequence number
//! against the position, the length against the maximum and against
//! `write`), so a corrupt ring gives [`Error::Corrupt`], never an access
//! outside the ring.

use std::cell::Cell;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use o2g_nicmem::Region;

use crate::error::{Error, Result};
use crate::wait::{self, Doorbell, WaitPolicy};

/// Size of a message header.
pub const HEADER_BYTES: usize = 32;
/// The ring's allocation unit; messages start on multiples of it.
pub const UNIT: usize = 16;
/// Size of the control block before the ring.
pub const CONTROL_BYTES: usize = 128;

const RING_MAGIC: u32 = 0x4150_5247; // "APRG"
const MSG_MAGIC: u32 = 0x4150_4d53; // "APMS"

const C_MAGIC: usize = 0;
const C_CAPACITY: usize = 4;
const C_MAX_PAYLOAD: usize = 8;
const C_WRITER_LOCK: usize = 12;
const C_WRITE: usize = 16;
const C_ARRIVALS: usize = 24;
const C_READER_SLEEPERS: usize = 28;
const C_READ: usize = 64;
const C_FREED: usize = 72;
const C_WRITER_SLEEPERS: usize = 76;
const C_WRAP_COPIES: usize = 80;
const C_WRAP_BYTES: usize = 88;

const TAKEN: u32 = 1;
const USED: u32 = 2;

/// Rounds `n` up to a multiple of [`UNIT`].
pub const fn round_unit(n: usize) -> usize {
    n.div_ceil(UNIT) * UNIT
}

/// Bytes a message with `len` payload bytes occupies in the ring.
pub const fn message_bytes(len: usize) -> usize {
    HEADER_BYTES + round_unit(len)
}

/// The size of one ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingConfig {
    /// Ring bytes; a multiple of 16, at least one largest message.
    pub capacity: usize,
    /// Largest payload a message may carry.
    pub max_payload: usize,
}

impl RingConfig {
    /// Checks the sizes.
    ///
    /// # Errors
    ///
    /// [`Error::BadConfig`] when the capacity is not a multiple of 16, does
    /// not hold one largest message, or exceeds 4 GiB.
    pub fn validate(&self) -> Result<()> {
        if self.capacity % UNIT != 0
            || self.capacity < message_bytes(self.max_payload)
            || self.capacity > u32::MAX as usize
            || self.max_payload > u32::MAX as usize - HEADER_BYTES - UNIT
        {
            return Err(Error::BadConfig(format!(
                "ring capacity {} must be a multiple of {UNIT} below 4 GiB holding a \
                 {}-byte payload and its header",
                self.capacity, self.max_payload
            )));
        }
        Ok(())
    }

    /// Bytes after the ring for wrapped messages.
    pub fn slack(&self) -> usize {
        message_bytes(self.max_payload)
    }

    /// Bytes the ring needs in the region: control block, ring and slack,
    /// rounded up to 64.
    pub fn footprint(&self) -> usize {
        (CONTROL_BYTES + self.capacity + self.slack()).next_multiple_of(64)
    }

    /// Lays an empty ring out at `base` (a multiple of 64). Done once, by
    /// the owner of the memory, before any writer or reader attaches.
    ///
    /// # Errors
    ///
    /// A bad configuration, a misaligned base, or a ring outside the region.
    pub fn init(&self, region: &Region, base: usize) -> Result<()> {
        self.validate()?;
        if base % 64 != 0 {
            return Err(Error::BadConfig(format!(
                "ring base {base} is not 64-aligned"
            )));
        }
        region.check(base, self.footprint())?;
        region.fill(base, CONTROL_BYTES, 0)?;
        region
            .u32_at(base + C_CAPACITY)?
            .store(self.capacity as u32, Ordering::Relaxed);
        region
            .u32_at(base + C_MAX_PAYLOAD)?
            .store(self.max_payload as u32, Ordering::Relaxed);
        region
            .u32_at(base + C_MAGIC)?
            .store(RING_MAGIC, Ordering::Release);
        Ok(())
    }
}

/// What the sender puts in a header besides the length.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RingEnvelope {
    /// The sender (a node or rank number).
    pub src: u32,
    /// A tag the receiver can select on.
    pub tag: u32,
    /// A free word (an MPI transport puts its context id and more here).
    pub user: u64,
}

/// A received message's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MsgInfo {
    /// What the sender wrote.
    pub envelope: RingEnvelope,
    /// Payload length.
    pub len: usize,
    /// Position of the message in the ring, in 16-byte units (wraps at
    /// 2^32).
    pub seq: u32,
}

/// Which messages a receive accepts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    /// Only from this source.
    pub src: Option<u32>,
    /// Only with this tag.
    pub tag: Option<u32>,
}

impl Filter {
    /// Accepts every message (the oldest unconsumed one is returned).
    pub const ANY: Filter = Filter {
        src: None,
        tag: None,
    };

    fn matches(&self, e: &RingEnvelope) -> bool {
        self.src.is_none_or(|s| s == e.src) && self.tag.is_none_or(|t| t == e.tag)
    }
}

/// The validated geometry of a ring, shared by writers and the reader.
#[derive(Debug)]
struct Geometry {
    region: Arc<Region>,
    base: usize,
    capacity: usize,
    max_payload: usize,
}

impl Geometry {
    fn attach(region: Arc<Region>, base: usize) -> Result<Self> {
        if base % 64 != 0 {
            return Err(Error::BadConfig(format!(
                "ring base {base} is not 64-aligned"
            )));
        }
        region.check(base, CONTROL_BYTES)?;
        if region.u32_at(base + C_MAGIC)?.load(Ordering::Acquire) != RING_MAGIC {
            return Err(Error::Corrupt(format!(
                "no ring at offset {base} (bad magic)"
            )));
        }
        let cfg = RingConfig {
            capacity: region.u32_at(base + C_CAPACITY)?.load(Ordering::Relaxed) as usize,
            max_payload: region.u32_at(base + C_MAX_PAYLOAD)?.load(Ordering::Relaxed) as usize,
        };
        cfg.validate()
            .map_err(|e| Error::Corrupt(format!("ring at {base}: {e}")))?;
        region.check(base, cfg.footprint())?;
        Ok(Self {
            region,
            base,
            capacity: cfg.capacity,
            max_payload: cfg.max_payload,
        })
    }

    fn u32(&self, off: usize) -> &AtomicU32 {
        self.region
            .u32_at(self.base + off)
            .expect("control block checked at attach")
    }

    fn u64(&self, off: usize) -> &AtomicU64 {
        self.region
            .u64_at(self.base + off)
            .expect("control block checked at attach")
    }

    fn ring_start(&self) -> usize {
        self.base + CONTROL_BYTES
    }

    /// Region offset of free-running position `pos`.
    fn at(&self, pos: u64) -> usize {
        self.ring_start() + (pos % self.capacity as u64) as usize
    }

    /// Bytes in use, validated against the capacity.
    fn in_use(&self, write: u64, read: u64) -> Result<usize> {
        let used = write.wrapping_sub(read);
        if used > self.capacity as u64 || used % UNIT as u64 != 0 {
            return Err(Error::Corrupt(format!(
                "ring at {}: write {write} and read {read} are {used} bytes apart (capacity {})",
                self.base, self.capacity
            )));
        }
        Ok(used as usize)
    }

    fn write_wrapped(&self, pos: u64, data: &[u8]) -> Result<()> {
        let off = (pos % self.capacity as u64) as usize;
        let first = data.len().min(self.capacity - off);
        self.region.write(self.ring_start() + off, &data[..first])?;
        self.region.write(self.ring_start(), &data[first..])?;
        Ok(())
    }

    fn read_wrapped(&self, pos: u64, out: &mut [u8]) -> Result<()> {
        let off = (pos % self.capacity as u64) as usize;
        let first = out.len().min(self.capacity - off);
        let (a, b) = out.split_at_mut(first);
        self.region.read(self.ring_start() + off, a)?;
        self.region.read(self.ring_start(), b)?;
        Ok(())
    }

    /// The state word of the message at `pos`.
    fn state(&self, pos: u64) -> Result<&AtomicU32> {
        Ok(self.region.u32_at(self.at(pos))?)
    }

    /// Reads and validates the header at `pos`, below `write`.
    fn header(&self, pos: u64, write: u64) -> Result<MsgInfo> {
        let mut h = [0u8; HEADER_BYTES];
        self.read_wrapped(pos, &mut h)?;
        let word = |i: usize| u32::from_le_bytes(h[i..i + 4].try_into().expect("4 bytes"));
        let len = word(8) as usize;
        let seq = word(20);
        let bad = |why: String| {
            Err(Error::Corrupt(format!(
                "ring at {}: message at position {pos}: {why}",
                self.base
            )))
        };
        if word(4) != MSG_MAGIC {
            return bad("bad magic".into());
        }
        if seq != (pos / UNIT as u64) as u32 {
            return bad(format!("sequence {seq} does not match its position"));
        }
        if len > self.max_payload {
            return bad(format!("length {len} exceeds {}", self.max_payload));
        }
        if message_bytes(len) as u64 > write.wrapping_sub(pos) {
            return bad(format!("length {len} runs past the write pointer"));
        }
        Ok(MsgInfo {
            envelope: RingEnvelope {
                src: word(12),
                tag: word(16),
                user: u64::from_le_bytes(h[24..32].try_into().expect("8 bytes")),
            },
            len,
            seq,
        })
    }
}

/// The sending side of a ring: any number of these, in any processes.
#[derive(Debug)]
pub struct RingWriter {
    g: Geometry,
    owner: u32,
    policy: WaitPolicy,
}

impl RingWriter {
    /// Attaches to the ring at `base` as writer `writer_id` (recorded in the
    /// writer lock while sending; below 2^31 - 1).
    ///
    /// # Errors
    ///
    /// No valid ring there.
    pub fn attach(
        region: Arc<Region>,
        base: usize,
        writer_id: u32,
        policy: WaitPolicy,
    ) -> Result<Self> {
        if writer_id >= (1 << 31) - 1 {
            return Err(Error::BadConfig(format!("writer id {writer_id} too large")));
        }
        Ok(Self {
            g: Geometry::attach(region, base)?,
            owner: writer_id + 1,
            policy,
        })
    }

    /// The largest payload this ring takes.
    pub fn max_payload(&self) -> usize {
        self.g.max_payload
    }

    /// Sends a message, waiting (bounded by the policy's timeout) while the
    /// ring has no room.
    ///
    /// # Errors
    ///
    /// [`Error::MessageTooLarge`], [`Error::Timeout`] (no room in time, or
    /// the writer lock held by a stuck writer), [`Error::Corrupt`].
    pub fn send(&self, envelope: &RingEnvelope, payload: &[u8]) -> Result<()> {
        self.send_inner(envelope, payload, true)
    }

    /// Sends a message if the ring has room now.
    ///
    /// # Errors
    ///
    /// As [`RingWriter::send`], with [`Error::RingFull`] instead of waiting.
    pub fn try_send(&self, envelope: &RingEnvelope, payload: &[u8]) -> Result<()> {
        self.send_inner(envelope, payload, false)
    }

    fn send_inner(&self, envelope: &RingEnvelope, payload: &[u8], wait: bool) -> Result<()> {
        let g = &self.g;
        if payload.len() > g.max_payload {
            return Err(Error::MessageTooLarge {
                len: payload.len(),
                max: g.max_payload,
            });
        }
        let need = message_bytes(payload.len());
        let _lock = wait::lock(g.u32(C_WRITER_LOCK), self.owner, &self.policy, || {
            format!("the writer lock of the ring at {}", g.base)
        })?;
        let write = g.u64(C_WRITE).load(Ordering::Relaxed);
        let room = || -> Result<Option<()>> {
            let used = g.in_use(write, g.u64(C_READ).load(Ordering::Acquire))?;
            Ok((g.capacity - used >= need).then_some(()))
        };
        if wait {
            let door = Doorbell {
                bell: g.u32(C_FREED),
                sleepers: g.u32(C_WRITER_SLEEPERS),
            };
            wait::wait_for(
                &self.policy,
                door,
                || format!("{need} free bytes in the ring at {}", g.base),
                room,
            )?;
        } else if room()?.is_none() {
            let used = g.in_use(write, g.u64(C_READ).load(Ordering::Acquire))?;
            return Err(Error::RingFull {
                need,
                free: g.capacity - used,
            });
        }
        let mut h = [0u8; HEADER_BYTES];
        h[4..8].copy_from_slice(&MSG_MAGIC.to_le_bytes());
        h[8..12].copy_from_slice(&(payload.len() as u32).to_le_bytes());
        h[12..16].copy_from_slice(&envelope.src.to_le_bytes());
        h[16..20].copy_from_slice(&envelope.tag.to_le_bytes());
        h[20..24].copy_from_slice(&((write / UNIT as u64) as u32).to_le_bytes());
        h[24..32].copy_from_slice(&envelope.user.to_le_bytes());
        g.write_wrapped(write, &h)?;
        g.write_wrapped(write + HEADER_BYTES as u64, payload)?;
        g.u64(C_WRITE).store(write + need as u64, Ordering::Release);
        Doorbell {
            bell: g.u32(C_ARRIVALS),
            sleepers: g.u32(C_READER_SLEEPERS),
        }
        .ring();
        Ok(())
    }
}

/// The receiving side of a ring: exactly one, in the process that owns the
/// ring. Not `Sync`: messages are taken and released by one thread.
#[derive(Debug)]
pub struct RingReader {
    g: Geometry,
    policy: WaitPolicy,
    _one_thread: PhantomData<Cell<()>>,
}

/// A received message still in the ring. Dropping it (or
/// [`Message::done`]) marks it USED, which lets the writer reuse its
/// space once every older message is used too.
#[derive(Debug)]
pub struct Message<'r> {
    reader: &'r RingReader,
    pos: u64,
    info: MsgInfo,
    wrapped: bool,
}

impl RingReader {
    /// Attaches to the ring at `base` as its only reader.
    ///
    /// # Errors
    ///
    /// No valid ring there.
    pub fn attach(region: Arc<Region>, base: usize, policy: WaitPolicy) -> Result<Self> {
        Ok(Self {
            g: Geometry::attach(region, base)?,
            policy,
            _one_thread: PhantomData,
        })
    }

    /// Bytes of the ring in use (messages not yet released, and padding).
    ///
    /// # Errors
    ///
    /// [`Error::Corrupt`] pointers.
    pub fn in_use(&self) -> Result<usize> {
        self.g.in_use(
            self.g.u64(C_WRITE).load(Ordering::Acquire),
            self.g.u64(C_READ).load(Ordering::Acquire),
        )
    }

    /// How many received messages had to be copied to the slack because
    /// they wrapped around.
    pub fn wrap_copies(&self) -> u64 {
        self.g.u64(C_WRAP_COPIES).load(Ordering::Relaxed)
    }

    /// Bytes copied to the slack for wrapped messages so far.
    pub fn wrap_bytes(&self) -> u64 {
        self.g.u64(C_WRAP_BYTES).load(Ordering::Relaxed)
    }

    /// Waits (bounded by the policy) for a message `filter` accepts and
    /// returns it in place.
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`], [`Error::Corrupt`].
    pub fn recvs(&self, filter: Filter) -> Result<Message<'_>> {
        let pos = self.wait_find(filter)?;
        self.take_in_place(pos)
    }

    /// Returns a message `filter` accepts if one is there now.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupt`].
    pub fn try_recvs(&self, filter: Filter) -> Result<Option<Message<'_>>> {
        match self.find(filter)? {
            Some((pos, _)) => self.take_in_place(pos).map(Some),
            None => Ok(None),
        }
    }

    /// The copying receive to compare with: waits for a message `filter`
    /// accepts, copies its payload into `out` (replacing its contents) and
    /// releases it at once.
    ///
    /// # Errors
    ///
    /// As [`RingReader::recvs`].
    pub fn recv_copy(&self, filter: Filter, out: &mut Vec<u8>) -> Result<MsgInfo> {
        let pos = self.wait_find(filter)?;
        self.copy_out(pos, out)
    }

    /// [`RingReader::recv_copy`] without waiting.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupt`].
    pub fn try_recv_copy(&self, filter: Filter, out: &mut Vec<u8>) -> Result<Option<MsgInfo>> {
        match self.find(filter)? {
            Some((pos, _)) => self.copy_out(pos, out).map(Some),
            None => Ok(None),
        }
    }

    fn wait_find(&self, filter: Filter) -> Result<u64> {
        let door = Doorbell {
            bell: self.g.u32(C_ARRIVALS),
            sleepers: self.g.u32(C_READER_SLEEPERS),
        };
        wait::wait_for(
            &self.policy,
            door,
            || {
                format!(
                    "a message (src {:?}, tag {:?}) in the ring at {}",
                    filter.src, filter.tag, self.g.base
                )
            },
            || Ok(self.find(filter)?.map(|(pos, _)| pos)),
        )
    }

    /// The oldest message from `read` on that is neither taken nor used
    /// and that `filter` accepts.
    fn find(&self, filter: Filter) -> Result<Option<(u64, MsgInfo)>> {
        let g = &self.g;
        let write = g.u64(C_WRITE).load(Ordering::Acquire);
        let mut pos = g.u64(C_READ).load(Ordering::Relaxed);
        g.in_use(write, pos)?;
        while pos != write {
            let info = g.header(pos, write)?;
            let state = g.state(pos)?.load(Ordering::Relaxed);
            if state & (TAKEN | USED) == 0 && filter.matches(&info.envelope) {
                return Ok(Some((pos, info)));
            }
            pos += message_bytes(info.len) as u64;
        }
        Ok(None)
    }

    fn take_in_place(&self, pos: u64) -> Result<Message<'_>> {
        let g = &self.g;
        let write = g.u64(C_WRITE).load(Ordering::Acquire);
        let info = g.header(pos, write)?;
        g.state(pos)?.fetch_or(TAKEN, Ordering::Relaxed);
        let off = (pos % g.capacity as u64) as usize;
        let size = message_bytes(info.len);
        let wrapped = off + size > g.capacity;
        if wrapped {
            // The part at the ring's start goes right after its end: the
            // slack holds one largest message, and only the message that
            // straddles the end (at most one at a time) uses it.
            let tail = off + size - g.capacity;
            g.region
                .copy_within(g.ring_start(), g.ring_start() + g.capacity, tail)?;
            g.u64(C_WRAP_COPIES).fetch_add(1, Ordering::Relaxed);
            g.u64(C_WRAP_BYTES)
                .fetch_add(tail as u64, Ordering::Relaxed);
        }
        Ok(Message {
            reader: self,
            pos,
            info,
            wrapped,
        })
    }

    fn copy_out(&self, pos: u64, out: &mut Vec<u8>) -> Result<MsgInfo> {
        let g = &self.g;
        let write = g.u64(C_WRITE).load(Ordering::Acquire);
        let info = g.header(pos, write)?;
        out.resize(info.len, 0);
        g.read_wrapped(pos + HEADER_BYTES as u64, out)?;
        g.state(pos)?.fetch_or(TAKEN | USED, Ordering::Relaxed);
        self.advance()?;
        Ok(info)
    }

    /// Moves `read` over the leading USED messages and wakes writers.
    fn advance(&self) -> Result<()> {
        let g = &self.g;
        let write = g.u64(C_WRITE).load(Ordering::Acquire);
        let start = g.u64(C_READ).load(Ordering::Relaxed);
        g.in_use(write, start)?;
        let mut read = start;
        while read != write && g.state(read)?.load(Ordering::Relaxed) & USED != 0 {
            read += message_bytes(g.header(read, write)?.len) as u64;
        }
        if read != start {
            g.u64(C_READ).store(read, Ordering::Release);
            Doorbell {
                bell: g.u32(C_FREED),
                sleepers: g.u32(C_WRITER_SLEEPERS),
            }
            .ring();
        }
        Ok(())
    }
}

impl Message<'_> {
    /// The header.
    pub fn info(&self) -> &MsgInfo {
        &self.info
    }

    /// Whether the message wrapped around and was copied to the slack.
    pub fn wrapped(&self) -> bool {
        self.wrapped
    }

    /// Region offset of the payload's first byte (contiguous, in the ring
    /// or running into the slack).
    pub fn payload_offset(&self) -> usize {
        self.reader.g.at(self.pos) + HEADER_BYTES
    }

    /// The payload, in place in the ring (or ring + slack).
    pub fn payload(&self) -> &[u8] {
        let g = &self.reader.g;
        // SAFETY: Nobody writes these bytes while `self` lives. The writer
        // only writes between `write` and `read + capacity`, and `read`
        // cannot pass this message until it is marked USED, which happens
        // when `self` is consumed. The slack part (if wrapped) is written
        // only by this reader, for the message straddling the ring's end,
        // and the next such message can only be written after this one is
        // released. The range lies inside ring + slack (length validated
        // against the maximum payload, slack sized for it), which
        // `Region::bytes` checks again.
        unsafe { g.region.bytes(self.payload_offset(), self.info.len) }
            .expect("payload range validated at receive")
    }

    /// Marks the message USED and frees what can be freed.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupt`] found while advancing the read pointer.
    pub fn done(self) -> Result<()> {
        let r = self.release();
        std::mem::forget(self);
        r
    }

    fn release(&self) -> Result<()> {
        self.reader
            .g
            .state(self.pos)?
            .fetch_or(USED, Ordering::Relaxed);
        self.reader.advance()
    }
}

impl Drop for Message<'_> {
    fn drop(&mut self) {
        // An error here (a corrupt ring) shows again at the next receive.
        let _ = self.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::scratch_region;
    use std::time::Duration;

    fn ring(capacity: usize, max_payload: usize) -> (Arc<Region>, RingWriter, RingReader) {
        let cfg = RingConfig {
            capacity,
            max_payload,
        };
        let region = scratch_region("ring", cfg.footprint() + 64);
        cfg.init(&region, 64).unwrap();
        let p = WaitPolicy::polling(Duration::from_secs(10));
        let w = RingWriter::attach(Arc::clone(&region), 64, 0, p).unwrap();
        let r = RingReader::attach(Arc::clone(&region), 64, p).unwrap();
        (region, w, r)
    }

    fn env(tag: u32) -> RingEnvelope {
        RingEnvelope {
            src: 1,
            tag,
            user: u64::from(tag) << 32,
        }
    }

    #[test]
    fn a_wrapped_message_is_copied_after_the_end_and_reads_back_whole() {
        let (_region, w, r) = ring(256, 200);
        // 160 bytes, then a message of 32 + 112 that must wrap.
        w.send(&env(1), &[1u8; 128]).unwrap();
        drop(r.recvs(Filter::ANY).unwrap());
        let data: Vec<u8> = (0..110).collect();
        w.send(&env(2), &data).unwrap();
        let m = r.recvs(Filter::ANY).unwrap();
        assert!(m.wrapped());
        assert_eq!(m.payload(), &data[..]);
        assert_eq!(m.info().envelope, env(2));
        m.done().unwrap();
        assert_eq!(r.wrap_copies(), 1);
        // 160 + 144 - 256 bytes ran past the end.
        assert_eq!(r.wrap_bytes(), 48);
        assert_eq!(r.in_use().unwrap(), 0);
    }

    #[test]
    fn overflow_stops_the_writer_until_the_reader_frees_room() {
        let (_region, w, r) = ring(128, 64);
        w.try_send(&env(1), &[0u8; 64]).unwrap(); // 96 bytes
        let e = w.try_send(&env(2), &[0u8; 16]).unwrap_err();
        assert!(matches!(e, Error::RingFull { need: 48, free: 32 }), "{e}");
        let short = RingWriter::attach(
            Arc::clone(&w.g.region),
            64,
            5,
            WaitPolicy::blocking(Duration::from_millis(20)),
        )
        .unwrap();
        let e = short.send(&env(2), &[0u8; 16]).unwrap_err();
        assert!(
            matches!(&e, Error::Timeout { what, .. } if what.contains("free bytes")),
            "{e}"
        );
        let m = r.recvs(Filter::ANY).unwrap();
        // Taken but not used: still no room.
        assert!(w.try_send(&env(2), &[0u8; 16]).is_err());
        drop(m);
        w.try_send(&env(2), &[7u8; 16]).unwrap();
        let m = r.recvs(Filter::ANY).unwrap();
        assert_eq!(m.payload(), &[7u8; 16]);
        assert!(matches!(
            w.try_send(&env(3), &[0u8; 65]),
            Err(Error::MessageTooLarge { len: 65, max: 64 })
        ));
    }

    #[test]
    fn used_messages_are_skipped_and_filters_select() {
        let (_region, w, r) = ring(1024, 64);
        for tag in 0..4 {
            w.send(&env(tag), &[tag as u8; 5]).unwrap();
        }
        let third = r
            .recvs(Filter {
                src: None,
                tag: Some(2),
            })
            .unwrap();
        assert_eq!(third.payload(), &[2u8; 5]);
        drop(third);
        // Message 2 is used but 0 and 1 are not: nothing freed yet.
        assert_eq!(r.in_use().unwrap(), 4 * 48);
        let mut out = Vec::new();
        assert_eq!(r.recv_copy(Filter::ANY, &mut out).unwrap().envelope.tag, 0);
        assert_eq!(r.recv_copy(Filter::ANY, &mut out).unwrap().envelope.tag, 1);
        // 0, 1, 2 freed together once 1 is used.
        assert_eq!(r.in_use().unwrap(), 48);
        assert_eq!(r.recvs(Filter::ANY).unwrap().info().envelope.tag, 3);
        assert!(r.try_recvs(Filter::ANY).unwrap().is_none());
        assert!(r
            .try_recvs(Filter {
                src: Some(9),
                tag: None
            })
            .unwrap()
            .is_none());
    }

    #[test]
    fn a_corrupt_header_is_an_error_not_an_access_outside_the_ring() {
        let (region, w, r) = ring(256, 64);
        w.send(&env(1), &[1u8; 8]).unwrap();
        // The length field of the first header.
        region
            .write(64 + CONTROL_BYTES + 8, &u32::MAX.to_le_bytes())
            .unwrap();
        assert!(matches!(r.try_recvs(Filter::ANY), Err(Error::Corrupt(_))));
        region
            .u64_at(64 + C_WRITE)
            .unwrap()
            .store(1 << 40, Ordering::Release);
        assert!(matches!(r.in_use(), Err(Error::Corrupt(_))));
        assert!(RingReader::attach(Arc::clone(&region), 0, WaitPolicy::default()).is_err());
    }

    #[test]
    fn writers_and_a_reader_on_threads_lose_nothing() {
        let (region, _w, r) = ring(512, 200);
        let writers: Vec<_> = (0..2u32)
            .map(|id| {
                let region = Arc::clone(&region);
                std::thread::spawn(move || {
                    let p = WaitPolicy::blocking(Duration::from_secs(20));
                    let w = RingWriter::attach(region, 64, id, p).unwrap();
                    for i in 0..500u32 {
                        let len = (i as usize * 37 + id as usize * 11) % 201;
                        let body: Vec<u8> = (0..len).map(|k| (k as u32 ^ i ^ id) as u8).collect();
                        let e = RingEnvelope {
                            src: id,
                            tag: i,
                            user: 0,
                        };
                        w.send(&e, &body).unwrap();
                    }
                })
            })
            .collect();
        let mut next = [0u32; 2];
        for _ in 0..1000 {
            let m = r.recvs(Filter::ANY).unwrap();
            let e = m.info().envelope;
            let (id, i) = (e.src, e.tag);
            assert_eq!(i, next[id as usize], "per-writer order");
            next[id as usize] += 1;
            let len = (i as usize * 37 + id as usize * 11) % 201;
            let body: Vec<u8> = (0..len).map(|k| (k as u32 ^ i ^ id) as u8).collect();
            assert_eq!(m.payload(), &body[..]);
        }
        for t in writers {
            t.join().unwrap();
        }
        assert_eq!(r.in_use().unwrap(), 0);
    }
}
