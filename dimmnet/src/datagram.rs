//! Fagus's datagrams over DIMMnet: `dimmnet_sendto` and
//! `dimmnet_recvfrom` (Fagus paper §4.1, Fig. 2), the UDP calls Fagus was
//! written for, carried by the card instead.
//!
//! # The protocol, as the paper describes it
//!
//! 1. The sender writes a header (size, the SEND_MSG flag) and the data
//!    into the card's send area and sends it into the receiver's SO-DIMM
//!    (Fig. 2 (1), (2)).
//! 2. It then sends an AOTF notice, BOTF_SEND, into the receiver's LLCM
//!    ((3)). The paper explains why: polling the SO-DIMM itself would need
//!    a bank switch per poll and could switch banks under a landing
//!    packet, so arrival is announced in the LLCM, which the host sees at
//!    all times.
//! 3. The receiver detects the notice — either a detection thread that
//!    spins on it and signals `dimmnet_recvfrom` ((5)-(7)), or
//!    `dimmnet_recvfrom` itself polling ("inline") — switches banks so the
//!    packet faces the host ((8)), reads the header, then the data
//!    ((9), (10)).
//!
//! # What this emulation changes, and why
//!
//! - The data goes by PUSH from the sender's LLCM, not by BOTF: on
//!   DIMMnet-1 (and in this emulation) BOTF lands in the LLCM, and the
//!   paper's receiver needs a bank switch to see the data, so it landed in
//!   the SO-DIMM, which only RDMA reaches here.
//! - The notice carries a sequence number and the physical bank the PUSH
//!   landed in (from its ACK), and nothing is cleared: a receiver switches
//!   only when the data is not facing it already, and an old notice can
//!   never be read as a new one.
//! - Flow control, which the paper does not describe: one datagram per
//!   sender and receiver is in flight; the receiver returns a credit by
//!   AOTF once it has read one, and the sender waits for it before the
//!   next. Nothing is ever overwritten unread.
//!
//! # Where things are
//!
//! LLCM of every node, from the caller's `base` (in the application part
//! of the LLCM, see [`Datagrams::llcm_bytes`]):
//!
//! ```text
//! base + 0      notices, one u64 per source: sequence u32 | bank u32
//! base + 256    credits, one u32 per receiver: the last sequence it read
//! base + 512    the outgoing datagram (header and data), PUSH's source
//! ```
//!
//! SO-DIMM, in either bank: one slot of [`SLOT_BYTES`] per source from
//! [`crate::Layout::dimm_user`]. Header in the slot: length u32 | source
//! u32 | sequence u32 | SEND_MSG u32.
//!
//! Time: every step is a primitive that charges the model (the LLCM
//! writes, the PUSH and its ACK, the AOTFs, the polls, the bank switch,
//! the SO-DIMM reads). The detection thread costs the receiver one
//! hand-off, [`crate::Costs::thread_handoff`].

use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, Sender};
use std::thread::JoinHandle;

use crate::error::{Error, Result};
use crate::layout::{LLCM_SIZE, MAX_NODES};
use crate::nic::Nic;
use crate::rdma::NicAddr;

/// Largest datagram.
pub const MAX_DATAGRAM: usize = 32 * 1024 - HEADER;
/// SO-DIMM bytes one source's slot takes in every receiver's banks.
pub const SLOT_BYTES: usize = HEADER + MAX_DATAGRAM;
/// The ACK word datagram PUSHes count on.
pub const ACK_SLOT: usize = 15;

const HEADER: usize = 16;
const SEND_MSG: u32 = 0x5345_4e44; // "SEND"
const NOTICES: usize = 0;
const CREDITS: usize = 8 * MAX_NODES as usize;
const OUTGOING: usize = CREDITS + 8 * MAX_NODES as usize;

/// One node's end of the datagram service.
#[derive(Debug)]
pub struct Datagrams {
    nic: Nic,
    base: usize,
    /// Per destination: datagrams sent.
    sent: Vec<u32>,
    /// Per source: datagrams read.
    read: Vec<u32>,
    /// The next source inline detection looks at first (round robin, so no
    /// source starves another).
    next: u32,
}

impl Datagrams {
    /// LLCM bytes the service needs at its base.
    pub const fn llcm_bytes() -> usize {
        OUTGOING + SLOT_BYTES
    }

