//! Matching cost against queue depth: 1, 1 000 and 100 000 queued entries.
//!
//! Run with `cargo bench -p o2g-core --bench matching`. Prints ns per
//! operation for:
//!
//! - arrive+repost: a message arrives for one of N posted exact receives
//!   (keys visited in a scattered order), and the receive is posted again
//!   so that N stays constant;
//! - post+release+rearrive: a receive is posted for one of N unexpected
//!   messages, the message is released and arrives again;
//! - arrive past N wildcards: the documented linear case, an arrival whose
//!   exact receive was posted after N wildcard receives of another context.
//!
//! The exact cases should stay flat as N grows (apart from cache misses);
//! the wildcard case grows linearly.

use std::hint::black_box;
use std::time::Instant;

use o2g_core::proto::envelope::{Envelope, Selector, SourceSel, TagSel};
use o2g_core::proto::matching::{Arrival, Bucket, Engine, Posted, Slot};

type Bench = Engine<Vec<Slot>, Vec<Bucket>>;

fn engine(entries: usize) -> Bench {
    Engine::new(
        vec![Slot::EMPTY; entries + 1],
        vec![Slot::EMPTY; entries + 1],
        vec![Bucket::EMPTY; (entries + 1).next_power_of_two()],
        0x0123_4567_89ab_cdef,
    )
    .expect("buckets")
}

fn env(key: usize) -> Envelope {
    Envelope {
        source: (key % 64) as u32,
        tag: (key / 64) as u32,
        context: 0,
    }
}

/// Visits every key once per `n` steps, in a scattered order.
fn scattered(i: usize, n: usize) -> usize {
    i.wrapping_mul(7919) % n
}

fn time(label: &str, n: usize, iters: usize, mut op: impl FnMut(usize)) {
    // Warm up caches and branch predictors first.
    for i in 0..iters / 10 {
        op(i);
    }
    let start = Instant::now();
    for i in 0..iters {
        op(i);
    }
    let ns = start.elapsed().as_nanos() as f64 / iters as f64;
    println!("{label:<28} {n:>7} queued  {ns:>9.1} ns/op");
}

fn arrive_repost(n: usize, iters: usize) {
    let mut e = engine(n);
    for k in 0..n {
        assert!(matches!(
            e.post(Selector::exact(env(k)), k as u64),
            Ok(Posted::Queued(_))
        ));
    }
    time("arrive+repost (exact)", n, iters, |i| {
        let k = scattered(i, n);
        let got = e.arrive(black_box(env(k)), 8, 0);
        assert!(matches!(got, Ok(Arrival::Matched { handle }) if handle == k as u64));
        black_box(e.post(Selector::exact(env(k)), k as u64)).ok();
    });
}

fn post_release_rearrive(n: usize, iters: usize) {
    let mut e = engine(n);
    for k in 0..n {
        assert!(matches!(
            e.arrive(env(k), 8, k as u64),
            Ok(Arrival::Unexpected(_))
        ));
    }
    time("post+release+rearrive", n, iters, |i| {
        let k = scattered(i, n);
        let Ok(Posted::Matched(id, info)) = e.post(Selector::exact(black_box(env(k))), 0) else {
            panic!("no match for key {k}");
        };
        assert_eq!(info.location, k as u64);
        e.release(id).ok();
        black_box(e.arrive(env(k), 8, k as u64)).ok();
    });
}

fn arrive_past_wildcards(n: usize, iters: usize) {
    let mut e = engine(n);
    let wild = Selector {
        source: SourceSel::Any,
        tag: TagSel::Any,
        context: 1,
    };
    for _ in 0..n {
        e.post(wild, 0).ok();
    }
    let key = env(0);
    time("arrive past N wildcards", n, iters, |_| {
        // The exact receive is always younger than every wildcard.
        e.post(Selector::exact(key), 1).ok();
        black_box(e.arrive(black_box(key), 8, 0)).ok();
    });
}

fn main() {
    println!("o2g-core matching engine (one thread, ns per operation)");
    for n in [1, 1_000, 100_000] {
        arrive_repost(n, 2_000_000);
    }
    for n in [1, 1_000, 100_000] {
        post_release_rearrive(n, 2_000_000);
    }
    for n in [1, 1_000, 100_000] {
        arrive_past_wildcards(n, (20_000_000 / n).clamp(200, 1_000_000));
    }
}
