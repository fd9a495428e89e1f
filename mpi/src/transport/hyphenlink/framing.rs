//! How an MPI message rides a ring: frames.
//!
//! A message to rank `d` is written by its sender into the ring `d` keeps
//! for it, which has exactly one writer. The MPI envelope travels in the
//! ring message header: `src` = the sender's world rank, `tag` = the tag,
//! `user` = context id (low 32 bits) and a frame kind (high 32 bits). A
//! message that fits the ring's largest payload is one `WHOLE` frame; a
//! longer one is a `FIRST` frame (8-byte little-endian total length, then
//! data) followed by `CONT` frames. A sender writes the frames of one
//! message back to back (sends to one destination are queued in order), so
//! the receiver only tracks "the message in progress" per ring. Chunks feed
//! the matcher's streaming API (`arrive` / `payload` / `end`) straight from
//! the ring ([`o2g_hyphen::ring::Message::payload`] is in place), so a
//! 1 GiB message never needs a second staging buffer on the wire side.
//! When the matcher's unexpected queue is full, a message is copied to a
//! per-sender overflow list (kept in order) instead ([`Held`]), as the
//! socket transports do.
//!
//! Under the timing model (`O2G_MODEL_TIME=1`) every frame is **timed**:
//! its kind carries [`TIMED`] and its data starts with the frame's
//! modelled arrival (`frame_clock.rs`). Every rank of a job must agree:
//! a timed frame at an untimed rank, or the reverse, is a protocol error
//! naming the variable.

use std::collections::VecDeque;

use o2g_core::proto::envelope::Envelope;
use o2g_hyphen::ring::{self, MsgInfo, RingWriter};

use super::frame_clock::{FrameClock, STAMP};
use crate::transport::matcher::{Matcher, Sink};

/// Frame kinds, in the high half of the ring header's user word.
const KIND_WHOLE: u32 = 1;
const KIND_FIRST: u32 = 2;
const KIND_CONT: u32 = 3;
/// Bytes of the total-length prefix of a `FIRST` frame.
const LEN_PREFIX: usize = 8;
/// Flag in the kind of a frame that starts with its modelled arrival.
const TIMED: u32 = 1 << 31;

/// Where the bytes of the message arriving from a peer go.
pub(super) enum Rx {
    Matcher { sink: Sink, left: usize },
    Overflow { left: usize },
}

/// A message the matcher had no room for, kept in arrival order.
pub(super) struct Held {
    pub(super) env: Envelope,
    pub(super) data: Vec<u8>,
    pub(super) complete: bool,
}

/// How far a message has been written into a ring.
pub(super) struct Cursor {
    env: Envelope,
    pub(super) total: usize,
    /// Payload bytes written so far.
    pub(super) done: usize,
    /// Whether its first frame is in.
    pub(super) started: bool,
}

impl Cursor {
    pub(super) fn new(env: Envelope, total: usize) -> Self {
        Self {
            env,
            total,
            done: 0,
            started: false,
        }
    }
}

/// Writes frames of `cur` into `w` until the message is all in (`true`)
/// or the ring is full (`false`). `rest` is the payload from `cur.done` on.
/// With `clock`, every frame is timed (the module docs).
pub(super) fn push(
    w: &RingWriter,
    cur: &mut Cursor,
    rest: &[u8],
    scratch: &mut Vec<u8>,
    clock: Option<&FrameClock>,
) -> o2g_hyphen::Result<bool> {
    let stamp = if clock.is_some() { STAMP } else { 0 };
    let max = w.max_payload() - stamp;
    let start = cur.done;
    loop {
        let rest = &rest[cur.done - start..];
        if cur.started && rest.is_empty() {
            return Ok(true);
        }
        let (kind, n) = if cur.started {
            (KIND_CONT, rest.len().min(max))
        } else if cur.total <= max {
            (KIND_WHOLE, cur.total)
        } else {
            (KIND_FIRST, max - LEN_PREFIX)
        };
        let env = ring::RingEnvelope {
            src: cur.env.source,
            tag: cur.env.tag,
            user: u64::from(kind | if stamp > 0 { TIMED } else { 0 }) << 32
                | u64::from(cur.env.context),
        };
        let prefix = if kind == KIND_FIRST { LEN_PREFIX } else { 0 };
        let frame = ring::message_bytes(stamp + prefix + n);
        let sent = if stamp + prefix == 0 {
            w.try_send(&env, &rest[..n])
        } else {
            scratch.clear();
            if let Some(c) = clock {
                scratch.extend_from_slice(&c.arrival(frame).to_le_bytes());
            }
            if prefix > 0 {
                scratch.extend_from_slice(&(cur.total as u64).to_le_bytes());
            }
            scratch.extend_from_slice(&rest[..n]);
            w.try_send(&env, scratch)
        };
        match sent {
            Ok(()) => {
                cur.started = true;
                cur.done += n;
                if let Some(c) = clock {
                    c.sent(frame);
                }
            }
            Err(o2g_hyphen::Error::RingFull { .. }) => return Ok(false),
            Err(e) => return Err(e),
        }
    }
}

