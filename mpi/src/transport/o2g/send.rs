//! The send half: eager messages within the receiver's credit, written
//! through each connection's outbox as the socket transports write them
//! (what the socket does not take at once is copied, or for an
//! `isend_lent` kept by reference to the caller's buffer), and rendezvous
//! sends offered to the module.

use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use libo2g::{RecvError, Sent};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use o2g_core::proto::credit::Credit;
use o2g_core::proto::envelope::Envelope;
use o2g_core::proto::wire::Kind;

use crate::error::{Error, Result};
use crate::transport::outbox::{Sending, Sends};
use crate::transport::{SendHalf, SendToken, Transport};

use super::{abort_holding_memory, lib_err, O2g, IDLE_SLICE};

/// Longest wait for room on a socket before completions are looked at.
pub(super) const SEND_SLICE: Duration = Duration::from_millis(1);

/// How long a blocking rendezvous send lends the caller's buffer to the
/// module before it hands over a copy instead, as the socket transports
/// do (see `docs/protocol.md`): two ranks that send large messages to
/// each other before receiving do not wait for each other.
pub(super) const RNDV_WAIT: Duration = Duration::from_millis(20);

/// A rendezvous send the module holds until its `SENT` record.
pub(super) struct Offered {
    dest: u32,
    /// The module's name for it.
    id: u32,
    /// The copy the module reads, for a nonblocking send (or a blocking
    /// one that stopped waiting); `None` while it reads the caller's.
    copy: Option<Vec<u8>>,
    /// The caller's memory the module reads (address and length), for a
    /// send offered in place (`isend_in_place`, `isend_lent`), until a
    /// copy replaces it.
    lent: Option<(usize, usize)>,
    /// Set by its `SENT` record, for the sender to see.
    ended: Option<std::result::Result<(), RecvError>>,
}

/// Marks the tokens of sends offered in place (`isend_in_place`,
/// `isend_lent`); the rest is the offer's user data.
pub(super) const OFFER_TOKEN: u64 = 1 << 63;

/// The status a blocking send's offer ended with (`None`: it ended and
/// was forgotten, which only a failure of its peer does).
pub(super) fn status_of(
    ended: Option<Option<std::result::Result<(), RecvError>>>,
) -> std::result::Result<(), RecvError> {
    ended.flatten().unwrap_or(Err(RecvError::ConnectionFailed))
}

impl O2g {
    /// An offer ended: a nonblocking send's copy is freed; a blocking send
    /// sees the status. A failure is its peer's.
    pub(super) fn sent(&mut self, sent: Sent) {
        let Some(o) = self.offers.get_mut(&sent.user_data) else {
            return;
        };
        let dest = o.dest;
        if let Err(e) = sent.status {
            if e == RecvError::ConnectionFailed {
                self.kill_unexplained(dest, "a rendezvous send failed");
            } else {
                self.kill(dest, format!("a rendezvous send failed: {e}"));
            }
        }
        // A send that lent the caller's memory learns of the end when it
        // asks; one the module read a copy of is done with.
        match self.offers.get_mut(&sent.user_data) {
            Some(o) if o.copy.is_none() || o.lent.is_some() => o.ended = Some(sent.status),
            _ => {
                self.offers.remove(&sent.user_data);
            }
        }
    }

    /// Records offer `id` to `dest` (user data `user_data`) until its
    /// `SENT` record. The module reads `copy` if there is one, else the
    /// caller's memory: `lent` names it for `isend_in_place`; a blocking
    /// send keeps the caller waiting instead.
    pub(super) fn hold(
        &mut self,
        user_data: u64,
        dest: u32,
        id: u32,
        copy: Option<Vec<u8>>,
        lent: Option<(usize, usize)>,
    ) {
        let offer = Offered {
            dest,
            id,
            copy,
            lent,
            ended: None,
        };
        self.offers.insert(user_data, offer);
    }

