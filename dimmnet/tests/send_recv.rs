//! DIMM_Send / DIMM_Recv: both protocol orders, BOTF and PUSH paths,
//! split messages, many senders, truncation, random sizes.

mod common;

use std::sync::mpsc;

use common::{endpoints, pattern, small};
use o2g_dimmnet::{Config, DimmEndpoint, Error};
use proptest::prelude::*;

fn take2(eps: Vec<DimmEndpoint>) -> (DimmEndpoint, DimmEndpoint) {
    let mut it = eps.into_iter();
    (it.next().unwrap(), it.next().unwrap())
}

#[test]
fn receiver_first_sends_at_once() {
    for len in [0, 1, 464, 465, 5000, 64 * 1024] {
        let (_r, eps) = endpoints(Config::new(2));
        let (mut rx, mut tx) = take2(eps);
        rx.prepost(1).unwrap();
        let data = pattern(len, len);
        let sent = data.clone();
        let h = std::thread::spawn(move || {
            tx.send(0, &sent).unwrap();
            tx.stats()
        });
        let mut buf = vec![0u8; len + 10];
        let n = rx.recv(1, &mut buf).unwrap();
        let st = h.join().unwrap();
        assert_eq!(n, len);
        assert_eq!(&buf[..n], &data[..]);
        assert_eq!(st.sends_receiver_first, 1, "{len}: {st:?}");
        assert_eq!(st.sends_sender_first, 0);
        assert_eq!(st.botf_chunks, u64::from(len <= 464), "{len}: {st:?}");
    }
}

#[test]
fn sender_first_waits_for_the_receiver() {
    for len in [3, 464, 2000, 100_000] {
        let (_r, eps) = endpoints(Config::new(2));
        let (mut rx, mut tx) = take2(eps);
        let data = pattern(1, len);
        let sent = data.clone();
        let h = std::thread::spawn(move || {
            tx.send(0, &sent).unwrap();
            tx.stats()
        });
        // The announcement arrives before we post anything.
        let (src, announced) = loop {
            if let Some(p) = rx.poll().unwrap() {
                break p;
            }
            std::thread::yield_now();
        };
        assert_eq!((src, announced), (1, len));
        let mut buf = vec![0u8; len];
        assert_eq!(rx.recv(1, &mut buf).unwrap(), len);
        assert_eq!(buf, data);
        let st = h.join().unwrap();
        assert_eq!((st.sends_sender_first, st.sends_receiver_first), (1, 0));
        assert_eq!(rx.poll().unwrap(), None);
    }
}

#[test]
fn messages_larger_than_the_buffers_are_split_and_resent() {
    let (_r, eps) = endpoints(small(2));
    let (mut rx, mut tx) = take2(eps);
    let data = pattern(9, 10_000);
    let sent = data.clone();
    let h = std::thread::spawn(move || {
        tx.send(0, &sent).unwrap();
        tx.send(0, b"after").unwrap();
        tx.stats()
    });
    let mut buf = vec![0u8; 10_000];
    assert_eq!(rx.recv(1, &mut buf).unwrap(), 10_000);
    assert_eq!(buf, data);
    // 2 buffers of 1 KiB: 5 chunks of 2 KiB, 4 of them under a re-grant.
    assert_eq!(rx.stats().regrants, 4);
    let mut small_buf = [0u8; 16];
    assert_eq!(rx.recv(1, &mut small_buf).unwrap(), 5);
    assert_eq!(&small_buf[..5], b"after");
    let st = h.join().unwrap();
    assert_eq!(st.push_chunks, 5);
    assert_eq!(st.botf_chunks, 1);
}

#[test]
fn many_ranks_send_to_one() {
    const N: u32 = 6;
    const MSGS: usize = 12;
    let (_r, eps) = endpoints(small(N));
    let mut it = eps.into_iter();
    let mut rx = it.next().unwrap();
    let senders: Vec<_> = it
        .map(|mut ep| {
            std::thread::spawn(move || {
                let me = ep.nic().node() as usize;
                for k in 0..MSGS {
                    let len = (me * 977 + k * 1531) % 6000;
                    ep.send(0, &pattern(me * 100 + k, len)).unwrap();
                }
            })
        })
        .collect();
    let mut next = vec![0usize; N as usize];
    let mut buf = vec![0u8; 8192];
    for _ in 0..(N as usize - 1) * MSGS {
        let (src, len) = rx.recv_any(&mut buf).unwrap();
        let s = src as usize;
        let k = next[s];
        let want = pattern(s * 100 + k, (s * 977 + k * 1531) % 6000);
        assert_eq!(&buf[..len], &want[..], "message {k} from {src}");
        next[s] += 1;
    }
    for h in senders {
        h.join().unwrap();
    }
    assert!(next[1..].iter().all(|&k| k == MSGS));
    assert_eq!(rx.poll().unwrap(), None);
}

