// SPDX-License-Identifier: GPL-2.0

//! Every open endpoint, for `O2G_IOC_LIST_ENDPOINTS` (what `o2g-stat`
//! shows).
//!
//! Lock order: the registry mutex comes before any endpoint's locks.
//! Endpoints add themselves after `open` and remove themselves first thing
//! in their release, so a listed pointer is always live while the registry
//! lock is held.

use kernel::{bindings, prelude::*, task::Kuid, uaccess::UserSlice};

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
    /// The opener's effective uid: whose endpoint this is.
    owner: Kuid,
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

/// The most endpoints one process may have open: an MPI process needs
/// one; each costs kernel memory and carries its own pin budget.
pub(crate) const MAX_ENDPOINTS_PER_PROCESS: usize = 16;

/// Lists `endpoint`, opened by process `pid`; returns its id.
///
/// Errors: `EMFILE` when `pid` has [`MAX_ENDPOINTS_PER_PROCESS`] already,
/// `ENOMEM`.
///
/// Context: process context, may sleep.
pub(crate) fn add(endpoint: &Endpoint, pid: u32) -> Result<u32> {
    let mut reg = ENDPOINTS.lock();
    if reg.list.iter().filter(|e| e.pid == pid).count() >= MAX_ENDPOINTS_PER_PROCESS {
        return Err(EMFILE);
    }
    let id = reg.next_id;
    reg.next_id = id.wrapping_add(1);
    reg.list.push(
        Entry {
            id,
            pid,
            owner: Kuid::current_euid(),
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

/// Answers `O2G_IOC_LIST_ENDPOINTS`: the caller's own endpoints (same
/// effective uid), or every endpoint for `CAP_SYS_ADMIN`; other users'
/// pids and traffic are theirs. Errors: `EINVAL` (capacity too large, bad
/// padding), `EFAULT`, `ENOMEM`.
///
/// The summaries are gathered under the registry lock and written to the
/// caller after it is dropped: a slow page fault on the caller's buffer
/// must not hold up every open and close of the device.
///
/// Context: process context, may sleep.
pub(crate) fn list(arg: &mut abi::EndpointList) -> Result {
    if arg.capacity > abi::O2G_MAX_LIST {
        return Err(EINVAL);
    }
    let room = arg.capacity as usize;
    let me = Kuid::current_euid();
    // SAFETY: `capable` only reads the current task's credentials.
    let all = unsafe { bindings::capable(bindings::CAP_SYS_ADMIN as i32) };
    let mut out = KVec::new();
    let mut count: u32 = 0;
    {
        let reg = ENDPOINTS.lock();
        out.reserve(room.min(reg.list.len()), GFP_KERNEL)?;
        for e in reg.list.iter().filter(|e| all || e.owner == me) {
            count = count.saturating_add(1);
            if out.len() < room {
                // SAFETY: Listed endpoints are live while the registry lock
                // is held.
                let stats = unsafe { &*e.endpoint }.stats();
                out.push_within_capacity(abi::EndpointSummary {
                    pid: e.pid,
                    endpoint: e.id,
                    stats,
                })
                .map_err(|_| ENOMEM)?;
            }
        }
    }
    let bytes = room * size_of::<abi::EndpointSummary>();
    let mut writer = UserSlice::new(UserPtr::from_addr(arg.buf as usize), bytes).writer();
    for summary in out.iter() {
        writer.write(summary)?;
    }
    arg.count = count;
    Ok(())
}
