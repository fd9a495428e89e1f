//! The timing model's arithmetic on scenarios small enough to work out by
//! hand, with round-number costs (`ROUND`). Each expected time is derived
//! in the comment above it from the rules of the `vclock` module:
//! a packet issued at `t` leaves at `max(t, send engine) + pkt_gen +
//! (header + payload) * link`, reaches the card `wire + switch` later and
//! lands `rx_per_packet + payload * mem` after the later of that and the
//! stream's previous packet; a host acting on a word catches up with its
//! stamp and pays its loads.

mod common;

use std::sync::atomic::Ordering;

use o2g_dimmnet::costs::NS;
use o2g_dimmnet::layout::LLCM_USER;
use o2g_dimmnet::{
    AllToAllBarrier, Barrier, Config, Costs, Datagrams, Detector, DimmEndpoint, Nic, NicAddr,
};

const ROUND: Costs = Costs {
    uc_store: 10 * NS,
    wc_line: 20 * NS,
    uc_load: 5 * NS,
    dimm_line_read: 3 * NS,
    pkt_gen: 100 * NS,
    header: 8,
    link_per_byte: NS,
    wire: 50 * NS,
    switch: 200 * NS,
    rx_per_packet: 30 * NS,
    mem_per_byte: NS,
    dma_setup: 400 * NS,
    command_stores: 2,
    rdma_packet: 100,
    core_interrupt: 1000 * NS,
    bank_switch: 7000 * NS,
    thread_handoff: 2000 * NS,
};

/// Two (or more) seeded handles charging `ROUND`.
fn nodes(n: u32) -> Vec<Nic> {
    let (_r, nics) = common::fabric(Config::new(n));
    nics.into_iter()
        .map(|nic| {
            nic.seed_all().unwrap();
            nic.with_costs(ROUND)
        })
        .collect()
}

fn ns(nic: &Nic) -> u64 {
    nic.now().unwrap() / NS
}

#[test]
fn an_aotf_round_trip() {
    let n = nodes(2);
    // A stores at 0: its host pays 10. The packet leaves at 10 + 100 +
    // (8 + 8) = 126, reaches B's card at 126 + 50 + 200 = 376 and lands at
    // 376 + 30 + 8 = 414.
    n[0].aotf_u64(1, LLCM_USER, 1).unwrap();
    assert_eq!(ns(&n[0]), 10);
    assert_eq!(ns(&n[1]), 0, "nothing reached B's host yet");
    // B's poll finds it: 414 + one load.
    assert_eq!(n[1].observed(LLCM_USER, 8).unwrap() / NS, 419);
    // B answers at 419: store to 429, leaves 429 + 116 = 545, lands
    // 545 + 250 + 38 = 833; A catches up at 838.
    n[1].aotf_u64(0, LLCM_USER, 1).unwrap();
    assert_eq!(n[0].observed(LLCM_USER, 8).unwrap() / NS, 838);
}

#[test]
fn a_host_that_is_later_already_keeps_its_clock() {
    let n = nodes(2);
    n[1].advance_to(10_000 * NS).unwrap();
    n[0].aotf_u64(1, LLCM_USER, 1).unwrap();
    assert_eq!(n[1].observed(LLCM_USER, 8).unwrap() / NS, 10_005);
    // Reading a word nobody wrote costs its loads only.
    assert_eq!(n[0].observed(LLCM_USER + 64, 16).unwrap() / NS, 20);
    // Computation moves the clock by what it is charged.
    assert_eq!(n[0].spend(30 * NS).unwrap() / NS, 50);
}

#[test]
fn a_second_botf_packet_queues_behind_the_first() {
    let n = nodes(2);
    // 464 B: the host writes 48 + 464 = 512 B (16 lines of 20) and kicks
    // (10): 330. The packet leaves at 330 + 100 + 472 = 902, reaches the
    // card at 1152 and lands at 1152 + 30 + 464 = 1646.
    n[0].botf(1, LLCM_USER, &[7; 464]).unwrap();
    assert_eq!(ns(&n[0]), 330);
    assert_eq!(n[1].observed(LLCM_USER + 456, 8).unwrap() / NS, 1651);

    let n = nodes(2);
    // 465 B: the same first packet, then 1 B through the other window:
    // the host writes 49 B (2 lines) and kicks: 330 + 50 = 380. The link is
    // busy until 902: it leaves at 902 + 100 + 9 = 1011, reaches the card
    // at 1261, and waits for the first packet's deposit (1646): 1646 + 30
    // + 1 = 1677.
    n[0].botf(1, LLCM_USER, &[7; 465]).unwrap();
    assert_eq!(ns(&n[0]), 380);
    assert_eq!(n[1].observed(LLCM_USER + 464, 1).unwrap() / NS, 1682);
    // A third packet reuses window 0, free once packet 1 left (902): the
    // host waits for it, then writes 48 + 8 B (2 lines) and kicks.
    n[0].botf_packet(1, LLCM_USER, &[1; 8]).unwrap();
    assert_eq!(ns(&n[0]), 902 + 40 + 10);
}

