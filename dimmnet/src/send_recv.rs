//! DIMM_Send and DIMM_Recv: two-sided messages over the flag areas.
//!
//! Every transfer from S to R happens under a *grant*: R tells S (an AOTF
//! into S's flag area about R) that its receive buffers for S are free,
//! how many there are, and its pgid. S then moves one chunk and reports it
//! with DONE (AOTF into R's flag area about S). The two protocols of the
//! paper differ in who moves first:
//!
//! - **Receiver first.** R calls [`DimmEndpoint::recv`] (or
//!   [`DimmEndpoint::prepost`]) before S sends: the grant is already in S's LLCM
//!   when S calls [`DimmEndpoint::send`], so S announces and sends at once.
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
use crate::gather::Gather;
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
    /// A [`SendOp`] to the peer is under way.
    sending: bool,
    /// A [`RecvOp`] from the peer is under way.
    receiving: bool,
}

/// A DIMM_Send under way: see [`DimmEndpoint::send_start`].
#[derive(Debug)]
pub struct SendOp {
    dest: u32,
    seq: u32,
    len: usize,
    sent: usize,
    done: bool,
}

impl SendOp {
    /// The destination node.
    pub fn dest(&self) -> u32 {
        self.dest
    }

    /// Length of the message.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the message is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes already in the receiver's NIC memory.
    pub fn sent(&self) -> usize {
        self.sent
    }

    /// Whether the whole message is in the receiver's NIC memory.
    pub fn is_done(&self) -> bool {
        self.done
    }
}

/// A DIMM_Recv under way: see [`DimmEndpoint::recv_start`].
#[derive(Debug)]
pub struct RecvOp {
    src: u32,
    seq: u32,
    done: bool,
    limits: ChunkLimits,
}

impl RecvOp {
    /// The source node.
    pub fn src(&self) -> u32 {
        self.src
    }

    /// Bytes of the message taken so far.
    pub fn received(&self) -> usize {
        self.limits.got
    }

    /// Length of the message, known once its first chunk arrived.
    pub fn total(&self) -> Option<usize> {
        self.limits.total.map(|t| t as usize)
    }

    /// Whether the whole message has been taken.
    pub fn is_done(&self) -> bool {
        self.done
    }
}

