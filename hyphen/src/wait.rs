//! How every wait of the crate is done: polling or blocking, always with a
//! deadline.
//!
//! A wait has a *condition* (a task in the FIFO, room in a ring, a lock
//! word at zero) and a *doorbell*: a 32-bit shared word that whoever can
//! make the condition true bumps after doing so, plus a *sleepers* count
//! that says whether a futex wake is needed at all.
//!
//! - [`WaitMode::Poll`] re-checks the condition in a loop (`spin_loop`
//!   hints, with a `yield_now` every few rounds so a polling peer on the
//!   same core still runs). This is the HyphenLink "polling" EXT.
//! - [`WaitMode::Block`] announces itself in the sleepers count, re-checks,
//!   then sleeps in `futex(FUTEX_WAIT)` on the doorbell until it changes:
//!   the "interrupt" EXT. The notifier bumps the doorbell and calls
//!   `FUTEX_WAKE` only when someone sleeps. Both sides use sequentially
//!   consistent operations, so either the waiter sees the condition on its
//!   re-check or the notifier sees the sleeper (no lost wake-up).
//!
//! A sleep never lasts longer than [`MAX_SLEEP`]: where a wake cannot
//! arrive (waiter and notifier in different QEMU guests sharing an ivshmem
//! BAR, where futexes do not cross), blocking mode degrades into a poll
//! every [`MAX_SLEEP`]; use polling there.
//!
//! Every wait ends at its [`WaitPolicy::timeout`] with
//! [`Error::Timeout`] naming the condition, so a dead peer cannot wedge
//! the others forever.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::futex;

/// Longest single futex sleep; the wait re-checks its condition after it.
pub const MAX_SLEEP: Duration = Duration::from_millis(50);

/// How to wait for a condition another node makes true.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitMode {
    /// Spin on the shared words (HyphenLink's polling EXT).
    Poll,
    /// Sleep on a futex until a notifier wakes us (the "interrupt" EXT).
    Block,
}

/// A wait mode and the deadline every wait gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitPolicy {
    /// Polling or blocking.
    pub mode: WaitMode,
    /// How long one wait may last before it fails with [`Error::Timeout`].
    pub timeout: Duration,
}

impl WaitPolicy {
    /// Polling waits of at most `timeout`.
    pub fn polling(timeout: Duration) -> Self {
        Self {
            mode: WaitMode::Poll,
            timeout,
        }
    }

    /// Blocking waits of at most `timeout`.
    pub fn blocking(timeout: Duration) -> Self {
        Self {
            mode: WaitMode::Block,
            timeout,
        }
    }
}

impl Default for WaitPolicy {
    /// Blocking, ten seconds.
    fn default() -> Self {
        Self::blocking(Duration::from_secs(10))
    }
}

/// A doorbell word and the count of nodes sleeping on it.
#[derive(Clone, Copy)]
pub(crate) struct Doorbell<'a> {
    pub(crate) bell: &'a AtomicU32,
    pub(crate) sleepers: &'a AtomicU32,
}

impl Doorbell<'_> {
    /// Tells waiters their condition may have become true. Call after the
    /// change is published.
    pub(crate) fn ring(&self) {
        self.bell.fetch_add(1, Ordering::SeqCst);
        if self.sleepers.load(Ordering::SeqCst) != 0 {
            futex::wake(self.bell, u32::MAX);
        }
    }
}

/// Calls `attempt` until it yields a value, waiting on `door` between
/// attempts as `policy` says.
///
/// # Errors
///
/// Whatever `attempt` returns, or [`Error::Timeout`] with `what()` once the
/// policy's timeout has passed.
pub(crate) fn wait_for<T>(
    policy: &WaitPolicy,
    door: Doorbell<'_>,
    what: impl FnOnce() -> String,
    mut attempt: impl FnMut() -> Result<Option<T>>,
) -> Result<T> {
    if let Some(v) = attempt()? {
        return Ok(v);
    }
    let start = Instant::now();
    let deadline = start + policy.timeout;
    let mut rounds = 0u32;
    loop {
        match policy.mode {
            WaitMode::Poll => {
                rounds = rounds.wrapping_add(1);
                if rounds % 32 == 0 {
                    std::thread::yield_now();
                    if Instant::now() >= deadline {
                        return Err(timeout(what, start));
                    }
                } else {
                    std::hint::spin_loop();
                }
                if let Some(v) = attempt()? {
                    return Ok(v);
                }
            }
            WaitMode::Block => {
                door.sleepers.fetch_add(1, Ordering::SeqCst);
                let seen = door.bell.load(Ordering::SeqCst);
                let again = attempt();
                if !matches!(again, Ok(None)) {
                    door.sleepers.fetch_sub(1, Ordering::SeqCst);
                    return again.map(|v| v.expect("matched Some"));
                }
                let now = Instant::now();
                if now >= deadline {
                    door.sleepers.fetch_sub(1, Ordering::SeqCst);
                    return Err(timeout(what, start));
                }
                futex::wait(door.bell, seen, (deadline - now).min(MAX_SLEEP));
                door.sleepers.fetch_sub(1, Ordering::SeqCst);
                if let Some(v) = attempt()? {
                    return Ok(v);
                }
            }
        }
    }
}

fn timeout(what: impl FnOnce() -> String, start: Instant) -> Error {
    Error::Timeout {
        what: what(),
        after: start.elapsed(),
    }
}

/// Bit of a lock word meaning "someone may sleep on it".
const CONTENDED: u32 = 1 << 31;

/// A held lock word; dropping it unlocks.
#[must_use = "dropping the guard unlocks at once"]
pub(crate) struct LockGuard<'a> {
    word: &'a AtomicU32,
}