/// Starts a message of `total` bytes from a peer: into the matcher, or
/// behind the peer's overflowed messages.
fn start(
    matcher: &mut Matcher,
    rx: &mut Option<Rx>,
    overflow: &mut VecDeque<Held>,
    env: Envelope,
    total: usize,
    max_message: u64,
) -> Result<(), String> {
    if total as u64 > max_message {
        return Err(format!(
            "a message of {total} bytes exceeds O2G_MAX_MESSAGE ({max_message})"
        ));
    }
    let sink = if overflow.is_empty() {
        matcher.arrive(env, total as u64).ok()
    } else {
        None
    };
    *rx = Some(match sink {
        Some(sink) => Rx::Matcher { sink, left: total },
        None => {
            overflow.push_back(Held {
                env,
                data: Vec::with_capacity(total.min(1 << 20)),
                complete: false,
            });
            Rx::Overflow { left: total }
        }
    });
    Ok(())
}

/// Places one received frame from rank `from`; with `clock`, frames are
/// timed and the receiver catches up with each one's arrival.
#[allow(clippy::too_many_arguments)] // the receiver's state, field by field
pub(super) fn accept(
    matcher: &mut Matcher,
    rx: &mut Option<Rx>,
    overflow: &mut VecDeque<Held>,
    from: u32,
    info: &MsgInfo,
    bytes: &[u8],
    max_message: u64,
    clock: Option<&FrameClock>,
) -> Result<(), String> {
    let e = info.envelope;
    if e.src != from {
        return Err(format!(
            "a frame in rank {from}'s ring names source {}",
            e.src
        ));
    }
    let raw = (e.user >> 32) as u32;
    let (kind, timed) = (raw & !TIMED, raw & TIMED != 0);
    let bytes = match (timed, clock) {
        (false, None) => bytes,
        (true, Some(c)) => {
            let Some((at, rest)) = bytes.split_first_chunk::<STAMP>() else {
                return Err("a timed frame without its arrival".into());
            };
            c.received(u64::from_le_bytes(*at), ring::message_bytes(bytes.len()));
            rest
        }
        (sender, _) => {
            return Err(format!(
                "rank {from} has O2G_MODEL_TIME={} and this rank {}: every rank must set the same",
                u8::from(sender),
                u8::from(!sender)
            ))
        }
    };
    let env = Envelope {
        source: e.src,
        tag: e.tag,
        context: e.user as u32,
    };
    let data = match (kind, rx.is_some()) {
        (KIND_WHOLE, false) => {
            start(matcher, rx, overflow, env, bytes.len(), max_message)?;
            bytes
        }
        (KIND_FIRST, false) => {
            let Some((len, data)) = bytes.split_first_chunk::<LEN_PREFIX>() else {
                return Err("a FIRST frame without its length".into());
            };
            let total = usize::try_from(u64::from_le_bytes(*len)).unwrap_or(usize::MAX);
            if total <= data.len() {
                return Err(format!(
                    "a FIRST frame of {} bytes announces only {total}",
                    data.len()
                ));
            }
            start(matcher, rx, overflow, env, total, max_message)?;
            data
        }
        (KIND_CONT, true) => bytes,
        (k, busy) => {
            return Err(format!(
                "frame kind {k} unexpected (a message in progress: {busy})"
            ))
        }
    };
    let left = match rx {
        Some(Rx::Matcher { left, .. } | Rx::Overflow { left }) => left,
        None => unreachable!("a message is in progress here"),
    };
    if data.len() > *left {
        return Err(format!(
            "{} bytes arrived for a message with {} left",
            data.len(),
            *left
        ));
    }
    *left -= data.len();
    let finished = *left == 0;
    match rx {
        Some(Rx::Matcher { sink, .. }) => {
            matcher.payload(sink, data);
            if finished {
                if let Some(Rx::Matcher { sink, .. }) = rx.take() {
                    matcher.end(sink);
                }
            }
        }
        Some(Rx::Overflow { .. }) => {
            if let Some(h) = overflow.back_mut() {
                h.data.extend_from_slice(data);
                h.complete = finished;
            }
        }
        None => {}
    }
    if finished {
        *rx = None;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    use o2g_core::proto::envelope::{Selector, SourceSel, TagSel};
    use o2g_hyphen::ring::{Filter, RingReader};
    use o2g_hyphen::wait::WaitPolicy;
    use o2g_hyphen::Board;
    use o2g_nicmem::Region;

    use super::*;
    use crate::transport::hyphenlink::setup::{board_config, footprint, RING_MIN};
    use crate::transport::matcher::RecvOutcome;

    fn board(capacity: usize) -> Board {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let cfg = board_config(2, capacity);
        let name = format!(
            "o2g-hl-test-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let region = Region::create_shm(&name, footprint(&cfg).unwrap().1).unwrap();
        Region::unlink_shm(&name).unwrap();
        Board::create(Arc::new(region), cfg).unwrap()
    }

    /// Places every frame waiting in `r` into `m`.
    fn drain(r: &RingReader, m: &mut Matcher, rx: &mut Option<Rx>, ov: &mut VecDeque<Held>) {
        while let Some(msg) = r.try_recvs(Filter::ANY).unwrap() {
            accept(m, rx, ov, 0, msg.info(), msg.payload(), u64::MAX, None).unwrap();
            msg.done().unwrap();
        }
    }

    #[test]
    fn chunked_messages_survive_a_full_ring_and_arrive_whole_and_in_order() {
        let b = board(RING_MIN);
        let p = WaitPolicy::polling(Duration::from_secs(1));
        let w = b.ring_writer(1, 0, p).unwrap();
        let r = b.ring_reader(1, 0, p).unwrap();
        let mut m = Matcher::new();
        let (mut rx, mut ov, mut scratch) = (None, VecDeque::new(), Vec::new());
        let sizes = [0usize, 5, w.max_payload(), w.max_payload() + 1, 100_000];
        let msgs: Vec<Vec<u8>> = sizes
            .iter()
            .map(|&n| (0..n).map(|i| (i * 7 + n) as u8).collect())
            .collect();
        let sel = Selector {
            source: SourceSel::Any,
            tag: TagSel::Any,
            context: 4,
        };
        let tokens: Vec<_> = msgs
            .iter()
            .map(|_| m.post(sel, usize::MAX).unwrap())
            .collect();
        let mut fulls = 0;
        for (tag, data) in msgs.iter().enumerate() {
            let env = Envelope {
                source: 0,
                tag: tag as u32,
                context: 4,
            };
            let mut cur = Cursor::new(env, data.len());
            loop {
                let done = cur.done;
                if push(&w, &mut cur, &data[done..], &mut scratch, None).unwrap() {
                    break;
                }
                fulls += 1;
                drain(&r, &mut m, &mut rx, &mut ov);
            }
        }
        drain(&r, &mut m, &mut rx, &mut ov);
        assert!(fulls > 0, "the big message must have filled the ring");
        assert!(rx.is_none() && ov.is_empty());
        for (tag, (t, data)) in tokens.into_iter().zip(&msgs).enumerate() {
            match m.test(t) {
                Some(RecvOutcome::Done {
                    envelope,
                    len,
                    data: got,
                }) => {
                    assert_eq!(envelope.tag, tag as u32);
                    assert_eq!(len, data.len() as u64);
                    assert!(got == *data, "message {tag} content");
                }
                other => panic!("message {tag}: {other:?}"),
            }
        }
    }

    #[test]
    fn timed_frames_carry_their_arrival_and_need_a_timed_receiver() {
        let b = board(RING_MIN);
        let p = WaitPolicy::polling(Duration::from_secs(1));
        let w = b.ring_writer(1, 0, p).unwrap();
        let r = b.ring_reader(1, 0, p).unwrap();
        let (sender, receiver) = (b.node(0, p).unwrap(), b.node(1, p).unwrap());
        let (tx, rx_clock) = (
            FrameClock::new(&sender).unwrap(),
            FrameClock::new(&receiver).unwrap(),
        );
        let env = Envelope {
            source: 0,
            tag: 2,
            context: 0,
        };
        let mut m = Matcher::new();
        let (mut rx, mut ov, mut scratch) = (None, VecDeque::new(), Vec::new());
        let mut cur = Cursor::new(env, 100);
        let frame = ring::message_bytes(STAMP + 100);
        let arrival = tx.arrival(frame);
        assert!(push(&w, &mut cur, &[7; 100], &mut scratch, Some(&tx)).unwrap());
        assert!(sender.now().unwrap() > 0, "the sender paid for the frame");
        let msg = r.try_recvs(Filter::ANY).unwrap().unwrap();
        // An untimed receiver refuses it, naming the variable.
        let e = accept(
            &mut m,
            &mut rx,
            &mut ov,
            0,
            msg.info(),
            msg.payload(),
            1 << 20,
            None,
        )
        .unwrap_err();
        assert!(e.contains("O2G_MODEL_TIME"), "{e}");
        // A timed one catches up with the arrival and takes the 100 bytes.
        accept(
            &mut m,
            &mut rx,
            &mut ov,
            0,
            msg.info(),
            msg.payload(),
            1 << 20,
            Some(&rx_clock),
        )
        .unwrap();
        assert!(receiver.now().unwrap() > arrival);
        assert_eq!(m.probe(Selector::exact(env)), Some((env, 100)));
    }

    #[test]
    fn frames_out_of_protocol_are_refused() {
        let b = board(RING_MIN);
        let p = WaitPolicy::polling(Duration::from_secs(1));
        let w = b.ring_writer(1, 0, p).unwrap();
        let r = b.ring_reader(1, 0, p).unwrap();
        let mut m = Matcher::new();
        let (mut rx, mut ov) = (None, VecDeque::new());
        let mut frame = |src: u32, kind: u32, body: &[u8]| {
            let e = ring::RingEnvelope {
                src,
                tag: 1,
                user: u64::from(kind) << 32,
            };
            w.try_send(&e, body).unwrap();
            let msg = r.try_recvs(Filter::ANY).unwrap().unwrap();
            accept(
                &mut m,
                &mut rx,
                &mut ov,
                0,
                msg.info(),
                msg.payload(),
                16,
                None,
            )
        };
        assert!(frame(0, KIND_CONT, b"x").is_err(), "CONT with nothing open");
        assert!(frame(3, KIND_WHOLE, b"x").is_err(), "wrong source");
        assert!(
            frame(0, KIND_WHOLE, &[0; 17]).is_err(),
            "over O2G_MAX_MESSAGE"
        );
        let mut first = 9u64.to_le_bytes().to_vec();
        first.extend_from_slice(b"abcd");
        frame(0, KIND_FIRST, &first).unwrap();
        assert!(
            frame(0, KIND_WHOLE, b"x").is_err(),
            "WHOLE inside a message"
        );
        assert!(
            frame(0, KIND_CONT, b"123456").is_err(),
            "more than announced"
        );
        frame(0, KIND_CONT, b"12345").unwrap();
        assert!(rx.is_none());
        assert_eq!(
            m.probe(Selector::exact(Envelope {
                source: 0,
                tag: 1,
                context: 0
            })),
            Some((
                Envelope {
                    source: 0,
                    tag: 1,
                    context: 0
                },
                9
            ))
        );
    }
}
