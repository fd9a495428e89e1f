//! The per-connection stream reassembler: TCP bytes in, message events out.
//!
//! TCP hands the receiver arbitrary pieces of the byte stream: one byte, a
//! header split across two segments, or several whole messages in one
//! chunk. [`Reassembler::feed`] takes whatever the caller has and returns
//! at most one [`Event`] together with how many bytes it consumed:
//!
//! - [`Event::Header`]: a complete, checked header (the only bytes the
//!   reassembler ever copies: at most [`HEADER_LEN`] of them).
//! - [`Event::Payload`]: a piece of the current message's payload, borrowed
//!   straight from the input, with its offset within the message, so the
//!   caller copies it to its final place (a posted receive's pages or the
//!   unexpected-message dump area) without a staging buffer.
//! - [`Event::End`]: the message is complete (also right after the header
//!   of a zero-length message). It consumes nothing.
//!
//! Like quinn-proto, it contains no I/O: the caller decides how much to
//! offer. To apply back-pressure (the destination is full, or a header
//! found no room in the matching engine), the caller simply stops calling
//! `feed`, or offers a shorter prefix (`&input[..room]`), and reports to
//! TCP only the bytes consumed so far; the rest stays in the socket. A later
//! call resumes exactly where the stream stopped. [`Reassembler::current`]
//! gives back the message in progress so the caller can retry the decision
//! it could not make before.
//!
//! Once a header is refused ([`WireError`]), the connection is failed for
//! good: framing is lost and every later `feed` returns the same error.
//!
//! # Examples
//!
//! ```
//! use o2g_core::proto::envelope::Envelope;
//! use o2g_core::proto::stream::{Event, Reassembler};
//! use o2g_core::proto::wire::{Encoder, Kind, Limits};
//!
//! let env = Envelope { source: 1, tag: 7, context: 0 };
//! let mut stream = Encoder::new().encode(Kind::Eager, env, 5).to_vec();
//! stream.extend_from_slice(b"hello");
//!
//! let mut rx = Reassembler::new(Limits { max_payload: 1 << 20 });
//! let mut dest = [0u8; 5];
//! // Feed in 3-byte chunks, as a slow network might deliver them.
//! for chunk in stream.chunks(3) {
//!     let mut rest = chunk;
//!     loop {
//!         let step = rx.feed(rest).expect("well-formed stream");
//!         rest = &rest[step.consumed..];
//!         match step.event {
//!             Some(Event::Header(h)) => assert_eq!(h.envelope, env),
//!             Some(Event::Payload { offset, data }) => {
//!                 let at = offset as usize;
//!                 dest[at..at + data.len()].copy_from_slice(data);
//!             }
//!             Some(Event::End(_)) => {}
//!             None => break, // needs more input
//!         }
//!     }
//! }
//! assert_eq!(&dest, b"hello");
//! ```

use super::wire::{Decoder, Header, Limits, WireError, HEADER_LEN};

/// What the bytes just fed mean.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event<'a> {
    /// A complete header; `header.payload_len()` payload bytes follow.
    Header(Header),
    /// A piece of the current message's payload.
    Payload {
        /// Offset of `data[0]` within the message's payload.
        offset: u64,
        /// The bytes, borrowed from the input.
        data: &'a [u8],
    },
    /// The message with this header is complete.
    End(Header),
}

/// The result of one [`Reassembler::feed`] call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step<'a> {
    /// How many bytes from the front of the input were used; the caller
    /// offers the rest (`&input[consumed..]`) next.
    pub consumed: usize,
    /// What happened, or `None` when more input is needed (then every byte
    /// offered was consumed).
    pub event: Option<Event<'a>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Collecting a header; `fill` bytes of it are buffered.
    Header { fill: usize },
    /// Passing payload through; `offset` bytes of it are already out.
    Payload { header: Header, offset: u64 },
    /// The payload is complete; the next call reports the end.
    End { header: Header },
    /// A header was refused; the connection is unusable.
    Failed(WireError),
}

/// Reassembles one connection's byte stream into message events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reassembler {
    decoder: Decoder,
    buf: [u8; HEADER_LEN],
    state: State,
}

impl Reassembler {
    /// A reassembler for a fresh connection, accepting payloads of at most
    /// `limits.max_payload` bytes.
    pub const fn new(limits: Limits) -> Self {
        Self {
            decoder: Decoder::new(limits),
            buf: [0; HEADER_LEN],
            state: State::Header { fill: 0 },
        }
    }

