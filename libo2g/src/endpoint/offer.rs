//! Rendezvous sends: offering a buffer to the module, which sends it on
//! the control connection when the receiver asks (`O2G_IOC_OFFER`).

use std::os::fd::AsFd;

use super::Endpoint;
use crate::{abi, raw, Error, Result};

impl Endpoint {
    /// Offers `data` for a rendezvous send to `rank`: returns the offer's
    /// id, which the message's `Rts` header carries. When the receiver's
    /// clear-to-send arrives, the module sends what it asks for from
    /// `data`'s pages, which it pinned, without this process; a
    /// [`crate::Reaped::Sent`] carrying `user_data` ends the offer.
    ///
    /// Until then the module reads `data`'s pages: the bytes sent are
    /// what they hold when the receiver asks, so the caller must not
    /// change them before the offer ends (or before
    /// [`Endpoint::replace_offer`] succeeded). Freeing the memory cannot
    /// make the module read memory that is not this process's: the pages
    /// stay pinned until the offer ends.
    ///
    /// # Errors
    ///
    /// [`Error::RingFull`] when as many receives and offers are in flight
    /// as the ring holds; the module's errno as [`Error::Io`]: `ENOTCONN`
    /// (no live control connection to `rank`), `ENOSPC` (offer table
    /// full), `ENOBUFS` (pin budget), `ENOMEM` (`RLIMIT_MEMLOCK`).
    pub fn offer(&self, data: &[u8], rank: u32, user_data: u64) -> Result<u32> {
        self.reserve()?;
        let mut args = abi::OfferArgs {
            buf: data.as_ptr() as u64,
            len: data.len() as u64,
            user_data,
            rank,
            ..Default::default()
        };
        match raw::offer(self.device.as_fd(), &mut args) {
            Ok(()) => Ok(args.offer),
            Err(e) => {
                self.release();
                Err(Error::io("O2G_IOC_OFFER", e))
            }
        }
    }

    /// Replaces the buffer of offer `offer` (to `rank`) with `data`, of
    /// the same length, if its receiver has not asked for it yet: `true`
    /// if replaced (the old buffer is the caller's again), `false` if the
    /// data goes out from the old buffer already (wait for the offer's
    /// [`crate::Reaped::Sent`]).
    pub fn replace_offer(&self, offer: u32, data: &[u8], rank: u32) -> Result<bool> {
        let mut args = abi::OfferArgs {
            buf: data.as_ptr() as u64,
            len: data.len() as u64,
            rank,
            flags: abi::O2G_OFFER_REPLACE,
            offer,
            ..Default::default()
        };
        match raw::offer(self.device.as_fd(), &mut args) {
            Ok(()) => Ok(true),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => Ok(false),
            Err(e) => Err(Error::io("O2G_IOC_OFFER (replace)", e)),
        }
    }
}
