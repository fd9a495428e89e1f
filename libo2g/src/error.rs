use std::io;
use std::path::PathBuf;

/// What can go wrong talking to the o2g module.
///
/// Errors this library detects before asking the module
/// ([`Error::InvalidConfig`], [`Error::InvalidArgument`]) report `EINVAL`
/// from [`Error::raw_os_error`], as the module would.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
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
    /// A wait was interrupted by a signal (`EINTR`); nothing was lost, and
    /// the call may simply be repeated.
    #[error("{op} interrupted by a signal")]
    Interrupted {
        /// The operation that was interrupted.
        op: &'static str,
    },
    /// An [`EndpointConfig`](crate::EndpointConfig) value is outside what the
    /// ABI allows; the module was not asked.
    #[error("invalid endpoint config: {field} {problem}")]
    InvalidConfig {
        /// The offending field.
        field: &'static str,
        /// What is wrong with it.
        problem: String,
    },
    /// An argument is outside what the ABI allows; the module was not asked.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The module answered something the ABI does not allow (a bad layout,
    /// an unknown outcome, a stored message outside the dump area). This is
    /// a bug in the module or in this library, never the caller's fault.
    #[error("{op}: the module's answer breaks the ABI: {detail}")]
    BadAnswer {
        /// The operation whose answer was refused.
        op: &'static str,
        /// What was wrong with it.
        detail: String,
    },
    /// The completion ring's producer index is more than the ring's size
    /// ahead of (or behind) the consumer index: records were overwritten
    /// before they were read. A bug in the module; nothing was consumed.
    #[error("completion ring overrun: producer index {producer}, consumer index {consumer}, {entries} entries")]
    RingOverrun {
        /// The producer index the module published.
        producer: u32,
        /// This process's consumer index.
        consumer: u32,
        /// The ring's size.
        entries: u32,
    },
    /// As many receives are in flight (posted, or completed but not yet
    /// reaped) as the completion ring has entries: reap completions first.
    #[error("{in_flight} receives are in flight, as many as the completion ring holds: reap completions before posting more")]
    RingFull {
        /// Receives in flight.
        in_flight: u32,
    },
}

impl Error {
    /// Wraps an `io::Error` from operation `op`; `EINTR` becomes
    /// [`Error::Interrupted`].
    pub(crate) fn io(op: &'static str, source: io::Error) -> Self {
        if source.kind() == io::ErrorKind::Interrupted {
            Error::Interrupted { op }
        } else {
            Error::Io { op, source }
        }
    }

    /// A [`Error::BadAnswer`] for operation `op`.
    pub(crate) fn bad_answer(op: &'static str, detail: impl Into<String>) -> Self {
        Error::BadAnswer {
            op,
            detail: detail.into(),
        }
    }

    /// The errno behind this error, if it came from a system call or is one
    /// the module would have reported itself.
    pub fn raw_os_error(&self) -> Option<i32> {
        match self {
            Error::Io { source, .. } => source.raw_os_error(),
            Error::NotLoaded { .. } => Some(libc::ENOENT),
            Error::PermissionDenied { .. } => Some(libc::EACCES),
            Error::Interrupted { .. } => Some(libc::EINTR),
            Error::InvalidConfig { .. } | Error::InvalidArgument(_) => Some(libc::EINVAL),
            Error::AbiMismatch { .. }
            | Error::BadAnswer { .. }
            | Error::RingOverrun { .. }
            | Error::RingFull { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eintr_becomes_interrupted_and_keeps_its_errno() {
        let err = Error::io("O2G_IOC_POLL", io::Error::from_raw_os_error(libc::EINTR));
        assert!(
            matches!(err, Error::Interrupted { op: "O2G_IOC_POLL" }),
            "{err:?}"
        );
        assert_eq!(err.raw_os_error(), Some(libc::EINTR));
    }

    #[test]
    fn other_errnos_stay_io_errors() {
        let err = Error::io("O2G_IOC_POST", io::Error::from_raw_os_error(libc::ENOBUFS));
        assert!(matches!(err, Error::Io { .. }), "{err:?}");
        assert_eq!(err.raw_os_error(), Some(libc::ENOBUFS));
        assert!(err.to_string().starts_with("O2G_IOC_POST: "), "{err}");
    }

    #[test]
    fn local_validation_errors_report_einval() {
        let err = Error::InvalidArgument("x".into());
        assert_eq!(err.raw_os_error(), Some(libc::EINVAL));
        let err = Error::RingOverrun {
            producer: 9,
            consumer: 0,
            entries: 8,
        };
        assert_eq!(err.raw_os_error(), None);
        assert!(err.to_string().contains("producer index 9"), "{err}");
    }
}