    /// Consumes a prefix of `input` and reports at most one event.
    ///
    /// Call it again with `&input[step.consumed..]` until it returns no
    /// event; stop earlier to leave bytes unread (back-pressure). Offering
    /// a prefix of the available bytes limits how much payload one event
    /// carries.
    ///
    /// # Errors
    ///
    /// The [`WireError`] of the header that was refused, now and on every
    /// later call.
    pub fn feed<'a>(&mut self, input: &'a [u8]) -> Result<Step<'a>, WireError> {
        match self.state {
            State::Failed(err) => Err(err),
            State::End { header } => {
                self.state = State::Header { fill: 0 };
                Ok(Step {
                    consumed: 0,
                    event: Some(Event::End(header)),
                })
            }
            State::Header { fill } => self.feed_header(fill, input),
            State::Payload { .. } => Ok(self.feed_payload(input)),
        }
    }

    fn feed_header<'a>(&mut self, fill: usize, input: &'a [u8]) -> Result<Step<'a>, WireError> {
        let consumed = match self.buf.get_mut(fill..) {
            Some(room) => room
                .iter_mut()
                .zip(input)
                .map(|(dst, src)| *dst = *src)
                .count(),
            None => 0,
        };
        let fill = fill.saturating_add(consumed);
        if fill < HEADER_LEN {
            self.state = State::Header { fill };
            return Ok(Step {
                consumed,
                event: None,
            });
        }
        match self.decoder.decode(&self.buf) {
            Ok(header) => {
                self.state = if header.payload_len() == 0 {
                    State::End { header }
                } else {
                    State::Payload { header, offset: 0 }
                };
                Ok(Step {
                    consumed,
                    event: Some(Event::Header(header)),
                })
            }
            Err(err) => {
                self.state = State::Failed(err);
                Err(err)
            }
        }
    }

    fn feed_payload<'a>(&mut self, input: &'a [u8]) -> Step<'a> {
        match self.take_payload(input.len()) {
            Some((offset, take)) => Step {
                consumed: take,
                event: input
                    .get(..take)
                    .map(|data| Event::Payload { offset, data }),
            },
            None => Step {
                consumed: 0,
                event: None,
            },
        }
    }

    /// Accepts up to `available` payload bytes that the caller copies
    /// itself, straight from its own source (the kernel module copies from
    /// socket buffers into the destination pages, with no staging buffer).
    ///
    /// Returns the offset within the message of the first accepted byte and
    /// how many bytes were accepted, or `None` when the stream is not inside
    /// a payload (use [`Reassembler::feed`] there) or `available` is zero.
    /// Afterwards the stream is where `feed` would have left it after a
    /// [`Event::Payload`] of the same length.
    pub fn take_payload(&mut self, available: usize) -> Option<(u64, usize)> {
        let State::Payload { header, offset } = self.state else {
            return None;
        };
        let remaining = header.payload_len().saturating_sub(offset);
        let take = usize::try_from(remaining).map_or(available, |r| r.min(available));
        if take == 0 {
            return None;
        }
        // take <= remaining, so this cannot pass the payload's length.
        let end = offset.saturating_add(take as u64);
        self.state = if end >= header.payload_len() {
            State::End { header }
        } else {
            State::Payload {
                header,
                offset: end,
            }
        };
        Some((offset, take))
    }

    /// The message whose payload is being received, with how many payload
    /// bytes were already handed out; `None` between messages.
    pub const fn current(&self) -> Option<(Header, u64)> {
        match self.state {
            State::Payload { header, offset } => Some((header, offset)),
            State::End { header } => Some((header, header.payload_len())),
            State::Header { .. } | State::Failed(_) => None,
        }
    }

    /// The error that failed this connection, if any.
    pub const fn error(&self) -> Option<WireError> {
        match self.state {
            State::Failed(err) => Some(err),
            _ => None,
        }
    }

    /// Whether the stream is exactly at a message boundary: no header bytes
    /// buffered, no message in progress, not failed. A connection may be
    /// closed cleanly only here.
    pub const fn at_boundary(&self) -> bool {
        matches!(self.state, State::Header { fill: 0 })
    }
}

#[cfg(test)]
mod tests {
    use super::super::envelope::Envelope;
    use super::super::wire::{Encoder, Kind};
    use super::*;
    use std::vec::Vec;

    const LIMITS: Limits = Limits { max_payload: 64 };

    fn env(tag: u32) -> Envelope {
        Envelope {
            source: 2,
            tag,
            context: 9,
        }
    }

    /// Feeds `input` whole and returns the events in a comparable form.
    fn drain(rx: &mut Reassembler, mut input: &[u8]) -> Vec<(char, u64, Vec<u8>)> {
        let mut out = Vec::new();
        loop {
            let step = rx.feed(input).unwrap();
            input = &input[step.consumed..];
            match step.event {
                Some(Event::Header(h)) => out.push(('H', h.len, Vec::new())),
                Some(Event::Payload { offset, data }) => out.push(('P', offset, data.to_vec())),
                Some(Event::End(h)) => out.push(('E', u64::from(h.envelope.tag), Vec::new())),
                None => return out,
            }
        }
    }

