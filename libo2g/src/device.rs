use std::fs::OpenOptions;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use crate::{abi, raw, Error, Result};

/// An open `/dev/o2g`: one endpoint of the module, i.e. one MPI process.
#[derive(Debug)]
pub struct Device {
    fd: OwnedFd,
}

impl Device {
    /// Where the module's misc device appears.
    pub const DEFAULT_PATH: &'static str = "/dev/o2g";

    /// Opens [`Device::DEFAULT_PATH`] and checks that the module's ABI matches.
    pub fn open() -> Result<Self> {
        Self::open_path(Path::new(Self::DEFAULT_PATH))
    }

    /// Opens the device node at `path` and checks that the module's ABI matches.
    pub fn open_path(path: &Path) -> Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| {
                let path = PathBuf::from(path);
                match e.kind() {
                    io::ErrorKind::NotFound => Error::NotLoaded { path },
                    io::ErrorKind::PermissionDenied => Error::PermissionDenied { path },
                    _ => Error::io("open", e),
                }
            })?;
        let dev = Device { fd: file.into() };
        let v = dev.version()?;
        check_abi(v)?;
        Ok(dev)
    }

    /// The module's ABI version.
    pub fn version(&self) -> Result<abi::VersionInfo> {
        raw::version(self.fd.as_fd()).map_err(|e| Error::io("O2G_IOC_VERSION", e))
    }

    /// Attaches a connected TCP socket of this process as the connection to
    /// peer `rank`. The module holds its own reference to the socket until
    /// [`Device::unregister_socket`] or until this device is closed.
    ///
    /// Errors (as [`Error::Io`] with the errno): `ENOTSOCK`, `EPROTOTYPE` (not
    /// TCP), `ENOTCONN`, `EBUSY` (already hooked by o2g or another kernel
    /// user such as kTLS, KCM or sockmap), `EEXIST` (rank taken), `EINVAL`
    /// (rank out of range), `ENOSPC` (too many sockets).
    pub fn register_socket(&self, sock: &impl AsFd, rank: u32) -> Result<()> {
        let reg = abi::SocketRegistration {
            fd: sock.as_fd().as_raw_fd(),
            rank,
            ..Default::default()
        };
        raw::register_socket(self.fd.as_fd(), &reg).map_err(|e| Error::io("register socket", e))
    }

    /// Detaches the socket of peer `rank`; it is a plain socket again.
    pub fn unregister_socket(&self, rank: u32) -> Result<()> {
        let arg = abi::RankArg { rank, reserved: 0 };
        raw::unregister_socket(self.fd.as_fd(), &arg).map_err(|e| Error::io("unregister socket", e))
    }

    /// This endpoint's counters.
    pub fn stats(&self) -> Result<abi::EndpointStats> {
        raw::stats(self.fd.as_fd()).map_err(|e| Error::io("O2G_IOC_STATS", e))
    }
}

impl AsFd for Device {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// Accepts a module whose major version equals ours.
fn check_abi(v: abi::VersionInfo) -> Result<()> {
    if v.major == abi::O2G_ABI_MAJOR {
        Ok(())
    } else {
        Err(Error::AbiMismatch {
            module_major: v.major,
            module_minor: v.minor,
            lib_major: abi::O2G_ABI_MAJOR,
            lib_minor: abi::O2G_ABI_MINOR,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abi_check_accepts_same_major_any_minor() {
        let mut v = abi::VersionInfo {
            major: abi::O2G_ABI_MAJOR,
            ..Default::default()
        };
        assert!(check_abi(v).is_ok());
        v.minor = abi::O2G_ABI_MINOR + 7;
        assert!(check_abi(v).is_ok());
        v.major += 1;
        assert!(matches!(check_abi(v), Err(Error::AbiMismatch { .. })));
    }

    #[test]
    fn missing_node_says_module_not_loaded() {
        let err = Device::open_path(Path::new("/nonexistent/o2g")).unwrap_err();
        assert!(matches!(err, Error::NotLoaded { .. }), "{err}");
        assert!(err.to_string().contains("insmod"), "{err}");
        assert_eq!(err.raw_os_error(), Some(libc::ENOENT));
    }

    #[test]
    fn a_file_that_is_not_o2g_fails_the_version_ioctl() {
        // /dev/null accepts open but not our ioctl: ENOTTY, reported as Io.
        let err = Device::open_path(Path::new("/dev/null")).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ENOTTY), "{err}");
    }
}
