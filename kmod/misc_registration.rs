// SPDX-License-Identifier: GPL-2.0

//! A misc device registration that pins the module while its files are open.
//!
//! The 7.2 kernel crate's `MiscDeviceRegistration` registers a `const`
//! `file_operations` table whose `owner` is NULL, so `misc_open()` takes no
//! reference on the module and `rmmod` succeeds while `/dev/o2g` is open; the
//! next `close()` would then call `release` in freed module text. This type
//! keeps the crate's [`MiscDevice`] trait and its C trampolines, but registers
//! a per-registration copy of that table with `owner` set, so the VFS holds a
//! module reference for every open file and `rmmod` fails with `EBUSY`.
//!
//! The crate's `open` trampoline casts `file->private_data` (the `struct
//! miscdevice` that `misc_open()` stores there) to its own
//! `MiscDeviceRegistration<T>`, which is `#[repr(transparent)]` over
//! `Opaque<bindings::miscdevice>`; any registered `miscdevice` whose `fops`
//! came from `MiscDeviceOptions::into_raw::<T>()` satisfies that cast.

use core::marker::PhantomData;

use kernel::{
    bindings,
    error::to_result,
    miscdevice::{
        MiscDevice,
        MiscDeviceOptions, //
    },
    prelude::*,
    types::Opaque,
};

/// A registered misc device whose open files keep the module loaded.
///
/// # Invariants
///
/// - `misc` is registered with `misc_register()` from the moment
///   initialisation succeeds until `drop`, and its `fops` points to `fops`.
/// - `fops` is the crate's table for `T` with `owner` set to this module; it is
///   not written after registration.
/// - The value is pinned: both C structures keep their addresses while
///   registered.
pub(crate) struct OwnedMiscRegistration<T> {
    misc: Opaque<bindings::miscdevice>,
    fops: Opaque<bindings::file_operations>,
    _t: PhantomData<T>,
}

// SAFETY: `misc_deregister` may be called from any thread, and shared
// references only ever read the registered, immutable structures.
unsafe impl<T> Send for OwnedMiscRegistration<T> {}
// SAFETY: There are no `&self` methods that mutate anything.
unsafe impl<T> Sync for OwnedMiscRegistration<T> {}

impl<T: MiscDevice> OwnedMiscRegistration<T> {
    /// Registers the misc device described by `opts`, owned by `module`.
    pub(crate) fn register(
        opts: MiscDeviceOptions,
        module: &'static ThisModule,
    ) -> impl PinInit<Self, Error> {
        let init = move |slot: *mut Self| {
            // SAFETY: `slot` is valid for writes for the duration of this
            // closure, so projecting to its fields is in bounds.
            let (misc_slot, fops_slot) = unsafe {
                (
                    Opaque::cast_into(core::ptr::addr_of!((*slot).misc)),
                    Opaque::cast_into(core::ptr::addr_of!((*slot).fops)),
                )
            };
            let mut misc = opts.into_raw::<T>();
            // SAFETY: `into_raw` sets `fops` to the crate's static table for
            // `T`, which is valid to read for 'static.
            let mut fops = unsafe { *misc.fops };
            fops.owner = module.as_ptr();
            // SAFETY: `fops_slot` points into `slot`, valid for writes.
            unsafe { fops_slot.write(fops) };
            misc.fops = fops_slot;
            // SAFETY: `misc_slot` points into `slot`, valid for writes.
            unsafe { misc_slot.write(misc) };
            // SAFETY: `misc_slot` is fully initialised and pinned, and `drop`
            // deregisters it before its memory is freed.
            // INVARIANT: On success `misc` is registered and uses `fops`.
            to_result(unsafe { bindings::misc_register(misc_slot) })
        };
        // SAFETY: On error nothing was registered and the slot holds nothing
        // that needs dropping. On success every field is initialised (`_t` is
        // zero-sized) and the closure does not move the slot.
        unsafe { pin_init::pin_init_from_closure(init) }
    }
}

impl<T> Drop for OwnedMiscRegistration<T> {
    fn drop(&mut self) {
        // SAFETY: By the type invariants `misc` is registered. Every open file
        // holds a module reference through `fops.owner`, so none is open while
        // the module is being unloaded.
        unsafe { bindings::misc_deregister(self.misc.get()) };
    }
}
