//! Virtual clocks: each resource of a cell (its CPU, its link, its
//! interrupt handlers) is busy until some virtual time.
//!
//! The machine's state sits behind one lock (see `machine`), so a clock is
//! a plain number; the rule is the one of every resource in the model:
//! work that may start at `at` and lasts `d` starts at the later of `at`
//! and the time the resource is free, and the resource is busy until its
//! end.

use crate::costs::Ps;

/// When a resource is next free.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Clock(Ps);

impl Clock {
    /// The clock's reading.
    pub(crate) fn now(self) -> Ps {
        self.0
    }

    /// Work ready at `at` lasting `d`; returns its end.
    pub(crate) fn occupy(&mut self, at: Ps, d: Ps) -> Ps {
        self.0 = self.0.max(at) + d;
        self.0
    }

    /// Work ready now lasting `d`; returns its end.
    pub(crate) fn spend(&mut self, d: Ps) -> Ps {
        self.occupy(0, d)
    }

    /// Waits (does nothing) until `t`; returns the new reading.
    pub(crate) fn catch_up(&mut self, t: Ps) -> Ps {
        self.occupy(t, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_starts_when_both_the_work_and_the_resource_are_ready() {
        let mut c = Clock::default();
        assert_eq!(c.spend(5), 5);
        assert_eq!(c.occupy(3, 2), 7, "busy until 5, then 2");
        assert_eq!(c.occupy(10, 1), 11, "idle until 10");
        assert_eq!(c.catch_up(4), 11);
    }
}
