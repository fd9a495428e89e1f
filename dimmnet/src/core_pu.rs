//! Interrupt AOTF: an AOTF with an undefined command, which the
//! destination card hands to its core PU (the embedded processor of
//! Martini) instead of writing it into the LLCM itself.
//!
//! The DIMMnet-1 paper (§5.1) proposes it for registering with a peer
//! dynamically: the core PU's handler increments the count at the head of
//! a list in the LLCM, works out from it where the new entry goes, and
//! writes the entry there. Here a list is
//!
//! ```text
//! +0        u64  number of entries
//! +8 * (1+i) u64  entry i
//! ```
//!
//! at an 8-aligned LLCM offset of the destination, with a capacity both
//! sides agree on. The owner reads the count, then the entries below it,
//! and may empty the list by storing 0 into the count once it has taken
//! them and before anyone appends again (it owns the protocol on top).
//!
//! Emulation: the issuing thread runs the handler. The core PU runs one
//! handler at a time, so the handler holds a lock word in the destination's
//! model page while it works; the entry is written before the count
//! (`Release`), so a reader that sees the count sees its entries.
//!
//! Time: the packet flies as any AOTF; on the destination card the core
//! PU takes it once free and spends [`crate::Costs::core_interrupt`]; the
//! count and the entry are stamped with the end of the handler.

use std::sync::atomic::Ordering;

use crate::error::{Error, Result};
use crate::nic::Nic;

impl Nic {
    /// Appends `value` to the list at LLCM offset `list` of `dest`, of
    /// `capacity` entries, through the destination's core PU. Returns the
    /// entry's index.
    ///
    /// # Errors
    ///
    /// [`Error::NotSeeded`]; [`Error::BadArgument`] for a list that is not
    /// 8-aligned or leaves the LLCM; [`Error::ListFull`] when the list
    /// holds `capacity` entries (nothing is written);
    /// [`Error::Corrupt`] for a count above the capacity;
    /// [`Error::Timeout`] if the core PU stays busy (a handler's issuer
    /// died holding it).
    pub fn aotf_interrupt(
        &self,
        dest: u32,
        list: usize,
        capacity: usize,
        value: u64,
    ) -> Result<usize> {
        self.seeded(dest)?;
        let bytes = capacity
            .checked_add(1)
            .and_then(|n| n.checked_mul(8))
            .ok_or_else(|| Error::BadArgument(format!("list of {capacity} entries")))?;
        if list % 8 != 0 {
            return Err(Error::BadArgument(format!(
                "list at LLCM offset {list:#x}: not 8-aligned"
            )));
        }
        let at = self.llcm_range(dest, list, bytes)?;
        let lock = self
            .region
            .u64_at(self.layout.model_word(dest, crate::vclock::CORE_PU_LOCK))?;
        self.wait.wait(
            || format!("node {dest}'s core PU to finish another handler"),
            || {
                Ok(lock
                    .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
                    .then_some(()))
            },
        )?;
        let result = self.run_handler(dest, list, at, capacity, value);
        lock.store(0, Ordering::Release);
        result
    }

    /// The handler, with the core PU held.
    fn run_handler(
        &self,
        dest: u32,
        list: usize,
        at: usize,
        capacity: usize,
        value: u64,
    ) -> Result<usize> {
        let count = self.region.u64_at(at)?;
        let n = count.load(Ordering::Acquire);
        let i = usize::try_from(n)
            .ok()
            .filter(|&i| i <= capacity)
            .ok_or(Error::Corrupt {
                node: dest,
                field: "interrupt list count",
                value: n,
            })?;
        if i == capacity {
            return Err(Error::ListFull {
                node: dest,
                capacity,
            });
        }
        let ready = self.host(|c| c.uc_store)?;
        if let (Some(c), Some(f)) = (self.costs, self.fly(self.node, dest, ready, 8)?) {
            let done = self.core_pu(dest, f.at_card, c.core_interrupt)?;
            self.stamp_llcm(dest, list, 8, done)?;
            self.stamp_llcm(dest, list + 8 * (1 + i), 8, done)?;
        }
        self.region
            .u64_at(at + 8 * (1 + i))?
            .store(value, Ordering::Release);
        count.store(n + 1, Ordering::Release);
        Ok(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::LLCM_USER;
    use crate::test_util::fabric;

    #[test]
    fn entries_append_in_order_until_the_list_is_full() {
        let (_r, nics) = fabric(3);
        assert_eq!(nics[1].aotf_interrupt(0, LLCM_USER, 2, 11).unwrap(), 0);
        assert_eq!(nics[2].aotf_interrupt(0, LLCM_USER, 2, 22).unwrap(), 1);
        let e = nics[1].aotf_interrupt(0, LLCM_USER, 2, 33).unwrap_err();
        assert!(
            matches!(
                e,
                Error::ListFull {
                    node: 0,
                    capacity: 2
                }
            ),
            "{e}"
        );
        let mut words = [0u8; 32];
        nics[0].llcm_read(LLCM_USER, &mut words).unwrap();
        let w = |k: usize| u64::from_le_bytes(words[8 * k..8 * k + 8].try_into().unwrap());
        assert_eq!((w(0), w(1), w(2), w(3)), (2, 11, 22, 0));
    }

    #[test]
    fn bad_lists_and_counts_are_refused() {
        let (_r, nics) = fabric(2);
        for (list, cap) in [
            (LLCM_USER + 4, 1),
            (crate::layout::LLCM_SIZE - 8, 1),
            (0, usize::MAX),
        ] {
            let e = nics[0].aotf_interrupt(1, list, cap, 1).unwrap_err();
            assert!(matches!(e, Error::BadArgument(_)), "{list} {cap}: {e}");
        }
        nics[1]
            .llcm_u64(LLCM_USER)
            .unwrap()
            .store(9, Ordering::Release);
        let e = nics[0].aotf_interrupt(1, LLCM_USER, 4, 1).unwrap_err();
        assert!(matches!(e, Error::Corrupt { .. }), "{e}");
    }
}
