//! `dimmnet`: MPI over the emulated DIMMnet-1 NIC (crate `o2g-dimmnet`),
//! in shared memory between processes of one host or between QEMU guests
//! that share one ivshmem region.
//!
//! Every rank is one node of one region, which rank 0 makes and the others
//! join through PMI (`setup.rs`). Between two ranks the NIC carries a byte
//! stream of DIMM_Sends on which an MPI message is the o2g-core wire header
//! then the payload, received through o2g-core's reassembler into the
//! shared [`Matcher`] (`stream.rs`). The NIC's operations never wait:
//! `progress` and a blocking send move every peer's sends and receives on
//! in rounds, so a rank that waits to send keeps receiving (`peer.rs`),
//! and poll and back off while nothing moves (`wait.rs`). Peers that stop beating
//! or leave are declared dead and fail what depends on them
//! (`dead_peers.rs`). MPI_Barrier over the whole world is the card's
//! Fagus AOTF barrier.
//!
//! Messages to oneself go straight into the matcher (the crate refuses
//! self-sends), also with `O2G_SELF=0`.

mod dead_peers;
mod peer;
mod setup;
mod stream;
mod wait;

use std::time::{Duration, Instant};

use o2g_core::proto::envelope::Envelope;
use o2g_core::proto::wire::{Kind, Limits};
use o2g_dimmnet::layout::MAX_NODES;
use o2g_dimmnet::{Barrier, DimmEndpoint, Heartbeat, PeerWatch};

use super::matcher::Matcher;
use super::model_time::{InTransport, ModelClock};
use super::outbox::Sends;
use super::spin;
use super::{ReceivesThroughMatcher, SendHalf, SendToken, Transport};
use crate::config::{Config, DimmnetRegion};
use crate::error::{Error, Result};
use crate::pmi::Pmi;
use peer::Peer;
use stream::{advance, Out, DIMM_MSG_MAX};

/// The NIC side; absent in a world of one.
struct Net {
    ep: DimmEndpoint,
    /// The Fagus AOTF barrier, for `MPI_Barrier` over the whole world.
    barrier: Barrier,
    watch: PeerWatch,
    _heartbeat: Heartbeat,
}

/// The `dimmnet` transport; see the module documentation.
pub(crate) struct Dimmnet {
    me: u32,
    net: Option<Net>,
    peers: Vec<Peer>,
    matcher: Matcher,
    sends: Sends,
    /// Scratch for one received chunk.
    chunk: Vec<u8>,
    max_message: u64,
    dimm_msg_max: u64,
    rounds: u32,
    /// Spin rounds of a wait: [`wait::SPINS`], or 0 when this host runs
    /// more ranks than it has CPUs (then a spinning rank only delays the
    /// peer it waits for).
    spins: u32,
    /// `O2G_MODEL_TIME=1`: `MPI_Wtime` is the model's clock, and every
    /// entry charges the computation before it.
    model: Option<ModelClock>,
}

fn nic_err(e: o2g_dimmnet::Error) -> Error {
    Error::TransportUnavailable {
        name: "dimmnet".into(),
        reason: e.to_string(),
    }
}

impl Dimmnet {
    /// Sets up or joins the region (see `setup.rs`) and starts receiving
    /// from every peer.
    pub(crate) fn open(config: &Config, pmi: &mut Pmi) -> Result<Self> {
        let (me, size) = (pmi.rank(), pmi.size());
        if size > MAX_NODES {
            return Err(Error::Config(format!(
                "O2G_TRANSPORT=dimmnet serves at most {MAX_NODES} processes (one NIC node each), this world has {size}"
            )));
        }
        if size == 1 {
            if config.model_time {
                return Err(Error::Config(
                    "O2G_MODEL_TIME=1 needs a DIMMnet node, and a world of one has none".into(),
                ));
            }
            return Self::new(me, size, None, config);
        }
        let (region, pgid, joined) = setup::join(config, pmi, size)?;
        let net = setup::attach(region, me, pgid, config)?;
        let mut t = Self::new(me, size, Some(net), config)?;
        if config.model_time {
            if let Some(net) = &t.net {
                t.model = Some(ModelClock::install(net.ep.nic().clone()));
            }
        }
        if config.dimmnet.region == DimmnetRegion::Shm && !spin::may_spin(size as usize) {
            t.spins = 0;
        }
        // Everyone attached (and granted its peers): the name can go.
        joined.everyone_attached(pmi)?;
        Ok(t)
    }

