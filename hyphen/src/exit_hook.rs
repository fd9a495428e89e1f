//! A word of the shared region that this process sets when it calls
//! `exit(3)`: how [`crate::liveness`] tells peers at once that a node's
//! process is gone (an `atexit` hook, the crate's only code that runs
//! outside a call into it).
//!
//! One word per process at a time: arming again moves the hook.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, Once};

use o2g_nicmem::Region;

/// What the hook stores where: the region, the word's offset, the value.
static HOOK: Mutex<Option<(Arc<Region>, usize, u32)>> = Mutex::new(None);

/// The `atexit` hook: stores the armed value, once.
///
/// Context: process exit (`exit(3)` or a return from `main`), other
/// threads possibly still running; must not block, so it only tries the
/// lock.
pub(crate) extern "C" fn on_exit() {
    let hook = HOOK.try_lock().ok().and_then(|mut h| h.take());
    if let Some((region, off, value)) = hook {
        if let Ok(w) = region.u32_at(off) {
            w.store(value, Ordering::SeqCst);
        }
    }
}

/// Has `value` stored into the u32 at `off` of `region` if the process
/// exits before [`disarm`]; replaces any hook armed before.
pub(crate) fn arm(region: Arc<Region>, off: usize, value: u32) {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| {
        // SAFETY: atexit only records the function pointer; `on_exit` is a
        // plain `extern "C" fn` without arguments that touches only the
        // static above (never blocking: `try_lock`) and a mapping the
        // static keeps alive through its `Arc`.
        unsafe { libc::atexit(on_exit) };
    });
    if let Ok(mut h) = HOOK.lock() {
        *h = Some((region, off, value));
    }
}

/// Removes the hook if it is still the one armed for the word at `off`
/// of `region`.
pub(crate) fn disarm(region: &Arc<Region>, off: usize) {
    if let Ok(mut h) = HOOK.lock() {
        if h.as_ref()
            .is_some_and(|(r, o, _)| Arc::ptr_eq(r, region) && *o == off)
        {
            *h = None;
        }
    }
}
