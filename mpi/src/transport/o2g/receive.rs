//! The receive half: posting a receive to the module, or letting a small
//! one wait for its message's announcement in the ring, and taking
//! stored messages out of the dump area.

use libo2g::{Announced, Post, PostOutcome, RecvHandle};
use o2g_core::proto::envelope::{Envelope, Selector, SourceSel};
use o2g_core::proto::matching::MsgId;

use crate::error::{Error, Result};
use crate::request::NO_RANK;
use crate::transport::announced::Wait;
use crate::transport::{pool, ReceiveHalf, RecvOutcome, RecvToken, Transport};

use super::completion::{request_of, took_stored, Notice};
use super::failure::NO_LIVE_PEER;
use super::{abort_holding_memory, lib_err, O2g, IDLE_SLICE};

/// Largest receive that waits for its message's announcement instead of
/// posting a buffer to the module: copying it out of the dump area costs
/// less than pinning, unpinning and the system calls. Where the two meet
/// is measured in `docs/results.md` ("Receives that wait in the ring").
pub(super) const WAIT_IN_RING_MAX: usize = 8 << 10;

/// Why a message that needs a pinned receive buffer cannot be received.
pub(super) const NO_PINS_FOR_RENDEZVOUS: &str =
    "o2g: pinned memory for a rendezvous receive (a message \
     above O2G_RNDV_THRESHOLD lands only in a pinned buffer): raise `ulimit -l` or \
     O2G_PIN_BUDGET, or raise O2G_RNDV_THRESHOLD (and O2G_DUMP_BYTES) on every rank so that \
     such messages go eager";

pub(super) enum RecvState {
    /// Waiting for its message's announcement (in `O2g::waiting`).
    Waiting {
        /// Nobody will take the outcome: drop it when it comes.
        released: bool,
    },
    /// In the module.
    Posted {
        handle: RecvHandle,
        /// Nobody will take the outcome: drop it when it comes.
        released: bool,
    },
    /// In the module, which writes into the caller's memory
    /// (`post_recv_in_place`); released only by waiting for it.
    InPlace {
        recv_id: u64,
        cap: usize,
    },
    Done(RecvOutcome),
}

/// What one attempt to post a receive to the module gave.
pub(super) enum Attempt {
    Made(RecvState),
    /// Announcements came first, or the ring must be read: reap and retry.
    Retry,
    /// The module could not pin the buffer (`RLIMIT_MEMLOCK` or the pin
    /// budget): the receive waits in the ring, for its message to be
    /// stored and copied out, instead.
    NoPins,
}

/// A receive that was not posted to the module (see `RecvState::Waiting`).
#[derive(Clone, Copy)]
pub(super) struct WaitingRecv {
    pub(super) token: RecvToken,
    pub(super) sel: Selector,
    pub(super) cap: usize,
}

impl O2g {
    /// A receive buffer of exactly `len` bytes, from the pool if one fits
    /// (its pages stay mapped: neither faulted in nor zeroed again).
    pub(super) fn buffer(&mut self, len: usize) -> Vec<u8> {
        pool::take_sized(len)
    }

    /// Records the outcome of a receive that was waiting or posted, unless
    /// nobody wants it any more.
    pub(super) fn settle(&mut self, token: RecvToken, outcome: RecvOutcome) {
        match self.recvs.get(&token) {
            Some(
                RecvState::Posted { released: true, .. } | RecvState::Waiting { released: true },
            ) => {
                self.recvs.remove(&token);
            }
            Some(
                RecvState::Posted { .. } | RecvState::Waiting { .. } | RecvState::InPlace { .. },
            ) => {
                self.recvs.insert(token, RecvState::Done(outcome));
            }
            _ => {}
        }
    }

    /// Records what posting a receive that was waiting gave, unless
    /// nobody wants it any more.
    pub(super) fn posted(&mut self, token: RecvToken, state: RecvState) {
        let released = matches!(
            self.recvs.get(&token),
            Some(RecvState::Waiting { released: true })
        );
        match state {
            RecvState::Posted { handle, .. } => {
                self.recvs
                    .insert(token, RecvState::Posted { handle, released });
            }
            _ if released => {
                self.recvs.remove(&token);
            }
            done => {
                self.recvs.insert(token, done);
            }
        }
    }

