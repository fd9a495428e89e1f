//! The o2g message header: 32 bytes, little-endian, in front of every
//! message on a connection.
//!
//! ```text
//! byte    0       1       2       3       4       5       6       7
//!     +-------+-------+-------+-------+-------+-------+-------+-------+
//!   0 |  'O'  |  '2'  |version| kind  |      source rank (u32)        |
//!     +-------+-------+-------+-------+-------+-------+-------+-------+
//!   8 |           tag (u32)           |       context id (u32)        |
//!     +-------+-------+-------+-------+-------+-------+-------+-------+
//!  16 |                  payload length in bytes (u64)                |
//!     +-------+-------+-------+-------+-------+-------+-------+-------+
//!  24 |    sequence number (u32)      |       reference (u32)         |
//!     +-------+-------+-------+-------+-------+-------+-------+-------+
//!  32   payload: exactly `length` bytes, then the next header
//! ```
//!
//! - The magic `"O2"`, the version and the kind catch a stream that lost
//!   framing (or a peer that is not o2g) at the first header.
//! - `kind` says what the message is and which fields mean what
//!   ([`Kind`]); only [`Kind::Eager`], [`Kind::Data`], [`Kind::DataPart`],
//!   [`Kind::Put`] and [`Kind::Answer`] carry payload bytes, the others are the header
//!   alone, and their `length` is a size or a count. `docs/protocol.md`
//!   is the protocol they make.
//! - `reference` names a rendezvous offer of the sender ([`Kind::Rts`],
//!   [`Kind::Cts`], [`Kind::Data`], [`Kind::DataPart`]) or counts messages ([`Kind::Credit`]);
//!   it is zero in an eager message.
//! - The sequence number counts messages per connection and direction,
//!   starting at 0 and wrapping at 2^32. TCP cannot reorder or lose bytes,
//!   so a gap means the sender or the framing is broken, and the receiver
//!   stops trusting the connection.
//! - Bit 31 of the context id marks a synchronous-mode send (`MPI_Ssend`):
//!   matching ignores it and the receiving library acknowledges the
//!   match ([`super::envelope::SYNC_FLAG`]). Context ids have 31 bits.
//! - The length is checked against a maximum the receiver configures
//!   ([`Limits`]), so a corrupt length cannot make a receiver wait for (or
//!   reserve room for) exabytes.

use super::envelope::Envelope;

/// Size of the header in bytes.
pub const HEADER_LEN: usize = 32;

/// The first two bytes of every header.
pub const MAGIC: [u8; 2] = *b"O2";

/// The header version this code speaks: 2 added rendezvous and credits
/// (version 1 was eager only). The window kinds ([`Kind::Put`],
/// [`Kind::Lock`], [`Kind::Get`], [`Kind::Answer`]) came later without a new version: a
/// receiver that does not take them fails the connection at the first
/// one, as for any kind it does not carry.
pub const VERSION: u8 = 2;

/// What a message is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Eager data: `length` payload bytes follow the header at once.
    Eager,
    /// Request to send (rendezvous): a message of `length` bytes waits at
    /// the sender under offer `reference`. No payload.
    Rts,
    /// Clear to send, from the receiver: send `length` bytes of offer
    /// `reference`, naming the receive by the token in tag and context
    /// ([`Header::token`]). No payload.
    Cts,
    /// The payload of a rendezvous: `length` bytes for the receive whose
    /// token is in tag and context, from offer `reference`.
    Data,
    /// Eager credit returned by the receiver: `length` bytes and
    /// `reference` messages. No payload.
    Credit,
    /// One-sided data: `length` payload bytes for the receiver's memory
    /// window registered under the context id, at the byte offset in the
    /// tag ([`Header::window_offset`]); `reference` is reserved (zero).
    /// Matches no receive: the receiver places it or refuses it.
    Put,
    /// A passive-target request for the receiver's window named by the
    /// context: the operation in the tag ([`lock_op`]), the tag of the
    /// [`Kind::Answer`] it asks for in `reference`. No payload.
    Lock,
    /// The answer to a [`Kind::Lock`] or [`Kind::Get`], from the window's
    /// side: `length` payload bytes ([`LockAnswer`], or the bytes a get
    /// asked for, none if refused) for the origin's receive posted with
    /// this envelope (source: the window's rank, tag: the request's
    /// `reference`, context: the window).
    Answer,
    /// A one-sided read of `length` bytes of the receiver's window named
    /// by the context, from the byte offset in the tag
    /// ([`Header::window_offset`]), answered under `reference`. No
    /// payload.
    Get,
    /// A piece of a rendezvous payload that more pieces follow: `length`
    /// bytes for the receive whose token is in tag and context, from offer
    /// `reference`, going where the last piece ended. The last piece is a
    /// [`Kind::Data`]. Between pieces the sender may write messages
    /// without payload and answers, never another offer's data: so a
    /// clear-to-send does not wait behind a whole large message.
    DataPart,
}

