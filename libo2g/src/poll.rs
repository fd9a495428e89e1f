//! What `O2G_IOC_POLL` reports.

use std::time::Duration;

use crate::abi;

/// The events an [`Endpoint::poll`](crate::Endpoint::poll) found; empty after
/// a timeout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct PollEvents(u32);

impl PollEvents {
    /// Events from the module's bits ([`abi::poll_events`]).
    pub const fn from_bits(bits: u32) -> Self {
        Self(bits)
    }

    /// The raw bits, including any this library does not know.
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// The completion ring holds records not yet reaped.
    pub const fn completion(self) -> bool {
        self.0 & abi::poll_events::COMPLETION != 0
    }

    /// An unexpected message was stored since the previous poll.
    pub const fn unexpected(self) -> bool {
        self.0 & abi::poll_events::UNEXPECTED != 0
    }

    /// Nothing happened: the poll timed out.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }
}

/// [`abi::PollArgs::timeout_ns`] for a timeout: `None` waits without limit
/// (-1); durations beyond `i64::MAX` nanoseconds (292 years) saturate.
pub(crate) fn timeout_ns(timeout: Option<Duration>) -> i64 {
    match timeout {
        None => -1,
        Some(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_encode_as_the_abi_says() {
        assert_eq!(timeout_ns(None), -1);
        assert_eq!(timeout_ns(Some(Duration::ZERO)), 0);
        assert_eq!(timeout_ns(Some(Duration::from_micros(1500))), 1_500_000);
        assert_eq!(timeout_ns(Some(Duration::MAX)), i64::MAX);
    }

    #[test]
    fn event_bits() {
        let e = PollEvents::from_bits(abi::poll_events::COMPLETION);
        assert!(e.completion() && !e.unexpected() && !e.is_empty());
        let e = PollEvents::from_bits(abi::poll_events::UNEXPECTED | 0x80);
        assert!(!e.completion() && e.unexpected());
        assert_eq!(e.bits(), 0x82);
        assert!(PollEvents::default().is_empty());
    }
}
