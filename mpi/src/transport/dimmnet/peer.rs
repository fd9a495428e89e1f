//! Each peer's state, and moving its traffic on without waiting.
//!
//! The crate's resumable operations ([`DimmEndpoint::send_start`] /
//! [`DimmEndpoint::send_step`], [`DimmEndpoint::recv_start`] /
//! [`DimmEndpoint::recv_step`]) never wait. This transport keeps one receive
//! started ("preposted") from every live peer at all times, so a peer's
//! send always finds a grant (the receiver-first protocol) and its first
//! chunk goes at once. A send (blocking or queued by `isend`) that needs
//! more grants simply stays pending; every progress round ([`Dimmnet::pump`])
//! steps all pending sends and all receives, so a rank that waits to send
//! keeps receiving, copying what arrives into the matcher (the unexpected
//! store when nothing matches), which is what lets the peer grant again.
//! Two ranks flooding each other therefore cannot deadlock. `isend` sends
//! what the grants allow at once and copies the message only if it could
//! not finish.
//!
//! [`DimmEndpoint::send_start`]: o2g_dimmnet::DimmEndpoint::send_start
//! [`DimmEndpoint::send_step`]: o2g_dimmnet::DimmEndpoint::send_step
//! [`DimmEndpoint::recv_start`]: o2g_dimmnet::DimmEndpoint::recv_start
//! [`DimmEndpoint::recv_step`]: o2g_dimmnet::DimmEndpoint::recv_step

use std::collections::VecDeque;

use o2g_core::proto::envelope::Envelope;
use o2g_core::proto::stream::Reassembler;
use o2g_core::proto::wire::{Encoder, Limits};
use o2g_dimmnet::RecvOp;

use super::stream::{advance, feed, Out, Target};
use super::Dimmnet;

/// Most chunks taken from one peer per progress round (fairness).
const RX_BURST: usize = 16;

/// Everything about one peer.
pub(super) struct Peer {
    pub(super) tx: Encoder,
    pub(super) out: VecDeque<Out>,
    /// The receive kept started from this peer.
    pub(super) rx_op: Option<RecvOp>,
    pub(super) rx: Reassembler,
    pub(super) target: Option<Target>,
    /// Messages the matcher had no room for, in order (envelope, payload,
    /// complete).
    pub(super) overflow: VecDeque<(Envelope, Vec<u8>, bool)>,
    pub(super) dead: Option<String>,
}

impl Peer {
    /// A peer with nothing sent or received yet, whose messages may be
    /// as long as `limits` allow.
    pub(super) fn new(limits: Limits) -> Self {
        Self {
            tx: Encoder::new(),
            out: VecDeque::new(),
            rx_op: None,
            rx: Reassembler::new(limits),
            target: None,
            overflow: VecDeque::new(),
            dead: None,
        }
    }
}

impl Dimmnet {
    /// Marks `rank` dead and fails everything that waited on it.
    pub(super) fn kill(&mut self, rank: u32, reason: String) {
        let Some(p) = self.peers.get_mut(rank as usize) else {
            return;
        };
        if p.dead.is_some() || rank == self.me {
            return;
        }
        if let Some(Target::Matcher(sink)) = p.target.take() {
            self.matcher.fail(sink, rank, &reason);
        }
        // A message still arriving into the overflow list never ends.
        if p.overflow.back().is_some_and(|m| !m.2) {
            p.overflow.pop_back();
        }
        for out in p.out.drain(..) {
            self.sends.fail(out.token, &reason);
        }
        p.rx_op = None;
        p.dead = Some(reason);
    }

    /// Takes what peer `p` has delivered, up to [`RX_BURST`] chunks;
    /// whether anything came.
    pub(super) fn receive_from(&mut self, p: u32) -> bool {
        let Some(net) = self.net.as_mut() else {
            return false;
        };
        let peer = &mut self.peers[p as usize];
        let mut worked = false;
        for _ in 0..RX_BURST {
            if peer.dead.is_some() {
                break;
            }
            let op = match peer.rx_op.as_mut() {
                Some(op) => op,
                None => match net.ep.recv_start(p) {
                    Ok(op) => peer.rx_op.insert(op),
                    Err(e) => {
                        self.kill(p, format!("DIMMnet: {e}"));
                        return true;
                    }
                },
            };
            match net.ep.recv_step(op, &mut self.chunk) {
                Ok(false) => break,
                Ok(true) => {
                    worked = true;
                    if op.is_done() {
                        peer.rx_op = None;
                    }
                    if let Err(reason) = feed(peer, &mut self.matcher, p, &self.chunk) {
                        self.kill(p, reason);
                        return true;
                    }
                }
                Err(e) => {
                    self.kill(p, format!("DIMMnet: {e}"));
                    return true;
                }
            }
        }
        worked
    }

    /// Moves the queued sends to `p` on; whether any completed.
    fn send_to(&mut self, p: u32) -> bool {
        let Some(net) = self.net.as_mut() else {
            return false;
        };
        let max = self.dimm_msg_max;
        let mut worked = false;
        loop {
            let peer = &mut self.peers[p as usize];
            let Some(o) = peer.out.front_mut() else {
                return worked;
            };
            match advance(&mut net.ep, p, max, &mut o.op, &mut o.pos, &o.head, &o.body) {
                Ok(false) => return worked,
                Ok(true) => {
                    let token = o.token;
                    peer.out.pop_front();
                    self.sends.finish(token);
                    worked = true;
                }
                Err(e) => {
                    self.kill(p, format!("DIMMnet: {e}"));
                    return true;
                }
            }
        }
    }

    /// Moves overflowed messages into the matcher while it has room.
    pub(super) fn drain_overflow(&mut self) {
        for p in &mut self.peers {
            while let Some((env, data, true)) = p.overflow.front() {
                if self.matcher.deliver(*env, data).is_err() {
                    return;
                }
                p.overflow.pop_front();
            }
        }
    }

    /// One round over every live peer; whether anything moved.
    pub(super) fn pump(&mut self) -> bool {
        let mut worked = false;
        for p in 0..self.peers.len() as u32 {
            if p == self.me || self.peers[p as usize].dead.is_some() {
                continue;
            }
            worked |= self.receive_from(p);
            worked |= self.send_to(p);
        }
        self.drain_overflow();
        worked
    }
}