    /// Waits for the end of blocking send `user_data` (offer `id` of the
    /// caller's `data` to `dest`), keeping everything moving. After
    /// [`RNDV_WAIT`] without a clear-to-send, the module gets a copy and
    /// the send returns.
    pub(super) fn wait_sent(
        &mut self,
        dest: u32,
        user_data: u64,
        id: u32,
        data: &[u8],
    ) -> Result<()> {
        let since = Instant::now();
        let mut lent = true;
        loop {
            self.reap()?;
            let ended = self.offers.get(&user_data).map(|o| o.ended);
            match ended {
                Some(Some(_)) | None => {
                    self.offers.remove(&user_data);
                    return match status_of(ended) {
                        Ok(()) => Ok(()),
                        Err(_) => self.peer(dest).map(drop),
                    };
                }
                Some(None) => {}
            }
            if lent && since.elapsed() >= RNDV_WAIT {
                let copy = data.to_vec();
                self.rndv_copied += copy.len() as u64;
                match self.ep.replace_offer(id, &copy, dest) {
                    Ok(true) => {
                        if let Some(o) = self.offers.get_mut(&user_data) {
                            o.copy = Some(copy);
                        }
                        return Ok(());
                    }
                    // Cleared already (its data goes out from `data`
                    // now), or even sent (its record is in the ring).
                    Ok(false) => lent = false,
                    Err(e) if e.raw_os_error() == Some(nix::libc::ENOENT) => lent = false,
                    Err(e) => return Err(lib_err("handing a send's copy to the module", e)),
                }
            }
            self.progress(Some(Duration::from_millis(1)))?;
        }
    }

    /// The longest message that may go eager to `dest` (0 beyond the
    /// world).
    fn eager_max(&self, dest: u32) -> u64 {
        self.eager_max.get(dest as usize).copied().unwrap_or(0)
    }

    /// Whether a message of `len` bytes to `dest` goes eager: no longer
    /// than the threshold, and within the credit `dest` granted (taken
    /// from the module when what is left does not cover it), which it
    /// then spends. Otherwise it goes as a request to send (to oneself
    /// too: the module then copies the offer into the receive itself).
    pub(super) fn eager(&mut self, dest: u32, len: usize) -> Result<bool> {
        let len = len as u64;
        if len > self.eager_max(dest) {
            return Ok(false);
        }
        let Some(allowance) = self.credit.get_mut(dest as usize) else {
            return Ok(false);
        };
        if allowance.spend(len) {
            return Ok(true);
        }
        let (bytes, msgs) = self
            .ep
            .take_credit(dest)
            .map_err(|e| lib_err("taking eager credit from the module", e))?;
        let allowance = &mut self.credit[dest as usize];
        allowance.add(Credit { bytes, msgs });
        Ok(allowance.spend(len))
    }

    /// Offers `data` to the module for a rendezvous send to `dest`; the
    /// offer's user data and id. When the module cannot hold it now (pins,
    /// table), waits for earlier offers to end; with none left, that is
    /// an error: the message cannot go eager (the receiver takes no eager
    /// message beyond the threshold or its credit).
    pub(super) fn offer(&mut self, dest: u32, data: &[u8]) -> Result<(u64, u32)> {
        let user_data = self.next_offer;
        loop {
            let error = match self.ep.offer(data, dest, user_data) {
                Ok(id) => {
                    self.next_offer += 1;
                    return Ok((user_data, id));
                }
                Err(e) => e,
            };
            match (&error, error.raw_os_error()) {
                (libo2g::Error::RingFull { .. }, _) => {
                    self.check_ring_full()?;
                    self.reap()?;
                }
                (_, Some(nix::libc::ENOTCONN)) => {
                    self.kill_unexplained(dest, "its control connection failed");
                    self.peer(dest)?;
                    return Err(lib_err("offering a rendezvous send", error));
                }
                (_, Some(nix::libc::ENOSPC | nix::libc::ENOBUFS | nix::libc::ENOMEM))
                    if self.offers.values().any(|o| o.ended.is_none()) =>
                {
                    self.progress(Some(IDLE_SLICE))?;
                }
                (_, Some(nix::libc::ENOBUFS | nix::libc::ENOMEM)) => {
                    return Err(lib_err(
                        &format!(
                            "offering a {}-byte rendezvous send (it needs pinned memory: \
                             raise `ulimit -l` or O2G_PIN_BUDGET, or raise O2G_RNDV_THRESHOLD \
                             and O2G_DUMP_BYTES on every rank so that it goes eager)",
                            data.len()
                        ),
                        error,
                    ))
                }
                _ => return Err(lib_err("offering a rendezvous send", error)),
            }
        }
    }

