//! A small receive machine and the steps of a rendezvous, for the tests
//! that drive `Receiver` and `Inbound` by hand.

use o2g_core::proto::dump::Record;
use o2g_core::proto::envelope::{Envelope, Selector, SourceSel, TagSel};
use o2g_core::proto::matching::{Bucket, Engine, Slot};
use o2g_core::proto::receive::{Decision, Inbound, Next, OnPost, Receiver, Waiting};
use o2g_core::proto::sender_rings::{SenderRing, SenderRings};
use o2g_core::proto::wire::{Encoder, Kind, Limits};

pub(crate) type Machine =
    Receiver<Vec<Slot>, Vec<Bucket>, SenderRings<Vec<SenderRing<Vec<Record>>>>, Vec<Waiting>>;

/// The peer the tests receive from.
pub(crate) const PEER: u32 = 1;
pub(crate) const LIMITS: Limits = Limits { max_payload: 1024 };

/// A machine with room for 4 of everything, two ranks each a ring of
/// 1 KiB for 4 messages, and `conns` live connections.
pub(crate) fn machine(conns: usize) -> Machine {
    let engine = Engine::new(
        vec![Slot::EMPTY; 4],
        vec![Slot::EMPTY; 4],
        vec![Bucket::EMPTY; 4],
        7,
    )
    .unwrap();
    let rings = (0..2)
        .map(|_| SenderRing::new(vec![Record::EMPTY; 4], 1024))
        .collect();
    let store = SenderRings::new(rings, 1024);
    let mut rx = Receiver::new(engine, store, vec![Waiting::EMPTY; 4], 4);
    for _ in 0..conns {
        rx.add_conn();
    }
    rx
}

/// Feeds `bytes` to `conn` up to the first decision, decides it, and
/// returns the decision.
pub(crate) fn decide(rx: &mut Machine, conn: &mut Inbound, bytes: &[u8]) -> Decision {
    let mut pos = 0;
    loop {
        match conn.next(bytes.len() - pos) {
            Next::Header { max } => pos += conn.feed_header(&bytes[pos..pos + max]).unwrap(),
            Next::Decide => return conn.decide(rx).unwrap(),
            other => panic!("{other:?} before a decision"),
        }
    }
}

/// Receive `handle` for `PEER`'s message of `size` bytes (tag 3, offer 9),
/// matched by its request to send on `msgs`: the token its data names.
pub(crate) fn waiting_receive(rx: &mut Machine, msgs: &mut Inbound, handle: u64, size: u64) -> u64 {
    let sel = Selector {
        source: SourceSel::Rank(PEER),
        tag: TagSel::Tag(3),
        context: 0,
    };
    assert!(matches!(rx.post(sel, handle), Ok(OnPost::Queued(_))));
    let env = Envelope {
        source: PEER,
        tag: 3,
        context: 0,
    };
    let rts = Encoder::new().encode_ref(Kind::Rts, env, size, 9);
    match decide(rx, msgs, &rts) {
        Decision::Clear(clear) => clear.token,
        other => panic!("request to send: {other:?}"),
    }
}