    /// `nic`'s end, with its LLCM words at `base` (8-aligned, the same on
    /// every node). Seeds the headers to every node.
    ///
    /// # Errors
    ///
    /// [`Error::BadArgument`] if the LLCM range or the banks' free part
    /// is too small.
    pub fn new(nic: Nic, base: usize) -> Result<Self> {
        if base % 8 != 0 || base + Self::llcm_bytes() > LLCM_SIZE {
            return Err(Error::BadArgument(format!(
                "datagram area at LLCM {base:#x}: needs {} bytes, 8-aligned",
                Self::llcm_bytes()
            )));
        }
        let n = nic.nodes();
        let l = nic.layout();
        let need = l.dimm_user() + n as usize * SLOT_BYTES;
        if need > l.config().bank_size {
            return Err(Error::BadArgument(format!(
                "datagrams for {n} nodes need banks of {need} bytes, these have {}",
                l.config().bank_size
            )));
        }
        nic.seed_all()?;
        Ok(Self {
            sent: vec![0; n as usize],
            read: vec![0; n as usize],
            next: 0,
            base,
            nic,
        })
    }

    /// The card this end uses.
    pub fn nic(&self) -> &Nic {
        &self.nic
    }

    fn slot(&self, src: u32) -> usize {
        self.nic.layout().dimm_user() + src as usize * SLOT_BYTES
    }

    /// `dimmnet_sendto`: sends `data` to `dest`. Waits for `dest` to have
    /// read this node's previous datagram, then for the PUSH's ACK.
    ///
    /// # Errors
    ///
    /// A datagram over [`MAX_DATAGRAM`] or a bad node
    /// ([`Error::BadArgument`]); [`Error::Timeout`] if `dest` does not read.
    pub fn sendto(&mut self, dest: u32, data: &[u8]) -> Result<()> {
        if data.len() > MAX_DATAGRAM {
            return Err(Error::BadArgument(format!(
                "datagram of {} bytes (at most {MAX_DATAGRAM})",
                data.len()
            )));
        }
        self.nic.check_node(dest)?;
        let me = self.nic.node();
        let seq = self.sent[dest as usize];
        let credit = self.base + CREDITS + 4 * dest as usize;
        let w = self.nic.llcm_u32(credit)?;
        self.nic.wait.wait(
            || format!("node {dest} to read datagram {seq} from node {me}"),
            || Ok((w.load(Ordering::Acquire) == seq).then_some(())),
        )?;
        if seq > 0 {
            self.nic.observed(credit, 4)?;
        }
        let seq = seq.wrapping_add(1);
        let out = self.base + OUTGOING;
        let mut header = [0u8; HEADER];
        for (i, v) in [data.len() as u32, me, seq, SEND_MSG]
            .into_iter()
            .enumerate()
        {
            header[4 * i..4 * i + 4].copy_from_slice(&v.to_le_bytes());
        }
        self.nic.llcm_write(out, &header)?;
        self.nic.llcm_write(out + HEADER, data)?;
        let len = HEADER + data.len();
        let ack = self.nic.push(
            dest,
            NicAddr::Llcm(out),
            NicAddr::Dimm(self.slot(me)),
            len,
            ACK_SLOT,
        )?;
        self.nic.wait_ack(ack)?;
        let bank = ack.dst_bank.unwrap_or(0);
        let notice = u64::from(seq) | u64::from(bank) << 32;
        self.nic
            .aotf_u64(dest, self.base + NOTICES + 8 * me as usize, notice)?;
        self.sent[dest as usize] = seq;
        Ok(())
    }

    /// The notice word of `src`, if it announces a datagram not read yet.
    fn pending(&self, src: u32) -> Result<Option<(u32, u32)>> {
        let v = self
            .nic
            .llcm_u64(self.base + NOTICES + 8 * src as usize)?
            .load(Ordering::Acquire);
        let (seq, bank) = (v as u32, (v >> 32) as u32);
        if seq == self.read[src as usize] {
            return Ok(None);
        }
        if seq != self.read[src as usize].wrapping_add(1) || bank > 1 {
            return Err(Error::Corrupt {
                node: src,
                field: "datagram notice",
                value: v,
            });
        }
        Ok(Some((seq, bank)))
    }

    /// Inline detection, without waiting: the source of a datagram that
    /// has arrived, if any.
    ///
    /// # Errors
    ///
    /// A notice that is not the next one of its source ([`Error::Corrupt`]).
    pub fn poll(&mut self) -> Result<Option<u32>> {
        let n = self.nic.nodes();
        for i in 0..n {
            let src = (self.next + i) % n;
            if self.pending(src)?.is_some() {
                self.next = (src + 1) % n;
                return Ok(Some(src));
            }
        }
        Ok(None)
    }

