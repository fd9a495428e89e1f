// SPDX-License-Identifier: GPL-2.0

//! One endpoint per open file of `/dev/o2g`: one MPI process's view of the module.
//!
//! Locking: none yet. The endpoint will own the receive queues and the hooked
//! sockets (later issues); the lock order will be written here.

use core::mem::size_of;

use kernel::{
    fs::File,
    miscdevice::{
        MiscDevice,
        MiscDeviceRegistration, //
    },
    prelude::*,
    transmute::AsBytes,
    uaccess::UserSlice,
};

use crate::abi;

// SAFETY: `VersionInfo` is `repr(C)` with explicit padding fields, so it has no
// uninitialised bytes and every byte pattern of it may be shown to user space.
unsafe impl AsBytes for abi::VersionInfo {}

/// The per-file state of `/dev/o2g`.
pub(crate) struct Endpoint;

#[vtable]
impl MiscDevice for Endpoint {
    type Ptr = KBox<Self>;

    /// Creates the endpoint.
    ///
    /// Context: process context (`open(2)`), may sleep; no locks held.
    fn open(_file: &File, _misc: &MiscDeviceRegistration<Self>) -> Result<KBox<Self>> {
        Ok(KBox::new(Endpoint, GFP_KERNEL)?)
    }

    /// Dispatches an ioctl. Unknown opcodes get `ENOTTY`; a bad argument
    /// pointer gets `EFAULT` from the user-copy helpers.
    ///
    /// Context: process context, may sleep; no locks held.
    fn ioctl(_me: &Endpoint, _file: &File, cmd: u32, arg: usize) -> Result<isize> {
        match cmd {
            abi::O2G_IOC_VERSION => {
                let info = abi::VersionInfo {
                    major: abi::O2G_ABI_MAJOR,
                    minor: abi::O2G_ABI_MINOR,
                    reserved: 0,
                    features: 0,
                };
                let user = UserSlice::new(UserPtr::from_addr(arg), size_of::<abi::VersionInfo>());
                user.writer().write(&info)?;
                Ok(0)
            }
            _ => Err(ENOTTY),
        }
    }
}