    /// What posting a receive for announced request `id` gave: the
    /// receive's state once made (the announcement is then taken), or
    /// `None` to read the ring and try again.
    pub(super) fn for_request(&mut self, id: MsgId, attempt: Attempt) -> Result<Option<RecvState>> {
        match attempt {
            Attempt::Made(state) => {
                self.held.take(id);
                Ok(Some(state))
            }
            Attempt::Retry => Ok(None),
            Attempt::NoPins => Err(Error::ResourceExhausted(NO_PINS_FOR_RENDEZVOUS)),
        }
    }

    /// Copies announced `msg` into a buffer of `cap` bytes and gives its
    /// space back.
    pub(super) fn deliver(&mut self, msg: Announced, cap: usize) -> Result<RecvOutcome> {
        let mut buf = self.buffer(cap);
        let (envelope, len, n) = self.take_stored(msg, &mut buf)?;
        buf.truncate(n);
        Ok(RecvOutcome::Done {
            envelope,
            len,
            data: buf,
        })
    }

    /// Copies what fits of announced `msg` into `dst` and gives its space
    /// back; its envelope, length and the bytes copied.
    pub(super) fn take_stored(
        &mut self,
        msg: Announced,
        dst: &mut [u8],
    ) -> Result<(Envelope, u64, usize)> {
        let (env, len) = (msg.envelope(), msg.len());
        let data = self.ep.announced_data(&msg);
        let n = data.len().min(dst.len());
        dst[..n].copy_from_slice(&data[..n]);
        self.ep
            .give_back(msg)
            .map_err(|e| lib_err("giving back a stored message", e))?;
        Ok((took_stored(&mut self.sync_matched, env), len, n))
    }

    /// One `O2G_IOC_POST` of a receive for `sel` into `cap` bytes.
    pub(super) fn try_post(
        &mut self,
        sel: Selector,
        cap: usize,
        token: RecvToken,
    ) -> Result<Attempt> {
        let buf = self.buffer(cap);
        let refused = match self.ep.post(buf, sel, token.to_handle()) {
            // Rare: the buffer is not worth keeping.
            Ok(Post::Rescan(_)) => return Ok(Attempt::Retry),
            Ok(Post::Queued(handle)) => {
                return Ok(Attempt::Made(RecvState::Posted {
                    handle,
                    released: false,
                }))
            }
            Ok(Post::Unexpected { msg, mut buf }) => {
                let (env, len) = (msg.envelope(), msg.len() as u64);
                let n = msg.copy_to(&mut buf);
                buf.truncate(n);
                msg.free()
                    .map_err(|e| lib_err("freeing a stored message", e))?;
                let envelope = took_stored(&mut self.sync_matched, env);
                return Ok(Attempt::Made(RecvState::Done(RecvOutcome::Done {
                    envelope,
                    len,
                    data: buf,
                })));
            }
            Err(refused) => refused,
        };
        if let Some(buf) = refused.buf {
            self.recycle(buf);
        }
        self.refused(sel, refused.error)
    }

    /// The ring has no record to spare: fine if completions wait there
    /// (reaping frees them), an error if everything in flight is owed
    /// one (too many receives and sends at once).
    pub(super) fn check_ring_full(&self) -> Result<()> {
        // Completions not yet taken count as in flight.
        let pending = self
            .ep
            .pending_completions()
            .map_err(|e| lib_err("reading the ring", e))?;
        if pending == 0 {
            return Err(Error::ResourceExhausted(
                "o2g completion ring (too many receives and sends in flight)",
            ));
        }
        Ok(())
    }

