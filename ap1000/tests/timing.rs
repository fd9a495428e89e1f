//! The timing model's arithmetic on scenarios small enough to work out by
//! hand, with round-number costs (`ROUND`, in ns; a line takes 16 ns on
//! the link and 8 ns through the network). Each expected time is derived
//! in the comment above it from the rules in the `send` and `recv`
//! modules' docs.

use std::time::Duration;

use o2g_ap1000::costs::NS;
use o2g_ap1000::{Cell, Config, Costs, Filter, Machine, ReceiveMode, SendMode};

const ROUND: Costs = Costs {
    send_call: 100 * NS,
    recv_call: 50 * NS,
    scan_header: 10 * NS,
    store_word: NS,
    load_word: NS,
    mem_line: 4 * NS,
    ls_hit: 2 * NS,
    ls_miss: NS,
    ls_loop: NS,
    trap: 20 * NS,
    uc_store: 3 * NS,
    uc_copy_word: 5 * NS,
    dma_setup: 40 * NS,
    interrupt: 30 * NS,
    send_done: 5 * NS,
    rx_setup: 70 * NS,
    rx_done: 10 * NS,
    invalidate_line: NS,
    copy_word: 2 * NS,
    link_per_byte: NS,
    net_delay: 8 * NS,
};

/// 4 KiB of memory, a 16-line cache (0x100 and 0x200 share entry 0; the
/// header buffer at 0xfe0 uses entries 14 and 15), a 4-line FIFO.
fn config(receive: ReceiveMode, ring: usize) -> Config {
    Config {
        costs: ROUND,
        receive,
        memory_bytes: 4096,
        cache_bytes: 256,
        fifo_lines: 4,
        ring_bytes: ring,
        header_addr: 4096 - 32,
        timeout: Duration::from_secs(10),
    }
}

fn cells(receive: ReceiveMode, ring: usize) -> (Cell, Cell) {
    let m = Machine::new(2, config(receive, ring)).unwrap();
    (m.cell(0).unwrap(), m.cell(1).unwrap())
}

fn ns(c: &Cell) -> u64 {
    c.now() / NS
}

const TEN: &[u8] = b"0123456789";

#[test]
fn line_sending_hits_into_a_ring() {
    let (a, b) = cells(ReceiveMode::Ring, 256);
    // Writing 10 B: 3 words and a fill, 7.
    a.write(0x100, TEN).unwrap();
    assert_eq!(ns(&a), 7);
    // send_call 107; the header's two lines at q: 4 words and a fill each,
    // 123. LSEND(q) hits: 125, leaves 141, arrives 149; LSEND(q+16): 127,
    // leaves 157, arrives 165; LSENDE of the body: 129, leaves 173,
    // arrives 181.
    a.send(1, 7, 0x100, 10, SendMode::Line).unwrap();
    assert_eq!(ns(&a), 129);
    let mut got = Vec::new();
    // B: recv_call 50; the header arrived at 165, scan 175; the body at 181.
    let info = b.recv(Filter::ANY, &mut got).unwrap();
    assert_eq!(ns(&b), 181);
    assert_eq!(info.arrived / NS, 181);
    assert_eq!((got.as_slice(), info.src, info.tag), (TEN, 0, 7));
    let s = a.stats();
    assert_eq!((s.line_sends, s.hits, s.misses, s.traps), (3, 3, 0, 0));
}

#[test]
fn a_miss_sends_from_memory_which_copy_back_made_current() {
    let (a, b) = cells(ReceiveMode::Ring, 256);
    a.write(0x100, TEN).unwrap();
    // 0x200 evicts 0x100's dirty line: a word, a write-back and a fill: 16.
    a.write(0x200, &[1; 4]).unwrap();
    assert_eq!(ns(&a), 16);
    assert!(!a.cached(0x100));
    // send 116, header 132; LSEND q 134 (leaves 150), q+16 136 (leaves
    // 166, arrives 174); LSENDE misses: 137, the line ready at 141,
    // leaves 182, arrives 190.
    a.send(1, 0, 0x100, 10, SendMode::Line).unwrap();
    assert_eq!(ns(&a), 137);
    let mut got = Vec::new();
    b.recv(Filter::ANY, &mut got).unwrap();
    assert_eq!(ns(&b), 190);
    assert_eq!(got, TEN, "the write-back carried the bytes to memory");
    let s = a.stats();
    assert_eq!((s.hits, s.misses), (2, 1));
}

#[test]
fn a_full_fifo_traps_and_the_store_is_retried() {
    let (a, b) = cells(ReceiveMode::Ring, 256);
    // 64 B: four lines of 4 words and a fill, 32.
    a.write(0x100, &[9; 64]).unwrap();
    assert_eq!(ns(&a), 32);
    // send 132, header 148. Lines leave 16 apart as the link allows:
    // L0 hit 150 -> leaves 166; L1 152 -> 182 (arrives 190);
    // L2 loop 153, hit 155 -> 198; L3 loop 156, hit 158 -> 214;
    // L4 loop 159: four lines in the FIFO, none gone: trap to 179 (the
    //   oldest left at 166), hit 181 -> 230;
    // L5 (LSENDE) at 181: the FIFO holds 182..230: trap to 201, hit 203
    //   -> leaves 246, arrives 254.
    a.send(1, 0, 0x100, 64, SendMode::Line).unwrap();
    assert_eq!(ns(&a), 203);
    let s = a.stats();
    assert_eq!((s.line_sends, s.hits, s.traps), (6, 6, 2));
    let mut got = Vec::new();
    // B: 50, header at 190 + scan 200, body's last line 254.
    b.recv(Filter::ANY, &mut got).unwrap();
    assert_eq!(ns(&b), 254);
    assert_eq!(got, [9; 64]);
}

