//! BOTF, block on-the-fly sending: up to 464 bytes per packet.
//!
//! The host writes a 48-byte header and up to 464 bytes of payload into one
//! of its two 512-byte send windows, then writes the window's kick address.
//! The NIC reads the header, checks it, and sends the payload, which the
//! destination NIC writes into its LLCM (OTF receive). Longer data goes as
//! a train of packets that alternate between the two windows, so the host
//! can fill one while the NIC drains the other.
//!
//! Emulation: the kick is executed by the issuing thread. It re-reads the
//! header from the window (as the card would; the window is shared memory
//! that another handle of the node could have scribbled on), validates
//! destination, length and offset, copies the payload window → remote LLCM
//! with one `copy_within`, and frees the window. Because the kick completes
//! before the call returns, a later AOTF to the same node orders after the
//! payload (see the AOTF module).
//!
//! Time: the host's write-combined stores of header and payload and the
//! kick, then the packet's flight (the `vclock` module). With two windows
//! the host fills one while the card sends the other; it waits for a
//! window only until the card has sent what it held.
//!
//! Window header (little-endian):
//!
//! ```text
//! +0  u32  destination node
//! +4  u32  payload length (0..=464)
//! +8  u64  destination LLCM offset
//! +16 ...  reserved (zero)
//! ```

use std::sync::atomic::Ordering;

use crate::error::{Error, Result};
use crate::layout::{BOTF_HEADER, BOTF_MAX_PAYLOAD};
use crate::nic::Nic;

impl Nic {
    /// Sends one BOTF packet of at most 464 bytes to LLCM offset `off` of
    /// `dest`.
    ///
    /// # Errors
    ///
    /// [`Error::NotSeeded`], a payload over 464 bytes or a destination
    /// range outside the LLCM ([`Error::BadArgument`]), or
    /// [`Error::Timeout`] if the window stays busy (another handle of this
    /// node died while holding it).
    pub fn botf_packet(&self, dest: u32, off: usize, payload: &[u8]) -> Result<()> {
        if payload.len() > BOTF_MAX_PAYLOAD {
            return Err(Error::BadArgument(format!(
                "BOTF packet of {} bytes (at most {BOTF_MAX_PAYLOAD})",
                payload.len()
            )));
        }
        self.seeded(dest)?;
        self.llcm_range(dest, off, payload.len())?;
        let w = self.next_window.fetch_add(1, Ordering::Relaxed) % 2;
        let busy = self.region.u32_at(self.layout.window_busy(self.node, w))?;
        self.wait.wait(
            || format!("node {}'s BOTF window {w} to be free", self.node),
            || {
                Ok(busy
                    .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
                    .then_some(()))
            },
        )?;
        let result = self
            .charge_packet(w, dest, off, payload.len())
            .and_then(|()| self.fill_and_kick(w, dest, off, payload));
        busy.store(0, Ordering::Release);
        result
    }

    /// The model of one packet through window `w`: the host waits until
    /// the card has sent the window's previous packet, writes header and
    /// payload through write combining and kicks; the window is free again
    /// once the packet has left.
    fn charge_packet(&self, w: usize, dest: u32, off: usize, len: usize) -> Result<()> {
        if self.costs.is_none() {
            return Ok(());
        }
        let free = self.window_free(w)?.load(Ordering::Acquire);
        let ready = self.host_after(free, |c| c.wc_write(BOTF_HEADER + len) + c.uc_store)?;
        if let Some(f) = self.fly(self.node, dest, ready, len)? {
            self.window_free(w)?.fetch_max(f.left, Ordering::AcqRel);
            self.stamp_llcm(dest, off, len, f.landed)?;
        }
        Ok(())
    }

    /// Sends `data` of any length to LLCM offset `off` of `dest` as a train
    /// of BOTF packets (alternating windows), payload `i` landing at
    /// `off + 464 * i`.
    ///
    /// # Errors
    ///
    /// As [`Nic::botf_packet`]; the whole range is checked before the first
    /// packet leaves.
    pub fn botf(&self, dest: u32, off: usize, data: &[u8]) -> Result<()> {
        self.seeded(dest)?;
        self.llcm_range(dest, off, data.len())?;
        for (i, chunk) in data.chunks(BOTF_MAX_PAYLOAD).enumerate() {
            self.botf_packet(dest, off + i * BOTF_MAX_PAYLOAD, chunk)?;
        }
        Ok(())
    }

