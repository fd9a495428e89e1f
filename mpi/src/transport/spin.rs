//! Spinning before sleeping: how an idle rank of the socket and `o2g`
//! transports waits for a reply that is already on its way.

use std::net::TcpStream;
use std::time::{Duration, Instant};

use super::bootstrap::on_this_host;
use super::host_cpus;
use crate::config::Spin;

/// The shortest spin of an idle rank: an answer within it costs no sleep
/// and no wake-up, which take longer than a small message's whole round
/// trip (on loopback, and in the module's ring).
pub(crate) const SPIN: Duration = Duration::from_micros(100);

/// The longest spin: [`Spinner`] stretches its spins up to this to cover
/// the waits it sees, where a round trip takes longer than [`SPIN`] (a
/// slower host, or the partner's system call in the way). Longer spins
/// cover waits that a sleep adds little to: between the 4 one-vCPU VMs of
/// the harness's cluster, a 1 ms cap made IS class A 0.88x as fast, while
/// 300 us changed nothing (`docs/results.md`, "A spin as long as the
/// waits").
pub(crate) const SPIN_MAX: Duration = Duration::from_micros(300);

/// Whether idle waits may spin: only when this host has a CPU for each of
/// the job's `local` ranks on it ([`host_cpus::for_local_ranks`]: a rank
/// bound to one CPU still counts the host's); otherwise spinning only
/// delays a peer that shares the CPU.
pub(crate) fn may_spin(local: usize) -> bool {
    host_cpus::for_local_ranks() >= local
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
/// A spin lasts this many times the typical wait it learned.
const WINDOW_PER_WAIT: u32 = 2;
/// The typical wait follows each new one by 1/`TYPICAL_WEIGHT`.
const TYPICAL_WEIGHT: u32 = 8;

/// Whether an idle wait spins first, and for how long, learned from how
/// the last ones ended.
///
/// A spin pays only when the awaited message arrives within it. How soon
/// that is depends on the host: where a small message's round trip takes
/// longer than a fixed spin, every wait spins in vain, sleeps, and the
/// wake-up makes the partner's next wait longer still, until both ranks
/// sleep on every message (an 8 B ping-pong over `sockets-epoll` in a
/// guest took 470-815 us a round trip that way, against 110-270 with
/// the spin below). So the spin's length follows
/// the waits that ended with work: [`WINDOW_PER_WAIT`] times their typical
/// length (a moving average, each wait counted up to [`SPIN_MAX`]), and
/// never below [`SPIN`] or above [`SPIN_MAX`].
///
/// Where a round trip takes longer than that (between virtual machines on
/// a busy host, or while the partner computes), a spin only burns the CPU
/// that the host needs to move the message: an 8 B ping-pong between two
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
    /// The typical wait that ended with work (moving average).
    typical: Duration,
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
            typical: Duration::ZERO,
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

    /// How long a full spin lasts now.
    pub(crate) fn window(&self) -> Duration {
        (self.typical * WINDOW_PER_WAIT).clamp(SPIN, SPIN_MAX)
    }

    /// How long the wait starting now spins first (`None`: it sleeps at
    /// once); the caller spins for at most that long and reports with
    /// [`Spinner::ended`], and the wait's end with [`Spinner::waited`].
    pub(crate) fn begin(&mut self) -> Option<Duration> {
        if self.mode == Mode::Never {
            return None;
        }
        if self.paused > 0 {
            self.paused -= 1;
            return None;
        }
        Some(self.window())
    }

    /// A spin for `limit` ended, having `found` something to do. Spins cut
    /// short by the caller's own deadline say nothing about the partner.
    pub(crate) fn ended(&mut self, found: bool, limit: Duration) {
        if self.mode != Mode::Adaptive {
            return;
        }
        if found {
            self.misses = 0;
        } else if limit >= self.window() {
            self.misses = self.misses.saturating_add(1);
            if self.misses >= MISSES_BEFORE_PAUSE {
                self.paused = PAUSED_WAITS;
            }
        }
    }

    /// A wait ended with work `after` it began (its spin, if any, and its
    /// sleep, if any): the next spins cover waits like it.
    pub(crate) fn waited(&mut self, after: Duration) {
        if self.mode == Mode::Never {
            return;
        }
        let after = after.min(SPIN_MAX);
        let weight = TYPICAL_WEIGHT;
        self.typical = (self.typical * (weight - 1) + after) / weight;
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
        let cpus = host_cpus::for_local_ranks();
        // Enough local peers to outnumber the CPUs: no spinning under auto.
        let peers = vec![&c; cpus];
        assert_eq!(decide(Spin::Auto, peers.iter().copied()).begin(), None);
        assert_eq!(
            decide(Spin::Always, peers.iter().copied()).begin(),
            Some(SPIN)
        );
        // Alone on the host: spin.
        assert_eq!(decide(Spin::Auto, std::iter::empty()).begin(), Some(SPIN));
        assert_eq!(decide(Spin::Never, std::iter::empty()).begin(), None);
    }

    /// Spins for `waits` waits, each finding something or not by `found`;
    /// how many of them spun.
    fn spun(s: &mut Spinner, waits: usize, found: bool) -> usize {
        (0..waits)
            .filter(|_| {
                let Some(window) = s.begin() else {
                    return false;
                };
                s.ended(found, window);
                true
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
            assert_eq!(s.begin(), Some(SPIN));
            s.ended(false, SPIN / 2);
        }
        let mut always = Spinner::always();
        assert_eq!(spun(&mut always, 100, false), 100);
        let mut never = Spinner::never();
        assert_eq!(spun(&mut never, 100, true), 0);
    }

    /// `waits` waits that each ended with work after `after`, one spin
    /// each that found it or not by whether it fit; how many of them spun.
    fn waits(s: &mut Spinner, waits: usize, after: Duration) -> usize {
        (0..waits)
            .filter(|_| {
                let w = s.begin();
                if let Some(w) = w {
                    s.ended(after <= w, w);
                }
                s.waited(after);
                w.is_some()
            })
            .count()
    }

    #[test]
    fn the_spin_stretches_to_cover_the_waits_it_sees_and_shrinks_back() {
        let mut s = Spinner::adaptive();
        // Answers after 150 us, past the shortest spin: the first spins
        // miss and pause spinning, while the window grows to cover them;
        // the spin after the pause finds its answer, and from then on
        // every one does.
        let answer = Duration::from_micros(150);
        waits(&mut s, 100, answer);
        let window = s.window();
        assert!(
            window >= Duration::from_micros(250) && window <= Duration::from_micros(300),
            "{window:?}"
        );
        assert_eq!(
            waits(&mut s, 200, answer),
            200,
            "every wait spins once the window fits"
        );
        // Fast answers bring it back down to the shortest spin.
        waits(&mut s, 100, Duration::from_micros(10));
        assert_eq!(s.window(), SPIN);
        // Long waits (a partner that computes) stretch it only to SPIN_MAX,
        // and its spins then miss and pause.
        waits(&mut s, 100, Duration::from_secs(1));
        assert_eq!(s.window(), SPIN_MAX);
        let spun = spun(&mut s, PAUSED_WAITS as usize, false);
        assert!(spun <= 1, "{spun} of {PAUSED_WAITS} waits spun");
    }
}
