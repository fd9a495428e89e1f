//! `o2g`: the kernel-module transport (reserved).
//!
//! With the module, receives are posted into the kernel's matching engine
//! (the same o2g-core code, through `libo2g`), payloads land in the posted
//! buffers or the shared dump area from the socket's `sk_data_ready`, and
//! completions are read from a shared ring without a system call. Sends
//! stay plain writes on the same sockets, so `bootstrap.rs` and the send
//! half of `sockets.rs` carry over; the receive half (matcher, reassembly,
//! polling) is what the module replaces.
//!
//! Until that lands, selecting it is an error and never a silent fallback
//! to another transport: a benchmark must measure what it names.

use crate::error::Error;

/// The error `O2G_TRANSPORT=o2g` gives for now.
pub(crate) fn unavailable() -> Error {
    Error::TransportUnavailable {
        name: "o2g".into(),
        reason: "the kernel-module transport is not implemented in this build yet; \
                 use sockets-epoll or sockets-select"
            .into(),
    }
}
