//! Fuzzes the matching engine against the reference model of the tests
//! (`core/tests/common`): every input is a capacity choice and a list of
//! operations, and every outcome must agree with the model. Besides the
//! MPI operations, it runs the two the kernel uses when a process or a
//! connection goes away: `release_claimed` (only a message a receive took
//! may be dropped) and `cancel_from` (every receive naming a failed source
//! exactly is removed, wildcards stay); the model has neither, so this
//! target tracks which messages are claimed and what each receive asked
//! for.
#![no_main]

#[path = "../../tests/common/mod.rs"]
mod common;

use std::collections::{HashMap, HashSet};

use common::{ArriveOut, Model, Msg, PostOut};
use libfuzzer_sys::fuzz_target;
use o2g_core::proto::envelope::{Envelope, Selector, SourceSel, TagSel};
use o2g_core::proto::matching::{
    Arrival, Bucket, CancelError, Engine, MsgId, Posted, QueueFull, RecvId, Slot, StaleId,
};

fn selector(a: u8, b: u8) -> Selector {
    Selector {
        source: if a & 0x80 != 0 {
            SourceSel::Any
        } else {
            SourceSel::Rank(u32::from(a % 4))
        },
        tag: if b & 0x80 != 0 {
            TagSel::Any
        } else {
            TagSel::Tag(u32::from(b % 4))
        },
        context: u32::from((a >> 4) & 1),
    }
}

fuzz_target!(|data: &[u8]| {
    let [cp, cu, nb, ops @ ..] = data else {
        return;
    };
    let (cap_posted, cap_unexpected) = (usize::from(cp % 9), usize::from(cu % 9));
    let buckets = 1 + usize::from(nb % 16);
    let mut engine = Engine::new(
        vec![Slot::EMPTY; cap_posted],
        vec![Slot::EMPTY; cap_unexpected],
        vec![Bucket::EMPTY; buckets],
        u64::from(*nb),
    )
    .unwrap();
    let mut model = Model::new(cap_posted, cap_unexpected);
    let mut recvs: Vec<(RecvId, u64)> = Vec::new();
    let mut msgs: Vec<(MsgId, u64)> = Vec::new();
    // Each posted receive's selector, by handle; claimed messages' locations.
    let mut asked: HashMap<u64, Selector> = HashMap::new();
    let mut claimed: HashSet<u64> = HashSet::new();
    for (step, op) in ops.chunks_exact(3).enumerate() {
        let (kind, a, b) = (op[0], op[1], op[2]);
        let tag = step as u64 + 1;
        match kind % 10 {
            0 | 1 => match (
                engine.post(selector(a, b), tag),
                model.post(selector(a, b), tag),
            ) {
                (Ok(Posted::Matched(id, info)), PostOut::Matched(loc)) => {
                    assert_eq!(info.location, loc);
                    assert!(msgs.contains(&(id, loc)));
                    claimed.insert(loc);
                }
                (Ok(Posted::Queued(id)), PostOut::Queued) => {
                    recvs.push((id, tag));
                    asked.insert(tag, selector(a, b));
                }
                (Err(QueueFull), PostOut::Full) => {}
                (got, want) => panic!("post: engine {got:?}, model {want:?}"),
            },
            2 | 3 => {
                let env = Envelope {
                    source: u32::from(a % 4),
                    tag: u32::from(b % 4),
                    context: u32::from((a >> 4) & 1),
                };
                let msg = Msg {
                    env,
                    len: u64::from(b),
                    loc: tag,
                };
                match (engine.arrive(env, msg.len, tag), model.arrive(msg)) {
                    (Ok(Arrival::Matched { handle }), ArriveOut::Matched(h)) => {
                        assert_eq!(handle, h)
                    }
                    (Ok(Arrival::Unexpected(id)), ArriveOut::Unexpected) => msgs.push((id, tag)),
                    (Err(QueueFull), ArriveOut::Full) => {}
                    (got, want) => panic!("arrive: engine {got:?}, model {want:?}"),
                }
            }
            4 => {
                // Raw ids from the input too: garbage must be refused, not trusted.
                let (id, handle) = match recvs.get(usize::from(a)) {
                    Some(r) => *r,
                    // Past any capacity used here.
                    None => (
                        RecvId::from_raw(u64::from(a) << 32 | (100 + u64::from(b))),
                        0,
                    ),
                };
                let got = engine.cancel(id);
                if handle == 0 {
                    assert_eq!(got, Err(CancelError::InvalidId));
                } else if model.cancel(handle) {
                    assert_eq!(got, Ok(handle));
                } else {
                    assert_eq!(got, Err(CancelError::TooLate));
                }
            }
            5 => {
                let got = engine.probe(selector(a, b)).map(|(_, i)| i.location);
                assert_eq!(got, model.probe(selector(a, b)).map(|m| m.loc));
            }
            6 | 7 => {
                let Some(&(id, loc)) = msgs.get(usize::from(a) % msgs.len().max(1)) else {
                    assert_eq!(engine.release(MsgId::from_raw(u64::from(b))), Err(StaleId));
                    continue;
                };
                if kind % 10 == 6 {
                    let want = model.claim(loc).map(|m| m.loc).ok_or(StaleId);
                    assert_eq!(engine.claim(id).map(|i| i.location), want);
                    if want.is_ok() {
                        claimed.insert(loc);
                    }
                } else {
                    let want = model.release(loc).map(|m| m.loc).ok_or(StaleId);
                    assert_eq!(engine.release(id).map(|i| i.location), want);
                    claimed.remove(&loc);
                }
            }
            8 => {
                let Some(&(id, loc)) = msgs.get(usize::from(a) % msgs.len().max(1)) else {
                    let got = engine.release_claimed(MsgId::from_raw(u64::from(b)));
                    assert_eq!(got, Err(StaleId));
                    continue;
                };
                // A queued message must stay queued: the model is left
                // alone and the lengths compared below must not move.
                let want = if claimed.remove(&loc) {
                    model.release(loc).map(|m| m.loc).ok_or(StaleId)
                } else {
                    Err(StaleId)
                };
                assert_eq!(engine.release_claimed(id).map(|i| i.location), want);
            }
            9 => {
                // Ranks 0..4 are in use; 4 and up name nobody.
                let source = u32::from(a % 6);
                let mut want: Vec<u64> = model
                    .posted_handles()
                    .filter(|h| asked[h].source == SourceSel::Rank(source))
                    .collect();
                let mut got = Vec::new();
                engine.cancel_from(source, |h| got.push(h));
                for h in &want {
                    assert!(model.cancel(*h));
                }
                got.sort_unstable();
                want.sort_unstable();
                assert_eq!(got, want, "cancel_from({source})");
            }
            _ => unreachable!(),
        }
        assert_eq!(engine.posted_len(), model.posted_len());
        assert_eq!(engine.unexpected_len(), model.unexpected_len());
    }
});
