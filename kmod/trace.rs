// SPDX-License-Identifier: GPL-2.0

//! o2g's trace events (`o2g_trace.h`, system `o2g`): where each step of a
//! rendezvous message ran and when, for `perf trace -e 'o2g:*'` or
//! tracefs, on kernels built with tracepoints. Each call is a function
//! call and a static branch while the event is off.

/// An event, numbered as `o2g_trace()` in `o2g_trace.c` expects.
#[derive(Clone, Copy)]
#[repr(u32)]
pub(crate) enum Step {
    /// Sender: OFFER pinned a rendezvous send's data (id: the offer).
    Offer = 0,
    /// Receiver: a request to send matched a posted receive.
    RtsMatched = 1,
    /// Receiver: a request to send was stored.
    RtsStored = 2,
    /// Receiver: a clear-to-send was written (len 0; id: the receive's token).
    CtsSent = 3,
    /// Sender: a clear-to-send arrived (id: the offer).
    CtsReceived = 4,
    /// Sender: the data starts (id: the offer).
    DataStart = 5,
    /// Sender: the data is written (len: bytes written).
    DataEnd = 6,
    /// Receiver: the reader filled a posted receive (id: its handle).
    RecvEnd = 7,
    /// Sender: data sent without a copy is acknowledged, and its offer
    /// ends (len: bytes sent; id: the offer).
    DataAcked = 8,
}

extern "C" {
    fn o2g_trace(step: u32, rank: u32, len: u64, id: u64);
}

/// Emits `step` for peer `rank`.
///
/// Context: any; does not sleep.
pub(crate) fn trace(step: Step, rank: u32, len: u64, id: u64) {
    // SAFETY: The helper takes plain values and only emits the event.
    unsafe { o2g_trace(step as u32, rank, len, id) };
}
