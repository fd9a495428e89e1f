use std::fs::OpenOptions;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use crate::{abi, list, raw, Endpoint, EndpointConfig, EndpointListing, Error, Result};

/// An open `/dev/o2g`: one endpoint of the module, i.e. one MPI process.
///
/// A fresh device can report the ABI version and list the module's
/// endpoints; [`Device::init`] turns it into an [`Endpoint`] that receives.
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

    /// Sets the endpoint's capacities (`O2G_IOC_INIT`, once per open device)
    /// and maps its shared area.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConfig`] before asking the module; the module's errno
    /// as [`Error::Io`]; [`Error::BadAnswer`] if the layout it answers breaks
    /// the ABI. The device is closed on error.
    pub fn init(self, cfg: EndpointConfig) -> Result<Endpoint> {
        Endpoint::init(self, cfg)
    }

    /// Every endpoint of the module (all processes), with its counters. Works
    /// on a fresh device, without [`Device::init`].
    pub fn list_endpoints(&self) -> Result<EndpointListing> {
        list::list_with(|buf| raw::list_endpoints(self.fd.as_fd(), buf))
            .map_err(|e| Error::io("O2G_IOC_LIST_ENDPOINTS", e))
    }

    /// Attaches a connected TCP socket of this process as the connection to
    /// peer `rank`. The module holds its own reference to the socket until
    /// [`Device::unregister_socket`] or until this device is closed. Since
    /// ABI 0.2 the module wants [`Device::init`] first; use
    /// [`Endpoint::register_socket`].
    ///
    /// Errors (as [`Error::Io`] with the errno): `ENOTSOCK`, `EPROTOTYPE` (not
    /// TCP), `ENOTCONN`, `EBUSY` (already hooked by o2g or another kernel
    /// user such as kTLS, KCM or sockmap), `EEXIST` (rank taken), `EINVAL`
    /// (rank out of range), `ENOSPC` (too many sockets).
    pub fn register_socket(&self, sock: &impl AsFd, rank: u32) -> Result<()> {
        self.register(sock, rank, 0, 0, "register socket")
    }

    /// Attaches a connected TCP socket as the control connection to peer
    /// `rank` (see [`abi::O2G_REGISTER_CONTROL`]); `local_rank` is this
    /// process's rank. The process must not write to it afterwards. Errors
    /// as [`Device::register_socket`].
    pub fn register_control(&self, sock: &impl AsFd, rank: u32, local_rank: u32) -> Result<()> {
        self.register(
            sock,
            rank,
            abi::O2G_REGISTER_CONTROL,
            local_rank,
            "register control socket",
        )
    }

    /// Attaches a connected TCP socket as the control connection that peer
    /// `rank`'s module writes, after that rank's [`Device::register_control`]
    /// (see [`abi::O2G_REGISTER_CONTROL_IN`]); `local_rank` is this
    /// process's rank. The process must not write to it afterwards. Errors
    /// as [`Device::register_socket`], and `EINVAL` before the rank's
    /// control connection.
    pub fn register_control_in(&self, sock: &impl AsFd, rank: u32, local_rank: u32) -> Result<()> {
        self.register(
            sock,
            rank,
            abi::O2G_REGISTER_CONTROL_IN,
            local_rank,
            "register incoming control socket",
        )
    }

    /// Attaches a connected TCP socket as this process's connection to
    /// itself, rank `rank` (see [`abi::O2G_REGISTER_SELF`]): the process
    /// writes the other end. Errors as [`Device::register_socket`], and
    /// `EEXIST` for a second one.
    pub fn register_self(&self, sock: &impl AsFd, rank: u32) -> Result<()> {
        self.register(
            sock,
            rank,
            abi::O2G_REGISTER_SELF,
            rank,
            "register self socket",
        )
    }

    /// `O2G_IOC_REGISTER_SOCKET` for `sock` as rank `rank`'s connection of
    /// the role `flags` names; `what` names the call in an error.
    fn register(
        &self,
        sock: &impl AsFd,
        rank: u32,
        flags: u32,
        local_rank: u32,
        what: &'static str,
    ) -> Result<()> {
        let reg = abi::SocketRegistration {
            fd: sock.as_fd().as_raw_fd(),
            rank,
            flags,
            local_rank,
        };
        raw::register_socket(self.fd.as_fd(), &reg).map_err(|e| Error::io(what, e))
    }

    /// Detaches the sockets of peer `rank` (its control connection too);
    /// they are plain sockets again.
    pub fn unregister_socket(&self, rank: u32) -> Result<()> {
        let arg = abi::RankArg { rank, reserved: 0 };
        raw::unregister_socket(self.fd.as_fd(), &arg).map_err(|e| Error::io("unregister socket", e))
    }

    /// This endpoint's counters.
    pub fn stats(&self) -> Result<abi::EndpointStats> {
        raw::stats(self.fd.as_fd()).map_err(|e| Error::io("O2G_IOC_STATS", e))
    }

    /// The counters of the connection to peer `rank`.
    pub fn socket_stats(&self, rank: u32) -> Result<abi::SocketStats> {
        let mut stats = abi::SocketStats {
            rank,
            ..Default::default()
        };
        raw::socket_stats(self.fd.as_fd(), &mut stats)
            .map_err(|e| Error::io("O2G_IOC_SOCKET_STATS", e))?;
        Ok(stats)
    }

    /// `/dev/null` posing as a device, for host tests of the paths that end
    /// in an ioctl (which fails there with `ENOTTY`).
    #[cfg(test)]
    pub(crate) fn dev_null() -> Self {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/null")
            .unwrap();
        Device { fd: file.into() }
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

    #[test]
    fn every_ioctl_on_a_non_o2g_file_reports_enotty_with_its_name() {
        let dev = Device::dev_null();
        let checks: [(&str, Error); 4] = [
            ("O2G_IOC_STATS", dev.stats().unwrap_err()),
            ("O2G_IOC_SOCKET_STATS", dev.socket_stats(1).unwrap_err()),
            ("O2G_IOC_LIST_ENDPOINTS", dev.list_endpoints().unwrap_err()),
            ("unregister socket", dev.unregister_socket(1).unwrap_err()),
        ];
        for (op, err) in checks {
            assert_eq!(err.raw_os_error(), Some(libc::ENOTTY), "{op}: {err}");
            assert!(err.to_string().starts_with(op), "{op}: {err}");
        }
    }

    #[test]
    fn init_checks_the_config_before_asking_the_module() {
        let cfg = EndpointConfig {
            max_posted: 0,
            ..Default::default()
        };
        let err = Device::dev_null().init(cfg).unwrap_err();
        assert!(
            matches!(
                err,
                Error::InvalidConfig {
                    field: "max_posted",
                    ..
                }
            ),
            "{err}"
        );
        // A valid config reaches the ioctl, which /dev/null refuses.
        let err = Device::dev_null()
            .init(EndpointConfig::default())
            .unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ENOTTY), "{err}");
        assert!(err.to_string().starts_with("O2G_IOC_INIT"), "{err}");
    }
}