    /// Starts a send to `dest`, eager (its credit spent) or as a request
    /// to send of a copy (the caller's buffer is free at once).
    pub(super) fn start_send(
        &mut self,
        dest: u32,
        env: Envelope,
        data: &[u8],
        eager: bool,
    ) -> Result<SendToken> {
        // SAFETY: Not lent: what the socket does not take is copied.
        unsafe { self.start_send_keeping(dest, env, data, eager, false) }
    }

    /// [`O2g::start_send`], keeping the rest of an eager message that the
    /// socket does not take at once by reference to `data` where `lend`
    /// (no copy; [`SendHalf::release_send`] copies it if the caller lets
    /// go first), or as a copy.
    ///
    /// # Safety
    ///
    /// Where `lend`, `data` stays allocated and unchanged until the token
    /// completes or `release_send` returned for it
    /// ([`SendHalf::isend_lent`]'s contract).
    unsafe fn start_send_keeping(
        &mut self,
        dest: u32,
        env: Envelope,
        data: &[u8],
        eager: bool,
        lend: bool,
    ) -> Result<SendToken> {
        let mut copy = None;
        let mut offer = None;
        if !eager {
            let owned = data.to_vec();
            self.rndv_copied += owned.len() as u64;
            offer = Some(self.offer(dest, &owned)?);
            copy = Some(owned);
        }
        let p = &mut self.peers[dest as usize];
        let (header, payload) = match offer {
            Some((_, id)) => (
                p.outbox
                    .tx
                    .encode_ref(Kind::Rts, env, data.len() as u64, id),
                &[][..],
            ),
            None => (
                p.outbox.tx.encode(Kind::Eager, env, data.len() as u64),
                data,
            ),
        };
        let w = p.writer.as_mut().unwrap_or(&mut p.registered);
        let started = if lend {
            // SAFETY: This function's contract.
            unsafe { p.outbox.start_lent(w, &mut self.sends, header, payload) }
        } else {
            p.outbox.start(w, &mut self.sends, header, payload)
        };
        if let Some((user_data, id)) = offer {
            // Moving the vector does not move the bytes the module reads.
            self.hold(user_data, dest, id, copy, None);
        }
        match started {
            Ok(token) => Ok(token),
            Err(e) => {
                self.kill_on_write(dest, &e);
                self.peer(dest).map(|_| SendToken(0))
            }
        }
    }

    /// Writes queued messages until each socket is full; whether any
    /// message went out.
    pub(super) fn flush_queues(&mut self) -> bool {
        let mut any = false;
        for rank in 0..self.peers.len() {
            let p = &mut self.peers[rank];
            if p.dead.is_some() || p.outbox.is_empty() {
                continue;
            }
            let w = p.writer.as_mut().unwrap_or(&mut p.registered);
            match p.outbox.flush(w, &mut self.sends) {
                Ok(flushed) => any |= flushed.sent,
                Err(e) => {
                    self.kill_on_write(rank as u32, &e);
                }
            }
        }
        any
    }

    /// Waits at most `timeout` for room on the sockets in `ranks`.
    pub(super) fn wait_writable(&self, ranks: &[usize], timeout: Duration) -> Result<()> {
        let mut fds: Vec<PollFd<'_>> = ranks
            .iter()
            .map(|&r| {
                let p = &self.peers[r];
                let s = p.writer.as_ref().unwrap_or(&p.registered);
                PollFd::new(s.as_fd(), PollFlags::POLLOUT)
            })
            .collect();
        let ms = timeout.as_millis().clamp(1, u128::from(u16::MAX)) as u16;
        match poll(&mut fds, PollTimeout::from(ms)) {
            Ok(_) | Err(nix::errno::Errno::EINTR) => Ok(()),
            Err(e) => Err(Error::io("poll for room to send", e.into())),
        }
    }

