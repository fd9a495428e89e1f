//! AOTF, atomic on-the-fly sending: 1–8 bytes stored into a remote LLCM.
//!
//! On the card the host makes one store to an address window; the address
//! selects a header seed (the destination) and the remote LLCM offset, the
//! stored data is the payload, and the NIC turns that single store into a
//! packet. Here the issuing thread performs the remote store itself, as one
//! atomic operation on the destination's LLCM:
//!
//! - the `n` bytes at LLCM offset `o` must lie inside one naturally aligned
//!   8-byte word (`o / 8 == (o + n - 1) / 8`), otherwise the store is
//!   refused: the card would split it into two packets, and a reader could
//!   see half of it;
//! - 8 bytes at an 8-aligned offset are one `AtomicU64::store`, 4 bytes at a
//!   4-aligned offset one `AtomicU32::store`; other sizes are one
//!   compare-and-swap loop on the enclosing u64 that replaces just those
//!   bytes (little-endian), so neighbouring bytes written by other nodes at
//!   the same time are kept;
//! - every store has `Release` ordering.
//!
//! **Ordering.** AOTF stores from one issuer to one node arrive in issue
//! order: the emulated packet is in the destination's memory before the
//! issuing call returns (there is no queue that could reorder), and each
//! store is a `Release`, so a reader that observes a later store with an
//! `Acquire` load also observes every earlier AOTF (and every BOTF or PUSH
//! payload) the issuer completed before it. That is the property the
//! protocols rely on: "data, then flag" needs no fence beyond the AOTF
//! itself. Stores from *different* threads are ordered only as far as those
//! threads' own synchronisation orders them, as stores from different CPUs
//! into the card would be.

use std::sync::atomic::Ordering;

use o2g_nicmem::Region;

use crate::error::{Error, Result};
use crate::nic::Nic;

impl Nic {
    /// Stores `bytes` (1–8 of them, inside one aligned 8-byte word) at
    /// offset `off` of `dest`'s LLCM as one atomic store.
    ///
    /// # Errors
    ///
    /// [`Error::NotSeeded`] without a header seed for `dest`;
    /// [`Error::BadArgument`] for a size or offset the rule above refuses.
    pub fn aotf(&self, dest: u32, off: usize, bytes: &[u8]) -> Result<()> {
        self.seeded(dest)?;
        let n = bytes.len();
        if n == 0 || n > 8 || off % 8 + n > 8 {
            return Err(Error::BadArgument(format!(
                "AOTF of {n} bytes at LLCM offset {off:#x}: 1-8 bytes inside one aligned 8-byte word"
            )));
        }
        let at = self.llcm_range(dest, off, n)?;
        let ready = self.host(|c| c.uc_store)?;
        if let Some(f) = self.fly(self.node, dest, ready, n)? {
            self.stamp_llcm(dest, off, n, f.landed)?;
        }
        store_atomic(&self.region, at, bytes)
    }

    /// AOTF of a little-endian u64 at an 8-aligned offset.
    ///
    /// # Errors
    ///
    /// As [`Nic::aotf`].
    pub fn aotf_u64(&self, dest: u32, off: usize, v: u64) -> Result<()> {
        self.aotf(dest, off, &v.to_le_bytes())
    }

    /// AOTF of a little-endian u32 at a 4-aligned offset.
    ///
    /// # Errors
    ///
    /// As [`Nic::aotf`].
    pub fn aotf_u32(&self, dest: u32, off: usize, v: u32) -> Result<()> {
        self.aotf(dest, off, &v.to_le_bytes())
    }

    /// AOTF of one byte.
    ///
    /// # Errors
    ///
    /// As [`Nic::aotf`].
    pub fn aotf_u8(&self, dest: u32, off: usize, v: u8) -> Result<()> {
        self.aotf(dest, off, &[v])
    }
}