    /// What a post the module refused with `error` means: retry, a failed
    /// receive, or an error for the caller.
    pub(super) fn refused(&mut self, sel: Selector, error: libo2g::Error) -> Result<Attempt> {
        let errno = error.raw_os_error();
        match (&error, errno) {
            (libo2g::Error::RingFull { .. }, _) => {
                self.check_ring_full()?;
                Ok(Attempt::Retry)
            }
            (_, Some(nix::libc::ECONNRESET)) => {
                let (rank, reason) = match sel.source {
                    SourceSel::Rank(r) => (
                        r,
                        self.kill_unexplained(
                            r,
                            "the connection failed before the receive was posted",
                        ),
                    ),
                    SourceSel::Any => (NO_RANK, NO_LIVE_PEER.to_owned()),
                };
                Ok(Attempt::Made(RecvState::Done(RecvOutcome::Failed {
                    rank,
                    reason,
                })))
            }
            (_, Some(errno @ (nix::libc::ENOBUFS | nix::libc::ENOMEM))) => {
                if !self.warned_no_pins {
                    self.warned_no_pins = true;
                    let limit = if errno == nix::libc::ENOMEM {
                        "RLIMIT_MEMLOCK (raise `ulimit -l`)"
                    } else {
                        "the o2g pin budget (raise O2G_PIN_BUDGET)"
                    };
                    eprintln!(
                        "o2g: a receive buffer could not be pinned: {limit}; such receives \
                         wait for their message in the dump area and are copied out of it \
                         (a message larger than O2G_DUMP_BYTES cannot be received that way)"
                    );
                }
                Ok(Attempt::NoPins)
            }
            (_, Some(nix::libc::ENOSPC)) => {
                Err(Error::ResourceExhausted("o2g posted-receive queue"))
            }
            _ => Err(lib_err("posting a receive", error)),
        }
    }

    /// One `O2G_IOC_POST` of a receive for `sel` straight into `cap` bytes
    /// at `dst`.
    ///
    /// # Safety
    ///
    /// As [`Transport::post_recv_in_place`], for `dst..dst + cap`.
    pub(super) unsafe fn try_post_in_place(
        &mut self,
        sel: Selector,
        dst: *mut u8,
        cap: usize,
        token: RecvToken,
    ) -> Result<Attempt> {
        // SAFETY: Forwarded from this function's contract; a queued receive
        // becomes `RecvState::InPlace`, which `release_recv` waits out.
        let error = match unsafe { self.ep.post_raw(dst, cap, sel, token.to_handle()) } {
            Ok(PostOutcome::Queued { recv_id }) => {
                return Ok(Attempt::Made(RecvState::InPlace { recv_id, cap }))
            }
            Ok(PostOutcome::Unexpected(msg)) => {
                // SAFETY: The module did not take the buffer, which the
                // caller lends us exclusively.
                let dst = unsafe { std::slice::from_raw_parts_mut(dst, cap) };
                let written = msg.copy_to(dst);
                let (env, len) = (msg.envelope(), msg.len() as u64);
                msg.free()
                    .map_err(|e| lib_err("freeing a stored message", e))?;
                let envelope = took_stored(&mut self.sync_matched, env);
                return Ok(Attempt::Made(RecvState::Done(RecvOutcome::InPlace {
                    envelope,
                    len,
                    written,
                })));
            }
            Ok(PostOutcome::Rescan) => return Ok(Attempt::Retry),
            // An answer this library cannot read may mean the module kept
            // the buffer, and nothing would tell when it lets go of it.
            Err(e @ libo2g::Error::BadAnswer { .. }) => abort_holding_memory(&e),
            Err(e) => e,
        };
        self.refused(sel, error)
    }

    /// Receive `token` for `sel` into `cap` bytes waits in the ring for
    /// an announcement, unless one that arrived meanwhile matches it.
    pub(super) fn wait(
        &mut self,
        sel: Selector,
        cap: usize,
        token: RecvToken,
    ) -> Result<RecvState> {
        let w = WaitingRecv { token, sel, cap };
        match self.held.wait(sel, token.to_handle(), w)? {
            Wait::Queued => Ok(RecvState::Waiting { released: false }),
            Wait::Matched(n) => {
                // Settled (or posted, for a request) like one that waited.
                self.recvs
                    .insert(token, RecvState::Waiting { released: false });
                self.take_notice(w, n)?;
                self.post_requested()?;
                Ok(self
                    .recvs
                    .remove(&token)
                    .unwrap_or(RecvState::Waiting { released: false }))
            }
        }
    }

