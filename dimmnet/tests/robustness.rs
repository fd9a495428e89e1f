//! Dead peers and corrupt shared words: clear errors, never a hang, never
//! a write outside the buffers.

mod common;

use std::sync::atomic::Ordering;

use common::{endpoints, fabric, pattern, short, small};
use o2g_dimmnet::layout::LLCM_BYTE_FLAGS;
use o2g_dimmnet::{Config, DimmEndpoint, Error, Layout, Nic};

const PGID: u16 = 7;
// Flag-area words (see the `flags` module docs).
const GRANT: usize = 0;
const REQUEST: usize = 8;
const DONE: usize = 16;
const INFO: usize = 24;

fn done(gseq: u32, used: u64, flags: u64, pgid: u16) -> u64 {
    u64::from(gseq) << 32 | used << 20 | flags << 16 | u64::from(pgid)
}

fn pair(config: Config) -> (DimmEndpoint, Nic) {
    let (_r, nics) = fabric(config);
    let mut it = nics.into_iter();
    let rx = DimmEndpoint::new(it.next().unwrap().with_wait(short()), PGID).unwrap();
    let peer = it.next().unwrap();
    peer.seed_all().unwrap();
    (rx, peer)
}

#[test]
fn a_sender_that_dies_after_announcing_times_out_the_receiver() {
    let (mut rx, peer) = pair(Config::new(2));
    // The peer announces 100 KB and dies.
    peer.aotf_u64(0, Layout::flag_area(1) + REQUEST, 1 << 32 | 100_000)
        .unwrap();
    assert_eq!(rx.poll().unwrap(), None, "no byte flag was rung");
    peer.aotf_u8(0, LLCM_BYTE_FLAGS + 1, 1).unwrap();
    assert_eq!(rx.poll().unwrap(), Some((1, 100_000)));
    let e = rx.recv(1, &mut [0u8; 16]).unwrap_err();
    match e {
        Error::Timeout { what, .. } => {
            assert!(what.contains("DONE") && what.contains("node 1"), "{what}")
        }
        other => panic!("{other}"),
    }
}

#[test]
fn a_receiver_that_never_comes_times_out_the_sender() {
    let (_r, eps) = endpoints(Config::new(2));
    let mut it = eps.into_iter();
    let _rx = it.next().unwrap();
    let tx = it.next().unwrap();
    let mut tx = DimmEndpoint::new(tx.nic().clone().with_wait(short()), PGID).unwrap();
    let e = tx.send(0, &[1; 2000]).unwrap_err();
    assert!(e.is_timeout() && e.to_string().contains("grant"), "{e}");
}

#[test]
fn corrupt_done_words_are_refused_before_use() {
    // Each case: (used buffers, flags, chunk bytes, message length).
    let cases = [
        (4095u64, 4u64, 1024u32, 1024u32), // more buffers than granted
        (1, 4, 5000, 5000),                // chunk larger than its buffers
        (2, 4, 2048, 100),                 // chunk larger than the message
        (0, 2 | 4, 4000, 4000),            // BOTF chunk over 464 bytes
        (2, 0, 2048, 2048),                // "not last" although complete
    ];
    for (used, flags, chunk, total) in cases {
        let (mut rx, peer) = pair(small(2));
        let area = Layout::flag_area(1);
        peer.aotf_u64(0, area + INFO, u64::from(chunk) << 32 | u64::from(total))
            .unwrap();
        peer.aotf_u64(0, area + DONE, done(1, used, flags, PGID))
            .unwrap();
        let mut buf = vec![0xeeu8; 64];
        let e = rx.recv(1, &mut buf).unwrap_err();
        assert!(
            matches!(e, Error::Corrupt { node: 1, .. }),
            "{used} {flags} {chunk} {total}: {e}"
        );
        assert!(buf.iter().all(|&b| b == 0xee), "nothing may be copied");
    }
    // A DONE from another process group.
    let (mut rx, peer) = pair(small(2));
    let area = Layout::flag_area(1);
    peer.aotf_u64(0, area + INFO, 10 << 32 | 10).unwrap();
    peer.aotf_u64(0, area + DONE, done(1, 0, 2 | 4, PGID + 1))
        .unwrap();
    assert!(matches!(
        rx.recv(1, &mut [0u8; 16]),
        Err(Error::ForeignPeer { node: 1, .. })
    ));
}

#[test]
fn corrupt_grants_are_refused_by_the_sender() {
    for (remaining, pgid) in [(60_000u64, PGID), (0, PGID), (1, PGID ^ 0xff)] {
        let (_r, nics) = fabric(small(2));
        let mut it = nics.into_iter();
        let rxnic = it.next().unwrap();
        rxnic.seed_all().unwrap();
        let mut tx = DimmEndpoint::new(it.next().unwrap().with_wait(short()), PGID).unwrap();
        let g = 1u64 << 32 | remaining << 16 | u64::from(pgid);
        rxnic.aotf_u64(1, Layout::flag_area(0) + GRANT, g).unwrap();
        let e = tx.send(0, &pattern(0, 5000)).unwrap_err();
        assert!(
            matches!(
                e,
                Error::Corrupt { node: 0, .. } | Error::ForeignPeer { node: 0, .. }
            ),
            "{remaining} {pgid}: {e}"
        );
        // Nothing reached node 0's buffers.
        let mut b = vec![0u8; 2048];
        rxnic.switch_banks().unwrap();
        rxnic
            .dimm_read(rxnic.layout().recv_buffers(1), &mut b)
            .unwrap();
        assert!(b.iter().all(|&x| x == 0));
    }
}

#[test]
fn a_scribbled_bank_word_is_reported() {
    let (r, nics) = fabric(Config::new(2));
    nics[0].seed_all().unwrap();
    // Garbage in node 0's bank-select word: transfers into it are refused.
    let bank_word = nics[0].layout().llcm(0, o2g_dimmnet::layout::LLCM_SIZE);
    r.u64_at(bank_word)
        .unwrap()
        .store(u64::MAX, Ordering::Release);
    nics[1].seed_all().unwrap();
    let e = nics[1]
        .push(
            0,
            o2g_dimmnet::NicAddr::Llcm(0),
            o2g_dimmnet::NicAddr::Dimm(0),
            8,
            0,
        )
        .unwrap_err();
    assert!(matches!(e, Error::Corrupt { node: 0, .. }), "{e}");
}
