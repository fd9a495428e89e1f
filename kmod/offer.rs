// SPDX-License-Identifier: GPL-2.0

//! Rendezvous sends the process offered (`O2G_IOC_OFFER`): pinned source
//! buffers, each named by an id the `Rts` header carries, waiting for the
//! receiver's clear-to-send and then sent by the send work (`tx.rs`).
//!
//! An offer passes through: *offered* (pinned, waiting for the `Cts`),
//! *cleared* (the `Cts` named it; its data is queued), *sending* (the
//! send work holds its buffer), for data sent without a copy *acking*
//! (queued; TCP still holds its pages), and ends with a `SENT` record,
//! sent or failed. A `Cts` is accepted only from the rank the offer was
//! made for, only once, and only for at most the offer's length, so a peer
//! can neither read another rank's offer nor make the module read past a
//! buffer.
//!
//! Everything here runs under the endpoint's rx lock (BH off) and never
//! sleeps or allocates: the table is sized at INIT. Buffers leave the table
//! to be unpinned in process context.

use kernel::{alloc::KVVec, prelude::*};

use crate::pinned::PinnedBuf;
use crate::proto::receive::Failure;

/// Where an offer is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Offered,
    /// The `Cts` asked for `want` bytes for the receive `token`.
    Cleared {
        token: u64,
        want: u64,
    },
    /// The send work holds the buffer.
    Sending,
    /// Its connection failed while the send work held the buffer: the
    /// work ends it with an error.
    Failed,
    /// All of its data is queued without a copy (`zerocopy.rs`): it ends
    /// when TCP has freed the pages, or with an error when its connection
    /// fails first.
    Acking,
    /// Its connection failed while acking: the error is published, and
    /// the id stays taken until TCP frees the pages.
    Abandoned,
}

struct Offer {
    rank: u32,
    user_data: u64,
    /// `None` while the send work holds it.
    buf: Option<PinnedBuf>,
    state: State,
}

/// An offer that ended: publish its `SENT` record, then drop `buf` (in
/// process context).
pub(crate) struct Ended {
    pub(crate) user_data: u64,
    pub(crate) buf: Option<PinnedBuf>,
}

/// What the send work needs to send a cleared offer's data.
pub(crate) struct Cleared {
    pub(crate) buf: PinnedBuf,
    pub(crate) token: u64,
    pub(crate) want: u64,
}

/// The offer table of one endpoint.
pub(crate) struct Offers {
    table: KVVec<Option<Offer>>,
    /// Bumped each time an index is reused, so a stale id names nothing.
    generation: KVVec<u16>,
    free: KVVec<u16>,
}

/// Offer ids: generation in the high half, index in the low half.
fn split(id: u32) -> (usize, u16) {
    ((id & 0xffff) as usize, (id >> 16) as u16)
}

impl Offers {
    /// A table of `n` offers (at most 65536).
    ///
    /// Context: process context, may sleep.
    pub(crate) fn new(n: u32) -> Result<Self> {
        let n = n.min(1 << 16) as usize;
        let mut table = KVVec::with_capacity(n, GFP_KERNEL_ACCOUNT)?;
        let mut generation = KVVec::with_capacity(n, GFP_KERNEL_ACCOUNT)?;
        let mut free = KVVec::with_capacity(n, GFP_KERNEL_ACCOUNT)?;
        for i in (0..n).rev() {
            table.push(None, GFP_KERNEL_ACCOUNT)?;
            generation.push(0, GFP_KERNEL_ACCOUNT)?;
            // `n <= 65536`, so every index fits.
            free.push(i as u16, GFP_KERNEL_ACCOUNT)?;
        }
        Ok(Self {
            table,
            generation,
            free,
        })
    }

    /// Offers that have not ended (each will publish one record).
    pub(crate) fn live(&self) -> u64 {
        (self.table.len() - self.free.len()) as u64
    }

    /// Records an offer of `buf` to `rank`; its id, or `buf` back when
    /// the table is full.
    pub(crate) fn insert(
        &mut self,
        rank: u32,
        user_data: u64,
        buf: PinnedBuf,
    ) -> core::result::Result<u32, PinnedBuf> {
        let Some(i) = self.free.pop() else {
            return Err(buf);
        };
        let i = usize::from(i);
        self.table[i] = Some(Offer {
            rank,
            user_data,
            buf: Some(buf),
            state: State::Offered,
        });
        Ok(u32::from(self.generation[i]) << 16 | i as u32)
    }

    fn get_mut(&mut self, id: u32) -> Option<&mut Offer> {
        let (i, generation) = split(id);
        if *self.generation.get(i)? != generation {
            return None;
        }
        self.table.get_mut(i)?.as_mut()
    }

