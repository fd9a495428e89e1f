//! Property tests of AP1000 buffer receiving: random message sizes, random
//! consumption order, wrap-around; every message is read back exactly once
//! with its exact bytes, and the ring is full exactly when a model says so.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use o2g_hyphen::ring::{
    message_bytes, Filter, Message, RingConfig, RingEnvelope, RingReader, RingWriter,
};
use o2g_hyphen::wait::WaitPolicy;
use o2g_hyphen::Error;
use o2g_nicmem::Region;
use proptest::prelude::*;

fn scratch(len: usize) -> Arc<Region> {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let name = format!(
        "o2g-hyphen-ringprop-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let r = Region::create_shm(&name, len).unwrap();
    Region::unlink_shm(&name).unwrap();
    Arc::new(r)
}

/// The bytes of message `id`: distinct per message and per position.
fn body(id: u32, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (id.wrapping_mul(131) as usize + i * 7) as u8)
        .collect()
}

#[derive(Clone, Debug)]
enum Op {
    /// Send a message with this payload length.
    Send(usize),
    /// Take the oldest available message in place (recvs).
    TakeOldest,
    /// Take a chosen available message by tag (index into the available).
    TakePick(usize),
    /// Copy-receive the oldest available message.
    Copy,
    /// Release a chosen held message (index into the held).
    Release(usize),
}

fn op(max: usize) -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..=max).prop_map(Op::Send),
        2 => Just(Op::TakeOldest),
        2 => any::<usize>().prop_map(Op::TakePick),
        1 => Just(Op::Copy),
        3 => any::<usize>().prop_map(Op::Release),
    ]
}

struct Model {
    /// Messages in the ring in order: (id, bytes occupied, released).
    ring: VecDeque<(u32, usize, bool)>,
    /// Sent, not yet taken, in order.
    available: Vec<u32>,
    /// How often each id was read.
    reads: BTreeMap<u32, u32>,
    lens: BTreeMap<u32, usize>,
}

impl Model {
    fn in_use(&self) -> usize {
        self.ring.iter().map(|m| m.1).sum()
    }

    fn release(&mut self, id: u32) {
        self.ring.iter_mut().find(|m| m.0 == id).unwrap().2 = true;
        while self.ring.front().is_some_and(|m| m.2) {
            self.ring.pop_front();
        }
    }

    fn read(&mut self, id: u32) {
        *self.reads.entry(id).or_default() += 1;
        self.available.retain(|&a| a != id);
    }
}

fn check_message(m: &Message<'_>, lens: &BTreeMap<u32, usize>) -> u32 {
    let id = m.info().envelope.tag;
    assert_eq!(m.info().len, lens[&id]);
    assert_eq!(m.payload(), &body(id, lens[&id])[..], "message {id}");
    assert_eq!(m.info().envelope.user, u64::from(id) * 3);
    id
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn every_message_is_read_once_with_its_bytes(
        cap_units in 12usize..64,
        max_payload in 16usize..160,
        ops in proptest::collection::vec(op(160), 1..300),
    ) {
        let cfg = RingConfig { capacity: cap_units * 16, max_payload };
        prop_assume!(cfg.validate().is_ok());
        let region = scratch(cfg.footprint());
        cfg.init(&region, 0).unwrap();
        let policy = WaitPolicy::polling(Duration::from_secs(5));
        let w = RingWriter::attach(Arc::clone(&region), 0, 3, policy).unwrap();
        let r = RingReader::attach(Arc::clone(&region), 0, policy).unwrap();
        let mut model = Model {
            ring: VecDeque::new(),
            available: Vec::new(),
            reads: BTreeMap::new(),
            lens: BTreeMap::new(),
        };
        let mut held: Vec<(u32, Message<'_>)> = Vec::new();
        let mut next_id = 0u32;
        let mut copy = Vec::new();
        for op in ops {
            match op {
                Op::Send(len) => {
                    let len = len.min(max_payload);
                    let id = next_id;
                    let env = RingEnvelope { src: 3, tag: id, user: u64::from(id) * 3 };
                    let need = message_bytes(len);
                    match w.try_send(&env, &body(id, len)) {
                        Ok(()) => {
                            prop_assert!(model.in_use() + need <= cfg.capacity);
                            next_id += 1;
                            model.ring.push_back((id, need, false));
                            model.available.push(id);
                            model.lens.insert(id, len);
                        }
                        Err(Error::RingFull { need: n, free }) => {
                            prop_assert_eq!(n, need);
                            prop_assert_eq!(free, cfg.capacity - model.in_use());
                            prop_assert!(model.in_use() + need > cfg.capacity);
                        }
                        Err(e) => return Err(TestCaseError::fail(e.to_string())),
                    }
                }
                Op::TakeOldest => {
                    let m = r.try_recvs(Filter::ANY).unwrap();
                    prop_assert_eq!(m.is_some(), !model.available.is_empty());
                    if let Some(m) = m {
                        let id = check_message(&m, &model.lens);
                        prop_assert_eq!(id, model.available[0]);
                        model.read(id);
                        held.push((id, m));
                    }
                }
                Op::TakePick(k) => {
                    if model.available.is_empty() {
                        continue;
                    }
                    let want = model.available[k % model.available.len()];
                    let f = Filter { src: Some(3), tag: Some(want) };
                    let m = r.try_recvs(f).unwrap().expect("an available message");
                    prop_assert_eq!(check_message(&m, &model.lens), want);
                    model.read(want);
                    held.push((want, m));
                }
                Op::Copy => {
                    let got = r.try_recv_copy(Filter::ANY, &mut copy).unwrap();
                    prop_assert_eq!(got.is_some(), !model.available.is_empty());
                    if let Some(info) = got {
                        let id = info.envelope.tag;
                        prop_assert_eq!(id, model.available[0]);
                        prop_assert_eq!(&copy, &body(id, model.lens[&id]));
                        model.read(id);
                        model.release(id);
                    }
                }
                Op::Release(k) => {
                    if held.is_empty() {
                        continue;
                    }
                    let (id, m) = held.swap_remove(k % held.len());
                    m.done().unwrap();
                    model.release(id);
                }
            }
            prop_assert_eq!(r.in_use().unwrap(), model.in_use());
        }
        // Release what is held, drain the rest.
        for (id, m) in held.drain(..) {
            m.done().unwrap();
            model.release(id);
        }
        while let Some(m) = r.try_recvs(Filter::ANY).unwrap() {
            let id = check_message(&m, &model.lens);
            model.read(id);
        }
        prop_assert_eq!(r.in_use().unwrap(), 0);
        prop_assert_eq!(model.reads.len() as u32, next_id);
        prop_assert!(model.reads.values().all(|&n| n == 1));
    }
}
