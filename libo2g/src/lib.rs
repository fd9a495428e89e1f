//! Safe user-space access to the o2g kernel module (`/dev/o2g`).
//!
//! [`Device::open`] fails with a clear [`Error`] when the module is not
//! loaded, the caller may not open the node, or the module speaks another ABI.
//! [`Device::init`] sets the endpoint's capacities and maps its shared area,
//! giving an [`Endpoint`] that receives MPI messages straight into posted
//! buffers inside the kernel:
//!
//! ```no_run
//! use std::net::TcpStream;
//! use std::time::Duration;
//! use libo2g::{Device, EndpointConfig, Post, Reaped, Selector};
//!
//! let dev = libo2g::Device::open()?;
//! let v = dev.version()?;
//! println!("o2g ABI {}.{}", v.major, v.minor);
//!
//! let mut ep = dev.init(EndpointConfig::default())?;
//! let peer = TcpStream::connect("10.0.0.2:5000").expect("connect");
//! ep.register_socket(&peer, 1)?; // the connection to rank 1
//!
//! // Receive up to 4 KiB from rank 1, tag 7, communicator context 0.
//! match ep.post(vec![0; 4096], Selector::new(Some(1), Some(7), 0), 42)? {
//!     Post::Queued(_handle) => {} // the kernel fills the buffer later
//!     Post::Unexpected { msg, mut buf } => {
//!         // The message had arrived already: copy it out of the dump area.
//!         let n = msg.copy_to(&mut buf);
//!         println!("{n} bytes from rank {}", msg.source());
//!         msg.free()?;
//!     }
//!     // Only with `EndpointConfig::notices`: see below.
//!     Post::Rescan(_buf) => unreachable!("no notices asked for"),
//! }
//!
//! // Wait for completions and take them, with their buffers.
//! let events = ep.poll(Some(Duration::from_secs(1)))?;
//! if events.completion() {
//!     while let Some(reaped) = ep.reap()? {
//!         if let Reaped::Owned(done) = reaped {
//!             done.status?; // truncated, connection failed, ...
//!             println!("request {}: {} bytes", done.user_data, done.written);
//!             let _payload: &[u8] = done.data();
//!         }
//!     }
//! }
//!
//! // Look at a waiting message without receiving it, or take it.
//! if let Some((env, len)) = ep.probe(Selector::any(0))? {
//!     println!("rank {} sent {len} bytes with tag {}", env.source, env.tag);
//! }
//! if let Some(msg) = ep.probe_claim(Selector::any(0))? {
//!     let _bytes: &[u8] = msg.data();
//!     msg.free()?; // or let it drop
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! With [`EndpointConfig::notices`], messages that arrive before their
//! receive is posted are also announced in the ring ([`Reaped::Stored`]):
//! they are the process's from then on, read in place with
//! [`Endpoint::announced_data`] and given back with [`Endpoint::give_back`],
//! with no system call. A process that matches announced messages itself
//! reaps every announcement before it posts; the module refuses a post
//! ([`Post::Rescan`]) while one it has not reaped may be older than the
//! receive's match.
//!
//! All `ioctl(2)` calls live in [`raw`], and all raw-pointer access to the
//! shared mapping (and `mmap` itself) in one private module. The only other
//! `unsafe` blocks hand a posted buffer to the module and read a stored
//! message in place; each states why that is sound.

/// The ioctl ABI, shared verbatim with the module: `uapi/abi.rs`.
#[path = "../../uapi/abi.rs"]
pub mod abi;
mod completion;
mod config;
mod device;
mod endpoint;
mod error;
mod layout;
mod list;
mod mapping;
mod poll;
mod post;
pub mod raw;
mod ring;
mod selector;
mod slab;
mod unexpected;

pub use completion::{Completed, RawCompleted, Reaped, RecvError, Sent};
pub use config::{CreditConfig, EndpointConfig};
pub use device::Device;
pub use endpoint::Endpoint;
pub use error::Error;
pub use layout::Layout;
pub use list::EndpointListing;
pub use o2g_core::proto::envelope::{Envelope, Selector, SourceSel, TagSel};
pub use poll::PollEvents;
pub use post::{Post, PostError, PostOutcome, RecvHandle};
pub use unexpected::{Announced, UnexpectedMessage};

/// Result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
