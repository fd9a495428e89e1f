//! The o2g transport's side of matching: what the module handed the
//! process (announced stored messages and requests to send) and the
//! receives that wait for one, matched by o2g-core's engine, the one the
//! module matches with: a receive takes the oldest announcement it
//! matches, an announcement the oldest waiting receive that matches it
//! (MPI's order, as in the module).
//!
//! The engine keeps envelopes and order; this keeps what they stand for:
//! each announcement's notice under the key the engine returns as its
//! location, and each waiting receive by its handle, in posting order.

use std::collections::VecDeque;

use foldhash::{HashMap, HashMapExt};

use o2g_core::proto::envelope::{Envelope, Rank, Selector};
use o2g_core::proto::matching::{Arrival, Bucket, Engine, MsgId, Posted, QueueFull, RecvId, Slot};

use crate::error::{Error, Result};

/// Announcements of type `N` and waiting receives of type `W`.
pub(crate) struct Announcements<N, W> {
    engine: Engine<Vec<Slot>, Vec<Bucket>>,
    notices: HashMap<u64, N>,
    next_key: u64,
    /// Waiting receives in posting order: handle, engine id, receive.
    waiting: VecDeque<(u64, RecvId, W)>,
}

/// What [`Announcements::wait`] did.
pub(crate) enum Wait<N> {
    /// The receive waits for an announcement.
    Queued,
    /// An announcement matched at once; the receive does not wait.
    Matched(N),
}

impl<N, W> Announcements<N, W> {
    /// Room for `capacity` announcements and as many waiting receives.
    pub(crate) fn new(capacity: usize) -> Self {
        let buckets = capacity.next_power_of_two().max(1);
        let engine = Engine::new(
            vec![Slot::EMPTY; capacity],
            vec![Slot::EMPTY; capacity],
            vec![Bucket::EMPTY; buckets],
            // Any seed works: it only spreads envelopes over the buckets.
            0x6f32,
        )
        .expect("at least one bucket");
        Self {
            engine,
            notices: HashMap::new(),
            next_key: 0,
            waiting: VecDeque::new(),
        }
    }

    /// An announcement of a message with `envelope` and `len` arrived:
    /// the waiting receive it matched (with the notice), or `None` when it
    /// is kept for a later receive.
    pub(crate) fn announce(
        &mut self,
        envelope: Envelope,
        len: u64,
        notice: N,
    ) -> Result<Option<(W, N)>> {
        let key = self.next_key;
        match self.engine.arrive(envelope, len, key).map_err(full)? {
            Arrival::Matched { handle } => {
                let w = self.remove_waiting(handle);
                Ok(w.map(|w| (w, notice)))
            }
            Arrival::Unexpected(_) => {
                self.next_key += 1;
                self.notices.insert(key, notice);
                Ok(None)
            }
        }
    }

    /// The oldest kept announcement `sel` matches, left in place.
    pub(crate) fn find(&self, sel: Selector) -> Option<(MsgId, &N)> {
        let (id, info) = self.engine.probe(sel)?;
        Some((id, self.notices.get(&info.location)?))
    }

    /// The envelope and length of the oldest kept announcement `sel`
    /// matches.
    pub(crate) fn peek(&self, sel: Selector) -> Option<(Envelope, u64)> {
        self.engine.probe(sel).map(|(_, i)| (i.envelope, i.len))
    }

    /// Takes announcement `id` ([`Announcements::find`]) out.
    pub(crate) fn take(&mut self, id: MsgId) -> Option<N> {
        let info = self.engine.release(id).ok()?;
        self.notices.remove(&info.location)
    }

    /// Receive `handle` (`w`) for `sel` waits for an announcement, unless
    /// one matches at once.
    pub(crate) fn wait(&mut self, sel: Selector, handle: u64, w: W) -> Result<Wait<N>> {
        match self.engine.post(sel, handle).map_err(full)? {
            Posted::Queued(id) => {
                self.waiting.push_back((handle, id, w));
                Ok(Wait::Queued)
            }
            Posted::Matched(id, info) => {
                let _ = self.engine.release_claimed(id);
                match self.notices.remove(&info.location) {
                    Some(n) => Ok(Wait::Matched(n)),
                    None => Err(Error::io(
                        "o2g announcements",
                        std::io::Error::other("an announcement without its notice"),
                    )),
                }
            }
        }
    }

    /// The receive that has waited longest.
    pub(crate) fn oldest_waiting(&self) -> Option<&W> {
        self.waiting.front().map(|(_, _, w)| w)
    }

    /// Whether any receive waits.
    pub(crate) fn has_waiting(&self) -> bool {
        !self.waiting.is_empty()
    }

