//! `MPI_Bcast` (§6.4).

use super::TAG_BCAST;
use crate::communicator::Communicator;
use crate::datatype::{as_bytes_mut, Equivalence};
use crate::error::Result;

impl Communicator {
    /// `MPI_Bcast` (§6.4): `buf` of `root` is copied into `buf` of every
    /// member. Every member passes a buffer of the same length.
    ///
    /// # Errors
    ///
    /// Invalid root, length disagreement, dead peers.
    pub fn broadcast_into<T: Equivalence>(&self, buf: &mut [T], root: i32) -> Result<()> {
        let root = self.check_root(root)?;
        let (p, r) = self.p_r();
        let bytes = as_bytes_mut(buf);
        let rel = (r + p - root) % p;
        let mut mask = 1;
        while mask < p {
            if rel & mask != 0 {
                self.crecv(bytes, (rel - mask + root) % p, TAG_BCAST)?;
                break;
            }
            mask <<= 1;
        }
        mask >>= 1;
        while mask > 0 {
            if rel + mask < p {
                self.csend(bytes, (rel + mask + root) % p, TAG_BCAST)?;
            }
            mask >>= 1;
        }
        Ok(())
    }
}
