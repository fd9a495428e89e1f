//! `MPI_Reduce` (§6.9.1).

use super::{bad, TAG_REDUCE};
use crate::communicator::Communicator;
use crate::datatype::{as_bytes, as_bytes_mut, zeroed_vec, Equivalence};
use crate::error::Result;
use crate::operation::Operation;

impl Communicator {
    /// `MPI_Reduce` (§6.9.1): combines `send` of every member with `op`
    /// into `recv` of `root` (`recv` is required at the root only).
    ///
    /// # Errors
    ///
    /// Invalid root; a root `recv` whose length differs from `send`.
    pub fn reduce_into<T: Equivalence, O: Operation<T>>(
        &self,
        send: &[T],
        recv: Option<&mut [T]>,
        op: &O,
        root: i32,
    ) -> Result<()> {
        let root = self.check_root(root)?;
        let (p, r) = self.p_r();
        let n = send.len();
        if r == root && recv.as_ref().is_none_or(|b| b.len() != n) {
            return Err(bad(format!(
                "reduce: the root needs a receive buffer of {n}"
            )));
        }
        let rel = (r + p - root) % p;
        let mut acc = send.to_vec();
        let mut tmp: Vec<T> = zeroed_vec(n);
        let mut mask = 1;
        while mask < p {
            if rel & mask == 0 {
                let child = rel | mask;
                if child < p {
                    self.crecv(as_bytes_mut(&mut tmp), (child + root) % p, TAG_REDUCE)?;
                    op.apply(&tmp, &mut acc);
                }
            } else {
                self.csend(as_bytes(&acc), ((rel & !mask) + root) % p, TAG_REDUCE)?;
                break;
            }
            mask <<= 1;
        }
        if let Some(out) = recv.filter(|_| r == root) {
            out.copy_from_slice(&acc);
        }
        Ok(())
    }
}
