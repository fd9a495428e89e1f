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
        let before = Usage::now();
        let end = std::time::Instant::now() + Duration::from_millis(30);
        let mut n = 0u64;
        while std::time::Instant::now() < end {
            n = std::hint::black_box(n + 1);
        }
        let spent = Usage::now().since(&before);
        assert!(spent.cpu >= Duration::from_millis(10), "{spent:?}");
    }
}
