//! Spinning before sleeping: how an idle rank of the socket and `o2g`
//! transports waits for a reply that is already on its way.

use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::config::Spin;

/// How long an idle rank looks for work without sleeping: an answer
/// within it costs no sleep and no wake-up, which take longer than a small
/// message's whole round trip (on loopback, and in the module's ring).
pub(crate) const SPIN: Duration = Duration::from_micros(100);

/// Whether idle waits may spin: only when this host has a CPU for each of
/// the job's `local` ranks on it; otherwise spinning only delays a peer
/// that shares the CPU.
pub(crate) fn may_spin(local: usize) -> bool {
    std::thread::available_parallelism().map_or(1, |n| n.get()) >= local
}

/// Whether the ranks at the far ends of `peers` (one connection each,
/// oneself excluded) and this one may spin, by `setting`: under `auto`,
/// only the peers on this host count against its CPUs, so one rank per
/// node of a cluster spins however large the job.
pub(crate) fn decide<'a>(setting: Spin, peers: impl IntoIterator<Item = &'a TcpStream>) -> bool {
    match setting {
        Spin::Always => true,
        Spin::Never => false,
        Spin::Auto => may_spin(1 + peers.into_iter().filter(|s| on_this_host(s)).count()),
    }
}

/// Whether the far end of `s` runs on this host: a loopback connection, or
/// one whose two ends have the same address. A socket that cannot say
/// counts as local, the cautious answer (it can only stop spinning).
fn on_this_host(s: &TcpStream) -> bool {
    match (s.local_addr(), s.peer_addr()) {
        (Ok(near), Ok(far)) => far.ip().is_loopback() || far.ip() == near.ip(),
        _ => true,
    }
}

/// Asks `ready` until it says yes, fails, or `limit` has passed; whether
/// it said yes.
pub(crate) fn spin_until<E>(
    limit: Duration,
    mut ready: impl FnMut() -> std::result::Result<bool, E>,
) -> std::result::Result<bool, E> {
    let until = Instant::now() + limit;
    loop {
        if ready()? {
            return Ok(true);
        }
        if Instant::now() >= until {
            return Ok(false);
        }
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use std::net::{TcpListener, TcpStream};

    use super::*;

    #[test]
    fn a_loopback_peer_shares_the_host() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        assert!(on_this_host(&c));
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        // Enough local peers to outnumber the CPUs: no spinning under auto.
        let peers = vec![&c; cpus];
        assert!(!decide(Spin::Auto, peers.iter().copied()));
        assert!(decide(Spin::Always, peers.iter().copied()));
        // Alone on the host: spin.
        assert!(decide(Spin::Auto, std::iter::empty()));
        assert!(!decide(Spin::Never, std::iter::empty()));
    }
}
