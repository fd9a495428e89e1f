//! The per-peer flag areas of DIMM_Send/DIMM_Recv: what each word means,
//! how it is packed, and the checks applied before a peer's value is used.
//!
//! Node `n` keeps, in its LLCM, one 64-byte flag area per peer `p`
//! ([`Layout::flag_area`]); `p` writes it with AOTF, `n` only reads it:
//!
//! ```text
//! +0  GRANT    u64  p as receiver: [gseq:32 | remaining buffers:16 | pgid:16]
//! +8  REQUEST  u64  p as sender:   [msg seq:32 | length:32]
//! +16 DONE     u64  p as sender:   [gseq:32 | used buffers:12 | flags:4 | pgid:16]
//! +24 INFO     u64  p as sender:   [chunk bytes:32 | message length:32]
//! ```
//!
//! DONE flags: bit 0 the SO-DIMM bank the chunk landed in, bit 1 the chunk
//! came by BOTF into the LLCM landing slot (no buffers used), bit 2 last
//! chunk of the message. INFO is written before DONE; AOTF ordering makes
//! it visible to whoever sees DONE.
//!
//! Besides the flag area, the peer sets its byte flag (one byte at
//! `LLCM_BYTE_FLAGS + p`) to 1 after REQUEST or DONE, so a receiver polling
//! many peers reads four words instead of 32 flag areas.
//!
//! Sequence numbers only grow (they wrap at 2^32), so no word is ever reset
//! and a stale value can never be taken for a fresh one.

use crate::error::{Error, Result};
use crate::layout::{Layout, MAX_USED_BUFS};

pub(crate) const GRANT: usize = 0;
pub(crate) const REQUEST: usize = 8;
pub(crate) const DONE: usize = 16;
pub(crate) const INFO: usize = 24;

/// DONE flag: the chunk landed in bank 1 (else bank 0).
pub(crate) const F_BANK1: u8 = 1;
/// DONE flag: the chunk came by BOTF.
pub(crate) const F_BOTF: u8 = 2;
/// DONE flag: last chunk of the message.
pub(crate) const F_LAST: u8 = 4;

/// LLCM offset of word `field` of the flag area about `peer`.
pub(crate) fn word(peer: u32, field: usize) -> usize {
    Layout::flag_area(peer) + field
}

/// A receiver's permission to send one chunk into its buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Grant {
    pub(crate) gseq: u32,
    pub(crate) remaining: u16,
    pub(crate) pgid: u16,
}

impl Grant {
    pub(crate) fn pack(self) -> u64 {
        u64::from(self.gseq) << 32 | u64::from(self.remaining) << 16 | u64::from(self.pgid)
    }

    /// Decodes a grant written by `peer`, checking it against the layout
    /// (`remaining` within the peer's buffers) and our pgid.
    pub(crate) fn unpack(v: u64, peer: u32, bufs: u16, pgid: u16) -> Result<Self> {
        let g = Self {
            gseq: (v >> 32) as u32,
            remaining: (v >> 16) as u16,
            pgid: v as u16,
        };
        if g.pgid != pgid {
            return Err(Error::ForeignPeer {
                node: peer,
                found: g.pgid,
                expected: pgid,
            });
        }
        if g.remaining == 0 || g.remaining > bufs {
            return Err(corrupt(
                peer,
                "grant: remaining buffers",
                g.remaining.into(),
            ));
        }
        Ok(g)
    }
}

/// A sender's announcement of message `seq` of `len` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Request {
    pub(crate) seq: u32,
    pub(crate) len: u32,
}

impl Request {
    pub(crate) fn pack(self) -> u64 {
        u64::from(self.seq) << 32 | u64::from(self.len)
    }

    pub(crate) fn unpack(v: u64) -> Self {
        Self {
            seq: (v >> 32) as u32,
            len: v as u32,
        }
    }
}

/// A sender's report that the chunk for grant `gseq` is in place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Done {
    pub(crate) gseq: u32,
    pub(crate) used: u16,
    pub(crate) flags: u8,
    pub(crate) pgid: u16,
}

impl Done {
    pub(crate) fn pack(self) -> u64 {
        u64::from(self.gseq) << 32
            | u64::from(self.used & MAX_USED_BUFS) << 20
            | u64::from(self.flags & 0xf) << 16
            | u64::from(self.pgid)
    }

    pub(crate) fn unpack(v: u64) -> Self {
        Self {
            gseq: (v >> 32) as u32,
            used: ((v >> 20) & u64::from(MAX_USED_BUFS)) as u16,
            flags: ((v >> 16) & 0xf) as u8,
            pgid: v as u16,
        }
    }

    pub(crate) fn bank(&self) -> u32 {
        u32::from(self.flags & F_BANK1 != 0)
    }
}

/// Chunk size and message length, written before DONE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Info {
    pub(crate) chunk: u32,
    pub(crate) total: u32,
}

impl Info {
    pub(crate) fn pack(self) -> u64 {
        u64::from(self.chunk) << 32 | u64::from(self.total)
    }