    /// Hands every receive waiting in the ring to the module, oldest first:
    /// before a large receive (whose message may not fit the dump area),
    /// and when a connection is stalled (its next message may be one of
    /// theirs, which the module can then write straight into its buffer).
    ///
    /// Returns false, leaving the rest waiting, when the module cannot pin
    /// a buffer (see [`Attempt::NoPins`]).
    pub(super) fn promote_waiting(&mut self) -> Result<bool> {
        while let Some(&w) = self.held.oldest_waiting() {
            match self.try_post(w.sel, w.cap, w.token)? {
                Attempt::Made(state) => {
                    self.held.unwait(w.token.to_handle());
                    self.posted(w.token, state);
                }
                // It keeps its place: what the ring holds is matched in
                // posting order, maybe to this very receive.
                Attempt::Retry => {
                    self.reap()?;
                }
                Attempt::NoPins => return Ok(false),
            }
        }
        Ok(true)
    }
}

impl ReceiveHalf for O2g {
    fn post_recv(&mut self, sel: Selector, capacity: usize) -> Result<RecvToken> {
        // No message can be longer than `max_message`, so a larger buffer
        // would only pin memory for nothing.
        let cap = capacity.min(self.max_message as usize);
        let token = RecvToken::from_handle(self.next_recv);
        self.next_recv += 1;
        let state = loop {
            // Every announcement read first: the module refuses a post
            // (Rescan) while an older one may match.
            self.reap()?;
            match self.held.find(sel).map(|(id, n)| (id, request_of(n))) {
                Some((id, None)) => {
                    if let Some(Notice::Stored(msg)) = self.held.take(id) {
                        break RecvState::Done(self.deliver(msg, cap)?);
                    }
                }
                Some((id, Some(e))) => {
                    let attempt = self.try_post(Selector::exact(e), cap, token)?;
                    match self.for_request(id, attempt)? {
                        Some(state) => break state,
                        None => continue,
                    }
                }
                None => {}
            }
            // A large message may not fit the dump area: this receive goes
            // to the module, after the ones waiting before it (unless the
            // module cannot pin them).
            if cap > WAIT_IN_RING_MAX && self.held.has_waiting() && self.promote_waiting()? {
                continue;
            }
            if cap > WAIT_IN_RING_MAX && !self.held.has_waiting() {
                match self.try_post(sel, cap, token)? {
                    Attempt::Made(state) => break state,
                    Attempt::Retry => continue,
                    Attempt::NoPins => {}
                }
            }
            break self.wait(sel, cap, token)?;
        };
        self.recvs.insert(token, state);
        Ok(token)
    }

    /// Only for receives larger than [`WAIT_IN_RING_MAX`], which go to the
    /// module anyway: the module pins the caller's pages instead of a pool
    /// buffer's, and the copy out of that buffer is saved. Smaller ones wait
    /// in the ring, whose copy out of the dump area is the only one.
    unsafe fn post_recv_in_place(
        &mut self,
        sel: Selector,
        dst: *mut u8,
        capacity: usize,
    ) -> Result<Option<RecvToken>> {
        let cap = capacity.min(self.max_message as usize);
        if cap <= WAIT_IN_RING_MAX {
            return Ok(None);
        }
        let token = RecvToken::from_handle(self.next_recv);
        self.next_recv += 1;
        let state = loop {
            // As in `post_recv`: announcements first, then the receives
            // waiting before this one.
            self.reap()?;
            match self.held.find(sel).map(|(id, n)| (id, request_of(n))) {
                Some((id, None)) => {
                    if let Some(Notice::Stored(msg)) = self.held.take(id) {
                        // SAFETY: Nothing was posted yet; the caller lends
                        // `dst` exclusively.
                        let dst = unsafe { std::slice::from_raw_parts_mut(dst, cap) };
                        let (envelope, len, written) = self.take_stored(msg, dst)?;
                        break RecvState::Done(RecvOutcome::InPlace {
                            envelope,
                            len,
                            written,
                        });
                    }
                }
                Some((id, Some(e))) => {
                    // SAFETY: Forwarded from this function's contract.
                    let attempt =
                        unsafe { self.try_post_in_place(Selector::exact(e), dst, cap, token) }?;
                    match self.for_request(id, attempt)? {
                        Some(state) => break state,
                        None => continue,
                    }
                }
                None => {}
            }
            if self.held.has_waiting() {
                if self.promote_waiting()? {
                    continue;
                }
                // It waits in the ring behind the others (`post_recv`).
                return Ok(None);
            }
            // SAFETY: Forwarded from this function's contract.
            match unsafe { self.try_post_in_place(sel, dst, cap, token) }? {
                Attempt::Made(state) => break state,
                Attempt::Retry => continue,
                Attempt::NoPins => return Ok(None),
            }
        };
        self.recvs.insert(token, state);
        Ok(Some(token))
    }

