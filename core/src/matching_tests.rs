//! Unit tests of the matching engine, one MPI rule each.

use super::*;
use std::vec;
use std::vec::Vec;

type TestEngine = Engine<Vec<Slot>, Vec<Bucket>>;

fn engine(posted: usize, unexpected: usize, buckets: usize) -> TestEngine {
    Engine::new(
        vec![Slot::EMPTY; posted],
        vec![Slot::EMPTY; unexpected],
        vec![Bucket::EMPTY; buckets],
        0x5eed,
    )
    .unwrap()
}

fn env(source: u32, tag: u32) -> Envelope {
    Envelope {
        source,
        tag,
        context: 0,
    }
}

fn sel(source: Option<u32>, tag: Option<u32>) -> Selector {
    Selector {
        source: source.map_or(SourceSel::Any, SourceSel::Rank),
        tag: tag.map_or(TagSel::Any, TagSel::Tag),
        context: 0,
    }
}

fn queued(p: Result<Posted, QueueFull>) -> RecvId {
    match p {
        Ok(Posted::Queued(id)) => id,
        other => panic!("expected a queued receive, got {other:?}"),
    }
}

fn unexpected(a: Result<Arrival, QueueFull>) -> MsgId {
    match a {
        Ok(Arrival::Unexpected(id)) => id,
        other => panic!("expected an unexpected message, got {other:?}"),
    }
}

fn matched(a: Result<Arrival, QueueFull>) -> u64 {
    match a {
        Ok(Arrival::Matched { handle }) => handle,
        other => panic!("expected a match, got {other:?}"),
    }
}

fn took(p: Result<Posted, QueueFull>) -> MsgInfo {
    match p {
        Ok(Posted::Matched(_, info)) => info,
        other => panic!("expected a match, got {other:?}"),
    }
}

#[test]
fn no_buckets_is_refused() {
    let r = Engine::new(
        vec![Slot::EMPTY; 1],
        vec![Slot::EMPTY; 1],
        Vec::<Bucket>::new(),
        0,
    );
    assert_eq!(r.err(), Some(ConfigError::NoBuckets));
}

#[test]
fn arrival_goes_to_the_first_posted_of_exact_and_wildcard() {
    for buckets in [1, 3, 64] {
        let mut e = engine(8, 8, buckets);
        queued(e.post(sel(None, Some(5)), 1));
        queued(e.post(sel(Some(1), Some(5)), 2));
        queued(e.post(sel(Some(1), None), 3));
        assert_eq!(matched(e.arrive(env(1, 5), 0, 0)), 1);
        assert_eq!(matched(e.arrive(env(1, 5), 0, 0)), 2);
        assert_eq!(matched(e.arrive(env(1, 5), 0, 0)), 3);
        assert_eq!(e.posted_len(), 0);
        unexpected(e.arrive(env(1, 5), 0, 0));
    }
}

#[test]
fn exact_receive_posted_first_beats_later_wildcard() {
    let mut e = engine(8, 8, 4);
    queued(e.post(sel(Some(2), Some(9)), 10));
    queued(e.post(sel(None, None), 11));
    assert_eq!(matched(e.arrive(env(2, 9), 0, 0)), 10);
    assert_eq!(matched(e.arrive(env(2, 9), 0, 0)), 11);
}

#[test]
fn unexpected_messages_are_taken_in_arrival_order() {
    let mut e = engine(8, 8, 4);
    unexpected(e.arrive(env(1, 1), 10, 100));
    unexpected(e.arrive(env(2, 2), 20, 200));
    unexpected(e.arrive(env(1, 2), 30, 300));
    unexpected(e.arrive(env(1, 1), 40, 400));
    // ANY_TAG from 1: the earliest from rank 1.
    assert_eq!(took(e.post(sel(Some(1), None), 0)).location, 100);
    // Tag 2 from anyone: rank 2's arrived before rank 1's.
    assert_eq!(took(e.post(sel(None, Some(2)), 0)).location, 200);
    // Exact: the one left with that key.
    assert_eq!(took(e.post(sel(Some(1), Some(1)), 0)).location, 400);
    assert_eq!(took(e.post(sel(None, None), 0)).location, 300);
    queued(e.post(sel(None, None), 0));
}

#[test]
fn contexts_are_isolated() {
    let mut e = engine(4, 4, 4);
    let other = Selector {
        context: 1,
        ..sel(None, None)
    };
    queued(e.post(other, 7));
    unexpected(e.arrive(env(0, 0), 0, 0));
    assert!(e.probe(other).is_none());
    assert_eq!(
        matched(e.arrive(
            Envelope {
                context: 1,
                ..env(0, 0)
            },
            0,
            0
        )),
        7
    );
}