    /// The transport of rank `me` of `size` over `net`; preposts a
    /// receive from every peer.
    fn new(me: u32, size: u32, net: Option<Net>, config: &Config) -> Result<Self> {
        let limits = Limits {
            max_payload: config.max_message,
        };
        let mut t = Self {
            me,
            net,
            peers: (0..size).map(|_| Peer::new(limits)).collect(),
            matcher: Matcher::new(),
            sends: Sends::new(),
            chunk: Vec::new(),
            max_message: config.max_message,
            dimm_msg_max: DIMM_MSG_MAX,
            rounds: 0,
            spins: wait::SPINS,
            model: None,
        };
        if let Some(net) = t.net.as_mut() {
            for p in (0..size).filter(|&p| p != me) {
                let op = net.ep.recv_start(p).map_err(nic_err)?;
                t.peers[p as usize].rx_op = Some(op);
            }
        }
        Ok(t)
    }

    /// Fails unless `dest` is a live peer (or this rank).
    fn check_dest(&self, dest: u32) -> Result<()> {
        match self.peers.get(dest as usize) {
            None => Err(Error::InvalidRank {
                rank: dest as i32,
                size: self.peers.len() as i32,
            }),
            Some(Peer {
                dead: Some(reason), ..
            }) => Err(Error::PeerGone {
                rank: dest,
                reason: reason.clone(),
            }),
            Some(_) => Ok(()),
        }
    }

    fn check_len(&self, len: usize) -> Result<()> {
        if len as u64 > self.max_message {
            return Err(Error::InvalidArgument(format!(
                "a message of {len} bytes exceeds O2G_MAX_MESSAGE={}",
                self.max_message
            )));
        }
        Ok(())
    }

    /// Marks an entry into the transport for the model clock, if any.
    fn enter(&self) -> Option<InTransport> {
        self.model.as_ref().map(ModelClock::enter)
    }
}

impl Transport for Dimmnet {
    fn progress(&mut self, timeout: Option<Duration>) -> Result<()> {
        let _in = self.enter();
        if self.live_peers() == 0 {
            self.drain_overflow();
            return match timeout {
                None => Err(Error::Deadlock(
                    "waiting for a message, but no live peer is left that could send it".into(),
                )),
                Some(_) => Ok(()),
            };
        }
        if timeout == Some(Duration::ZERO) {
            self.pump();
            self.busy_round();
            return Ok(());
        }
        let mut backoff = self.backoff();
        let mut deadline = None;
        loop {
            if self.wait_step(&mut backoff, deadline) {
                return Ok(());
            }
            if let (Some(t), true) = (timeout, backoff.idle()) {
                // The clock is read only once spinning found nothing.
                let d = *deadline.get_or_insert_with(|| Instant::now() + t);
                if Instant::now() >= d {
                    return Ok(());
                }
            }
        }
    }

    fn peer_failure(&self, rank: u32) -> Option<String> {
        self.peers.get(rank as usize).and_then(|p| p.dead.clone())
    }

    fn enter_world_barrier(&mut self) -> Result<bool> {
        let _in = self.enter();
        let Some(net) = &mut self.net else {
            return Ok(false);
        };
        net.barrier.enter().map_err(nic_err)?;
        Ok(true)
    }

    fn test_world_barrier(&mut self) -> Result<bool> {
        let _in = self.enter();
        match &mut self.net {
            Some(net) => net.barrier.test().map_err(nic_err),
            None => Ok(true),
        }
    }
}

