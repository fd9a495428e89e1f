//! The timing model's arithmetic on scenarios small enough to work out by
//! hand, with round-number costs (`ROUND`). Each expected time is derived
//! in the comment above it from the rules of the crate's `clock` module:
//!
//! - PB: the host pays 3 stores (30); the board decodes (20) and, for
//!   another node, sends header + id (8 + 4 B at 1 ns) that arrives
//!   `link_latency + board_rx` (1005) later;
//! - EXT: an id already there costs one read (50); a polling EXT takes a
//!   later id at its arrival + 50; an interrupt EXT wakes at arrival +
//!   `irq_entry + read + write + wakeup` (2000 + 50 + 10 + 3000 = 5060),
//!   or later if it was still going to sleep (50 + 500 after it began);
//! - CACHE and WB: the host pays 2 stores (20) and one status read (50)
//!   once the board is done; a page DMA is 100 + 4096, a twin copy or a
//!   diff 2 x 4096 (1 ns a byte of board memory); a diff run costs 30 +
//!   its bytes at home and 4 + its bytes on the link.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use o2g_hyphen::costs::NS;
use o2g_hyphen::wait::WaitPolicy;
use o2g_hyphen::{Board, BoardConfig, Costs, GlobalPage, Node, Overflow, PAGE};
use o2g_nicmem::Region;

const ROUND: Costs = Costs {
    pci_write: 10 * NS,
    pci_read: 50 * NS,
    pb_stores: 3,
    command_stores: 2,
    board_cmd: 20 * NS,
    board_rx: 5 * NS,
    dma_setup: 100 * NS,
    dma_per_byte: NS,
    mem_per_byte: NS,
    run_setup: 30 * NS,
    header: 8,
    link_per_byte: NS,
    link_latency: 1000 * NS,
    irq_entry: 2000 * NS,
    wakeup: 3000 * NS,
    sleep_entry: 500 * NS,
};

