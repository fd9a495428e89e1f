//! The one way this crate waits for a word in NIC memory.
//!
//! A wait spins with [`std::hint::spin_loop`] for `spins` rounds (the
//! common case: the peer is running on another core and answers within
//! a microsecond), then yields the CPU `yields` times (the peer may share
//! our core), then sleeps `sleep` between checks (the peer is slow or
//! gone). Every wait has a deadline; past it the wait returns
//! [`Error::Timeout`] naming what it waited for. Nothing in this crate
//! blocks without one.

use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// How long and how eagerly to wait for a peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitPolicy {
    /// Give up after this long.
    pub deadline: Duration,
    /// Busy-wait rounds before yielding.
    pub spins: u32,
    /// `thread::yield_now` rounds before sleeping.
    pub yields: u32,
    /// Sleep between checks once spinning and yielding found nothing.
    pub sleep: Duration,
}

impl Default for WaitPolicy {
    /// 10 s deadline, 2000 spins, 200 yields, then 50 µs sleeps.
    fn default() -> Self {
        Self {
            deadline: Duration::from_secs(10),
            spins: 2000,
            yields: 200,
            sleep: Duration::from_micros(50),
        }
    }
}

impl WaitPolicy {
    /// The default policy with another deadline.
    pub fn with_deadline(deadline: Duration) -> Self {
        Self {
            deadline,
            ..Self::default()
        }
    }

    /// Calls `poll` until it returns `Ok(Some(_))` or an error, backing off
    /// as described in the module docs. `what` names the awaited event in
    /// the timeout error; it is only called on timeout.
    ///
    /// # Errors
    ///
    /// The error `poll` returned, or [`Error::Timeout`] at the deadline.
    pub fn wait<T>(
        &self,
        what: impl FnOnce() -> String,
        mut poll: impl FnMut() -> Result<Option<T>>,
    ) -> Result<T> {
        let start = Instant::now();
        let mut round: u64 = 0;
        loop {
            if let Some(v) = poll()? {
                return Ok(v);
            }
            round += 1;
            if round <= u64::from(self.spins) {
                std::hint::spin_loop();
                continue;
            }
            // Reading the clock costs more than a spin, so only check the
            // deadline once spinning has failed.
            let waited = start.elapsed();
            if waited >= self.deadline {
                return Err(Error::Timeout {
                    what: what(),
                    after: waited,
                });
            }
            if round <= u64::from(self.spins) + u64::from(self.yields) {
                std::thread::yield_now();
            } else {
                std::thread::sleep(self.sleep);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn returns_the_value_once_ready() {
        let mut n = 0;
        let v = WaitPolicy::default()
            .wait(
                || "n".into(),
                || {
                    n += 1;
                    Ok((n == 5000).then_some(n))
                },
            )
            .unwrap();
        assert_eq!(v, 5000);
    }

    #[test]
    fn times_out_naming_the_event() {
        let p = WaitPolicy::with_deadline(Duration::from_millis(20));
        let e = p.wait(|| "the moon".into(), || Ok(None::<()>)).unwrap_err();
        match e {
            Error::Timeout { what, after } => {
                assert_eq!(what, "the moon");
                assert!(after >= Duration::from_millis(20));
            }
            other => panic!("{other}"),
        }
    }

    #[test]
    fn errors_from_poll_end_the_wait() {
        let e = WaitPolicy::default()
            .wait(|| "x".into(), || Err::<Option<()>, _>(Error::NotSeeded(3)))
            .unwrap_err();
        assert!(matches!(e, Error::NotSeeded(3)));
    }
}
