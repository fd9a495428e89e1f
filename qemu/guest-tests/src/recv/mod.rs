//! In-guest checks of the receive path, one concept per file: where a
//! message lands, misbehaving and departed peers, back-pressure, teardown
//! with traffic in flight, and racing receivers.

pub(crate) mod flood;
pub(crate) mod misbehaviour;
pub(crate) mod paths;
pub(crate) mod peer_gone;
pub(crate) mod race;
pub(crate) mod teardown;
