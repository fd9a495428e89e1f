//! DIMM_Send and DIMM_Recv: two-sided messages over the flag areas.
//!
//! Every transfer from S to R happens under a *grant*: R tells S (an AOTF
//! into S's flag area about R) that its receive buffers for S are free,
//! how many there are, and its pgid. S then moves one chunk and reports it
//! with DONE (AOTF into R's flag area about S). The two protocols of the
//! paper differ in who moves first:
//!
//! - **Receiver first.** R calls [`Endpoint::recv`] (or
//!   [`Endpoint::prepost`]) before S sends: the grant is already in S's LLCM
//!   when S calls [`Endpoint::send`], so S announces and sends at once.
//! - **Sender first.** S finds no grant: it announces the message
//!   (REQUEST: sequence number and length, AOTF into R's flag area, and
//!   R's byte flag) and waits. R sees it when it polls or receives, grants,
//!   and S sends.
//!
//! A chunk of at most 464 bytes (a whole short message) goes by one BOTF
//! packet into R's LLCM landing slot for S. Anything longer is PUSHed into
//! R's receive buffers for S in R's network-facing SO-DIMM bank; DONE says
//! which bank, so R switches banks if that bank still faces the network.
//! A message longer than the granted buffers is split: S fills them,
//! reports a non-last chunk, and waits for the next grant, which R issues
//! once it has copied the chunk out (the resend path).
//!
//! Completion is by AOTF only (DONE after INFO); a sender's `send` returns
//! when its last DONE is stored, i.e. the data is in R's NIC memory.
//!
//! Every field read from a flag area is checked before use
//! (the `flags` module); a peer that stops answering produces
//! [`Error::Timeout`] after the wait policy's deadline. After any error
//! with a peer the pair's sequence state is unknown: treat the peer as
//! dead.

use std::sync::atomic::Ordering;

use crate::error::{Error, Result};
use crate::flags::{
    self, corrupt, ChunkLimits, Done, Grant, Info, Request, DONE, F_BANK1, F_BOTF, F_LAST, GRANT,
    INFO, REQUEST,
};
use crate::layout::{Layout, BOTF_MAX_PAYLOAD, LLCM_BYTE_FLAGS, MAX_USED_BUFS};
use crate::nic::Nic;

/// Counters of which protocol paths an endpoint took.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Sends that found the receiver's grant already there.
    pub sends_receiver_first: u64,
    /// Sends that announced themselves and waited for a grant.
    pub sends_sender_first: u64,
    /// Chunks sent by BOTF.
    pub botf_chunks: u64,
    /// Chunks sent by PUSH.
    pub push_chunks: u64,
    /// Extra grants issued because a message exceeded the buffers.
    pub regrants: u64,
    /// Bank switches `recv` made to reach a chunk.
    pub bank_switches: u64,
}

#[derive(Clone, Copy, Debug, Default)]
struct Peer {
    /// Sequence number of the last message sent to the peer.
    sent: u32,
    /// gseq of the last grant from the peer consumed by a chunk.
    grants_used: u32,
    /// Sequence number of the last message received from the peer.
    received: u32,
    /// gseq of the last grant issued to the peer.
    grants_issued: u32,
    /// The grant `grants_issued` has not been answered by DONE yet.
    outstanding: bool,
}

/// One node's DIMM_Send/DIMM_Recv state. One endpoint per node: it owns
/// the node's flag areas, landing slots, receive buffers and staging area.
#[derive(Debug)]
pub struct Endpoint {
    nic: Nic,
    pgid: u16,
    peers: Vec<Peer>,
    /// Peers whose next message is known to be waiting, with its length.
    announced: Vec<Option<usize>>,
    next_poll: usize,
    stats: Stats,
}

impl Endpoint {
    /// An endpoint on `nic` for process group `pgid` (every node of the job
    /// must use the same one). Seeds the header of every destination.
    ///
    /// # Errors
    ///
    /// Seeding failed.
    pub fn new(nic: Nic, pgid: u16) -> Result<Self> {
        nic.seed_all()?;
        let n = nic.nodes() as usize;
        Ok(Self {
            nic,
            pgid,
            peers: vec![Peer::default(); n],
            announced: vec![None; n],
            next_poll: 0,
            stats: Stats::default(),
        })
    }

    /// The NIC handle.
    pub fn nic(&self) -> &Nic {
        &self.nic
    }

