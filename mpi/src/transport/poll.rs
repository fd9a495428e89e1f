//! `sockets-poll`: the `select` baseline with `poll(2)` in its place.
//!
//! It does what `sockets-select` does, round for round: it builds the list of
//! every live connection afresh, makes one system call over all of them, and
//! reads each readable socket until it would block. It has no `FD_SETSIZE`,
//! so it is what the select baseline becomes past 1024 descriptors. The o2g
//! paper's idle-connection figures go up to 1000 connections; with this
//! poller the baseline can follow them all the way.

use std::io;
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::time::Duration;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use super::sockets::{Interest, Poller, Ready};

/// The `poll` poller; it keeps no state between rounds.
pub(crate) struct Poll;

impl Poll {
    pub(crate) fn new() -> Self {
        Poll
    }
}

/// `poll`'s timeout for `t`: milliseconds, rounded up so that a short wait
/// is not a busy loop, capped at what the call takes.
fn timeout_ms(t: Option<Duration>) -> PollTimeout {
    match t {
        None => PollTimeout::NONE,
        Some(t) => {
            let ms = t.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
            PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX)
        }
    }
}

impl Poller for Poll {
    const NEEDS_INTEREST: bool = true;

    fn register(&mut self, _rank: usize, _s: &TcpStream, _w: Option<&TcpStream>) -> io::Result<()> {
        Ok(())
    }

    fn deregister(&mut self, _rank: usize, _s: &TcpStream, _w: Option<&TcpStream>) {}

    fn wait(
        &mut self,
        interest: &[Interest<'_>],
        timeout: Option<Duration>,
        ready: &mut Vec<Ready>,
    ) -> io::Result<()> {
        // One entry per socket (a connection to self writes to a second
        // one), and for each connection where its read and write entries are.
        let mut fds: Vec<PollFd<'_>> = Vec::with_capacity(interest.len() * 2);
        let mut slots = Vec::with_capacity(interest.len());
        for i in interest {
            let r = i.read.map(|r| {
                fds.push(PollFd::new(r, PollFlags::POLLIN));
                fds.len() - 1
            });
            let w = i.write.map(|w| match r {
                Some(r) if i.read.is_some_and(|fd| fd.as_raw_fd() == w.as_raw_fd()) => {
                    fds[r].set_events(PollFlags::POLLIN | PollFlags::POLLOUT);
                    r
                }
                _ => {
                    fds.push(PollFd::new(w, PollFlags::POLLOUT));
                    fds.len() - 1
                }
            });
            slots.push((r, w));
        }
        match poll(&mut fds, timeout_ms(timeout)) {
            Ok(_) => {}
            Err(nix::errno::Errno::EINTR) => return Ok(()),
            Err(e) => return Err(e.into()),
        }
        // An error or hang-up counts as ready: the read or write that
        // follows reports it, as it does after select.
        let hit = |at: usize, want: PollFlags| {
            let trouble = PollFlags::POLLERR | PollFlags::POLLHUP | PollFlags::POLLNVAL;
            fds[at]
                .revents()
                .is_some_and(|got| got.intersects(want | trouble))
        };
        for (i, (r, w)) in interest.iter().zip(slots) {
            let readable = r.is_some_and(|r| hit(r, PollFlags::POLLIN));
            let writable = w.is_some_and(|w| hit(w, PollFlags::POLLOUT));
            if readable || writable {
                ready.push(Ready {
                    rank: i.rank,
                    readable,
                    writable,
                    // Level-triggered: a socket that ends stays readable.
                    ending: false,
                });
            }
        }
        Ok(())
    }
}
