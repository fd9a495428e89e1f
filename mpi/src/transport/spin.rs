//! Spinning before sleeping: how an idle rank of the socket and `o2g`
//! transports waits for a reply that is already on its way.

use std::net::TcpStream;
use std::time::{Duration, Instant};

use super::bootstrap::on_this_host;
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

/// How this rank's idle waits spin, by `setting`, the ranks at the far
/// ends of `peers` (one connection each, oneself excluded) and this one:
/// under `auto`, spinning is allowed when this host has a CPU for each
/// rank on it (only the peers on this host count, so one rank per node of
/// a cluster spins however large the job), and then only while it pays
/// ([`Spinner`]). `1` spins before every wait, `0` never.
pub(crate) fn decide<'a>(setting: Spin, peers: impl IntoIterator<Item = &'a TcpStream>) -> Spinner {
    match setting {
        Spin::Always => Spinner::always(),
        Spin::Never => Spinner::never(),
        Spin::Auto => {
            if may_spin(1 + peers.into_iter().filter(|s| on_this_host(s)).count()) {
                Spinner::adaptive()
            } else {
                Spinner::never()
            }
        }
    }
}

/// Full spins in a row that found nothing before waits stop spinning.
const MISSES_BEFORE_PAUSE: u32 = 4;
/// Waits that then sleep at once, before one spins again to see whether
/// spinning pays now.
const PAUSED_WAITS: u32 = 64;

/// Whether an idle wait spins first, learned from how the last ones ended.
///
/// A spin pays only when the awaited message arrives within [`SPIN`].
/// Where a round trip takes longer (between virtual machines on a busy
/// host, or while the partner computes), a spin only burns the CPU that
/// the host needs to move the message: an 8 B ping-pong between two
/// one-vCPU VMs took 261-277 us per half round trip spinning, 230-237 not.
/// So after [`MISSES_BEFORE_PAUSE`] full spins in a row find nothing, the
/// next [`PAUSED_WAITS`] waits sleep at once; then one spins again, and a
/// spin that finds its message resumes spinning.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Spinner {
    mode: Mode,
    /// Full spins in a row that found nothing.
    misses: u32,
    /// Waits left that sleep without spinning.
    paused: u32,
}

/// Which waits spin: by `O2G_SPIN` and the host's CPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Never,
    Always,
    /// While spinning pays (`auto` with a CPU per local rank).
    Adaptive,
}

impl Spinner {
    fn with(mode: Mode) -> Self {
        Self {
            mode,
            misses: 0,
            paused: 0,
        }
    }

    fn always() -> Self {
        Self::with(Mode::Always)
    }

    fn never() -> Self {
        Self::with(Mode::Never)
    }

    fn adaptive() -> Self {
        Self::with(Mode::Adaptive)
    }

    /// Whether the wait starting now spins first; if so, the caller
    /// spins for at most [`SPIN`] and reports with [`Spinner::ended`].
    pub(crate) fn begin(&mut self) -> bool {
        if self.mode == Mode::Never {
            return false;
        }
        if self.paused > 0 {
            self.paused -= 1;
            return false;
        }
        true
    }

    /// A spin for `limit` ended, having `found` something to do. Spins cut
    /// short by the caller's own deadline say nothing about the partner.
    pub(crate) fn ended(&mut self, found: bool, limit: Duration) {
        if self.mode != Mode::Adaptive {
            return;
        }
        if found {
            self.misses = 0;
        } else if limit >= SPIN {
            self.misses = self.misses.saturating_add(1);
            if self.misses >= MISSES_BEFORE_PAUSE {
                self.paused = PAUSED_WAITS;
            }
        }
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
        assert!(!decide(Spin::Auto, peers.iter().copied()).begin());
        assert!(decide(Spin::Always, peers.iter().copied()).begin());
        // Alone on the host: spin.
        assert!(decide(Spin::Auto, std::iter::empty()).begin());
        assert!(!decide(Spin::Never, std::iter::empty()).begin());
    }

    /// Spins for `waits` waits, each finding something or not by `found`;
    /// how many of them spun.
    fn spun(s: &mut Spinner, waits: usize, found: bool) -> usize {
        (0..waits)
            .filter(|_| {
                let spins = s.begin();
                if spins {
                    s.ended(found, SPIN);
                }
                spins
            })
            .count()
    }

    #[test]
    fn spinning_pauses_while_it_finds_nothing_and_resumes_when_it_does() {
        let mut s = Spinner::adaptive();
        assert_eq!(spun(&mut s, 100, true), 100, "spins that pay go on");
        // Misses: four spins, then one per PAUSED_WAITS + 1 waits.
        let waits = MISSES_BEFORE_PAUSE as usize + 3 * (PAUSED_WAITS as usize + 1);
        assert_eq!(spun(&mut s, waits, false), MISSES_BEFORE_PAUSE as usize + 3);
        // The pause runs out and the next spin finds its message: spinning
        // resumes at once.
        assert_eq!(spun(&mut s, PAUSED_WAITS as usize, true), 0);
        assert_eq!(spun(&mut s, 50, true), 50);
        // A miss now and then does not pause it.
        for _ in 0..20 {
            assert_eq!(spun(&mut s, MISSES_BEFORE_PAUSE as usize - 1, false), 3);
            assert_eq!(spun(&mut s, 1, true), 1);
        }
    }

    #[test]
    fn spins_cut_short_and_forced_settings_do_not_learn() {
        let mut s = Spinner::adaptive();
        for _ in 0..100 {
            assert!(s.begin());
            s.ended(false, SPIN / 2);
        }
        let mut always = Spinner::always();
        assert_eq!(spun(&mut always, 100, false), 100);
        let mut never = Spinner::never();
        assert_eq!(spun(&mut never, 100, true), 0);
    }
}
