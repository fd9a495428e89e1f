//! The consumer side of the completion ring (see [`abi::InitArgs`]).
//!
//! The module appends [`abi::Completion`] records and publishes each by
//! storing the free-running producer index with release ordering; this side
//! loads it with acquire ordering, copies the records out, and publishes its
//! consumer index with release ordering so that the module never rewrites a
//! record before it was read. Both indices are `u32`s that wrap; record `i`
//! lives in slot `i % entries`, and `entries` is a power of two, so slots stay
//! consistent across the wrap.

use std::sync::atomic::Ordering;

use crate::mapping::Mapping;
use crate::{abi, Error, Layout, Result};

/// This process's end of the completion ring.
#[derive(Debug)]
pub(crate) struct RingConsumer {
    layout: Layout,
    /// Index of the next record to read; the last value published at
    /// [`abi::O2G_RING_CONS`].
    head: u32,
}

impl RingConsumer {
    /// Starts consuming at the consumer index the mapping holds now (zero on
    /// a fresh endpoint).
    pub(crate) fn new(layout: Layout, map: &Mapping) -> Self {
        let head = map.atomic_u32(abi::O2G_RING_CONS).load(Ordering::Relaxed);
        Self { layout, head }
    }

    /// Index of the next record to read: every record before it was read.
    pub(crate) fn head(&self) -> u32 {
        self.head
    }

    /// Records published but not yet consumed.
    ///
    /// # Errors
    ///
    /// [`Error::RingOverrun`] if the producer index is more than `entries`
    /// ahead of the consumer index (or behind it).
    pub(crate) fn pending(&self, map: &Mapping) -> Result<u32> {
        let producer = map.atomic_u32(abi::O2G_RING_PROD).load(Ordering::Acquire);
        let pending = producer.wrapping_sub(self.head);
        if pending > self.layout.ring_entries {
            return Err(Error::RingOverrun {
                producer,
                consumer: self.head,
                entries: self.layout.ring_entries,
            });
        }
        Ok(pending)
    }

    /// Whether the module has published nothing past what was taken: the
    /// cheap test for a consumer that polls (an overrun reads as not
    /// empty, and [`RingConsumer::pop`] then reports it).
    pub(crate) fn is_empty(&self, map: &Mapping) -> bool {
        map.atomic_u32(abi::O2G_RING_PROD).load(Ordering::Acquire) == self.head
    }