#[test]
fn a_push_and_its_ack() {
    let n = nodes(2);
    // The command: 2 stores, 20. The DMA starts at 420 and reads 100 B
    // per packet (1 ns a byte):
    // packet 1 ready 520, leaves 520 + 100 + 108 = 728, lands 978 + 130 = 1108;
    // packet 2 ready 620, leaves 728 + 208 = 936, card 1186, lands 1316;
    // packet 3 (50 B) ready 670, leaves 936 + 158 = 1094, card 1344,
    //   lands 1344 + 80 = 1424.
    // The ACK leaves B at 1424 + 108 = 1532, lands at A at 1782 + 30 = 1812.
    let ack = n[0]
        .push(
            1,
            NicAddr::Llcm(LLCM_USER),
            NicAddr::Llcm(LLCM_USER),
            250,
            0,
        )
        .unwrap();
    assert_eq!(ns(&n[0]), 20);
    n[0].wait_ack(ack).unwrap();
    assert_eq!(ns(&n[0]), 1817);
    // B acting on the last byte catches up with packet 3.
    assert_eq!(n[1].observed(LLCM_USER + 249, 1).unwrap() / NS, 1429);
}

#[test]
fn a_pull_asks_first() {
    let n = nodes(2);
    // The command (20), then a request packet to B: leaves 20 + 108 = 128,
    // B's card at 378, whose DMA starts at 778. One 40 B packet: ready
    // 818, leaves 818 + 148 = 966, A's card 1216, lands 1216 + 70 = 1286:
    // the PULL's ACK is local.
    let ack = n[0]
        .pull(1, NicAddr::Llcm(LLCM_USER), NicAddr::Llcm(LLCM_USER), 40, 1)
        .unwrap();
    n[0].wait_ack(ack).unwrap();
    assert_eq!(ns(&n[0]), 1291);
}

#[test]
fn a_bank_switch_waits_for_dma_into_the_bank() {
    let n = nodes(2);
    let dimm = n[0].layout().dimm_user();
    // One 100 B packet into B's network bank: ready 520, leaves 728,
    // lands 1108.
    n[0].push(1, NicAddr::Llcm(LLCM_USER), NicAddr::Dimm(dimm), 100, 0)
        .unwrap();
    n[1].switch_banks().unwrap();
    assert_eq!(ns(&n[1]), 1108 + 7000);
    // Reading 64 B of the bank: 2 lines of 3.
    let mut b = [0u8; 64];
    n[1].dimm_read(dimm, &mut b).unwrap();
    assert_eq!(ns(&n[1]), 8108 + 6);
}

#[test]
fn interrupt_aotfs_wait_for_the_core_pu() {
    let n = nodes(2);
    // Like an AOTF to the card (376), then the core PU: 1376.
    n[0].aotf_interrupt(1, LLCM_USER, 4, 5).unwrap();
    assert_eq!(n[1].observed(LLCM_USER, 16).unwrap() / NS, 1376 + 10);
    // A second one right after: store at 20, leaves max(20, 126) + 116 =
    // 242, card 492; the core PU is busy until 1376: done at 2376.
    n[0].aotf_interrupt(1, LLCM_USER, 4, 6).unwrap();
    assert_eq!(n[1].observed(LLCM_USER + 16, 8).unwrap() / NS, 2376 + 5);
    let count = n[1].llcm_u64(LLCM_USER).unwrap().load(Ordering::Acquire);
    assert_eq!(count, 2);
}

#[test]
fn unmodelled_handles_charge_nothing() {
    let n = nodes(2);
    let quiet = n[0].clone().unmodelled();
    quiet.aotf_u64(1, LLCM_USER, 1).unwrap();
    quiet.botf(1, LLCM_USER, &[0; 1000]).unwrap();
    assert_eq!(ns(&n[0]), 0);
    assert_eq!(n[1].observed(LLCM_USER, 8).unwrap() / NS, 5);
}