/// One atomic store of `bytes` at region offset `at` (already checked to
/// lie in one aligned 8-byte word).
pub(crate) fn store_atomic(region: &Region, at: usize, bytes: &[u8]) -> Result<()> {
    let n = bytes.len();
    if n == 8 {
        let v = u64::from_le_bytes(bytes.try_into().expect("8 bytes"));
        region.u64_at(at)?.store(v, Ordering::Release);
    } else if n == 4 && at % 4 == 0 {
        let v = u32::from_le_bytes(bytes.try_into().expect("4 bytes"));
        region.u32_at(at)?.store(v, Ordering::Release);
    } else {
        let word = region.u64_at(at & !7)?;
        let shift = 8 * (at % 8);
        let mut val = [0u8; 8];
        val[..n].copy_from_slice(bytes);
        let val = u64::from_le_bytes(val) << shift;
        let mask = (u64::MAX >> (64 - 8 * n)) << shift;
        // Never fails: the closure always returns Some.
        let _ = word.fetch_update(Ordering::Release, Ordering::Relaxed, |old| {
            Some((old & !mask) | val)
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use super::*;
    use crate::layout::LLCM_USER;
    use crate::test_util::fabric;

    #[test]
    fn every_size_lands_and_keeps_its_neighbours() {
        let (_r, nics) = fabric(2);
        let w = LLCM_USER;
        nics[1]
            .llcm_u64(w)
            .unwrap()
            .store(u64::MAX, Ordering::Release);
        nics[0].aotf(1, w + 1, &[0xaa, 0xbb]).unwrap();
        nics[0].aotf_u8(1, w + 7, 0x11).unwrap();
        let v = nics[1].llcm_u64(w).unwrap().load(Ordering::Acquire);
        assert_eq!(
            v.to_le_bytes(),
            [0xff, 0xaa, 0xbb, 0xff, 0xff, 0xff, 0xff, 0x11]
        );
        nics[0].aotf_u32(1, w + 4, 0x0403_0201).unwrap();
        let v = nics[1].llcm_u64(w).unwrap().load(Ordering::Acquire);
        assert_eq!(v.to_le_bytes(), [0xff, 0xaa, 0xbb, 0xff, 1, 2, 3, 4]);
        nics[0].aotf_u64(1, w, 7).unwrap();
        assert_eq!(nics[1].llcm_u64(w).unwrap().load(Ordering::Acquire), 7);
        nics[0].aotf(1, w + 2, &[9; 5]).unwrap();
        let mut b = [0u8; 8];
        nics[1].llcm_read(w, &mut b).unwrap();
        assert_eq!(b, [7, 0, 9, 9, 9, 9, 9, 0]);
    }

    #[test]
    fn sizes_and_places_outside_the_rule_are_refused() {
        let (_r, nics) = fabric(2);
        for (off, n) in [
            (LLCM_USER, 0),
            (LLCM_USER, 9),
            (LLCM_USER + 6, 4),
            (LLCM_USER + 1, 8),
        ] {
            let e = nics[0].aotf(1, off, &vec![1; n]).unwrap_err();
            assert!(matches!(e, Error::BadArgument(_)), "{off} {n}: {e}");
        }
        // The last word of the LLCM is fine; one past it is not.
        nics[0]
            .aotf_u64(1, crate::layout::LLCM_SIZE - 8, 1)
            .unwrap();
        assert!(nics[0].aotf_u8(1, crate::layout::LLCM_SIZE, 1).is_err());
        assert!(matches!(
            nics[0].aotf_u8(2, 0, 1),
            Err(Error::BadArgument(_))
        ));
    }

    #[test]
    fn an_unseeded_destination_is_refused() {
        let (r, _nics) = fabric(2);
        let fresh = Nic::attach(r, 0).unwrap();
        // `fabric` seeded node 0 already; clear node 0's seed for node 1.
        fresh
            .region()
            .u64_at(fresh.layout().seed_word(0, 1))
            .unwrap()
            .store(0, Ordering::Release);
        assert!(matches!(
            fresh.aotf_u8(1, LLCM_USER, 1),
            Err(Error::NotSeeded(1))
        ));
    }

    #[test]
    fn stores_from_one_issuer_arrive_in_order() {
        // The issuer writes data words, then a counter; the reader that sees
        // counter k must see every data word up to k.
        let (_r, nics) = fabric(2);
        let [a, b]: [Nic; 2] = nics.try_into().unwrap();
        const N: u64 = 20_000;
        let w = LLCM_USER;
        std::thread::scope(|s| {
            s.spawn(|| {
                for k in 1..=N {
                    a.aotf_u64(1, w + 8 * (k as usize % 64) + 8, k).unwrap();
                    a.aotf_u64(1, w, k).unwrap();
                }
            });
            let mut seen = 0;
            let start = std::time::Instant::now();
            while seen < N {
                assert!(
                    start.elapsed().as_secs() < 60,
                    "the writer stopped at {seen}"
                );
                let k = b.llcm_u64(w).unwrap().load(Ordering::Acquire);
                assert!(k >= seen);
                if k > 0 {
                    let d = b
                        .llcm_u64(w + 8 * (k as usize % 64) + 8)
                        .unwrap()
                        .load(Ordering::Acquire);
                    assert!(d >= k, "counter {k} seen before its data word ({d})");
                }
                seen = k;
            }
        });
    }
}