/// The operations of a [`Kind::Lock`] request (its tag).
pub mod lock_op {
    /// `MPI_Win_lock(MPI_LOCK_SHARED)`: answered once granted.
    pub const SHARED: u32 = 1;
    /// `MPI_Win_lock(MPI_LOCK_EXCLUSIVE)`: answered once granted.
    pub const EXCLUSIVE: u32 = 2;
    /// `MPI_Win_unlock`: the origin's puts before it are in the window;
    /// answered at once.
    pub const UNLOCK: u32 = 3;
    /// `MPI_Win_flush`: the origin's puts before it are in the window;
    /// answered at once, the lock kept.
    pub const FLUSH: u32 = 4;
}

/// The payload of a [`Kind::Answer`] to a [`Kind::Lock`]: 8 bytes,
/// little-endian.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LockAnswer {
    /// Zero when done; [`LockAnswer::REFUSED`] when the request was
    /// refused (no such window, a lock held or asked for already, an
    /// unlock or flush without the lock).
    pub status: u32,
    /// The origin's puts this window refused since its last answer
    /// (out of range, or without the lock).
    pub refused_puts: u32,
}

impl LockAnswer {
    /// Size on the wire.
    pub const LEN: usize = 8;
    /// [`LockAnswer::status`] of a refused request.
    pub const REFUSED: u32 = 1;

    /// The answer as it goes on the wire.
    pub const fn encode(&self) -> [u8; Self::LEN] {
        let [a, b, c, d] = self.status.to_le_bytes();
        let [e, f, g, h] = self.refused_puts.to_le_bytes();
        [a, b, c, d, e, f, g, h]
    }

    /// An answer read off the wire.
    pub const fn decode(bytes: &[u8; Self::LEN]) -> Self {
        let [a, b, c, d, e, f, g, h] = *bytes;
        Self {
            status: u32::from_le_bytes([a, b, c, d]),
            refused_puts: u32::from_le_bytes([e, f, g, h]),
        }
    }
}

impl Kind {
    /// The byte that stands for this kind on the wire.
    pub const fn to_wire(self) -> u8 {
        match self {
            Kind::Eager => 1,
            Kind::Rts => 2,
            Kind::Cts => 3,
            Kind::Data => 4,
            Kind::Credit => 5,
            Kind::Put => 6,
            Kind::Lock => 7,
            Kind::Answer => 8,
            Kind::Get => 9,
            Kind::DataPart => 10,
        }
    }

    /// The kind a wire byte stands for, if it is one this version knows.
    pub const fn from_wire(byte: u8) -> Option<Self> {
        match byte {
            1 => Some(Kind::Eager),
            2 => Some(Kind::Rts),
            3 => Some(Kind::Cts),
            4 => Some(Kind::Data),
            5 => Some(Kind::Credit),
            6 => Some(Kind::Put),
            7 => Some(Kind::Lock),
            8 => Some(Kind::Answer),
            9 => Some(Kind::Get),
            10 => Some(Kind::DataPart),
            _ => None,
        }
    }

    /// Whether `length` payload bytes follow the header.
    pub const fn carries_payload(self) -> bool {
        matches!(
            self,
            Kind::Eager | Kind::Data | Kind::DataPart | Kind::Put | Kind::Answer
        )
    }

    /// Whether `length` is the size of an MPI message (checked against the
    /// receiver's maximum).
    pub const fn sizes_a_message(self) -> bool {
        matches!(
            self,
            Kind::Eager
                | Kind::Rts
                | Kind::Data
                | Kind::DataPart
                | Kind::Put
                | Kind::Answer
                | Kind::Get
        )
    }
}