    /// Receive `handle` stops waiting (posted elsewhere, or cancelled).
    pub(crate) fn unwait(&mut self, handle: u64) -> Option<W> {
        let i = self.waiting.iter().position(|(h, _, _)| *h == handle)?;
        let (_, id, w) = self.waiting.remove(i)?;
        let _ = self.engine.cancel(id);
        Some(w)
    }

    /// The waiting receives that name `rank` as their source, which can
    /// no longer be matched.
    pub(crate) fn unwait_from(&mut self, rank: Rank) -> Vec<W> {
        let mut handles = Vec::new();
        self.engine.cancel_from(rank, |h| handles.push(h));
        handles
            .into_iter()
            .filter_map(|h| self.remove_waiting(h))
            .collect()
    }

    fn remove_waiting(&mut self, handle: u64) -> Option<W> {
        let i = self.waiting.iter().position(|(h, _, _)| *h == handle)?;
        self.waiting.remove(i).map(|(_, _, w)| w)
    }
}

fn full(_: QueueFull) -> Error {
    Error::ResourceExhausted("o2g announcements (too many unreceived messages or waiting receives)")
}

#[cfg(test)]
mod tests {
    use super::*;
    use o2g_core::proto::envelope::{SourceSel, TagSel};

    fn env(source: Rank, tag: u32) -> Envelope {
        Envelope {
            source,
            tag,
            context: 0,
        }
    }

    fn sel(source: Option<Rank>, tag: Option<u32>) -> Selector {
        Selector {
            source: source.map_or(SourceSel::Any, SourceSel::Rank),
            tag: tag.map_or(TagSel::Any, TagSel::Tag),
            context: 0,
        }
    }

    #[test]
    fn a_receive_takes_the_oldest_announcement_it_matches() {
        let mut a: Announcements<&str, u32> = Announcements::new(4);
        assert!(a.announce(env(1, 5), 10, "first").unwrap().is_none());
        assert!(a.announce(env(2, 5), 20, "second").unwrap().is_none());
        assert_eq!(a.peek(sel(None, Some(5))), Some((env(1, 5), 10)));
        let (id, n) = a.find(sel(Some(2), None)).unwrap();
        assert_eq!(*n, "second");
        assert_eq!(a.take(id), Some("second"));
        let (id, _) = a.find(sel(None, None)).unwrap();
        assert_eq!(a.take(id), Some("first"));
        assert!(a.find(sel(None, None)).is_none());
    }

    #[test]
    fn an_announcement_goes_to_the_oldest_waiting_receive_it_matches() {
        let mut a: Announcements<&str, u32> = Announcements::new(4);
        assert!(matches!(
            a.wait(sel(Some(1), Some(7)), 10, 100).unwrap(),
            Wait::Queued
        ));
        assert!(matches!(
            a.wait(sel(None, None), 11, 101).unwrap(),
            Wait::Queued
        ));
        assert!(matches!(
            a.wait(sel(Some(1), None), 12, 102).unwrap(),
            Wait::Queued
        ));
        assert_eq!(a.oldest_waiting(), Some(&100));
        // Tag 8 passes over the first receive; the any-source one takes it.
        assert_eq!(a.announce(env(1, 8), 0, "m").unwrap(), Some((101, "m")));
        assert_eq!(a.announce(env(1, 7), 0, "n").unwrap(), Some((100, "n")));
        assert_eq!(a.unwait(12), Some(102));
        assert!(!a.has_waiting());
        assert!(a.announce(env(1, 7), 0, "kept").unwrap().is_none());
        match a.wait(sel(None, Some(7)), 13, 103).unwrap() {
            Wait::Matched(n) => assert_eq!(n, "kept"),
            Wait::Queued => panic!("a kept announcement did not match"),
        }
    }

    #[test]
    fn receives_naming_a_lost_peer_stop_waiting() {
        let mut a: Announcements<&str, u32> = Announcements::new(4);
        for (h, source) in [(1, Some(3)), (2, None), (3, Some(4)), (4, Some(3))] {
            assert!(matches!(
                a.wait(sel(source, None), h, h as u32).unwrap(),
                Wait::Queued
            ));
        }
        let mut lost = a.unwait_from(3);
        lost.sort_unstable();
        assert_eq!(lost, [1, 4]);
        assert_eq!(a.oldest_waiting(), Some(&2));
        assert_eq!(a.announce(env(4, 0), 0, "x").unwrap(), Some((2, "x")));
        assert_eq!(a.announce(env(4, 0), 0, "y").unwrap(), Some((3, "y")));
    }

    #[test]
    fn a_full_engine_is_an_error_not_a_loss() {
        let mut a: Announcements<u32, u32> = Announcements::new(1);
        assert!(a.announce(env(1, 0), 0, 1).unwrap().is_none());
        assert!(matches!(
            a.announce(env(1, 0), 0, 2),
            Err(Error::ResourceExhausted(_))
        ));
    }
}