/// A board of `n` nodes on a fresh region (unlinked at once).
fn board(n: u32) -> Board {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let cfg = BoardConfig {
        nodes: n,
        dsm_pages: 4,
        cache_pages: 2,
        twin_pages: 2,
        ..BoardConfig::default()
    };
    let name = format!(
        "o2g-hyphen-timing-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let region = Region::create_shm(&name, Board::required_len(&cfg).unwrap()).unwrap();
    Region::unlink_shm(&name).unwrap();
    Board::create(Arc::new(region), cfg).unwrap()
}

fn node(b: &Board, id: u32, policy: WaitPolicy) -> Node {
    b.node(id, policy).unwrap().with_costs(ROUND)
}

fn polling() -> WaitPolicy {
    WaitPolicy::polling(Duration::from_secs(10))
}

fn interrupt() -> WaitPolicy {
    WaitPolicy::blocking(Duration::from_secs(10))
}

fn ns(n: &Node) -> u64 {
    n.now().unwrap() / NS
}

#[test]
fn a_pb_to_another_node_and_a_polling_ext() {
    let b = board(2);
    let (a, z) = (node(&b, 0, polling()), node(&b, 1, polling()));
    // A's host: 3 stores, 30. Its board: 30 + 20 + 12 = 62 on the link;
    // the id is in B's FIFO at 62 + 1000 + 5 = 1067.
    a.pb(1, 7, Overflow::Error).unwrap();
    assert_eq!(ns(&a), 30);
    assert_eq!(a.board_now().unwrap() / NS, 62);
    assert_eq!(ns(&z), 0, "nothing reached B's host yet");
    // B polls from 0 and reads the id as it arrives: 1067 + 50.
    assert_eq!(z.ext().unwrap(), 7);
    assert_eq!(ns(&z), 1117);
}

#[test]
fn an_interrupt_ext_pays_the_handler_and_the_wake_up() {
    let b = board(2);
    let (a, z) = (node(&b, 0, polling()), node(&b, 1, interrupt()));
    a.pb(1, 7, Overflow::Error).unwrap();
    // The id is in the FIFO on this host already, but in virtual time it
    // arrives at 1067, after B began its EXT at 0: B read the FIFO empty
    // and slept (done by 550), and the interrupt wakes it at 1067 + 5060.
    assert_eq!(z.ext().unwrap(), 7);
    assert_eq!(ns(&z), 6127);
    // An id that was there when the EXT began costs one read, even for
    // an interrupt EXT: B is at 6127, the next id arrives at
    // max(30 + 30, 62) + 32 + 1005 = 1099.
    a.pb(1, 8, Overflow::Error).unwrap();
    assert_eq!(z.ext().unwrap(), 8);
    assert_eq!(ns(&z), 6177);
}

#[test]
fn an_interrupt_just_after_the_ext_began_waits_for_the_sleep() {
    let b = board(2);
    let (a, z) = (node(&b, 0, polling()), node(&b, 1, interrupt()));
    // B begins its EXT at 1000; the id arrives at 1067, before B is
    // asleep (1000 + 50 + 500 = 1550) but the interrupt's path still
    // takes its 5060: max(1550, 1067 + 5060) = 6127.
    z.advance_to(1000 * NS).unwrap();
    a.pb(1, 1, Overflow::Error).unwrap();
    z.ext().unwrap();
    assert_eq!(ns(&z), 6127);
    // With a slow sleep (10000) the host is still going to sleep when the
    // interrupt's work would be over: A's next id, sent from 6200, is
    // stored by 6230, on the link until 6262 and in B's FIFO at 7267,
    // after B began (6127); the interrupt path would end at 12327, but
    // B only ends its sleep entry at 6127 + 50 + 10000 = 16177.
    let slow = Costs {
        sleep_entry: 10_000 * NS,
        ..ROUND
    };
    let z = z.with_costs(slow);
    a.advance_to(6200 * NS).unwrap();
    a.pb(1, 2, Overflow::Error).unwrap();
    z.ext().unwrap();
    assert_eq!(ns(&z), 16_177);
}

#[test]
fn arrival_carries_the_senders_clock_and_a_later_host_keeps_its_own() {
    let b = board(2);
    let (a, z) = (node(&b, 0, polling()), node(&b, 1, polling()));
    // A computes 5000 first: store to 5030, link from 5050 to 5062, in
    // B's FIFO at 6067; B catches up: 6117.
    assert_eq!(a.spend(5000 * NS).unwrap() / NS, 5000);
    a.pb(1, 1, Overflow::Error).unwrap();
    z.ext().unwrap();
    assert_eq!(ns(&z), 6117);
    // B is later than the next arrival (max(5062, 5060) + 32 + 1005 =
    // 6099): it pays only its read.
    z.advance_to(20_000 * NS).unwrap();
    a.pb(1, 2, Overflow::Error).unwrap();
    z.ext().unwrap();
    assert_eq!(ns(&z), 20_050);
    // try_ext that finds nothing charges nothing.
    assert_eq!(z.try_ext().unwrap(), None);
    assert_eq!(ns(&z), 20_050);
}

#[test]
fn a_pb_to_the_own_node_skips_the_link() {
    let b = board(2);
    let a = node(&b, 0, polling());
    // Stores to 30, the board queues the id at 50; the poll: 50 + 50.
    a.pb(0, 3, Overflow::Error).unwrap();
    assert_eq!(a.try_ext().unwrap(), Some(3));
    assert_eq!(ns(&a), 100);
}

#[test]
fn a_cache_of_one_page() {
    let b = board(2);
    let (h, n) = (node(&b, 0, polling()), node(&b, 1, polling()));
    let page = GlobalPage { home: 0, page: 3 };
    // Remote: stores to 20; the board decodes and asks (20 + 8 B): 48;
    // the home has the request at 48 + 1005 = 1053 and streams header +
    // page (4104) back: 5157, here at 5157 + 1005 = 6162; DMA to the host
    // (4196) and twin copy (8192): 18550; the status read: 18600.
    let e = n.cache(page).unwrap();
    assert_eq!(ns(&n), 18_600);
    assert_eq!(n.board_now().unwrap() / NS, 18_550);
    // A hit: stores, decode, status read.
    assert_eq!(n.cache(page).unwrap(), e);
    assert_eq!(ns(&n), 18_600 + 20 + 20 + 50);
    // Local: stores to 20, decode 40, DMA and twin copy: 12428; 12478.
    h.cache(GlobalPage { home: 0, page: 1 }).unwrap();
    assert_eq!(ns(&h), 12_478);
}

/// WB of `k` one-byte dirty runs of a page homed on the other node,
/// right after its CACHE: the WB's own modelled time.
fn write_back_runs(k: usize) -> (u64, usize) {
    let b = board(2);
    let n = node(&b, 1, polling());
    let e = n.cache(GlobalPage { home: 0, page: 0 }).unwrap();
    let stride = PAGE / k;
    for i in 0..k {
        n.cache_write(e, i * stride, &[1]).unwrap();
    }
    let before = ns(&n);
    let stats = n.write_back(e).unwrap();
    (ns(&n) - before, stats.runs)
}

#[test]
fn a_write_back_of_k_dirty_runs() {
    // After the CACHE the host is at 18600, its board at 18550. Stores:
    // 18620; the board decodes (20), DMAs the page (4196), diffs it
    // (8192) and sends 8 + 4 + 5k B: leaves at 31040 + 5k; the home has
    // it at + 1005 and writes k runs of 1 B (31 each): applied at 32045 +
    // 36k; the ACK (8 B) is back at + 1013 = 33058 + 36k; the status read
    // 33108 + 36k, so the WB takes 14508 + 36k.
    for k in [1usize, 2, 4, 64, 2048] {
        let (took, runs) = write_back_runs(k);
        assert_eq!(runs, k);
        assert_eq!(took, 14_508 + 36 * k as u64, "{k} runs");
    }
}

#[test]
fn a_write_back_carries_its_time_to_the_next_cache_of_the_page() {
    let b = board(2);
    let (h, n) = (node(&b, 0, polling()), node(&b, 1, polling()));
    let page = GlobalPage { home: 0, page: 2 };
    let e = n.cache(page).unwrap();
    n.cache_write(e, 0, &[9]).unwrap();
    n.write_back(e).unwrap();
    // One run applied at home at 32045 + 36 = 32081 (see above). The
    // home CACHEs its own page from 0: decoded at 40, but the page it
    // copies changed at 32081: DMA and twin copy from there, 44469; the
    // status read: 44519.
    h.cache(page).unwrap();
    assert_eq!(ns(&h), 32_081 + 12_388 + 50);
}

#[test]
fn a_local_write_back_skips_the_link() {
    let b = board(1);
    let n = node(&b, 0, polling());
    // CACHE of a local page: 12478, board at 12428.
    let e = n.cache(GlobalPage { home: 0, page: 0 }).unwrap();
    n.cache_write(e, 10, &[1, 2, 3]).unwrap();
    // Stores: 12498; decode, DMA, diff: 12498 + 12408 = 24906; one run of
    // 3 B at home: + 33 = 24939; the status read: 24989.
    n.write_back(e).unwrap();
    assert_eq!(ns(&n), 24_989);
}

#[test]
fn unmodelled_handles_charge_nothing() {
    let b = board(2);
    let a = node(&b, 0, polling()).unmodelled();
    let z = node(&b, 1, polling());
    a.pb(1, 5, Overflow::Error).unwrap();
    let e = a.cache(GlobalPage { home: 1, page: 0 }).unwrap();
    a.write_back(e).unwrap();
    assert_eq!(ns(&a), 0);
    assert!(a.costs().is_none());
    // An unmodelled PB's id is there from the start: one read.
    z.ext().unwrap();
    assert_eq!(ns(&z), 50);
}

/// A PB/EXT ping-pong between two threads, interrupt EXTs, gives the same
/// modelled times however the threads interleave on this host.
#[test]
fn ping_pong_times_do_not_depend_on_the_host() {
    let run = || {
        let b = board(2);
        let (a, z) = (node(&b, 0, interrupt()), node(&b, 1, interrupt()));
        std::thread::scope(|s| {
            s.spawn(|| {
                for _ in 0..10 {
                    let id = z.ext().unwrap();
                    z.pb(0, id, Overflow::Wait).unwrap();
                }
            });
            for i in 0..10 {
                a.pb(1, i, Overflow::Wait).unwrap();
                assert_eq!(a.ext().unwrap(), i);
                std::thread::yield_now();
            }
        });
        (ns(&a), ns(&z))
    };
    // One round: A's id reaches B at 1067, B wakes at 6127, stores to
    // 6157, its board sends 6157 + 32 = 6189, the id reaches A at 7194,
    // A wakes at 7194 + 5060 = 12254. Every round is the same: ten take
    // 122540, and B ends 12254 - 6097 before A.
    let first = run();
    assert_eq!(first, (122_540, 122_540 - 6_097));
    for _ in 0..3 {
        assert_eq!(run(), first);
    }
}