#[test]
fn the_normal_path_interrupts_then_dmas() {
    let (a, b) = cells(ReceiveMode::Dma, 256);
    a.write(0x100, TEN).unwrap();
    // send_call 107; header by 8 uncached stores 131; 3 words copied 146;
    // DMA set-up 186. The DMA has line i ready at 186 + 4(i + 1):
    // header lines leave 206 and 222 (arrive 214, 230).
    a.send(1, 3, 0x100, 10, SendMode::Dma).unwrap();
    assert_eq!(ns(&a), 186);
    // B's handler 230..330 programs the DMA; the body line waits: leaves
    // max(198, 222, 330 - 8) + 16 = 338, arrives 346; completion handler
    // 346..386. B: recv_call 50, catch up 386, scan 396.
    let mut got = Vec::new();
    let info = b.recv(Filter::ANY, &mut got).unwrap();
    assert_eq!(ns(&b), 396);
    assert_eq!((got.as_slice(), info.tag), (TEN, 3));
    assert_eq!(b.stats().interrupts, 2);
    // A second send pays the first DMA's completion interrupt (it ended
    // at 338): 286 -> 338 + 35 = 373; header 397; copy 412; set-up 452.
    // Lines ready 456, 460, 464 leave 472, 488 (arrive 496); handler
    // 496..596; the body leaves 604, arrives 612; completion 612..652.
    a.send(1, 3, 0x100, 10, SendMode::Dma).unwrap();
    assert_eq!(ns(&a), 452);
    // B was busy computing until 996: both handlers interrupted it
    // (100 + 40), then recv_call: 996 + 140 + 50 + scan 10.
    b.spend(600 * NS);
    b.recv(Filter::ANY, &mut got).unwrap();
    assert_eq!(ns(&b), 1196);
}

#[test]
fn line_sending_to_a_normal_receiver_waits_for_its_dma() {
    let (a, b) = cells(ReceiveMode::Dma, 256);
    a.write(0x100, TEN).unwrap();
    // As in the ring case the header arrives at 149 and 165; the handler
    // runs 165..265; the body (ready 129) leaves max(157, 257) + 16 =
    // 273, arrives 281; completion 281..321. A's CPU is done at 129: the
    // FIFO held all three lines.
    a.send(1, 0, 0x100, 10, SendMode::Line).unwrap();
    assert_eq!(ns(&a), 129);
    let mut got = Vec::new();
    b.recv(Filter::ANY, &mut got).unwrap();
    assert_eq!(ns(&b), 331);
    assert_eq!(got, TEN);
}

#[test]
fn a_message_that_wraps_is_copied_and_a_full_ring_holds_the_sender_back() {
    // A 256 B ring; 200 B messages take 32 + 208 = 240 B. The second runs
    // from 240 to 480: its last 14 lines wait for B to free the first.
    let (a, b) = cells(ReceiveMode::Ring, 256);
    let data: Vec<u8> = (0..200u32).map(|i| (i * 7) as u8).collect();
    let sender = std::thread::spawn({
        let data = data.clone();
        move || {
            for _ in 0..2 {
                a.write(0x100, &data).unwrap();
                a.send(1, 0, 0x100, 200, SendMode::Line).unwrap();
            }
            a
        }
    });
    let mut got = Vec::new();
    let first = b.recv(Filter::ANY, &mut got).unwrap();
    assert_eq!((got.as_slice(), first.wrap_copied), (&data[..], 0));
    let x1 = ns(&b);
    // The second recvs: recv_call, the USED header (scan) and its 15 lines
    // invalidated: the first message's place is free at x1 + 75.
    let second = b.recv(Filter::ANY, &mut got).unwrap();
    assert_eq!(got, data);
    // The 14 lines that waited arrive from the free on, 16 apart at best.
    assert!(
        second.arrived / NS >= x1 + 75 + 14 * 16,
        "{second:?} after {x1}"
    );
    // 224 B were past the end: 56 words copied, 2 each.
    assert_eq!(second.wrap_copied, 224);
    assert_eq!(ns(&b), second.arrived / NS + 112);
    let s = b.stats();
    assert_eq!((s.wrap_copies, s.wrap_bytes, s.received), (1, 224, 2));
    sender.join().unwrap();
}

/// A ping-pong in each mode gives the same modelled times however the two
/// threads interleave on this host.
#[test]
fn ping_pong_times_do_not_depend_on_the_host() {
    let run = |receive: ReceiveMode, send: SendMode| {
        let (a, b) = cells(receive, 2048);
        let sizes = [10usize, 100, 1000, 1500, 1000, 10];
        let responder = std::thread::spawn(move || {
            let mut buf = Vec::new();
            for _ in sizes {
                let info = b.recv(Filter::ANY, &mut buf).unwrap();
                b.write(0x400, &buf).unwrap();
                b.send(0, 1, 0x400, info.len, send).unwrap();
            }
            b.now()
        });
        let mut buf = Vec::new();
        for (i, &len) in sizes.iter().enumerate() {
            let data: Vec<u8> = (0..len).map(|j| (i + j) as u8).collect();
            a.write(0x103, &data).unwrap();
            a.send(1, 0, 0x103, len, send).unwrap();
            a.recv(Filter::ANY, &mut buf).unwrap();
            assert_eq!(buf, data, "echoed intact");
            std::thread::yield_now();
        }
        (a.now(), responder.join().unwrap(), a.stats())
    };
    for receive in [ReceiveMode::Dma, ReceiveMode::Ring] {
        for send in [SendMode::Dma, SendMode::Line] {
            let first = run(receive, send);
            assert!(first.0 > 0);
            for _ in 0..3 {
                assert_eq!(run(receive, send), first, "{receive:?} {send:?}");
            }
        }
    }
}