/// A DIMM_Send/DIMM_Recv ping-pong between two threads gives the same
/// modelled times however the threads interleave on this host.
#[test]
fn send_recv_times_do_not_depend_on_the_host() {
    let run = || {
        let (_r, nics) = common::fabric(Config::new(2));
        let mut eps: Vec<DimmEndpoint> = nics
            .into_iter()
            .map(|n| DimmEndpoint::new(n.with_costs(ROUND), 7).unwrap())
            .collect();
        let mut b = eps.pop().unwrap();
        let mut a = eps.pop().unwrap();
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut buf = vec![0u8; 40_000];
                for len in [8, 464, 465, 5000, 40_000] {
                    b.recv(0, &mut buf).unwrap();
                    b.send(0, &buf[..len]).unwrap();
                }
            });
            let mut buf = vec![0u8; 40_000];
            for len in [8, 464, 465, 5000, 40_000] {
                a.send(1, &vec![3; len]).unwrap();
                assert_eq!(a.recv(1, &mut buf).unwrap(), len);
                // Let the other thread run ahead or behind in real time.
                std::thread::yield_now();
            }
        });
        (a.nic().now().unwrap(), b.nic().now().unwrap())
    };
    let first = run();
    assert!(first.0 > 0 && first.1 > 0);
    for _ in 0..3 {
        assert_eq!(run(), first);
    }
}

#[test]
fn the_all_to_all_barrier_takes_one_leg_and_fagus_two() {
    let run = |all_to_all: bool| -> Vec<u64> {
        let threads: Vec<_> = nodes(2)
            .into_iter()
            .map(|nic| {
                std::thread::spawn(move || {
                    if all_to_all {
                        AllToAllBarrier::new(nic.clone()).unwrap().wait().unwrap();
                    } else {
                        Barrier::new(nic.clone()).unwrap().wait().unwrap();
                    }
                    ns(&nic)
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).collect()
    };
    // Each node stores a 4-byte AOTF at 0 (10); it leaves at 10 + 100 +
    // (8 + 4) = 122, reaches the other card at 372 and lands at 372 + 30 +
    // 4 = 406; each node's poll finds the other's at 406 + 5.
    assert_eq!(run(true), vec![411, 411]);
    // Fagus: node 1's SYNC_ENTRY lands at node 0 at 406, node 0 sees it at
    // 411 and stores the SYNC_PERMIT (421), which lands at node 1 at 421 +
    // 112 + 250 + 34 = 817, seen at 822.
    assert_eq!(run(false), vec![421, 822]);
}

#[test]
fn barriers_of_four_nodes_take_the_same_modelled_time_however_threads_run() {
    let run = |all_to_all: bool| -> Vec<u64> {
        let threads: Vec<_> = nodes(4)
            .into_iter()
            .map(|nic| {
                std::thread::spawn(move || {
                    let clock = nic.clone();
                    if all_to_all {
                        let mut b = AllToAllBarrier::new(nic).unwrap();
                        (0..50).for_each(|_| b.wait().unwrap());
                    } else {
                        let mut b = Barrier::new(nic).unwrap();
                        (0..50).for_each(|_| b.wait().unwrap());
                    }
                    ns(&clock)
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).collect()
    };
    for all_to_all in [false, true] {
        let first = run(all_to_all);
        for _ in 0..5 {
            assert_eq!(run(all_to_all), first, "all-to-all: {all_to_all}");
        }
    }
}

#[test]
fn a_detection_thread_costs_one_hand_off() {
    let receive = |thread: bool| -> u64 {
        let mut n = nodes(2).into_iter();
        let (a, b) = (n.next().unwrap(), n.next().unwrap());
        let mut a = Datagrams::new(a, LLCM_USER).unwrap();
        let mut b = Datagrams::new(b, LLCM_USER).unwrap();
        let mut buf = vec![0u8; 10_000];
        a.sendto(1, &buf.clone()).unwrap();
        if thread {
            let d = Detector::start(&b).unwrap();
            d.recvfrom(&mut b, &mut buf).unwrap();
        } else {
            b.recvfrom(&mut buf).unwrap();
        }
        ns(b.nic())
    };
    let (inline, threaded) = (receive(false), receive(true));
    assert_eq!(threaded - inline, 2000);
    // The receiver switched banks (7000) and read 16 + 10000 B of the bank
    // (314 lines of 3), after the datagram had landed.
    assert!(inline > 7000 + 314 * 3, "{inline}");
}
