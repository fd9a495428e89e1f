//! `MPI_Barrier` (§6.3).

use super::TAG_BARRIER;
use crate::communicator::Communicator;
use crate::error::{Error, Result};

impl Communicator {
    /// `MPI_Barrier` (§6.3): returns once every member has entered it.
    ///
    /// # Errors
    ///
    /// [`Error::PeerGone`] and transport errors.
    pub fn barrier(&self) -> Result<()> {
        if self.inter.is_some() {
            return self.inter_barrier();
        }
        // The hardware barrier is one per process: threads that run
        // barriers on different communicators at once
        // (`MPI_THREAD_MULTIPLE`) would mix them up.
        if self.members.len() == self.rt.size as usize
            && crate::raw::turns().is_none()
            && self.rt.with(|t| t.enter_world_barrier())?
        {
            return self.wait_world_barrier();
        }
        let (p, r) = self.p_r();
        let mut k = 1;
        while k < p {
            self.cexchange(&[], (r + k) % p, &mut [], (r + p - k) % p, TAG_BARRIER)?;
            k <<= 1;
        }
        Ok(())
    }

    /// Waits for the transport's hardware barrier, receiving meanwhile
    /// (through `Runtime::with`, which also acknowledges synchronous
    /// sends), and fails when a member dies. A communicator spanning the
    /// whole world may use it whatever its context: every process calls
    /// the barriers of such communicators in one order, or the program
    /// would deadlock anyway (with one thread in MPI at a time: under
    /// `MPI_THREAD_MULTIPLE` it is not used).
    fn wait_world_barrier(&self) -> Result<()> {
        loop {
            if self.rt.with(|t| t.test_world_barrier())? {
                return Ok(());
            }
            let dead = self.rt.with(|t| {
                Ok(self
                    .members
                    .iter()
                    .find_map(|&m| t.peer_failure(m).map(|why| (m, why))))
            })?;
            if let Some((rank, reason)) = dead {
                return Err(Error::PeerGone { rank, reason });
            }
            // Keep receiving, but do not sleep in the transport's idle
            // wait: the barrier's completion is not an event it wakes for.
            self.rt.progress(Some(std::time::Duration::ZERO))?;
            std::thread::yield_now();
        }
    }
}
