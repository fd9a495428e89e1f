//! Emulated DIMMnet-1: the NIC model, its primitives, the paper's
//! DIMM_Send/DIMM_Recv protocols and the Fagus AOTF barrier, as a native
//! Rust API usable without MPI.
//!
//! # The model
//!
//! DIMMnet-1 is a NIC plugged into a DIMM slot: the host reaches the card's
//! memory with ordinary loads and stores. Per node the card has
//!
//! - an **LLCM** (low-latency communication memory), 128 KiB of on-chip
//!   memory that host and network can both access at any time; remote
//!   AOTF and BOTF writes land here;
//! - an **SO-DIMM** with **two banks** of configurable size
//!   ([`Config::bank_size`]). At any time one bank faces the host and the
//!   other faces the network; [`Nic::switch_banks`] swaps them;
//! - **header seeds** (the HTLB of the card): set up once per destination
//!   with [`Nic::seed_header`]; AOTF and BOTF to an unseeded destination
//!   fail with [`Error::NotSeeded`];
//! - **status and ACK words**: the bank-select word, the BOTF window busy
//!   words and 16 ACK words that RDMA operations increment on completion.
//!
//! All of it lives in one shared [`o2g_nicmem::Region`] that every node
//! maps (a `/dev/shm` file between processes, an ivshmem BAR between QEMU
//! guests). The map is in [`layout`]:
//!
//! ```text
//! region:  [ header 4 KiB | node 0 | node 1 | ... ]
//! node:    [ LLCM 128 KiB | status 4 KiB | BOTF windows 4 KiB | bank 0 | bank 1 ]
//! ```
//!
//! The header (magic, version, node count, LLCM size, bank size, buffer
//! geometry, switch cost, region size) is written once by the creator
//! ([`Nic::create_shm`] or [`Nic::format`]); [`Nic::attach`] checks it, so
//! a peer built with another layout, or a region of the wrong size, fails
//! with [`Error::Incompatible`] instead of misreading memory.
//!
//! **Who does the hardware's work.** There is no NIC thread. The thread
//! that issues an operation (the AOTF store, the BOTF kick, the PUSH or
//! PULL) performs what the card would do — deliver the packet into the
//! remote LLCM, run the DMA copy, set the ACK word — before the call
//! returns. Operations are therefore complete on return; the APIs still
//! hand out [`Ack`]s and completion words so that callers are written for
//! a card that completes later.
//!
//! **Time.** Copies run at this host's speed, but every primitive also
//! charges a **timing model** of the card: per node virtual clocks in the
//! region, advanced by the costs of [`Costs`] (each value cites the paper
//! it comes from, or says it is assumed), with arrival times carried from
//! sender to receiver (the `vclock` module gives the rules). [`Nic::now`]
//! reads a node's clock, so a program can print both the time the card
//! would take and the time this host took. Nothing sleeps or spins to
//! imitate a delay.
//!
//! **What is abstracted away.** There is no packet loss, no flow control
//! below the protocols, no protection stamps beyond the pgid check and
//! bounds checks; receivers poll, except for the interrupt AOTF that the
//! core PU handles ([`Nic::aotf_interrupt`]). The HTLB is reduced to one
//! seed word per destination.
//!
//! # Primitives
//!
//! - **AOTF** ([`Nic::aotf`]): 1–8 bytes into a remote LLCM as one atomic
//!   store, ordered after earlier AOTFs from the same issuer to the same
//!   node. The alignment rule and the ordering argument are in the `aotf`
//!   module: the bytes must lie in one aligned 8-byte word; a store is one
//!   `Release` atomic performed synchronously by the issuer, so there is
//!   no queue that could reorder two of them.
//! - **BOTF** ([`Nic::botf_packet`], [`Nic::botf`]): up to 464 bytes of
//!   payload behind a 48-byte header in one of two 512-byte send windows,
//!   then a kick; the kick validates the header and delivers the payload
//!   into the remote LLCM (OTF receive). Longer data alternates windows.
//! - **PUSH / PULL** ([`Nic::push`], [`Nic::pull`]): RDMA copies between
//!   NIC memories ([`NicAddr`]: LLCM or the network-facing bank) that
//!   increment an ACK word of the issuer ([`Nic::wait_ack`]).
//! - **Interrupt AOTF** ([`Nic::aotf_interrupt`]): an AOTF the
//!   destination's core PU handles, appending to a list in its LLCM.
//! - **Bank switch** ([`Nic::switch_banks`]): waits for DMA into the
//!   network-facing bank to drain, swaps.
//!   The bank-select word is an arbiter that transfers take a hold on.
//!
//! # DIMM_Send / DIMM_Recv
//!
//! [`DimmEndpoint::send`] and [`DimmEndpoint::recv`] follow the paper's flag-area
//! design: node `n` keeps per peer a 64-byte flag area in its LLCM (grant =
//! flag + remaining buffers + pgid, request, done = used buffers + bank +
//! flags, chunk info) and a byte flag; peers write them by AOTF only. Both
//! orders are supported: **receiver first** (the grant is waiting when the
//! sender arrives, data goes at once) and **sender first** (the sender
//! announces, the receiver grants when it gets there). Messages of at most
//! 464 bytes go by one BOTF packet into the receiver's LLCM; longer ones
//! are PUSHed into the receiver's SO-DIMM buffers, and a message that does
//! not fit the granted buffers is split, each further chunk sent under a
//! new grant. Completion is an AOTF. [`DimmEndpoint::poll`] reports which peer
//! has a message waiting, and its length. The words are documented in the
//! `flags` module and `send_recv` module docs.
//!
//! `send` and `recv` wait. Their resumable halves never do:
//! [`DimmEndpoint::send_start`] announces a message and [`DimmEndpoint::send_step`]
//! sends a chunk for each grant that is there (the message may be given as
//! several slices, e.g. a header and a payload); [`DimmEndpoint::recv_start`]
//! grants and [`DimmEndpoint::recv_step`] takes each chunk that arrived. A
//! single-threaded caller (an MPI transport) interleaves them so that a
//! node waiting for a grant keeps receiving, and two nodes sending each
//! other large messages cannot deadlock.
//!
//! # The Fagus barrier
//!
//! [`Barrier`]: SYNC_ENTRY (AOTF from each node into node 0's LLCM) and
//! SYNC_PERMIT (AOTF from node 0 to each node), with growing epochs so no
//! word is ever reset. [`AllToAllBarrier`] is the baseline we put in the
//! place of the paper's `_expBarrier` (whose algorithm it does not
//! describe): every node AOTFs its arrival to every other, one leg.
//!
//! # Fagus's datagrams
//!
//! [`Datagrams`] are `dimmnet_sendto`/`dimmnet_recvfrom` (Fagus §4.1): the
//! data into the receiver's SO-DIMM, an AOTF notice into its LLCM, and a
//! bank switch at the receiver before it reads. Arrival is detected inline
//! ([`Datagrams::recvfrom`]) or by a spinning thread ([`Detector`]), the
//! two methods of Fagus's Table 1.
//!
//! # Waiting and failures
//!
//! Every wait goes through [`WaitPolicy`]: spin with
//! [`std::hint::spin_loop`], then `yield_now`, then short sleeps, and give
//! up at a deadline (10 s by default) with [`Error::Timeout`] naming the
//! node and the word it waited for.
//! Where a deadline is too blunt, [`Heartbeat`] and [`PeerWatch`] tell a
//! live peer from one that left (it stores a "left" word when dropped) or
//! died (its heartbeat thread stopped), in the `liveness` module. A peer that dies mid-protocol thus
//! costs its partners a timeout, never a hang. Every field read from
//! shared memory that a peer wrote (lengths, buffer counts, banks, window
//! headers, the bank-select word) is checked before use and refused as
//! [`Error::Corrupt`]; every access goes through bounds-checked accessors
//! limited to the right node's LLCM or bank, so a peer cannot make this
//! node write outside its buffers.
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//! use o2g_dimmnet::{Config, DimmEndpoint, Nic};
//!
//! let name = format!("o2g-dimmnet-doc-{}", std::process::id());
//! let region = Nic::create_shm(&name, Config::new(2)).unwrap();
//! o2g_nicmem::Region::unlink_shm(&name).unwrap();
//! let mut a = DimmEndpoint::new(Nic::attach(Arc::clone(&region), 0).unwrap(), 1).unwrap();
//! let mut b = DimmEndpoint::new(Nic::attach(region, 1).unwrap(), 1).unwrap();
//! b.prepost(0).unwrap(); // receiver first
//! a.send(1, b"hello").unwrap();
//! let mut buf = [0u8; 16];
//! assert_eq!(b.recv(0, &mut buf).unwrap(), 5);
//! assert_eq!(&buf[..5], b"hello");
//! ```

mod all_to_all_barrier;
mod aotf;
mod bank;
mod barrier;
mod botf;
mod core_pu;
pub mod costs;
pub mod datagram;
mod error;
mod flags;
mod gather;
pub mod layout;
mod liveness;
mod nic;
mod rdma;
mod send_recv;
mod vclock;
mod wait;

pub use all_to_all_barrier::AllToAllBarrier;
pub use barrier::Barrier;
pub use costs::{Costs, Ps};
pub use datagram::{Datagrams, Detector};
pub use error::{Error, Result};
pub use layout::{Config, Layout};
pub use liveness::{Heartbeat, Liveness, PeerWatch, LEFT};
pub use nic::{Ack, Nic};
pub use rdma::NicAddr;
pub use send_recv::{DimmEndpoint, RecvOp, SendOp, Stats};
pub use wait::WaitPolicy;

#[cfg(test)]
mod test_util;