    /// `dimmnet_recvfrom` with inline detection: waits for a datagram from
    /// any node, copies it into `buf`, returns its source and length.
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`] at the wait policy's deadline, [`Error::Truncated`]
    /// (the datagram is consumed, its first `buf.len()` bytes kept), or a
    /// corrupt notice or header.
    pub fn recvfrom(&mut self, buf: &mut [u8]) -> Result<(u32, usize)> {
        let me = self.nic.node();
        let policy = self.nic.wait;
        let src = policy.wait(|| format!("a datagram for node {me}"), || self.poll())?;
        self.read_from(src, buf)
    }

    /// Reads the datagram `src` has announced (found by [`Datagrams::poll`]
    /// or by a [`Detector`]) into `buf`.
    ///
    /// # Errors
    ///
    /// As [`Datagrams::recvfrom`]; [`Error::BadArgument`] if none is
    /// announced.
    pub fn read_from(&mut self, src: u32, buf: &mut [u8]) -> Result<(u32, usize)> {
        let (seq, bank) = self.announced(src)?;
        self.nic
            .observed(self.base + NOTICES + 8 * src as usize, 8)?;
        self.take(src, seq, bank, buf)
    }

    /// The sequence number and bank of the datagram `src` has announced.
    fn announced(&self, src: u32) -> Result<(u32, u32)> {
        self.nic.check_node(src)?;
        self.pending(src)?
            .ok_or_else(|| Error::BadArgument(format!("no datagram from node {src} is announced")))
    }

    /// Reads the announced datagram `seq` of `src` (in physical bank
    /// `bank`) once its notice has been seen.
    fn take(&mut self, src: u32, seq: u32, bank: u32, buf: &mut [u8]) -> Result<(u32, usize)> {
        if self.nic.host_bank()? != bank {
            self.nic.switch_banks()?;
        }
        let slot = self.slot(src);
        let mut header = [0u8; HEADER];
        self.nic.dimm_read(slot, &mut header)?;
        let word = |i: usize| u32::from_le_bytes(header[4 * i..4 * i + 4].try_into().unwrap());
        let (len, from, hseq, flag) = (word(0) as usize, word(1), word(2), word(3));
        let corrupt = |field, value: u64| Error::Corrupt {
            node: src,
            field,
            value,
        };
        if flag != SEND_MSG || from != src || hseq != seq {
            return Err(corrupt(
                "datagram header",
                u64::from(hseq) << 32 | u64::from(from),
            ));
        }
        if len > MAX_DATAGRAM {
            return Err(corrupt("datagram length", len as u64));
        }
        let kept = len.min(buf.len());
        self.nic.dimm_read(slot + HEADER, &mut buf[..kept])?;
        self.read[src as usize] = seq;
        let me = self.nic.node();
        self.nic
            .aotf_u32(src, self.base + CREDITS + 4 * me as usize, seq)?;
        if kept < len {
            return Err(Error::Truncated {
                from: src,
                len,
                capacity: buf.len(),
            });
        }
        Ok((src, len))
    }
}

/// Fagus's `detect_thread()`: a thread that spins on the notices and hands
/// each new arrival to the receiver, which reads it with
/// [`Detector::recvfrom`].
///
/// The thread polls through an unmodelled handle: on the paper's
/// uniprocessor it shares the CPU with the receiver, and what the model
/// charges is the receiver's view, the notice's arrival plus one
/// hand-off.
#[derive(Debug)]
pub struct Detector {
    arrivals: Receiver<Result<u32>>,
    stop: Sender<()>,
    thread: Option<JoinHandle<()>>,
}

impl Detector {
    /// Starts the detection thread for `d`'s node.
    ///
    /// # Errors
    ///
    /// The thread could not be spawned.
    pub fn start(d: &Datagrams) -> Result<Self> {
        let nic = d.nic.clone().unmodelled();
        let base = d.base;
        let mut seen = d.read.clone();
        let (tx, arrivals) = std::sync::mpsc::channel();
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(format!("dimmnet-detect-{}", nic.node()))
            .spawn(move || {
                let n = nic.nodes();
                loop {
                    if !matches!(
                        stopped.try_recv(),
                        Err(std::sync::mpsc::TryRecvError::Empty)
                    ) {
                        return;
                    }
                    let mut any = false;
                    for src in 0..n {
                        let word = nic.llcm_u64(base + NOTICES + 8 * src as usize);
                        let seq = match word {
                            Ok(w) => w.load(Ordering::Acquire) as u32,
                            Err(e) => {
                                let _ = tx.send(Err(e));
                                return;
                            }
                        };
                        if seq != seen[src as usize] {
                            seen[src as usize] = seq;
                            any = true;
                            if tx.send(Ok(src)).is_err() {
                                return;
                            }
                        }
                    }
                    if !any {
                        std::hint::spin_loop();
                    }
                }
            })
            .map_err(|e| Error::BadArgument(format!("cannot start the detection thread: {e}")))?;
        Ok(Self {
            arrivals,
            stop,
            thread: Some(thread),
        })
    }

    /// `dimmnet_recvfrom` woken by the detection thread: waits (up to the
    /// wait policy's deadline) for its signal, then reads the datagram.
    ///
    /// # Errors
    ///
    /// As [`Datagrams::recvfrom`]; [`Error::Timeout`] if no signal comes.
    pub fn recvfrom(&self, d: &mut Datagrams, buf: &mut [u8]) -> Result<(u32, usize)> {
        let deadline = d.nic.wait.deadline;
        let src = self
            .arrivals
            .recv_timeout(deadline)
            .map_err(|_| Error::Timeout {
                what: format!(
                    "the detection thread of node {} to signal a datagram",
                    d.nic.node()
                ),
                after: deadline,
            })??;
        // The thread saw the notice when it landed; the hand-off follows.
        let (seq, bank) = d.announced(src)?;
        d.nic.observed(d.base + NOTICES + 8 * src as usize, 8)?;
        d.nic.host(|c| c.thread_handoff)?;
        d.take(src, seq, bank, buf)
    }
}

impl Drop for Detector {
    fn drop(&mut self) {
        let _ = self.stop.send(());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::{Config, LLCM_USER};
    use crate::test_util::fabric_with;

    fn pair() -> (Datagrams, Datagrams) {
        let mut config = Config::new(2);
        config.bank_size = 1 << 20;
        let (_r, mut nics) = fabric_with(config);
        let b = Datagrams::new(nics.pop().unwrap(), LLCM_USER).unwrap();
        let a = Datagrams::new(nics.pop().unwrap(), LLCM_USER).unwrap();
        (a, b)
    }

    #[test]
    fn datagrams_arrive_whole_in_order_across_bank_switches() {
        let (mut a, mut b) = pair();
        let mut buf = vec![0u8; MAX_DATAGRAM];
        assert_eq!(b.poll().unwrap(), None);
        for i in 0..5u8 {
            let data: Vec<u8> = (0..10_000).map(|k| (k as u8) ^ i).collect();
            a.sendto(1, &data).unwrap();
            assert_eq!(b.poll().unwrap(), Some(0));
            assert_eq!(b.recvfrom(&mut buf).unwrap(), (0, 10_000));
            assert_eq!(&buf[..10_000], &data[..]);
            assert_eq!(b.poll().unwrap(), None, "read once");
        }
        // Both directions, and the largest datagram.
        let big = vec![7u8; MAX_DATAGRAM];
        b.sendto(0, &big).unwrap();
        assert_eq!(a.recvfrom(&mut buf).unwrap(), (1, MAX_DATAGRAM));
        assert!(buf.iter().all(|&x| x == 7));
    }

    #[test]
    fn a_sender_waits_for_its_credit_and_a_small_buffer_truncates() {
        let (mut a, mut b) = pair();
        a.nic.wait = crate::WaitPolicy::with_deadline(std::time::Duration::from_millis(50));
        a.sendto(1, b"one").unwrap();
        let e = a.sendto(1, b"two").unwrap_err();
        assert!(e.is_timeout(), "{e}");
        let mut small = [0u8; 2];
        match b.recvfrom(&mut small) {
            Err(Error::Truncated {
                from: 0,
                len: 3,
                capacity: 2,
            }) => {}
            other => panic!("{other:?}"),
        }
        assert_eq!(&small, b"on");
        a.sendto(1, b"two").unwrap();
        let mut buf = [0u8; 8];
        assert_eq!(b.recvfrom(&mut buf).unwrap(), (0, 3));
        assert_eq!(&buf[..3], b"two");
        assert!(a.sendto(1, &vec![0; MAX_DATAGRAM + 1]).is_err());
        assert!(b.read_from(0, &mut buf).is_err(), "nothing announced");
    }

    #[test]
    fn a_forged_notice_or_header_is_refused() {
        let (a, mut b) = pair();
        // A notice that skips a sequence number.
        a.nic.aotf_u64(1, LLCM_USER + NOTICES, 2).unwrap();
        assert!(matches!(b.poll(), Err(Error::Corrupt { node: 0, .. })));
        // A well-formed notice over a slot that holds no datagram.
        a.nic.aotf_u64(1, LLCM_USER + NOTICES, 1).unwrap();
        let mut buf = [0u8; 8];
        assert!(matches!(
            b.read_from(0, &mut buf),
            Err(Error::Corrupt { node: 0, .. })
        ));
    }

    #[test]
    fn the_detection_thread_hands_arrivals_over() {
        let (mut a, mut b) = pair();
        let d = Detector::start(&b).unwrap();
        let mut buf = [0u8; 16];
        for i in 0..20u8 {
            a.sendto(1, &[i; 9]).unwrap();
            assert_eq!(d.recvfrom(&mut b, &mut buf).unwrap(), (0, 9));
            assert_eq!(&buf[..9], &[i; 9]);
        }
    }
}