/// Where [`DimmEndpoint::recv_chunk`] puts a chunk.
enum Dst<'b> {
    /// At its offset in the whole message's buffer (truncating).
    Message(&'b mut [u8]),
    /// Alone, replacing the vector's contents.
    Chunk(&'b mut Vec<u8>),
}

/// One node's DIMM_Send/DIMM_Recv state. One endpoint per node: it owns
/// the node's flag areas, landing slots, receive buffers and staging area.
#[derive(Debug)]
pub struct DimmEndpoint {
    nic: Nic,
    pgid: u16,
    peers: Vec<Peer>,
    /// Peers whose next message is known to be waiting, with its length.
    announced: Vec<Option<usize>>,
    next_poll: usize,
    stats: Stats,
}

impl DimmEndpoint {
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
    /// `dest`'s NIC memory. The same as [`DimmEndpoint::send_start`] followed
    /// by [`DimmEndpoint::send_step`] until it reports completion, waiting
    /// with the NIC's [`crate::WaitPolicy`] in between.
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`] if `dest` does not grant in time,
    /// [`Error::Corrupt`] / [`Error::ForeignPeer`] if its grant is invalid,
    /// [`Error::BadArgument`] for a message over 4 GiB or to ourselves.
    pub fn send(&mut self, dest: u32, data: &[u8]) -> Result<()> {
        let mut op = self.send_start(dest, data.len())?;
        let policy = self.nic.wait;
        let (seq, parts) = (op.seq, [data]);
        policy.wait(
            || format!("a grant from node {dest} for message {seq}"),
            || Ok(self.send_step(&mut op, &parts)?.then_some(())),
        )
    }

    /// Starts a DIMM_Send of a `len`-byte message to `dest`: announces it
    /// (REQUEST and the byte flag) and returns the operation, which
    /// [`DimmEndpoint::send_step`] moves on. Never waits. One send per
    /// destination may be under way at a time; messages to `dest` are
    /// received in the order they were started.
    ///
    /// # Errors
    ///
    /// [`Error::BadArgument`] for a message over 4 GiB, to ourselves, or
    /// while another send to `dest` is under way.
    pub fn send_start(&mut self, dest: u32, len: usize) -> Result<SendOp> {
        let d = self.peer_index(dest)?;
        let me = self.nic.node;
        let total = u32::try_from(len)
            .map_err(|_| Error::BadArgument(format!("message of {len} bytes")))?;
        if self.peers[d].sending {
            return Err(Error::BadArgument(format!(
                "a send to node {dest} is already under way"
            )));
        }
        let seq = self.peers[d].sent.wrapping_add(1);
        let want = self.peers[d].grants_used.wrapping_add(1);
        if Grant::unpack_if(self.my_word(dest, GRANT)?, want) {
            self.stats.sends_receiver_first += 1;
        } else {
            self.stats.sends_sender_first += 1;
        }
        // Announce (both orders: the receiver's poll reads the length here).
        self.nic.aotf_u64(
            dest,
            flags::word(me, REQUEST),
            Request { seq, len: total }.pack(),
        )?;
        self.nic.aotf_u8(dest, LLCM_BYTE_FLAGS + me as usize, 1)?;
        self.peers[d].sending = true;
        Ok(SendOp {
            dest,
            seq,
            len,
            sent: 0,
            done: false,
        })
    }

    /// Moves `op` on without waiting: sends one chunk for every grant of
    /// the receiver that is there. `parts` is the message, the
    /// concatenation of the slices (so a header and a payload that live
    /// apart go as one message); pass the same bytes on every call.
    /// Returns whether the message is complete, i.e. sits in the
    /// receiver's NIC memory.
    ///
    /// # Errors
    ///
    /// [`Error::BadArgument`] if `parts` is not `op`'s length;
    /// [`Error::Corrupt`] / [`Error::ForeignPeer`] for an invalid grant;
    /// [`Error::Timeout`] if the receiver's bank switch never ends. After
    /// an error the destination must be treated as dead.
    pub fn send_step(&mut self, op: &mut SendOp, parts: &[&[u8]]) -> Result<bool> {
        let data = Gather::new(parts);
        if data.len() != op.len {
            return Err(Error::BadArgument(format!(
                "message of {} bytes for a send of {}",
                data.len(),
                op.len
            )));
        }
        let (dest, me) = (op.dest, self.nic.node);
        let d = dest as usize;
        let cfg = *self.nic.layout().config();
        let dst_flags = flags::word(me, 0);
        while !op.done {
            let gseq = self.peers[d].grants_used.wrapping_add(1);
            let v = self.my_word(dest, GRANT)?;
            if (v >> 32) as u32 != gseq {
                return Ok(false);
            }
            let grant = Grant::unpack(v, dest, cfg.bufs_per_peer, self.pgid)?;
            self.nic.observed(flags::word(dest, GRANT), 8)?;
            self.peers[d].grants_used = gseq;
            let left = op.len - op.sent;
            let (chunk, used, mut fl) = if op.len <= BOTF_MAX_PAYLOAD {
                let mut packet = [0u8; BOTF_MAX_PAYLOAD];
                data.copy_to(0, &mut packet[..op.len])?;
                self.nic
                    .botf(dest, Layout::botf_slot(me), &packet[..op.len])?;
                self.stats.botf_chunks += 1;
                (op.len, 0u16, F_BOTF)
            } else {
                let room = grant.remaining as usize * cfg.buf_size;
                let chunk = left.min(room);
                let used = chunk.div_ceil(cfg.buf_size) as u16;
                let bank = self.nic.push_from_host(
                    dest,
                    self.nic.layout().recv_buffers(me),
                    data,
                    op.sent,
                    chunk,
                )?;
                self.stats.push_chunks += 1;
                (chunk, used, if bank == 1 { F_BANK1 } else { 0 })
            };
            op.sent += chunk;
            if op.sent == op.len {
                fl |= F_LAST;
            }
            let info = Info {
                chunk: chunk as u32,
                total: op.len as u32,
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
                op.done = true;
                self.peers[d].sent = op.seq;
                self.peers[d].sending = false;
            }
        }
        Ok(true)
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

    /// Grants `src` our buffers ahead of [`DimmEndpoint::recv`], so its next
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
    /// returns its length. The same as [`DimmEndpoint::recv_start`] and
    /// [`DimmEndpoint::recv_step`] until the message is complete, waiting with
    /// the NIC's [`crate::WaitPolicy`] in between, except that the chunks
    /// go straight into `buf`.
    ///
    /// # Errors
    ///
    /// [`Error::Truncated`] if it was longer than `buf` (it was drained and
    /// its head kept); [`Error::Timeout`] if `src` stops sending;
    /// [`Error::Corrupt`] / [`Error::ForeignPeer`] if its flag words are
    /// invalid (nothing out of range was used).
    pub fn recv(&mut self, src: u32, buf: &mut [u8]) -> Result<usize> {
        let mut op = self.recv_start(src)?;
        let policy = self.nic.wait;
        while !op.done {
            let (seq, gseq) = (op.seq, self.peers[src as usize].grants_issued);
            policy.wait(
                || format!("DONE (gseq {gseq}) of message {seq} from node {src}"),
                || Ok(self.recv_chunk(&mut op, Dst::Message(buf))?.then_some(())),
            )?;
        }
        let len = op.limits.got;
        if len > buf.len() {
            return Err(Error::Truncated {
                from: src,
                len,
                capacity: buf.len(),
            });
        }
        Ok(len)
    }

    /// Starts receiving the next message from `src`: grants it our buffers
    /// (unless [`DimmEndpoint::prepost`] already did) and returns the
    /// operation, which [`DimmEndpoint::recv_step`] moves on. Never waits. One
    /// receive per source may be under way at a time.
    ///
    /// Starting the receive before the sender arrives is the receiver-first
    /// protocol: a transport that always keeps one started per peer makes
    /// every send take it.
    ///
    /// # Errors
    ///
    /// A bad node, or a receive from `src` already under way.
    pub fn recv_start(&mut self, src: u32) -> Result<RecvOp> {
        let s = self.peer_index(src)?;
        if self.peers[s].receiving {
            return Err(Error::BadArgument(format!(
                "a receive from node {src} is already under way"
            )));
        }
        let cfg = *self.nic.layout().config();
        let seq = self.peers[s].received.wrapping_add(1);
        self.announced[s] = None;
        self.grant(src)?;
        self.peers[s].receiving = true;
        Ok(RecvOp {
            src,
            seq,
            done: false,
            limits: ChunkLimits {
                peer: src,
                granted: cfg.bufs_per_peer.min(MAX_USED_BUFS),
                buf_size: cfg.buf_size,
                botf_max: BOTF_MAX_PAYLOAD,
                total: None,
                got: 0,
            },
        })
    }

    /// Moves `op` on without waiting: if the next chunk of the message has
    /// arrived, replaces the contents of `chunk` with it, grants the sender
    /// the next one unless it was the last, and returns `true`; `false`
    /// if nothing new is there. [`RecvOp::is_done`] tells when the whole
    /// message has been taken.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupt`] / [`Error::ForeignPeer`] if the sender's flag
    /// words are invalid (nothing out of range was used);
    /// [`Error::Timeout`] if a bank switch never ends. After an error the
    /// source must be treated as dead.
    pub fn recv_step(&mut self, op: &mut RecvOp, chunk: &mut Vec<u8>) -> Result<bool> {
        self.recv_chunk(op, Dst::Chunk(chunk))
    }

    /// Takes the next chunk of `op` if its DONE is there.
    fn recv_chunk(&mut self, op: &mut RecvOp, dst: Dst<'_>) -> Result<bool> {
        if op.done {
            return Ok(false);
        }
        let src = op.src;
        let s = src as usize;
        // The active receive reads the words itself; a poll that noticed
        // the doorbell meanwhile must not report the message again.
        self.announced[s] = None;
        let gseq = self.peers[s].grants_issued;
        let done = Done::unpack(self.my_word(src, DONE)?);
        if done.gseq != gseq {
            return Ok(false);
        }
        let info = Info::unpack(self.my_word(src, INFO)?);
        op.limits.check(&done, &info, self.pgid)?;
        // DONE and INFO are adjacent: one catch-up, two loads.
        self.nic.observed(flags::word(src, DONE), 16)?;
        self.peers[s].outstanding = false;
        let size = info.chunk as usize;
        let got = op.limits.got;
        let out: &mut [u8] = match dst {
            // The part of the chunk that fits in `buf` (the rest is
            // drained: a truncated message still completes).
            Dst::Message(buf) => {
                let from = got.min(buf.len());
                let to = (got + size).min(buf.len());
                &mut buf[from..to]
            }
            Dst::Chunk(v) => {
                // Only grow when needed: zero-filling every chunk again
                // would cost as much as reading it.
                if v.len() < size {
                    v.resize(size, 0);
                }
                v.truncate(size);
                &mut v[..]
            }
        };
        if done.flags & F_BOTF != 0 {
            self.nic.llcm_read(Layout::botf_slot(src), out)?;
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
                .dimm_read(self.nic.layout().recv_buffers(src), out)?;
        }
        op.limits.got += size;
        op.limits.total = Some(info.total);
        if done.flags & F_LAST != 0 {
            op.done = true;
            self.peers[s].received = op.seq;
            self.peers[s].receiving = false;
            // The next message's doorbell may have been taken by a poll
            // that reported this one; remember it here.
            self.announced[s] = self.pending(src)?;
        } else {
            self.grant(src)?;
            self.stats.regrants += 1;
        }
        Ok(true)
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
    /// As [`DimmEndpoint::recv`]; [`Error::Timeout`] if nothing arrives.
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
