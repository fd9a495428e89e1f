//! Fuzzes the stream reassembler and header decoder.
//!
//! Input byte 0 picks the mode and, with byte 1, the chunking:
//! - raw mode: the rest is the byte stream itself;
//! - structured mode: the rest describes messages (tag, context, length,
//!   payload) that are encoded into a valid stream, optionally with one
//!   byte flipped, so the fuzzer spends its time past the magic check.
//!
//! Whatever the cut, the events must follow the grammar
//! `(Header Payload* End)*`, payload offsets must be contiguous and sum to
//! the header's length, a failure must stick, and a clean structured
//! stream must come back exactly as sent.
#![no_main]

mod cuts;

use cuts::Cuts;
use libfuzzer_sys::fuzz_target;
use o2g_core::proto::envelope::Envelope;
use o2g_core::proto::stream::{Event, Reassembler};
use o2g_core::proto::wire::{Encoder, Header, Kind, Limits};

const LIMITS: Limits = Limits { max_payload: 200 };

fn run(stream: &[u8], cuts: &mut Cuts) -> Vec<(Header, Vec<u8>)> {
    let mut rx = Reassembler::new(LIMITS);
    let mut out = Vec::new();
    let mut open: Option<(Header, Vec<u8>)> = None;
    let mut rest = stream;
    loop {
        let offered = &rest[..rest.len().min(cuts.next())];
        let step = match rx.feed(offered) {
            Ok(step) => step,
            Err(e) => {
                assert_eq!(rx.feed(rest), Err(e));
                assert_eq!(rx.error(), Some(e));
                return out;
            }
        };
        assert!(step.consumed <= offered.len());
        rest = &rest[step.consumed..];
        match step.event {
            Some(Event::Header(h)) => {
                assert!(open.is_none());
                assert!(!h.kind.sizes_a_message() || h.len <= LIMITS.max_payload);
                assert_eq!(Header::decode(&h.encode()), Ok(h));
                open = Some((h, Vec::new()));
            }
            Some(Event::Payload { offset, data }) => {
                let (h, buf) = open.as_mut().expect("payload outside a message");
                assert_eq!(offset, buf.len() as u64);
                assert!(!data.is_empty() && data.len() == step.consumed);
                buf.extend_from_slice(data);
                assert!(buf.len() as u64 <= h.payload_len());
                assert_eq!(rx.current().map(|c| c.1), Some(buf.len() as u64));
            }
            Some(Event::End(h)) => {
                assert_eq!(step.consumed, 0);
                let (open_h, buf) = open.take().expect("end outside a message");
                assert_eq!(h, open_h);
                assert_eq!(buf.len() as u64, h.payload_len());
                out.push((h, buf));
                assert!(rx.at_boundary());
            }
            None if rest.is_empty() => {
                assert_eq!(rx.current().is_some(), open.is_some());
                return out;
            }
            None => assert!(step.consumed > 0),
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let [mode, seed, body @ ..] = data else {
        return;
    };
    let mut cuts = Cuts::new(*mode, *seed, 4, 64);
    if mode & 1 == 0 {
        run(body, &mut cuts);
        return;
    }
    // Structured: [tag, context, len, payload...]*
    let mut enc = Encoder::new();
    let mut stream = Vec::new();
    let mut sent = Vec::new();
    let mut rest = body;
    while let [tag, context, len, tail @ ..] = rest {
        let len = usize::from(*len).min(tail.len());
        let (payload, tail) = tail.split_at(len);
        let env = Envelope {
            source: 1,
            tag: u32::from(*tag),
            context: u32::from(*context),
        };
        stream.extend_from_slice(&enc.encode(Kind::Eager, env, len as u64));
        stream.extend_from_slice(payload);
        sent.push((env, payload.to_vec()));
        rest = tail;
    }
    let flip = mode & 2 != 0 && !stream.is_empty();
    if flip {
        let at = usize::from(*seed) * 7 % stream.len();
        stream[at] ^= mode | 1;
    }
    let got = run(&stream, &mut cuts);
    if !flip {
        // A length over the limit fails the stream at that message.
        let fits = sent
            .iter()
            .take_while(|(_, p)| p.len() as u64 <= LIMITS.max_payload);
        assert_eq!(got.len(), fits.count());
        for ((h, payload), (env, sent_payload)) in got.iter().zip(&sent) {
            assert_eq!(h.envelope, *env);
            assert_eq!(payload, sent_payload);
        }
    }
});
