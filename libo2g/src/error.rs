use std::io;
use std::path::PathBuf;

/// What can go wrong talking to the o2g module.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The device node does not exist: the module is not loaded.
    #[error("{path} not found: is the o2g module loaded? (insmod o2g.ko)")]
    NotLoaded {
        /// The device node that was tried.
        path: PathBuf,
    },
    /// The caller may not open the device node.
    #[error("permission denied opening {path}: the node is root-only unless the site grants access (see the module docs)")]
    PermissionDenied {
        /// The device node that was tried.
        path: PathBuf,
    },
    /// The module speaks an incompatible ABI.
    #[error("o2g module ABI {module_major}.{module_minor} is incompatible with this library's {lib_major}.{lib_minor}")]
    AbiMismatch {
        /// The module's major version.
        module_major: u16,
        /// The module's minor version.
        module_minor: u16,
        /// This library's major version.
        lib_major: u16,
        /// This library's minor version.
        lib_minor: u16,
    },
    /// A system call failed.
    #[error("{op}: {source}")]
    Io {
        /// The operation that failed.
        op: &'static str,
        /// The error the kernel returned.
        #[source]
        source: io::Error,
    },
}

impl Error {
    /// Wraps an `io::Error` from operation `op`.
    pub(crate) fn io(op: &'static str, source: io::Error) -> Self {
        Error::Io { op, source }
    }

    /// The errno behind this error, if it came from a system call.
    pub fn raw_os_error(&self) -> Option<i32> {
        match self {
            Error::Io { source, .. } => source.raw_os_error(),
            Error::NotLoaded { .. } => Some(libc::ENOENT),
            Error::PermissionDenied { .. } => Some(libc::EACCES),
            Error::AbiMismatch { .. } => None,
        }
    }
}