/// A decoded header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Header {
    /// What the message is.
    pub kind: Kind,
    /// Source, tag and context of the message.
    pub envelope: Envelope,
    /// Number of payload bytes after the header.
    pub len: u64,
    /// Per-connection message sequence number.
    pub seq: u32,
    /// Offer id or message count, by kind (zero for eager messages).
    pub reference: u32,
}

/// Why a header was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WireError {
    /// The first two bytes are not [`MAGIC`].
    BadMagic([u8; 2]),
    /// The version byte is not [`VERSION`].
    BadVersion(u8),
    /// The kind byte names no kind this version knows.
    UnknownKind(u8),
    /// The payload length exceeds the configured maximum.
    TooLong {
        /// Length announced by the header.
        len: u64,
        /// The receiver's maximum.
        max: u64,
    },
    /// The sequence number is not the next one on this connection.
    SequenceGap {
        /// The number the receiver expected.
        expected: u32,
        /// The number the header carried.
        found: u32,
    },
}

impl core::fmt::Display for WireError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            WireError::BadMagic(m) => write!(f, "bad magic {:02x}{:02x}", m[0], m[1]),
            WireError::BadVersion(v) => write!(f, "unsupported header version {v}"),
            WireError::UnknownKind(k) => write!(f, "unknown message kind {k}"),
            WireError::TooLong { len, max } => {
                write!(f, "payload length {len} exceeds maximum {max}")
            }
            WireError::SequenceGap { expected, found } => {
                write!(f, "sequence gap: expected {expected}, found {found}")
            }
        }
    }
}

impl Header {
    /// The header as it goes on the wire.
    pub const fn encode(&self) -> [u8; HEADER_LEN] {
        let [m0, m1] = MAGIC;
        let [s0, s1, s2, s3] = self.envelope.source.to_le_bytes();
        let [t0, t1, t2, t3] = self.envelope.tag.to_le_bytes();
        let [c0, c1, c2, c3] = self.envelope.context.to_le_bytes();
        let [l0, l1, l2, l3, l4, l5, l6, l7] = self.len.to_le_bytes();
        let [q0, q1, q2, q3] = self.seq.to_le_bytes();
        let [r0, r1, r2, r3] = self.reference.to_le_bytes();
        [
            m0,
            m1,
            VERSION,
            self.kind.to_wire(),
            s0,
            s1,
            s2,
            s3,
            t0,
            t1,
            t2,
            t3,
            c0,
            c1,
            c2,
            c3,
            l0,
            l1,
            l2,
            l3,
            l4,
            l5,
            l6,
            l7,
            q0,
            q1,
            q2,
            q3,
            r0,
            r1,
            r2,
            r3,
        ]
    }

    /// Decodes the fields of a header and checks what a header alone can
    /// show: magic, version and kind. The length limit and the
    /// sequence number need connection state; [`Decoder`] checks them.
    pub const fn decode(bytes: &[u8; HEADER_LEN]) -> Result<Self, WireError> {
        let [m0, m1, version, kind, s0, s1, s2, s3, t0, t1, t2, t3, c0, c1, c2, c3, l0, l1, l2, l3, l4, l5, l6, l7, q0, q1, q2, q3, r0, r1, r2, r3] =
            *bytes;
        if m0 != MAGIC[0] || m1 != MAGIC[1] {
            return Err(WireError::BadMagic([m0, m1]));
        }
        if version != VERSION {
            return Err(WireError::BadVersion(version));
        }
        let Some(kind) = Kind::from_wire(kind) else {
            return Err(WireError::UnknownKind(kind));
        };
        Ok(Self {
            kind,
            envelope: Envelope {
                source: u32::from_le_bytes([s0, s1, s2, s3]),
                tag: u32::from_le_bytes([t0, t1, t2, t3]),
                context: u32::from_le_bytes([c0, c1, c2, c3]),
            },
            len: u64::from_le_bytes([l0, l1, l2, l3, l4, l5, l6, l7]),
            seq: u32::from_le_bytes([q0, q1, q2, q3]),
            reference: u32::from_le_bytes([r0, r1, r2, r3]),
        })
    }

    /// Payload bytes after the header: `len` for kinds that carry payload,
    /// else none.
    pub const fn payload_len(&self) -> u64 {
        if self.kind.carries_payload() {
            self.len
        } else {
            0
        }
    }

