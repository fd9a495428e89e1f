//! In-guest checks of the receive path, one concept per file: where a
//! message lands, misbehaving and departed peers, back-pressure, teardown
//! with traffic in flight, racing receivers, and when finished receives'
//! pages are unpinned.

pub(crate) mod flood;
pub(crate) mod misbehaviour;
pub(crate) mod paths;
pub(crate) mod peer_gone;
pub(crate) mod race;
pub(crate) mod teardown;
pub(crate) mod unpin;