impl SendHalf for Dimmnet {
    fn send(&mut self, dest: u32, env: Envelope, data: &[u8]) -> Result<()> {
        let _in = self.enter();
        self.check_dest(dest)?;
        self.check_len(data.len())?;
        if dest == self.me {
            return self.matcher.deliver_local(env, data);
        }
        // Earlier isends to `dest` leave first.
        while !self.peers[dest as usize].out.is_empty() {
            self.progress(None)?;
            self.check_dest(dest)?;
        }
        let head = self.peers[dest as usize]
            .tx
            .encode(Kind::Eager, env, data.len() as u64);
        let (mut op, mut pos) = (None, 0);
        let max = self.dimm_msg_max;
        let mut backoff = self.backoff();
        loop {
            let Some(net) = self.net.as_mut() else {
                unreachable!("a world of one has no peer {dest}");
            };
            match advance(&mut net.ep, dest, max, &mut op, &mut pos, &head, data) {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(e) => self.kill(dest, format!("DIMMnet: {e}")),
            }
            self.check_dest(dest)?;
            self.wait_step(&mut backoff, None);
        }
    }

    fn isend(&mut self, dest: u32, env: Envelope, data: &[u8]) -> Result<SendToken> {
        let _in = self.enter();
        if dest == self.me {
            self.send(dest, env, data)?;
            return Ok(SendToken(0));
        }
        self.check_dest(dest)?;
        self.check_len(data.len())?;
        let head = self.peers[dest as usize]
            .tx
            .encode(Kind::Eager, env, data.len() as u64);
        let (mut op, mut pos) = (None, 0);
        if self.peers[dest as usize].out.is_empty() {
            let Some(net) = self.net.as_mut() else {
                unreachable!("a world of one has no peer {dest}");
            };
            let max = self.dimm_msg_max;
            match advance(&mut net.ep, dest, max, &mut op, &mut pos, &head, data) {
                Ok(true) => return Ok(SendToken(0)),
                Ok(false) => {}
                Err(e) => {
                    self.kill(dest, format!("DIMMnet: {e}"));
                    return self.check_dest(dest).map(|()| SendToken(0));
                }
            }
        }
        let token = self.sends.start();
        self.peers[dest as usize].out.push_back(Out {
            token,
            head,
            body: data.to_vec(),
            pos,
            op,
        });
        Ok(SendToken(token))
    }

    fn sends(&mut self) -> &mut Sends {
        &mut self.sends
    }

    fn has_queued_sends(&self) -> bool {
        self.peers
            .iter()
            .any(|p| p.dead.is_none() && !p.out.is_empty())
    }
}

impl ReceivesThroughMatcher for Dimmnet {
    fn matcher(&mut self) -> &mut Matcher {
        &mut self.matcher
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use o2g_dimmnet::Nic;
    use o2g_nicmem::Region;

    use super::*;
    use crate::transport::emulated_region::{fresh_job_id, fresh_shm_name};
    use crate::transport::matcher::RecvOutcome;
    use crate::transport::ReceiveHalf;
    use o2g_core::proto::envelope::{Selector, SourceSel, TagSel};

    fn config() -> Config {
        let mut c = Config::from_env().unwrap();
        c.max_message = 4 << 30;
        c.dimmnet.peer_timeout = Duration::from_secs(30);
        c
    }

    /// `n` transports over one fresh region, as ranks of one job (built
    /// in the thread that uses them).
    fn world(n: u32) -> (String, u16) {
        let name = format!("{}-unit", fresh_shm_name(setup::SHM_PREFIX));
        let pgid = fresh_job_id();
        let cfg = setup::fit_config(n, None).unwrap();
        drop(Nic::create_shm(&name, cfg).unwrap());
        (name, pgid)
    }

    fn rank(name: &str, pgid: u16, me: u32, n: u32, small_dimm: bool) -> Dimmnet {
        let region = Arc::new(Region::open_shm(name).unwrap());
        let net = setup::attach(region, me, pgid, &config()).unwrap();
        let mut t = Dimmnet::new(me, n, Some(net), &config()).unwrap();
        if small_dimm {
            // Exercise messages that span several DIMM_Sends.
            t.dimm_msg_max = 1000;
        }
        t
    }

    fn env(source: u32, tag: u32) -> Envelope {
        Envelope {
            source,
            tag,
            context: 0,
        }
    }

    fn pattern(seed: u32, len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| (i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed) as u8)
            .collect()
    }