#[test]
fn cancel_before_and_after_match() {
    let mut e = engine(4, 4, 4);
    let a = queued(e.post(sel(Some(1), Some(1)), 1));
    let b = queued(e.post(sel(None, Some(1)), 2));
    assert_eq!(e.cancel(a), Ok(1));
    assert_eq!(e.cancel(a), Err(CancelError::TooLate));
    assert_eq!(matched(e.arrive(env(1, 1), 0, 0)), 2);
    assert_eq!(e.cancel(b), Err(CancelError::TooLate));
    let bogus = RecvId::from_raw(u64::from(u32::MAX - 3));
    assert_eq!(e.cancel(bogus), Err(CancelError::InvalidId));
    // A reused slot does not revive the old id.
    let c = queued(e.post(sel(Some(1), Some(1)), 3));
    assert!(c.index == a.index || c.index == b.index);
    assert_eq!(e.cancel(a), Err(CancelError::TooLate));
    assert_eq!(e.cancel(b), Err(CancelError::TooLate));
    assert_eq!(e.cancel(c), Ok(3));
}

#[test]
fn probe_claim_release() {
    let mut e = engine(4, 4, 4);
    let m = unexpected(e.arrive(env(3, 4), 12, 99));
    let (id, info) = e.probe(sel(None, None)).unwrap();
    assert_eq!(id, m);
    assert_eq!((info.len, info.location), (12, 99));
    // Probing leaves it; claiming takes it out of matching.
    assert_eq!(e.probe(sel(Some(3), Some(4))).map(|p| p.0), Some(m));
    assert_eq!(e.claim(m).map(|i| i.location), Ok(99));
    assert_eq!(e.claim(m), Err(StaleId));
    assert!(e.probe(sel(None, None)).is_none());
    queued(e.post(sel(None, None), 5));
    assert_eq!(e.unexpected_len(), 1);
    e.set_location(m, 7).unwrap();
    assert_eq!(e.release(m).map(|i| i.location), Ok(7));
    assert_eq!(e.release(m), Err(StaleId));
    assert_eq!(e.message(m), None);
    assert_eq!(e.unexpected_len(), 0);
}

#[test]
fn releasing_a_queued_message_removes_it_from_matching() {
    let mut e = engine(4, 4, 4);
    let m = unexpected(e.arrive(env(3, 4), 1, 1));
    let n = unexpected(e.arrive(env(3, 4), 2, 2));
    e.release(m).unwrap();
    assert_eq!(took(e.post(sel(Some(3), Some(4)), 0)).location, 2);
    e.release(n).unwrap();
    assert_eq!(e.unexpected_len(), 0);
}

#[test]
fn full_queues_change_nothing() {
    let mut e = engine(1, 1, 2);
    queued(e.post(sel(Some(1), Some(1)), 1));
    assert_eq!(e.post(sel(Some(2), Some(2)), 2), Err(QueueFull));
    unexpected(e.arrive(env(5, 5), 0, 50));
    assert_eq!(e.arrive(env(6, 6), 0, 60), Err(QueueFull));
    // A full unexpected queue still lets a matching arrival through.
    assert_eq!(matched(e.arrive(env(1, 1), 0, 0)), 1);
    // And a post that matches needs no posted slot.
    queued(e.post(sel(Some(9), Some(9)), 9));
    assert_eq!(took(e.post(sel(Some(5), Some(5)), 3)).location, 50);
    assert_eq!((e.posted_len(), e.unexpected_len()), (1, 1));
}

#[test]
fn zero_capacity_always_reports_full() {
    let mut e = engine(0, 0, 1);
    assert_eq!(e.post(sel(None, None), 0), Err(QueueFull));
    assert_eq!(e.arrive(env(0, 0), 0, 0), Err(QueueFull));
    assert_eq!(e.posted_capacity(), 0);
}

#[test]
fn ids_survive_the_raw_round_trip() {
    let id = MsgId {
        index: 0x1234,
        generation: 0xabcd,
    };
    assert_eq!(MsgId::from_raw(id.to_raw()), id);
    assert_eq!(id.to_raw(), 0xabcd_0000_1234);
}

#[test]
fn a_slot_fits_a_cache_line() {
    assert!(core::mem::size_of::<Slot>() <= 64);
    assert_eq!(core::mem::size_of::<Bucket>(), 16);
}

