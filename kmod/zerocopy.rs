// SPDX-License-Identifier: GPL-2.0

//! Rendezvous data sent without a copy to other hosts: `MSG_ZEROCOPY`,
//! from the kernel.
//!
//! Without it, TCP copies an offer's data out of its pinned pages into its
//! own, and the offer's `SENT` record goes out as soon as the last byte is
//! queued. With it, TCP's skbs point at the pinned user pages and take
//! references on them, and the `SENT` record waits for the completion of
//! the send's `ubuf_info` (`o2g_zc_alloc` in the shim): TCP has freed every
//! skb that held the pages, so the bytes were acknowledged and no
//! retransmission will read the buffer after the process takes it back.
//! The pages are unpinned when the last byte is queued, as for a copied
//! send; the skbs' page references keep them alive until then.
//!
//! Only for connections whose route leaves the host: on loopback the
//! receiving socket copies a zero-copy skb's pages anyway
//! (`skb_orphan_frags_rx`), so nothing would be saved. And only from the
//! module parameter `zerocopy_min` on (1 MiB by default; 0 turns it off):
//! at 256 KiB no gain was measured, since the send waits for the
//! acknowledgement instead (docs/results.md).
//!
//! The completion runs wherever TCP frees the last skb: in softirq (an
//! acknowledgement, a device's transmit completion) or in process context
//! (`release_sock`, the socket's destruction), possibly after the endpoint
//! is closed. It reaches the endpoint through its [`ZcHub`], which release
//! detaches first; a later completion finds nothing and only frees itself.

use core::ffi::c_void;
use core::ptr::NonNull;

use kernel::{bindings, prelude::*, sync::Arc};

use crate::bh_lock::{new_spinlock_bh, SpinLockBh};
use crate::endpoint_rx::EndpointRx;
use crate::shim;

/// Where an endpoint's zero-copy completions find it.
///
/// Lock order: taken by completions before the rx lock; never with it held.
#[pin_data]
pub(crate) struct ZcHub {
    #[pin]
    rx: SpinLockBh<Option<Arc<EndpointRx>>>,
}

impl ZcHub {
    /// A hub with no endpoint attached yet.
    ///
    /// Context: process context, may sleep.
    pub(crate) fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(ZcHub {
                rx <- new_spinlock_bh!(None, c"o2g_zc_hub"),
            }),
            GFP_KERNEL_ACCOUNT,
        )
    }

    /// Lets completions reach `rx` until [`ZcHub::detach`].
    ///
    /// Context: any; takes the hub lock.
    pub(crate) fn attach(&self, rx: Arc<EndpointRx>) {
        *self.rx.lock() = Some(rx);
    }

    /// Stops completions from reaching the endpoint; returns it, to drop
    /// in process context. Completions running now finish first.
    ///
    /// Context: process context; takes the hub lock.
    pub(crate) fn detach(&self) -> Option<Arc<EndpointRx>> {
        self.rx.lock().take()
    }
}

/// What a completion needs to end its offer.
struct Pending {
    hub: Arc<ZcHub>,
    rank: u32,
    offer: u32,
    /// Set by [`ZcSend::finish`]: all `sent` bytes were queued and the
    /// completion ends the offer. Written by the send work before it drops
    /// its reference.
    ends_offer: bool,
    sent: u64,
}

/// One data message sent without a copy: the send work's reference on its
/// completion. Dropping it lets the completion run once TCP is done with
/// the pages; after [`ZcSend::finish`] the completion ends the offer, and
/// without (the send was abandoned and its offer ended) it only frees
/// itself.
///
/// # Invariants
///
/// `ubuf` came from `o2g_zc_alloc` with `ctx` as its context, and this
/// holds the creator's reference on it. `ctx` is a leaked
/// `KBox<Pending>` that only the completion frees, which cannot run while
/// that reference is held.
pub(crate) struct ZcSend {
    ubuf: NonNull<bindings::ubuf_info>,
    ctx: NonNull<Pending>,
}

// SAFETY: The completion may run on any CPU and only uses what `Pending`
// holds (an `Arc` and plain values); the send work touches `ctx` only
// while it holds the reference, so never at the same time.
unsafe impl Send for ZcSend {}