    /// The receiver's token a [`Kind::Cts`] or [`Kind::Data`] carries in
    /// its tag (low half) and context (high half).
    pub const fn token(&self) -> u64 {
        (self.envelope.context as u64).rotate_left(32) | self.envelope.tag as u64
    }

    /// Where a [`Kind::Put`]'s payload starts in its window, in bytes:
    /// the tag (so a window the module places into is below 4 GiB).
    pub const fn window_offset(&self) -> u64 {
        self.envelope.tag as u64
    }

    /// The envelope that carries `token` from `source`
    /// (see [`Header::token`]).
    pub const fn token_envelope(source: u32, token: u64) -> Envelope {
        Envelope {
            source,
            tag: token as u32,
            context: token.rotate_left(32) as u32,
        }
    }
}

/// What a receiver accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Limits {
    /// Largest message accepted (eager payload, rendezvous size or data).
    pub max_payload: u64,
}

/// The sending half of one connection: numbers the headers it encodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Encoder {
    next_seq: u32,
}

impl Encoder {
    /// An encoder for a fresh connection (first sequence number 0).
    pub const fn new() -> Self {
        Self { next_seq: 0 }
    }

    /// The header for the next message on this connection, with
    /// reference 0.
    pub fn encode(&mut self, kind: Kind, envelope: Envelope, len: u64) -> [u8; HEADER_LEN] {
        self.encode_ref(kind, envelope, len, 0)
    }

    /// The header for the next message on this connection.
    pub fn encode_ref(
        &mut self,
        kind: Kind,
        envelope: Envelope,
        len: u64,
        reference: u32,
    ) -> [u8; HEADER_LEN] {
        let seq = self.next_seq;
        self.next_seq = seq.wrapping_add(1);
        Header {
            kind,
            envelope,
            len,
            seq,
            reference,
        }
        .encode()
    }
}

/// The receiving half of one connection: decodes and checks each header
/// against the limits and the expected sequence number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decoder {
    limits: Limits,
    next_seq: u32,
}

impl Decoder {
    /// A decoder for a fresh connection (first sequence number 0).
    pub const fn new(limits: Limits) -> Self {
        Self {
            limits,
            next_seq: 0,
        }
    }