#[test]
fn match_posted_takes_the_first_posted_receive_and_queues_nothing() {
    let mut e = engine(4, 4, 8);
    assert_eq!(e.match_posted(env(1, 5)), None, "nothing posted");
    assert_eq!(e.unexpected_len(), 0, "a miss must not queue the message");
    queued(e.post(sel(None, Some(5)), 10));
    queued(e.post(sel(Some(1), Some(5)), 11));
    assert_eq!(
        e.match_posted(env(1, 5)),
        Some(10),
        "wildcard posted first wins"
    );
    assert_eq!(e.match_posted(env(1, 5)), Some(11));
    assert_eq!(e.match_posted(env(1, 5)), None);
    assert_eq!(e.posted_len(), 0);
    assert_eq!(e.unexpected_len(), 0);
}

#[test]
fn release_claimed_refuses_a_queued_message() {
    let mut e = engine(2, 2, 4);
    let Ok(Arrival::Unexpected(id)) = e.arrive(env(1, 1), 3, 0) else {
        panic!("expected an unexpected arrival");
    };
    assert_eq!(e.release_claimed(id), Err(StaleId), "nobody took it yet");
    assert_eq!(e.unexpected_len(), 1);
    e.claim(id).unwrap();
    assert_eq!(e.release_claimed(id).map(|i| i.len), Ok(3));
    assert_eq!(e.release_claimed(id), Err(StaleId));
}

#[test]
fn cancel_from_removes_only_exact_receives_from_that_source() {
    let mut e = engine(8, 2, 4);
    queued(e.post(sel(Some(1), Some(5)), 10));
    queued(e.post(sel(None, Some(5)), 11));
    queued(e.post(sel(Some(2), None), 12));
    queued(e.post(sel(Some(1), None), 13));
    let mut gone = Vec::new();
    e.cancel_from(1, |h| gone.push(h));
    gone.sort_unstable();
    assert_eq!(gone, vec![10, 13]);
    assert_eq!(e.posted_len(), 2);
    assert_eq!(e.match_posted(env(1, 5)), Some(11), "the wildcard stays");
    assert_eq!(e.match_posted(env(2, 9)), Some(12));
}

#[test]
fn cancel_any_source_removes_only_wildcard_source_receives() {
    let mut e = engine(8, 2, 4);
    queued(e.post(sel(Some(1), Some(5)), 10));
    queued(e.post(sel(None, Some(5)), 11));
    queued(e.post(sel(None, None), 12));
    queued(e.post(sel(Some(2), None), 13));
    let mut gone = Vec::new();
    e.cancel_any_source(|h| gone.push(h));
    gone.sort_unstable();
    assert_eq!(gone, vec![11, 12]);
    assert_eq!(e.posted_len(), 2);
    assert_eq!(e.match_posted(env(3, 5)), None, "no wildcard left");
    assert_eq!(e.match_posted(env(1, 5)), Some(10));
    assert_eq!(e.match_posted(env(2, 9)), Some(13));
    // The freed slots are reusable.
    queued(e.post(sel(None, None), 14));
    assert_eq!(e.match_posted(env(4, 1)), Some(14));
}

#[test]
fn the_sync_bit_is_ignored_by_matching_and_kept_in_the_envelope() {
    let sync = |source, tag| Envelope {
        context: SYNC_FLAG,
        ..env(source, tag)
    };
    for buckets in [1, 64] {
        let mut e = engine(8, 8, buckets);
        // Exact and wildcard posted receives take synchronous messages.
        queued(e.post(sel(Some(1), Some(5)), 1));
        queued(e.post(sel(None, None), 2));
        assert_eq!(matched(e.arrive(sync(1, 5), 3, 0)), 1);
        assert_eq!(matched(e.arrive(sync(2, 6), 3, 0)), 2);
        // Unexpected synchronous messages are found by exact and wildcard
        // receives, in arrival order, with the bit still set.
        unexpected(e.arrive(sync(1, 5), 4, 10));
        unexpected(e.arrive(env(1, 5), 5, 11));
        let first = took(e.post(sel(Some(1), Some(5)), 3));
        assert!(first.envelope.is_sync() && first.location == 10);
        let second = took(e.post(sel(None, None), 4));
        assert!(!second.envelope.is_sync() && second.location == 11);
        // Another context still never matches.
        unexpected(e.arrive(
            Envelope {
                context: SYNC_FLAG | 2,
                ..env(1, 5)
            },
            0,
            12,
        ));
        assert!(e.probe(sel(Some(1), Some(5))).is_none());
    }
}
