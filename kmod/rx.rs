// SPDX-License-Identifier: GPL-2.0

//! The receive side of an endpoint: the state the socket hook updates from
//! softirq and the ioctls read from process context.
//!
//! Every registered socket's [`crate::conn::Conn`] holds a reference, so the
//! state outlives any hook that can still reach it. It sits under one
//! BH-safe spinlock, taken after the socket's `sk_callback_lock` (see the
//! lock order in `endpoint.rs`). The matching engine and the completion
//! queue will live here too.

use kernel::{prelude::*, sync::Arc};

use crate::bh_lock::{new_spinlock_bh, SpinLockBh};

/// What the hook and the ioctls share.
#[pin_data]
pub(crate) struct Rx {
    #[pin]
    state: SpinLockBh<RxState>,
}

/// The receive-side state, under [`Rx`]'s lock.
#[derive(Default)]
pub(crate) struct RxState {
    /// Times a registered socket signalled readable data.
    pub(crate) data_ready_events: u64,
}

impl Rx {
    /// Allocates the receive side of a new endpoint.
    pub(crate) fn new() -> Result<Arc<Rx>> {
        Arc::pin_init(
            pin_init!(Rx {
                state <- new_spinlock_bh!(RxState::default(), c"o2g_endpoint_rx"),
            }),
            GFP_KERNEL,
        )
    }

    /// Runs `f` with the state locked (BH off); must not sleep.
    ///
    /// Context: any (softirq or process); takes the endpoint's rx lock.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut RxState) -> R) -> R {
        f(&mut self.state.lock())
    }
}