    /// Path counters so far.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    fn peer_index(&self, p: u32) -> Result<usize> {
        self.nic.check_node(p)?;
        if p == self.nic.node {
            return Err(Error::BadArgument(format!(
                "node {p} sending to itself (use a local copy)"
            )));
        }
        Ok(p as usize)
    }

    fn my_word(&self, peer: u32, field: usize) -> Result<u64> {
        Ok(self
            .nic
            .llcm_u64(flags::word(peer, field))?
            .load(Ordering::Acquire))
    }

    /// DIMM_Send: sends `data` to `dest` and returns once it sits in
    /// `dest`'s NIC memory.
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`] if `dest` does not grant in time,
    /// [`Error::Corrupt`] / [`Error::ForeignPeer`] if its grant is invalid,
    /// [`Error::BadArgument`] for a message over 4 GiB or to ourselves.
    pub fn send(&mut self, dest: u32, data: &[u8]) -> Result<()> {
        let d = self.peer_index(dest)?;
        let me = self.nic.node;
        let total = u32::try_from(data.len())
            .map_err(|_| Error::BadArgument(format!("message of {} bytes", data.len())))?;
        let cfg = *self.nic.layout().config();
        let seq = self.peers[d].sent.wrapping_add(1);
        let want = self.peers[d].grants_used.wrapping_add(1);
        let ready = Grant::unpack_if(self.my_word(dest, GRANT)?, want);
        if ready {
            self.stats.sends_receiver_first += 1;
        } else {
            self.stats.sends_sender_first += 1;
        }
        // Announce (both orders: the receiver's poll reads the length here).
        let dst_flags = flags::word(me, 0);
        self.nic.aotf_u64(
            dest,
            dst_flags + REQUEST,
            Request { seq, len: total }.pack(),
        )?;
        self.nic.aotf_u8(dest, LLCM_BYTE_FLAGS + me as usize, 1)?;

        let mut sent = 0usize;
        loop {
            let gseq = self.peers[d].grants_used.wrapping_add(1);
            let grant = self.nic.wait.wait(
                || format!("a grant (gseq {gseq}) from node {dest} for message {seq}"),
                || {
                    let v = self.my_word(dest, GRANT)?;
                    if (v >> 32) as u32 != gseq {
                        return Ok(None);
                    }
                    Grant::unpack(v, dest, cfg.bufs_per_peer, self.pgid).map(Some)
                },
            )?;
            self.peers[d].grants_used = gseq;
            let left = data.len() - sent;
            let (chunk, used, mut fl) = if data.len() <= BOTF_MAX_PAYLOAD {
                self.nic.botf(dest, Layout::botf_slot(me), data)?;
                self.stats.botf_chunks += 1;
                (data.len(), 0u16, F_BOTF)
            } else {
                let room = grant.remaining as usize * cfg.buf_size;
                let chunk = left.min(room);
                let used = chunk.div_ceil(cfg.buf_size) as u16;
                let bank = self.nic.push_from_host(
                    dest,
                    self.nic.layout().recv_buffers(me),
                    &data[sent..sent + chunk],
                )?;
                self.stats.push_chunks += 1;
                (chunk, used, if bank == 1 { F_BANK1 } else { 0 })
            };
            sent += chunk;
            if sent == data.len() {
                fl |= F_LAST;
            }
            let info = Info {
                chunk: chunk as u32,
                total,
            };
            self.nic.aotf_u64(dest, dst_flags + INFO, info.pack())?;
            let done = Done {
                gseq,
                used,
                flags: fl,
                pgid: self.pgid,
            };
            self.nic.aotf_u64(dest, dst_flags + DONE, done.pack())?;
            self.nic.aotf_u8(dest, LLCM_BYTE_FLAGS + me as usize, 1)?;
            if fl & F_LAST != 0 {
                break;
            }
        }
        self.peers[d].sent = seq;
        Ok(())
    }

    fn grant(&mut self, src: u32) -> Result<()> {
        let s = src as usize;
        if self.peers[s].outstanding {
            return Ok(());
        }
        let gseq = self.peers[s].grants_issued.wrapping_add(1);
        let g = Grant {
            gseq,
            remaining: self.nic.layout().config().bufs_per_peer,
            pgid: self.pgid,
        };
        self.nic
            .aotf_u64(src, flags::word(self.nic.node, GRANT), g.pack())?;
        self.peers[s].grants_issued = gseq;
        self.peers[s].outstanding = true;
        Ok(())
    }

    /// Grants `src` our buffers ahead of [`Endpoint::recv`], so its next
    /// send takes the receiver-first path. Idempotent until that message
    /// is received.
    ///
    /// # Errors
    ///
    /// A bad node.
    pub fn prepost(&mut self, src: u32) -> Result<()> {
        self.peer_index(src)?;
        self.grant(src)
    }

    /// DIMM_Recv: receives the next message from `src` into `buf` and
    /// returns its length.
    ///
    /// # Errors
    ///
    /// [`Error::Truncated`] if it was longer than `buf` (it was drained and
    /// its head kept); [`Error::Timeout`] if `src` stops sending;
    /// [`Error::Corrupt`] / [`Error::ForeignPeer`] if its flag words are
    /// invalid (nothing out of range was used).
    pub fn recv(&mut self, src: u32, buf: &mut [u8]) -> Result<usize> {
        let s = self.peer_index(src)?;
        let cfg = *self.nic.layout().config();
        let seq = self.peers[s].received.wrapping_add(1);
        self.announced[s] = None;
        self.grant(src)?;
        let mut limits = ChunkLimits {
            peer: src,
            granted: cfg.bufs_per_peer.min(MAX_USED_BUFS),
            buf_size: cfg.buf_size,
            botf_max: BOTF_MAX_PAYLOAD,
            total: None,
            got: 0,
        };
        loop {
            let gseq = self.peers[s].grants_issued;
            let (done, info) = self.nic.wait.wait(
                || format!("DONE (gseq {gseq}) of message {seq} from node {src}"),
                || {
                    let d = Done::unpack(self.my_word(src, DONE)?);
                    if d.gseq != gseq {
                        return Ok(None);
                    }
                    let i = Info::unpack(self.my_word(src, INFO)?);
                    Ok(Some((d, i)))
                },
            )?;
            limits.check(&done, &info, self.pgid)?;
            self.peers[s].outstanding = false;
            let chunk = info.chunk as usize;
            // The part of the chunk that fits in `buf` (the rest is
            // drained: a truncated message still completes).
            let from = limits.got.min(buf.len());
            let to = (limits.got + chunk).min(buf.len());
            if done.flags & F_BOTF != 0 {
                self.nic
                    .llcm_read(Layout::botf_slot(src), &mut buf[from..to])?;
            } else {
                let mut tries = 0;
                while self.nic.host_bank()? != done.bank() {
                    tries += 1;
                    if tries > 2 {
                        return Err(corrupt(src, "DONE bank", done.bank().into()));
                    }
                    self.nic.switch_banks()?;
                    self.stats.bank_switches += 1;
                }
                self.nic
                    .dimm_read(self.nic.layout().recv_buffers(src), &mut buf[from..to])?;
            }
            limits.got += chunk;
            limits.total = Some(info.total);
            if done.flags & F_LAST != 0 {
                break;
            }
            self.grant(src)?;
            self.stats.regrants += 1;
        }
        self.peers[s].received = seq;
        // The next message's doorbell may have been taken by a poll that
        // reported this one; remember it here.
        self.announced[s] = self.pending(src)?;
        let len = limits.got;
        if len > buf.len() {
            return Err(Error::Truncated {
                from: src,
                len,
                capacity: buf.len(),
            });
        }
        Ok(len)
    }

    /// Looks for a peer whose next message is waiting (announced or already
    /// sent). Returns the peer and the message length. Never blocks; peers
    /// are served round-robin.
    ///
    /// # Errors
    ///
    /// Shared-memory access failed.
    pub fn poll(&mut self) -> Result<Option<(u32, usize)>> {
        let me = self.nic.node;
        let n = self.nic.nodes() as usize;
        // Collect doorbells: clear the byte flags, then read the words they
        // point at (a flag set after the swap is seen next time).
        for w in (0..n).step_by(8) {
            let word = self.nic.llcm_u64(LLCM_BYTE_FLAGS + w)?;
            if word.load(Ordering::Relaxed) == 0 {
                continue;
            }
            let bells = word.swap(0, Ordering::AcqRel).to_le_bytes();
            for (i, &b) in bells.iter().enumerate() {
                let p = w + i;
                if b == 0 || p >= n || p == me as usize {
                    continue;
                }
                if let Some(len) = self.pending(p as u32)? {
                    self.announced[p] = Some(len);
                }
            }
        }
        for k in 0..n {
            let p = (self.next_poll + k) % n;
            if let Some(len) = self.announced[p] {
                self.next_poll = (p + 1) % n;
                return Ok(Some((p as u32, len)));
            }
        }
        Ok(None)
    }

    /// The length of `p`'s next message, if its data or its announcement
    /// is here.
    fn pending(&self, p: u32) -> Result<Option<usize>> {
        let peer = self.peers[p as usize];
        if peer.outstanding {
            let d = Done::unpack(self.my_word(p, DONE)?);
            if d.gseq == peer.grants_issued {
                return Ok(Some(Info::unpack(self.my_word(p, INFO)?).total as usize));
            }
        }
        let r = Request::unpack(self.my_word(p, REQUEST)?);
        Ok((r.seq == peer.received.wrapping_add(1)).then_some(r.len as usize))
    }

    /// Waits for any peer's next message and receives it; returns the
    /// sender and the length.
    ///
    /// # Errors
    ///
    /// As [`Endpoint::recv`]; [`Error::Timeout`] if nothing arrives.
    pub fn recv_any(&mut self, buf: &mut [u8]) -> Result<(u32, usize)> {
        let policy = self.nic.wait;
        let me = self.nic.node;
        let (src, _) = policy.wait(|| format!("any message for node {me}"), || self.poll())?;
        let len = self.recv(src, buf)?;
        Ok((src, len))
    }
}

impl Grant {
    /// Whether `v` is the grant with sequence `gseq` (not yet checked).
    fn unpack_if(v: u64, gseq: u32) -> bool {
        (v >> 32) as u32 == gseq
    }
}
