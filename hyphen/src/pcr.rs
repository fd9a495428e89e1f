//! The command registers (the HyphenLink PCR analogue) and the "board"
//! that executes what is written to them.
//!
//! Each node has, in its area of the board:
//!
//! ```text
//! 0 lock u32 | 4 command u32 | 8 status u32 | 12 commands issued u32
//! 16 arguments u64 x 4 | 48 results u64 x 2
//! ```
//!
//! A multi-step board operation (CACHE, WB, DISCARD) is issued by taking
//! the lock word, writing the arguments, then the command word (release);
//! the status reads BUSY until the board has finished, then OK or FAILED,
//! with the results beside it.
//!
//! **Who executes.** The real board has its own engine that sees the
//! command-register write and does the work (page copies over the link,
//! diff transfer) while the host waits on the status. The emulation has no
//! such agent: the board's work runs *on the caller's thread*, right after
//! the command word is written, reading its arguments back from the
//! registers as the board would, and validating them since they are
//! shared memory. The caller makes no system call. What this abstracts
//! away: the board's own parallelism (the host could compute while a CACHE
//! is in flight), link latency and bandwidth, and commands arriving from a
//! remote board — a remote home is "reached" by copying from its area of
//! the same shared region.
//!
//! The timing model (clock.rs) charges the host its stores when the
//! command is written, the board its work as each command describes it,
//! and the host one read of STATUSFLAG once the board is done.
//!
//! The lock serialises the threads of one node; several nodes' commands
//! run in parallel. Lock order: a node's command lock, then (inside the
//! command) a home node's home lock (see dsm.rs); nothing takes them the
//! other way round.

use std::sync::atomic::Ordering;

use crate::board::Node;
use crate::costs::Ps;
use crate::dsm;
use crate::error::{Error, Result};
use crate::layout::{PCR_ARGS, PCR_CMD, PCR_ISSUED, PCR_LOCK, PCR_RESULTS, PCR_STATUS};
use crate::wait;

/// CACHE: arguments home node, DSM page; result the cache entry.
pub(crate) const CMD_CACHE: u32 = 1;
/// WB: argument cache entry; results changed bytes, then encoded diff
/// bytes (low half) and runs (high half).
pub(crate) const CMD_WB: u32 = 2;
/// DISCARD: argument cache entry; drops it without writing back.
pub(crate) const CMD_DISCARD: u32 = 3;

/// Status: the last command completed.
pub(crate) const STATUS_OK: u32 = 0;
/// Status: a command is executing.
pub(crate) const STATUS_BUSY: u32 = 1;
/// Status: the last command failed.
pub(crate) const STATUS_FAILED: u32 = 2;

impl Node {
    /// Issues `cmd` with `args` through this node's command registers and
    /// returns the board's results.
    pub(crate) fn command(&self, cmd: u32, args: [u64; 4]) -> Result<[u64; 2]> {
        let r = self.board.region();
        let base = self.board.layout().pcr(self.id);
        let _lock = wait::lock(
            r.u32_at(base + PCR_LOCK)?,
            self.id + 1,
            &self.policy,
            || format!("node {}'s command registers", self.id),
        )?;
        for (i, a) in args.iter().enumerate() {
            r.u64_at(base + PCR_ARGS + 8 * i)?
                .store(*a, Ordering::Relaxed);
        }
        // The model charges the stores of the arguments and command word.
        let issued = self.command_issued()?;
        r.u32_at(base + PCR_STATUS)?
            .store(STATUS_BUSY, Ordering::Relaxed);
        r.u32_at(base + PCR_ISSUED)?.fetch_add(1, Ordering::Relaxed);
        r.u32_at(base + PCR_CMD)?.store(cmd, Ordering::Release);
        // The board sees the command word and runs it, here.
        let out = self.board_execute(base, issued);
        let done = match &out {
            Ok((_, done)) => *done,
            Err(_) => self.command_decoded(issued)?,
        };
        self.command_done(done)?;
        let out = out.map(|(results, _)| results);
        if let Ok(results) = &out {
            for (i, v) in results.iter().enumerate() {
                r.u64_at(base + PCR_RESULTS + 8 * i)?
                    .store(*v, Ordering::Relaxed);
            }
        }
        let status = if out.is_ok() {
            STATUS_OK
        } else {
            STATUS_FAILED
        };
        r.u32_at(base + PCR_STATUS)?
            .store(status, Ordering::Release);
        r.u32_at(base + PCR_CMD)?.store(0, Ordering::Release);
        out
    }

    /// The board's side: reads the registers at `base` and does the work
    /// of a command the host issued at `issued`. Returns the results and
    /// when the board was done.
    fn board_execute(&self, base: usize, issued: Ps) -> Result<([u64; 2], Ps)> {
        let r = self.board.region();
        let cmd = r.u32_at(base + PCR_CMD)?.load(Ordering::Acquire);
        let mut args = [0u64; 4];
        for (i, a) in args.iter_mut().enumerate() {
            *a = r.u64_at(base + PCR_ARGS + 8 * i)?.load(Ordering::Relaxed);
        }
        let arg32 = |i: usize| {
            u32::try_from(args[i]).map_err(|_| {
                Error::Corrupt(format!(
                    "command {cmd}: argument {i} = {} too large",
                    args[i]
                ))
            })
        };
        match cmd {
            CMD_CACHE => {
                let (entry, done) = dsm::board_cache(self, arg32(0)?, arg32(1)?, issued)?;
                Ok(([u64::from(entry), 0], done))
            }
            CMD_WB => {
                let (stats, done) = dsm::board_write_back(self, arg32(0)?, issued)?;
                let runs = (stats.runs as u64) << 32;
                Ok((
                    [stats.dirty_bytes as u64, stats.encoded_bytes as u64 | runs],
                    done,
                ))
            }
            CMD_DISCARD => {
                dsm::board_discard(self, arg32(0)?)?;
                Ok(([0, 0], self.command_decoded(issued)?))
            }
            other => Err(Error::Corrupt(format!("unknown board command {other}"))),
        }
    }

    /// The status register: what the board says of the last command.
    ///
    /// # Errors
    ///
    /// Only if the region refuses the access.
    #[cfg(test)]
    pub(crate) fn command_status(&self) -> Result<u32> {
        let base = self.board.layout().pcr(self.id);
        Ok(self
            .board
            .region()
            .u32_at(base + PCR_STATUS)?
            .load(Ordering::Acquire))
    }
}
