//! Host tests of `Endpoint` without the module: `/dev/null` stands in for
//! the device (every ioctl fails with `ENOTTY`) and a heap buffer for the
//! shared mapping, into which the tests write as the module would.

use super::*;
use crate::RecvError;

const ENTRIES: u32 = 8;

fn endpoint() -> Endpoint {
    let layout = Layout::synthetic(ENTRIES, 2 * abi::O2G_PAGE);
    let mapping = Mapping::heap(layout.map_bytes);
    Endpoint::from_parts(Device::dev_null(), mapping, layout)
}

/// Puts `buf` in the slab as if the module had queued it with `recv_id`.
fn fake_queued(ep: &mut Endpoint, buf: Vec<u8>, user_data: u64, recv_id: u64) -> RecvHandle {
    ep.reserve().unwrap();
    let key = ep.posted.insert(PostedBuffer {
        buf,
        user_data,
        recv_id,
    });
    RecvHandle { key, recv_id }
}

/// Publishes `records` in the ring, as the module would.
fn complete(ep: &Endpoint, records: &[abi::Completion]) {
    let prod = ep.mapping.atomic_u32(abi::O2G_RING_PROD);
    for c in records {
        let i = prod.load(Ordering::Relaxed);
        ep.mapping.write_completion(ep.layout.record_offset(i), *c);
        prod.store(i.wrapping_add(1), Ordering::Release);
    }
}

fn record(user_data: u64, len: u64, status: i32) -> abi::Completion {
    abi::Completion {
        user_data,
        len,
        source: 3,
        tag: 4,
        context: 5,
        status,
        ..Default::default()
    }
}

fn enotty(err: &Error) -> bool {
    err.raw_os_error() == Some(libc::ENOTTY)
}

#[test]
fn a_refused_post_returns_the_buffer_and_holds_nothing() {
    let mut ep = endpoint();
    let err = ep
        .post(vec![9; 100], Selector::new(Some(1), Some(2), 0), 7)
        .unwrap_err();
    assert!(enotty(&err.error), "{err}");
    assert!(err.to_string().starts_with("O2G_IOC_POST"), "{err}");
    assert_eq!(err.buf.as_deref(), Some(&[9u8; 100][..]));
    assert_eq!(ep.in_flight(), 0);
    assert!(ep.posted.is_empty());
}

#[test]
fn a_bad_selector_is_refused_before_the_module_with_the_buffer_back() {
    let mut ep = endpoint();
    let err = ep
        .post(vec![1, 2, 3], Selector::new(None, Some(u32::MAX), 0), 0)
        .unwrap_err();
    assert!(matches!(err.error, Error::InvalidArgument(_)), "{err}");
    assert_eq!(err.buf, Some(vec![1, 2, 3]));
    assert_eq!(ep.in_flight(), 0);
    // `?` turns a PostError into the plain Error.
    let plain: Error = err.into();
    assert!(plain.to_string().contains("ANY_TAG"), "{plain}");
}

#[test]
fn posting_beyond_the_ring_is_refused_with_ring_full() {
    let mut ep = endpoint();
    for i in 0..ENTRIES {
        fake_queued(&mut ep, vec![0; 4], i.into(), i.into());
    }
    assert_eq!(ep.in_flight(), ENTRIES);
    let err = ep.post(vec![5; 4], Selector::any(0), 0).unwrap_err();
    assert!(
        matches!(err.error, Error::RingFull { in_flight: ENTRIES }),
        "{err}"
    );
    assert_eq!(err.buf, Some(vec![5; 4]));
    // Reaping one makes room again: the next post reaches the ioctl.
    let key = ep.posted.keys()[0];
    complete(&ep, &[record(key.to_user_data(), 0, 0)]);
    assert!(ep.reap().unwrap().is_some());
    let err = ep.post(vec![5; 4], Selector::any(0), 0).unwrap_err();
    assert!(enotty(&err.error), "{err}");
}

