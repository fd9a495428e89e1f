//! Safe user-space access to the o2g kernel module (`/dev/o2g`).
//!
//! ```no_run
//! let dev = libo2g::Device::open()?;
//! let v = dev.version()?;
//! println!("o2g ABI {}.{}", v.major, v.minor);
//! # Ok::<(), libo2g::Error>(())
//! ```
//!
//! [`Device::open`] fails with a clear [`Error`] when the module is not
//! loaded, the caller may not open the node, or the module speaks another ABI.

pub mod abi;
mod device;
mod error;
pub mod raw;

pub use device::Device;
pub use error::Error;

/// Result type of this crate.
pub type Result<T> = std::result::Result<T, Error>;