    /// Decodes and checks one header. On success the next header must carry
    /// the following sequence number; on error nothing changes.
    pub fn decode(&mut self, bytes: &[u8; HEADER_LEN]) -> Result<Header, WireError> {
        let header = Header::decode(bytes)?;
        if header.kind.sizes_a_message() && header.len > self.limits.max_payload {
            return Err(WireError::TooLong {
                len: header.len,
                max: self.limits.max_payload,
            });
        }
        if header.seq != self.next_seq {
            return Err(WireError::SequenceGap {
                expected: self.next_seq,
                found: header.seq,
            });
        }
        self.next_seq = self.next_seq.wrapping_add(1);
        Ok(header)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ENV: Envelope = Envelope {
        source: 0x0102_0304,
        tag: 0x0a0b_0c0d,
        context: 0x1122_3344,
    };
    const LIMITS: Limits = Limits {
        max_payload: 1 << 20,
    };

    #[test]
    fn layout_matches_the_diagram() {
        let h = Header {
            kind: Kind::Eager,
            envelope: ENV,
            len: 0x0807_0605_0403_0201,
            seq: 0xdead_beef,
            reference: 0x0c0b_0a09,
        };
        let b = h.encode();
        assert_eq!(&b[0..4], &[b'O', b'2', 2, 1]);
        assert_eq!(&b[4..8], &[4, 3, 2, 1]);
        assert_eq!(&b[8..12], &[0x0d, 0x0c, 0x0b, 0x0a]);
        assert_eq!(&b[12..16], &[0x44, 0x33, 0x22, 0x11]);
        assert_eq!(&b[16..24], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(&b[24..28], &[0xef, 0xbe, 0xad, 0xde]);
        assert_eq!(&b[28..32], &[9, 10, 11, 12]);
        assert_eq!(Header::decode(&b), Ok(h));
    }

    #[test]
    fn every_kind_round_trips_and_only_data_kinds_carry_payload() {
        let kinds = [
            Kind::Eager,
            Kind::Rts,
            Kind::Cts,
            Kind::Data,
            Kind::Credit,
            Kind::Put,
            Kind::DataPart,
        ];
        for kind in kinds {
            let b = Encoder::new().encode_ref(kind, ENV, 7, 3);
            let h = Header::decode(&b).expect("decodes");
            assert_eq!((h.kind, h.len, h.reference), (kind, 7, 3));
            let payload = matches!(
                kind,
                Kind::Eager | Kind::Data | Kind::DataPart | Kind::Put | Kind::Answer
            );
            assert_eq!(h.payload_len(), if payload { 7 } else { 0 }, "{kind:?}");
        }
        assert_eq!(Kind::from_wire(0), None);
        assert_eq!(Kind::from_wire(11), None);
    }

    #[test]
    fn a_lock_answer_round_trips() {
        let a = LockAnswer {
            status: LockAnswer::REFUSED,
            refused_puts: 0x0102_0304,
        };
        assert_eq!(a.encode(), [1, 0, 0, 0, 4, 3, 2, 1]);
        assert_eq!(LockAnswer::decode(&a.encode()), a);
    }

    #[test]
    fn a_token_travels_in_tag_and_context() {
        let token = 0x8765_4321_0fed_cba9;
        let env = Header::token_envelope(4, token);
        let h = Header::decode(&Encoder::new().encode(Kind::Cts, env, 1)).expect("decodes");
        assert_eq!((h.token(), h.envelope.source), (token, 4));
    }

    #[test]
    fn a_control_length_is_not_a_message_size() {
        let mut dec = Decoder::new(LIMITS);
        let mut enc = Encoder::new();
        let credit = enc.encode(Kind::Credit, ENV, LIMITS.max_payload + 1);
        assert!(dec.decode(&credit).is_ok());
        let rts = enc.encode(Kind::Rts, ENV, LIMITS.max_payload + 1);
        assert!(matches!(dec.decode(&rts), Err(WireError::TooLong { .. })));
    }

    #[test]
    fn each_malformation_has_its_error() {
        let good = Encoder::new().encode(Kind::Eager, ENV, 5);
        let mut b = good;
        b[1] = b'3';
        assert_eq!(Header::decode(&b), Err(WireError::BadMagic(*b"O3")));
        let mut b = good;
        b[2] = 1;
        assert_eq!(Header::decode(&b), Err(WireError::BadVersion(1)));
        let mut b = good;
        b[3] = 200;
        assert_eq!(Header::decode(&b), Err(WireError::UnknownKind(200)));
    }

    #[test]
    fn decoder_checks_length_and_sequence() {
        let mut enc = Encoder::new();
        let mut dec = Decoder::new(LIMITS);
        let first = enc.encode(Kind::Eager, ENV, LIMITS.max_payload);
        assert_eq!(dec.decode(&first).map(|h| h.seq), Ok(0));
        let too_long = enc.encode(Kind::Eager, ENV, LIMITS.max_payload + 1);
        assert_eq!(
            dec.decode(&too_long),
            Err(WireError::TooLong {
                len: LIMITS.max_payload + 1,
                max: LIMITS.max_payload
            })
        );
        // seq 1 was refused, so seq 2 is a gap.
        let skipped = enc.encode(Kind::Eager, ENV, 0);
        assert_eq!(
            dec.decode(&skipped),
            Err(WireError::SequenceGap {
                expected: 1,
                found: 2
            })
        );
        // A replay of the accepted header is a gap too.
        assert_eq!(
            dec.decode(&first),
            Err(WireError::SequenceGap {
                expected: 1,
                found: 0
            })
        );
    }

    #[test]
    fn sequence_wraps() {
        let mut enc = Encoder { next_seq: u32::MAX };
        let mut dec = Decoder {
            limits: LIMITS,
            next_seq: u32::MAX,
        };
        for want in [u32::MAX, 0, 1] {
            let b = enc.encode(Kind::Eager, ENV, 0);
            assert_eq!(dec.decode(&b).map(|h| h.seq), Ok(want));
        }
    }

    #[test]
    fn errors_display() {
        use std::string::ToString;
        let e = WireError::SequenceGap {
            expected: 1,
            found: 3,
        };
        assert_eq!(e.to_string(), "sequence gap: expected 1, found 3");
    }
}