impl LockGuard<'_> {
    /// Keeps the lock held after the guard is gone; [`unlock`] ends it.
    pub(crate) fn keep(self) {
        std::mem::forget(self);
    }
}

impl Drop for LockGuard<'_> {
    fn drop(&mut self) {
        unlock(self.word);
    }
}

/// Takes the lock word `word` for `owner` (non-zero, below 2^31), the
/// classic three-state futex mutex with the owner recorded in the word so a
/// timeout can name who holds it.
///
/// # Errors
///
/// [`Error::Timeout`] naming `what` and the holder.
pub(crate) fn lock<'a>(
    word: &'a AtomicU32,
    owner: u32,
    policy: &WaitPolicy,
    what: impl Fn() -> String,
) -> Result<LockGuard<'a>> {
    debug_assert!(owner != 0 && owner & CONTENDED == 0);
    if word
        .compare_exchange(0, owner, Ordering::Acquire, Ordering::Relaxed)
        .is_ok()
    {
        return Ok(LockGuard { word });
    }
    let start = Instant::now();
    let deadline = start + policy.timeout;
    let mut rounds = 0u32;
    loop {
        let c = word.load(Ordering::Relaxed);
        if c == 0 {
            // Taken in the slow path: others may sleep, so mark it contended
            // and have the unlock wake them.
            let tag = match policy.mode {
                WaitMode::Poll => owner,
                WaitMode::Block => owner | CONTENDED,
            };
            if word
                .compare_exchange(0, tag, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return Ok(LockGuard { word });
            }
            continue;
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(Error::Timeout {
                what: format!("{} (held by owner tag {})", what(), c & !CONTENDED),
                after: start.elapsed(),
            });
        }
        match policy.mode {
            WaitMode::Poll => {
                rounds = rounds.wrapping_add(1);
                if rounds % 32 == 0 {
                    std::thread::yield_now();
                } else {
                    std::hint::spin_loop();
                }
            }
            WaitMode::Block => {
                if c & CONTENDED == 0
                    && word
                        .compare_exchange(c, c | CONTENDED, Ordering::Relaxed, Ordering::Relaxed)
                        .is_err()
                {
                    continue;
                }
                futex::wait(word, c | CONTENDED, (deadline - now).min(MAX_SLEEP));
            }
        }
    }
}

/// Releases a lock word taken with [`lock`] whose guard was given up (a
/// lock held across calls, as a synchronisation variable is).
pub(crate) fn unlock(word: &AtomicU32) {
    if word.swap(0, Ordering::Release) & CONTENDED != 0 {
        futex::wake(word, 1);
    }
}

/// The owner recorded in a lock word, if it is held.
pub(crate) fn holder(word: &AtomicU32) -> Option<u32> {
    match word.load(Ordering::Acquire) & !CONTENDED {
        0 => None,
        tag => Some(tag),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_wait_that_never_succeeds_names_what_it_waited_for() {
        let bell = AtomicU32::new(0);
        let sleepers = AtomicU32::new(0);
        for policy in [
            WaitPolicy::polling(Duration::from_millis(20)),
            WaitPolicy::blocking(Duration::from_millis(20)),
        ] {
            let door = Doorbell {
                bell: &bell,
                sleepers: &sleepers,
            };
            let e = wait_for::<()>(&policy, door, || "the moon".into(), || Ok(None)).unwrap_err();
            assert!(
                matches!(&e, Error::Timeout { what, .. } if what == "the moon"),
                "{e}"
            );
            assert_eq!(sleepers.load(Ordering::SeqCst), 0);
        }
    }

    #[test]
    fn a_blocked_waiter_is_woken_by_the_doorbell() {
        let words = Arc::new([AtomicU32::new(0), AtomicU32::new(0), AtomicU32::new(0)]);
        let w = Arc::clone(&words);
        let waiter = std::thread::spawn(move || {
            let door = Doorbell {
                bell: &w[0],
                sleepers: &w[1],
            };
            let policy = WaitPolicy::blocking(Duration::from_secs(20));
            wait_for(
                &policy,
                door,
                || "flag".into(),
                || Ok((w[2].load(Ordering::Acquire) == 1).then_some(7)),
            )
        });
        std::thread::sleep(Duration::from_millis(5));
        words[2].store(1, Ordering::Release);
        Doorbell {
            bell: &words[0],
            sleepers: &words[1],
        }
        .ring();
        assert_eq!(waiter.join().unwrap().unwrap(), 7);
    }

    #[test]
    fn lock_words_exclude_and_time_out_naming_the_holder() {
        let word = AtomicU32::new(0);
        let policy = WaitPolicy::blocking(Duration::from_millis(20));
        let g = lock(&word, 3, &policy, || "test lock".into()).unwrap();
        assert_eq!(holder(&word), Some(3));
        let e = lock(&word, 4, &policy, || "test lock".into())
            .err()
            .unwrap();
        assert!(e.to_string().contains("owner tag 3"), "{e}");
        drop(g);
        assert_eq!(holder(&word), None);
        let counter = Arc::new((AtomicU32::new(0), AtomicU32::new(0)));
        let threads: Vec<_> = (1..=2u32)
            .map(|me| {
                let c = Arc::clone(&counter);
                std::thread::spawn(move || {
                    let mode = if me == 1 {
                        WaitPolicy::polling(Duration::from_secs(20))
                    } else {
                        WaitPolicy::blocking(Duration::from_secs(20))
                    };
                    for _ in 0..2000 {
                        let _g = lock(&c.0, me, &mode, || "counter lock".into()).unwrap();
                        // A non-atomic read-modify-write: lost updates would
                        // show if the lock did not exclude.
                        let v = c.1.load(Ordering::Relaxed);
                        c.1.store(v + 1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(counter.1.load(Ordering::Relaxed), 4000);
    }
}