impl ZcSend {
    /// Sets up a zero-copy send of offer `offer` to `rank`, or `None` when
    /// out of memory (the caller copies instead).
    ///
    /// Context: process context (the send work), may sleep.
    pub(crate) fn new(hub: &Arc<ZcHub>, rank: u32, offer: u32) -> Option<Self> {
        let pending = KBox::new(
            Pending {
                hub: hub.clone(),
                rank,
                offer,
                ends_offer: false,
                sent: 0,
            },
            GFP_KERNEL_ACCOUNT,
        )
        .ok()?;
        let ctx = KBox::into_raw(pending);
        // SAFETY: `zc_done` matches the callback's C type; the shim keeps
        // `ctx` opaque and hands it back to `zc_done` once.
        let ubuf = unsafe { shim::o2g_zc_alloc(Some(zc_done), ctx.cast()) };
        let Some(ubuf) = NonNull::new(ubuf) else {
            // SAFETY: `ctx` came from `KBox::into_raw` above and the shim
            // did not keep it.
            drop(unsafe { KBox::from_raw(ctx) });
            return None;
        };
        // INVARIANT: `ubuf` is fresh, with its one reference ours; `ctx`
        // is the leaked box.
        Some(Self {
            ubuf,
            // SAFETY: `KBox::into_raw` never returns null.
            ctx: unsafe { NonNull::new_unchecked(ctx) },
        })
    }

    /// The `ubuf_info` to pass to each send call of this message.
    pub(crate) fn ubuf(&self) -> *mut bindings::ubuf_info {
        self.ubuf.as_ptr()
    }

    /// All `sent` bytes of the message are queued: the completion ends its
    /// offer, now if TCP freed every skb already, or when it does.
    ///
    /// Context: process context; no spinlock held (see `drop`).
    pub(crate) fn finish(self, sent: u64) {
        // SAFETY: By the type invariants the completion cannot run before
        // `self` drops (below), so nothing else touches `ctx` now.
        unsafe {
            (*self.ctx.as_ptr()).sent = sent;
            (*self.ctx.as_ptr()).ends_offer = true;
        }
    }
}

impl Drop for ZcSend {
    /// Drops the send work's reference: the completion runs now, if no skb
    /// holds the pages any more, or when the last one is freed.
    ///
    /// Context: process context; no spinlock held (the completion may run
    /// here and takes the hub and rx locks).
    fn drop(&mut self) {
        // SAFETY: `ubuf` is valid and this is the creator's reference
        // (type invariants), dropped once.
        unsafe { shim::o2g_zc_put(self.ubuf.as_ptr()) };
    }
}

/// The completion: every skb that held the message's pages is freed.
///
/// Context: softirq or process context, any locks of TCP's held (never the
/// hub or rx lock); must not sleep. Takes the hub lock, then the rx lock.
unsafe extern "C" fn zc_done(ctx: *mut c_void) {
    // SAFETY: `ctx` is the box `ZcSend::new` leaked, handed back by the
    // shim exactly once, when the last reference dropped.
    let pending = unsafe { KBox::from_raw(ctx.cast::<Pending>()) };
    let attached = pending.hub.rx.lock();
    if let (Some(rx), true) = (attached.as_ref(), pending.ends_offer) {
        crate::tx::end_acked_offer(rx, pending.rank, pending.offer, pending.sent);
    }
    drop(attached);
    // Not the endpoint's last reference: the hub holds no endpoint once
    // detached, and drops only `Arc<ZcHub>` and plain values here.
    drop(pending);
}

/// Whether `len` bytes of data for `sock` go without a copy: at least the
/// module parameter `zerocopy_min` (not 0), and routed off this host.
///
/// Context: process context.
pub(crate) fn wanted(sock: &crate::sock::TcpSocket, len: usize) -> bool {
    at_least_min(len as u64) && !sock.via_loopback()
}

/// Whether the reader acknowledges a message of `len` bytes, received from
/// another host, as soon as it is read instead of when TCP's delayed
/// acknowledgement would. Its sender may have sent it without a copy and
/// then waits for that acknowledgement, which would otherwise wait for
/// data going back on a connection that carries one way. The rule is the
/// sender's, from this host's own parameter: a cluster loads the module
/// alike everywhere, and a mismatch costs time, never correctness.
pub(crate) fn ack_at_once(len: u64) -> bool {
    at_least_min(len)
}

fn at_least_min(len: u64) -> bool {
    let min = *crate::module_parameters::zerocopy_min.value() as u64;
    min != 0 && len >= min
}
