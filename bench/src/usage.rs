//! What a process has cost so far, from getrusage: CPU time of all its
//! threads (progress threads included) and context switches. Differences
//! of two readings are the costs the benchmarks print beside their times.

use std::time::Duration;

/// One reading of this process's resource usage.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// User plus system CPU time.
    pub cpu: Duration,
    /// Voluntary plus involuntary context switches.
    pub switches: u64,
}

impl Usage {
    /// Now, for this process (`RUSAGE_SELF`: all its threads).
    pub fn now() -> Self {
        // SAFETY: `rusage` is plain integers, for which all zeroes is a value.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `ru` is a valid, writable `rusage` for the call to fill.
        let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
        assert_eq!(rc, 0, "getrusage(RUSAGE_SELF) cannot fail");
        let tv = |t: libc::timeval| {
            Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
        };
        Self {
            cpu: tv(ru.ru_utime) + tv(ru.ru_stime),
            switches: (ru.ru_nvcsw + ru.ru_nivcsw) as u64,
        }
    }

    /// What passed between `earlier` and this reading.
    pub fn since(&self, earlier: &Self) -> Self {
        Self {
            cpu: self.cpu.saturating_sub(earlier.cpu),
            switches: self.switches.saturating_sub(earlier.switches),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spinning_costs_cpu_time() {
        // Spin until the reading shows 10 ms of CPU; on a loaded machine
        // that takes longer in wall time, so only a generous bound.
        let before = Usage::now();
        let give_up = std::time::Instant::now() + Duration::from_secs(20);
        let mut n = 0u64;
        let spent = loop {
            for _ in 0..10_000 {
                n = std::hint::black_box(n + 1);
            }
            let spent = Usage::now().since(&before);
            if spent.cpu >= Duration::from_millis(10) || std::time::Instant::now() > give_up {
                break spent;
            }
        };
        assert!(
            spent.cpu >= Duration::from_millis(10),
            "{spent:?} after 20 s of spinning"
        );
    }
}