#[test]
fn a_short_buffer_drains_the_message_and_reports_truncation() {
    let (_r, eps) = endpoints(small(2));
    let (mut rx, mut tx) = take2(eps);
    let data = pattern(4, 5000);
    let sent = data.clone();
    let h = std::thread::spawn(move || {
        tx.send(0, &sent).unwrap();
        tx.send(0, b"next").unwrap();
    });
    let mut buf = vec![0u8; 1500];
    match rx.recv(1, &mut buf) {
        Err(Error::Truncated {
            from: 1,
            len: 5000,
            capacity: 1500,
        }) => {}
        other => panic!("{other:?}"),
    }
    assert_eq!(&buf[..], &data[..1500]);
    assert_eq!(rx.recv(1, &mut buf).unwrap(), 4);
    h.join().unwrap();
}

#[test]
fn sending_to_oneself_or_nowhere_is_refused() {
    let (_r, eps) = endpoints(Config::new(2));
    let (mut a, _b) = take2(eps);
    assert!(matches!(a.send(0, b"x"), Err(Error::BadArgument(_))));
    assert!(matches!(a.send(5, b"x"), Err(Error::BadArgument(_))));
    assert!(matches!(a.recv(9, &mut [0; 4]), Err(Error::BadArgument(_))));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Random sizes, each message in a random order (receiver first or
    /// sender first), deliver exactly the bytes sent.
    #[test]
    fn random_sizes_and_orders_deliver_exactly(
        msgs in proptest::collection::vec((0usize..9000, any::<bool>()), 1..8)
    ) {
        let (_r, eps) = endpoints(small(2));
        let (mut rx, mut tx) = take2(eps);
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let (ready_tx, ready_rx) = mpsc::channel::<()>();
        let plan = msgs.clone();
        let h = std::thread::spawn(move || {
            for (k, &(len, _)) in plan.iter().enumerate() {
                go_rx.recv().unwrap();
                tx.send(0, &pattern(k, len)).unwrap();
                ready_tx.send(()).unwrap();
            }
            tx.stats()
        });
        let mut buf = vec![0u8; 9000];
        let mut want_rf = 0;
        for (k, &(len, receiver_first)) in msgs.iter().enumerate() {
            if receiver_first {
                rx.prepost(1).unwrap();
                want_rf += 1;
                go_tx.send(()).unwrap();
            } else {
                go_tx.send(()).unwrap();
                // Wait for the announcement before granting.
                while rx.poll().unwrap().is_none() {
                    std::thread::yield_now();
                }
            }
            let n = rx.recv(1, &mut buf).unwrap();
            prop_assert_eq!(n, len);
            prop_assert_eq!(&buf[..n], &pattern(k, len)[..]);
            ready_rx.recv().unwrap();
        }
        let st = h.join().unwrap();
        prop_assert_eq!(st.sends_receiver_first, want_rf);
        prop_assert_eq!(st.sends_sender_first, msgs.len() as u64 - want_rf);
    }
}

/// Two nodes sending each other messages larger than their buffers, both
/// driven by one thread with the resumable operations only: each side's
/// sends make progress because the same loop keeps receiving, which is how
/// a single-threaded transport avoids the blocking `send`'s deadlock.
#[test]
fn resumable_operations_let_one_thread_drive_both_directions() {
    let (_r, eps) = endpoints(Config::new(2));
    let (mut a, mut b) = take2(eps);
    let lens = [0usize, 7, 464, 465, 100_000, 300_001];
    let msgs = |seed: usize| -> Vec<Vec<u8>> {
        lens.iter()
            .enumerate()
            .map(|(k, &l)| pattern(seed + k, l))
            .collect()
    };
    let (to_b, to_a) = (msgs(10), msgs(20));
    // Per direction: next message to start, the send under way, the
    // receive under way and what it gathered.
    let mut state = [
        (0, None, None, Vec::new(), Vec::new()),
        (0, None, None, Vec::new(), Vec::new()),
    ];
    let mut chunk = Vec::new();
    let mut rounds = 0;
    while state.iter().any(|s| s.4.len() < lens.len()) {
        rounds += 1;
        assert!(rounds < 1_000_000, "no progress");
        for (dir, st) in state.iter_mut().enumerate() {
            let (tx, rx, dest, src, data) = if dir == 0 {
                (&mut a, &mut b, 1, 0, &to_b)
            } else {
                (&mut b, &mut a, 0, 1, &to_a)
            };
            let (next, sending, receiving, got, done) = st;
            if sending.is_none() && *next < data.len() {
                *sending = Some(tx.send_start(dest, data[*next].len()).unwrap());
                // Only one send per destination at a time.
                assert!(tx.send_start(dest, 1).is_err());
            }
            if let Some(op) = sending.as_mut() {
                if tx.send_step(op, &[&data[*next]]).unwrap() {
                    assert!(op.is_done() && op.sent() == op.len());
                    *sending = None;
                    *next += 1;
                }
            }
            let op = receiving.get_or_insert_with(|| rx.recv_start(src).unwrap());
            while rx.recv_step(op, &mut chunk).unwrap() {
                got.extend_from_slice(&chunk);
                if op.is_done() {
                    assert_eq!(op.total(), Some(got.len()));
                    done.push(std::mem::take(got));
                    *receiving = None;
                    break;
                }
            }
        }
    }
    assert_eq!(state[0].4, to_b);
    assert_eq!(state[1].4, to_a);
    // The large messages took several grants each.
    assert!(a.stats().push_chunks > 4 && b.stats().regrants > 2);
}