    pub(super) fn queued(&self) -> Vec<usize> {
        (0..self.peers.len())
            .filter(|&r| self.peers[r].dead.is_none() && !self.peers[r].outbox.is_empty())
            .collect()
    }

    pub(super) fn check_size(&self, len: usize) -> Result<()> {
        if len as u64 > self.max_message {
            return Err(Error::InvalidArgument(format!(
                "a {len}-byte message exceeds the o2g transport's largest, {} bytes",
                self.max_message
            )));
        }
        Ok(())
    }
}

impl SendHalf for O2g {
    fn send(&mut self, dest: u32, env: Envelope, data: &[u8]) -> Result<()> {
        self.check_size(data.len())?;
        // Earlier isends to `dest` leave first.
        while !self.peer(dest)?.outbox.is_empty() {
            self.progress(None)?;
        }
        let eager = self.eager(dest, data.len())?;
        if !eager && data.len() as u64 <= self.eager_max(dest) {
            // Out of credit: a short message goes as a request to send
            // of a copy, and the caller goes on at once.
            let token = self.start_send(dest, env, data, false)?;
            self.release_send(token);
            return Ok(());
        }
        let offer = if eager {
            None
        } else {
            Some(self.offer(dest, data)?)
        };
        let p = self.peer(dest)?;
        let header = match offer {
            Some((_, id)) => p
                .outbox
                .tx
                .encode_ref(Kind::Rts, env, data.len() as u64, id),
            None => p.outbox.tx.encode(Kind::Eager, env, data.len() as u64),
        };
        if let Some((user_data, id)) = offer {
            self.hold(user_data, dest, id, None, None);
        }
        let payload = if offer.is_some() { &[][..] } else { data };
        let mut sending = Sending::new(header);
        loop {
            let p = self.peer(dest)?;
            match sending.write(p.wstream(), payload) {
                Ok(true) => break,
                Ok(false) => {}
                Err(e) => {
                    self.kill_on_write(dest, &e);
                    return self.peer(dest).map(drop);
                }
            }
            // The receiver holds back (its dump area is full, or it reads
            // slower): wait for room, keeping completions moving.
            self.wait_writable(&[dest as usize], IDLE_SLICE)?;
            self.reap()?;
        }
        match offer {
            Some((user_data, id)) => self.wait_sent(dest, user_data, id, data),
            None => Ok(()),
        }
    }

    fn isend(&mut self, dest: u32, env: Envelope, data: &[u8]) -> Result<SendToken> {
        self.check_size(data.len())?;
        self.peer(dest)?;
        let eager = self.eager(dest, data.len())?;
        self.start_send(dest, env, data, eager)
    }

    fn sends(&mut self) -> &mut Sends {
        &mut self.sends
    }

    fn test_send(&mut self, token: SendToken) -> Result<bool> {
        if token.0 & OFFER_TOKEN == 0 {
            return self.sends.test(token);
        }
        let user_data = token.0 & !OFFER_TOKEN;
        self.reap()?;
        let Some(o) = self.offers.get(&user_data) else {
            return Ok(true);
        };
        let (dest, ended) = (o.dest, o.ended);
        match ended {
            None => self.peer(dest).map(|_| false),
            Some(status) => {
                self.offers.remove(&user_data);
                match status {
                    Ok(()) => Ok(true),
                    Err(_) => self.peer(dest).map(|_| true),
                }
            }
        }
    }