#[test]
fn post_raw_checks_its_arguments_before_the_module() {
    let ep = endpoint();
    let sel = Selector::any(0);
    // SAFETY: Every call below fails before or at the ioctl (argument checks,
    // or ENOTTY from /dev/null), so the module never keeps the null buffer.
    let owned_bit = unsafe { ep.post_raw(std::ptr::null_mut(), 0, sel, OWNED_BIT | 1) };
    assert!(
        matches!(owned_bit, Err(Error::InvalidArgument(_))),
        "{owned_bit:?}"
    );
    // SAFETY: As above.
    let too_long = unsafe {
        ep.post_raw(
            std::ptr::null_mut(),
            abi::O2G_MAX_MESSAGE as usize + 1,
            sel,
            1,
        )
    };
    assert!(
        matches!(too_long, Err(Error::InvalidArgument(_))),
        "{too_long:?}"
    );
    // SAFETY: As above.
    let bad_sel = unsafe {
        ep.post_raw(
            std::ptr::null_mut(),
            0,
            Selector::new(Some(u32::MAX), None, 0),
            1,
        )
    };
    assert!(
        matches!(bad_sel, Err(Error::InvalidArgument(_))),
        "{bad_sel:?}"
    );
    // SAFETY: As above.
    let ioctl = unsafe { ep.post_raw(std::ptr::null_mut(), 0, sel, 1) };
    assert!(ioctl.as_ref().is_err_and(enotty), "{ioctl:?}");
    assert_eq!(ep.in_flight(), 0);
}

#[test]
fn reap_returns_buffers_with_their_status() {
    let mut ep = endpoint();
    let ok = fake_queued(&mut ep, vec![0; 16], 100, 1);
    let trunc = fake_queued(&mut ep, vec![0; 16], 101, 2);
    let reset = fake_queued(&mut ep, vec![0; 16], 102, 3);
    let aborted = fake_queued(&mut ep, vec![0; 16], 103, 4);
    complete(
        &ep,
        &[
            record(trunc.key.to_user_data(), 40, -libc::EMSGSIZE),
            record(ok.key.to_user_data(), 10, 0),
            record(reset.key.to_user_data(), 3, -libc::ECONNRESET),
            record(aborted.key.to_user_data(), 3, -libc::ECONNABORTED),
        ],
    );
    assert_eq!(ep.pending_completions().unwrap(), 4);
    let mut got = Vec::new();
    while let Some(r) = ep.reap().unwrap() {
        match r {
            Reaped::Owned(c) => got.push((c.user_data, c.buf.len(), c.written, c.status)),
            Reaped::Raw(r) => panic!("unexpected raw completion {r:?}"),
            other => panic!("unexpected record {other:?}"),
        }
    }
    assert_eq!(
        got,
        vec![
            (101, 16, 16, Err(RecvError::Truncated)),
            (100, 16, 10, Ok(())),
            (102, 16, 3, Err(RecvError::ConnectionFailed)),
            (103, 16, 3, Err(RecvError::Unregistered)),
        ]
    );
    assert_eq!(ep.in_flight(), 0);
    assert!(ep.posted.is_empty());
}

