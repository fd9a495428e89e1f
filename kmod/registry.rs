// SPDX-License-Identifier: GPL-2.0

//! Every open endpoint, for `O2G_IOC_LIST_ENDPOINTS` (what `o2g-stat`
//! shows).
//!
//! Lock order: the registry mutex comes before any endpoint's locks.
//! Endpoints add themselves after `open` and remove themselves first thing
//! in their release, so a listed pointer is always live while the registry
//! lock is held.

use kernel::{prelude::*, uaccess::UserSlice};

use crate::abi;
use crate::endpoint::Endpoint;

kernel::sync::global_lock! {
    // SAFETY: `init` runs in the module initialiser, before the device
    // exists and so before any use.
    unsafe(uninit) static ENDPOINTS: Mutex<Registry> = Registry { list: KVec::new(), next_id: 0 };
}

/// The listed endpoints.
pub(crate) struct Registry {
    list: KVec<Entry>,
    next_id: u32,
}

struct Entry {
    id: u32,
    pid: u32,
    endpoint: *const Endpoint,
}

// SAFETY: `endpoint` is only dereferenced under the registry lock, while the
// endpoint is live (see the module docs); `Endpoint` is `Sync`.
unsafe impl Send for Entry {}

/// Initialises the registry.
///
/// # Safety
///
/// Call exactly once, from the module initialiser, before the device is
/// registered.
pub(crate) unsafe fn init() {
    // SAFETY: As the caller promises.
    unsafe { ENDPOINTS.init() };
}

/// Frees the registry's storage when the module goes (a `global_lock!`
/// static is never dropped).
pub(crate) struct Cleanup;

impl Drop for Cleanup {
    /// Context: process context (`delete_module(2)`), after the device is
    /// gone, so no endpoint exists any more.
    fn drop(&mut self) {
        drop(core::mem::take(&mut ENDPOINTS.lock().list));
    }
}

/// Lists `endpoint`, opened by process `pid`; returns its id.
///
/// Context: process context, may sleep.
pub(crate) fn add(endpoint: &Endpoint, pid: u32) -> Result<u32> {
    let mut reg = ENDPOINTS.lock();
    let id = reg.next_id;
    reg.next_id = id.wrapping_add(1);
    reg.list.push(
        Entry {
            id,
            pid,
            endpoint: core::ptr::from_ref(endpoint),
        },
        GFP_KERNEL,
    )?;
    Ok(id)
}

/// Removes `endpoint` from the list.
///
/// Context: process context, may sleep.
pub(crate) fn remove(endpoint: &Endpoint) {
    let mut reg = ENDPOINTS.lock();
    let me = core::ptr::from_ref(endpoint);
    if let Some(i) = reg.list.iter().position(|e| e.endpoint == me) {
        let _ = reg.list.remove(i);
    }
}

/// Answers `O2G_IOC_LIST_ENDPOINTS`. Errors: `EINVAL` (capacity too
/// large, bad padding), `EFAULT`.
///
/// Context: process context, may sleep.
pub(crate) fn list(arg: &mut abi::EndpointList) -> Result {
    if arg.capacity > abi::O2G_MAX_LIST {
        return Err(EINVAL);
    }
    let reg = ENDPOINTS.lock();
    let room = arg.capacity as usize;
    let bytes = room * size_of::<abi::EndpointSummary>();
    let mut out = UserSlice::new(UserPtr::from_addr(arg.buf as usize), bytes).writer();
    for e in reg.list.iter().take(room) {
        // SAFETY: Listed endpoints are live while the registry lock is held.
        let stats = unsafe { &*e.endpoint }.stats();
        out.write(&abi::EndpointSummary {
            pid: e.pid,
            endpoint: e.id,
            stats,
        })?;
    }
    arg.count = u32::try_from(reg.list.len()).unwrap_or(u32::MAX);
    Ok(())
}
