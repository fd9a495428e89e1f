//! Memory windows: process memory the module writes peers' one-sided
//! puts into, and whose lock it keeps, inside the protocol handler
//! (`O2G_IOC_WIN_REGISTER`).

use std::os::fd::AsFd;

use super::Endpoint;
use crate::{abi, raw, Error, Result};

impl Endpoint {
    /// Registers `len` bytes at `base` as the window that puts for
    /// `context` land in, locked by origins of ranks below `ranks`;
    /// returns its id. From here until [`Endpoint::unregister_window`]
    /// (or the endpoint's close), a peer on any registered messages
    /// connection that holds the window's lock may write any bytes of it,
    /// at any time, whatever this process is doing.
    ///
    /// # Safety
    ///
    /// The memory must stay valid until the window is unregistered, and
    /// nothing may rely on its contents meanwhile beyond what the program's
    /// own synchronisation with its peers guarantees (the module writes it
    /// as a peer's DMA would).
    ///
    /// # Errors
    ///
    /// The module's errno as [`Error::Io`]: `EINVAL` (empty, over 4 GiB,
    /// a context with bit 31 set, `ranks` zero or over
    /// [`abi::O2G_MAX_SOCKETS`]), `EEXIST` (a window has this
    /// context), `ENOSPC` (64 windows), `ENOBUFS` (pin budget), `ENOMEM`
    /// (`RLIMIT_MEMLOCK`), `EFAULT` (not writable memory).
    pub unsafe fn register_window(
        &self,
        base: *mut u8,
        len: usize,
        context: u32,
        ranks: u32,
    ) -> Result<u32> {
        let mut args = abi::WindowArgs {
            base: base as u64,
            len: len as u64,
            context,
            ranks,
            ..Default::default()
        };
        // SAFETY: The window's lifetime is the caller's promise.
        unsafe { raw::win_register(self.device.as_fd(), &mut args) }
            .map_err(|e| Error::io("O2G_IOC_WIN_REGISTER", e))?;
        Ok(args.id)
    }

    /// Unregisters window `id`: no put lands in it once this returns, and
    /// its pages are unpinned.
    ///
    /// # Errors
    ///
    /// `ENOENT` as [`Error::Io`] if no window has this id.
    pub fn unregister_window(&self, id: u32) -> Result<()> {
        raw::win_unregister(self.device.as_fd(), &abi::IdArg { id: u64::from(id) })
            .map_err(|e| Error::io("O2G_IOC_WIN_UNREGISTER", e))
    }

    /// Tells the module that this process has completed `epoch` fences
    /// on window `id`: lock requests made after as many are granted from
    /// now on (see [`abi::O2G_IOC_WIN_EPOCH`]).
    ///
    /// # Errors
    ///
    /// `ENOENT` as [`Error::Io`] if no window has this id.
    pub fn set_window_epoch(&self, id: u32, epoch: u64) -> Result<()> {
        let arg = abi::WindowEpoch {
            id,
            epoch,
            ..Default::default()
        };
        raw::win_epoch(self.device.as_fd(), &arg).map_err(|e| Error::io("O2G_IOC_WIN_EPOCH", e))
    }

    /// Window `id`'s counters (and the endpoint's count of puts that
    /// named no window).
    ///
    /// # Errors
    ///
    /// `ENOENT` as [`Error::Io`] if no window has this id.
    pub fn window_stats(&self, id: u32) -> Result<abi::WindowStats> {
        let mut stats = abi::WindowStats {
            id,
            ..Default::default()
        };
        raw::win_stats(self.device.as_fd(), &mut stats)
            .map_err(|e| Error::io("O2G_IOC_WIN_STATS", e))?;
        Ok(stats)
    }
}
