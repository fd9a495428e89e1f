//! The window kinds: a messages connection that carries windows hands a
//! put's payload to `Place::Window` and passes a lock request to its
//! reader, with no decision, no credit spent and nothing stored; a
//! control connection places an answer in the receive posted for it, or
//! fails; every other connection refuses them, and the stream goes on
//! after each as after any message.

mod common;

use common::receiver::{machine, Machine, LIMITS, PEER};
use o2g_core::proto::credit::Window;
use o2g_core::proto::envelope::{Envelope, Selector, SourceSel, TagSel};
use o2g_core::proto::receive::{Failure, Inbound, Next, OnEnd, OnPost, Place};
use o2g_core::proto::wire::{lock_op, Encoder, Kind, LockAnswer};

const WINDOW: Window = Window {
    bytes: 64,
    msgs: 1,
    largest: 64,
};

/// A put of `len` bytes at `offset` of window `context`.
fn put(enc: &mut Encoder, context: u32, offset: u32, len: u64) -> Vec<u8> {
    let env = Envelope {
        source: PEER,
        tag: offset,
        context,
    };
    enc.encode(Kind::Put, env, len).to_vec()
}

/// Payload pieces as the reader saw them: place, offset, length (and a
/// completed receive as its place with offset `u64::MAX`).
type Pieces = Vec<(Place, u64, usize)>;

/// Runs `bytes` through `conn`, deciding eager messages at `rx`; returns
/// each payload piece's place and length, and the messages ended.
fn run(rx: &mut Machine, conn: &mut Inbound, bytes: &[u8]) -> Result<(Pieces, usize), Failure> {
    let (mut pieces, mut ended, mut pos) = (Vec::new(), 0, 0);
    loop {
        match conn.next(bytes.len() - pos) {
            Next::Header { max } => pos += conn.feed_header(&bytes[pos..pos + max])?,
            Next::Payload { to, offset, len } => {
                pieces.push((to, offset, len));
                pos += len;
            }
            Next::Decide => {
                conn.decide(rx)?;
            }
            Next::End => {
                if let Some(OnEnd::Completed { handle, .. }) = conn.finish(rx) {
                    pieces.push((Place::Recv { handle }, u64::MAX, 0));
                }
                ended += 1;
            }
            Next::NeedInput => return Ok((pieces, ended)),
            other => panic!("unexpected {other:?}"),
        }
    }
}

#[test]
fn a_put_goes_to_its_window_in_pieces_and_spends_no_credit() {
    let mut rx = machine(1);
    let mut conn = Inbound::messages(PEER, LIMITS, WINDOW).with_windows();
    let mut enc = Encoder::new();
    // Longer than the whole eager window: a put is not eager data.
    let mut s = put(&mut enc, 5, 100, 200);
    s.extend(vec![7u8; 200]);
    s.extend(put(&mut enc, 5, 0, 0));
    let (pieces, ended) = run(&mut rx, &mut conn, &s[..100]).unwrap();
    assert_eq!(
        pieces,
        [(
            Place::Window {
                context: 5,
                at: 100
            },
            0,
            68
        )],
        "first piece"
    );
    assert_eq!(ended, 0);
    let (pieces, ended) = run(&mut rx, &mut conn, &s[100..]).unwrap();
    assert_eq!(
        pieces,
        [(
            Place::Window {
                context: 5,
                at: 100
            },
            68,
            132
        )]
    );
    assert_eq!(ended, 2, "the put and the empty put after it");
    assert_eq!(conn.held_eager_bytes(), 0);
    assert_eq!(rx.unexpected_len(), 0);
    assert!(conn.at_boundary());
    assert_eq!(conn.stats().messages, 2);
}

#[test]
fn an_eager_message_after_a_put_is_matched_as_usual() {
    let mut rx = machine(1);
    let mut conn = Inbound::uncredited(PEER, LIMITS).with_windows();
    let mut enc = Encoder::new();
    let mut s = put(&mut enc, 2, 8, 4);
    s.extend([1, 2, 3, 4]);
    let env = Envelope {
        source: PEER,
        tag: 9,
        context: 2,
    };
    s.extend(enc.encode(Kind::Eager, env, 3));
    s.extend([5, 6, 7]);
    let (pieces, ended) = run(&mut rx, &mut conn, &s).unwrap();
    assert_eq!(pieces.len(), 2);
    assert_eq!(pieces[0], (Place::Window { context: 2, at: 8 }, 0, 4));
    assert!(matches!(pieces[1].0, Place::Store { .. }), "{pieces:?}");
    assert_eq!(ended, 2);
    assert_eq!(rx.unexpected_len(), 1, "the eager message, stored");
}

#[test]
fn a_connection_without_windows_refuses_a_put() {
    let mut enc = Encoder::new();
    let s = put(&mut enc, 1, 0, 4);
    let refusing = [
        Inbound::messages(PEER, LIMITS, WINDOW),
        Inbound::control(PEER, LIMITS).with_windows(),
        Inbound::combined(PEER, LIMITS, WINDOW).with_windows(),
    ];
    for mut conn in refusing {
        let mut rx = machine(1);
        assert_eq!(
            run(&mut rx, &mut conn, &s).map(|_| ()),
            Err(Failure::Unsupported(Kind::Put))
        );
    }
}

