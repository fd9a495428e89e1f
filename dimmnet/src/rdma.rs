//! RDMA: PUSH (local NIC memory → remote NIC memory) and PULL (remote →
//! local), each completing by incrementing an ACK word of the issuer.
//!
//! Either side of a transfer is an address in NIC memory, [`NicAddr`]:
//! the LLCM (reachable from host and network at once) or the SO-DIMM
//! bank that faces the network at the time of the transfer. A transfer
//! that touches an SO-DIMM takes a hold on that node's bank arbiter (see
//! the bank module), so a bank switch never swaps a bank under a copy.
//!
//! Emulation: the issuing thread performs the copy with
//! [`o2g_nicmem::Region::copy_within`] (the DMA engine) and then bumps the
//! ACK word with `Release`, so a thread that sees the ACK (with `Acquire`)
//! sees the data. The operation has therefore completed when `push` or
//! `pull` returns; [`crate::Nic::wait_ack`] exists so callers are written
//! for a card that completes later.
//!
//! Time: the host writes the command (uncached stores); the source card's
//! DMA engine starts after its set-up time (a PULL first sends a request
//! packet to it), reads the data at memory speed and sends it in RDMA
//! packets; a PUSH's ACK is a packet back from the destination card, a
//! PULL's is local once the last packet landed. The ACK word's stamp is
//! that time, and [`crate::Nic::wait_ack`] catches up with it.

use std::sync::atomic::Ordering;

use crate::bank::DmaHold;
use crate::costs::Ps;
use crate::error::Result;
use crate::gather::Gather;
use crate::layout::{LLCM_STAGING, STAGING_SIZE};
use crate::nic::{Ack, Nic};
use crate::vclock::Flight;

/// An address in one node's NIC memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NicAddr {
    /// Byte offset in the LLCM.
    Llcm(usize),
    /// Byte offset in the SO-DIMM bank facing the network.
    Dimm(usize),
}

impl Nic {
    /// PUSH: copies `len` bytes from this node's `src` to `dest`'s `dst`,
    /// then increments this node's ACK word `ack_slot`.
    ///
    /// # Errors
    ///
    /// A range outside its memory, a bad node or slot
    /// ([`crate::Error::BadArgument`]), or [`crate::Error::Timeout`] if a
    /// bank switch on either side never finishes.
    pub fn push(
        &self,
        dest: u32,
        src: NicAddr,
        dst: NicAddr,
        len: usize,
        ack_slot: usize,
    ) -> Result<Ack> {
        self.transfer((self.node, src), (dest, dst), len, ack_slot)
    }

    /// PULL: copies `len` bytes from `from`'s `src` to this node's `dst`,
    /// then increments this node's ACK word `ack_slot`.
    ///
    /// # Errors
    ///
    /// As [`Nic::push`].
    pub fn pull(
        &self,
        from: u32,
        src: NicAddr,
        dst: NicAddr,
        len: usize,
        ack_slot: usize,
    ) -> Result<Ack> {
        self.transfer((from, src), (self.node, dst), len, ack_slot)
    }

    fn transfer(
        &self,
        (sn, src): (u32, NicAddr),
        (dn, dst): (u32, NicAddr),
        len: usize,
        ack_slot: usize,
    ) -> Result<Ack> {
        let ack = self.ack_word(ack_slot)?;
        self.check_node(sn)?;
        self.check_node(dn)?;
        // Check both ranges before touching any arbiter.
        self.resolve(sn, src, 0, len)?;
        self.resolve(dn, dst, 0, len)?;
        self.charge_transfer(sn, dn, dst, len, ack_slot)?;
        let (holds, dst_bank) = self.wait.wait(
            || format!("the SO-DIMM banks of nodes {sn} and {dn} to accept a transfer"),
            || self.take_holds((sn, src), (dn, dst)),
        )?;
        let from = self.resolve(sn, src, holds.0.as_ref().map_or(0, |h| h.bank), len)?;
        let to = self.resolve(dn, dst, dst_bank.unwrap_or(0), len)?;
        self.region.copy_within(from, to, len)?;
        drop(holds);
        let seq = ack.fetch_add(1, Ordering::Release) + 1;
        Ok(Ack {
            slot: ack_slot,
            seq,
            dst_bank,
        })
    }

