//! The Fagus AOTF barrier.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};

use common::{fabric, short};
use o2g_dimmnet::{Barrier, Config, Error};

#[test]
fn nobody_leaves_before_everybody_arrived() {
    for nodes in [1, 2, 5] {
        const ROUNDS: usize = 200;
        let (_r, nics) = fabric(Config::new(nodes));
        let arrived = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for nic in nics {
                let arrived = &arrived;
                s.spawn(move || {
                    let mut b = Barrier::new(nic).unwrap();
                    for round in 1..=ROUNDS {
                        // Nobody has got past this round's barrier yet...
                        let seen = arrived.fetch_add(1, Ordering::SeqCst) + 1;
                        assert!(seen <= round * nodes as usize, "{seen} at round {round}");
                        b.wait().unwrap();
                        // ...and everybody has arrived at it.
                        let seen = arrived.load(Ordering::SeqCst);
                        assert!(seen >= round * nodes as usize, "{seen} at round {round}");
                    }
                    assert_eq!(b.epoch(), ROUNDS as u32);
                });
            }
        });
    }
}

#[test]
fn a_missing_node_times_out_by_name() {
    let (_r, nics) = fabric(Config::new(4));
    let mut it = nics.into_iter();
    let root = it.next().unwrap().with_wait(short());
    let n1 = it.next().unwrap().with_wait(short());
    let n2 = it.next().unwrap().with_wait(short());
    // Node 3 never comes.
    std::thread::scope(|s| {
        let h1 = s.spawn(|| Barrier::new(n1).unwrap().wait());
        let h2 = s.spawn(|| Barrier::new(n2).unwrap().wait());
        let e = Barrier::new(root).unwrap().wait().unwrap_err();
        match &e {
            Error::Timeout { what, .. } => assert!(what.contains("[3]"), "{what}"),
            other => panic!("{other}"),
        }
        for h in [h1, h2] {
            let e = h.join().unwrap().unwrap_err();
            assert!(
                e.is_timeout() && e.to_string().contains("SYNC_PERMIT"),
                "{e}"
            );
        }
    });
}
