//! Spinning before sleeping: how an idle rank of the socket and `o2g`
//! transports waits for a reply that is already on its way.

use std::time::{Duration, Instant};

/// How long an idle rank looks for work without sleeping: an answer
/// within it costs no sleep and no wake-up, which take longer than a small
/// message's whole round trip (on loopback, and in the module's ring).
pub(crate) const SPIN: Duration = Duration::from_micros(100);

/// Whether idle waits may spin: only when the job has a CPU per rank
/// (`size` ranks); otherwise spinning only delays the peer.
pub(crate) fn may_spin(size: usize) -> bool {
    std::thread::available_parallelism().map_or(1, |n| n.get()) >= size
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