    /// Replaces the buffer of offer `id` to `rank`, which has not been
    /// cleared, with `buf` of the same length; returns the old buffer.
    /// On error `buf` comes back: `EBUSY` (cleared or being sent),
    /// `ENOENT` (no such offer), `EINVAL` (another rank or length).
    pub(crate) fn replace(
        &mut self,
        rank: u32,
        id: u32,
        buf: PinnedBuf,
    ) -> core::result::Result<PinnedBuf, (PinnedBuf, Error)> {
        let Some(offer) = self.get_mut(id) else {
            return Err((buf, ENOENT));
        };
        if offer.state != State::Offered {
            return Err((buf, EBUSY));
        }
        if offer.rank != rank {
            return Err((buf, EINVAL));
        }
        match offer.buf.as_mut().filter(|b| b.len() == buf.len()) {
            Some(current) => Ok(core::mem::replace(current, buf)),
            None => Err((buf, EINVAL)),
        }
    }

    /// `rank`'s clear-to-send for offer `id`: `want` bytes for its receive
    /// `token`. The caller queues the data.
    ///
    /// # Errors
    ///
    /// The [`Failure`] of a peer that broke the protocol: no offer `id` to
    /// it waits for a `Cts`, or it asks for more than the offer holds.
    pub(crate) fn clear(
        &mut self,
        rank: u32,
        id: u32,
        token: u64,
        want: u64,
    ) -> core::result::Result<(), Failure> {
        let offer = self
            .get_mut(id)
            .filter(|o| o.rank == rank && o.state == State::Offered)
            .ok_or(Failure::UnknownOffer(id))?;
        let size = offer.buf.as_ref().map_or(0, |b| b.len() as u64);
        if want > size {
            return Err(Failure::WantTooLong { want, size });
        }
        offer.state = State::Cleared { token, want };
        Ok(())
    }

    /// Hands a cleared offer's buffer to the send work.
    pub(crate) fn start(&mut self, id: u32) -> Option<Cleared> {
        let offer = self.get_mut(id)?;
        let State::Cleared { token, want } = offer.state else {
            return None;
        };
        let buf = offer.buf.take()?;
        offer.state = State::Sending;
        Some(Cleared { buf, token, want })
    }

    /// Marks offer `id`, whose data is all queued without a copy, as
    /// waiting for TCP to free its pages; `false` if its connection failed
    /// meanwhile (end it now).
    pub(crate) fn acking(&mut self, id: u32) -> bool {
        match self.get_mut(id) {
            Some(offer) if offer.state == State::Sending => {
                offer.state = State::Acking;
                true
            }
            _ => false,
        }
    }

    /// Ends offer `id` once TCP freed its pages: the offer, to publish its
    /// `SENT` record, or `None` if a failure published it already.
    pub(crate) fn finish_acked(&mut self, id: u32) -> Option<Ended> {
        let (i, _) = split(id);
        let offer = self.get_mut(id)?;
        let ended = match offer.state {
            State::Acking => Some(Ended {
                user_data: offer.user_data,
                buf: offer.buf.take(),
            }),
            State::Abandoned => None,
            _ => return None,
        };
        self.release(i);
        ended
    }

    /// Ends offer `id`; whether it failed meanwhile (its connection
    /// failed while the send work held the buffer).
    pub(crate) fn finish(&mut self, id: u32) -> Option<(Ended, bool)> {
        let (i, _) = split(id);
        let offer = self.get_mut(id)?;
        let failed = offer.state == State::Failed;
        let ended = Ended {
            user_data: offer.user_data,
            buf: offer.buf.take(),
        };
        self.release(i);
        Some((ended, failed))
    }

    /// Frees index `i` for reuse under a new generation.
    fn release(&mut self, i: usize) {
        self.table[i] = None;
        self.generation[i] = self.generation[i].wrapping_add(1);
        // Capacity is the table size and each index is free at most once.
        let _ = self.free.push_within_capacity(i as u16);
    }

    /// The connection to `rank` failed: every offer to it ends. Those in
    /// the table, and those waiting for TCP to free their pages, go to
    /// `ended` (publish an error, unpin later); those the send work holds
    /// are marked, and the work ends them.
    pub(crate) fn fail_rank(&mut self, rank: u32, mut ended: impl FnMut(Ended)) {
        for i in 0..self.table.len() {
            let Some(offer) = self.table[i].as_mut().filter(|o| o.rank == rank) else {
                continue;
            };
            match offer.state {
                State::Sending => {
                    offer.state = State::Failed;
                    continue;
                }
                State::Failed | State::Abandoned => continue,
                State::Acking => {
                    // Ended now; the completion only frees the id.
                    offer.state = State::Abandoned;
                    ended(Ended {
                        user_data: offer.user_data,
                        buf: offer.buf.take(),
                    });
                    continue;
                }
                State::Offered | State::Cleared { .. } => {}
            }
            ended(Ended {
                user_data: offer.user_data,
                buf: offer.buf.take(),
            });
            self.release(i);
        }
    }

    /// Every offer still in the table, for teardown: the caller drops
    /// them (unpinning) outside the lock, in process context.
    pub(crate) fn take_all(&mut self) -> Taken {
        self.free.clear();
        Taken {
            _offers: core::mem::take(&mut self.table),
        }
    }
}

/// Offers taken out at teardown; dropping unpins their buffers.
pub(crate) struct Taken {
    _offers: KVVec<Option<Offer>>,
}
