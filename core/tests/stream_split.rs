//! The reassembler and decoder against random splits of a stream: however
//! the bytes are cut (and however little the caller accepts at a time),
//! the same messages come out; and arbitrary bytes never panic.

use o2g_core::proto::envelope::Envelope;
use o2g_core::proto::stream::{Event, Reassembler};
use o2g_core::proto::wire::{Encoder, Header, Kind, Limits, WireError, HEADER_LEN};
use proptest::prelude::*;

const LIMITS: Limits = Limits { max_payload: 200 };

/// What a receiver reconstructs: each message's header and payload.
type Received = Vec<(Header, Vec<u8>)>;

/// Feeds `stream` cut at `cuts`, accepting at most `accept[i]` bytes per
/// call (cycling), and checks the event grammar on the way:
/// Header, then payload pieces at contiguous offsets, then End.
fn receive(stream: &[u8], cuts: &[usize], accept: &[usize]) -> (Received, Option<WireError>) {
    let mut rx = Reassembler::new(LIMITS);
    let mut out: Received = Vec::new();
    let mut open: Option<(Header, Vec<u8>)> = None;
    let mut calls = 0usize;
    let mut start = 0;
    let mut bounds: Vec<usize> = cuts.iter().map(|c| c % (stream.len() + 1)).collect();
    bounds.push(stream.len());
    bounds.sort_unstable();
    for end in bounds {
        let mut chunk = &stream[start..end.max(start)];
        start = end.max(start);
        loop {
            let limit = accept
                .get(calls % accept.len().max(1))
                .copied()
                .unwrap_or(usize::MAX);
            calls += 1;
            let offered = &chunk[..chunk.len().min(limit)];
            let step = match rx.feed(offered) {
                Ok(step) => step,
                Err(e) => {
                    assert_eq!(rx.feed(chunk), Err(e), "failure must stick");
                    return (out, Some(e));
                }
            };
            assert!(step.consumed <= offered.len());
            chunk = &chunk[step.consumed..];
            match step.event {
                Some(Event::Header(h)) => {
                    assert!(open.is_none(), "header inside a message");
                    open = Some((h, Vec::new()));
                }
                Some(Event::Payload { offset, data }) => {
                    let (h, buf) = open.as_mut().expect("payload outside a message");
                    assert_eq!(offset, buf.len() as u64, "offsets are contiguous");
                    assert!(!data.is_empty());
                    buf.extend_from_slice(data);
                    assert!(buf.len() as u64 <= h.payload_len());
                }
                Some(Event::End(h)) => {
                    let (open_h, buf) = open.take().expect("end outside a message");
                    assert_eq!(h, open_h);
                    assert_eq!(buf.len() as u64, h.payload_len());
                    out.push((h, buf));
                }
                // Nothing more from this offer: either the chunk is used
                // up, or the caller offered less than it had.
                None if chunk.is_empty() => break,
                None => assert!(offered.is_empty() || step.consumed > 0),
            }
        }
    }
    (out, None)
}

fn messages() -> impl Strategy<Value = Vec<(Envelope, Vec<u8>)>> {
    let env =
        (any::<u32>(), any::<u32>(), any::<u32>()).prop_map(|(source, tag, context)| Envelope {
            source,
            tag,
            context,
        });
    prop::collection::vec((env, prop::collection::vec(any::<u8>(), 0..80)), 0..12)
}

fn encode(msgs: &[(Envelope, Vec<u8>)]) -> Vec<u8> {
    let mut enc = Encoder::new();
    let mut stream = Vec::new();
    for (env, payload) in msgs {
        stream.extend_from_slice(&enc.encode(Kind::Eager, *env, payload.len() as u64));
        stream.extend_from_slice(payload);
    }
    stream
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn any_split_yields_the_messages_sent(
        msgs in messages(),
        cuts in prop::collection::vec(any::<usize>(), 0..40),
        accept in prop::collection::vec(1usize..50, 0..8),
    ) {
        let (got, err) = receive(&encode(&msgs), &cuts, &accept);
        prop_assert_eq!(err, None);
        prop_assert_eq!(got.len(), msgs.len());
        for (i, ((h, payload), (env, sent))) in got.iter().zip(&msgs).enumerate() {
            prop_assert_eq!(h.envelope, *env);
            prop_assert_eq!(h.seq, i as u32);
            prop_assert_eq!(payload, sent);
        }
    }

    #[test]
    fn a_corrupt_header_byte_fails_at_that_message(
        msgs in messages(),
        pick in any::<usize>(),
        byte in 0usize..HEADER_LEN,
        flip in 1u8..=255,
        cuts in prop::collection::vec(any::<usize>(), 0..10),
    ) {
        prop_assume!(!msgs.is_empty());
        let victim = pick % msgs.len();
        let mut stream = encode(&msgs);
        let at: usize = msgs[..victim].iter().map(|(_, p)| HEADER_LEN + p.len()).sum();
        stream[at + byte] ^= flip;
        let (got, err) = receive(&stream, &cuts, &[]);
        // Source, tag, context and reference are not checked: any value is
        // valid. Every other field is, so the message is either refused or
        // (for a shorter length under the limit, or another kind) parsed
        // differently from there on.
        if (4..16).contains(&byte) || (28..32).contains(&byte) {
            prop_assert_eq!(err, None);
            prop_assert_eq!(got.len(), msgs.len());
        } else if !(16..24).contains(&byte) && byte != 3 {
            prop_assert!(err.is_some());
            prop_assert_eq!(got.len(), victim);
        }
        prop_assert_eq!(&got[..victim.min(got.len())], &received_prefix(&msgs, victim)[..victim.min(got.len())]);
    }

    #[test]
    fn arbitrary_bytes_never_panic(
        bytes in prop::collection::vec(any::<u8>(), 0..400),
        cuts in prop::collection::vec(any::<usize>(), 0..20),
        accept in prop::collection::vec(1usize..40, 0..4),
    ) {
        let _ = receive(&bytes, &cuts, &accept);
    }
}

fn received_prefix(msgs: &[(Envelope, Vec<u8>)], n: usize) -> Received {
    let (got, _) = receive(&encode(&msgs[..n]), &[], &[]);
    got
}
