//! Fuzzes the reassembler the way the kernel reads a socket
//! (`kmod/reader.rs`, `consume`): headers through `feed` from a small
//! copy, payload through `take_payload` with the caller copying the bytes
//! itself, the end noticed from `current()` and collected with `feed`.
//!
//! The model is the byte stream itself: every payload byte accepted must be
//! the stream's byte at that position and the message's byte at the
//! offset reported, and the messages (and the error, if any) must be
//! exactly those a plain `feed` over the whole stream yields; for a clean
//! structured stream, exactly those sent. Input byte 0 picks the mode
//! (raw bytes, or `[tag, context, len, payload...]*` messages encoded into
//! a valid stream, optionally with one byte flipped) and, with byte 1,
//! how much the reader is offered at a time.
#![no_main]

mod cuts;

use cuts::Cuts;
use libfuzzer_sys::fuzz_target;
use o2g_core::proto::envelope::Envelope;
use o2g_core::proto::stream::{Event, Reassembler};
use o2g_core::proto::wire::{Encoder, Header, Kind, Limits, WireError, HEADER_LEN};

const LIMITS: Limits = Limits { max_payload: 300 };

type Received = Vec<(Header, Vec<u8>)>;

/// The reference: the whole stream through `feed` alone.
fn by_feed(stream: &[u8]) -> (Received, Option<WireError>) {
    let mut rx = Reassembler::new(LIMITS);
    let mut out: Received = Vec::new();
    let mut rest = stream;
    loop {
        match rx.feed(rest) {
            Err(e) => return (out, Some(e)),
            Ok(step) => {
                rest = &rest[step.consumed..];
                match step.event {
                    Some(Event::Header(h)) => out.push((h, Vec::new())),
                    Some(Event::Payload { data, .. }) => {
                        out.last_mut().unwrap().1.extend_from_slice(data)
                    }
                    Some(Event::End(_)) => {}
                    // Drop a message cut short, as the kernel does.
                    None if rx.current().is_some() => {
                        out.pop();
                        return (out, None);
                    }
                    None => return (out, None),
                }
            }
        }
    }
}

/// The kernel's loop over pieces of the stream.
fn by_take(stream: &[u8], cuts: &mut Cuts) -> (Received, Option<WireError>) {
    let mut rx = Reassembler::new(LIMITS);
    let mut out: Received = Vec::new();
    let mut open: Option<(Header, Vec<u8>)> = None;
    let mut base = 0;
    while base < stream.len() {
        let len = cuts.next().min(stream.len() - base);
        let piece = &stream[base..base + len];
        let mut pos = 0;
        loop {
            if let Some(e) = rx.error() {
                assert_eq!(rx.take_payload(len), None, "payload after a failure");
                return (out, Some(e));
            }
            if rx.current().is_some_and(|(h, off)| off >= h.payload_len()) {
                assert_eq!(rx.take_payload(len), None, "payload past the end");
                let step = rx.feed(&piece[pos..]).unwrap();
                assert_eq!(step.consumed, 0);
                let Some(Event::End(h)) = step.event else {
                    panic!("no end after the whole payload: {:?}", step.event);
                };
                let (oh, buf) = open.take().expect("end outside a message");
                assert_eq!((h, buf.len() as u64), (oh, h.payload_len()));
                out.push((oh, buf));
                assert!(rx.at_boundary());
                continue;
            }
            if pos >= len {
                break;
            }
            let before = rx.current();
            assert_eq!(rx.take_payload(0), None);
            assert_eq!(rx.current(), before, "take_payload(0) changed the state");
            if let Some((off, n)) = rx.take_payload(len - pos) {
                let (h, buf) = open.as_mut().expect("payload outside a message");
                assert_eq!(before, Some((*h, off)), "offset is not where the stream is");
                assert!(n > 0 && n <= len - pos, "took {n} of {}", len - pos);
                assert!(off + n as u64 <= h.payload_len(), "took past the message");
                assert_eq!(rx.current(), Some((*h, off + n as u64)));
                buf.extend_from_slice(&piece[pos..pos + n]);
                pos += n;
                continue;
            }
            assert!(open.is_none(), "a message is open but take_payload refused");
            let k = (len - pos).min(HEADER_LEN);
            let mut buf = [0u8; HEADER_LEN];
            buf[..k].copy_from_slice(&piece[pos..pos + k]);
            match rx.feed(&buf[..k]) {
                Err(e) => {
                    assert_eq!(rx.error(), Some(e));
                    continue;
                }
                Ok(step) => {
                    assert!(step.consumed <= k);
                    pos += step.consumed;
                    match step.event {
                        Some(Event::Header(h)) => open = Some((h, Vec::new())),
                        None => assert_eq!(step.consumed, k),
                        Some(other) => panic!("feed at a header gave {other:?}"),
                    }
                }
            }
        }
        base += len;
    }
    // A message cut short stays open and is not delivered.
    (out, rx.error())
}

fuzz_target!(|data: &[u8]| {
    let [mode, seed, body @ ..] = data else {
        return;
    };
    let mut cuts = Cuts::new(*mode, *seed, 5, 100);
    if mode & 1 == 0 {
        assert_eq!(by_take(body, &mut cuts), by_feed(body));
        return;
    }
    // Structured: [tag, context, len_hi, len_lo, payload...]*
    let mut enc = Encoder::new();
    let mut stream = Vec::new();
    let mut sent = Vec::new();
    let mut rest = body;
    while let [tag, context, hi, lo, tail @ ..] = rest {
        // Lengths past the limit too (the stream fails there), and the
        // payload padded with a pattern when the input is short.
        let len = usize::from(u16::from_be_bytes([*hi, *lo]) % 400);
        let payload: Vec<u8> = (0..len)
            .map(|i| tail.get(i).copied().unwrap_or(i as u8 ^ *tag))
            .collect();
        let env = Envelope {
            source: 1,
            tag: u32::from(*tag),
            context: u32::from(*context),
        };
        stream.extend_from_slice(&enc.encode(Kind::Eager, env, len as u64));
        stream.extend_from_slice(&payload);
        sent.push((env, payload));
        rest = &tail[len.min(tail.len())..];
    }
    let flip = mode & 2 != 0 && !stream.is_empty();
    if flip {
        let at = usize::from(*seed) * 7 % stream.len();
        stream[at] ^= mode | 1;
    }
    let (got, err) = by_take(&stream, &mut cuts);
    assert_eq!((got.clone(), err), by_feed(&stream));
    if !flip {
        let fits = sent
            .iter()
            .take_while(|(_, p)| p.len() as u64 <= LIMITS.max_payload)
            .count();
        assert_eq!(got.len(), fits);
        assert_eq!(err.is_some(), fits < sent.len());
        for ((h, payload), (env, sent_payload)) in got.iter().zip(&sent) {
            assert_eq!(h.envelope, *env);
            assert_eq!(payload, sent_payload);
        }
    }
});
