//! Each peer's state: the two rings between this rank and the peer, the
//! sends queued for it, the message arriving from it, and moving both on
//! without waiting.
//!
//! - **Receiving.** Every progress round drains each ring with
//!   `try_recvs`, hands the payload to the matcher and marks the frame
//!   USED, which returns its space to the writer. That path is loads,
//!   stores and copies on the shared mapping: no system call. When the
//!   matcher's unexpected queue is full, frames are copied to a
//!   per-sender overflow list (kept in order) instead, as the socket
//!   transports do.
//! - **Sending.** Frames go in with `RingWriter::try_send`; a full ring
//!   never blocks the writer. A blocking `send` keeps receiving (draining
//!   its own rings) while it waits for room, so two ranks flooding each
//!   other cannot deadlock; an `isend` writes what fits and copies only
//!   the rest into a per-destination queue that progress pushes later.
//!
//! Either way the peer is told (`wait.rs`): freeing room in its ring or
//! publishing a frame in it wakes it if it sleeps.

use std::collections::VecDeque;

use o2g_hyphen::ring::{Filter, RingReader, RingWriter};

use super::framing::{accept, push, Cursor, Held, Rx};
use super::HyphenLink;
use crate::error::Result;

/// A queued send: its cursor, and the payload from byte `skip` on.
pub(super) struct Out {
    pub(super) cur: Cursor,
    pub(super) data: Vec<u8>,
    pub(super) skip: usize,
    pub(super) token: u64,
}

/// Everything about one peer.
pub(super) struct Peer {
    /// Into the peer's ring for this rank.
    writer: RingWriter,
    /// This rank's ring for the peer.
    reader: RingReader,
    pub(super) out: VecDeque<Out>,
    rx: Option<Rx>,
    overflow: VecDeque<Held>,
    pub(super) dead: Option<String>,
}

impl Peer {
    /// A peer with nothing sent or received yet, over these rings.
    pub(super) fn new(writer: RingWriter, reader: RingReader) -> Self {
        Self {
            writer,
            reader,
            out: VecDeque::new(),
            rx: None,
            overflow: VecDeque::new(),
            dead: None,
        }
    }
}

impl HyphenLink {
    /// Marks a peer dead and fails everything that waited on it.
    pub(super) fn kill(&mut self, rank: usize, reason: String) {
        let Some(peer) = self.peers.get_mut(rank) else {
            return;
        };
        if peer.dead.is_some() {
            return;
        }
        match peer.rx.take() {
            Some(Rx::Matcher { sink, .. }) => self.matcher.fail(sink, rank as u32, &reason),
            Some(Rx::Overflow { .. }) => {
                peer.overflow.pop_back();
            }
            None => {}
        }
        for out in peer.out.drain(..) {
            self.sends.fail(out.token, &reason);
        }
        peer.dead = Some(reason);
    }

    /// Takes every frame in `rank`'s ring; whether there was any.
    pub(super) fn drain(&mut self, rank: usize) -> bool {
        let mut got = false;
        let failure = loop {
            let Peer {
                reader,
                rx,
                overflow,
                dead: None,
                ..
            } = &mut self.peers[rank]
            else {
                return got;
            };
            let m = match reader.try_recvs(Filter::ANY) {
                Ok(Some(m)) => m,
                Ok(None) => break None,
                Err(e) => break Some(format!("its ring is corrupt: {e}")),
            };
            got = true;
            let placed = accept(
                &mut self.matcher,
                rx,
                overflow,
                rank as u32,
                m.info(),
                m.payload(),
                self.max_message,
                self.frame_clock.as_ref(),
            );
            let freed = m.done();
            if let Err(why) = placed {
                break Some(format!("protocol error: {why}"));
            }
            if let Err(e) = freed {
                break Some(format!("its ring is corrupt: {e}"));
            }
        };
        if got {
            self.notify(rank);
        }
        if let Some(why) = failure {
            self.kill(rank, why);
        }
        got
    }

    /// Moves overflowed messages into the matcher while it has room.
    pub(super) fn drain_overflow(&mut self) -> bool {
        let mut moved = false;
        for peer in &mut self.peers {
            while let Some(Held {
                env,
                data,
                complete: true,
            }) = peer.overflow.front()
            {
                if self.matcher.deliver(*env, data).is_err() {
                    return moved;
                }
                peer.overflow.pop_front();
                moved = true;
            }
        }
        moved
    }

    /// Writes what fits of `cur` (whose payload is `data`) to `dest`.
    /// `Ok((done, moved))`; an error when the ring failed (the peer is then
    /// dead).
    pub(super) fn push_to(
        &mut self,
        dest: usize,
        cur: &mut Cursor,
        data: &[u8],
    ) -> Result<(bool, bool)> {
        let before = (cur.started, cur.done);
        let r = push(
            &self.peers[dest].writer,
            cur,
            &data[cur.done..],
            &mut self.scratch,
            self.frame_clock.as_ref(),
        );
        let moved = (cur.started, cur.done) != before;
        if moved {
            self.notify(dest);
        }
        match r {
            Ok(done) => Ok((done, moved)),
            Err(e) => {
                self.kill(dest, format!("writing its ring failed: {e}"));
                self.live(dest as u32).map(|()| (false, moved))
            }
        }
    }

    /// Pushes queued sends to `rank`; whether any frame went in.
    pub(super) fn pump(&mut self, rank: usize) -> bool {
        let mut moved = false;
        let failure = loop {
            let peer = &mut self.peers[rank];
            if peer.dead.is_some() {
                break None;
            }
            let Some(o) = peer.out.front_mut() else {
                break None;
            };
            let before = (o.cur.started, o.cur.done);
            let rest = &o.data[o.cur.done - o.skip..];
            let r = push(
                &peer.writer,
                &mut o.cur,
                rest,
                &mut self.scratch,
                self.frame_clock.as_ref(),
            );
            moved |= (o.cur.started, o.cur.done) != before;
            match r {
                Ok(true) => {
                    let token = o.token;
                    peer.out.pop_front();
                    self.sends.finish(token);
                }
                Ok(false) => break None,
                Err(e) => break Some(format!("writing its ring failed: {e}")),
            }
        };
        if moved {
            self.notify(rank);
        }
        if let Some(why) = failure {
            self.kill(rank, why);
        }
        moved
    }
}
