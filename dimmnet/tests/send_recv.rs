//! DIMM_Send / DIMM_Recv: both protocol orders, BOTF and PUSH paths,
//! split messages, many senders, truncation, random sizes.

mod common;

use std::sync::mpsc;

use common::{endpoints, pattern, small};
use o2g_dimmnet::{Config, Endpoint, Error};
use proptest::prelude::*;

fn take2(eps: Vec<Endpoint>) -> (Endpoint, Endpoint) {
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
