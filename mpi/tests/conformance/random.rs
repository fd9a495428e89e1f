//! A randomized send/receive schedule checked against a model of MPI
//! matching.
//!
//! Every rank derives the same global schedule from one seed: messages
//! (source, destination, tag, length). Each rank starts all its sends at
//! once, then receives its messages with randomly chosen selectors: exact,
//! any-tag, any-source or both, always for some message the model says is
//! still pending, so the receive can never hang; some receives are posted
//! after a short random delay. Each payload names its
//! message, and the model checks that the message received is one the
//! selector allows and that no earlier matching message from the same
//! sender was skipped (non-overtaking, §3.5).

use mpi::{ANY_SOURCE, ANY_TAG};
use rand_core::{Rng as _, SeedableRng};
use rand_xorshift::XorShiftRng;

use crate::{ensure, Check};

/// The schedule's random choices, from a seeded xorshift generator
/// (`rand_xorshift`): one seed gives the same sequence on every rank.
struct Rng(XorShiftRng);

impl Rng {
    fn new(seed: u64) -> Self {
        Self(XorShiftRng::seed_from_u64(seed))
    }

    /// In `0..n` (`n > 0`).
    fn below(&mut self, n: u64) -> u64 {
        self.0.next_u64() % n
    }
}

#[derive(Clone, Copy, Debug)]
struct Msg {
    id: usize,
    src: i32,
    dst: i32,
    tag: i32,
    len: usize,
}

/// The payload of message `m`: its id, then filler derived from it.
fn payload(m: &Msg) -> Vec<u64> {
    (0..m.len.max(1))
        .map(|k| {
            if k == 0 {
                m.id as u64
            } else {
                (m.id as u64) << 20 | k as u64
            }
        })
        .collect()
}

pub(crate) fn run() -> Check {
    let universe = mpi::initialize()?;
    let world = universe.world();
    let (rank, size) = (world.rank(), world.size());
    let seed: u64 = std::env::var("O2G_CONF_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_0002);
    if rank == 0 {
        println!("random schedule seed {seed} (O2G_CONF_SEED)");
    }
    let mut rng = Rng::new(seed);
    let msgs: Vec<Msg> = (0..400)
        .map(|id| Msg {
            id,
            src: rng.below(size as u64) as i32,
            dst: rng.below(size as u64) as i32,
            tag: rng.below(4) as i32,
            // Mostly small, sometimes larger than a socket buffer and
            // than the rendezvous threshold.
            len: match rng.below(20) {
                0 => 40_000 + rng.below(40_000) as usize,
                _ => 1 + rng.below(64) as usize,
            },
        })
        .collect();

    let bufs: Vec<(Msg, Vec<u64>)> = msgs
        .iter()
        .filter(|m| m.src == rank)
        .map(|m| (*m, payload(m)))
        .collect();
    let sends = bufs
        .iter()
        .map(|(m, data)| world.isend(data, m.dst, m.tag))
        .collect::<Result<Vec<_>, _>>()?;

    // Pending messages to this rank, in sending order (ids grow with it).
    let mut pending: Vec<Msg> = msgs.iter().filter(|m| m.dst == rank).copied().collect();
    let mut rng = Rng::new(seed ^ (rank as u64 + 1).wrapping_mul(0x9e37_79b9));
    while !pending.is_empty() {
        let target = pending[rng.below(pending.len() as u64) as usize];
        let (src, tag) = match rng.below(4) {
            0 => (target.src, target.tag),
            1 => (target.src, ANY_TAG),
            2 => (ANY_SOURCE, target.tag),
            _ => (ANY_SOURCE, ANY_TAG),
        };
        // Sometimes post late, so that more has arrived unexpected (or
        // waits at its sender) by then.
        if rng.below(8) == 0 {
            std::thread::sleep(std::time::Duration::from_micros(rng.below(2000)));
        }
        let mut buf = vec![0u64; 80_000];
        let st = match rng.below(3) {
            0 => world.recv(&mut buf, src, tag)?,
            1 => world.irecv(&mut buf, src, tag)?.wait()?,
            _ => {
                let (v, st) = world.recv_vec::<u64>(src, tag)?;
                buf[..v.len()].copy_from_slice(&v);
                st
            }
        };
        let id = buf[0] as usize;
        let m = msgs
            .get(id)
            .copied()
            .ok_or_else(|| format!("garbage id {id}"))?;
        let pos = pending
            .iter()
            .position(|p| p.id == id)
            .ok_or_else(|| format!("message {id} received twice or misrouted"))?;
        ensure!(
            (src == ANY_SOURCE || m.src == src) && (tag == ANY_TAG || m.tag == tag),
            "message {m:?} does not match ({src}, {tag})"
        );
        ensure!(
            st.source_rank() == m.src
                && st.tag() == m.tag
                && st.count::<u64>() == Some(m.len.max(1)),
            "status {st:?} for {m:?}"
        );
        // Non-overtaking: no earlier pending message from the same sender
        // also matches the selector.
        let overtaken = pending
            .iter()
            .find(|p| p.id < id && p.src == m.src && (tag == ANY_TAG || p.tag == tag));
        ensure!(
            overtaken.is_none(),
            "{m:?} overtook {overtaken:?} for ({src}, {tag})"
        );
        ensure!(buf[..m.len.max(1)] == payload(&m)[..], "payload of {m:?}");
        pending.remove(pos);
    }
    mpi::request::wait_all(sends)?;
    universe.finalize()?;
    Ok(())
}