    fn test_recv(&mut self, token: RecvToken) -> Option<RecvOutcome> {
        if matches!(
            self.recvs.get(&token),
            Some(RecvState::Posted { .. } | RecvState::Waiting { .. } | RecvState::InPlace { .. })
        ) {
            // An error here shows up again in `progress`.
            let _ = self.reap();
        }
        match self.recvs.remove(&token)? {
            RecvState::Done(o) => Some(o),
            posted => {
                self.recvs.insert(token, posted);
                None
            }
        }
    }

    fn cancel_recv(&mut self, token: RecvToken) -> bool {
        if self.held.unwait(token.to_handle()).is_some() {
            self.recvs
                .insert(token, RecvState::Done(RecvOutcome::Cancelled));
            return true;
        }
        if let Some(&RecvState::InPlace { recv_id, .. }) = self.recvs.get(&token) {
            // A refusal (an error) leaves it posted: it completes normally.
            if !self.ep.cancel_raw(recv_id).unwrap_or(false) {
                return false;
            }
            self.recvs
                .insert(token, RecvState::Done(RecvOutcome::Cancelled));
            return true;
        }
        let Some(RecvState::Posted { handle, .. }) = self.recvs.get(&token) else {
            return false;
        };
        let handle = *handle;
        match self.ep.cancel(&handle) {
            Ok(Some(_buf)) => {
                self.recvs
                    .insert(token, RecvState::Done(RecvOutcome::Cancelled));
                true
            }
            // Too late (or the module refused): it completes normally.
            Ok(None) | Err(_) => false,
        }
    }

    fn release_recv(&mut self, token: RecvToken) {
        if self.cancel_recv(token) {
            self.recvs.remove(&token);
            return;
        }
        // Matched and being written: the caller gets its memory back only
        // once the module has finished with it (the message arrived, or the
        // connection failed, which completes it too).
        while let Some(RecvState::InPlace { .. }) = self.recvs.get(&token) {
            if let Err(e) = self.progress(Some(IDLE_SLICE)) {
                abort_holding_memory(&e);
            }
        }
        match self.recvs.get_mut(&token) {
            Some(RecvState::Posted { released, .. } | RecvState::Waiting { released }) => {
                *released = true
            }
            _ => {
                self.recvs.remove(&token);
            }
        }
    }

    fn take_sync_matches(&mut self) -> Vec<Envelope> {
        std::mem::take(&mut self.sync_matched)
    }

    fn has_sync_matches(&mut self) -> bool {
        !self.sync_matched.is_empty()
    }

    fn iprobe(&mut self, sel: Selector) -> Option<(Envelope, u64)> {
        // An error here shows up again in `progress`.
        let _ = self.reap();
        if let Some(announced) = self.held.peek(sel) {
            return Some(announced);
        }
        self.ep.probe(sel).ok()?
    }

    fn recycle(&mut self, buf: Vec<u8>) {
        pool::give(buf);
    }
}