    pub(crate) fn unpack(v: u64) -> Self {
        Self {
            chunk: (v >> 32) as u32,
            total: v as u32,
        }
    }
}

/// What a receiver may accept for one chunk, given what it granted and
/// what it has received of the message so far.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ChunkLimits {
    pub(crate) peer: u32,
    pub(crate) granted: u16,
    pub(crate) buf_size: usize,
    pub(crate) botf_max: usize,
    /// Message length announced by an earlier chunk, if any.
    pub(crate) total: Option<u32>,
    pub(crate) got: usize,
}

impl ChunkLimits {
    /// Checks a DONE/INFO pair; on success every field is safe to use as a
    /// length or offset into our buffers.
    pub(crate) fn check(&self, d: &Done, i: &Info, pgid: u16) -> Result<()> {
        let peer = self.peer;
        if d.pgid != pgid {
            return Err(Error::ForeignPeer {
                node: peer,
                found: d.pgid,
                expected: pgid,
            });
        }
        if let Some(t) = self.total {
            if t != i.total {
                return Err(corrupt(
                    peer,
                    "message length changed between chunks",
                    i.total.into(),
                ));
            }
        }
        let chunk = i.chunk as usize;
        let left = (i.total as usize)
            .checked_sub(self.got)
            .ok_or_else(|| corrupt(peer, "message length", i.total.into()))?;
        if chunk > left {
            return Err(corrupt(peer, "chunk longer than the message", chunk as u64));
        }
        if d.flags & F_BOTF != 0 {
            if d.used != 0 || chunk > self.botf_max {
                return Err(corrupt(peer, "BOTF chunk size", chunk as u64));
            }
        } else {
            if d.used > self.granted {
                return Err(corrupt(peer, "used buffers", d.used.into()));
            }
            if chunk > d.used as usize * self.buf_size {
                return Err(corrupt(peer, "chunk larger than its buffers", chunk as u64));
            }
        }
        let last = d.flags & F_LAST != 0;
        if last != (chunk == left) {
            return Err(corrupt(peer, "last-chunk flag", d.flags.into()));
        }
        Ok(())
    }
}

pub(crate) fn corrupt(node: u32, field: &'static str, value: u64) -> Error {
    Error::Corrupt { node, field, value }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_round_trip() {
        let g = Grant {
            gseq: 0xdead_beef,
            remaining: 7,
            pgid: 0x1234,
        };
        assert_eq!(Grant::unpack(g.pack(), 1, 8, 0x1234).unwrap(), g);
        let r = Request {
            seq: u32::MAX,
            len: 12345,
        };
        assert_eq!(Request::unpack(r.pack()), r);
        let d = Done {
            gseq: 3,
            used: MAX_USED_BUFS,
            flags: F_BANK1 | F_LAST,
            pgid: 9,
        };
        assert_eq!(Done::unpack(d.pack()), d);
        assert_eq!(d.bank(), 1);
        let i = Info {
            chunk: 1,
            total: u32::MAX,
        };
        assert_eq!(Info::unpack(i.pack()), i);
    }

    #[test]
    fn grants_out_of_range_or_foreign_are_refused() {
        let g = |remaining, pgid| {
            Grant {
                gseq: 1,
                remaining,
                pgid,
            }
            .pack()
        };
        assert!(matches!(
            Grant::unpack(g(0, 5), 1, 4, 5),
            Err(Error::Corrupt { .. })
        ));
        assert!(matches!(
            Grant::unpack(g(5, 5), 1, 4, 5),
            Err(Error::Corrupt { .. })
        ));
        assert!(matches!(
            Grant::unpack(g(4, 6), 1, 4, 5),
            Err(Error::ForeignPeer { .. })
        ));
    }

    #[test]
    fn chunk_checks() {
        let lim = ChunkLimits {
            peer: 2,
            granted: 2,
            buf_size: 1024,
            botf_max: 464,
            total: None,
            got: 0,
        };
        let done = |used, flags| Done {
            gseq: 1,
            used,
            flags,
            pgid: 0,
        };
        let info = |chunk, total| Info { chunk, total };
        assert!(lim.check(&done(2, F_LAST), &info(2048, 2048), 0).is_ok());
        assert!(lim.check(&done(2, 0), &info(2048, 5000), 0).is_ok());
        // More buffers than granted, more bytes than buffers, more than the
        // message, a BOTF chunk over 464, a lying last flag, a foreign pgid.
        for (d, i) in [
            (done(3, F_LAST), info(2048, 2048)),
            (done(1, F_LAST), info(2048, 2048)),
            (done(2, F_LAST), info(2048, 100)),
            (done(0, F_BOTF | F_LAST), info(465, 465)),
            (done(2, 0), info(2048, 2048)),
            (done(2, F_LAST), info(1024, 2048)),
        ] {
            assert!(lim.check(&d, &i, 0).is_err(), "{d:?} {i:?}");
        }
        assert!(matches!(
            lim.check(&done(1, F_LAST), &info(10, 10), 1),
            Err(Error::ForeignPeer { .. })
        ));
    }
}
