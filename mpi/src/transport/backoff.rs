//! How an idle rank of the emulated NICs' transports (`dimmnet`,
//! `hyphenlink`) waits: it spins, then yields the CPU, then sleeps in naps
//! that start short and double up to a cap, never past the caller's
//! deadline. Any work ends the wait (or starts a new one).
//!
//! These transports receive by polling shared memory, so unlike the socket
//! and `o2g` transports (which spin briefly and then sleep in the kernel
//! until data arrives, `spin.rs`) they have no system call to sleep in
//! that an arrival would end: the back-off is what keeps a waiting rank
//! both quick to answer and off the CPU.
//!
//! The two count the first two phases differently ([`Phases`]): `dimmnet`
//! in rounds, so that it reads no clock while it spins, `hyphenlink` in
//! time since the wait began. What a rank does in the sleeping phase is
//! its transport's: `dimmnet` naps ([`Backoff::snooze`]); `hyphenlink`
//! first tells its peers that it sleeps and may sleep in the board's
//! interrupt EXT instead of a nap.

use std::time::{Duration, Instant};

/// When a wait moves on from spinning to yielding, and from yielding to
/// sleeping.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Phases {
    /// After `spins` rounds of spinning, then `yields` rounds of yielding.
    Rounds {
        /// Rounds with `spin_loop`.
        spins: u32,
        /// Rounds with `yield_now` after them.
        yields: u32,
    },
    /// Spinning until `spin` has passed since the wait began, yielding
    /// until `yield_until` has.
    Elapsed {
        /// How long the wait spins.
        spin: Duration,
        /// When it stops yielding and starts sleeping.
        yield_until: Duration,
    },
}

/// What one round of a wait does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// A `spin_loop` hint.
    Spin,
    /// `yield_now`.
    Yield,
    /// A sleep.
    Sleep,
}

/// The back-off of one wait; see the module documentation.
#[derive(Debug)]
pub(crate) struct Backoff {
    phases: Phases,
    /// Rounds so far ([`Phases::Rounds`]).
    round: u32,
    /// When the wait began ([`Phases::Elapsed`]).
    began: Option<Instant>,
    /// The next nap.
    nap: Duration,
    /// The longest nap.
    max_nap: Duration,
}

impl Backoff {
    /// A wait that starts now, whose naps start at `first_nap` and double
    /// up to `max_nap`.
    pub(crate) fn new(phases: Phases, first_nap: Duration, max_nap: Duration) -> Self {
        Self {
            phases,
            round: 0,
            began: matches!(phases, Phases::Elapsed { .. }).then(Instant::now),
            nap: first_nap,
            max_nap,
        }
    }

    /// Whether the wait has left the spinning phase (time to look at the
    /// clock and the peers). Counted in rounds, it asks no clock.
    pub(crate) fn idle(&self) -> bool {
        match self.phases {
            Phases::Rounds { spins, .. } => self.round >= spins,
            Phases::Elapsed { spin, .. } => self.elapsed() >= spin,
        }
    }

    /// The phase of the wait's next round, which it counts.
    pub(crate) fn next(&mut self) -> Phase {
        match self.phases {
            Phases::Rounds { spins, yields } => {
                self.round = self.round.saturating_add(1);
                if self.round <= spins {
                    Phase::Spin
                } else if self.round <= spins.saturating_add(yields) {
                    Phase::Yield
                } else {
                    Phase::Sleep
                }
            }
            Phases::Elapsed { spin, yield_until } => {
                let idle = self.elapsed();
                if idle < spin {
                    Phase::Spin
                } else if idle < yield_until {
                    Phase::Yield
                } else {
                    Phase::Sleep
                }
            }
        }
    }

    /// Sleeps the next nap, cut short at `deadline`; the nap after it is
    /// twice as long, up to the longest.
    pub(crate) fn nap(&mut self, deadline: Option<Instant>) {
        std::thread::sleep(self.next_nap(deadline));
    }

    /// How long the next nap lasts if it starts now, and doubles the one
    /// after it.
    fn next_nap(&mut self, deadline: Option<Instant>) -> Duration {
        let nap = deadline.map_or(self.nap, |d| {
            d.saturating_duration_since(Instant::now()).min(self.nap)
        });
        self.nap = (self.nap * 2).min(self.max_nap);
        nap
    }

    /// One round of the wait: spins, yields or naps, never past
    /// `deadline`.
    pub(crate) fn snooze(&mut self, deadline: Option<Instant>) {
        match self.next() {
            Phase::Spin => std::hint::spin_loop(),
            Phase::Yield => std::thread::yield_now(),
            Phase::Sleep => self.nap(deadline),
        }
    }

    fn elapsed(&self) -> Duration {
        self.began.map_or(Duration::ZERO, |b| b.elapsed())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: Duration = Duration::from_micros(1);

    #[test]
    fn counted_rounds_spin_then_yield_then_sleep() {
        let mut b = Backoff::new(
            Phases::Rounds {
                spins: 2,
                yields: 3,
            },
            US,
            US,
        );
        let phases: Vec<Phase> = (0..7)
            .map(|_| {
                let idle = b.idle();
                let p = b.next();
                assert_eq!(idle, p != Phase::Spin, "idle once spinning is over");
                p
            })
            .collect();
        use Phase::*;
        assert_eq!(phases, [Spin, Spin, Yield, Yield, Yield, Sleep, Sleep]);
        let mut none = Backoff::new(
            Phases::Rounds {
                spins: 0,
                yields: 0,
            },
            US,
            US,
        );
        assert!(none.idle());
        assert_eq!(none.next(), Sleep);
    }

    #[test]
    fn timed_phases_follow_the_clock() {
        let mut b = Backoff::new(
            Phases::Elapsed {
                spin: Duration::from_secs(3600),
                yield_until: Duration::from_secs(7200),
            },
            US,
            US,
        );
        assert!(!b.idle());
        assert_eq!(b.next(), Phase::Spin);
        let mut b = Backoff::new(
            Phases::Elapsed {
                spin: Duration::ZERO,
                yield_until: Duration::from_secs(3600),
            },
            US,
            US,
        );
        assert!(b.idle());
        assert_eq!(b.next(), Phase::Yield);
        let mut b = Backoff::new(
            Phases::Elapsed {
                spin: Duration::ZERO,
                yield_until: Duration::ZERO,
            },
            US,
            US,
        );
        assert_eq!(b.next(), Phase::Sleep);
    }

    #[test]
    fn naps_double_to_the_cap_and_stop_at_the_deadline() {
        let phases = Phases::Rounds {
            spins: 0,
            yields: 0,
        };
        let mut b = Backoff::new(phases, 20 * US, 1000 * US);
        let naps: Vec<u64> = (0..8)
            .map(|_| b.next_nap(None).as_micros() as u64)
            .collect();
        assert_eq!(naps, [20, 40, 80, 160, 320, 640, 1000, 1000]);
        let past = Instant::now();
        assert_eq!(b.next_nap(Some(past)), Duration::ZERO);
        let far = Instant::now() + Duration::from_secs(3600);
        assert_eq!(b.next_nap(Some(far)), 1000 * US);
    }
}
