//! What origins and targets say to each other (the messages of
//! `rma/mod.rs`'s protocol), on the window's own communicator.
//!
//! Every request is a fixed-size [`Header`] with tag [`TAG_HEADER`]; one
//! that carries more (a target layout of several runs, data to put or
//! accumulate) sends it next as one message with tag [`TAG_DATA`]:
//! first the runs, then the data. Replies go to the tag the origin chose
//! for the request ([`Header::reply`]), which it has a receive posted for.
//! Everything is checked on arrival: a header that does not parse is a
//! protocol error of the peer that sent it.

/// Tag of a request's header.
pub(crate) const TAG_HEADER: i32 = 1;
/// Tag of the runs and data that follow a header.
pub(crate) const TAG_DATA: i32 = 2;
/// Tag of the `MPI_Win_post` notice a target sends each origin (§12.5.2).
pub(crate) const TAG_POST: i32 = 3;
/// The first tag an origin picks for replies; it counts up from here.
pub(crate) const FIRST_REPLY_TAG: i32 = 16;

/// Bytes of an encoded header.
pub(crate) const HEADER_LEN: usize = 48;

/// Bytes of one run `(offset, length)` in a request's layout.
pub(crate) const RUN_LEN: usize = 16;

/// Most bytes of an acknowledgement's error text.
pub(crate) const MAX_ACK_TEXT: usize = 400;

/// What a request asks the target to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Write the data into the runs.
    Put = 1,
    /// Send the runs' bytes back to the reply tag.
    Get = 2,
    /// Combine the data into the runs with the operation.
    Accumulate = 3,
    /// Send the runs' bytes back, then accumulate the data into them
    /// (`MPI_Get_accumulate`, `MPI_Fetch_and_op`).
    GetAccumulate = 4,
    /// The data are a new value then a comparand, one element each: send
    /// the old value back, and store the new one if the old equals the
    /// comparand.
    CompareAndSwap = 5,
    /// Take the lock of [`Header::flags`] when it is free, and answer
    /// with an empty message if a reply tag is given; the origin's later
    /// requests wait behind it.
    Lock = 6,
    /// Release the origin's lock and acknowledge.
    Unlock = 7,
    /// Acknowledge once everything before it is done.
    Flush = 8,
    /// The origin entered `MPI_Win_fence`: count it.
    Fence = 9,
    /// The origin completed its access epoch (`MPI_Win_complete`).
    Complete = 10,
}

impl Kind {
    fn from_u8(v: u8) -> Option<Self> {
        use Kind::*;
        Some(match v {
            1 => Put,
            2 => Get,
            3 => Accumulate,
            4 => GetAccumulate,
            5 => CompareAndSwap,
            6 => Lock,
            7 => Unlock,
            8 => Flush,
            9 => Fence,
            10 => Complete,
            _ => return None,
        })
    }

    /// Whether a data message follows the header.
    pub(crate) fn has_data(self, h: &Header) -> bool {
        match self {
            Kind::Put | Kind::Accumulate | Kind::GetAccumulate | Kind::CompareAndSwap => true,
            Kind::Get => h.explicit(),
            _ => false,
        }
    }
}

/// `flags` of a lock request: exclusive (else shared).
pub(crate) const LOCK_EXCLUSIVE: u8 = 1;
/// `flags` of an access: the runs come first in the data message (else
/// there is one run, of `len` bytes at the displacement).
pub(crate) const RUNS_IN_DATA: u8 = 2;
/// `flags` of an access made in a fence epoch (no lock or start covers
/// it): the target carries it out only once it has entered the fence
/// that ends the epoch, so that its own loads and stores between two
/// fences never meet the next epoch's accesses.
pub(crate) const FENCE_EPOCH: u8 = 4;

/// A request's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    pub(crate) kind: Kind,
    pub(crate) flags: u8,
    /// The reply tag (0 when no reply is due).
    pub(crate) reply: i32,
    /// The accumulate operation's handle value.
    pub(crate) op: u32,
    /// The handle value of the predefined type of the elements that are
    /// combined.
    pub(crate) elem: u32,
    /// The target displacement, in units of the target's `disp_unit` (an
    /// address for a dynamic window).
    pub(crate) disp: i64,
    /// Runs of the target layout, in the data message with
    /// [`RUNS_IN_DATA`] (else one run of `len` bytes at `disp`).
    pub(crate) runs: u32,
    /// Bytes of the target layout's data (what is put, got or combined).
    pub(crate) len: u64,
    /// Fences the origin had completed when it sent this: the target
    /// carries the request out only once it has completed as many, so
    /// that what follows a fence never overtakes what the fence ends.
    pub(crate) epoch: u64,
}

impl Header {
    /// A request of `kind` with nothing else set.
    pub(crate) fn new(kind: Kind) -> Self {
        Self {
            kind,
            flags: 0,
            reply: 0,
            op: 0,
            elem: 0,
            disp: 0,
            runs: 1,
            len: 0,
            epoch: 0,
        }
    }

    /// Whether the runs come in the data message.
    pub(crate) fn explicit(&self) -> bool {
        self.flags & RUNS_IN_DATA != 0
    }