    /// Takes the next record, if one was published.
    ///
    /// # Errors
    ///
    /// [`Error::RingOverrun`], as for [`RingConsumer::pending`]; nothing is
    /// consumed then.
    pub(crate) fn pop(&mut self, map: &Mapping) -> Result<Option<abi::Completion>> {
        if self.pending(map)? == 0 {
            return Ok(None);
        }
        // The acquire load in `pending` saw the module's release store of an
        // index past `head`, so the record's contents are visible.
        let record = map.read_completion(self.layout.record_offset(self.head));
        self.head = self.head.wrapping_add(1);
        // Release: our read of the record happens before the module may
        // reuse its slot.
        map.atomic_u32(abi::O2G_RING_CONS)
            .store(self.head, Ordering::Release);
        Ok(Some(record))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A heap stand-in for the mapping plus a simulated module producer.
    struct Sim {
        map: Mapping,
        layout: Layout,
        producer: u32,
    }

    impl Sim {
        fn new(entries: u32, start: u32) -> Self {
            let layout = Layout::synthetic(entries, abi::O2G_PAGE);
            let map = Mapping::heap(layout.map_bytes);
            map.atomic_u32(abi::O2G_RING_PROD)
                .store(start, Ordering::Relaxed);
            map.atomic_u32(abi::O2G_RING_CONS)
                .store(start, Ordering::Relaxed);
            Self {
                map,
                layout,
                producer: start,
            }
        }

        fn consumer(&self) -> RingConsumer {
            RingConsumer::new(self.layout, &self.map)
        }

        /// Writes a record and publishes it, as the module does.
        fn produce(&mut self, user_data: u64) {
            let c = record(user_data);
            self.map
                .write_completion(self.layout.record_offset(self.producer), c);
            self.producer = self.producer.wrapping_add(1);
            self.map
                .atomic_u32(abi::O2G_RING_PROD)
                .store(self.producer, Ordering::Release);
        }

        fn published_consumer(&self) -> u32 {
            self.map
                .atomic_u32(abi::O2G_RING_CONS)
                .load(Ordering::Acquire)
        }
    }

    fn record(user_data: u64) -> abi::Completion {
        abi::Completion {
            user_data,
            len: user_data * 3,
            source: user_data as u32 ^ 0x55,
            tag: 7,
            context: 9,
            ..Default::default()
        }
    }

    #[test]
    fn empty_ring_yields_nothing() {
        let sim = Sim::new(4, 0);
        let mut c = sim.consumer();
        assert_eq!(c.pending(&sim.map).unwrap(), 0);
        assert_eq!(c.pop(&sim.map).unwrap(), None);
        assert_eq!(sim.published_consumer(), 0);
    }

    #[test]
    fn one_record_is_read_once_and_the_consumer_index_published() {
        let mut sim = Sim::new(4, 0);
        let mut c = sim.consumer();
        sim.produce(42);
        assert_eq!(c.pending(&sim.map).unwrap(), 1);
        assert_eq!(c.pop(&sim.map).unwrap(), Some(record(42)));
        assert_eq!(sim.published_consumer(), 1);
        assert_eq!(c.pop(&sim.map).unwrap(), None);
    }

    #[test]
    fn emptiness_follows_the_indices_and_an_overrun_is_not_empty() {
        let mut sim = Sim::new(4, u32::MAX);
        let mut c = sim.consumer();
        assert!(c.is_empty(&sim.map));
        sim.produce(1);
        assert!(!c.is_empty(&sim.map));
        assert_eq!(c.pop(&sim.map).unwrap(), Some(record(1)));
        assert!(c.is_empty(&sim.map));
        // More records than the ring holds: not empty, and pop says why.
        for i in 0..5 {
            sim.produce(i);
        }
        assert!(!c.is_empty(&sim.map));
        assert!(matches!(c.pop(&sim.map), Err(Error::RingOverrun { .. })));
    }

    #[test]
    fn indices_wrap_around_u32_max() {
        let mut sim = Sim::new(4, u32::MAX - 1);
        let mut c = sim.consumer();
        for i in 0..3 {
            sim.produce(i);
        }
        // The producer index is now 1, numerically below the consumer's.
        assert_eq!(sim.producer, 1);
        assert_eq!(c.pending(&sim.map).unwrap(), 3);
        for i in 0..3 {
            assert_eq!(c.pop(&sim.map).unwrap(), Some(record(i)));
        }
        assert_eq!(sim.published_consumer(), 1);
        assert_eq!(c.pop(&sim.map).unwrap(), None);
    }

    #[test]
    fn slots_are_reused_after_the_ring_goes_round() {
        let mut sim = Sim::new(2, 0);
        let mut c = sim.consumer();
        for i in 0..10 {
            sim.produce(100 + i);
            assert_eq!(c.pop(&sim.map).unwrap(), Some(record(100 + i)));
        }
        assert_eq!(sim.published_consumer(), 10);
        // Record 10 went into slot 0, over record 8.
        assert_eq!(sim.map.read_completion(sim.layout.ring_offset), record(108));
    }

    #[test]
    fn a_full_ring_is_not_an_overrun() {
        let mut sim = Sim::new(8, 5);
        let mut c = sim.consumer();
        for i in 0..8 {
            sim.produce(i);
        }
        assert_eq!(c.pending(&sim.map).unwrap(), 8);
        for i in 0..8 {
            assert_eq!(c.pop(&sim.map).unwrap(), Some(record(i)));
        }
        assert_eq!(c.pop(&sim.map).unwrap(), None);
    }

    #[test]
    fn overrun_is_detected_and_consumes_nothing() {
        let mut sim = Sim::new(8, 0);
        let mut c = sim.consumer();
        for i in 0..9 {
            sim.produce(i);
        }
        let err = c.pop(&sim.map).unwrap_err();
        assert!(
            matches!(
                err,
                Error::RingOverrun {
                    producer: 9,
                    consumer: 0,
                    entries: 8
                }
            ),
            "{err:?}"
        );
        assert_eq!(sim.published_consumer(), 0);
        assert!(c.pending(&sim.map).is_err());
    }

    #[test]
    fn a_producer_index_behind_the_consumer_is_an_overrun() {
        let sim = Sim::new(8, 10);
        let c = sim.consumer();
        sim.map
            .atomic_u32(abi::O2G_RING_PROD)
            .store(9, Ordering::Release);
        assert!(matches!(
            c.pending(&sim.map),
            Err(Error::RingOverrun { .. })
        ));
    }

    proptest! {
        /// A simulated module writes records in bursts of up to the ring's
        /// size; the consumer reads some after each burst. Every record comes
        /// out exactly once, in order, from any starting index.
        #[test]
        fn consumer_sees_every_record_in_order(
            entries_log2 in 0u32..7,
            start in prop_oneof![Just(u32::MAX - 3), Just(0u32), any::<u32>()],
            bursts in prop::collection::vec((0u32..=64, 0u32..=64), 1..40),
        ) {
            let entries = 1u32 << entries_log2;
            let mut sim = Sim::new(entries, start);
            let mut c = sim.consumer();
            let mut next_write = 0u64;
            let mut seen = Vec::new();
            for (write, read) in bursts {
                let room = entries - c.pending(&sim.map).unwrap();
                for _ in 0..write.min(room) {
                    sim.produce(next_write);
                    next_write += 1;
                }
                for _ in 0..read {
                    match c.pop(&sim.map).unwrap() {
                        Some(r) => seen.push(r.user_data),
                        None => break,
                    }
                }
            }
            while let Some(r) = c.pop(&sim.map).unwrap() {
                seen.push(r.user_data);
            }
            let want: Vec<u64> = (0..next_write).collect();
            prop_assert_eq!(seen, want);
            prop_assert_eq!(sim.published_consumer(), sim.producer);
        }
    }
}