#[test]
fn a_put_longer_than_the_limit_is_a_protocol_error() {
    let mut rx = machine(1);
    let mut conn = Inbound::messages(PEER, LIMITS, WINDOW).with_windows();
    let s = put(&mut Encoder::new(), 1, 0, LIMITS.max_payload + 1);
    assert!(matches!(
        run(&mut rx, &mut conn, &s),
        Err(Failure::Protocol(_))
    ));
}

/// A lock request of `op` for window `context`, answered under `tag`.
fn request(enc: &mut Encoder, context: u32, op: u32, tag: u32) -> Vec<u8> {
    let env = Envelope {
        source: PEER,
        tag: op,
        context,
    };
    enc.encode_ref(Kind::Lock, env, 0, tag).to_vec()
}

#[test]
fn a_lock_request_passes_to_the_reader_between_puts() {
    let mut rx = machine(1);
    let mut conn = Inbound::messages(PEER, LIMITS, WINDOW).with_windows();
    let mut enc = Encoder::new();
    let mut s = request(&mut enc, 3, lock_op::EXCLUSIVE, 90);
    s.extend(put(&mut enc, 3, 0, 2));
    s.extend([1, 2]);
    let get = Envelope {
        source: PEER,
        tag: 0,
        context: 3,
    };
    // A get of more than the limit is a protocol error like any size;
    // this one is a header alone, whatever its length.
    s.extend(enc.encode_ref(Kind::Get, get, 500, 92));
    s.extend(request(&mut enc, 3, lock_op::UNLOCK, 91));
    // The reader acts on a request right after its header, before its end.
    assert_eq!(conn.next(s.len()), Next::Header { max: 32 });
    assert_eq!(conn.feed_header(&s[..32]), Ok(32));
    let (h, _) = conn.current().expect("the request, until its end");
    assert_eq!(
        (h.kind, h.envelope.tag, h.reference),
        (Kind::Lock, lock_op::EXCLUSIVE, 90)
    );
    assert_eq!(conn.next(0), Next::End);
    assert_eq!(conn.finish(&mut rx), None);
    let (pieces, ended) = run(&mut rx, &mut conn, &s[32..]).unwrap();
    assert_eq!(pieces, [(Place::Window { context: 3, at: 0 }, 0, 2)]);
    assert_eq!(ended, 3);
    assert!(conn.at_boundary());
}

#[test]
fn an_answer_fills_the_receive_posted_for_it() {
    let mut rx = machine(1);
    let sel = Selector {
        source: SourceSel::Rank(PEER),
        tag: TagSel::Tag(90),
        context: 3,
    };
    assert!(matches!(rx.post(sel, 42), Ok(OnPost::Queued(_))));
    let mut conn = Inbound::control(PEER, LIMITS);
    let env = Envelope {
        source: PEER,
        tag: 90,
        context: 3,
    };
    let mut s = Encoder::new().encode(Kind::Answer, env, 8).to_vec();
    s.extend(LockAnswer::default().encode());
    let (pieces, ended) = run(&mut rx, &mut conn, &s).unwrap();
    assert_eq!(
        pieces,
        [
            (Place::Recv { handle: 42 }, 0, 8),
            (Place::Recv { handle: 42 }, u64::MAX, 0)
        ]
    );
    assert_eq!(ended, 1);
}

#[test]
fn an_answer_nobody_asked_for_fails_its_connection() {
    let mut rx = machine(1);
    let mut conn = Inbound::control(PEER, LIMITS);
    let env = Envelope {
        source: PEER,
        tag: 90,
        context: 3,
    };
    let s = Encoder::new().encode(Kind::Answer, env, 8);
    assert_eq!(
        run(&mut rx, &mut conn, &s).map(|_| ()),
        Err(Failure::Unanswered(90))
    );
    assert_eq!(rx.unexpected_len(), 0, "never stored");
}

#[test]
fn window_kinds_on_the_wrong_connection_fail_it() {
    let cases = [
        (Inbound::messages(PEER, LIMITS, WINDOW), Kind::Lock),
        (Inbound::control(PEER, LIMITS).with_windows(), Kind::Lock),
        (Inbound::control(PEER, LIMITS).with_windows(), Kind::Get),
        (
            Inbound::combined(PEER, LIMITS, WINDOW).with_windows(),
            Kind::Get,
        ),
        (
            Inbound::messages(PEER, LIMITS, WINDOW).with_windows(),
            Kind::Answer,
        ),
        (
            Inbound::combined(PEER, LIMITS, WINDOW).with_windows(),
            Kind::Answer,
        ),
    ];
    for (mut conn, kind) in cases {
        let mut rx = machine(1);
        let env = Envelope {
            source: PEER,
            tag: 1,
            context: 1,
        };
        let s = Encoder::new().encode(kind, env, 0);
        assert_eq!(
            run(&mut rx, &mut conn, &s).map(|_| ()),
            Err(Failure::Unsupported(kind)),
            "{kind:?}"
        );
    }
}
