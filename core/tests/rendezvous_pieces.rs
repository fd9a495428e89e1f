//! Rendezvous data in pieces (`Kind::DataPart`, then a last `Kind::Data`):
//! each piece goes where the last one ended, header-only messages may come
//! between pieces, the receive completes once, at the last piece, and a
//! piece that names another receive, runs past the message, or a
//! connection that fails between pieces, fails it.

mod common;

use common::receiver::{machine, waiting_receive, Machine, LIMITS, PEER};
use o2g_core::proto::credit::Window;
use o2g_core::proto::receive::{Control, Decision, Failure, Inbound, Next, OnEnd, Place};
use o2g_core::proto::wire::{Encoder, Header, Kind};

const HANDLE: u64 = 42;

/// A machine with a receive of `size` bytes that matched its request to
/// send, and the control connection its data comes on, with the first
/// piece (`DataPart`, `first` bytes) through it: the token.
fn after_first_piece(size: u64, first: usize) -> (Machine, Inbound, Encoder, u64) {
    let mut rx = machine(2);
    let mut msgs = Inbound::messages(
        PEER,
        LIMITS,
        Window {
            bytes: 64,
            msgs: 1,
            largest: 64,
        },
    );
    let token = waiting_receive(&mut rx, &mut msgs, HANDLE, size);
    let mut ctl = Inbound::control(PEER, LIMITS);
    let mut enc = Encoder::new();
    let head = piece(&mut enc, Kind::DataPart, token, first as u64);
    assert_eq!(header(&mut rx, &mut ctl, &head), Ok(Some(Decision::Go)));
    assert_eq!(payload(&mut rx, &mut ctl, first), (0, None));
    (rx, ctl, enc, token)
}

/// Feeds one header that needs a decision to `conn` and decides it: the
/// decision, or the failure.
fn header(rx: &mut Machine, conn: &mut Inbound, bytes: &[u8]) -> Result<Option<Decision>, Failure> {
    let mut pos = 0;
    loop {
        match conn.next(bytes.len() - pos) {
            Next::Header { max } => pos += conn.feed_header(&bytes[pos..pos + max])?,
            Next::Decide => return conn.decide(rx).map(Some),
            other => panic!("{other:?} in a header"),
        }
    }
}

/// Passes a piece's payload of `len` bytes through `conn`: where it went
/// (offset in the message), and what its end gave.
fn payload(rx: &mut Machine, conn: &mut Inbound, len: usize) -> (u64, Option<OnEnd>) {
    match conn.next(len) {
        Next::Payload {
            to: Place::Recv { handle },
            offset,
            len: n,
        } => {
            assert_eq!((handle, n), (HANDLE, len));
            assert_eq!(conn.next(0), Next::End);
            (offset, conn.finish(rx))
        }
        other => panic!("payload of {len} bytes: {other:?}"),
    }
}

fn piece(enc: &mut Encoder, kind: Kind, token: u64, len: u64) -> [u8; 32] {
    enc.encode_ref(kind, Header::token_envelope(PEER, token), len, 9)
}

#[test]
fn pieces_fill_one_receive_in_order_and_complete_it_once() {
    let (mut rx, mut ctl, mut enc, token) = after_first_piece(10, 4);
    assert!(
        !ctl.at_boundary(),
        "a receive half filled is no place to close"
    );

    // A clear-to-send for this end's own offer, between two pieces.
    let cts = enc.encode_ref(Kind::Cts, Header::token_envelope(PEER, 77), 5, 3);
    assert_eq!(ctl.feed_header(&cts), Ok(cts.len()));
    assert_eq!(
        ctl.next(0),
        Next::Control(Control::Cts {
            token: 77,
            want: 5,
            offer: 3
        })
    );
    assert_eq!(ctl.next(0), Next::End);
    assert_eq!(ctl.finish(&mut rx), None);

    let second = piece(&mut enc, Kind::DataPart, token, 3);
    assert_eq!(header(&mut rx, &mut ctl, &second), Ok(Some(Decision::Go)));
    assert_eq!(payload(&mut rx, &mut ctl, 3), (4, None));
    assert_eq!(rx.awaiting_data(), 0, "the first piece took the wait");

    let last = piece(&mut enc, Kind::Data, token, 3);
    assert_eq!(header(&mut rx, &mut ctl, &last), Ok(Some(Decision::Go)));
    match payload(&mut rx, &mut ctl, 3) {
        (7, Some(OnEnd::Completed { handle, len, .. })) => assert_eq!((handle, len), (HANDLE, 10)),
        other => panic!("last piece: {other:?}"),
    }
    assert!(ctl.at_boundary());
}

#[test]
fn a_piece_for_another_receive_fails_the_connection() {
    let (mut rx, mut ctl, mut enc, token) = after_first_piece(10, 4);
    let other = piece(&mut enc, Kind::Data, token ^ 1, 6);
    assert_eq!(
        header(&mut rx, &mut ctl, &other),
        Err(Failure::UnknownToken(token ^ 1))
    );
}

#[test]
fn pieces_past_the_message_fail_the_connection() {
    let (mut rx, mut ctl, mut enc, token) = after_first_piece(10, 8);
    let last = piece(&mut enc, Kind::Data, token, 3);
    assert_eq!(
        header(&mut rx, &mut ctl, &last),
        Err(Failure::DataTooLong { len: 11, size: 10 })
    );
}

#[test]
fn a_connection_failing_between_pieces_fails_the_receive_once() {
    let (mut rx, mut ctl, _, _) = after_first_piece(10, 4);
    let mut failed = Vec::new();
    rx.fail(&mut ctl, Failure::Closed, true, |f| {
        failed.push((f.handle, f.len))
    });
    assert_eq!(failed, [(HANDLE, 10)]);
}

#[test]
fn a_connection_failing_inside_a_piece_fails_the_receive_once() {
    let (mut rx, mut ctl, mut enc, token) = after_first_piece(10, 4);
    let second = piece(&mut enc, Kind::Data, token, 6);
    assert_eq!(header(&mut rx, &mut ctl, &second), Ok(Some(Decision::Go)));
    let mut failed = Vec::new();
    rx.fail(&mut ctl, Failure::Closed, true, |f| {
        failed.push((f.handle, f.len))
    });
    assert_eq!(failed, [(HANDLE, 10)]);
}