    pub(crate) fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0] = self.kind as u8;
        b[1] = self.flags;
        b[4..8].copy_from_slice(&self.reply.to_le_bytes());
        b[8..12].copy_from_slice(&self.op.to_le_bytes());
        b[12..16].copy_from_slice(&self.elem.to_le_bytes());
        b[16..24].copy_from_slice(&self.disp.to_le_bytes());
        b[24..28].copy_from_slice(&self.runs.to_le_bytes());
        b[32..40].copy_from_slice(&self.len.to_le_bytes());
        b[40..48].copy_from_slice(&self.epoch.to_le_bytes());
        b
    }

    /// The header in `b`, or why it is not one.
    pub(crate) fn decode(b: &[u8]) -> Result<Self, String> {
        if b.len() != HEADER_LEN {
            return Err(format!("an RMA header of {} bytes", b.len()));
        }
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap_or_default());
        let kind = Kind::from_u8(b[0]).ok_or_else(|| format!("an RMA request of kind {}", b[0]))?;
        let h = Self {
            kind,
            flags: b[1],
            reply: i32::from_le_bytes(b[4..8].try_into().unwrap_or_default()),
            op: u32_at(8),
            elem: u32_at(12),
            disp: i64::from_le_bytes(b[16..24].try_into().unwrap_or_default()),
            runs: u32_at(24),
            len: u64::from_le_bytes(b[32..40].try_into().unwrap_or_default()),
            epoch: u64::from_le_bytes(b[40..48].try_into().unwrap_or_default()),
        };
        if h.runs == 0 {
            return Err("an RMA request with no runs".into());
        }
        Ok(h)
    }
}

/// A run of a target layout: (offset from the displacement, bytes).
pub(crate) type Run = (i64, u64);

/// Encodes runs.
pub(crate) fn encode_runs(runs: &[Run], out: &mut Vec<u8>) {
    for (off, len) in runs {
        out.extend_from_slice(&off.to_le_bytes());
        out.extend_from_slice(&len.to_le_bytes());
    }
}

/// Why a message is not what it should be.
pub(crate) type Why = String;

/// The `n` runs at the start of `b` and the bytes after them, or why
/// they are not there.
pub(crate) fn decode_runs(b: &[u8], n: u32) -> Result<(Vec<Run>, &[u8]), Why> {
    let bytes = (n as usize)
        .checked_mul(RUN_LEN)
        .filter(|&l| l <= b.len())
        .ok_or_else(|| format!("{n} runs in an RMA data message of {} bytes", b.len()))?;
    let runs = b[..bytes]
        .chunks_exact(RUN_LEN)
        .map(|c| {
            let off = i64::from_le_bytes(c[..8].try_into().unwrap_or_default());
            let len = u64::from_le_bytes(c[8..].try_into().unwrap_or_default());
            (off, len)
        })
        .collect();
    Ok((runs, &b[bytes..]))
}

/// An acknowledgement: an error code (0 for success) and its text.
pub(crate) fn encode_ack(code: i32, text: &str) -> Vec<u8> {
    let mut cut = text.len().min(MAX_ACK_TEXT);
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut v = code.to_le_bytes().to_vec();
    v.extend_from_slice(&text.as_bytes()[..cut]);
    v
}

/// The code and text of an acknowledgement.
pub(crate) fn decode_ack(b: &[u8]) -> (i32, String) {
    if b.len() < 4 {
        return (0, String::new());
    }
    let code = i32::from_le_bytes(b[..4].try_into().unwrap_or_default());
    (code, String::from_utf8_lossy(&b[4..]).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_survive_the_wire_and_garbage_is_refused() {
        let h = Header {
            kind: Kind::GetAccumulate,
            flags: LOCK_EXCLUSIVE,
            reply: 77,
            op: 0x21,
            elem: 0x209,
            disp: -5,
            runs: 3,
            len: 1 << 40,
            epoch: 7,
        };
        assert_eq!(Header::decode(&h.encode()), Ok(h));
        let mut bad = h.encode();
        bad[0] = 99;
        assert!(Header::decode(&bad).is_err());
        assert!(Header::decode(&h.encode()[..10]).is_err());
        let mut none = h.encode();
        none[24..28].copy_from_slice(&0u32.to_le_bytes());
        assert!(Header::decode(&none).is_err());
    }

    #[test]
    fn runs_and_acks_round_trip() {
        let mut v = Vec::new();
        encode_runs(&[(0, 4), (-8, 16)], &mut v);
        v.extend_from_slice(b"data");
        let (runs, rest) = decode_runs(&v, 2).unwrap();
        assert_eq!(runs, vec![(0, 4), (-8, 16)]);
        assert_eq!(rest, b"data");
        assert!(decode_runs(&v, 3).is_err());
        assert!(decode_runs(&v, u32::MAX).is_err());
        let long = "é".repeat(MAX_ACK_TEXT);
        let (code, text) = decode_ack(&encode_ack(48, &long));
        assert_eq!(code, 48);
        assert!(text.len() <= MAX_ACK_TEXT && long.starts_with(&text));
    }
}