    /// The model of a PUSH (`sn` is this node) or PULL (`dn` is).
    fn charge_transfer(
        &self,
        sn: u32,
        dn: u32,
        dst: NicAddr,
        len: usize,
        ack_slot: usize,
    ) -> Result<()> {
        let Some(c) = self.costs else {
            return Ok(());
        };
        let ready = self.host(|c| c.command())?;
        let start = if sn == self.node {
            ready + c.dma_setup
        } else {
            let request = self.fly(self.node, sn, ready, 0)?;
            request.map_or(ready, |f| f.at_card) + c.dma_setup
        };
        let Some(last) = self.stream(sn, dn, start, len)? else {
            return Ok(());
        };
        self.stamp_addr(dn, dst, len, last.landed)?;
        let acked = if sn == self.node {
            self.fly(dn, sn, last.landed, 0)?
                .map_or(last.landed, |f| f.landed)
        } else {
            last.landed
        };
        self.stamp_ack(ack_slot, acked)
    }

    /// `len` bytes from `sn`'s card to `dn`'s memory in RDMA packets, the
    /// DMA engine starting at `start` and reading each packet's payload
    /// before it leaves. The last packet's flight (`None` unmodelled).
    fn stream(&self, sn: u32, dn: u32, start: Ps, len: usize) -> Result<Option<Flight>> {
        let Some(c) = self.costs else {
            return Ok(None);
        };
        let (mut t, mut sent) = (start, 0);
        loop {
            // At least a byte per packet: a zero limit must not loop.
            let piece = (len - sent).min(c.rdma_packet.max(1));
            t += c.mem_per_byte * piece as Ps;
            let flight = self.fly(sn, dn, t, piece)?;
            sent += piece;
            if sent >= len {
                return Ok(flight);
            }
        }
    }

    /// The model of DIMM_Send's PUSH of `len` bytes from the host: per
    /// staging piece the host writes the piece (write combining, once the
    /// card has sent the previous one out of the staging area) and the
    /// command; then, as the paper's DIMM_Send does (§2.8), the host waits
    /// for the ACK before it reports the chunk.
    fn charge_push_from_host(&self, dest: u32, len: usize) -> Result<()> {
        let Some(c) = self.costs else {
            return Ok(());
        };
        let mut last = None;
        let mut done = 0;
        while done < len {
            let piece = (len - done).min(STAGING_SIZE);
            let free = self.staging_free()?.load(Ordering::Acquire);
            let ready = self.host_after(free, |c| c.wc_write(piece) + c.command())?;
            last = self.stream(self.node, dest, ready + c.dma_setup, piece)?;
            if let Some(f) = last {
                self.staging_free()?.fetch_max(f.left, Ordering::AcqRel);
            }
            done += piece;
        }
        if let Some(f) = last {
            self.stamp_bank(dest, f.landed)?;
            let ack = self.fly(dest, self.node, f.landed, 0)?;
            self.host_after(ack.map_or(f.landed, |a| a.landed), |c| c.uc_load)?;
        }
        Ok(())
    }

    /// Holds for both sides' network banks (when they are SO-DIMM), or
    /// `None` if either has a switch pending: then nothing is held, so two
    /// nodes switching while they transfer to each other cannot deadlock.
    #[allow(clippy::type_complexity)]
    fn take_holds(
        &self,
        (sn, src): (u32, NicAddr),
        (dn, dst): (u32, NicAddr),
    ) -> Result<Option<((Option<DmaHold<'_>>, Option<DmaHold<'_>>), Option<u32>)>> {
        let s = match src {
            NicAddr::Dimm(_) => match self.try_dma_hold(sn)? {
                Some(h) => Some(h),
                None => return Ok(None),
            },
            NicAddr::Llcm(_) => None,
        };
        let d = match dst {
            NicAddr::Dimm(_) => match self.try_dma_hold(dn)? {
                Some(h) => Some(h),
                None => return Ok(None),
            },
            NicAddr::Llcm(_) => None,
        };
        let bank = d.as_ref().map(|h| h.bank);
        Ok(Some(((s, d), bank)))
    }