    #[test]
    fn take_payload_walks_the_stream_like_feed() {
        let mut enc = Encoder::new();
        let mut s = enc.encode(Kind::Eager, env(1), 5).to_vec();
        s.extend_from_slice(b"hello");
        s.extend_from_slice(&enc.encode(Kind::Eager, env(2), 2));
        s.extend_from_slice(b"ok");
        let mut rx = Reassembler::new(LIMITS);
        assert_eq!(rx.take_payload(10), None, "no payload before a header");
        let step = rx.feed(&s).unwrap();
        assert_eq!(step.consumed, HEADER_LEN);
        assert!(matches!(step.event, Some(Event::Header(h)) if h.len == 5));
        assert_eq!(rx.take_payload(0), None);
        assert_eq!(rx.take_payload(3), Some((0, 3)));
        assert_eq!(
            rx.take_payload(100),
            Some((3, 2)),
            "stops at the message end"
        );
        assert_eq!(rx.take_payload(100), None, "the end comes from feed");
        assert!(matches!(rx.feed(&[]).unwrap().event, Some(Event::End(_))));
        let rest = &s[HEADER_LEN + 5..];
        assert_eq!(drain(&mut rx, rest)[1], ('P', 0, b"ok".to_vec()));
        assert!(rx.at_boundary());
    }

    #[test]
    fn many_messages_in_one_chunk() {
        let mut enc = Encoder::new();
        let mut s = enc.encode(Kind::Eager, env(1), 3).to_vec();
        s.extend_from_slice(b"abc");
        s.extend_from_slice(&enc.encode(Kind::Eager, env(2), 0));
        s.extend_from_slice(&enc.encode(Kind::Eager, env(3), 1));
        s.push(b'z');
        let mut rx = Reassembler::new(LIMITS);
        let ev = drain(&mut rx, &s);
        assert_eq!(
            ev,
            [
                ('H', 3, Vec::new()),
                ('P', 0, b"abc".to_vec()),
                ('E', 1, Vec::new()),
                ('H', 0, Vec::new()),
                ('E', 2, Vec::new()),
                ('H', 1, Vec::new()),
                ('P', 0, b"z".to_vec()),
                ('E', 3, Vec::new()),
            ]
        );
        assert!(rx.at_boundary());
    }

    #[test]
    fn one_byte_at_a_time() {
        let mut s = Encoder::new().encode(Kind::Eager, env(1), 4).to_vec();
        s.extend_from_slice(b"wxyz");
        let mut rx = Reassembler::new(LIMITS);
        let mut ev = Vec::new();
        for b in &s {
            ev.extend(drain(&mut rx, core::slice::from_ref(b)));
        }
        let payload: Vec<_> = ev.iter().filter(|e| e.0 == 'P').map(|e| e.1).collect();
        assert_eq!(payload, [0, 1, 2, 3]);
        assert_eq!(ev.first().map(|e| e.0), Some('H'));
        assert_eq!(ev.last().map(|e| e.0), Some('E'));
    }

    #[test]
    fn stopping_mid_payload_loses_nothing() {
        let mut s = Encoder::new().encode(Kind::Eager, env(1), 6).to_vec();
        s.extend_from_slice(b"abcdef");
        let mut rx = Reassembler::new(LIMITS);
        let step = rx.feed(&s).unwrap();
        assert_eq!(step.consumed, HEADER_LEN);
        // Room for 2 bytes only: offer a prefix, then stop.
        let rest = &s[HEADER_LEN..];
        let step = rx.feed(&rest[..2]).unwrap();
        assert_eq!(
            step.event,
            Some(Event::Payload {
                offset: 0,
                data: b"ab"
            })
        );
        assert_eq!(rx.current().map(|(h, off)| (h.len, off)), Some((6, 2)));
        // Later, resume with the bytes that stayed in the socket.
        let ev = drain(&mut rx, &rest[2..]);
        assert_eq!(ev[0], ('P', 2, b"cdef".to_vec()));
        assert_eq!(ev[1].0, 'E');
        assert!(rx.current().is_none());
    }

    #[test]
    fn a_refused_header_fails_the_connection_for_good() {
        let mut s = Encoder::new().encode(Kind::Eager, env(1), LIMITS.max_payload + 1);
        let mut rx = Reassembler::new(LIMITS);
        let err = WireError::TooLong {
            len: LIMITS.max_payload + 1,
            max: LIMITS.max_payload,
        };
        assert_eq!(rx.feed(&s), Err(err));
        s[19] = 0;
        assert_eq!(rx.feed(&s), Err(err));
        assert_eq!(rx.feed(&[]), Err(err));
        assert_eq!(rx.error(), Some(err));
        assert!(!rx.at_boundary());
    }

    #[test]
    fn empty_input_is_harmless() {
        let mut rx = Reassembler::new(LIMITS);
        assert_eq!(
            rx.feed(&[]),
            Ok(Step {
                consumed: 0,
                event: None
            })
        );
        assert!(rx.at_boundary());
    }
}
