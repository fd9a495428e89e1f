//! Emulated NIC memory for the DIMMnet-1 and HyphenLink emulations.
//!
//! On the real cards the host reaches NIC memory with plain loads and
//! stores. Here that memory is a `MAP_SHARED` mapping that every "node"
//! maps:
//!
//! - between processes on one host, a file in `/dev/shm`
//!   ([`Region::create_shm`], [`Region::open_shm`]);
//! - between QEMU guests, an `ivshmem-plain` PCI device whose BAR 2 is
//!   backed on the host by such a file, mapped in the guest through
//!   `/sys/bus/pci/devices/*/resource2` ([`Region::open_ivshmem`]).
//!
//! Everything a peer can influence (offsets, lengths) goes through
//! [`Region`]'s bounds-checked accessors, so a corrupt or hostile peer can
//! make an access fail, never land outside the mapping. Synchronisation
//! between nodes is by the atomics [`Region::u32_at`] and
//! [`Region::u64_at`] hand out; byte copies carry no ordering of their own
//! and must be published and observed through such an atomic
//! (release/acquire), as a store to a flag word would be on the card.

mod region;

pub use region::{Error, Region, Result};
