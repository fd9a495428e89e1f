//! Receives against the failure of each of their peer's two connections:
//! rendezvous data comes on the control connection, so the messages
//! connection closing first (a sender that closes once its data went out)
//! must not fail a receive waiting for it, while the control connection
//! failing must; a posted receive waits for a message on the messages
//! connection, so the control connection closing first must not fail it.
//! The module saw both at finalize: a zero-length message failed its
//! control connection with `UnknownToken`, and a receive failed with the
//! control connection its peer closed first.

mod common;

use common::receiver::{decide, machine, waiting_receive, Machine, LIMITS, PEER};
use o2g_core::proto::credit::Window;
use o2g_core::proto::envelope::{Selector, SourceSel, TagSel};
use o2g_core::proto::receive::{Decision, Failure, Inbound, Next, OnEnd, OnPost};
use o2g_core::proto::wire::{Encoder, Header, Kind};

fn window() -> Window {
    Window {
        bytes: 64,
        msgs: 1,
        largest: 64,
    }
}

#[test]
fn a_closed_messages_connection_leaves_the_data_to_come() {
    let mut rx = machine(2);
    let mut msgs = Inbound::messages(PEER, LIMITS, window());
    let mut ctl = Inbound::control(PEER, LIMITS);
    let token = waiting_receive(&mut rx, &mut msgs, 42, 0);
    let mut failed = Vec::new();
    rx.fail(&mut msgs, Failure::Closed, true, |f| failed.push(f.handle));
    assert!(
        failed.is_empty(),
        "the receive failed with the messages connection"
    );
    assert_eq!(rx.awaiting_data(), 1);
    let data = Encoder::new().encode_ref(Kind::Data, Header::token_envelope(PEER, token), 0, 9);
    assert_eq!(decide(&mut rx, &mut ctl, &data), Decision::Go);
    assert_eq!(ctl.next(0), Next::End);
    match ctl.finish(&mut rx) {
        Some(OnEnd::Completed { handle, len, .. }) => assert_eq!((handle, len), (42, 0)),
        other => panic!("data end: {other:?}"),
    }
    assert_eq!(rx.awaiting_data(), 0);
}

#[test]
fn a_failed_control_connection_fails_the_receive() {
    let mut rx = machine(2);
    let mut msgs = Inbound::messages(PEER, LIMITS, window());
    let mut ctl = Inbound::control(PEER, LIMITS);
    waiting_receive(&mut rx, &mut msgs, 42, 0);
    let mut failed = Vec::new();
    rx.fail(&mut ctl, Failure::Closed, true, |f| failed.push(f.handle));
    assert_eq!(failed, [42]);
    assert_eq!(rx.awaiting_data(), 0);
}

/// A receive posted for `PEER`.
fn posted(rx: &mut Machine) {
    let sel = Selector {
        source: SourceSel::Rank(PEER),
        tag: TagSel::Any,
        context: 0,
    };
    assert!(matches!(rx.post(sel, 43), Ok(OnPost::Queued(_))));
}

#[test]
fn a_closed_control_connection_leaves_the_messages_to_come() {
    let mut rx = machine(2);
    let mut msgs = Inbound::messages(PEER, LIMITS, window());
    let mut ctl = Inbound::control(PEER, LIMITS);
    posted(&mut rx);
    let mut failed = Vec::new();
    rx.fail(&mut ctl, Failure::Closed, true, |f| failed.push(f.handle));
    assert!(
        failed.is_empty(),
        "the receive failed with the control connection"
    );
    assert_eq!(rx.posted_len(), 1);
    rx.fail(&mut msgs, Failure::Closed, true, |f| failed.push(f.handle));
    assert_eq!(
        failed,
        [43],
        "the messages connection is the one it waits on"
    );
}