    /// PUSH of host data of any length into `dest`'s network-facing bank
    /// at `dst_off`, staged through this node's LLCM staging area in
    /// pieces. The data is the gathered range `[from, from + len)` of
    /// `parts` (see [`Gather`]). The whole chunk lands in one bank (the
    /// hold is taken once), which is returned. This is what DIMM_Send uses;
    /// the staging area belongs to it.
    pub(crate) fn push_from_host(
        &self,
        dest: u32,
        dst_off: usize,
        parts: Gather<'_>,
        from: usize,
        len: usize,
    ) -> Result<u32> {
        self.bank_range(dest, 0, dst_off, len)?;
        self.charge_push_from_host(dest, len)?;
        let hold = self.wait.wait(
            || format!("node {dest}'s SO-DIMM bank switch to finish"),
            || self.try_dma_hold(dest),
        )?;
        let stage = self.llcm_range(self.node, LLCM_STAGING, STAGING_SIZE)?;
        let base = self.bank_range(dest, hold.bank, dst_off, len)?;
        let mut done = 0;
        while done < len {
            let piece = (len - done).min(STAGING_SIZE);
            let mut at = 0;
            parts.for_each(from + done, piece, |bytes| {
                self.region.write(stage + at, bytes)?;
                at += bytes.len();
                Ok(())
            })?;
            self.region.copy_within(stage, base + done, piece)?;
            done += piece;
        }
        Ok(hold.bank)
    }

    fn resolve(&self, node: u32, a: NicAddr, bank: u32, len: usize) -> Result<usize> {
        match a {
            NicAddr::Llcm(off) => self.llcm_range(node, off, len),
            NicAddr::Dimm(off) => self.bank_range(node, bank, off, len),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::layout::{LLCM_SIZE, LLCM_USER};
    use crate::test_util::fabric;

    #[test]
    fn push_lands_in_the_remote_network_bank_and_acks() {
        let (_r, nics) = fabric(2);
        let data: Vec<u8> = (0..10_000u32).map(|i| i as u8 ^ 0x5a).collect();
        nics[0].llcm_write(LLCM_USER, &data).unwrap();
        let ack = nics[0]
            .push(
                1,
                NicAddr::Llcm(LLCM_USER),
                NicAddr::Dimm(4096),
                data.len(),
                3,
            )
            .unwrap();
        assert_eq!(ack.seq, 1);
        assert_eq!(ack.dst_bank, Some(1));
        nics[0].wait_ack(ack).unwrap();
        assert_eq!(nics[0].ack_value(3).unwrap(), 1);
        // The host of node 1 sees it only after a bank switch.
        let mut out = vec![0u8; data.len()];
        nics[1].dimm_read(4096, &mut out).unwrap();
        assert!(out.iter().all(|&b| b == 0));
        nics[1].switch_banks().unwrap();
        nics[1].dimm_read(4096, &mut out).unwrap();
        assert_eq!(out, data);
    }

    #[test]
    fn pull_fetches_remote_memory() {
        let (_r, nics) = fabric(2);
        nics[1]
            .llcm_write(LLCM_USER + 100, b"remote bytes")
            .unwrap();
        let ack = nics[0]
            .pull(
                1,
                NicAddr::Llcm(LLCM_USER + 100),
                NicAddr::Llcm(LLCM_USER),
                12,
                0,
            )
            .unwrap();
        nics[0].wait_ack(ack).unwrap();
        let mut out = [0u8; 12];
        nics[0].llcm_read(LLCM_USER, &mut out).unwrap();
        assert_eq!(&out, b"remote bytes");
        assert_eq!(ack.dst_bank, None);
        // DIMM to DIMM: node 1's network bank into node 0's network bank.
        nics[1].dimm_write(0, b"x").unwrap();
        nics[1].switch_banks().unwrap();
        let ack = nics[0]
            .pull(1, NicAddr::Dimm(0), NicAddr::Dimm(8), 1, 1)
            .unwrap();
        assert_eq!(ack.dst_bank, Some(1));
        nics[0].switch_banks().unwrap();
        let mut b = [0u8];
        nics[0].dimm_read(8, &mut b).unwrap();
        assert_eq!(&b, b"x");
    }

    #[test]
    fn ranges_outside_nic_memory_are_refused_before_any_copy() {
        let (_r, nics) = fabric(2);
        let bank = nics[0].layout().config().bank_size;
        let cases = [
            (NicAddr::Llcm(LLCM_SIZE - 4), NicAddr::Dimm(0), 8),
            (NicAddr::Llcm(0), NicAddr::Dimm(bank - 4), 8),
            (NicAddr::Llcm(0), NicAddr::Llcm(usize::MAX), 1),
        ];
        for (src, dst, len) in cases {
            let e = nics[0].push(1, src, dst, len, 0).unwrap_err();
            assert!(matches!(e, Error::BadArgument(_)), "{e}");
        }
        assert!(nics[0]
            .push(1, NicAddr::Llcm(0), NicAddr::Llcm(0), 1, 99)
            .is_err());
        assert_eq!(nics[0].ack_value(0).unwrap(), 0);
    }
}