#[test]
fn raw_completions_come_back_as_raw() {
    let mut ep = endpoint();
    ep.reserve().unwrap();
    complete(&ep, &[record(77, 5, -libc::EIO)]);
    match ep.reap().unwrap() {
        Some(Reaped::Raw(r)) => {
            assert_eq!(r.user_data, 77);
            assert_eq!(r.len, 5);
            assert_eq!(r.status, Err(RecvError::Other(libc::EIO)));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(ep.in_flight(), 0);
    assert!(ep.reap().unwrap().is_none());
}

#[test]
fn a_record_naming_no_buffer_is_an_error_and_is_consumed() {
    let mut ep = endpoint();
    let h = fake_queued(&mut ep, vec![1; 8], 5, 1);
    complete(
        &ep,
        &[
            record(OWNED_BIT | 0x1234_0000_0000, 0, 0),
            record(h.key.to_user_data(), 8, 0),
        ],
    );
    let err = ep.reap().unwrap_err();
    assert!(matches!(err, Error::BadAnswer { .. }), "{err}");
    // The next record is still delivered.
    assert!(matches!(ep.reap().unwrap(), Some(Reaped::Owned(c)) if c.user_data == 5));
}

#[test]
fn a_ring_overrun_is_reported_by_reap() {
    let mut ep = endpoint();
    ep.mapping
        .atomic_u32(abi::O2G_RING_PROD)
        .store(ENTRIES + 1, Ordering::Release);
    let err = ep.reap().unwrap_err();
    assert!(matches!(err, Error::RingOverrun { .. }), "{err}");
    assert!(ep.pending_completions().is_err());
}

#[test]
fn cancel_asks_the_module_only_for_receives_still_held() {
    let mut ep = endpoint();
    let h = fake_queued(&mut ep, vec![0; 8], 1, 11);
    // Held: the ioctl is issued (and /dev/null refuses it).
    let err = ep.cancel(&h).unwrap_err();
    assert!(enotty(&err), "{err}");
    assert!(err.to_string().starts_with("O2G_IOC_CANCEL"), "{err}");
    // Reaped: the handle names nothing, so no ioctl and no buffer.
    complete(&ep, &[record(h.key.to_user_data(), 0, 0)]);
    assert!(ep.reap().unwrap().is_some());
    assert_eq!(ep.cancel(&h).unwrap(), None);
    // Not even once the slot is reused by another receive.
    let h2 = fake_queued(&mut ep, vec![0; 8], 2, 12);
    assert_eq!(
        h2.key.to_user_data() & 0xffff_ffff,
        h.key.to_user_data() & 0xffff_ffff
    );
    assert_eq!(ep.cancel(&h).unwrap(), None);
    assert!(ep.cancel(&h2).is_err());
    assert!(ep.cancel_raw(12).as_ref().is_err_and(enotty));
}

#[test]
fn settle_keeps_cancelled_and_completed_buffers_and_gives_up_the_rest() {
    let mut ep = endpoint();
    let cancelled = fake_queued(&mut ep, vec![1], 0, 10);
    let completed = fake_queued(&mut ep, vec![2], 0, 20);
    let in_progress = fake_queued(&mut ep, vec![3], 0, 30);
    complete(&ep, &[record(completed.key.to_user_data(), 1, 0)]);
    let mut asked = Vec::new();
    let Endpoint {
        posted,
        ring,
        mapping,
        ..
    } = &mut ep;
    let unsettled = settle(posted, ring, mapping, |id| {
        asked.push(id);
        id == 10
    });
    asked.sort_unstable();
    assert_eq!(asked, vec![10, 20, 30]);
    // Only the receive that was too late and has not completed is unsettled.
    assert_eq!(unsettled, vec![vec![3]]);
    assert!(ep.posted.get(in_progress.key).is_none());
    assert!(ep.posted.get(cancelled.key).is_some());
    assert!(ep.posted.get(completed.key).is_some());
    assert_eq!(ep.pending_completions().unwrap(), 0);
}

#[test]
fn unexpected_messages_read_the_dump_area_in_place() {
    let ep = endpoint();
    let at = ep.layout.dump_offset + 100;
    ep.mapping.write_bytes(at, b"payload!");
    let stored = abi::StoredMessage {
        id: 9,
        offset: at as u64,
        len: 8,
        source: 1,
        tag: 2,
        context: 3,
        flags: 0,
    };
    let msg = UnexpectedMessage::take(&ep.device, &ep.mapping, &ep.layout, stored).unwrap();
    assert_eq!(msg.data(), b"payload!");
    assert_eq!(
        (msg.source(), msg.tag(), msg.context(), msg.len()),
        (1, 2, 3, 8)
    );
    assert_eq!(
        msg.envelope(),
        crate::Envelope {
            source: 1,
            tag: 2,
            context: 3
        }
    );
    let mut small = [0u8; 3];
    assert_eq!(msg.copy_to(&mut small), 3);
    assert_eq!(&small, b"pay");
    let mut big = [0u8; 20];
    assert_eq!(msg.copy_to(&mut big), 8);
    assert_eq!(&big[..9], b"payload!\0");
    // FREE reaches the ioctl (and /dev/null refuses it).
    let err = msg.free().unwrap_err();
    assert!(enotty(&err), "{err}");
    assert!(err.to_string().starts_with("O2G_IOC_FREE"), "{err}");
}

#[test]
fn an_unexpected_message_outside_the_dump_area_is_refused() {
    let ep = endpoint();
    let stored = abi::StoredMessage {
        id: 9,
        offset: ep.layout.ring_offset as u64,
        len: 8,
        ..Default::default()
    };
    let err = UnexpectedMessage::take(&ep.device, &ep.mapping, &ep.layout, stored).unwrap_err();
    assert!(matches!(err, Error::BadAnswer { .. }), "{err}");
}

#[test]
fn poll_and_probe_reach_their_ioctls() {
    let ep = endpoint();
    let err = ep.poll(Some(Duration::ZERO)).unwrap_err();
    assert!(
        enotty(&err) && err.to_string().starts_with("O2G_IOC_POLL"),
        "{err}"
    );
    let err = ep.probe(Selector::any(0)).unwrap_err();
    assert!(
        enotty(&err) && err.to_string().starts_with("O2G_IOC_PROBE"),
        "{err}"
    );
    let err = ep.probe_claim(Selector::new(Some(2), None, 1)).unwrap_err();
    assert!(enotty(&err), "{err}");
    let err = ep
        .probe(Selector::new(None, Some(u32::MAX), 0))
        .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    assert!(ep.socket_stats(0).as_ref().is_err_and(enotty));
}

#[test]
fn debug_output_does_not_touch_buffers() {
    let mut ep = endpoint();
    fake_queued(&mut ep, vec![0xAB; 4], 0, 1);
    let s = format!("{ep:?}");
    assert!(s.contains("posted_buffers: 1"), "{s}");
    assert!(!s.contains("171"), "{s}");
}

#[test]
fn endpoints_can_move_between_threads() {
    fn is_send_sync<T: Send + Sync>() {}
    is_send_sync::<Endpoint>();
    let ep = endpoint();
    std::thread::spawn(move || assert_eq!(ep.in_flight(), 0))
        .join()
        .unwrap();
}

/// An announcement of `len` bytes at dump offset `at`, as the module writes it.
fn stored(ep: &Endpoint, id: u64, at: usize, len: u64) -> abi::Completion {
    abi::Completion {
        kind: abi::record_kind::STORED,
        msg_id: id,
        offset: (ep.layout.dump_offset + at) as u64,
        len,
        source: 1,
        tag: 2,
        context: 3,
        ..Default::default()
    }
}

#[test]
fn announced_messages_are_read_in_place_and_given_back_through_the_ring() {
    let mut ep = endpoint();
    ep.mapping
        .write_bytes(ep.layout.dump_offset + 64, b"notice");
    complete(&ep, &[stored(&ep, 77, 64, 6), stored(&ep, 78, 0, 0)]);
    let Some(Reaped::Stored(a)) = ep.reap().unwrap() else {
        panic!("no announcement reaped");
    };
    assert_eq!((a.id(), a.envelope().source, a.envelope().tag), (77, 1, 2));
    assert_eq!(ep.announced_data(&a), b"notice");
    // Nothing is stalled: no system call (the /dev/null stand-in would fail).
    ep.give_back(a).unwrap();
    let prod = |ep: &Endpoint| {
        ep.mapping
            .atomic_u32(abi::O2G_RELEASE_PROD)
            .load(Ordering::Acquire)
    };
    assert_eq!(prod(&ep), 1);
    let slot0 = ep.mapping.atomic_u64(abi::O2G_RELEASE_RING);
    assert_eq!(slot0.load(Ordering::Relaxed), 77);
    // A stalled connection makes giving back ask the module to resume it.
    let Some(Reaped::Stored(b)) = ep.reap().unwrap() else {
        panic!("second announcement missing");
    };
    ep.mapping
        .atomic_u32(abi::O2G_STALLED)
        .store(1, Ordering::Release);
    let err = ep.give_back(b).unwrap_err();
    assert!(enotty(&err), "{err:?}");
    assert_eq!(prod(&ep), 2);
    assert_eq!(
        ep.mapping
            .atomic_u64(abi::O2G_RELEASE_RING + 8)
            .load(Ordering::Relaxed),
        78
    );
}

#[test]
fn a_full_release_ring_asks_the_module_to_drain_it() {
    let mut ep = endpoint();
    ep.mapping
        .atomic_u32(abi::O2G_RELEASE_PROD)
        .store(abi::O2G_RELEASE_ENTRIES, Ordering::Release);
    complete(&ep, &[stored(&ep, 5, 0, 1)]);
    let Some(Reaped::Stored(a)) = ep.reap().unwrap() else {
        panic!("no announcement reaped");
    };
    assert!(enotty(&ep.give_back(a).unwrap_err()));
}

#[test]
fn an_announcement_outside_the_dump_area_is_refused() {
    let mut ep = endpoint();
    let bad = stored(&ep, 9, 2 * abi::O2G_PAGE as usize - 2, 8);
    complete(&ep, &[bad]);
    assert!(matches!(ep.reap(), Err(Error::BadAnswer { .. })));
}

#[test]
fn a_record_of_unknown_kind_is_an_error() {
    let mut ep = endpoint();
    complete(
        &ep,
        &[abi::Completion {
            kind: 9,
            ..Default::default()
        }],
    );
    assert!(matches!(ep.reap(), Err(Error::BadAnswer { .. })));
}
