//! The matching engine against the plain-vector reference model, over
//! random interleavings of post, arrive, cancel, probe, claim and release.
//! Small rank, tag and context ranges make matches, collisions and full
//! queues common.

mod common;

use common::{ArriveOut, Model, Msg, PostOut};
use o2g_core::proto::envelope::{Envelope, Selector, SourceSel, TagSel};
use o2g_core::proto::matching::{
    Arrival, Bucket, CancelError, Engine, MsgId, Posted, QueueFull, RecvId, Slot, StaleId,
};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Post(Selector),
    Arrive(Envelope, u64),
    /// Cancel the n-th receive ever posted (modulo their number).
    Cancel(usize),
    Probe(Selector),
    /// Claim / release the n-th message ever queued (modulo their number).
    Claim(usize),
    Release(usize),
}

fn envelope() -> impl Strategy<Value = Envelope> {
    (0u32..3, 0u32..3, 0u32..2).prop_map(|(source, tag, context)| Envelope {
        source,
        tag,
        context,
    })
}

fn selector() -> impl Strategy<Value = Selector> {
    (
        prop::option::weighted(0.7, 0u32..3),
        prop::option::weighted(0.7, 0u32..3),
        0u32..2,
    )
        .prop_map(|(s, t, context)| Selector {
            source: s.map_or(SourceSel::Any, SourceSel::Rank),
            tag: t.map_or(TagSel::Any, TagSel::Tag),
            context,
        })
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => selector().prop_map(Op::Post),
        4 => (envelope(), 0u64..100).prop_map(|(e, l)| Op::Arrive(e, l)),
        1 => any::<usize>().prop_map(Op::Cancel),
        1 => selector().prop_map(Op::Probe),
        1 => any::<usize>().prop_map(Op::Claim),
        2 => any::<usize>().prop_map(Op::Release),
    ]
}

/// Runs `ops` on both and checks every outcome and both queue lengths.
fn check(cap_posted: usize, cap_unexpected: usize, buckets: usize, ops: &[Op]) {
    let mut engine = Engine::new(
        vec![Slot::EMPTY; cap_posted],
        vec![Slot::EMPTY; cap_unexpected],
        vec![Bucket::EMPTY; buckets],
        0,
    )
    .unwrap();
    let mut model = Model::new(cap_posted, cap_unexpected);
    // Every id the engine ever returned, with the handle / location it
    // stands for; stale ones stay to exercise the "too late" paths.
    let mut recvs: Vec<(RecvId, u64)> = Vec::new();
    let mut msgs: Vec<(MsgId, u64)> = Vec::new();
    let loc_of = |msgs: &[(MsgId, u64)], id: MsgId| msgs.iter().find(|m| m.0 == id).map(|m| m.1);

    for (step, op) in ops.iter().enumerate() {
        let handle = 1000 + step as u64;
        match *op {
            Op::Post(sel) => match (engine.post(sel, handle), model.post(sel, handle)) {
                (Ok(Posted::Matched(id, info)), PostOut::Matched(loc)) => {
                    assert_eq!(info.location, loc);
                    assert_eq!(loc_of(&msgs, id), Some(loc));
                }
                (Ok(Posted::Queued(id)), PostOut::Queued) => recvs.push((id, handle)),
                (Err(QueueFull), PostOut::Full) => {}
                (got, want) => panic!("step {step} {op:?}: engine {got:?}, model {want:?}"),
            },
            Op::Arrive(env, len) => {
                let loc = 5000 + step as u64;
                let msg = Msg { env, len, loc };
                match (engine.arrive(env, len, loc), model.arrive(msg)) {
                    (Ok(Arrival::Matched { handle }), ArriveOut::Matched(h)) => {
                        assert_eq!(handle, h)
                    }
                    (Ok(Arrival::Unexpected(id)), ArriveOut::Unexpected) => {
                        assert_eq!(
                            engine.message(id).map(|i| (i.envelope, i.len)),
                            Some((env, len))
                        );
                        msgs.push((id, loc));
                    }
                    (Err(QueueFull), ArriveOut::Full) => {}
                    (got, want) => panic!("step {step} {op:?}: engine {got:?}, model {want:?}"),
                }
            }
            Op::Cancel(n) if !recvs.is_empty() => {
                let (id, handle) = recvs[n % recvs.len()];
                let want = if model.cancel(handle) {
                    Ok(handle)
                } else {
                    Err(CancelError::TooLate)
                };
                assert_eq!(engine.cancel(id), want, "step {step} {op:?}");
            }
            Op::Probe(sel) => {
                let got = engine.probe(sel).map(|(id, info)| {
                    assert_eq!(loc_of(&msgs, id), Some(info.location));
                    info.location
                });
                assert_eq!(got, model.probe(sel).map(|m| m.loc), "step {step} {op:?}");
            }
            Op::Claim(n) if !msgs.is_empty() => {
                let (id, loc) = msgs[n % msgs.len()];
                let want = model.claim(loc).map(|m| m.loc).ok_or(StaleId);
                assert_eq!(engine.claim(id).map(|i| i.location), want, "step {step}");
            }
            Op::Release(n) if !msgs.is_empty() => {
                let (id, loc) = msgs[n % msgs.len()];
                let want = model.release(loc).map(|m| m.loc).ok_or(StaleId);
                assert_eq!(engine.release(id).map(|i| i.location), want, "step {step}");
            }
            Op::Cancel(_) | Op::Claim(_) | Op::Release(_) => {}
        }
        assert_eq!(engine.posted_len(), model.posted_len(), "step {step}");
        assert_eq!(
            engine.unexpected_len(),
            model.unexpected_len(),
            "step {step}"
        );
    }
    // Whatever is still posted can be cancelled, exactly once.
    for (id, handle) in recvs {
        let want = if model.cancel(handle) {
            Ok(handle)
        } else {
            Err(CancelError::TooLate)
        };
        assert_eq!(engine.cancel(id), want);
    }
    assert_eq!(engine.posted_len(), 0);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn engine_agrees_with_the_model(
        cap_posted in 0usize..6,
        cap_unexpected in 0usize..6,
        buckets in 1usize..9,
        ops in prop::collection::vec(op(), 0..120),
    ) {
        check(cap_posted, cap_unexpected, buckets, &ops);
    }

    #[test]
    fn roomy_engine_agrees_with_the_model(
        buckets in 1usize..64,
        ops in prop::collection::vec(op(), 0..300),
    ) {
        check(64, 64, buckets, &ops);
    }
}