    fn release_send(&mut self, token: SendToken) {
        if token.0 & OFFER_TOKEN == 0 {
            // An eager message still queued may hold the caller's memory
            // (`isend_lent`), which is theirs again once this returns.
            for p in &mut self.peers {
                p.outbox.own(token.0);
            }
            self.sends.release(token);
            return;
        }
        let user_data = token.0 & !OFFER_TOKEN;
        let Some(o) = self.offers.get(&user_data) else {
            return;
        };
        let (dest, id, lent) = (o.dest, o.id, o.lent);
        if o.ended.is_some() {
            self.offers.remove(&user_data);
            return;
        }
        // The caller's memory is about to be theirs again: the module gets
        // a copy if its receiver has not asked yet; otherwise the data is
        // going out from it, and that ends soon.
        if let Some((addr, len)) = lent {
            // SAFETY: `offer_in_place`'s contract keeps the memory valid
            // and unchanged until this call returns.
            let copy = unsafe { std::slice::from_raw_parts(addr as *const u8, len) }.to_vec();
            self.rndv_copied += copy.len() as u64;
            if let Ok(true) = self.ep.replace_offer(id, &copy, dest) {
                if let Some(o) = self.offers.get_mut(&user_data) {
                    o.copy = Some(copy);
                    o.lent = None;
                }
                return;
            }
        }
        loop {
            match self.offers.get(&user_data) {
                Some(o) if o.ended.is_none() => {}
                _ => break,
            }
            // The send still reads the caller's memory: only its end (or
            // its connection's failure, which ends it too) lets go.
            if let Err(e) = self.progress(Some(IDLE_SLICE)) {
                abort_holding_memory(&e);
            }
        }
        self.offers.remove(&user_data);
    }

    unsafe fn isend_in_place(
        &mut self,
        dest: u32,
        env: Envelope,
        data: *const u8,
        len: usize,
    ) -> Result<Option<SendToken>> {
        self.check_size(len)?;
        self.peer(dest)?;
        if len as u64 <= self.eager_max(dest) {
            return Ok(None);
        }
        // SAFETY: This function's contract.
        unsafe { self.offer_in_place(dest, env, data, len) }.map(Some)
    }

    unsafe fn isend_lent(
        &mut self,
        dest: u32,
        env: Envelope,
        data: *const u8,
        len: usize,
    ) -> Result<Option<SendToken>> {
        if len == 0 {
            // Nothing to lend (and `data` may dangle).
            return Ok(None);
        }
        self.check_size(len)?;
        self.peer(dest)?;
        if !self.eager(dest, len)? {
            // SAFETY: This contract is stronger than `offer_in_place`'s.
            return unsafe { self.offer_in_place(dest, env, data, len) }.map(Some);
        }
        // SAFETY: The trait's contract: valid and unchanged until the
        // token completes or is released; `len > 0`.
        let data = unsafe { std::slice::from_raw_parts(data, len) };
        // SAFETY: As above; `release_send` copies what is still queued.
        unsafe { self.start_send_keeping(dest, env, data, true, true) }.map(Some)
    }

    fn has_queued_sends(&self) -> bool {
        // An offer the module still holds is a send not yet done: closing
        // the endpoint now would end it unsent.
        !self.queued().is_empty() || self.offers.values().any(|o| o.ended.is_none())
    }
}

impl O2g {
    /// Offers the caller's `len` bytes at `data` to the module for a
    /// rendezvous send to `dest`, which reads them from there (no copy)
    /// until the offer ends or `release_send` hands it a copy.
    ///
    /// # Safety
    ///
    /// `data..data + len` stays allocated and unchanged until the token
    /// completes or `release_send` returned for it.
    unsafe fn offer_in_place(
        &mut self,
        dest: u32,
        env: Envelope,
        data: *const u8,
        len: usize,
    ) -> Result<SendToken> {
        // SAFETY: This function's contract; its callers never offer an
        // empty message.
        let lent = unsafe { std::slice::from_raw_parts(data, len) };
        let (user_data, id) = self.offer(dest, lent)?;
        self.hold(user_data, dest, id, None, Some((data as usize, len)));
        let p = &mut self.peers[dest as usize];
        let header = p.outbox.tx.encode_ref(Kind::Rts, env, len as u64, id);
        let w = p.writer.as_mut().unwrap_or(&mut p.registered);
        // The request is the offer's: the header goes out on its own.
        match p.outbox.start(w, &mut self.sends, header, &[]) {
            Ok(t) => self.sends.release(t),
            Err(e) => {
                self.kill_on_write(dest, &e);
            }
        }
        Ok(SendToken(OFFER_TOKEN | user_data))
    }
}