    fn fill_and_kick(&self, w: usize, dest: u32, off: usize, payload: &[u8]) -> Result<()> {
        let win = self.layout.window(self.node, w);
        let mut header = [0u8; BOTF_HEADER];
        header[0..4].copy_from_slice(&dest.to_le_bytes());
        header[4..8].copy_from_slice(&(payload.len() as u32).to_le_bytes());
        header[8..16].copy_from_slice(&(off as u64).to_le_bytes());
        self.region.write(win, &header)?;
        self.region.write(win + BOTF_HEADER, payload)?;
        self.kick(w)
    }

    /// The NIC side of a kick: read the window's header, check it, deliver.
    fn kick(&self, w: usize) -> Result<()> {
        let win = self.layout.window(self.node, w);
        let mut h = [0u8; 16];
        self.region.read(win, &mut h)?;
        let dest = u32::from_le_bytes(h[0..4].try_into().expect("4"));
        let len = u32::from_le_bytes(h[4..8].try_into().expect("4")) as usize;
        let off = u64::from_le_bytes(h[8..16].try_into().expect("8"));
        let corrupt = |field, value| Error::Corrupt {
            node: self.node,
            field,
            value,
        };
        if len > BOTF_MAX_PAYLOAD {
            return Err(corrupt("BOTF window length", len as u64));
        }
        self.seeded(dest)
            .map_err(|_| corrupt("BOTF window destination", u64::from(dest)))?;
        let off = usize::try_from(off).map_err(|_| corrupt("BOTF window offset", off))?;
        let to = self
            .llcm_range(dest, off, len)
            .map_err(|_| corrupt("BOTF window offset", off as u64))?;
        self.region.copy_within(win + BOTF_HEADER, to, len)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::{LLCM_SIZE, LLCM_USER};
    use crate::test_util::fabric;

    #[test]
    fn a_train_of_packets_lands_in_the_remote_llcm() {
        let (_r, nics) = fabric(2);
        let data: Vec<u8> = (0..3000u32).map(|i| (i * 7 + 3) as u8).collect();
        nics[0].botf(1, LLCM_USER + 5, &data).unwrap();
        let mut out = vec![0u8; data.len()];
        nics[1].llcm_read(LLCM_USER + 5, &mut out).unwrap();
        assert_eq!(out, data);
        // Nothing spilled past the end.
        let mut after = [0u8; 8];
        nics[1]
            .llcm_read(LLCM_USER + 5 + data.len(), &mut after)
            .unwrap();
        assert_eq!(after, [0; 8]);
    }

    #[test]
    fn oversize_packets_and_ranges_past_the_llcm_are_refused() {
        let (_r, nics) = fabric(2);
        assert!(matches!(
            nics[0].botf_packet(1, LLCM_USER, &[0; 465]),
            Err(Error::BadArgument(_))
        ));
        assert!(nics[0].botf(1, LLCM_SIZE - 10, &[1; 11]).is_err());
        let mut tail = [0u8; 10];
        nics[1].llcm_read(LLCM_SIZE - 10, &mut tail).unwrap();
        assert_eq!(tail, [0; 10], "a refused train must send nothing");
        nics[0].botf(1, LLCM_SIZE - 10, &[1; 10]).unwrap();
    }

    #[test]
    fn the_kick_checks_a_scribbled_window_header() {
        let (r, nics) = fabric(2);
        let n = &nics[0];
        let win = n.layout().window(0, 0);
        // Header claiming 400 bytes at the last LLCM word of node 1.
        let mut h = [0u8; 16];
        h[0..4].copy_from_slice(&1u32.to_le_bytes());
        h[4..8].copy_from_slice(&400u32.to_le_bytes());
        h[8..16].copy_from_slice(&((LLCM_SIZE - 8) as u64).to_le_bytes());
        r.write(win, &h).unwrap();
        assert!(matches!(n.kick(0), Err(Error::Corrupt { .. })));
        h[4..8].copy_from_slice(&5000u32.to_le_bytes());
        h[8..16].copy_from_slice(&0u64.to_le_bytes());
        r.write(win, &h).unwrap();
        assert!(matches!(n.kick(0), Err(Error::Corrupt { .. })));
    }
}