    fn recv(t: &mut Dimmnet, source: SourceSel, tag: u32, cap: usize) -> (Envelope, Vec<u8>) {
        let sel = Selector {
            source,
            tag: TagSel::Tag(tag),
            context: 0,
        };
        let tok = t.post_recv(sel, cap).unwrap();
        loop {
            match t.test_recv(tok) {
                Some(RecvOutcome::Done { envelope, data, .. }) => return (envelope, data),
                Some(other) => panic!("{other:?}"),
                None => t.progress(None).unwrap(),
            }
        }
    }

    /// Both ranks send each other large messages with blocking sends
    /// before either receives, then isends that are only received after
    /// their senders finished: neither side may get stuck.
    #[test]
    fn flooding_each_other_does_not_deadlock() {
        for small_dimm in [false, true] {
            let (name, pgid) = world(2);
            let sizes = [0usize, 1, 464, 465, 70_000, 1 << 20];
            let threads: Vec<_> = (0..2u32)
                .map(|me| {
                    let name = name.clone();
                    std::thread::spawn(move || {
                        let mut t = rank(&name, pgid, me, 2, small_dimm);
                        let peer = 1 - me;
                        for (k, &len) in sizes.iter().enumerate() {
                            t.send(peer, env(me, k as u32), &pattern(me + k as u32, len))
                                .unwrap();
                        }
                        let mut tokens = Vec::new();
                        for k in 0..8u32 {
                            let data = pattern(me * 100 + k, 400_000);
                            tokens.push(t.isend(peer, env(me, 100 + k), &data).unwrap());
                        }
                        // Receive in reverse tag order: all but the last
                        // arrive unexpected.
                        for (k, &len) in sizes.iter().enumerate().rev() {
                            let (e, data) = recv(&mut t, SourceSel::Rank(peer), k as u32, len);
                            assert_eq!(e.source, peer);
                            assert_eq!(data, pattern(peer + k as u32, len));
                        }
                        for k in (0..8u32).rev() {
                            let (_, data) = recv(&mut t, SourceSel::Any, 100 + k, 400_000);
                            assert_eq!(data, pattern(peer * 100 + k, 400_000));
                        }
                        for tok in tokens {
                            while !t.test_send(tok).unwrap() {
                                t.progress(Some(Duration::from_millis(1))).unwrap();
                            }
                        }
                        t.flush(Duration::from_secs(30)).unwrap();
                        t
                    })
                })
                .collect();
            let ts: Vec<Dimmnet> = threads.into_iter().map(|h| h.join().unwrap()).collect();
            drop(ts);
            Region::unlink_shm(&name).unwrap();
        }
    }

    #[test]
    fn a_peer_that_leaves_fails_receives_and_sends() {
        let (name, pgid) = world(3);
        let mut a = rank(&name, pgid, 0, 3, false);
        let mut b = rank(&name, pgid, 1, 3, false);
        let c = rank(&name, pgid, 2, 3, false);
        Region::unlink_shm(&name).unwrap();
        // What b sent before it left is still received.
        b.send(0, env(1, 7), b"last words").unwrap();
        drop(b);
        let sel = Selector {
            source: SourceSel::Rank(1),
            tag: TagSel::Tag(8),
            context: 0,
        };
        let tok = a.post_recv(sel, 8).unwrap();
        while a.peer_failure(1).is_none() {
            a.progress(Some(Duration::from_millis(10))).unwrap();
        }
        assert!(a.peer_failure(1).unwrap().contains("left"));
        assert!(a.test_recv(tok).is_none());
        let (_, data) = recv(&mut a, SourceSel::Rank(1), 7, 64);
        assert_eq!(data, b"last words");
        assert!(matches!(
            a.send(1, env(0, 0), b"x"),
            Err(Error::PeerGone { rank: 1, .. })
        ));
        assert!(a.peer_failure(2).is_none());
        // Self messages go through the matcher.
        a.send(0, env(0, 3), b"me").unwrap();
        assert_eq!(recv(&mut a, SourceSel::Rank(0), 3, 8).1, b"me");
        drop(c);
    }
}
